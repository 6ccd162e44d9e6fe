// The short code of a token, the form of an email's link that a person types: 8 characters of
// Crockford's base32 (no I, L, O, U), shown XXXX-XXXX, read case-insensitively with hyphens and
// spaces ignored (and I, L as 1, O as 0, as Crockford decodes them). A code is 40 bits: it is
// only accepted with its address, for the token's ten minutes, and five wrong codes for an address
// cancel its tokens.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace signin {

// A fresh random code, 8 characters, no hyphen.
std::string new_code();
// "ABCD-EFGH" from "ABCDEFGH".
std::string format_code(std::string_view code8);
// The 8 characters a person typed, or nullopt when they are not a code.
std::optional<std::string> normalize_code(std::string_view typed);

}  // namespace signin
