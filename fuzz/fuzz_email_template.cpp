// libFuzzer: custom email templates (signin_email_template files, checked at nginx -t) and the
// rendering of an accepted template with an address that needs escaping.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "signin/emails.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    if (size < 1) return 0;
    std::string_view in(reinterpret_cast<const char *>(data + 1), size - 1);
    std::size_t nul = in.find('\0');
    std::string_view text = in.substr(0, nul);
    std::string_view html = nul == std::string_view::npos ? std::string_view() : in.substr(nul + 1);
    auto purpose = static_cast<signin::Purpose>(1 + data[0] % 7);
    auto t = signin::Emails::parse(purpose, text, html);
    if (!t) return 0;
    signin::Emails emails;
    if (!emails.replace(purpose, t.value())) return 0;
    signin::Delivery d;
    d.email = "a<b>&\"c'@example.com";
    d.token = signin::Secret(std::string("TOKEN-0000"));
    d.purpose = purpose;
    (void)emails.render(d, "https://app.example.com");
    emails.set_link_base("https://app.example.com/auth/");
    (void)emails.render(d, "https://app.example.com");
    return 0;
}
