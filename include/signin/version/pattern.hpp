// Route patterns of a version group: "/users/{id}/posts" or "/users/:id/posts".
// Valid C++17 (the nginx glue includes it); no nginx header.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace signin::version {

// A configuration mistake; the message is shown by `nginx -t` with the file and line.
struct ConfigError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Segment {
    bool param = false;
    std::string text;  // the literal text, or the parameter's name
};

struct Pattern {
    std::string written;            // as written in the configuration
    std::vector<Segment> segments;  // "/" has none

    // The shape identifies a route regardless of parameter names: "/users/{}/posts".
    std::string shape() const;
    // The OpenAPI path template: "/users/{id}/posts".
    std::string templated() const;
};

// Parses a route pattern; throws ConfigError on an empty segment, a bad parameter name,
// a parameter used twice, or a pattern that does not start with "/".
Pattern parse_pattern(std::string_view text);

// The HTTP methods a route may name (upper case), or throws ConfigError.
void check_method(std::string_view method);

// Splits a request path into segments: "/a/b" -> {"a","b"}, "/" and "" -> {}.
// A trailing slash or a doubled slash gives an empty segment, which no route matches.
// f(segment) returns false to stop; the result is false when f stopped.
template <class F>
bool for_each_segment(std::string_view path, F &&f) {
    if (path.empty() || path == "/") {
        return true;
    }
    std::size_t pos = path.front() == '/' ? 1 : 0;
    for (;;) {
        std::size_t slash = path.find('/', pos);
        if (slash == std::string_view::npos) {
            return f(path.substr(pos));
        }
        if (!f(path.substr(pos, slash - pos))) {
            return false;
        }
        pos = slash + 1;
    }
}

}  // namespace signin::version
