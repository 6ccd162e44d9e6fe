// OpenID Connect, the provider's side (signin_oidc_client): the module signs people in for other
// applications. Everything here needs no nginx, no network and no store: the transport hands in
// a directive's words, a query string, a form body, the records the store found, and writes out
// what comes back (a redirect, a JSON answer, records to keep). oidc.hpp is the other side, the
// relying party of signin_provider.
//
//   clients     the registry from `signin_oidc_client NAME ...` lines, each checked for nginx -t;
//               client secrets kept only as a digest
//   authorize   the authorization request's query parsed and checked (RFC 6749 §4.1.1, OpenID
//               Connect Core §3.1.2), its refusals split into those shown on a page (never sent
//               to a redirect URI that is not the client's) and those sent back to the client;
//               who may use a client, and what the sign-in still lacks (login, factor, consent)
//   grants      authorization codes, access tokens and refresh token families as records and
//               the rules that spend, rotate and revoke them; the token and revocation
//               requests' parsers, their client authentication (client_secret_basic,
//               client_secret_post, or none for a public client with PKCE) and the PKCE check
//               (RFC 7636, S256 only)
//   consent     what a person agreed to per client
//   ID tokens   signed with RS256 (the default: most applications take nothing else), ES256 or
//               EdDSA by OpenSSL's libcrypto; the JWKS and discovery documents; the
//               end_session request (RP-initiated logout) and its id_token_hint
//
// How the store will keep the grants (the next step, LMDB and PostgreSQL alike): every secret
// handed out (code, access token, refresh token) is a random enc::ordered_secret and is kept only
// under its record_key (engine.hpp: the creation time, then a BLAKE2b digest), never in clear,
// as sessions are. A spent code stays until its expiry, marked spent, so that its reuse is seen
// and revokes the family it began. A refresh family is one record keyed by its id; each refresh
// token record names its family and generation, and only the family's current generation is
// live. A consent is one record keyed by user and client. Purged with expired tokens and
// sessions (consents with their account).
//
// Valid C++17: the glue includes it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "signin/access.hpp"
#include "signin/types.hpp"

namespace signin::op {

// ---------------------------------------------------------------- clients

// The ID token's signature algorithm for a client (id_token_alg=RS256|ES256|EdDSA).
enum class Alg : std::uint8_t { RS256 = 1, ES256 = 2, EdDSA = 3 };
const char *alg_name(Alg a);
std::optional<Alg> parse_alg(std::string_view name);

// signin_oidc_client NAME redirect_uri=URL ... (secret_file=PATH | public) [consent=on|off]
//                    [require=mfa] [allow=email:ADDR|domain:DOMAIN|role:ROLE ...] [id_token_alg=ALG]
//                    [post_logout_redirect_uri=URL ...]
struct Client {
    std::string id;                          // NAME: the client_id, [A-Za-z0-9._-]{1,64}
    std::vector<std::string> redirect_uris;  // compared exactly, byte for byte
    bool is_public = false;                  // no secret: PKCE S256 is required instead
    std::string secret_file;                 // the path the transport reads (confidential clients)
    std::string secret_digest;               // set_secret: the secret's digest, never the secret
    bool consent = true;                     // ask the person once per client and scope
    bool require_mfa = false;                // only sign-ins that passed a second factor
    std::vector<AccessRule> allow;           // any match lets a person in; none: every account
    Alg alg = Alg::RS256;
    std::vector<std::string> post_logout_redirect_uris;  // where end_session may send the browser back
};

// A client from the directive's words after its name's keyword (words[0] is NAME); Error
// (InvalidRequest) with the sentence nginx -t shows. The secret itself is not read here:
// set_secret takes the file's text.
Result<Client> parse_client(const std::vector<std::string> &words);
// Whether a redirect URI may be registered: an absolute https URL, or http on a loopback host
// (native applications, RFC 8252 §7.3); no fragment, no user info, no space or control
// character. "" when it may, else why not.
std::string check_redirect_uri(std::string_view uri);
// The secret from the secret_file's text (its first line, trimmed), kept as its digest. A secret
// shorter than 32 characters is refused: it is checked with a fast digest, which only a long
// random secret makes safe against guessing from a stolen digest.
Status set_secret(Client &c, std::string_view file_text);
// Whether `presented` is the client's secret (digests compared in constant time).
bool secret_matches(const Client &c, std::string_view presented);

class Clients {
public:
    // Error when a client of that id is there already.
    Status add(Client c);
    const Client *find(std::string_view id) const;
    std::size_t size() const { return by_id_.size(); }
    const std::map<std::string, Client, std::less<>> &all() const { return by_id_; }

private:
    std::map<std::string, Client, std::less<>> by_id_;
};

// ---------------------------------------------------------------- the authorization request

struct AuthorizeRequest {
    std::string client_id;
    std::string redirect_uri;
    std::vector<std::string> scopes;   // what is granted: known scopes only, in a fixed order
    std::string state;                 // "" when not given
    std::string nonce;                 // "" when not given
    std::string code_challenge;        // "" when not given (confidential clients only)
    // prompt (Core §3.1.2.1): "none" alone, or "login" and "consent" in any combination
    bool prompt_none = false;          // show nothing: refuse what would need a page
    bool prompt_login = false;         // sign in again even when signed in
    bool prompt_consent = false;       // ask for consent even when given before
    std::optional<std::int64_t> max_age;  // seconds
    std::string login_hint;            // a normalized address, or ""
    bool offline_access() const;
    std::string scope() const;         // space-separated
};

// A refusal. On a Page it is shown to the person (the client or its redirect URI is not one we
// can trust: RFC 6749 §4.1.2.1 forbids the redirect); otherwise it goes back to redirect_uri.
struct AuthorizeError {
    bool page = false;
    std::string error;        // RFC 6749 §4.1.2.1 / Core §3.1.2.6 code: invalid_request, ...
    std::string description;  // a sentence, no secret, printable ASCII
    std::string redirect_uri; // when !page
    std::string state;        // when !page
};

using Authorize = std::variant<AuthorizeRequest, AuthorizeError>;
inline constexpr std::size_t kMaxQuery = 8192;

// Why a request is refused on a page rather than sent back (its client or redirect URI is not
// known to be right): the description of such an AuthorizeError, one of these English sentences,
// which the refusal page shows in the visitor's language (the catalogs have them).
inline constexpr std::string_view kRefusalMalformed = "The request is not well formed.";
inline constexpr std::string_view kRefusalTwoClientIds = "The request names its client_id twice.";
inline constexpr std::string_view kRefusalTwoRedirectUris = "The request names its redirect_uri twice.";
inline constexpr std::string_view kRefusalNoClient = "The request names no application (client_id).";
inline constexpr std::string_view kRefusalUnknownClient = "This application is not known here.";
inline constexpr std::string_view kRefusalNoRedirectUri = "The request has no redirect_uri.";
inline constexpr std::string_view kRefusalWrongRedirectUri = "The redirect_uri is not one registered for this application.";
inline constexpr std::string_view kRefusalTooLong = "The request is too long.";

// The query string of GET /oauth2/authorize (without "?"), percent-encoded as it came.
Authorize parse_authorize(std::string_view query, const Clients &clients);

// The client's redirect URI with `error`, `error_description`, `state` and `iss` (RFC 9207, so a
// client of several providers sees who answered).
std::string error_redirect(const AuthorizeError &e, std::string_view issuer);
// The redirect URI with `code`, `state` and `iss`.
std::string code_redirect(const AuthorizeRequest &r, std::string_view code, std::string_view issuer);

// What the transport knows of the browser's sign-in when it handles an authorization request.
struct SignedIn {
    const User *user = nullptr;  // nullptr: nobody is signed in
    Millis auth_time = 0;        // when the session was made (its sign-in)
    bool mfa = false;            // the sign-in passed a second factor
    bool consented = false;      // this person already agreed to this client and these scopes
    bool login_done = false;     // the sign-in page was just walked for this very request
    bool consent_done = false;   // the consent page was just walked for this very request
};

// What happens next with a checked request.
enum class Next : std::uint8_t {
    Issue,         // give a code
    SignIn,        // show the sign-in page (nobody, prompt=login, or max_age passed), then ask again
    SecondFactor,  // the client requires one: a sign-in with a second factor, then ask again
                   // (an account without a factor cannot pass: the page says so, no code is given)
    Consent,       // show the consent page, then ask again
    Refuse,        // `refusal` goes back to the client (access_denied, login_required, ...)
};
struct Decision {
    Next next = Next::Refuse;
    AuthorizeError refusal;  // when Refuse
};
// prompt=login and prompt=consent ask once: login_done and consent_done say it was done.
Decision decide(const AuthorizeRequest &r, const Client &c, const SignedIn &s, Millis now);

// Whether this account may use this client at all: not suspended, an allow rule matching when
// there are any, a second factor when the client requires one. decide() asks it for a code; the
// token endpoint asks it again at each refresh (the person may have lost the right since).
bool may_use(const Client &c, const User &u, bool mfa);

// RFC 8176 values for how the session signed in: "otp" (an emailed code or link, a TOTP or
// recovery code), "pwd", "hwk" (a passkey), and "mfa" when a second factor was passed. A
// provider sign-in has no value of its own ("" not listed).
std::vector<std::string> amr(SignInMethod method, bool mfa);

// ---------------------------------------------------------------- grants: records and rules

inline constexpr Millis kCodeTtl = 60 * 1000;                        // signin_oidc_code_ttl
inline constexpr Millis kAccessTokenTtl = 60 * 60 * 1000;
inline constexpr Millis kRefreshIdle = 30LL * 24 * 60 * 60 * 1000;  // a refresh token unused this long dies
inline constexpr Millis kFamilyTtl = 180LL * 24 * 60 * 60 * 1000;   // a family ends this long after its code

// What a code binds, keyed by record_key(code).
struct CodeRecord {
    std::string key;
    std::string client_id;
    std::string redirect_uri;
    std::string code_challenge;  // "" when the request had none
    std::string user_id;
    Millis auth_time = 0;
    std::vector<std::string> amr;
    bool mfa = false;
    std::string nonce;
    std::vector<std::string> scopes;
    Millis created_at = 0;
    Millis expires_at = 0;
    bool spent = false;
    std::string family_id;  // once spent: the refresh family it began ("" when none)
    std::string access_key; // once spent: the access token it gave
};
CodeRecord new_code(const AuthorizeRequest &r, const std::string &user_id, Millis auth_time, SignInMethod method,
                    bool mfa, std::string key, Millis now, Millis ttl = kCodeTtl);

// An access token (userinfo, revoke), keyed by record_key(token).
struct AccessTokenRecord {
    std::string key;
    std::string client_id;
    std::string user_id;
    std::vector<std::string> scopes;
    std::string family_id;  // "" when no refresh token came with it
    Millis created_at = 0;
    Millis expires_at = 0;
};

// A chain of refresh tokens from one code, keyed by its id. Each use hands out the next
// generation; the token of an earlier generation coming back means two parties hold them: the
// family ends (RFC 9700 §4.14.2).
struct RefreshFamily {
    std::string id;
    std::string client_id;
    std::string user_id;
    std::vector<std::string> scopes;
    Millis auth_time = 0;
    std::vector<std::string> amr;
    bool mfa = false;
    std::uint32_t generation = 0;  // the live token's
    Millis created_at = 0;
    Millis expires_at = 0;         // absolute end of the family
    Millis last_used_at = 0;
    bool revoked = false;
};
// A refresh token, keyed by record_key(token).
struct RefreshTokenRecord {
    std::string key;
    std::string family_id;
    std::uint32_t generation = 0;
    Millis expires_at = 0;
};

// An OAuth error answer of the token endpoint (RFC 6749 §5.2).
struct TokenError {
    std::string error;        // invalid_request, invalid_client, invalid_grant, ...
    std::string description;
    int status = 400;         // 401 for invalid_client
    bool basic_challenge = false;  // answer WWW-Authenticate: Basic (the client tried Basic)
};
// {"error", "error_description"}
std::string token_error_json(const TokenError &e);

enum class Grant : std::uint8_t { AuthorizationCode = 1, RefreshToken = 2 };
enum class ClientAuth : std::uint8_t { None = 0, Basic = 1, Post = 2 };

// Who a request to the token or revocation endpoint says it is, and how it proves it.
struct ClientCredentials {
    std::string client_id;
    ClientAuth auth = ClientAuth::None;
    Secret client_secret;
};

struct TokenRequest : ClientCredentials {
    Grant grant = Grant::AuthorizationCode;
    Secret code;           // authorization_code
    std::string redirect_uri;
    Secret code_verifier;  // "" when not given
    Secret refresh_token;  // refresh_token
    std::string scope;     // refresh_token: "" = the family's
};
inline constexpr std::size_t kMaxTokenBody = 16384;
// POST /oauth2/token: the form body (application/x-www-form-urlencoded) and the Authorization
// header's value ("" when none).
std::variant<TokenRequest, TokenError> parse_token_request(std::string_view body, std::string_view authorization);
// The client the request speaks for: a confidential client by its secret (and only by the method
// it used), a public client by its id alone; invalid_client otherwise.
std::variant<const Client *, TokenError> authenticate(const ClientCredentials &t, const Clients &clients);

// POST /oauth2/revoke (RFC 7009): the token, and the client's credentials read as the token
// endpoint reads them. The hint is only a hint: "access_token", "refresh_token" or "" (any other
// value is dropped, §2.1). The transport answers 200 for a token it does not know, and revokes a
// token only for the client it was given to; a refresh token's revocation ends its family.
struct RevokeRequest : ClientCredentials {
    Secret token;
    std::string hint;
};
std::variant<RevokeRequest, TokenError> parse_revoke_request(std::string_view body, std::string_view authorization);

// PKCE (RFC 7636 §4.6): whether the verifier is well formed and its S256 digest is the challenge.
bool pkce_matches(std::string_view verifier, std::string_view challenge);
// The S256 challenge of a verifier (tests and the relying party's side compute it the same way).
std::string pkce_challenge(std::string_view verifier);

// Spending a code: what the store found under record_key(t.code) (nullptr: nothing), checked
// against the authenticated client and the request. Reused: the code was spent already, and what
// it gave (code->family_id, code->access_key) must be revoked; the answer is invalid_grant.
enum class CodeOutcome : std::uint8_t { Ok, Invalid, Reused };
struct CodeCheck {
    CodeOutcome outcome = CodeOutcome::Invalid;
    TokenError error;  // unless Ok
};
CodeCheck check_code(const CodeRecord *code, const TokenRequest &t, const Client &client, Millis now);

// A family begun by a code with offline_access (nullopt without it).
std::optional<RefreshFamily> new_family(const CodeRecord &code, std::string id, Millis now);

// Using a refresh token: what the store found under its key and its family. Rotate: `family` is
// updated (next generation, last use) and a token of family.generation is to be handed out.
// Reused: the family is marked revoked (write it back) and the answer is invalid_grant.
enum class RefreshOutcome : std::uint8_t { Rotate, Invalid, Reused };
struct RefreshCheck {
    RefreshOutcome outcome = RefreshOutcome::Invalid;
    TokenError error;
    std::vector<std::string> scopes;  // Rotate: the scopes of the new tokens
};
RefreshCheck use_refresh(const RefreshTokenRecord *token, RefreshFamily *family, const TokenRequest &t,
                         const Client &client, Millis now);

// The record of a refresh token of the family's current generation, made now: it dies when
// unused for kRefreshIdle, and with its family.
RefreshTokenRecord refresh_token_record(const RefreshFamily &f, std::string key, Millis now);

// The access token's record for a code or a rotation.
AccessTokenRecord new_access_token(std::string key, const std::string &client_id, const std::string &user_id,
                                   const std::vector<std::string> &scopes, const std::string &family_id, Millis now,
                                   Millis ttl = kAccessTokenTtl);

// The token answer (RFC 6749 §5.1, Core §3.1.3.3): {access_token, token_type, expires_in,
// id_token, refresh_token?, scope}. Its errors and it are sent with Cache-Control: no-store.
std::string token_response(std::string_view access_token, Millis expires_in, std::string_view id_token,
                           std::string_view refresh_token, const std::vector<std::string> &scopes);

// ---------------------------------------------------------------- consent

// A person's agreement to a client, keyed by user id and client id. Kept until the person
// withdraws it (or the account goes); a later request for more scopes asks again.
struct ConsentRecord {
    std::string user_id;
    std::string client_id;
    std::vector<std::string> scopes;
    Millis granted_at = 0;
};
// Whether a consent given before covers this request (every scope it asks for): SignedIn::consented.
bool covers(const ConsentRecord *consent, const AuthorizeRequest &r);
// The consent after the person agreed to `r`: what they agreed to before, and r's scopes.
ConsentRecord grant_consent(const ConsentRecord *before, const AuthorizeRequest &r, const std::string &user_id,
                            Millis now);

// ---------------------------------------------------------------- ID tokens

// The key ID tokens are signed with. It comes from a PEM file the operator names (a private key
// made by `openssl genpkey`), not from the store nor the secret key file: an RSA key cannot be
// derived from the key file's 32 bytes the way the assertion's Ed25519 keys are, the store is the
// one place every node shares and so the last place a private key should sit, and a file is what
// operators already rotate and back up. Several files may be given: the first signs, the
// others stay in the JWKS until tokens signed by them have expired.
class SigningKey {
public:
    SigningKey();
    ~SigningKey();
    SigningKey(SigningKey &&) noexcept;
    SigningKey &operator=(SigningKey &&) noexcept;

    // A PEM private key: RSA of at least 2048 bits (RS256), EC P-256 (ES256) or Ed25519 (EdDSA).
    static Result<SigningKey> from_pem(std::string_view pem);
    // A new key (RSA 2048 for RS256): for tests, and to write a first key file.
    static Result<SigningKey> generate(Alg alg);
    // The private key as PKCS#8 PEM (for writing a generated key file, mode 0600).
    Secret pem() const;

    Alg alg() const { return alg_; }
    // Its key id: the RFC 7638 thumbprint (base64url SHA-256 of the JWK's required members).
    const std::string &kid() const { return kid_; }
    // The public JWK with kid, use "sig" and alg.
    std::string jwk() const;
    // header.payload.signature over the given JSON texts (the header gets alg, typ and kid).
    std::string sign_jwt(std::string_view claims_json) const;
    // Whether `signature` (as a JWS carries it: r || s for ES256) signs `input` under this key.
    bool verify(std::string_view input, std::string_view signature) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    Alg alg_ = Alg::RS256;
    std::string kid_;
};

// The keys of a provider: the signer of each algorithm (the first key of it given) and every key
// in the JWKS.
class KeyRing {
public:
    void add(std::shared_ptr<const SigningKey> key);
    const SigningKey *signer(Alg a) const;
    const SigningKey *find(std::string_view kid) const;
    // {"keys": [...]}
    std::string jwks() const;
    bool empty() const { return keys_.empty(); }

private:
    std::vector<std::shared_ptr<const SigningKey>> keys_;
};
// "" when every client's algorithm has a key in the ring, else which client lacks one.
std::string check_keys(const Clients &clients, const KeyRing &keys);

struct IdToken {
    std::string issuer;
    std::string client_id;  // aud and azp
    const User *user = nullptr;
    bool email = false;     // the email scope was granted: email, email_verified
    std::vector<std::string> amr;
    Millis auth_time = 0;
    std::string nonce;      // "" = none
    Millis now = 0;
    Millis ttl = 5 * 60 * 1000;
};
// The person's subject: the account's id, stable for the account's life whatever address it
// moves to, and never the address.
std::string subject(const User &u);
// The claims as JSON: iss, sub, aud, azp, exp, iat, auth_time, nonce, amr, email and
// email_verified (with the email scope), roles (always, sorted; [] when none): times in seconds.
// An address is verified unless the account is an invitation never signed in to.
std::string id_token_claims(const IdToken &t);
std::string sign_id_token(const SigningKey &key, const IdToken &t);
// GET /oauth2/userinfo: {sub, email?, email_verified?, roles}, per the access token's scopes (as
// the ID token).
std::string userinfo(const User &u, const std::vector<std::string> &scopes);

// What an id_token_hint (RP-Initiated Logout 1.0 §2) says, once its signature by a key of the
// ring and its issuer are checked. Its expiry is not checked: a hint is usually old.
struct IdTokenHint {
    std::string client_id;  // aud
    std::string subject;    // sub
};
std::optional<IdTokenHint> read_id_token_hint(std::string_view jwt, const KeyRing &keys, std::string_view issuer);

// GET /oauth2/end_session (RP-Initiated Logout 1.0): the query parsed. The browser is sent to
// post_logout_redirect_uri only when the client is known (by client_id, or the hint's audience,
// the two agreeing) and that URI is one of its post_logout_redirect_uri= words, compared
// exactly: never an open redirect. Otherwise the transport shows its signed-out page.
struct EndSession {
    std::string client_id;        // "" when neither client_id nor a valid hint names one
    std::string subject;          // the hint's sub: sign out only when it is the session's user
    std::string redirect_uri;     // "" = show the signed-out page
    std::string state;            // echoed on the redirect
    bool bad_hint = false;        // an id_token_hint was given and did not verify: ask before signing out
};
EndSession parse_end_session(std::string_view query, const Clients &clients, const KeyRing &keys,
                             std::string_view issuer);
// redirect_uri with state.
std::string end_session_redirect(const EndSession &e);

// The discovery document (OpenID Connect Discovery 1.0 §3) of `issuer` ({origin}{auth_path}):
// the endpoints under it, /.well-known/openid-configuration itself, /oauth2/authorize, /token,
// /userinfo, /revoke, /end_session and /jwks; the algorithms of the ring.
std::string discovery(std::string_view issuer, const KeyRing &keys);

}  // namespace signin::op
