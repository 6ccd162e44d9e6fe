#include "signin/credentials.hpp"

#include <algorithm>
#include <cstring>

#include "text.hpp"

namespace signin {
namespace {

using text::trim;

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
    if (v.size() < 7 || !text::equals_lowercase(v.substr(0, 7), "bearer ")) return std::nullopt;
    return trim(v.substr(7));
}

}  // namespace signin
