#include "signin/user_agent.hpp"

#include <array>

namespace signin {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The leading digits right after `pos` (a major version), at most four of them; empty when the
// text there does not start with a digit or has more than four (no browser or system has such a
// version, so it is not trusted either).
std::string major_at(std::string_view ua, std::size_t pos) {
    std::size_t n = 0;
    while (pos + n < ua.size() && is_digit(ua[pos + n])) {
        if (++n > 4) return {};
    }
    if (n == 0) return {};
    // "0128" is not a version anyone sends; leading zeros are dropped so the output stays canonical
    std::size_t skip = 0;
    while (skip + 1 < n && ua[pos + skip] == '0') ++skip;
    return std::string(ua.substr(pos + skip, n - skip));
}

// The name, and its major version when the token is followed by one ("Firefox/128.0").
std::string with_version(std::string_view name, std::string_view ua, std::size_t token_end) {
    std::string out(name);
    std::string major = major_at(ua, token_end);
    if (!major.empty()) {
        out += ' ';
        out += major;
    }
    return out;
}

struct Rule {
    std::string_view token;  // looked for as it is written, case-sensitive, as browsers send it
    std::string_view name;
};

// Order matters: browsers built on another's engine name that one too (Edge and Opera send
// "Chrome/", Chrome sends "Safari/"), so the more specific tokens come first.
constexpr std::array<Rule, 12> kBrowsers{{
    {"EdgiOS/", "Edge"},
    {"EdgA/", "Edge"},
    {"Edg/", "Edge"},
    {"Edge/", "Edge"},
    {"OPR/", "Opera"},
    {"SamsungBrowser/", "Samsung Internet"},
    {"YaBrowser/", "Yandex Browser"},
    {"FxiOS/", "Firefox"},
    {"Firefox/", "Firefox"},
    {"CriOS/", "Chrome"},
    {"Chromium/", "Chromium"},
    {"Chrome/", "Chrome"},
}};

std::string browser_of(std::string_view ua) {
    for (const Rule &r : kBrowsers) {
        std::size_t at = ua.find(r.token);
        if (at != std::string_view::npos) return with_version(r.name, ua, at + r.token.size());
    }
    // Safari's own version is in "Version/17.2", its "Safari/605.1.15" is the engine's build
    if (ua.find("Safari/") != std::string_view::npos) {
        std::size_t at = ua.find("Version/");
        return at == std::string_view::npos ? std::string("Safari")
                                            : with_version("Safari", ua, at + 8);
    }
    for (std::string_view tool : {std::string_view("curl/"), std::string_view("Wget/")}) {
        std::size_t at = ua.find(tool);
        if (at != std::string_view::npos)
            return with_version(tool.substr(0, tool.size() - 1), ua, at + tool.size());
    }
    return {};
}

std::string system_of(std::string_view ua) {
    // iPadOS and iOS before Android and Mac: an iPad may say "like Mac OS X", and some Android
    // builds mention Linux
    if (ua.find("iPad") != std::string_view::npos) {
        std::size_t at = ua.find(" OS ");
        return at == std::string_view::npos ? std::string("iPadOS") : with_version("iPadOS", ua, at + 4);
    }
    if (ua.find("iPhone") != std::string_view::npos || ua.find("iPod") != std::string_view::npos) {
        std::size_t at = ua.find(" OS ");
        return at == std::string_view::npos ? std::string("iOS") : with_version("iOS", ua, at + 4);
    }
    if (std::size_t at = ua.find("Android"); at != std::string_view::npos) {
        std::size_t v = at + 7;
        if (v < ua.size() && ua[v] == ' ') ++v;
        return with_version("Android", ua, v);
    }
    // "Windows NT 10.0" is both Windows 10 and 11, so no version is claimed
    if (ua.find("Windows") != std::string_view::npos) return "Windows";
    if (ua.find("CrOS") != std::string_view::npos) return "ChromeOS";
    if (ua.find("Macintosh") != std::string_view::npos || ua.find("Mac OS X") != std::string_view::npos)
        return "macOS";
    if (ua.find("Linux") != std::string_view::npos) return "Linux";
    if (ua.find("FreeBSD") != std::string_view::npos) return "FreeBSD";
    return {};
}

}  // namespace

UserAgentSummary summarize_user_agent(std::string_view user_agent) {
    std::string_view ua = user_agent.substr(0, kUserAgentScanLimit);
    return {browser_of(ua), system_of(ua)};
}

}  // namespace signin
