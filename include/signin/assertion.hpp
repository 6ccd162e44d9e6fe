// $signin_assertion: who the gate let in, as a compact JWS that an upstream can
// verify (RFC 7515, EdDSA with Ed25519 per RFC 8037), and the public keys at
// {auth_path}/.well-known/jwks.json. The signing keys are derived from the secret key file
// (secret_key.hpp), one per generation: `signin-admin key rotate` moves to the next, and the JWKS
// keeps the previous one, so assertions signed before a rotation still verify. Valid C++17.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "signin/secret_key.hpp"
#include "signin/types.hpp"

namespace signin {

class AssertionKeys {
public:
    AssertionKeys(const SecretKey &master, std::uint64_t generation);
    ~AssertionKeys();
    AssertionKeys(const AssertionKeys &) = delete;
    AssertionKeys &operator=(const AssertionKeys &) = delete;

    // header.payload.signature: {"alg":"EdDSA","typ":"JWT","kid"} and {"iss","aud","sub","email",
    // "roles","mfa","iat","exp"} (seconds; exp = iat + ttl).
    std::string sign(const User &u, std::string_view issuer, std::string_view audience, Millis now, bool mfa,
                     Millis ttl = 60000) const;
    // {"keys":[{kty:"OKP",crv:"Ed25519",x,kid,use:"sig",alg:"EdDSA"}, ...]}: this generation's key,
    // then the previous one's.
    std::string jwks() const;
    const std::string &kid() const { return current_.kid; }

private:
    struct Key {
        std::uint64_t generation = 0;
        std::array<unsigned char, 64> secret{};
        std::array<unsigned char, 32> public_key{};
        std::string kid;
    };
    static Key derive(const SecretKey &master, std::uint64_t generation);

    Key current_;
    std::optional<Key> previous_;
};

}  // namespace signin
