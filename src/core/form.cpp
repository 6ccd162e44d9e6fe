// application/x-www-form-urlencoded (form.hpp).
#include "form.hpp"

#include <sodium.h>

#include <algorithm>

namespace signin::form {
namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

std::optional<std::string> decode(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '+') {
            out += ' ';
        } else if (c == '%') {
            if (i + 2 >= s.size()) return std::nullopt;
            const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
            if (hi < 0 || lo < 0) return std::nullopt;
            out += static_cast<char>(hi * 16 + lo);
            i += 2;
        } else {
            out += c;
        }
    }
    return out;
}

Params Params::parse(std::string_view text) {
    Params p;
    while (!text.empty()) {
        const auto amp = text.find('&');
        const std::string_view pair = text.substr(0, amp);
        text = amp == std::string_view::npos ? std::string_view() : text.substr(amp + 1);
        if (pair.empty()) continue;
        const auto eq = pair.find('=');
        auto name = decode(pair.substr(0, eq));
        auto value = decode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
        if (!name || !value) {
            p.malformed = true;
            if (value) sodium_memzero(value->data(), value->size());
            continue;
        }
        if (value->empty()) continue;
        if (p.duplicate.empty() && p.get(*name) != nullptr) p.duplicate = *name;
        p.items.emplace_back(std::move(*name), std::move(*value));
    }
    return p;
}

const std::string *Params::get(std::string_view name) const {
    for (const auto &[n, v] : items) {
        if (n == name) return &v;
    }
    return nullptr;
}

std::string Params::value(std::string_view name) const {
    const std::string *v = get(name);
    return v == nullptr ? std::string() : *v;
}

bool Params::repeated(std::string_view name) const {
    return std::count_if(items.begin(), items.end(), [&](const auto &item) { return item.first == name; }) > 1;
}

std::string Params::duplicate_shown() const {
    const bool plain = !duplicate.empty() && duplicate.size() <= 40 &&
                       std::all_of(duplicate.begin(), duplicate.end(), [](char c) {
                           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                                  c == '_' || c == '-' || c == '.';
                       });
    return plain ? duplicate : std::string("a parameter");
}

Params::~Params() {
    for (auto &item : items) sodium_memzero(item.second.data(), item.second.capacity());
}

}  // namespace signin::form
