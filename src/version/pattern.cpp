#include "signin/version/pattern.hpp"

#include <array>
#include <set>

namespace signin::version {

namespace {

bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Characters allowed in a literal segment: RFC 3986 pchar without '%' escapes and without
// the characters nginx or OpenAPI give a meaning ({ } : at the start).
bool literal_char(char c) {
    if (name_char(c)) {
        return true;
    }
    switch (c) {
    case '-': case '.': case '~': case '!': case '$': case '&': case '\'': case '(': case ')':
    case '*': case '+': case ',': case ';': case '=': case ':': case '@':
        return true;
    default:
        return false;
    }
}

}  // namespace

std::string Pattern::shape() const {
    std::string out;
    for (const auto &s : segments) {
        out += '/';
        out += s.param ? std::string("{}") : s.text;
    }
    return out.empty() ? "/" : out;
}

std::string Pattern::templated() const {
    std::string out;
    for (const auto &s : segments) {
        out += '/';
        if (s.param) {
            out += '{';
            out += s.text;
            out += '}';
        } else {
            out += s.text;
        }
    }
    return out.empty() ? "/" : out;
}

Pattern parse_pattern(std::string_view text) {
    Pattern p;
    p.written = std::string(text);
    if (text.empty() || text.front() != '/') {
        throw ConfigError("route \"" + p.written + "\" must start with \"/\"");
    }
    if (text == "/") {
        return p;
    }
    std::set<std::string, std::less<>> names;
    bool ok = for_each_segment(text, [&](std::string_view seg) {
        if (seg.empty()) {
            return false;
        }
        Segment s;
        std::string_view name;
        if (seg.front() == ':') {
            name = seg.substr(1);
        } else if (seg.front() == '{' && seg.back() == '}' && seg.size() >= 2) {
            name = seg.substr(1, seg.size() - 2);
        } else {
            for (char c : seg) {
                if (!literal_char(c)) {
                    throw ConfigError("route \"" + p.written + "\" has an invalid character in \"" +
                                      std::string(seg) + "\"");
                }
            }
            s.text = std::string(seg);
            p.segments.push_back(std::move(s));
            return true;
        }
        if (name.empty()) {
            throw ConfigError("route \"" + p.written + "\" has a parameter with no name");
        }
        for (char c : name) {
            if (!name_char(c)) {
                throw ConfigError("route \"" + p.written + "\" has an invalid parameter name \"" +
                                  std::string(name) + "\"");
            }
        }
        if (!names.emplace(name).second) {
            throw ConfigError("route \"" + p.written + "\" names the parameter \"" + std::string(name) +
                              "\" twice");
        }
        s.param = true;
        s.text = std::string(name);
        p.segments.push_back(std::move(s));
        return true;
    });
    if (!ok) {
        throw ConfigError("route \"" + p.written + "\" has an empty segment");
    }
    return p;
}

void check_method(std::string_view method) {
    static constexpr std::array<std::string_view, 8> known = {"GET",    "HEAD",    "POST",  "PUT",
                                                              "PATCH",  "DELETE",  "OPTIONS", "TRACE"};
    for (auto m : known) {
        if (m == method) {
            return;
        }
    }
    throw ConfigError("unknown method \"" + std::string(method) +
                      "\" (GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS or TRACE)");
}

}  // namespace signin::version
