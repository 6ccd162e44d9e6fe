#include "encoding.hpp"

#include <sodium.h>

#include <array>
#include <ctime>

#include "signin/secret.hpp"

namespace signin {

void Secret::wipe() noexcept {
    if (!value_.empty()) {
        sodium_memzero(value_.data(), value_.size());
        value_.clear();
    }
}

namespace enc {

std::string base64url(const unsigned char *data, std::size_t len) {
    std::string out(sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_URLSAFE_NO_PADDING), '\0');
    sodium_bin2base64(out.data(), out.size(), data, len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    out.resize(out.size() - 1);  // the terminating NUL
    return out;
}

std::optional<std::string> base64url_decode(std::string_view text) {
    std::string out(text.size(), '\0');
    std::size_t len = 0;
    const char *end = nullptr;
    if (sodium_base642bin(reinterpret_cast<unsigned char *>(out.data()), out.size(), text.data(),
                          text.size(), nullptr, &len, &end,
                          sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
        end != text.data() + text.size()) {
        return std::nullopt;
    }
    out.resize(len);
    return out;
}

std::string hex(const unsigned char *data, std::size_t len) {
    std::string out(len * 2 + 1, '\0');
    sodium_bin2hex(out.data(), out.size(), data, len);
    out.resize(len * 2);
    return out;
}

// Days since 1970-01-01 to a civil date (Howard Hinnant's public-domain algorithm).
static void civil_from_days(std::int64_t z, std::int64_t &y, unsigned &m, unsigned &d) {
    z += 719468;
    const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const auto doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    d = doy - (153 * mp + 2) / 5 + 1;
    m = mp < 10 ? mp + 3 : mp - 9;
    y = static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2 ? 1 : 0);
}

void rfc3339(std::int64_t unix_ms, char (&buf)[24]) {
    std::int64_t days = unix_ms / 86400000, rem = unix_ms % 86400000;
    if (rem < 0) {
        rem += 86400000;
        days -= 1;
    }
    std::int64_t y;
    unsigned mo, d;
    civil_from_days(days, y, mo, d);
    auto secs = static_cast<unsigned>(rem / 1000), ms = static_cast<unsigned>(rem % 1000);
    auto put = [&buf](int at, unsigned v, int width) {
        for (int i = width - 1; i >= 0; --i, v /= 10) buf[at + i] = static_cast<char>('0' + v % 10);
    };
    put(0, static_cast<unsigned>(y), 4);
    buf[4] = '-';
    put(5, mo, 2);
    buf[7] = '-';
    put(8, d, 2);
    buf[10] = 'T';
    put(11, secs / 3600, 2);
    buf[13] = ':';
    put(14, secs / 60 % 60, 2);
    buf[16] = ':';
    put(17, secs % 60, 2);
    buf[19] = '.';
    put(20, ms, 3);
    buf[23] = 'Z';
}

std::string rfc3339(std::int64_t unix_ms) {
    char buf[24];
    rfc3339(unix_ms, buf);
    return std::string(buf, sizeof buf);
}

// A civil date to days since 1970-01-01 (the same algorithm, the other way).
static std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
    y -= m <= 2 ? 1 : 0;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

std::optional<std::int64_t> parse_rfc3339(std::string_view t) {
    if (t.size() != 20 && t.size() != 24) return std::nullopt;
    auto num = [&t](std::size_t at, std::size_t width) -> std::optional<unsigned> {
        unsigned v = 0;
        for (std::size_t i = at; i < at + width; ++i) {
            if (t[i] < '0' || t[i] > '9') return std::nullopt;
            v = v * 10 + static_cast<unsigned>(t[i] - '0');
        }
        return v;
    };
    const bool with_ms = t.size() == 24;
    if (t[4] != '-' || t[7] != '-' || t[10] != 'T' || t[13] != ':' || t[16] != ':' || t.back() != 'Z' ||
        (with_ms && t[19] != '.')) {
        return std::nullopt;
    }
    auto y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2), s = num(17, 2);
    auto ms = with_ms ? num(20, 3) : std::optional<unsigned>(0);
    if (!y || !mo || !d || !h || !mi || !s || !ms || *y < 1970 || *mo < 1 || *mo > 12 || *d < 1 || *h > 23 ||
        *mi > 59 || *s > 59) {
        return std::nullopt;
    }
    const std::int64_t days = days_from_civil(*y, *mo, *d);
    std::int64_t yy;
    unsigned m2, d2;
    civil_from_days(days, yy, m2, d2);
    if (m2 != *mo || d2 != *d) return std::nullopt;  // a day the month does not have
    return ((days * 24 + *h) * 60 + *mi) * 60000 + static_cast<std::int64_t>(*s) * 1000 + *ms;
}

std::string uuid7(std::int64_t unix_ms) {
    std::array<unsigned char, 16> b{};
    randombytes_buf(b.data(), b.size());
    auto ts = static_cast<std::uint64_t>(unix_ms);
    for (int i = 0; i < 6; ++i) {
        b[static_cast<std::size_t>(i)] = static_cast<unsigned char>(ts >> (40 - 8 * i));
    }
    b[6] = static_cast<unsigned char>(0x70 | (b[6] & 0x0f));
    b[8] = static_cast<unsigned char>(0x80 | (b[8] & 0x3f));
    std::string h = hex(b.data(), b.size());
    return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
           "-" + h.substr(20);
}

std::string random_secret(std::size_t bytes) {
    if (bytes < 16) {
        bytes = 16;
    }
    std::string raw(bytes, '\0');
    randombytes_buf(raw.data(), raw.size());
    std::string out = base64url(reinterpret_cast<const unsigned char *>(raw.data()), raw.size());
    sodium_memzero(raw.data(), raw.size());
    return out;
}

std::string ordered_secret(std::int64_t unix_ms) {
    std::array<unsigned char, 32> raw{};
    auto ts = static_cast<std::uint64_t>(unix_ms);
    for (std::size_t i = 0; i < 6; ++i) raw[i] = static_cast<unsigned char>(ts >> (40 - 8 * i));
    randombytes_buf(raw.data() + 6, raw.size() - 6);
    std::string out = base64url(raw.data(), raw.size());
    sodium_memzero(raw.data(), raw.size());
    return out;
}

std::string percent_encode(std::string_view s, bool keep_slash) {
    static constexpr char digits[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
            c == '_' || c == '~' || (keep_slash && c == '/')) {
            out += c;
        } else {
            out += '%';
            out += digits[u >> 4];
            out += digits[u & 15];
        }
    }
    return out;
}

}  // namespace enc
}  // namespace signin
