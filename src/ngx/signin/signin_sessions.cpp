// Who is signed in: GET /me, GET /sessions, POST /sessions/revoke, POST /logout, and
// the authentication every signed-in endpoint and the gate share (cookie or bearer, never both).
#include "signin/json.hpp"
#include "signin/known_browsers.hpp"
#include "signin_api.h"
#include "signin_metrics.h"
#include "signin_conf.h"
#include "signin_jobs.h"
#include "signin_reply.h"

namespace signin_ngx {
namespace {

using signin::Code;

signin::Identity &id() { return *identity(); }

// last_seen_at feeds the idle timeout; it is not an acknowledgement, so nobody waits for it.
class TouchJob final : public BackgroundJob {
public:
    explicit TouchJob(signin::Principal p) : BackgroundJob(Stage::Write), principal_(std::move(p)) {}

private:
    signin::Status write() override { return id().sessions().touch(principal_); }
    signin::Principal principal_;
};

class RevokeJob final : public Job {
public:
    RevokeJob(signin::Principal p, std::string session_id, std::string client)
        : Job(Stage::Write), principal_(std::move(p)), session_id_(std::move(session_id)), client_(std::move(client)) {}

private:
    signin::Status write() override { return id().sessions().revoke_session(principal_, session_id_, client_); }
    ngx_int_t answer(ngx_http_request_t *r) override { return send_empty(r, NGX_HTTP_NO_CONTENT); }

    signin::Principal principal_;
    std::string session_id_, client_;
};

// POST /logout: the caller's session; with {"all": true} also every session of this browser
// (several accounts in one browser), then no cookie of the module's but the remembered device stays.
class LogoutJob final : public Job {
public:
    LogoutJob(std::optional<signin::Principal> p, std::string client, bool by_cookie, bool all, signin::Secret browser)
        : Job(Stage::Write),
          principal_(std::move(p)),
          client_(std::move(client)),
          by_cookie_(by_cookie),
          all_(all),
          browser_(std::move(browser)) {}

private:
    signin::Status write() override {
        if (all_) return id().sessions().logout_browser(browser_, principal_ ? &*principal_ : nullptr, client_);
        return id().sessions().logout(*principal_, client_);
    }
    ngx_int_t answer(ngx_http_request_t *r) override {
        if (by_cookie_ || all_) add_header(r, "Set-Cookie", cookie_header(id().cookie_name(), "", 0));
        if (all_ && !browser_.empty()) add_header(r, "Set-Cookie", cookie_header(id().browser_cookie_name(), "", 0));
        return send_empty(r, NGX_HTTP_NO_CONTENT);
    }

    std::optional<signin::Principal> principal_;
    std::string client_;
    bool by_cookie_, all_;
    signin::Secret browser_;
};

// POST /accounts/switch: the browser's cookie opens the other session's secret; the session
// cookie is set to it.
class SwitchJob final : public Job {
public:
    SwitchJob(signin::Secret browser, std::string session_id, std::string client)
        : Job(Stage::Write), browser_(std::move(browser)), session_id_(std::move(session_id)), client_(std::move(client)) {}

private:
    signin::Status write() override {
        auto s = id().sessions().switch_to(browser_, session_id_, client_);
        if (!s) return s.error();
        session_ = std::move(s.value());
        return signin::ok_status();
    }
    ngx_int_t answer(ngx_http_request_t *r) override {
        set_session_cookies(r, *session_);
        return send_empty(r, NGX_HTTP_NO_CONTENT);
    }

    signin::Secret browser_;
    std::string session_id_, client_;
    std::optional<signin::Session> session_;
};

}  // namespace

std::shared_ptr<const signin::Principal> cached_principal(const Credentials &c) {
    signin::SessionCache *cache = session_cache();
    if (cache == nullptr || identity() == nullptr) return nullptr;
    const signin::Principal *hit =
        cache->get(signin::record_key(c.secret.reveal()), c.kind(), identity()->policy(), identity()->now());
    return hit == nullptr ? nullptr : std::make_shared<const signin::Principal>(*hit);
}

signin::Result<const signin::Principal *> authenticate(ngx_http_request_t *r, const Credentials &c) {
    signin::Identity *engine = identity();
    if (engine == nullptr) return signin::Error{Code::StorageError, "the sign-in store is not open"};
    if (c.state != Credentials::Cookie && c.state != Credentials::Bearer) {
        return signin::Error{Code::Unauthenticated, "not signed in"};
    }
    RequestCtx *ctx = get_ctx(r, true);
    if (ctx == nullptr) return signin::Error{Code::Internal, "no memory for the request's state"};
    const auto kind = c.kind();
    // authenticate_from records nothing about the client (no audit entry, no counter): the
    // signin_client value is not evaluated for it. A store whose reads may block was read in the
    // thread pool before (start_auth_read): its outcome is taken, once.
    if (ctx->pre_auth) {
        signin::Result<std::shared_ptr<const signin::Principal>> read = std::move(*ctx->pre_auth);
        ctx->pre_auth.reset();
        if (!read) return read.error();
        ctx->principal = std::move(read.value());
    } else {
        auto p = engine->sessions().authenticate_shared(c.secret, kind);
        if (!p) return p.error();
        ctx->principal = std::move(p.value());
    }
    if (engine->sessions().needs_touch(*ctx->principal)) {
        (void)start_background_job(std::make_unique<TouchJob>(*ctx->principal));
        // a cached principal would ask for this touch again at every request
        if (signin::SessionCache *cache = session_cache()) cache->touched(signin::record_key(c.secret.reveal()), engine->now());
    }
    return ctx->principal.get();
}

const signin::Principal *signed_in(ApiCall &call, ngx_int_t &rc, bool *by_cookie) {
    const Credentials &c = call.credentials;
    const bool cookie = c.state == Credentials::Cookie;
    if (by_cookie) *by_cookie = cookie;
    auto p = authenticate(call.r, c);
    if (!p) {
        rc = send_unauthenticated(call.r, p.error(), cookie);
        return nullptr;
    }
    return p.value();
}

void set_session_cookies(ngx_http_request_t *r, const signin::Session &s) {
    long long max_age = (s.expires_at - id().now()) / 1000;
    add_header(r, "Set-Cookie", cookie_header(id().cookie_name(), s.token.reveal(), max_age));
    if (!s.browser.empty()) {  // it outlives any one session of the browser
        add_header(r, "Set-Cookie", cookie_header(id().browser_cookie_name(), s.browser.reveal(),
                                                  id().policy().session_ttl / 1000));
    }
    if (!s.known.empty()) {  // set again at every sign-in, so that it lasts as long as it is used
        add_header(r, "Set-Cookie", cookie_header(id().known_cookie_name(), s.known.reveal(), signin::kKeepKnown / 1000));
    }
}

ngx_int_t send_session(ngx_http_request_t *r, const signin::Session &s) {
    if (s.kind == signin::SessionKind::Bearer) return send_json(r, 200, signin::json::bearer(s, id().now()));
    set_session_cookies(r, s);
    return send_json(r, 200, signin::json::user(s.user));
}

ngx_int_t send_step(ngx_http_request_t *r, const signin::SignInStep &step) {
    if (step.signed_in() && step.session) {
        count_signin(step.session->method);
        return send_session(r, *step.session);
    }
    return send_json(r, 202, signin::json::mfa_required(step, id().now()));
}

signin::BrowserCookies browser_of(ngx_http_request_t *r, signin::SessionKind kind, bool add) {
    signin::BrowserCookies b;
    if (kind != signin::SessionKind::Cookie) return b;
    if (id().policy().with_mfa) b.device = read_cookie(r, id().device_cookie_name());
    b.browser = read_cookie(r, id().browser_cookie_name());
    b.current = read_cookie(r, id().cookie_name());
    if (id().policy().new_signin_notice) b.known = read_cookie(r, id().known_cookie_name());
    b.add = add;
    return b;
}

ngx_int_t get_me(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    auto p = signed_in(call, rc);
    if (!p) return rc;
    return send_json(call.r, 200, signin::json::me(p->user));
}

// The public keys of $signin_assertion (RFC 7517), for upstreams to verify it.
ngx_int_t get_jwks(ApiCall &call) {
    MainConf *m = main_conf(call.r);
    if (m->assertions == nullptr) return send_error(call.r, Code::NotFound, "not found");
    return send_json(call.r, 200, m->assertions->jwks());
}

ngx_int_t get_sessions(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    auto p = signed_in(call, rc);
    if (!p) return rc;
    return with_read<std::vector<signin::SessionInfo>>(
        call.r, [p] { return id().sessions().sessions(*p); },
        [](ngx_http_request_t *r, auto &list) { return send_json(r, 200, signin::json::sessions(list)); });
}

ngx_int_t post_sessions_revoke(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    auto p = signed_in(call, rc);
    if (!p) return rc;
    auto f = signin::json::parse_object(call.body, {{"id", true}});
    if (!f) return send_failure(call.r, f.error());
    return start_job(call.r, std::make_unique<RevokeJob>(std::move(*p), f.value()["id"], call.client()));
}

ngx_int_t post_logout(ApiCall &call) {
    auto f = signin::json::parse_object(call.body.empty() ? std::string_view("{}") : call.body,
                                        {{"all", false, true}});
    if (!f) return send_failure(call.r, f.error());
    const bool all = f.value()["all"] == "true";
    signin::Secret browser = all ? read_cookie(call.r, id().browser_cookie_name()) : signin::Secret();
    ngx_int_t rc = NGX_ERROR;
    bool by_cookie = false;
    std::optional<signin::Principal> p;  // none: the browser cookie alone ends its accounts
    if (all && !browser.empty() && call.credentials.state == Credentials::None) {
        // the browser's accounts without an active one: the browser cookie is the credential,
        // and ending sessions with it is a cookie write (it needs the configured Origin)
        auto ok = id().check_origin(header_value(call.r, "Origin"), true);
        if (!ok) return send_failure(call.r, ok.error());
    } else {
        const signin::Principal *who = signed_in(call, rc, &by_cookie);
        if (who == nullptr) return rc;
        p = *who;
    }
    return start_job(call.r, std::make_unique<LogoutJob>(std::move(p), call.client(), by_cookie, all, std::move(browser)));
}

// GET /accounts: this browser's accounts (its cookie sessions), the active one marked.
ngx_int_t get_accounts(ApiCall &call) {
    if (call.credentials.state == Credentials::Bearer) {
        return send_error(call.r, Code::InvalidRequest, "accounts are a browser's: send the cookies, not a bearer token");
    }
    signin::Secret browser = read_cookie(call.r, id().browser_cookie_name());
    signin::Secret current = call.credentials.state == Credentials::Cookie ? call.credentials.secret : signin::Secret();
    return with_read<std::vector<signin::BrowserAccount>>(
        call.r, [browser, current] { return id().sessions().accounts(browser, current); },
        [](ngx_http_request_t *r, auto &list) { return send_json(r, 200, signin::json::accounts(list)); });
}

ngx_int_t post_accounts_switch(ApiCall &call) {
    auto f = signin::json::parse_object(call.body, {{"session_id", true}});
    if (!f) return send_failure(call.r, f.error());
    return start_job(call.r, std::make_unique<SwitchJob>(read_cookie(call.r, id().browser_cookie_name()),
                                                         f.value()["session_id"], call.client()));
}

}  // namespace signin_ngx
