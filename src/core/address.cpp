// Email address, group and origin validation.
#include <cctype>
#include <string>

#include "signin/engine.hpp"
#include "text.hpp"

namespace signin {
namespace {

using text::lower;

bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// RFC 5322 dot-atom local part (no quoted strings: no mail system a site uses needs them).
bool valid_local(std::string_view s) {
    if (s.empty() || s.size() > 64 || s.front() == '.' || s.back() == '.') return false;
    static constexpr std::string_view specials = "!#$%&'*+-/=?^_`{|}~.";
    char prev = 0;
    for (char c : s) {
        if (!(is_alnum(c) || specials.find(c) != std::string_view::npos)) return false;
        if (c == '.' && prev == '.') return false;
        prev = c;
    }
    return true;
}

// LDH labels, at least two, the last alphabetic or an IDN A-label.
bool valid_domain(std::string_view s) {
    if (s.empty() || s.size() > 253) return false;
    std::size_t labels = 0;
    std::size_t start = 0;
    while (start <= s.size()) {
        std::size_t dot = s.find('.', start);
        std::string_view label = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
        if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
        for (char c : label) {
            if (!(is_alnum(c) || c == '-')) return false;
        }
        ++labels;
        if (dot == std::string_view::npos) {
            bool alpha = true;
            for (char c : label) alpha = alpha && (std::isalpha(static_cast<unsigned char>(c)) != 0);
            if (!alpha && label.substr(0, 4) != "xn--") return false;
            break;
        }
        start = dot + 1;
    }
    return labels >= 2;
}

}  // namespace

bool is_loopback_host(std::string_view host) {
    if (host == "localhost" || host == "[::1]") return true;
    if (host.substr(0, 4) != "127.") return false;
    int parts = 0;
    std::size_t i = 0;
    while (i <= host.size()) {
        std::size_t dot = host.find('.', i);
        std::string_view p = host.substr(i, dot == std::string_view::npos ? host.npos : dot - i);
        if (p.empty() || p.size() > 3) return false;
        int v = 0;
        for (char c : p) {
            if (!std::isdigit(static_cast<unsigned char>(c))) return false;
            v = v * 10 + (c - '0');
        }
        if (v > 255) return false;
        ++parts;
        if (dot == std::string_view::npos) break;
        i = dot + 1;
    }
    return parts == 4;
}

std::optional<std::string> normalize_email(std::string_view email) {
    if (email.size() < 3 || email.size() > 254) return std::nullopt;
    std::size_t at = email.rfind('@');
    if (at == std::string_view::npos || email.find('@') != at) return std::nullopt;
    std::string out;
    out.reserve(email.size());
    for (char c : email) out.push_back(lower(c));
    std::string_view v(out);
    if (!valid_local(v.substr(0, at)) || !valid_domain(v.substr(at + 1))) return std::nullopt;
    return out;
}

std::optional<std::string> normalize_group(std::string_view group) {
    if (group.empty()) return std::string("default");
    if (group.size() > 64 || !is_alnum(group.front())) return std::nullopt;
    std::string out;
    for (char c : group) {
        if (!(is_alnum(c) || c == '.' || c == '_' || c == '-')) return std::nullopt;
        out.push_back(lower(c));
    }
    return out;
}

bool valid_host(std::string_view host) {
    if (host.empty()) return false;
    if (host.front() == '[') {
        if (host.size() < 4 || host.back() != ']') return false;
        std::string_view v6 = host.substr(1, host.size() - 2);
        if (v6.find("::") != v6.rfind("::")) return false;  // at most one "::"
        int groups = 0, digits = 0;
        for (char c : v6) {
            if (c == ':') {
                digits = 0;
                ++groups;
            } else if (std::isxdigit(static_cast<unsigned char>(c)) && ++digits <= 4) {
            } else {
                return false;
            }
        }
        return groups >= 2 && groups <= 7;
    }
    if (host.size() > 253) return false;
    std::size_t label = 0;  // length of the current label
    char prev = '.';
    for (char c : host) {
        if (c == '.') {
            if (label == 0 || prev == '-') return false;  // an empty label, or one ending in '-'
            label = 0;
        } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && label > 0)) {
            if (++label > 63) return false;
        } else {
            return false;  // another byte, or a label starting with '-'
        }
        prev = c;
    }
    return label > 0 && prev != '-';
}

std::optional<Origin> parse_origin(std::string_view text, std::string *why) {
    auto fail = [&](const char *m) -> std::optional<Origin> {
        if (why) *why = m;
        return std::nullopt;
    };
    Origin o;
    std::string t;
    for (char c : text) t.push_back(lower(c));
    while (!t.empty() && t.back() == '/') t.pop_back();
    std::string_view rest;
    if (t.rfind("https://", 0) == 0) {
        o.https = true;
        rest = std::string_view(t).substr(8);
    } else if (t.rfind("http://", 0) == 0) {
        rest = std::string_view(t).substr(7);
    } else {
        return fail("an origin starts with https:// (or http:// on loopback)");
    }
    if (rest.empty() || rest.find_first_of("/?#@ ") != std::string_view::npos) {
        return fail("an origin is scheme://host[:port] with no path");
    }
    std::string_view host = rest, port;
    std::string port_text;
    std::size_t colon = rest.rfind(':');
    if (colon != std::string_view::npos && rest.find(']', colon) == std::string_view::npos) {
        host = rest.substr(0, colon);
        port = rest.substr(colon + 1);
        if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos) {
            return fail("invalid port in origin");
        }
        const long n = std::stol(std::string(port));
        if (n < 1 || n > 65535) return fail("invalid port in origin");
        port_text = std::to_string(n);  // no leading zeros: the form a browser sends
    }
    if (host.empty()) return fail("an origin needs a host");
    if (!valid_host(host)) {
        return fail("the host of an origin is a DNS name (letters, digits, '-' and '.'), an IPv4 address or a "
                    "bracketed IPv6 address");
    }
    o.loopback = is_loopback_host(host);
    if (!o.https && !o.loopback) {
        return fail("an http:// origin must be loopback (127.0.0.1, localhost or [::1]); use https://");
    }
    bool default_port = (o.https && port_text == "443") || (!o.https && port_text == "80");
    o.text = std::string(o.https ? "https://" : "http://") + std::string(host);
    if (!port_text.empty() && !default_port) o.text += ":" + port_text;
    return o;
}

std::string origin_host(std::string_view origin) {
    auto start = origin.find("://");
    std::string_view host = start == std::string_view::npos ? origin : origin.substr(start + 3);
    if (!host.empty() && host.front() == '[') return std::string(host.substr(0, host.find(']') + 1));
    return std::string(host.substr(0, host.find(':')));
}

}  // namespace signin
