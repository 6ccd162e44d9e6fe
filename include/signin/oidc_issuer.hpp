// The OpenID provider's operations over the store: the protocol's rules (oidc_provider.hpp)
// joined with the records they read and write, one transaction each. The transport hands in the
// parsed request, the signed-in person (a Principal the sessions capability checked) and the
// provider's configuration; it gets back a redirect or an HTTP answer to send as it is. Every
// grant and every refusal is audited (kind "oidc.*", the client id and why in the detail, never
// a secret). Valid C++17: the glue includes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "signin/engine.hpp"
#include "signin/i18n.hpp"
#include "signin/oidc_provider.hpp"
#include "signin/types.hpp"

namespace signin {

// What the provider is: its clients and keys (signin_oidc_client, signin_oidc_signing_key_file)
// and its issuer ({origin}{auth_path}).
struct OpSite {
    const op::Clients *clients = nullptr;
    const op::KeyRing *keys = nullptr;
    std::string issuer;
    Millis code_ttl = op::kCodeTtl;  // signin_oidc_code_ttl
};

// An answer of the token, userinfo or revocation endpoint, sent as it is with Cache-Control:
// no-store: the status, the JSON body and, when not empty, the WWW-Authenticate header.
// What an answer did, for signin_metrics: tokens given, a refusal, a code or refresh token used
// twice (what it gave is revoked), a token revoked.
enum class OpOutcome : std::uint8_t { None = 0, Granted = 1, Refused = 2, Reused = 3, Revoked = 4 };
struct OpAnswer {
    int status = 200;
    std::string body;
    std::string www_authenticate;
    OpOutcome outcome = OpOutcome::None;
};

// What a token request wrote, its answer waiting for the ID token's signature (a few hundred
// microseconds of RSA, made once the grant is durable, outside the write batch): the tokens
// given, their scopes, the ID token's claims and the key to sign them with. A refusal is its
// answer alone (outcome other than Granted).
struct TokenGrant {
    OpAnswer answer;
    Secret access, refresh;
    std::vector<std::string> scopes;
    std::string id_claims;                 // "" when no ID token
    const op::SigningKey *key = nullptr;   // the configuration's, alive as long as it is
};

// The consent page's form, posted back to {auth_path}/oauth2/authorize: the authorization
// request's query as it came (the request is parsed and checked again from it), and whether the
// person allowed. nullopt when the body is not such a form.
struct ConsentForm {
    std::string query;
    bool allow = false;
};
std::optional<ConsentForm> parse_consent_form(std::string_view body);
// The language of the provider's pages: one of the configured languages (signin_languages), or
// English when `languages` is nullptr. The page says which in its lang attribute, and dir="rtl"
// for a language written right to left.
struct PageLanguage {
    const i18n::Languages *languages = nullptr;
    std::size_t index = 0;
};
// The English texts of the provider's pages, as the catalogs must have them (msgids).
std::vector<std::string> op_page_messages();

// The consent page: which application asks, for which account, what it will see, and the form
// (allow or deny) posted to `action` with the request's query; in `lang`, styled by the site's
// pages stylesheet `stylesheet` ("" = none), over the module's own `module_css` (the sign-in
// pages' stylesheet where they are served, "" = none). The same for the pages below.
std::string consent_page(const op::AuthorizeRequest &r, const User &user, std::string_view site_name,
                         std::string_view action, std::string_view query, std::string_view stylesheet,
                         const PageLanguage &lang = {}, std::string_view module_css = {});
// A page that shows why an authorization request cannot be answered to its client (an unknown
// client, a redirect URI not registered): never a redirect. The description is one of the
// op::kRefusal* sentences, shown translated.
std::string refusal_page(const op::AuthorizeError &e, std::string_view site_name, std::string_view stylesheet,
                         const PageLanguage &lang = {}, std::string_view module_css = {});

// RP-initiated logout's pages: the question asked before signing out when the request cannot
// be trusted to come from the application (no id_token_hint, one that does not verify, or another
// person's): a form posted to `action` with the request's query and decision=allow (sign out) or
// deny, read back by parse_consent_form; and the page shown once signed out when the browser
// has nowhere registered to go back to.
std::string end_session_page(std::string_view site_name, std::string_view action, std::string_view query,
                             std::string_view stylesheet, const PageLanguage &lang = {},
                             std::string_view module_css = {});
std::string signed_out_page(std::string_view site_name, std::string_view stylesheet, const PageLanguage &lang = {},
                            std::string_view module_css = {});

// The marker the authorize endpoint adds to the request it sends through the sign-in page when a
// new sign-in is needed (prompt=login, max_age): the time it asked, so that a session made since
// counts as that sign-in. Not an OAuth parameter: the authorization request's parser ignores it.
inline constexpr std::string_view kLoginAfter = "signin_login_after";

class OidcIssuer {
public:
    explicit OidcIssuer(Engine &engine) : engine_(engine) {}

    // What a checked authorization request needs next for `p` (nullptr: nobody is signed in):
    // the consent kept for p and the client is read here. login_done and consent_done say the
    // sign-in or consent page was just walked for this request (prompt=login and prompt=consent
    // ask once). A refusal (Next::Refuse) is audited here.
    Result<op::Decision> decide(const OpSite &site, const op::AuthorizeRequest &r, const Principal *p,
                                bool login_done, bool consent_done, std::string_view client);
    // The person agreed on the consent page: what they agreed to is kept (with what they agreed
    // to before) and audited.
    Status consent(const op::AuthorizeRequest &r, const Principal &p, std::string_view client);
    // A code for `p` (decide said Issue): written with what it binds (client, redirect URI, PKCE
    // challenge, nonce, scopes, the session's sign-in time, way in and second factor) and
    // audited; the redirect to the client that carries it, with state and iss.
    Result<std::string> issue_code(const OpSite &site, const op::AuthorizeRequest &r, const Principal &p,
                                   std::string_view client);
    // An authorization request refused before any person was looked at (unknown client, bad
    // redirect URI, a malformed request): audited with the client id it named.
    void refused(std::string_view client_id, std::string_view why, std::string_view client);

    // POST /oauth2/token: the form body and the Authorization header. authorization_code: the
    // code is spent (a second use ends what the first gave: its access token and refresh
    // family); an access token and an ID token, and a refresh token with offline_access.
    // refresh_token: the family's next generation (an old token coming back ends the family).
    // token() is token_write() then token_answer(): the transport runs the first in its write
    // batch and the second, the ID token's signature, after the batch committed, in a pool.
    OpAnswer token(const OpSite &site, std::string_view body, std::string_view authorization,
                   std::string_view client);
    // The token request's write, committed: a refusal (its answer whole), or a grant whose ID
    // token is still to sign.
    TokenGrant token_write(const OpSite &site, std::string_view body, std::string_view authorization,
                           std::string_view client);
    // The answer to what token_write() did: a grant's ID token signed and its tokens written
    // out; a refusal as it was. Reads and writes no store: it may run in any thread.
    static OpAnswer token_answer(TokenGrant &&g);
    // GET or POST /oauth2/userinfo with "Authorization: Bearer TOKEN": the claims the token's
    // scopes allow; 401 invalid_token for a token unknown, expired or of a suspended account.
    OpAnswer userinfo(std::string_view authorization);
    // POST /oauth2/revoke (RFC 7009): 200 whether or not the token was known; a token is revoked
    // only for the client it was given to; a refresh token ends its family.
    OpAnswer revoke(const OpSite &site, std::string_view body, std::string_view authorization,
                    std::string_view client);

private:
    Engine &engine_;
};

}  // namespace signin
