// The signin_api content handler: the route table of the API, the checks every endpoint shares,
// and the request body. The endpoints themselves are in signin_tokens.cpp, signin_sessions.cpp
// and signin_passwords.cpp (signin_api.h).
#include "signin_api.h"

#include <array>

#include "signin_conf.h"
#include "signin_handlers.h"
#include "signin_jobs.h"
#include "../limits/signin_limits.h"
#include "signin_providers.h"
#include "signin_reply.h"

namespace signin_ngx {

struct Route {
    std::string_view path;
    ngx_uint_t method;
    Endpoint endpoint;
    Bucket bucket;  // the per-client request limit it counts against
    enum Flags : unsigned {
        None = 0,
        CookieWrite = 1,    // sets the session cookie: needs the configured Origin (cross-site forms cannot sign a browser in)
        Exchange = 2,       // exchanges a token: refused while the client's failed exchanges are over the limit
        NeedsPasswords = 4, // 403 passwords_disabled unless signin_passwords on
        SignedInWrite = 8,  // changes the caller's account or sessions: by cookie, a cookie write too
        Admin = 16,         // signin_admin's: not found unless it is on
        AdminWrite = 32,    // an administrator's change: by cookie, always a cookie write (Origin required)
    };
    unsigned flags;
};

namespace {

using signin::Code;

// Sensitive: sends email, exchanges tokens or checks passwords. SignedIn: the caller's own data.
// A path segment written "{id}" matches any one non-empty segment (the endpoint checks it); every
// other segment matches only itself.
constexpr std::array<Route, 51> kRoutes = {{
    {"register", NGX_HTTP_POST, post_register, Bucket::Sensitive, Route::None},
    {"login", NGX_HTTP_POST, post_login, Bucket::Sensitive, Route::None},
    {"session", NGX_HTTP_POST, post_session, Bucket::Sensitive, Route::CookieWrite | Route::Exchange},
    {"token", NGX_HTTP_POST, post_token, Bucket::Sensitive, Route::Exchange},
    {"me", NGX_HTTP_GET, get_me, Bucket::SignedIn, Route::None},
    {".well-known/jwks.json", NGX_HTTP_GET, get_jwks, Bucket::SignedIn, Route::None},
    // the module as an OpenID provider (signin_oidc_client)
    {".well-known/openid-configuration", NGX_HTTP_GET, get_oidc_discovery, Bucket::SignedIn, Route::None},
    {"oauth2/jwks", NGX_HTTP_GET, get_oidc_jwks, Bucket::SignedIn, Route::None},
    {"sessions", NGX_HTTP_GET, get_sessions, Bucket::SignedIn, Route::None},
    {"sessions/revoke", NGX_HTTP_POST, post_sessions_revoke, Bucket::SignedIn, Route::SignedInWrite},
    {"logout", NGX_HTTP_POST, post_logout, Bucket::SignedIn, Route::SignedInWrite},
    {"password", NGX_HTTP_POST, post_password, Bucket::Sensitive, Route::NeedsPasswords | Route::SignedInWrite},
    {"password/register", NGX_HTTP_POST, post_password_register, Bucket::Sensitive, Route::NeedsPasswords},
    {"password/session", NGX_HTTP_POST, post_password_session, Bucket::Sensitive,
     Route::NeedsPasswords | Route::CookieWrite},
    {"password/token", NGX_HTTP_POST, post_password_token, Bucket::Sensitive, Route::NeedsPasswords},
    {"password/change", NGX_HTTP_POST, post_password_change, Bucket::Sensitive,
     Route::NeedsPasswords | Route::SignedInWrite},
    // second factors: "sensitive", they check secrets
    {"mfa", NGX_HTTP_GET, get_mfa, Bucket::SignedIn, Route::None},
    {"mfa/totp/setup", NGX_HTTP_POST, post_mfa_totp_setup, Bucket::Sensitive, Route::SignedInWrite},
    {"mfa/totp/confirm", NGX_HTTP_POST, post_mfa_totp_confirm, Bucket::Sensitive, Route::SignedInWrite},
    {"mfa/recovery-codes", NGX_HTTP_POST, post_mfa_recovery_codes, Bucket::Sensitive, Route::SignedInWrite},
    {"mfa/disable", NGX_HTTP_POST, post_mfa_disable, Bucket::Sensitive, Route::SignedInWrite},
    {"mfa/devices/forget", NGX_HTTP_POST, post_mfa_devices_forget, Bucket::Sensitive, Route::SignedInWrite},
    {"mfa/verify", NGX_HTTP_POST, post_mfa_verify, Bucket::Sensitive, Route::CookieWrite | Route::Exchange},
    {"mfa/token", NGX_HTTP_POST, post_mfa_token, Bucket::Sensitive, Route::Exchange},
    // account changes
    {"account", NGX_HTTP_GET, get_account, Bucket::SignedIn, Route::None},
    {"account/delete", NGX_HTTP_POST, post_account_delete, Bucket::Sensitive, Route::SignedInWrite},
    {"email/change", NGX_HTTP_POST, post_email_change, Bucket::Sensitive, Route::SignedInWrite},
    {"email/confirm", NGX_HTTP_POST, post_email_confirm, Bucket::Sensitive, Route::Exchange},
    {"accounts", NGX_HTTP_GET, get_accounts, Bucket::SignedIn, Route::None},
    {"accounts/switch", NGX_HTTP_POST, post_accounts_switch, Bucket::SignedIn, Route::CookieWrite},
    // passkeys: options cost a MAC and write nothing
    {"passkeys/register/options", NGX_HTTP_POST, post_passkeys_register_options, Bucket::SignedIn, Route::SignedInWrite},
    {"passkeys/register", NGX_HTTP_POST, post_passkeys_register, Bucket::Sensitive, Route::SignedInWrite},
    {"passkeys", NGX_HTTP_GET, get_passkeys, Bucket::SignedIn, Route::None},
    {"passkeys/remove", NGX_HTTP_POST, post_passkeys_remove, Bucket::Sensitive, Route::SignedInWrite},
    {"passkeys/login/options", NGX_HTTP_POST, post_passkeys_login_options, Bucket::SignedIn, Route::None},
    {"passkeys/session", NGX_HTTP_POST, post_passkeys_session, Bucket::Sensitive, Route::CookieWrite | Route::Exchange},
    {"passkeys/token", NGX_HTTP_POST, post_passkeys_token, Bucket::Sensitive, Route::Exchange},
    // OpenID Connect providers; the flow's navigations are provider_flow's
    {"providers", NGX_HTTP_GET, get_providers, Bucket::SignedIn, Route::None},
    {"providers/linked", NGX_HTTP_GET, get_providers_linked, Bucket::SignedIn, Route::None},
    {"providers/unlink", NGX_HTTP_POST, post_providers_unlink, Bucket::Sensitive, Route::SignedInWrite},
    // the administrators' API (signin_admin.cpp); an invitation sends email
    {"admin/api/users", NGX_HTTP_GET, get_admin_users, Bucket::SignedIn, Route::Admin},
    {"admin/api/users/{id}", NGX_HTTP_GET, get_admin_user, Bucket::SignedIn, Route::Admin},
    {"admin/api/users/{id}/suspend", NGX_HTTP_POST, post_admin_suspend, Bucket::SignedIn,
     Route::Admin | Route::AdminWrite},
    {"admin/api/users/{id}/unsuspend", NGX_HTTP_POST, post_admin_unsuspend, Bucket::SignedIn,
     Route::Admin | Route::AdminWrite},
    {"admin/api/users/{id}/sessions/revoke", NGX_HTTP_POST, post_admin_sessions_revoke, Bucket::SignedIn,
     Route::Admin | Route::AdminWrite},
    {"admin/api/users/{id}/mfa/reset", NGX_HTTP_POST, post_admin_mfa_reset, Bucket::SignedIn,
     Route::Admin | Route::AdminWrite},
    {"admin/api/users/{id}/delete", NGX_HTTP_POST, post_admin_delete, Bucket::SignedIn, Route::Admin | Route::AdminWrite},
    {"admin/api/users/{id}/roles", NGX_HTTP_POST, post_admin_roles, Bucket::SignedIn, Route::Admin | Route::AdminWrite},
    {"admin/api/invitations", NGX_HTTP_POST, post_admin_invitations, Bucket::Sensitive, Route::Admin | Route::AdminWrite},
    {"admin/api/audit", NGX_HTTP_GET, get_admin_audit, Bucket::SignedIn, Route::Admin},
    {"admin/api/stats", NGX_HTTP_GET, get_admin_stats, Bucket::SignedIn, Route::Admin},
}};

bool route_matches(std::string_view pattern, std::string_view path) {
    while (true) {
        const auto ps = pattern.find('/'), qs = path.find('/');
        const std::string_view want = pattern.substr(0, ps), got = path.substr(0, qs);
        if (want == "{id}" ? got.empty() : want != got) return false;
        if (ps == std::string_view::npos || qs == std::string_view::npos) return ps == qs;
        pattern.remove_prefix(ps + 1);
        path.remove_prefix(qs + 1);
    }
}

const Route *find_route(ngx_http_request_t *r) {
    auto path = sub_path(r);
    if (!path) return nullptr;
    for (const Route &route : kRoutes) {
        if (route.path.find('{') == std::string_view::npos ? route.path == *path : route_matches(route.path, *path)) {
            return &route;
        }
    }
    return nullptr;
}

ngx_int_t call_endpoint(ngx_http_request_t *r, const Route &route, std::string_view body, Credentials credentials) {
    ApiCall call{r, body, std::move(credentials)};
    return route.endpoint(call);
}

// A POST once its body is read: the endpoint's rc is finalized here, unless a job answers later.
void body_ready(ngx_http_request_t *r) {
    ngx_int_t rc = guard_request(r, "signin: a request", [r]() -> ngx_int_t {
        RequestCtx *ctx = get_ctx(r, false);
        if (ctx == nullptr || ctx->route == nullptr) return NGX_HTTP_INTERNAL_SERVER_ERROR;
        RequestBody body(r);
        return body.too_large() ? send_error(r, kPayloadTooLarge, "the request body is too large")
                                : call_endpoint(r, *ctx->route, body.text(),
                                                read_credentials(r, identity()->cookie_name()));
    });
    if (rc != NGX_DONE) ngx_http_finalize_request(r, rc);
}

ngx_int_t api_continue(ngx_http_request_t *r, const Route &route, Credentials &&credentials);

// The write_event_handler of an API request whose caller's session is read in the thread pool.
void api_resume(ngx_http_request_t *r) {
    RequestCtx *ctx = get_ctx(r, false);
    if (ctx == nullptr || ctx->auth_reading) return;  // a stray write event while waiting
    r->write_event_handler = ngx_http_request_empty_handler;
    ngx_int_t rc = guard_request(r, "signin: a request", [r, ctx]() -> ngx_int_t {
        if (ctx->route == nullptr) return NGX_HTTP_INTERNAL_SERVER_ERROR;
        if (ctx->shared_wait > 0) {  // over the limit the nodes share (SharedLimits)
            Verdict v;
            v.allowed = false;
            v.retry_after = signin::throttle::seconds_up(ctx->shared_wait);
            return send_rate_limited(r, ctx->route->bucket, v, ctx->route->path);
        }
        return api_continue(r, *ctx->route, read_credentials(r, identity()->cookie_name()));
    });
    // our reference goes; a body being read or a job holds its own (rc NGX_DONE)
    ngx_http_finalize_request(r, rc);
}

// GET providers/NAME/start and providers/NAME/callback once the session cookie was read.
ngx_int_t provider_step(ngx_http_request_t *r) {
    auto path = sub_path(r);
    if (!path || path->substr(0, 10) != "providers/") return NGX_HTTP_INTERNAL_SERVER_ERROR;
    std::string_view rest = path->substr(10);
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    return provider_flow(r, rest.substr(0, slash), rest.substr(slash + 1));
}

void provider_resume(ngx_http_request_t *r) {
    RequestCtx *ctx = get_ctx(r, false);
    if (ctx == nullptr || ctx->auth_reading) return;  // a stray write event while waiting
    r->write_event_handler = ngx_http_request_empty_handler;
    ngx_int_t rc = guard_request(r, "signin: a provider flow", [r] { return provider_step(r); });
    ngx_http_finalize_request(r, rc);  // our reference goes; a flow that waits holds its own
}

void oauth2_resume(ngx_http_request_t *r) {
    RequestCtx *ctx = get_ctx(r, false);
    if (ctx == nullptr || ctx->auth_reading) return;  // a stray write event while waiting
    r->write_event_handler = ngx_http_request_empty_handler;
    ngx_int_t rc = guard_request(r, "signin: an OAuth request", [r]() -> ngx_int_t {
        auto path = sub_path(r);
        return path ? oauth2_step(r, *path) : NGX_HTTP_INTERNAL_SERVER_ERROR;
    });
    ngx_http_finalize_request(r, rc);  // our reference goes; a job holds its own
}

// On a store whose reads may block, the session cookie of a step that needs it (a provider
// flow, the OpenID provider's authorize and end_session) is read in the thread pool first, and
// `resume` runs the step afterwards: NGX_DONE then. NGX_DECLINED: no read to wait for.
ngx_int_t cookie_read_first(ngx_http_request_t *r, signin::Identity *engine, ngx_http_event_handler_pt resume) {
    if (!reads_block()) return NGX_DECLINED;
    Credentials c = read_credentials(r, engine->cookie_name());
    RequestCtx *ctx = get_ctx(r, true);
    if (ctx == nullptr) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    if (c.state != Credentials::Cookie || ctx->pre_auth || from_session_cache(r, c)) return NGX_DECLINED;
    if (start_auth_read(r, c) != NGX_OK) {
        if (!add_header(r, "Retry-After", "1")) return NGX_HTTP_INTERNAL_SERVER_ERROR;
        return send_error(r, kBusy, "the server is busy; try again in a second");
    }
    r->main->count++;  // the request's own reference while it waits
    r->write_event_handler = resume;
    return NGX_DONE;
}

// One request of the API, its shared checks in the order they must run: pages, route, method,
// the per-client limit, Origin, content type, body size, then the endpoint. Kept in one piece
// (about 100 lines) so that the order, which is the security argument, reads top to bottom.
ngx_int_t api(ngx_http_request_t *r) {
    // signin_pages: the pages work (and explain) even when the store is not open
    if (auto path = sub_path(r); path && serves_pages(r, *path)) return pages_handler(r, *path);
    signin::Identity *engine = identity();
    if (engine == nullptr) return reject(r, Code::StorageError, "the sign-in store is not open");
    const Route *route = find_route(r);
    if (route == nullptr) {
        // GET providers/NAME/start and providers/NAME/callback: navigations, not API calls (the
        // provider's redirect carries no Origin; the flow's cookie and state stand for it)
        auto path = sub_path(r);
        if (path && is_oauth2_step(*path)) {
            if (limits_on(r)) {
                if (Verdict v = limit_take(r, Bucket::Sensitive, client_key(r)); !v.allowed) {
                    return send_rate_limited(r, Bucket::Sensitive, v, *path);
                }
            }
            // authorize and end_session read the session cookie: on a store whose reads may block, in the thread pool first
            if (*path == "oauth2/authorize" || *path == "oauth2/end_session") {
                if (ngx_int_t rc = cookie_read_first(r, engine, oauth2_resume); rc != NGX_DECLINED) return rc;
            }
            return oauth2_step(r, *path);
        }
        if (path && path->substr(0, 10) == "providers/") {
            std::string_view rest = path->substr(10);
            const auto slash = rest.find('/');
            if (slash != std::string_view::npos) {
                if (Verdict v = limit_take(r, Bucket::Sensitive, client_key(r)); !v.allowed) {
                    return send_rate_limited(r, Bucket::Sensitive, v, *path);
                }
                // the session cookie (linking a provider)
                if (ngx_int_t rc = cookie_read_first(r, engine, provider_resume); rc != NGX_DECLINED) return rc;
                return provider_flow(r, rest.substr(0, slash), rest.substr(slash + 1));
            }
        }
        return reject(r, Code::NotFound, "not found");
    }
    // per-client request limits, before anything else (the client's key is worked out
    // only when there are counters to key)
    if (limits_on(r)) {
        if (Verdict v = limit_take(r, route->bucket, client_key(r)); !v.allowed) {
            return send_rate_limited(r, route->bucket, v, route->path);
        }
        if (route->flags & Route::Exchange) {  // too many failed exchanges: not even a look
            if (Verdict v = limit_peek(r, Bucket::ExchangeFailure, client_key(r)); !v.allowed) {
                return send_rate_limited(r, Bucket::ExchangeFailure, v, route->path);
            }
        }
    }
    // signin_admin off: its paths are not there
    if ((route->flags & Route::Admin) && !loc_conf(r)->admin) return reject(r, Code::NotFound, "not found");
    // signin_passwords off: every password endpoint is this 403 and nothing else
    if ((route->flags & Route::NeedsPasswords) && !engine->policy().with_passwords) {
        return reject(r, Code::PasswordsDisabled, "password sign-in is not enabled");
    }
    bool method_ok = r->method == route->method || (route->method == NGX_HTTP_GET && r->method == NGX_HTTP_HEAD);
    if (!method_ok) {
        add_header(r, "Allow", route->method == NGX_HTTP_GET ? "GET, HEAD" : "POST");
        return reject(r, kMethodNotAllowed, "method not allowed");
    }
    Credentials credentials = read_credentials(r, engine->cookie_name());
    // a present wrong origin is refused everywhere; cookie writes need
    // one. A state change authenticated by the cookie is a cookie write too (CSRF: a cross-site
    // form carries a SameSite=Lax cookie on a top-level POST in some browsers, and a same-site
    // one always), unless the browser says the request is same-origin (Sec-Fetch-Site).
    // An administrator's change by cookie always needs the Origin: the browser's word alone
    // (Sec-Fetch-Site) is not taken for an account that can change everyone's.
    const bool cookie_write = (route->flags & Route::CookieWrite) ||
                              ((route->flags & Route::SignedInWrite) && credentials.state == Credentials::Cookie &&
                               header_value(r, "Sec-Fetch-Site") != std::optional<std::string_view>("same-origin")) ||
                              ((route->flags & Route::AdminWrite) && credentials.state == Credentials::Cookie);
    auto ok = engine->check_origin(header_value(r, "Origin"), cookie_write);
    if (!ok) {
        log_origin_refusal(r, engine->origin().text);
        return reject(r, ok.error().code, ok.error().message);
    }
    if (credentials.state == Credentials::Ambiguous) {
        return reject(r, kAmbiguousCredentials, "send one credential: a session cookie or a bearer token, not both");
    }
    // a store whose reads may block: who the credentials belong to is read in the thread pool
    // first, and a sensitive request is counted there against the limit every node shares (when
    // the store is shared)
    if (reads_block()) {
        RequestCtx *ctx = get_ctx(r, true);
        if (ctx == nullptr) return NGX_HTTP_INTERNAL_SERVER_ERROR;
        std::optional<SharedTake> take;
        if (route->bucket == Bucket::Sensitive && shared_limits() != nullptr && limits_on(r)) {
            take = SharedTake{"sensitive\n" + client_key(r), limit_rule(r, Bucket::Sensitive)};
        }
        const bool has_session = credentials.state == Credentials::Cookie || credentials.state == Credentials::Bearer;
        const bool read_session = has_session && !ctx->pre_auth && !from_session_cache(r, credentials);
        if (read_session || take) {
            ctx->route = route;
            if (start_auth_read(r, read_session ? credentials : Credentials{}, std::move(take)) != NGX_OK) {
                if (!add_header(r, "Retry-After", "1")) return NGX_HTTP_INTERNAL_SERVER_ERROR;
                return send_error(r, kBusy, "the server is busy; try again in a second");
            }
            r->main->count++;  // the request's own reference while it waits (released by api_resume)
            r->write_event_handler = api_resume;
            return NGX_DONE;
        }
    }
    return api_continue(r, *route, std::move(credentials));
}

// The rest of api(), once every check passed (and the caller's session was read, for a store
// whose reads may block): a GET's endpoint, or the body's reading.
ngx_int_t api_continue(ngx_http_request_t *r, const Route &route_ref, Credentials &&credentials) {
    const Route *route = &route_ref;
    if (route->method == NGX_HTTP_GET) {
        if (ngx_http_discard_request_body(r) != NGX_OK) return NGX_HTTP_INTERNAL_SERVER_ERROR;
        return call_endpoint(r, *route, {}, std::move(credentials));
    }
    if (!is_json_content_type(r)) {
        return reject(r, kUnsupportedMediaType, "the request body must be application/json");
    }
    if (r->headers_in.content_length_n > static_cast<off_t>(main_conf(r)->body_max)) {
        return reject(r, kPayloadTooLarge, "the request body is too large");
    }
    RequestCtx *ctx = get_ctx(r, true);
    if (ctx == nullptr) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    ctx->route = route;
    r->request_body_in_single_buf = 1;
    ngx_int_t rc = ngx_http_read_client_request_body(r, body_ready);
    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) return rc;
    return NGX_DONE;
}

}  // namespace

ngx_int_t api_handler(ngx_http_request_t *r) {
    return guard_request(r, "signin: a request", [r] { return api(r); });
}

void log_origin_refusal(ngx_http_request_t *r, std::string_view site_origin) {
    if (r->connection->log->log_level < NGX_LOG_INFO) return;
    auto origin = header_value(r, "Origin");
    std::string shown = origin ? std::string(origin->substr(0, 100)) : std::string("(none)");
    for (char &c : shown) {
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e || c == '"') c = '?';
    }
    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0, "signin: refused Origin \"%s\": signin_origin is \"%*s\"",
                  shown.c_str(), site_origin.size(), site_origin.data());
}

}  // namespace signin_ngx
