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
//               the rules that spend, rotate and revoke them; the token request's parser, its
//               client authentication (client_secret_basic, client_secret_post, or none for a
//               public client with PKCE) and the PKCE check (RFC 7636, S256 only)
//   ID tokens   signed with RS256 (the default: most applications take nothing else), ES256 or
//               EdDSA by OpenSSL's libcrypto; the JWKS and discovery documents
//
// How the store will keep the grants (the next step, LMDB and PostgreSQL alike): every secret
// handed out (code, access token, refresh token) is a random enc::ordered_secret and is kept only
// under its record_key (engine.hpp: the creation time, then a BLAKE2b digest), never in clear,
// as sessions are. A spent code stays until its expiry, marked spent, so that its reuse is seen
// and revokes the family it began. A refresh family is one record keyed by its id; each refresh
// token record names its family and generation, and only the family's current generation is
// live. Purged with expired tokens and sessions.
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

}  // namespace signin::op
