// The secret key file (signin_secret_key): never in the store. It holds 32 random bytes from
// which every key of the module is derived (the outbox's seal, the assertion signing keys), and
// the generation of the assertion signing key. Valid C++17: the glue includes it.
//
//   # comments
//   <32 bytes, base64url without padding: 43 characters>
//   assertion-generation N          (optional; 1 when absent)
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "signin/types.hpp"

namespace signin {

using SecretKey = std::array<unsigned char, 32>;

struct KeyFile {
    SecretKey key{};
    std::uint64_t assertion_generation = 1;
};

// Reads the key file at path; when it does not exist and `create` is set, writes a new one
// (mode 0600, created exclusively: of two processes racing, both end with the same key).
// Error (Code::Internal) with the reason otherwise; a file others can read is refused.
Result<KeyFile> load_key_file(const std::string &path, bool create);
inline Result<SecretKey> load_secret_key(const std::string &path, bool create) {
    auto f = load_key_file(path, create);
    if (!f) return f.error();
    return f.value().key;
}
// Authenticated encryption under a key of the file's family (XChaCha20-Poly1305, a random
// nonce in front): what the store keeps of a secret. `ad` binds it to its place (a record's key),
// so a sealed value moved elsewhere does not open.
std::string seal(const SecretKey &key, std::string_view plain, std::string_view ad);
// The plaintext, or nullopt when the value does not open (another key, another place, damaged).
std::optional<Secret> open_sealed(const SecretKey &key, std::string_view sealed, std::string_view ad);

// The text of a key file.
std::string key_file_text(const KeyFile &file);
// `signin-admin key rotate`: the next assertion key generation, written in place atomically (the
// file keeps its mode and owner). nginx uses it from its next reload. Returns the new generation.
Result<std::uint64_t> rotate_assertion_key(const std::string &path);

}  // namespace signin
