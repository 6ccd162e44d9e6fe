// The engine's text forms that its neighbours write too: signin-admin shows a passkey's id in the
// base64url the HTTP API uses (and reads it back), and times as the API's JSON writes them.
// The engine's other encodings stay private to it (src/core/encoding.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace signin::enc {

// base64url without padding; decoding gives nullopt for any text that is not exactly that.
std::string base64url(const unsigned char *data, std::size_t len);
std::optional<std::string> base64url_decode(std::string_view text);

// Milliseconds since the Unix epoch as RFC 3339 UTC with millisecond precision:
// "2026-11-24T10:00:00.000Z".
std::string rfc3339(std::int64_t unix_ms);
// The reverse, for times given back (a view of the audit from and to a time): that form, or the
// same without the milliseconds ("2026-11-24T10:00:00Z"), UTC only, years 1970 to 9999; nullopt
// for anything else, a 13th month or a 31st of April included.
std::optional<std::int64_t> parse_rfc3339(std::string_view text);

}  // namespace signin::enc
