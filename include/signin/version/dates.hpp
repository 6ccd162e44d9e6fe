// Dates of deprecation and sunset: parsed from the configuration, written as HTTP headers.
// Valid C++17 (the nginx glue includes it); no nginx header.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace signin::version {

// "2026-12-31" (midnight UTC) or "2026-12-31T18:30:00Z" as Unix seconds; nullopt if invalid.
std::optional<std::int64_t> parse_date(std::string_view text) noexcept;

// RFC 9745 Deprecation field value: "@1798675200".
std::string deprecation_value(std::int64_t unix_seconds);

// RFC 8594 Sunset field value, an IMF-fixdate: "Thu, 31 Dec 2026 00:00:00 GMT".
std::string http_date(std::int64_t unix_seconds);

// The date as the configuration writes it: "2026-12-31" at midnight UTC, else
// "2026-12-31T18:30:00Z".
std::string iso_date(std::int64_t unix_seconds);

}  // namespace signin::version
