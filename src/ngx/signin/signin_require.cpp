// signin_require: the gate in front of any location. Access phase: a live session
// or bearer token, or 401 JSON (unless the location has error_page, which then decides what the
// visitor sees). nginx skips the access phase for subrequests, so the same check also runs in
// the precontent phase for them: an SSI include or auth_request cannot bypass the gate.
#include "signin_api.h"
#include "signin_caller.h"
#include "signin_conf.h"
#include "signin_handlers.h"
#include "signin_jobs.h"
#include "../limits/signin_limits.h"
#include "signin_metrics.h"
#include "signin_reply.h"

namespace signin_ngx {
namespace {

using signin::Code;

// A gate that answers itself ends the phase handlers: the answer is the request's.
ngx_int_t finish_with(ngx_http_request_t *r, ngx_int_t rc) {
    ngx_http_finalize_request(r, rc);
    return NGX_DONE;
}

// signin_login_url: 302 to the sign-in page with return_to = this path and query, escaped as a
// query value. The page follows it only when it is a path of this site (is_same_origin_path).
ngx_int_t redirect_to_login(ngx_http_request_t *r, const ngx_str_t &url) {
    const ngx_str_t &uri = r->unparsed_uri;
    const uintptr_t extra = ngx_escape_uri(nullptr, uri.data, uri.len, NGX_ESCAPE_ARGS);
    const bool has_query = ngx_strlchr(url.data, url.data + url.len, '?') != nullptr;
    const size_t len = url.len + sizeof("?return_to=") - 1 + uri.len + 2 * extra;
    ngx_str_t location{0, static_cast<u_char *>(ngx_pnalloc(r->pool, len))};
    if (location.data == nullptr) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    u_char *q = ngx_cpymem(location.data, url.data, url.len);
    q = ngx_cpymem(q, has_query ? "&return_to=" : "?return_to=", sizeof("?return_to=") - 1);
    q = reinterpret_cast<u_char *>(ngx_escape_uri(q, uri.data, uri.len, NGX_ESCAPE_ARGS));
    location.len = static_cast<size_t>(q - location.data);
    return redirect_to(r, location);
}

// The sign-in page itself (its path, without the query) is never sent to itself: no loop when a
// server-wide signin_require also covers it.
bool is_login_page(ngx_http_request_t *r, const ngx_str_t &url) {
    if (url.len == 0 || url.data[0] != '/') return false;
    const u_char *q = ngx_strlchr(url.data, url.data + url.len, '?');
    const size_t path_len = q ? static_cast<size_t>(q - url.data) : url.len;
    return r->uri.len == path_len && ngx_strncmp(r->uri.data, url.data, path_len) == 0;
}

// The gate's decision, in the order it must be made (the limit, the credentials, Origin, the
// session, its access rules and second factor, then the answer for a refused browser or script). Kept in
// one piece (about 90 lines) so that the order, which is the security argument, reads top to bottom.
ngx_int_t gate(ngx_http_request_t *r) {
    RequestCtx *ctx = get_ctx(r, false);
    if (ctx && (ctx->principal || !ctx->delivery_json.empty())) return NGX_DECLINED;
    if (ctx && ctx->auth_reading) return NGX_AGAIN;  // a stray event while the store is read
    // back from reading the store in the thread pool (a store whose reads may block): the
    // checks below run again, but the request was counted once
    const bool resumed = reads_block() && ctx && ctx->pre_auth;
    // A subrequest (SSI include, auth_request, ...) carries the client's headers and is
    // checked the same way; it fails with a bare status for its parent to act on.
    const bool sub = r != r->main;
    signin::Identity *engine = identity();
    if (engine == nullptr) {
        if (sub) return NGX_HTTP_SERVICE_UNAVAILABLE;
        return finish_with(r, reject(r, Code::StorageError, "the sign-in store is not open"));
    }
    // one client request counts once, however many subrequests it makes
    if (!sub && !resumed && limits_on(r)) {
        if (Verdict v = limit_take(r, Bucket::SignedIn, client_key(r)); !v.allowed) {
            return finish_with(r, send_rate_limited(r, Bucket::SignedIn, v, "require"));
        }
    }
    Credentials c = read_credentials(r, engine->cookie_name());
    if (c.state == Credentials::Ambiguous) {  // cookie tossing, or a cookie and a bearer: neither is trusted
        if (sub) return NGX_HTTP_BAD_REQUEST;
        return finish_with(r, reject(r, kAmbiguousCredentials,
                                     "send one credential: a session cookie or a bearer token, not both"));
    }
    // a present, wrong Origin is refused for the upstreams behind the gate too: a cookie-carrying
    // state change whose Origin is present and not the site's is refused (a same-site,
    // cross-origin form POST carries a SameSite=Lax cookie; the legacy app may have no CSRF
    // defence of its own).
    const bool unsafe = !(r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD | NGX_HTTP_OPTIONS));
    if (c.state == Credentials::Cookie && unsafe) {
        if (auto ok = engine->check_origin(header_value(r, "Origin"), false); !ok) {
            log_origin_refusal(r, engine->origin().text);
            count_failure(ok.error().code);
            if (sub) return NGX_HTTP_FORBIDDEN;
            return finish_with(r, reject(r, http_error(ok.error().code), ok.error().message));
        }
    }
    if (!resumed && reads_block() && (c.state == Credentials::Cookie || c.state == Credentials::Bearer) &&
        !from_session_cache(r, c)) {
        if (start_auth_read(r, c) != NGX_OK) {
            if (sub) return NGX_HTTP_SERVICE_UNAVAILABLE;
            return finish_with(r, reject(r, kBusy, "the server is busy; try again in a second"));
        }
        return NGX_AGAIN;  // the phase handlers run again when the read is done
    }
    auto p = authenticate(r, c);
    LocConf *l = loc_conf(r);
    // signed in, and this location's rules are not for this account
    const bool refused = p && l->rules && !l->rules->allows(p.value()->user);
    // signin_require mfa: only a session that passed a second factor
    const bool needs_factor = p && !refused && l->require == 2 && !p.value()->session.mfa;
    if (p && !refused && !needs_factor) {
        // the upstream gets the user ($signin_user_*), not the credential that proves it
        if (!l->pass_credentials &&
            !hide_credentials(r, {engine->cookie_name(), engine->device_cookie_name(), engine->browser_cookie_name(),
                                  engine->known_cookie_name()})) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        return NGX_DECLINED;  // let other access checks (allow/deny, auth_request) run too
    }
    const bool denied = refused || needs_factor;  // signed in, and not let in here
    // every refusal counts once in signin_signin_failures_total, however it is answered below
    // (JSON, a page, a redirect, or a bare status for error_page or a parent request)
    count_failure(refused ? Code::Forbidden : needs_factor ? Code::MfaRequired : p.error().code);
    std::string refused_email;  // for the 403 page: p points into the ctx, emptied next
    if (refused) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0, "signin: the access rules refuse user %s here",
                      p.value()->user.id.c_str());
        refused_email = p.value()->user.email;
    }
    if (denied) {  // no identity reaches anything
        if (RequestCtx *rctx = get_ctx(r, false)) rctx->principal.reset();
    }
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_get_module_loc_conf(r, ngx_http_core_module));
    auto status = denied ? NGX_HTTP_FORBIDDEN : static_cast<ngx_int_t>(http_error(p.error().code).status);
    if (status == NGX_HTTP_UNAUTHORIZED && l->login_url.len && browser_navigation(r) && !is_login_page(r, l->login_url)) {
        if (ngx_http_discard_request_body(r) != NGX_OK) return NGX_HTTP_INTERNAL_SERVER_ERROR;
        return finish_with(r, redirect_to_login(r, l->login_url));
    }
    // the location's error_page decides what a 401 or a refusal looks like
    if (sub || (clcf->error_pages && (denied || status == NGX_HTTP_UNAUTHORIZED))) return status;
    if (ngx_http_discard_request_body(r) != NGX_OK) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    if (refused && l->login_url.len && browser_navigation(r)) {
        return finish_with(r, send_forbidden_page(r, refused_email));
    }
    if (refused) return finish_with(r, reject(r, http_error(Code::Forbidden), "this account may not use this page"));
    if (needs_factor) {
        return finish_with(r, reject(r, http_error(Code::MfaRequired), "this page needs a sign-in with a second factor"));
    }
    if (c.state != Credentials::Cookie) add_header(r, "WWW-Authenticate", "Bearer");
    return finish_with(r, send_error(r, http_error(p.error().code), p.error().message));
}

}  // namespace

ngx_int_t require_handler(ngx_http_request_t *r) {
    LocConf *l = loc_conf(r);
    // the sign-in machinery itself is never gated (signin_require on at server level must not
    // lock visitors out of signing in): the API, the dev mailbox and our delivery subrequest
    if (!l->require || l->api == 1 || l->mailbox == 1) return NGX_DECLINED;
    if (r != r->main) {  // the module's own subrequests: a provider call
        RequestCtx *ctx = get_ctx(r, false);
        if (ctx != nullptr && !ctx->provider_url.empty()) return NGX_DECLINED;
    }
    return guard_request(r, "signin: the access check", [r] { return gate(r); });
}

ngx_int_t require_subrequest_handler(ngx_http_request_t *r) {
    if (r == r->main) return NGX_DECLINED;
    return require_handler(r);
}

// ---------------------------------------------------------------- api_versions_pin signin

namespace {

// The first pin of an account, in the write batch; nobody waits for it. Once written, this
// worker's session cache forgets the session, whose cached user has no pin yet.
class PinJob final : public BackgroundJob {
public:
    PinJob(std::string user_id, std::string version, std::string cache_key)
        : BackgroundJob(Stage::Write),
          user_id_(std::move(user_id)),
          version_(std::move(version)),
          cache_key_(std::move(cache_key)) {}

private:
    signin::Status write() override {
        signin::Identity *engine = identity();
        if (engine == nullptr) return signin::Error{signin::Code::StorageError, "the sign-in store is not open"};
        return engine->pin_api_version(user_id_, version_);
    }
    void done(const signin::Error *) override {
        if (signin::SessionCache *cache = session_cache(); cache && !cache_key_.empty()) cache->erase(cache_key_);
    }
    std::string user_id_, version_, cache_key_;
};

CallerPin pin_of(const RequestCtx &ctx) {
    if (!ctx.pin_caller) return {};
    const std::string &v = ctx.pin_caller->user.api_version;
    if (v.empty()) return {CallerPin::Unpinned, {}};
    return {CallerPin::Pinned, v};
}

}  // namespace

bool store_configured(ngx_conf_t *cf) {
    auto *m = static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_signin_module));
    return m != nullptr && m->store_path.len != 0;
}

CallerPin caller_api_version(ngx_http_request_t *r) {
    RequestCtx *ctx = get_ctx(r, false);
    if (ctx && ctx->auth_reading) return {CallerPin::Reading, {}};  // a stray event while the store is read
    if (ctx && ctx->pin_known) return pin_of(*ctx);
    signin::Identity *engine = identity();
    if (engine == nullptr) return {};
    Credentials c = read_credentials(r, engine->cookie_name());
    if (c.state != Credentials::Cookie && c.state != Credentials::Bearer) return {};
    if (ctx == nullptr && (ctx = get_ctx(r, true)) == nullptr) return {};
    if (ctx->pin_read) {  // back from the thread pool
        auto read = std::move(*ctx->pin_read);
        ctx->pin_read.reset();
        if (read) ctx->pin_caller = std::move(read.value());
    } else if (auto hit = cached_principal(c)) {
        ctx->pin_caller = std::move(hit);
    } else if (reads_block()) {
        return start_pin_read(r, c) == NGX_OK ? CallerPin{CallerPin::Reading, {}} : CallerPin{};
    } else {
        auto p = engine->sessions().authenticate_shared(c.secret, c.kind());
        if (p) ctx->pin_caller = std::move(p.value());
    }
    ctx->pin_known = true;
    return pin_of(*ctx);
}

void pin_caller_api_version(ngx_http_request_t *r, std::string_view version) {
    RequestCtx *ctx = get_ctx(r, false);
    if (ctx == nullptr || !ctx->pin_caller || !signin::valid_api_version_name(version)) return;
    std::string key;
    if (session_cache() != nullptr && identity() != nullptr) {
        Credentials c = read_credentials(r, identity()->cookie_name());
        key = signin::record_key(c.secret.reveal());
    }
    if (start_background_job(std::make_unique<PinJob>(ctx->pin_caller->user.id, std::string(version), std::move(key))) !=
        NGX_OK) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "api_versions_pin: the write batch is full: the account is pinned at a later request");
    }
}

}  // namespace signin_ngx
