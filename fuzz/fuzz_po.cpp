// libFuzzer: PO catalogs (signin_messages files, read at nginx -t) laid over a shipped catalog,
// and Accept-Language headers (every page request) chosen among the configured languages.
#include <cstddef>
#include <cstdint>
#include <string>

#include "signin/i18n.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    const std::string in(reinterpret_cast<const char *>(data), size);
    (void)signin::i18n::parse_po(in);
    auto langs = signin::i18n::Languages::make({"en", "de", "xx"}, {{"de", in}, {"xx", in}});
    if (langs) {
        const auto &l = **langs;
        (void)l.format(1, "Sign in to {site}", {signin::i18n::text_arg("site", "x")});
        (void)l.format(2, "{minutes, plural, one {# minute} other {# minutes}}", {signin::i18n::number_arg("minutes", 3)});
    }
    static const auto shipped = signin::i18n::Languages::make({"en", "de", "pt-BR", "ar"}).value();
    (void)shipped->choose(in.substr(0, 40), in);
    return 0;
}
