#include "signin/credentials.hpp"

#include <algorithm>
#include <cstring>

namespace signin {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

bool ascii_lower_equals(std::string_view text, std::string_view lower) {
    if (text.size() != lower.size()) return false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        if (c != lower[i]) return false;
    }
    return true;
}

}  // namespace

void scan_cookie_line(std::string_view line, std::string_view name, CookieScan &scan) {
    while (!line.empty()) {
        const std::size_t semi = line.find(';');
        const std::string_view pair = trim(line.substr(0, semi));
        line = semi == std::string_view::npos ? std::string_view() : line.substr(semi + 1);
        const std::size_t eq = pair.find('=');
        if (eq == std::string_view::npos) continue;
        if (trim(pair.substr(0, eq)) == name) {
            ++scan.count;
            scan.value = trim(pair.substr(eq + 1));
        }
    }
}

std::size_t without_cookies_to(std::string_view line, std::initializer_list<std::string_view> names, char *out) {
    std::size_t n = 0;  // every pair kept took at least its ';' or the end: n <= 2 * line.size()
    while (!line.empty()) {
        const std::size_t semi = line.find(';');
        const std::string_view pair = trim(line.substr(0, semi));
        line = semi == std::string_view::npos ? std::string_view() : line.substr(semi + 1);
        if (pair.empty()) continue;
        const std::size_t eq = pair.find('=');
        if (eq != std::string_view::npos &&
            std::find(names.begin(), names.end(), trim(pair.substr(0, eq))) != names.end()) {
            continue;
        }
        if (n != 0) {
            out[n++] = ';';
            out[n++] = ' ';
        }
        std::memcpy(out + n, pair.data(), pair.size());
        n += pair.size();
    }
    return n;
}

std::optional<std::string_view> bearer_token(std::string_view authorization) {
    const std::string_view v = trim(authorization);
    if (v.size() < 7 || !ascii_lower_equals(v.substr(0, 7), "bearer ")) return std::nullopt;
    return trim(v.substr(7));
}

}  // namespace signin
