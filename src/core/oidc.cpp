// OpenID Connect, the relying party's side (oidc.hpp).
#include "signin/oidc.hpp"

#include <cjson/cJSON.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <sodium.h>

#include <algorithm>
#include <cstring>

#include "encoding.hpp"
#include "public_key.hpp"
#include "signin/engine.hpp"
#include "signin/json.hpp"
#include "text.hpp"

namespace signin::oidc {
namespace {

Error bad(std::string why) { return Error{Code::InvalidRequest, std::move(why)}; }

struct JsonFree {
    void operator()(cJSON *j) const { cJSON_Delete(j); }
};
using Json = std::unique_ptr<cJSON, JsonFree>;

Json parse_json(std::string_view text) {
    if (text.size() > (1u << 20) || !json::valid_utf8(text) || !json::free_of_raw_controls(text)) return nullptr;
    return Json(cJSON_ParseWithLength(text.data(), text.size()));
}

// A member that is a string, or nullopt.
std::optional<std::string> str(const cJSON *obj, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsString(v) || v->valuestring == nullptr) return std::nullopt;
    return std::string(v->valuestring);
}

// Whether an array member (when present) holds `want`; `absent` when it is not there.
bool lists(const cJSON *obj, const char *name, std::string_view want, bool absent) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (arr == nullptr) return absent;
    if (!cJSON_IsArray(arr)) return false;
    const cJSON *item = nullptr;
    cJSON_ArrayForEach(item, arr) {
        if (cJSON_IsString(item) && item->valuestring != nullptr && want == item->valuestring) return true;
    }
    return false;
}

// An absolute URL a provider may be reached at: https, or http on a loopback host when allowed;
// no fragment, no user info, nothing a proxy_pass or a header could read twice (space, control
// characters, quotes, backslash).
bool good_url(std::string_view url, bool allow_http) {
    std::string_view rest;
    if (url.rfind("https://", 0) == 0) {
        rest = url.substr(8);
    } else if (url.rfind("http://", 0) == 0) {
        rest = url.substr(7);
    } else {
        return false;
    }
    if (url.size() > 2048) return false;
    for (char c : url) {
        const auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u >= 0x7f || c == '"' || c == '\'' || c == '\\' || c == '#' || c == '<' || c == '>') return false;
    }
    std::string_view authority = rest.substr(0, rest.find_first_of("/?"));
    if (authority.empty() || authority.find('@') != std::string_view::npos) return false;
    if (url[4] == ':') {  // http: a loopback host only
        if (!allow_http) return false;
        std::string_view host = authority;
        if (host.front() == '[') {
            host = host.substr(0, host.find(']') + 1);
        } else {
            host = host.substr(0, host.find(':'));
        }
        if (!is_loopback_host(text::lowered(host))) return false;
    }
    return true;
}

bool is_http(std::string_view url) { return url.rfind("http://", 0) == 0; }

// ---------------------------------------------------------------- keys

std::shared_ptr<EVP_PKEY> from_params(const char *type, OSSL_PARAM_BLD *bld) {
    return std::shared_ptr<EVP_PKEY>(pkey::from_params(type, bld));
}

std::optional<std::string> b64(const cJSON *obj, const char *name) {
    auto s = str(obj, name);
    if (!s) return std::nullopt;
    return enc::base64url_decode(*s);
}

}  // namespace

struct KeySet::Key {
    std::string kid;
    bool rsa = false;  // else EC P-256
    std::shared_ptr<EVP_PKEY> pkey;
};

KeySet::KeySet() = default;
KeySet::~KeySet() = default;
KeySet::KeySet(KeySet &&) noexcept = default;
KeySet &KeySet::operator=(KeySet &&) noexcept = default;
std::size_t KeySet::size() const { return keys_.size(); }
bool KeySet::has(std::string_view kid) const {
    return std::any_of(keys_.begin(), keys_.end(), [&](const auto &k) { return k->kid == kid; });
}

Result<KeySet> KeySet::parse(std::string_view text) {
    Json root = parse_json(text);
    const cJSON *keys = root ? cJSON_GetObjectItemCaseSensitive(root.get(), "keys") : nullptr;
    if (!cJSON_IsArray(keys)) return bad("the JWKS is not a JSON object with a \"keys\" array");
    KeySet set;
    const cJSON *jwk = nullptr;
    cJSON_ArrayForEach(jwk, keys) {
        if (!cJSON_IsObject(jwk) || set.keys_.size() >= 64) continue;
        auto kty = str(jwk, "kty");
        auto use = str(jwk, "use");
        auto alg = str(jwk, "alg");
        if (!kty || (use && *use != "sig")) continue;
        auto key = std::make_shared<Key>();
        key->kid = str(jwk, "kid").value_or("");
        if (*kty == "RSA" && (!alg || *alg == "RS256")) {
            auto n = b64(jwk, "n");
            auto e = b64(jwk, "e");
            if (!n || !e || n->size() < 256 || n->size() > 1024 || e->empty() || e->size() > 8) continue;
            BIGNUM *bn = BN_bin2bn(reinterpret_cast<const unsigned char *>(n->data()), static_cast<int>(n->size()), nullptr);
            BIGNUM *be = BN_bin2bn(reinterpret_cast<const unsigned char *>(e->data()), static_cast<int>(e->size()), nullptr);
            OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
            if (bn != nullptr && be != nullptr && bld != nullptr) {
                OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn);
                OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be);
                key->pkey = from_params("RSA", bld);
            }
            OSSL_PARAM_BLD_free(bld);
            BN_free(bn);
            BN_free(be);
            key->rsa = true;
            if (key->pkey && EVP_PKEY_get_bits(key->pkey.get()) < 2048) key->pkey.reset();
        } else if (*kty == "EC" && str(jwk, "crv") == std::optional<std::string>("P-256") && (!alg || *alg == "ES256")) {
            auto x = b64(jwk, "x");
            auto y = b64(jwk, "y");
            if (!x || !y || x->size() != 32 || y->size() != 32) continue;
            std::string point = "\x04" + *x + *y;
            OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
            if (bld != nullptr) {
                OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0);
                OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size());
                key->pkey = from_params("EC", bld);
            }
            OSSL_PARAM_BLD_free(bld);
        }
        if (key->pkey) set.keys_.push_back(std::move(key));
    }
    return set;
}

// ---------------------------------------------------------------- configuration, discovery

std::string check_provider(const ProviderConfig &p) {
    if (p.name.empty() || p.name.size() > 32 ||
        !std::all_of(p.name.begin(), p.name.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        })) {
        return "a provider's name is 1 to 32 of a-z, 0-9, \"_\" and \"-\"";
    }
    if (!good_url(p.issuer, true) || p.issuer.find('?') != std::string::npos) {
        return "issuer= must be an https URL (http only on a loopback host) without a query";
    }
    if (p.client_id.empty() || p.client_id.size() > 512) return "client_id= is missing";
    if (p.client_secret.empty()) return "the client_secret_file is empty";
    bool openid = false;
    std::string_view scope = p.scope;
    while (!scope.empty()) {
        auto sp = scope.find(' ');
        if (scope.substr(0, sp) == "openid") openid = true;
        scope = sp == std::string_view::npos ? std::string_view() : scope.substr(sp + 1);
    }
    for (char c : p.scope) {
        if (static_cast<unsigned char>(c) < 0x21 && c != ' ') return "scope= holds a control character";
    }
    if (!openid) return "scope= must hold \"openid\"";
    if (p.label.size() > 64) return "label= is longer than 64 bytes";
    for (char c : p.label) {
        if (static_cast<unsigned char>(c) < 0x20) return "label= holds a control character";
    }
    if (!p.label.empty() && !json::valid_utf8(p.label)) return "label= is not UTF-8";
    return {};
}

std::optional<Secret> parse_client_secret(std::string_view text) {
    text = text.substr(0, text.find('\n'));
    text = signin::text::trim(text, " \t\r");
    if (text.empty()) return std::nullopt;
    return Secret(std::string(text));
}

std::string discovery_url(std::string_view issuer) {
    std::string url(issuer);
    if (!url.empty() && url.back() == '/') url.pop_back();
    return url + "/.well-known/openid-configuration";
}

Result<Discovery> parse_discovery(std::string_view text, std::string_view issuer) {
    Json root = parse_json(text);
    if (!root || !cJSON_IsObject(root.get())) return bad("the discovery document is not a JSON object");
    Discovery d;
    auto iss = str(root.get(), "issuer");
    if (!iss || *iss != issuer) return bad("the discovery document names another issuer");
    d.issuer = *iss;
    const bool http = is_http(issuer);
    for (auto [name, out] : {std::pair<const char *, std::string *>{"authorization_endpoint", &d.authorization_endpoint},
                             {"token_endpoint", &d.token_endpoint},
                             {"jwks_uri", &d.jwks_uri}}) {
        auto v = str(root.get(), name);
        if (!v || !good_url(*v, http)) return bad(std::string("the discovery document's ") + name + " is missing or not a usable URL");
        *out = *v;
    }
    if (!lists(root.get(), "response_types_supported", "code", true)) {
        return bad("the provider does not offer the authorization code flow");
    }
    if (!lists(root.get(), "id_token_signing_alg_values_supported", "RS256", true) &&
        !lists(root.get(), "id_token_signing_alg_values_supported", "ES256", true)) {
        return bad("the provider signs ID tokens with neither RS256 nor ES256");
    }
    d.secret_in_body = lists(root.get(), "token_endpoint_auth_methods_supported", "client_secret_post", false);
    if (!d.secret_in_body && !lists(root.get(), "token_endpoint_auth_methods_supported", "client_secret_basic", true)) {
        return bad("the provider takes neither client_secret_post nor client_secret_basic");
    }
    return d;
}

// ---------------------------------------------------------------- ID tokens

const char *refusal_name(Refusal r) {
    switch (r) {
    case Refusal::None: return "none";
    case Refusal::Malformed: return "malformed";
    case Refusal::Algorithm: return "algorithm";
    case Refusal::UnknownKey: return "unknown_key";
    case Refusal::Signature: return "signature";
    case Refusal::Issuer: return "issuer";
    case Refusal::Audience: return "audience";
    case Refusal::Expired: return "expired";
    case Refusal::IssuedAt: return "issued_at";
    case Refusal::Nonce: return "nonce";
    case Refusal::Subject: return "subject";
    }
    return "?";
}

namespace {

// A JWS ES256 signature is r || s (32 bytes each); OpenSSL wants DER.
std::optional<std::string> es256_der(std::string_view sig) {
    if (sig.size() != 64) return std::nullopt;
    ECDSA_SIG *s = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(reinterpret_cast<const unsigned char *>(sig.data()), 32, nullptr);
    BIGNUM *ss = BN_bin2bn(reinterpret_cast<const unsigned char *>(sig.data()) + 32, 32, nullptr);
    std::optional<std::string> out;
    if (s != nullptr && r != nullptr && ss != nullptr && ECDSA_SIG_set0(s, r, ss) == 1) {
        r = ss = nullptr;  // s owns them
        unsigned char *der = nullptr;
        int len = i2d_ECDSA_SIG(s, &der);
        if (len > 0) out = std::string(reinterpret_cast<char *>(der), static_cast<std::size_t>(len));
        OPENSSL_free(der);
    }
    BN_free(r);
    BN_free(ss);
    ECDSA_SIG_free(s);
    return out;
}

bool verify_with(EVP_PKEY *key, std::string_view input, std::string_view sig) {
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    const bool ok = ctx != nullptr && EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1 &&
                    EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char *>(sig.data()), sig.size(),
                                     reinterpret_cast<const unsigned char *>(input.data()), input.size()) == 1;
    EVP_MD_CTX_free(ctx);
    return ok;
}

bool equal_ct(std::string_view a, std::string_view b) {
    return a.size() == b.size() && sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

// A NumericDate (seconds) as milliseconds; nullopt when not a finite number in range.
std::optional<Millis> seconds(const cJSON *obj, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 1e11) return std::nullopt;
    return static_cast<Millis>(v->valuedouble * 1000.0);
}

}  // namespace

class Verifier {
public:
    static Verified run(std::string_view jwt, const KeySet &keys, const Expected &expect);
};

Verified Verifier::run(std::string_view jwt, const KeySet &keys, const Expected &expect) {
    Verified out;
    auto refuse = [&](Refusal r) {
        out.refusal = r;
        return out;
    };
    if (jwt.size() > 16384) return refuse(Refusal::Malformed);
    const auto dot1 = jwt.find('.');
    const auto dot2 = dot1 == std::string_view::npos ? dot1 : jwt.find('.', dot1 + 1);
    if (dot2 == std::string_view::npos || jwt.find('.', dot2 + 1) != std::string_view::npos) {
        return refuse(Refusal::Malformed);
    }
    auto header_text = enc::base64url_decode(jwt.substr(0, dot1));
    auto payload_text = enc::base64url_decode(jwt.substr(dot1 + 1, dot2 - dot1 - 1));
    auto sig = enc::base64url_decode(jwt.substr(dot2 + 1));
    if (!header_text || !payload_text || !sig) return refuse(Refusal::Malformed);
    Json header = parse_json(*header_text);
    if (!header || !cJSON_IsObject(header.get())) return refuse(Refusal::Malformed);
    if (cJSON_GetObjectItemCaseSensitive(header.get(), "crit") != nullptr) return refuse(Refusal::Malformed);
    auto alg = str(header.get(), "alg");
    if (!alg || (*alg != "RS256" && *alg != "ES256")) return refuse(Refusal::Algorithm);
    const bool rsa = *alg == "RS256";
    auto kid = str(header.get(), "kid");
    std::string signed_der;
    std::string_view signature = *sig;
    if (!rsa) {
        auto der = es256_der(*sig);
        if (!der) return refuse(Refusal::Signature);
        signed_der = std::move(*der);
        signature = signed_der;
    }
    const std::string_view input = jwt.substr(0, dot2);
    bool candidates = false, verified = false;
    for (const auto &k : keys.keys_) {
        if (k->rsa != rsa || (kid && k->kid != *kid)) continue;
        candidates = true;
        if (verify_with(k->pkey.get(), input, signature)) {
            verified = true;
            break;
        }
    }
    // no key of that kid (or, without a kid, none of them verifies): maybe rotated, ask again
    if (!candidates || (!verified && !kid)) return refuse(Refusal::UnknownKey);
    if (!verified) return refuse(Refusal::Signature);

    Json claims = parse_json(*payload_text);
    if (!claims || !cJSON_IsObject(claims.get())) return refuse(Refusal::Malformed);
    const cJSON *c = claims.get();
    if (str(c, "iss") != std::optional<std::string>(expect.issuer)) return refuse(Refusal::Issuer);
    const cJSON *aud = cJSON_GetObjectItemCaseSensitive(c, "aud");
    bool audience = false, several = false;
    if (cJSON_IsString(aud)) {
        audience = expect.client_id == aud->valuestring;
    } else if (cJSON_IsArray(aud)) {
        several = cJSON_GetArraySize(aud) > 1;
        audience = lists(c, "aud", expect.client_id, false);
    }
    auto azp = str(c, "azp");
    if (!audience || (azp && *azp != expect.client_id) || (several && !azp)) return refuse(Refusal::Audience);
    auto exp = seconds(c, "exp");
    if (!exp || *exp + expect.skew <= expect.now) return refuse(Refusal::Expired);
    auto iat = seconds(c, "iat");
    if (!iat || *iat > expect.now + expect.skew) return refuse(Refusal::IssuedAt);
    auto nonce = str(c, "nonce");
    if (!nonce || expect.nonce.empty() || !equal_ct(*nonce, expect.nonce)) return refuse(Refusal::Nonce);
    auto sub = str(c, "sub");
    if (!sub || sub->empty() || sub->size() > 255 || !json::valid_utf8(*sub)) return refuse(Refusal::Subject);
    out.claims.iss = expect.issuer;
    out.claims.sub = std::move(*sub);
    if (auto email = str(c, "email"); email && email->size() <= 320) {
        if (auto normal = normalize_email(*email)) out.claims.email = std::move(*normal);
    }
    out.claims.email_verified = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "email_verified"));
    if (auto name = str(c, "name"); name && name->size() <= 200) out.claims.name = std::move(*name);
    return out;
}

Verified verify_id_token(std::string_view jwt, const KeySet &keys, const Expected &expect) {
    return Verifier::run(jwt, keys, expect);
}

// ---------------------------------------------------------------- the flow

namespace {

constexpr char kFlowContext[] = "oidcflow";  // crypto_kdf: 8 bytes
constexpr std::string_view kFlowAd = "signin oidc flow";

SecretKey flow_key(const SecretKey &key) {
    SecretKey sub{};
    crypto_kdf_derive_from_key(sub.data(), sub.size(), 1, kFlowContext, key.data());
    return sub;
}

std::string challenge_of(const Secret &verifier) {
    unsigned char digest[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(digest, reinterpret_cast<const unsigned char *>(verifier.reveal().data()),
                       verifier.reveal().size());
    return enc::base64url(digest, sizeof digest);
}

void param(std::string &out, std::string_view name, std::string_view value) {
    if (!out.empty() && out.back() != '?') out += '&';
    out += name;
    out += '=';
    out += enc::percent_encode(value);
}

}  // namespace

Flow new_flow(std::string provider, std::string return_to, bool add, std::string link_user, Millis now) {
    Flow f;
    f.provider = std::move(provider);
    f.state = enc::random_secret(32);
    f.nonce = Secret(enc::random_secret(32));
    f.verifier = Secret(enc::random_secret(32));
    f.return_to = std::move(return_to);
    f.add = add;
    f.link_user = std::move(link_user);
    f.expires_at = now + kFlowTtl;
    return f;
}

std::string seal_flow(const SecretKey &key, const Flow &flow) {
    json::Writer w;
    w.begin_object()
        .key("p").value(flow.provider)
        .key("s").value(flow.state)
        .key("n").value(flow.nonce.reveal())
        .key("v").value(flow.verifier.reveal())
        .key("r").value(flow.return_to)
        .key("a").value(flow.add)
        .key("l").value(flow.link_user)
        .key("e").value(static_cast<std::int64_t>(flow.expires_at))
        .end_object();
    Secret plain(w.take());
    const std::string sealed = seal(flow_key(key), plain.reveal(), kFlowAd);
    return enc::base64url(reinterpret_cast<const unsigned char *>(sealed.data()), sealed.size());
}

std::optional<Flow> open_flow(const SecretKey &key, std::string_view cookie, Millis now) {
    if (cookie.empty() || cookie.size() > 4096) return std::nullopt;
    auto sealed = enc::base64url_decode(cookie);
    if (!sealed) return std::nullopt;
    auto plain = open_sealed(flow_key(key), *sealed, kFlowAd);
    if (!plain) return std::nullopt;
    Json root = parse_json(plain->reveal());
    if (!root || !cJSON_IsObject(root.get())) return std::nullopt;
    const cJSON *j = root.get();
    auto p = str(j, "p"), s = str(j, "s"), n = str(j, "n"), v = str(j, "v"), r = str(j, "r"), l = str(j, "l");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "a");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "e");
    if (!p || !s || !n || !v || !r || !l || !cJSON_IsBool(a) || !cJSON_IsNumber(e)) return std::nullopt;
    Flow f;
    f.provider = std::move(*p);
    f.state = std::move(*s);
    f.nonce = Secret(std::move(*n));
    f.verifier = Secret(std::move(*v));
    f.return_to = std::move(*r);
    f.add = cJSON_IsTrue(a);
    f.link_user = std::move(*l);
    f.expires_at = static_cast<Millis>(e->valuedouble);
    if (f.expires_at <= now) return std::nullopt;
    return f;
}

bool same_state(const Flow &flow, std::string_view state) { return !state.empty() && equal_ct(flow.state, state); }

std::string authorization_url(const Discovery &d, const ProviderConfig &p, const Flow &flow,
                              std::string_view redirect_uri) {
    std::string query;
    param(query, "response_type", "code");
    param(query, "client_id", p.client_id);
    param(query, "redirect_uri", redirect_uri);
    param(query, "scope", p.scope);
    param(query, "state", flow.state);
    param(query, "nonce", flow.nonce.reveal());
    param(query, "code_challenge", challenge_of(flow.verifier));
    param(query, "code_challenge_method", "S256");
    return d.authorization_endpoint + (d.authorization_endpoint.find('?') == std::string::npos ? "?" : "&") + query;
}

TokenRequest token_request(const Discovery &d, const ProviderConfig &p, const Flow &flow, std::string_view code,
                           std::string_view redirect_uri) {
    std::string body;
    param(body, "grant_type", "authorization_code");
    param(body, "code", code);
    param(body, "redirect_uri", redirect_uri);
    param(body, "code_verifier", flow.verifier.reveal());
    param(body, "client_id", p.client_id);
    TokenRequest t;
    const bool in_body = p.client_auth == ProviderConfig::ClientAuth::Post ||
                         (p.client_auth == ProviderConfig::ClientAuth::Auto && d.secret_in_body);
    if (in_body) {
        param(body, "client_secret", p.client_secret.reveal());
    } else {  // RFC 6749 §2.3.1: each part form-encoded, then HTTP Basic
        Secret pair(enc::percent_encode(p.client_id) + ":" + enc::percent_encode(p.client_secret.reveal()));
        std::string b64(sodium_base64_ENCODED_LEN(pair.reveal().size(), sodium_base64_VARIANT_ORIGINAL), '\0');
        sodium_bin2base64(b64.data(), b64.size(), reinterpret_cast<const unsigned char *>(pair.reveal().data()),
                          pair.reveal().size(), sodium_base64_VARIANT_ORIGINAL);
        b64.resize(std::strlen(b64.c_str()));
        t.authorization = Secret("Basic " + b64);
        sodium_memzero(b64.data(), b64.size());
    }
    t.body = Secret(std::move(body));
    return t;
}

Result<Secret> id_token_of(std::string_view answer) {
    Json root = parse_json(answer);
    if (!root || !cJSON_IsObject(root.get())) return bad("the token answer is not a JSON object");
    if (auto error = str(root.get(), "error")) {
        std::string shown;
        for (char c : error->substr(0, 64)) shown += (c >= 0x21 && c <= 0x7e && c != '"') ? c : '?';
        return bad("the provider refused the code: " + shown);
    }
    auto token = str(root.get(), "id_token");
    if (!token || token->empty()) return bad("the token answer has no id_token");
    Secret out(std::move(*token));
    return out;
}

std::string error_message(std::string_view error) {
    if (error == "access_denied") return "Signing in was cancelled at the provider.";
    if (error == "login_required" || error == "interaction_required" || error == "consent_required" ||
        error == "account_selection_required") {
        return "The provider needs you to sign in there first. Try again.";
    }
    if (error == "temporarily_unavailable" || error == "server_error") {
        return "The provider could not sign you in just now. Try again in a moment.";
    }
    return "The provider refused the sign-in.";
}

}  // namespace signin::oidc
