// application/x-www-form-urlencoded, as OAuth reads it: the authorization request's query and the
// token request's body. Internal to the core.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace signin::form {

// One name or value decoded: "+" is a space, "%XY" a byte; nullopt for a "%" not followed by two
// hex digits.
std::optional<std::string> decode(std::string_view s);

// The parameters of a query or form body. RFC 6749 §3.1 and §3.2: a parameter given twice is an
// error, and one given with an empty value counts as not given.
struct Params {
    std::vector<std::pair<std::string, std::string>> items;
    bool malformed = false;  // bad percent-encoding somewhere
    std::string duplicate;   // the first name given twice ("" when none)

    static Params parse(std::string_view text);
    const std::string *get(std::string_view name) const;
    std::string value(std::string_view name) const;  // "" when not given
    bool repeated(std::string_view name) const;      // given more than once
    // The duplicate's name as an error may show it: the name when it is a plain word, else
    // "a parameter" (error_description allows no quote, backslash or control character).
    std::string duplicate_shown() const;

    Params() = default;
    Params(Params &&) = default;
    Params &operator=(Params &&) = default;
    Params(const Params &) = delete;
    Params &operator=(const Params &) = delete;
    // Wipes the values: a form body can hold a client secret, a code or a refresh token.
    ~Params();
};

}  // namespace signin::form
