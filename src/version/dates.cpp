#include "signin/version/dates.hpp"

#include <array>
#include <cstdio>

namespace signin::version {

namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) noexcept {
    y -= m <= 2 ? 1 : 0;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3u : 9u)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

struct Civil {
    std::int64_t y;
    unsigned m, d;
};

Civil civil_from_days(std::int64_t z) noexcept {
    z += 719468;
    const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const auto doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const std::int64_t y = static_cast<std::int64_t>(yoe) + era * 400;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    const unsigned d = doy - (153 * mp + 2) / 5 + 1;
    const unsigned m = mp < 10 ? mp + 3 : mp - 9;
    return {y + (m <= 2 ? 1 : 0), m, d};
}

bool digits(std::string_view s, std::size_t pos, std::size_t n, unsigned &out) noexcept {
    if (pos + n > s.size()) {
        return false;
    }
    unsigned v = 0;
    for (std::size_t i = pos; i < pos + n; ++i) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        v = v * 10 + static_cast<unsigned>(s[i] - '0');
    }
    out = v;
    return true;
}

bool leap(unsigned y) noexcept { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

}  // namespace

std::optional<std::int64_t> parse_date(std::string_view s) noexcept {
    unsigned y = 0, m = 0, d = 0, hh = 0, mm = 0, ss = 0;
    if (!(s.size() == 10 || s.size() == 20) || !digits(s, 0, 4, y) || s[4] != '-' ||
        !digits(s, 5, 2, m) || s[7] != '-' || !digits(s, 8, 2, d)) {
        return std::nullopt;
    }
    if (s.size() == 20) {
        if (s[10] != 'T' || !digits(s, 11, 2, hh) || s[13] != ':' || !digits(s, 14, 2, mm) ||
            s[16] != ':' || !digits(s, 17, 2, ss) || s[19] != 'Z') {
            return std::nullopt;
        }
    }
    static constexpr std::array<unsigned, 12> mdays = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1970 || m < 1 || m > 12 || d < 1 ||
        d > mdays[m - 1] + (m == 2 && leap(y) ? 1u : 0u) || hh > 23 || mm > 59 || ss > 59) {
        return std::nullopt;
    }
    return days_from_civil(y, m, d) * 86400 + hh * 3600 + mm * 60 + ss;
}

std::string deprecation_value(std::int64_t unix_seconds) {
    return "@" + std::to_string(unix_seconds);
}

std::string http_date(std::int64_t t) {
    static constexpr std::array<const char *, 7> wday = {"Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"};
    static constexpr std::array<const char *, 12> mon = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    std::int64_t days = t >= 0 ? t / 86400 : (t - 86399) / 86400;
    std::int64_t secs = t - days * 86400;
    Civil c = civil_from_days(days);
    auto w = static_cast<std::size_t>(((days % 7) + 7) % 7);
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s, %02u %s %04lld %02lld:%02lld:%02lld GMT", wday[w], c.d,
                  mon[c.m - 1], static_cast<long long>(c.y), static_cast<long long>(secs / 3600),
                  static_cast<long long>(secs / 60 % 60), static_cast<long long>(secs % 60));
    return buf;
}

std::string iso_date(std::int64_t t) {
    std::int64_t days = t >= 0 ? t / 86400 : (t - 86399) / 86400;
    std::int64_t secs = t - days * 86400;
    Civil c = civil_from_days(days);
    char buf[64];
    if (secs == 0) {
        std::snprintf(buf, sizeof buf, "%04lld-%02u-%02u", static_cast<long long>(c.y), c.m, c.d);
    } else {
        std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lldZ", static_cast<long long>(c.y), c.m,
                      c.d, static_cast<long long>(secs / 3600), static_cast<long long>(secs / 60 % 60),
                      static_cast<long long>(secs % 60));
    }
    return buf;
}

}  // namespace signin::version
