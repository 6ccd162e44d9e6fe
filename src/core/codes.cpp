// Short codes (codes.hpp).
#include "signin/codes.hpp"

#include <sodium.h>

namespace signin {
namespace {

constexpr char kAlphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";  // Crockford's base32

}  // namespace

std::string new_code() {
    unsigned char raw[5];
    randombytes_buf(raw, sizeof raw);
    std::uint64_t bits = 0;
    for (unsigned char b : raw) bits = (bits << 8) | b;  // 40 bits
    std::string out(8, '0');
    for (int i = 7; i >= 0; --i) {
        out[static_cast<std::size_t>(i)] = kAlphabet[bits & 31];
        bits >>= 5;
    }
    sodium_memzero(raw, sizeof raw);
    return out;
}

std::string format_code(std::string_view code8) {
    if (code8.size() != 8) return std::string(code8);
    return std::string(code8.substr(0, 4)) + "-" + std::string(code8.substr(4));
}

std::optional<std::string> normalize_code(std::string_view typed) {
    if (typed.size() > 32) return std::nullopt;
    std::string out;
    for (char c : typed) {
        if (c == '-' || c == ' ' || c == '\t') continue;
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
        if (c == 'I' || c == 'L') c = '1';
        if (c == 'O') c = '0';
        bool ok = false;
        for (const char *a = kAlphabet; *a; ++a) ok = ok || *a == c;
        if (!ok) return std::nullopt;
        out.push_back(c);
    }
    if (out.size() != 8) return std::nullopt;
    return out;
}

}  // namespace signin
