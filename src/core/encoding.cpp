#include "core/encoding.hpp"

#include <sodium.h>

#include <array>
#include <ctime>

#include "signin/secret.hpp"

namespace signin {

void Secret::wipe() noexcept {
    if (!value_.empty()) {
        sodium_memzero(value_.data(), value_.size());
        value_.clear();
    }
}

namespace enc {

std::string base64url(const unsigned char *data, std::size_t len) {
    std::string out(sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_URLSAFE_NO_PADDING), '\0');
    sodium_bin2base64(out.data(), out.size(), data, len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    out.resize(out.size() - 1);  // the terminating NUL
    return out;
}

std::optional<std::string> base64url_decode(std::string_view text) {
    std::string out(text.size(), '\0');
    std::size_t len = 0;
    const char *end = nullptr;
    if (sodium_base642bin(reinterpret_cast<unsigned char *>(out.data()), out.size(), text.data(),
                          text.size(), nullptr, &len, &end,
                          sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
        end != text.data() + text.size()) {
        return std::nullopt;
    }
    out.resize(len);
    return out;
}

std::string hex(const unsigned char *data, std::size_t len) {
    std::string out(len * 2 + 1, '\0');
    sodium_bin2hex(out.data(), out.size(), data, len);
    out.resize(len * 2);
    return out;
}

std::string rfc3339(std::int64_t unix_ms) {
    std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
    int ms = static_cast<int>(unix_ms % 1000);
    if (ms < 0) {
        ms += 1000;
        secs -= 1;
    }
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[40];
    std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(buf + n, sizeof buf - n, ".%03dZ", ms);
    return buf;
}

std::string uuid7(std::int64_t unix_ms) {
    std::array<unsigned char, 16> b{};
    randombytes_buf(b.data(), b.size());
    auto ts = static_cast<std::uint64_t>(unix_ms);
    for (int i = 0; i < 6; ++i) {
        b[static_cast<std::size_t>(i)] = static_cast<unsigned char>(ts >> (40 - 8 * i));
    }
    b[6] = static_cast<unsigned char>(0x70 | (b[6] & 0x0f));
    b[8] = static_cast<unsigned char>(0x80 | (b[8] & 0x3f));
    std::string h = hex(b.data(), b.size());
    return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
           "-" + h.substr(20);
}

std::string random_secret(std::size_t bytes) {
    if (bytes < 16) {
        bytes = 16;
    }
    std::string raw(bytes, '\0');
    randombytes_buf(raw.data(), raw.size());
    std::string out = base64url(reinterpret_cast<const unsigned char *>(raw.data()), raw.size());
    sodium_memzero(raw.data(), raw.size());
    return out;
}

}  // namespace enc
}  // namespace signin
