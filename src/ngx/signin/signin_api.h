// The endpoints of signin_api (docs/endpoints.md), one file per capability: signin_tokens.cpp (email
// tokens), signin_sessions.cpp (who is signed in), signin_passwords.cpp. signin_api.cpp routes
// a request to them once it passed the checks every endpoint shares (limits, method, origin,
// content type, body size); a new capability is a new file and new rows in its route table.
#pragma once

#include "ngx_signin_nginx.h"

#include <optional>
#include <string>
#include <string_view>

#include "signin_jobs.h"
#include "signin_request.h"
#include "signin/auth.hpp"

namespace signin_ngx {

// What an endpoint is given.
struct ApiCall {
    ngx_http_request_t *r;
    std::string_view body;  // the JSON body of a POST, "" for a GET; wiped once the call returns
    Credentials credentials;  // the request's cookie or bearer token, read once

    ApiCall(ngx_http_request_t *req, std::string_view json, Credentials c)
        : r(req), body(json), credentials(std::move(c)) {}
    // signin_client, evaluated when an endpoint first asks (GET /me never does: the work is saved)
    const std::string &client() {
        if (!client_) client_ = client_of(r);
        return *client_;
    }

private:
    std::optional<std::string> client_;
};
// Returns an rc for ngx_http_finalize_request, or NGX_DONE when a job answers later.
using Endpoint = ngx_int_t (*)(ApiCall &call);

// signin_tokens.cpp
ngx_int_t post_register(ApiCall &call);
ngx_int_t post_login(ApiCall &call);
ngx_int_t post_session(ApiCall &call);
ngx_int_t post_token(ApiCall &call);

// signin_sessions.cpp
ngx_int_t get_me(ApiCall &call);
ngx_int_t get_jwks(ApiCall &call);

// signin_oidc.cpp: the module as an OpenID provider
ngx_int_t get_oidc_discovery(ApiCall &call);
ngx_int_t get_oidc_jwks(ApiCall &call);
// oauth2/authorize, token, userinfo and revoke: navigations and OAuth requests with form bodies,
// not JSON API calls (signin_oidc.cpp routes, checks and reads them itself).
bool is_oauth2_step(std::string_view path);
ngx_int_t oauth2_step(ngx_http_request_t *r, std::string_view path);
ngx_int_t get_sessions(ApiCall &call);
ngx_int_t post_sessions_revoke(ApiCall &call);
ngx_int_t post_logout(ApiCall &call);
// Several accounts in one browser.
ngx_int_t get_accounts(ApiCall &call);
ngx_int_t post_accounts_switch(ApiCall &call);

// signin_passwords.cpp
ngx_int_t post_password_register(ApiCall &call);
ngx_int_t post_password_session(ApiCall &call);
ngx_int_t post_password_token(ApiCall &call);
ngx_int_t post_password(ApiCall &call);
ngx_int_t post_password_change(ApiCall &call);

// signin_mfa.cpp
ngx_int_t get_mfa(ApiCall &call);
ngx_int_t post_mfa_totp_setup(ApiCall &call);
ngx_int_t post_mfa_totp_confirm(ApiCall &call);
ngx_int_t post_mfa_recovery_codes(ApiCall &call);
ngx_int_t post_mfa_disable(ApiCall &call);
ngx_int_t post_mfa_devices_forget(ApiCall &call);
ngx_int_t post_mfa_verify(ApiCall &call);
ngx_int_t post_mfa_token(ApiCall &call);

// signin_accounts.cpp
ngx_int_t get_account(ApiCall &call);
// Passkeys (WebAuthn).
ngx_int_t post_passkeys_register_options(ApiCall &call);
ngx_int_t post_passkeys_register(ApiCall &call);
ngx_int_t get_passkeys(ApiCall &call);
ngx_int_t post_passkeys_remove(ApiCall &call);
ngx_int_t post_passkeys_login_options(ApiCall &call);
ngx_int_t post_passkeys_session(ApiCall &call);
ngx_int_t post_passkeys_token(ApiCall &call);
// OpenID Connect providers (signin_providers.cpp).
ngx_int_t get_providers(ApiCall &call);
ngx_int_t get_providers_linked(ApiCall &call);
ngx_int_t post_providers_unlink(ApiCall &call);
ngx_int_t post_account_delete(ApiCall &call);
ngx_int_t post_email_change(ApiCall &call);
ngx_int_t post_email_confirm(ApiCall &call);

// The administrators' API under admin/api/ (signin_admin.cpp).
ngx_int_t get_admin_users(ApiCall &call);
ngx_int_t get_admin_user(ApiCall &call);
ngx_int_t post_admin_suspend(ApiCall &call);
ngx_int_t post_admin_unsuspend(ApiCall &call);
ngx_int_t post_admin_sessions_revoke(ApiCall &call);
ngx_int_t post_admin_mfa_reset(ApiCall &call);
ngx_int_t post_admin_delete(ApiCall &call);
ngx_int_t post_admin_roles(ApiCall &call);
ngx_int_t post_admin_invitations(ApiCall &call);
ngx_int_t get_admin_audit(ApiCall &call);
ngx_int_t get_admin_stats(ApiCall &call);

// Shared by the capabilities (signin_sessions.cpp).

// The principal behind the request's credentials, kept in ctx->principal ($signin_user_*) for
// the rest of the request: the result points there (no copy per request). Has
// last_seen_at written in the background when it is due.
signin::Result<const signin::Principal *> authenticate(ngx_http_request_t *r, const Credentials &c);

// Logs (info, as nginx logs a client's mistakes) why an origin was refused, naming the request's
// Origin (printable bytes only, at most 100) and signin_origin: the usual TLS or host name mistake.
void log_origin_refusal(ngx_http_request_t *r, std::string_view site_origin);
// A body that spends a token: {token}, or its short code with its address {email, code, group?}
// (its link or its short code): POST /session, /token and /email/confirm. nullopt with the 400 answer's rc in `rc`.
struct TokenOrCode {
    signin::Secret token;  // empty when by code
    std::string email, group;
    signin::Secret code;
    bool add = false;  // POST /session {"add": true}: another account in this browser
    bool by_code() const { return !email.empty(); }
};
// with_add: the body may also say {"add": true|false} (POST /session).
std::optional<TokenOrCode> token_or_code(ApiCall &call, ngx_int_t &rc, bool with_add = false);

// The signed-in caller of an endpoint (ctx->principal, see authenticate), or nullptr with the
// 401/400 answer's rc in `rc`.
const signin::Principal *signed_in(ApiCall &call, ngx_int_t &rc, bool *by_cookie = nullptr);
// 200 with the bearer answer, or with the user and the session cookie.
ngx_int_t send_session(ngx_http_request_t *r, const signin::Session &s);
// The session cookie of s, and its browser's cookie when it has one.
void set_session_cookies(ngx_http_request_t *r, const signin::Session &s);
// A way in's answer: send_session, or 202 {"mfa_required": true, "mfa_token", ...} when the account has a second factor.
ngx_int_t send_step(ngx_http_request_t *r, const signin::SignInStep &step);

// A way in that spends what it is given (a token, a code, a passkey's challenge) and opens a
// session or the pending second step in one write, answered by send_step. A refusal with the
// code `counted` is a failed exchange of the client (signin_limit_exchange_failures).
class SignInJob : public Job {
protected:
    explicit SignInJob(signin::Code counted) : Job(Stage::Write), counted_(counted) {}
    // The engine call, in the write batch.
    virtual signin::Result<signin::SignInStep> spend() = 0;

private:
    signin::Status write() final;
    ngx_int_t answer(ngx_http_request_t *r) final { return send_step(r, *step_); }
    void failed(ngx_http_request_t *r, const signin::Error &e) final;

    signin::Code counted_;
    std::optional<signin::SignInStep> step_;
};
// What the browser of a cookie sign-in brings (its device, browser and session cookies), and
// whether the sign-in adds an account; empty for a bearer sign-in.
signin::BrowserCookies browser_of(ngx_http_request_t *r, signin::SessionKind kind, bool add = false);

// A token request (POST /register, /login, /password/register): the token's write in a write
// batch, then the delivery in the background and the same 202 for every address (the answer never tells whether an account exists).
class TokenRequestJob : public Job {
public:
    // the address's send counter (signin_limit_address): the limit is the address's, whoever asks.
    struct Send {
        std::string address;  // the counter's key: the mailbox, whatever the group (signin::mailbox_key)
        bool may_send = true;  // false: over the limit; the same answer, nothing sent
        bool counted = false;  // one send was taken: given back when nothing turns out to be sent
        // a store that several nodes share: the limit counted in the store too (none: limit 0)
        signin::throttle::WindowRule shared{};
    };
    TokenRequestJob(Stage first, signin::Intent intent, std::string email, std::string group, std::string client,
                    Send send);
    // What the registration check gave a new account (signin_registration.h).
    void set_roles(std::vector<std::string> roles) { roles_ = std::move(roles); }

protected:
    signin::Status write() override;
    ngx_int_t answer(ngx_http_request_t *r) override;
    void failed(ngx_http_request_t *r, const signin::Error &e) override;
    // In the write stage, around the engine's call: the send counted against the limit every node
    // shares (send_.shared), nothing sent when over it; given back when nothing was sent.
    void take_shared_send();
    void settle_shared_send(bool sent);
    bool shared_taken_ = false;

    signin::Intent intent_;
    std::string email_, group_, client_;
    Send send_;
    std::optional<signin::TokenIssue> issued_;  // the write's outcome: a delivery to make, or none
    std::vector<std::string> roles_;            // a new account's, from the registration check
};

using signin::address_key;  // the one key of an address in every counter

}  // namespace signin_ngx
