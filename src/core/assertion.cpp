// $signin_assertion and its JWKS (assertion.hpp).
#include "signin/assertion.hpp"

#include <sodium.h>

#include <stdexcept>

#include "encoding.hpp"
#include "signin/json.hpp"

namespace signin {
namespace {

constexpr char kContext[crypto_kdf_CONTEXTBYTES + 1] = "sgassert";

std::string b64(std::string_view s) {
    return enc::base64url(reinterpret_cast<const unsigned char *>(s.data()), s.size());
}

}  // namespace

AssertionKeys::Key AssertionKeys::derive(const SecretKey &master, std::uint64_t generation) {
    Key k;
    k.generation = generation;
    std::array<unsigned char, crypto_sign_SEEDBYTES> seed{};
    crypto_kdf_derive_from_key(seed.data(), seed.size(), generation, kContext, master.data());
    crypto_sign_seed_keypair(k.public_key.data(), k.secret.data(), seed.data());
    sodium_memzero(seed.data(), seed.size());
    // kid: the generation and a digest of the public key (a verifier picks the key by it)
    std::array<unsigned char, 9> digest{};
    crypto_generichash(digest.data(), digest.size(), k.public_key.data(), k.public_key.size(), nullptr, 0);
    k.kid = "g" + std::to_string(generation) + "-" + enc::base64url(digest.data(), digest.size());
    return k;
}

AssertionKeys::AssertionKeys(const SecretKey &master, std::uint64_t generation) {
    if (sodium_init() < 0) throw std::runtime_error("libsodium could not be initialised");
    if (generation < 1) throw std::invalid_argument("assertion key generation starts at 1");
    current_ = derive(master, generation);
    if (generation > 1) previous_ = derive(master, generation - 1);
}

AssertionKeys::~AssertionKeys() {
    sodium_memzero(current_.secret.data(), current_.secret.size());
    if (previous_) sodium_memzero(previous_->secret.data(), previous_->secret.size());
}

std::string AssertionKeys::sign(const User &u, std::string_view issuer, std::string_view audience, Millis now,
                                bool mfa, Millis ttl) const {
    json::Writer h;
    h.begin_object().key("alg").value("EdDSA").key("typ").value("JWT").key("kid").value(current_.kid).end_object();
    const auto iat = static_cast<std::int64_t>(now / 1000);
    json::Writer p;
    p.begin_object()
        .key("iss").value(issuer)
        .key("aud").value(audience)
        .key("sub").value(u.id)
        .key("email").value(u.email)
        .key("roles").begin_array();
    for (const auto &role : u.roles) p.value(role);
    p.end_array()
        .key("mfa").value(mfa)
        .key("iat").value(iat)
        .key("exp").value(iat + static_cast<std::int64_t>(ttl / 1000))
        .end_object();
    std::string input = b64(h.str()) + "." + b64(p.str());
    std::array<unsigned char, crypto_sign_BYTES> sig{};
    crypto_sign_detached(sig.data(), nullptr, reinterpret_cast<const unsigned char *>(input.data()), input.size(),
                         current_.secret.data());
    return input + "." + enc::base64url(sig.data(), sig.size());
}

std::string AssertionKeys::jwks() const {
    json::Writer w;
    w.begin_object().key("keys").begin_array();
    for (const Key *k : {&current_, previous_ ? &*previous_ : nullptr}) {
        if (k == nullptr) continue;
        w.begin_object()
            .key("kty").value("OKP")
            .key("crv").value("Ed25519")
            .key("x").value(enc::base64url(k->public_key.data(), k->public_key.size()))
            .key("kid").value(k->kid)
            .key("use").value("sig")
            .key("alg").value("EdDSA")
            .end_object();
    }
    w.end_array().end_object();
    return w.take();
}

}  // namespace signin
