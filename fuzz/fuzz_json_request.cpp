// libFuzzer: the JSON request body parser (every POST body of the API is untrusted input).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "signin/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    std::string_view body(reinterpret_cast<const char *>(data), size);
    // the shapes the endpoints ask for: {email, group?}, {token}, {email, password, group?}, {}
    (void)signin::json::parse_object(body, {{"email", true}, {"group", false}});
    (void)signin::json::parse_object(body, {{"token", true}});
    (void)signin::json::parse_object(body, {{"email", true}, {"password", true}, {"group", false}}, 8192);
    auto any = signin::json::parse_object(body, {});
    // an error message is quoted in a JSON answer: it must be valid UTF-8 too
    if (!any && !signin::json::valid_utf8(any.error().message)) __builtin_trap();
    if (any) {
        // an accepted body must be valid UTF-8 in every value
        // ... and hold no NUL: a value is used as a C string further on, where a NUL would cut it
        // short ("alice@example.com\0.evil.org" read as alice's address)
        for (const auto &kv : any.value()) {
            if (!signin::json::valid_utf8(kv.second)) __builtin_trap();
            if (kv.second.find('\0') != std::string::npos || kv.first.find('\0') != std::string::npos) __builtin_trap();
        }
    }
    // a body with a raw control byte other than JSON's whitespace is never accepted
    if (!signin::json::free_of_raw_controls(body)) {
        if (signin::json::parse_object(body, {{"email", true}, {"group", false}})) __builtin_trap();
    }
    return 0;
}
