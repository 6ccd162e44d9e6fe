// Credentials as a request carries them: the session cookie in Cookie header
// lines, and a bearer token in an Authorization header. Pure text parsing, for any transport.
// Valid C++17: the glue includes this header.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace signin {

// What one or more Cookie header lines hold of the cookie `name`: how often it appears (more
// than once is cookie tossing, refused by the caller) and the last value seen (a view into the
// line). Pairs without '=' are skipped; names and values are trimmed of spaces and tabs.
struct CookieScan {
    int count = 0;
    std::string_view value;
};
void scan_cookie_line(std::string_view line, std::string_view name, CookieScan &scan);

// The Cookie header line without the cookies `names` (every occurrence), the other pairs kept in
// order and joined with "; " (empty when nothing else was there), written to `out`, which has
// room for 2 * line.size() bytes ("a;b" becomes "a; b"); returns its length. The gate writes it
// straight into the request's pool.
std::size_t without_cookies_to(std::string_view line, std::initializer_list<std::string_view> names, char *out);

// The token of "Bearer <token>" (scheme case-insensitive, spaces around trimmed; the token may
// be empty), or nullopt when the header is not a bearer authorization.
std::optional<std::string_view> bearer_token(std::string_view authorization);

}  // namespace signin
