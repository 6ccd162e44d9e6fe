// OpenID Connect, the provider's side (oidc_provider.hpp): the signing keys, ID tokens, userinfo,
// the JWKS and discovery documents. Signatures are OpenSSL's libcrypto.
#include <cjson/cJSON.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sodium.h>

#include <algorithm>
#include <cstring>

#include "encoding.hpp"
#include "signin/json.hpp"
#include "signin/oidc_provider.hpp"

namespace signin::op {
namespace {

struct PkeyFree {
    void operator()(EVP_PKEY *p) const { EVP_PKEY_free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
struct BioFree {
    void operator()(BIO *b) const { BIO_free(b); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
struct BnFree {
    void operator()(BIGNUM *b) const { BN_free(b); }
};
using Bn = std::unique_ptr<BIGNUM, BnFree>;
struct MdCtxFree {
    void operator()(EVP_MD_CTX *c) const { EVP_MD_CTX_free(c); }
};

std::string b64(std::string_view s) { return enc::base64url(reinterpret_cast<const unsigned char *>(s.data()), s.size()); }

std::string bn_bytes(const BIGNUM *bn, int pad = 0) {
    const int n = pad > 0 ? pad : BN_num_bytes(bn);
    std::string out(static_cast<std::size_t>(n), '\0');
    BN_bn2binpad(bn, reinterpret_cast<unsigned char *>(out.data()), n);
    return out;
}

Error key_error(std::string why) { return Error{Code::InvalidRequest, std::move(why)}; }

}  // namespace

struct SigningKey::Impl {
    Pkey pkey;
    // the public JWK's members, in the lexicographic order RFC 7638 hashes them
    std::vector<std::pair<std::string, std::string>> members;
};

SigningKey::SigningKey() = default;
SigningKey::~SigningKey() = default;
SigningKey::SigningKey(SigningKey &&) noexcept = default;
SigningKey &SigningKey::operator=(SigningKey &&) noexcept = default;

namespace {

// The algorithm of a private key, and its public JWK's required members; nullopt for a key of
// another kind (RSA under 2048 bits, another curve, DSA, ...).
std::optional<Alg> describe(EVP_PKEY *p, std::vector<std::pair<std::string, std::string>> &members) {
    if (EVP_PKEY_is_a(p, "RSA")) {
        if (EVP_PKEY_get_bits(p) < 2048 || EVP_PKEY_get_bits(p) > 8192) return std::nullopt;
        BIGNUM *n = nullptr, *e = nullptr;
        if (EVP_PKEY_get_bn_param(p, OSSL_PKEY_PARAM_RSA_N, &n) != 1 ||
            EVP_PKEY_get_bn_param(p, OSSL_PKEY_PARAM_RSA_E, &e) != 1) {
            BN_free(n);
            BN_free(e);
            return std::nullopt;
        }
        Bn nn(n), ee(e);
        members = {{"e", b64(bn_bytes(e))}, {"kty", "RSA"}, {"n", b64(bn_bytes(n))}};
        return Alg::RS256;
    }
    if (EVP_PKEY_is_a(p, "EC")) {
        char group[64] = {};
        std::size_t glen = 0;
        if (EVP_PKEY_get_utf8_string_param(p, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, &glen) != 1 ||
            (std::strcmp(group, "prime256v1") != 0 && std::strcmp(group, "P-256") != 0)) {
            return std::nullopt;
        }
        BIGNUM *x = nullptr, *y = nullptr;
        if (EVP_PKEY_get_bn_param(p, OSSL_PKEY_PARAM_EC_PUB_X, &x) != 1 ||
            EVP_PKEY_get_bn_param(p, OSSL_PKEY_PARAM_EC_PUB_Y, &y) != 1) {
            BN_free(x);
            BN_free(y);
            return std::nullopt;
        }
        Bn xx(x), yy(y);
        members = {{"crv", "P-256"}, {"kty", "EC"}, {"x", b64(bn_bytes(x, 32))}, {"y", b64(bn_bytes(y, 32))}};
        return Alg::ES256;
    }
    if (EVP_PKEY_is_a(p, "ED25519")) {
        unsigned char pub[32];
        std::size_t len = sizeof pub;
        if (EVP_PKEY_get_raw_public_key(p, pub, &len) != 1 || len != sizeof pub) return std::nullopt;
        members = {{"crv", "Ed25519"}, {"kty", "OKP"}, {"x", enc::base64url(pub, len)}};
        return Alg::EdDSA;
    }
    return std::nullopt;
}

}  // namespace

Result<SigningKey> SigningKey::from_pem(std::string_view pem) {
    if (pem.empty() || pem.size() > 65536) return key_error("the signing key file is empty or too large");
    Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    if (!bio) return key_error("out of memory reading the signing key");
    // a passphrase callback that gives none: an encrypted key is refused, never prompted for
    Pkey pkey(PEM_read_bio_PrivateKey(bio.get(), nullptr, [](char *, int, int, void *) { return 0; }, nullptr));
    if (!pkey) return key_error("the signing key file holds no unencrypted PEM private key");
    SigningKey k;
    k.impl_ = std::make_unique<Impl>();
    auto alg = describe(pkey.get(), k.impl_->members);
    if (!alg) return key_error("the signing key is neither RSA of 2048 bits or more, EC P-256, nor Ed25519");
    k.alg_ = *alg;
    k.impl_->pkey = std::move(pkey);
    // RFC 7638: the thumbprint of the required members, no whitespace, in lexicographic order
    json::Writer w;
    w.begin_object();
    for (const auto &[name, value] : k.impl_->members) w.key(name).value(value);
    w.end_object();
    unsigned char digest[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(digest, reinterpret_cast<const unsigned char *>(w.str().data()), w.str().size());
    k.kid_ = enc::base64url(digest, sizeof digest);
    return k;
}

Result<SigningKey> SigningKey::generate(Alg alg) {
    EVP_PKEY *p = nullptr;
    switch (alg) {
    case Alg::RS256: p = EVP_RSA_gen(2048); break;
    case Alg::ES256: p = EVP_EC_gen("P-256"); break;
    case Alg::EdDSA: p = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"); break;
    }
    if (p == nullptr) return Error{Code::Internal, "could not make a signing key"};
    Pkey pkey(p);
    // through PEM, so that a generated key and a read one are made the same way
    Bio bio(BIO_new(BIO_s_mem()));
    if (!bio || PEM_write_bio_PrivateKey(bio.get(), pkey.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
        return Error{Code::Internal, "could not write a signing key"};
    }
    char *data = nullptr;
    const long len = BIO_get_mem_data(bio.get(), &data);
    Secret pem(std::string(data, static_cast<std::size_t>(len)));
    OPENSSL_cleanse(data, static_cast<std::size_t>(len));
    return from_pem(pem.reveal());
}

Secret SigningKey::pem() const {
    if (!impl_) return Secret();
    Bio bio(BIO_new(BIO_s_mem()));
    if (!bio || PEM_write_bio_PrivateKey(bio.get(), impl_->pkey.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
        return Secret();
    }
    char *data = nullptr;
    const long len = BIO_get_mem_data(bio.get(), &data);
    Secret out(std::string(data, static_cast<std::size_t>(len)));
    OPENSSL_cleanse(data, static_cast<std::size_t>(len));
    return out;
}

std::string SigningKey::jwk() const {
    json::Writer w;
    w.begin_object();
    if (impl_) {
        for (const auto &[name, value] : impl_->members) w.key(name).value(value);
    }
    w.key("kid").value(kid_).key("use").value("sig").key("alg").value(alg_name(alg_)).end_object();
    return w.take();
}

std::string SigningKey::sign_jwt(std::string_view claims_json) const {
    if (!impl_) return {};
    json::Writer h;
    h.begin_object().key("alg").value(alg_name(alg_)).key("typ").value("JWT").key("kid").value(kid_).end_object();
    std::string input = b64(h.str()) + "." + b64(claims_json);
    std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
    // Ed25519 hashes inside the signature (no digest named); RS256 and ES256 are over SHA-256
    const EVP_MD *md = alg_ == Alg::EdDSA ? nullptr : EVP_sha256();
    std::size_t len = 0;
    const auto *in = reinterpret_cast<const unsigned char *>(input.data());
    if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, md, nullptr, impl_->pkey.get()) != 1 ||
        EVP_DigestSign(ctx.get(), nullptr, &len, in, input.size()) != 1) {
        return {};
    }
    std::string sig(len, '\0');
    if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char *>(sig.data()), &len, in, input.size()) != 1) return {};
    sig.resize(len);
    if (alg_ == Alg::ES256) {
        // OpenSSL writes DER; a JWS ES256 signature is r || s, 32 bytes each (RFC 7518 §3.4)
        const auto *p = reinterpret_cast<const unsigned char *>(sig.data());
        ECDSA_SIG *es = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
        if (es == nullptr) return {};
        sig = bn_bytes(ECDSA_SIG_get0_r(es), 32) + bn_bytes(ECDSA_SIG_get0_s(es), 32);
        ECDSA_SIG_free(es);
    }
    return input + "." + b64(sig);
}

bool SigningKey::verify(std::string_view input, std::string_view signature) const {
    if (!impl_) return false;
    std::string der;
    if (alg_ == Alg::ES256) {
        // r || s to the DER OpenSSL reads
        if (signature.size() != 64) return false;
        ECDSA_SIG *es = ECDSA_SIG_new();
        BIGNUM *r = BN_bin2bn(reinterpret_cast<const unsigned char *>(signature.data()), 32, nullptr);
        BIGNUM *ss = BN_bin2bn(reinterpret_cast<const unsigned char *>(signature.data()) + 32, 32, nullptr);
        if (es != nullptr && r != nullptr && ss != nullptr && ECDSA_SIG_set0(es, r, ss) == 1) {
            r = ss = nullptr;
            unsigned char *out = nullptr;
            const int len = i2d_ECDSA_SIG(es, &out);
            if (len > 0) der.assign(reinterpret_cast<char *>(out), static_cast<std::size_t>(len));
            OPENSSL_free(out);
        }
        BN_free(r);
        BN_free(ss);
        ECDSA_SIG_free(es);
        if (der.empty()) return false;
        signature = der;
    }
    std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
    const EVP_MD *md = alg_ == Alg::EdDSA ? nullptr : EVP_sha256();
    return ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, md, nullptr, impl_->pkey.get()) == 1 &&
           EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char *>(signature.data()), signature.size(),
                            reinterpret_cast<const unsigned char *>(input.data()), input.size()) == 1;
}

// ---------------------------------------------------------------- the key ring

const SigningKey *KeyRing::find(std::string_view kid) const {
    for (const auto &k : keys_) {
        if (k->kid() == kid) return k.get();
    }
    return nullptr;
}

namespace {

struct JsonFree {
    void operator()(cJSON *j) const { cJSON_Delete(j); }
};
using Json = std::unique_ptr<cJSON, JsonFree>;

Json parse_json(std::string_view text) {
    if (text.size() > 16384 || !json::valid_utf8(text) || !json::free_of_raw_controls(text)) return nullptr;
    Json j(cJSON_ParseWithLength(text.data(), text.size()));
    return j && cJSON_IsObject(j.get()) ? std::move(j) : nullptr;
}

std::optional<std::string> str(const cJSON *obj, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsString(v) || v->valuestring == nullptr) return std::nullopt;
    return std::string(v->valuestring);
}

}  // namespace

std::optional<IdTokenHint> read_id_token_hint(std::string_view jwt, const KeyRing &keys, std::string_view issuer) {
    if (jwt.size() > 16384) return std::nullopt;
    const auto dot1 = jwt.find('.');
    const auto dot2 = dot1 == std::string_view::npos ? dot1 : jwt.find('.', dot1 + 1);
    if (dot2 == std::string_view::npos || jwt.find('.', dot2 + 1) != std::string_view::npos) return std::nullopt;
    auto header_text = enc::base64url_decode(jwt.substr(0, dot1));
    auto payload_text = enc::base64url_decode(jwt.substr(dot1 + 1, dot2 - dot1 - 1));
    auto sig = enc::base64url_decode(jwt.substr(dot2 + 1));
    if (!header_text || !payload_text || !sig) return std::nullopt;
    Json header = parse_json(*header_text);
    if (!header || cJSON_GetObjectItemCaseSensitive(header.get(), "crit") != nullptr) return std::nullopt;
    auto kid = str(header.get(), "kid");
    auto alg = str(header.get(), "alg");
    const SigningKey *key = kid ? keys.find(*kid) : nullptr;
    // the key decides the algorithm; a header naming another one is refused, never followed
    if (key == nullptr || !alg || *alg != alg_name(key->alg())) return std::nullopt;
    if (!key->verify(jwt.substr(0, dot2), *sig)) return std::nullopt;
    Json claims = parse_json(*payload_text);
    if (!claims || str(claims.get(), "iss") != std::optional<std::string>(std::string(issuer))) return std::nullopt;
    auto aud = str(claims.get(), "aud");
    auto sub = str(claims.get(), "sub");
    if (!aud || !sub || aud->empty() || sub->empty()) return std::nullopt;
    return IdTokenHint{std::move(*aud), std::move(*sub)};
}

void KeyRing::add(std::shared_ptr<const SigningKey> key) {
    if (key) keys_.push_back(std::move(key));
}

const SigningKey *KeyRing::signer(Alg a) const {
    for (const auto &k : keys_) {
        if (k->alg() == a) return k.get();
    }
    return nullptr;
}

std::string KeyRing::jwks() const {
    std::string out = "{\"keys\":[";
    for (std::size_t i = 0; i < keys_.size(); ++i) {
        if (i > 0) out += ',';
        out += keys_[i]->jwk();
    }
    return out + "]}";
}

std::string check_keys(const Clients &clients, const KeyRing &keys) {
    for (const auto &[id, c] : clients.all()) {
        if (keys.signer(c.alg) == nullptr) {
            return std::string("client \"") + id + "\" has its ID tokens signed with " + alg_name(c.alg) +
                   ", and no signing key of that type is given";
        }
    }
    return {};
}

// ---------------------------------------------------------------- ID tokens, userinfo

std::string subject(const User &u) { return u.id; }

namespace {

void write_roles(json::Writer &w, const User &u) {
    std::vector<std::string> roles = u.roles;
    std::sort(roles.begin(), roles.end());
    w.key("roles").begin_array();
    for (const auto &r : roles) w.value(r);
    w.end_array();
}

void write_email(json::Writer &w, const User &u) {
    if (u.email.empty()) return;
    w.key("email").value(u.email).key("email_verified").value(!u.pending);
}

}  // namespace

std::string id_token_claims(const IdToken &t) {
    json::Writer w;
    const std::int64_t iat = t.now / 1000;
    w.begin_object()
        .key("iss").value(t.issuer)
        .key("sub").value(t.user != nullptr ? subject(*t.user) : std::string())
        .key("aud").value(t.client_id)
        .key("azp").value(t.client_id)
        .key("exp").value(static_cast<std::int64_t>(iat + t.ttl / 1000))
        .key("iat").value(iat)
        .key("auth_time").value(static_cast<std::int64_t>(t.auth_time / 1000));
    if (!t.nonce.empty()) w.key("nonce").value(t.nonce);
    if (!t.amr.empty()) {
        w.key("amr").begin_array();
        for (const auto &a : t.amr) w.value(a);
        w.end_array();
    }
    if (t.user != nullptr) {
        if (t.email) write_email(w, *t.user);
        write_roles(w, *t.user);
    }
    w.end_object();
    return w.take();
}

std::string sign_id_token(const SigningKey &key, const IdToken &t) { return key.sign_jwt(id_token_claims(t)); }

std::string userinfo(const User &u, const std::vector<std::string> &scopes) {
    json::Writer w;
    w.begin_object().key("sub").value(subject(u));
    if (std::find(scopes.begin(), scopes.end(), "email") != scopes.end()) write_email(w, u);
    write_roles(w, u);
    w.end_object();
    return w.take();
}

// ---------------------------------------------------------------- discovery

std::string discovery(std::string_view issuer, const KeyRing &keys) {
    std::string base(issuer);
    if (!base.empty() && base.back() == '/') base.pop_back();
    json::Writer w;
    w.begin_object()
        .key("issuer").value(issuer)
        .key("authorization_endpoint").value(base + "/oauth2/authorize")
        .key("token_endpoint").value(base + "/oauth2/token")
        .key("userinfo_endpoint").value(base + "/oauth2/userinfo")
        .key("revocation_endpoint").value(base + "/oauth2/revoke")
        .key("end_session_endpoint").value(base + "/oauth2/end_session")
        .key("jwks_uri").value(base + "/oauth2/jwks");
    auto list = [&](const char *name, std::initializer_list<const char *> values) {
        w.key(name).begin_array();
        for (const char *v : values) w.value(v);
        w.end_array();
    };
    list("response_types_supported", {"code"});
    list("response_modes_supported", {"query"});
    list("grant_types_supported", {"authorization_code", "refresh_token"});
    list("subject_types_supported", {"public"});
    w.key("id_token_signing_alg_values_supported").begin_array();
    for (Alg a : {Alg::RS256, Alg::ES256, Alg::EdDSA}) {
        if (keys.signer(a) != nullptr) w.value(alg_name(a));
    }
    w.end_array();
    list("scopes_supported", {"openid", "email", "profile", "offline_access"});
    list("claims_supported", {"iss", "sub", "aud", "azp", "exp", "iat", "auth_time", "nonce", "amr", "email",
                              "email_verified", "roles"});
    list("token_endpoint_auth_methods_supported", {"client_secret_basic", "client_secret_post", "none"});
    list("revocation_endpoint_auth_methods_supported", {"client_secret_basic", "client_secret_post", "none"});
    list("code_challenge_methods_supported", {"S256"});
    list("prompt_values_supported", {"none", "login", "consent"});
    w.key("authorization_response_iss_parameter_supported").value(true)
        .key("claims_parameter_supported").value(false)
        .key("request_parameter_supported").value(false)
        .key("request_uri_parameter_supported").value(false)
        .end_object();
    return w.take();
}

}  // namespace signin::op
