// libFuzzer: Cookie and Authorization header parsing (every request to the API and every gated
// request). The input is split at the first NUL: cookie line, then authorization value.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "signin/credentials.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    std::string_view in(reinterpret_cast<const char *>(data), size);
    std::size_t nul = in.find('\0');
    std::string_view cookie = in.substr(0, nul);
    std::string_view authorization = nul == std::string_view::npos ? std::string_view() : in.substr(nul + 1);
    signin::CookieScan scan;
    signin::scan_cookie_line(cookie, "svc_dev_session", scan);
    if (scan.count < 0) __builtin_trap();
    // a value is a view into the line
    if (scan.count && (scan.value.data() < cookie.data() || scan.value.data() + scan.value.size() > cookie.data() + cookie.size())) {
        __builtin_trap();
    }
    // the Cookie line passed upstream without the module's cookies: written into exactly the
    // room it is promised (2 * the line), so ASan sees a byte past it; none of them is left
    std::vector<char> out(2 * cookie.size());
    const std::size_t n = signin::without_cookies_to(cookie, {"svc_dev_session", "svc_dev_device"}, out.data());
    if (n > out.size()) __builtin_trap();
    signin::CookieScan left;
    signin::scan_cookie_line(std::string_view(out.data(), n), "svc_dev_session", left);
    if (left.count != 0) __builtin_trap();
    if (auto token = signin::bearer_token(authorization)) {
        if (token->size() > authorization.size()) __builtin_trap();
    }
    return 0;
}
