// OpenID Connect, the relying party's side (signin_provider): the pieces of the authorization code
// flow with PKCE that need no network and no store. The transport fetches the provider's
// documents (discovery, JWKS, the token answer) and hands them here; providers.hpp links the
// verified identity to an account.
//
//   start     a Flow (state, nonce, PKCE verifier, where to return) sealed into a short cookie, and
//             the provider's authorization URL
//   callback  the cookie opened and its state compared with the provider's; the token request's
//             body; the token answer's ID token verified (JWS RS256 or ES256 by a key of the
//             provider's JWKS, iss, aud, azp, exp, iat, nonce)
//
// Signatures are OpenSSL's; JSON is cJSON; base64url is libsodium's. Valid C++17: the glue
// includes it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "signin/secret_key.hpp"
#include "signin/types.hpp"

namespace signin::oidc {

// signin_provider NAME issuer=URL client_id=ID client_secret_file=PATH [scope=...] [label=...]
// [trust_email=on]
struct ProviderConfig {
    std::string name;            // [a-z0-9_-]{1,32}: the URL's /providers/NAME/...
    std::string issuer;          // https://..., or http:// on a loopback host; no trailing slash
    std::string client_id;
    Secret client_secret;        // read from client_secret_file (one line)
    std::string scope = "openid email profile";  // must hold "openid"
    std::string label;           // the button's text ("" = the name)
    bool trust_email = false;    // its verified addresses may sign in to existing accounts
    // How the token request authenticates: the secret in the body (client_secret_post) when the
    // provider offers it, else HTTP Basic; client_auth=basic|post says which a client was
    // registered with. (nginx's debug log shows proxied request headers: Basic shows the secret
    // there, the body does not.)
    enum class ClientAuth { Auto, Post, Basic } client_auth = ClientAuth::Auto;
};
// "" when the config is usable, else why not (for nginx -t).
std::string check_provider(const ProviderConfig &p);
// The secret from a client_secret_file's text: its first line, trimmed; nullopt when empty.
std::optional<Secret> parse_client_secret(std::string_view file_text);

// The provider's discovery document (OpenID Connect Discovery 1.0 §3), the parts used.
struct Discovery {
    std::string issuer;
    std::string authorization_endpoint;
    std::string token_endpoint;
    std::string jwks_uri;
    bool secret_in_body = false;  // client_secret_post offered: the secret goes in the body
};
// The document's URL: issuer + "/.well-known/openid-configuration".
std::string discovery_url(std::string_view issuer);
// Parses and checks a discovery document: its issuer must be exactly `issuer` (§4.3), its
// endpoints https (or http on a loopback host when the issuer is), "code" a response type it
// supports, RS256 or ES256 among its ID token algorithms when it lists them.
Result<Discovery> parse_discovery(std::string_view json, std::string_view issuer);

// A provider's signing keys (RFC 7517), RSA (≥ 2048 bits) and EC P-256 ones with "use": "sig"
// or no "use"; others are skipped.
class KeySet {
public:
    struct Key;
    KeySet();
    ~KeySet();
    KeySet(KeySet &&) noexcept;
    KeySet &operator=(KeySet &&) noexcept;

    static Result<KeySet> parse(std::string_view json);
    std::size_t size() const;
    bool has(std::string_view kid) const;

private:
    friend class Verifier;
    std::vector<std::shared_ptr<const Key>> keys_;
};

// What an ID token said (OpenID Connect Core §2), once verified.
struct IdClaims {
    std::string iss, sub;
    std::string email;             // "" when not given
    bool email_verified = false;   // only a JSON true counts
    std::string name;              // "" when not given
};

// What an ID token must match.
struct Expected {
    std::string issuer;     // the discovery document's
    std::string client_id;  // aud holds it; azp, when present, is it
    std::string nonce;      // the flow's
    Millis now = 0;
    Millis skew = 5 * 60 * 1000;  // clock difference allowed on exp and iat
};

// Why an ID token was refused. UnknownKey: no key of the set has its kid (or, without a kid,
// none of its type verifies it): fetch the JWKS again (the provider rotated its keys) and retry
// once.
enum class Refusal { None, Malformed, Algorithm, UnknownKey, Signature, Issuer, Audience, Expired, IssuedAt, Nonce, Subject };
const char *refusal_name(Refusal r);

struct Verified {
    Refusal refusal = Refusal::None;
    IdClaims claims;  // when refusal is None
};
// Verifies a compact JWS ID token: alg RS256 or ES256 only (never "none", never HMAC), the
// signature by a key of `keys`, then the claims against `expect`.
Verified verify_id_token(std::string_view jwt, const KeySet &keys, const Expected &expect);

// ---------------------------------------------------------------- the flow

// What the browser holds between start and callback (sealed in the __Host-svc_oidc cookie).
struct Flow {
    std::string provider;   // its name
    std::string state;      // 32 random bytes, base64url: the authorization request's state
    Secret nonce;           // the same for the ID token's nonce
    Secret verifier;        // PKCE code_verifier (RFC 7636), 43 characters
    std::string return_to;  // a same-origin path, or "" (the pages decide)
    bool add = false;       // sign in as another account, keeping this browser's others
    std::string link_user;  // started from a signed-in account to link the provider to it ("" = sign in)
    Millis expires_at = 0;
};
inline constexpr Millis kFlowTtl = 10 * 60 * 1000;

// A new flow (random state, nonce, verifier) that expires kFlowTtl after now.
Flow new_flow(std::string provider, std::string return_to, bool add, std::string link_user, Millis now);
// The cookie's value: the flow sealed under a subkey of the key file.
std::string seal_flow(const SecretKey &key, const Flow &flow);
// The flow in a cookie's value, if it opens and has not expired.
std::optional<Flow> open_flow(const SecretKey &key, std::string_view cookie, Millis now);
// Constant-time comparison of the flow's state with the one the provider sent back.
bool same_state(const Flow &flow, std::string_view state);

// The authorization request (Core §3.1.2.1): response_type=code, client_id, redirect_uri, scope,
// state, nonce, code_challenge (S256), code_challenge_method.
std::string authorization_url(const Discovery &d, const ProviderConfig &p, const Flow &flow,
                              std::string_view redirect_uri);
// The token request (Core §3.1.3.1): its form body (grant_type, code, redirect_uri,
// code_verifier, client_id, and client_secret for client_secret_post), or its Authorization
// header value (HTTP Basic with the client's id and secret) for client_secret_basic: the
// provider's client_auth, or Auto (post when d.secret_in_body).
struct TokenRequest {
    Secret body;
    Secret authorization;  // "" when the secret is in the body
};
TokenRequest token_request(const Discovery &d, const ProviderConfig &p, const Flow &flow, std::string_view code,
                           std::string_view redirect_uri);
// The ID token of a token answer (Core §3.1.3.3), or why there is none (its "error" when it
// says one).
Result<Secret> id_token_of(std::string_view token_answer);

// The provider's error answer on the callback (RFC 6749 §4.1.2.1): a message for the sign-in
// page, by its error code ("access_denied": the person said no).
std::string error_message(std::string_view error);

}  // namespace signin::oidc
