// TOTP (signin/totp.hpp): liboath checks the codes, libqrencode draws the enrollment QR code.
#include "signin/totp.hpp"

#include <liboath/oath.h>
#include <qrencode.h>
#include <sodium.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "encoding.hpp"

namespace signin::totp {
namespace {

void init_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        if (oath_init() != OATH_OK) throw std::runtime_error("liboath could not be initialised");
        if (sodium_init() < 0) throw std::runtime_error("libsodium could not be initialised");
    });
}

// A URI component (RFC 3986 unreserved characters kept).
std::string uri_component(std::string_view s) { return enc::percent_encode(s); }

}  // namespace

std::string new_secret() {
    init_once();
    std::string raw(20, '\0');
    randombytes_buf(raw.data(), raw.size());
    return raw;
}

std::string base32(std::string_view raw) {
    init_once();
    char *out = nullptr;
    size_t len = 0;
    if (oath_base32_encode(raw.data(), raw.size(), &out, &len) != OATH_OK || out == nullptr) {
        throw std::runtime_error("base32 encoding failed");
    }
    std::unique_ptr<char, decltype(&std::free)> held(out, &std::free);
    std::string s(out, len);
    while (!s.empty() && s.back() == '=') s.pop_back();
    sodium_memzero(out, len);
    return s;
}

std::optional<std::int64_t> match(std::string_view raw_secret, std::string_view code_in, std::int64_t now_seconds) {
    init_once();
    std::string code;
    for (char c : code_in) {
        if (c == ' ') continue;
        if (c < '0' || c > '9' || code.size() >= kDigits) return std::nullopt;
        code += c;
    }
    if (code.size() != kDigits || now_seconds < 0) return std::nullopt;
    int pos = 0;
    std::uint64_t counter = 0;
    const int rc = oath_totp_validate3(raw_secret.data(), raw_secret.size(), static_cast<time_t>(now_seconds),
                                       kStepSeconds, 0, kWindow, &pos, &counter, code.c_str());
    if (rc < 0) return std::nullopt;  // OATH_INVALID_OTP, or an error: not a match either way
    return static_cast<std::int64_t>(counter);
}

std::string otpauth_uri(std::string_view issuer, std::string_view account, std::string_view raw_secret) {
    const std::string label = uri_component(std::string(issuer) + ":" + std::string(account));
    return "otpauth://totp/" + label + "?secret=" + base32(raw_secret) + "&issuer=" + uri_component(issuer) +
           "&algorithm=SHA1&digits=" + std::to_string(kDigits) + "&period=" + std::to_string(kStepSeconds);
}

std::string qr_svg(std::string_view text) {
    const std::string z(text);
    std::unique_ptr<QRcode, decltype(&QRcode_free)> qr(QRcode_encodeString(z.c_str(), 0, QR_ECLEVEL_M, QR_MODE_8, 1),
                                                       &QRcode_free);
    if (!qr) throw std::runtime_error("the text does not fit a QR code");
    const int n = qr->width, quiet = 4, size = n + 2 * quiet;
    std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + std::to_string(size) + " " +
                      std::to_string(size) +
                      "\" shape-rendering=\"crispEdges\" role=\"img\" aria-label=\"QR code\">"
                      "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/><path fill=\"#000\" d=\"";
    for (int y = 0; y < n; y++) {
        for (int x = 0; x < n; x++) {
            if (qr->data[y * n + x] & 1) {
                svg += "M" + std::to_string(x + quiet) + " " + std::to_string(y + quiet) + "h1v1h-1z";
            }
        }
    }
    svg += "\"/></svg>";
    return svg;
}

}  // namespace signin::totp
