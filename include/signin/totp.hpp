// TOTP (RFC 6238) for second factors (signin_mfa): SHA-1, 6 digits, 30-second steps, checked
// by liboath (oath-toolkit) with a window of ±1 step, and what an authenticator app is given to
// enroll: the secret in base32, the otpauth:// URI, and that URI as a QR code in SVG (libqrencode).
// Valid C++17: the glue includes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace signin::totp {

inline constexpr unsigned kStepSeconds = 30;
inline constexpr unsigned kDigits = 6;
inline constexpr unsigned kWindow = 1;  // steps accepted either side of now

// 20 random bytes (RFC 4226's recommended length for HMAC-SHA-1).
std::string new_secret();
// RFC 4648 base32, upper case, no padding: what people type into an app.
std::string base32(std::string_view raw);
// The time step that `code` (6 digits; spaces ignored) matches within ±kWindow steps of
// now_seconds, or nullopt. The caller refuses a step it accepted before (replay).
std::optional<std::int64_t> match(std::string_view raw_secret, std::string_view code, std::int64_t now_seconds);
// The time step of now_seconds.
inline std::int64_t step_of(std::int64_t now_seconds) { return now_seconds / kStepSeconds; }
// otpauth://totp/ISSUER:ACCOUNT?secret=...&issuer=ISSUER&algorithm=SHA1&digits=6&period=30
std::string otpauth_uri(std::string_view issuer, std::string_view account, std::string_view raw_secret);
// The QR code of text (error correction M) as a standalone SVG image, black modules on white
// with the 4-module quiet zone. Throws std::runtime_error when text does not fit a QR code.
std::string qr_svg(std::string_view text);

}  // namespace signin::totp
