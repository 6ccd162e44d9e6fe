// Who is signed in: GET /me, GET /sessions, POST /sessions/revoke, POST /logout (SPEC §4), and
// the authentication every signed-in endpoint and the gate share (SPEC §5).
#include "signin/json.hpp"
#include "signin_api.h"
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

class LogoutJob final : public Job {
public:
    LogoutJob(signin::Principal p, std::string client, bool by_cookie)
        : Job(Stage::Write), principal_(std::move(p)), client_(std::move(client)), by_cookie_(by_cookie) {}

private:
    signin::Status write() override { return id().sessions().logout(principal_, client_); }
    ngx_int_t answer(ngx_http_request_t *r) override {
        if (by_cookie_) add_header(r, "Set-Cookie", cookie_header(id().cookie_name(), "", 0));
        return send_empty(r, NGX_HTTP_NO_CONTENT);
    }

    signin::Principal principal_;
    std::string client_;
    bool by_cookie_;
};

}  // namespace

signin::Result<signin::Principal> authenticate(ngx_http_request_t *r, const Credentials &c) {
    signin::Identity *engine = identity();
    if (engine == nullptr) return signin::Error{Code::StorageError, "the sign-in store is not open"};
    if (c.state != Credentials::Cookie && c.state != Credentials::Bearer) {
        return signin::Error{Code::Unauthenticated, "not signed in"};
    }
    auto kind = c.state == Credentials::Bearer ? signin::SessionKind::Bearer : signin::SessionKind::Cookie;
    auto p = engine->sessions().authenticate_from(c.secret, client_of(r), kind);
    if (!p) return p;
    if (engine->sessions().needs_touch(p.value())) (void)start_background_job(std::make_unique<TouchJob>(p.value()));
    if (RequestCtx *ctx = get_ctx(r, true)) ctx->principal = p.value();
    return p;
}

std::optional<signin::Principal> signed_in(ApiCall &call, ngx_int_t &rc, bool *by_cookie) {
    const Credentials &c = call.credentials;
    const bool cookie = c.state == Credentials::Cookie;
    if (by_cookie) *by_cookie = cookie;
    auto p = authenticate(call.r, c);
    if (!p) {
        rc = send_unauthenticated(call.r, p.error(), cookie);
        return std::nullopt;
    }
    return std::move(p.value());
}

ngx_int_t send_session(ngx_http_request_t *r, const signin::Session &s) {
    if (s.kind == signin::SessionKind::Bearer) return send_json(r, 200, signin::json::bearer(s, id().now()));
    long long max_age = (s.expires_at - id().now()) / 1000;
    add_header(r, "Set-Cookie", cookie_header(id().cookie_name(), s.token.reveal(), max_age));
    return send_json(r, 200, signin::json::user(s.user));
}

ngx_int_t send_step(ngx_http_request_t *r, const signin::SignInStep &step) {
    if (step.signed_in() && step.session) return send_session(r, *step.session);
    return send_json(r, 202, signin::json::mfa_required(step, id().now()));
}

signin::Secret device_of(ngx_http_request_t *r, signin::SessionKind kind) {
    if (kind != signin::SessionKind::Cookie || !id().policy().with_mfa) return signin::Secret();
    return read_cookie(r, id().device_cookie_name());
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
    auto list = id().sessions().sessions(*p);
    if (!list) return send_failure(call.r, list.error());
    return send_json(call.r, 200, signin::json::sessions(list.value()));
}

ngx_int_t post_sessions_revoke(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    auto p = signed_in(call, rc);
    if (!p) return rc;
    auto f = signin::json::parse_object(call.body, {{"id", true}});
    if (!f) return send_failure(call.r, f.error());
    return start_job(call.r, std::make_unique<RevokeJob>(std::move(*p), f.value()["id"], call.client));
}

ngx_int_t post_logout(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    bool by_cookie = false;
    auto p = signed_in(call, rc, &by_cookie);
    if (!p) return rc;
    auto f = signin::json::parse_object(call.body.empty() ? std::string_view("{}") : call.body, {});
    if (!f) return send_failure(call.r, f.error());
    return start_job(call.r, std::make_unique<LogoutJob>(std::move(*p), call.client, by_cookie));
}

}  // namespace signin_ngx
