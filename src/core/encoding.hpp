// Small encodings used by the core: base64url without padding, hex, RFC 3339 time, ids.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "signin/encoding.hpp"  // base64url, rfc3339: shared with the engine's neighbours

namespace signin::enc {

std::string hex(const unsigned char *data, std::size_t len);

// rfc3339's 24 characters into buf (no allocation: the JSON writer's times).
void rfc3339(std::int64_t unix_ms, char (&buf)[24]);

// A UUIDv7 (time-ordered, random) in its 36-character text form.
std::string uuid7(std::int64_t unix_ms);

// RFC 3986 percent-encoding: every byte but the unreserved characters (and '/' when keep_slash).
std::string percent_encode(std::string_view s, bool keep_slash = false);

// A fresh random secret of `bytes` bytes, base64url text (at least 16 bytes = 128 bits).
std::string random_secret(std::size_t bytes = 32);

// A token or session secret: 32 bytes, the first 6 the creation time (ms since the epoch, big
// endian, as in a UUIDv7), the other 26 (208 bits) random; base64url text, 43 characters. Its
// store key starts with that time (signin::record_key), so the records of new secrets join the
// right edge of their B-trees instead of a random leaf each (fewer pages touched per sign-in, in
// LMDB under its one write lock, and in PostgreSQL's indexes). Whoever holds the secret learns when
// it was made, nothing more.
std::string ordered_secret(std::int64_t unix_ms);

}  // namespace signin::enc
