// Small ASCII text checks the core's parsers share (configuration lines, headers, addresses,
// URLs, the mail relay's replies). ASCII only, on purpose: what they read are protocol words and
// host names, where a locale's idea of a letter has no place.
#pragma once

#include <string>
#include <string_view>

namespace signin::text {

// 'A'..'Z' to 'a'..'z'; every other byte as it is.
constexpr char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
constexpr char upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }

inline std::string lowered(std::string_view s) {
    std::string out(s);
    for (char &c : out) c = lower(c);
    return out;
}

// Whether `s` equals `lowercase` (which is written in lower case) ignoring the case of ASCII letters.
constexpr bool equals_lowercase(std::string_view s, std::string_view lowercase) {
    if (s.size() != lowercase.size()) return false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (lower(s[i]) != lowercase[i]) return false;
    }
    return true;
}

// Every byte below 0x80.
constexpr bool is_ascii(std::string_view s) {
    for (char c : s) {
        if (static_cast<unsigned char>(c) >= 0x80) return false;
    }
    return true;
}

// A C0 control character or DEL (a line break, a tab, a NUL) anywhere in `s`.
constexpr bool has_control(std::string_view s) {
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) return true;
    }
    return false;
}

// `s` without the bytes of `blanks` at either end (by default spaces and tabs).
constexpr std::string_view trim(std::string_view s, std::string_view blanks = " \t") {
    while (!s.empty() && blanks.find(s.front()) != std::string_view::npos) s.remove_prefix(1);
    while (!s.empty() && blanks.find(s.back()) != std::string_view::npos) s.remove_suffix(1);
    return s;
}

}  // namespace signin::text
