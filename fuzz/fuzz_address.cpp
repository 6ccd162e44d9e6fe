// libFuzzer: the address and group normalizers (every token request carries both), and the
// origin parser (signin_origin, checked at nginx -t).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "signin/auth.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char *>(data), size);
    if (auto e = signin::normalize_email(text)) {
        // normalizing is idempotent: a stored address normalizes to itself
        auto again = signin::normalize_email(*e);
        if (!again || *again != *e) __builtin_trap();
    }
    if (auto g = signin::normalize_group(text)) {
        auto again = signin::normalize_group(*g);
        if (!again || *again != *g) __builtin_trap();
    }
    std::string why;
    if (auto o = signin::parse_origin(text, &why)) {
        auto again = signin::parse_origin(o->text, &why);
        if (!again || again->text != o->text) __builtin_trap();
    }
    return 0;
}
