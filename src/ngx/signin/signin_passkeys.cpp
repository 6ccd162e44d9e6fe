// Passkeys (WebAuthn, JSON forms): POST /passkeys/register/options, /passkeys/register, GET /passkeys,
// POST /passkeys/remove (the caller's own), POST /passkeys/login/options, /passkeys/session,
// /passkeys/token (a way in). The ceremonies are the core's (passkeys.hpp); the bodies, nested
// JSON, go to it whole.
#include "signin/json.hpp"
#include "signin_api.h"
#include "signin_jobs.h"
#include "signin_conf.h"
#include "signin_reply.h"

namespace signin_ngx {
namespace {

using signin::Code;

signin::Identity &id() { return *identity(); }

ngx_int_t disabled(ngx_http_request_t *r) {
    return send_error(r, Code::PasskeysDisabled, "passkeys are not enabled (signin_passkeys)");
}

std::string info_json(const signin::PasskeyInfo &p) {
    signin::json::Writer w;
    w.begin_object().key("id").value(p.id).key("name").value(p.name).key("created_at").time(p.created_at);
    w.key("last_used_at");
    if (p.last_used_at > 0) {
        w.time(p.last_used_at);
    } else {
        w.null();
    }
    w.key("synced").value(p.synced).end_object();
    return w.take();
}

class RegisterJob final : public Job {
public:
    RegisterJob(signin::Principal p, std::string body, std::string client)
        : Job(Stage::Write), principal_(std::move(p)), body_(std::move(body)), client_(std::move(client)) {}

private:
    signin::Status write() override {
        auto added = id().passkeys().add(principal_, body_, client_);
        if (!added) return added.error();
        added_ = std::move(added.value());
        return signin::ok_status();
    }
    ngx_int_t answer(ngx_http_request_t *r) override { return send_json(r, 201, info_json(*added_)); }

    signin::Principal principal_;
    std::string body_, client_;
    std::optional<signin::PasskeyInfo> added_;
};

class RemoveJob final : public Job {
public:
    RemoveJob(signin::Principal p, std::string passkey, std::string client)
        : Job(Stage::Write), principal_(std::move(p)), passkey_(std::move(passkey)), client_(std::move(client)) {}

private:
    signin::Status write() override { return id().passkeys().remove(principal_, passkey_, client_); }
    ngx_int_t answer(ngx_http_request_t *r) override { return send_empty(r, NGX_HTTP_NO_CONTENT); }

    signin::Principal principal_;
    std::string passkey_, client_;
};

// POST /passkeys/session and /passkeys/token: the assertion checked and the challenge spent in
// one write with the session it opens.
class PasskeySignInJob final : public SignInJob {
public:
    PasskeySignInJob(std::string body, std::string client, std::string user_agent, signin::SessionKind kind,
                     signin::BrowserCookies browser)
        : SignInJob(Code::PasskeyRefused),
          body_(std::move(body)),
          client_(std::move(client)),
          user_agent_(std::move(user_agent)),
          kind_(kind),
          browser_(std::move(browser)) {}

private:
    // refused passkeys count as failed exchanges of this client, like wrong codes
    signin::Result<signin::SignInStep> spend() override {
        return id().passkeys().sign_in(body_, client_, kind_, user_agent_, &browser_);
    }

    std::string body_, client_, user_agent_;
    signin::SessionKind kind_;
    signin::BrowserCookies browser_;
};

ngx_int_t passkey_sign_in(ApiCall &call, signin::SessionKind kind) {
    if (!id().policy().with_passkeys) return disabled(call.r);
    return start_job(call.r, std::make_unique<PasskeySignInJob>(std::string(call.body), call.client(), user_agent(call.r),
                                                                kind, browser_of(call.r, kind)));
}

}  // namespace

ngx_int_t post_passkeys_register_options(ApiCall &call) {
    if (!id().policy().with_passkeys) return disabled(call.r);
    ngx_int_t rc = NGX_ERROR;
    auto p = signed_in(call, rc);
    if (!p) return rc;
    return with_read<std::string>(
        call.r, [p] { return id().passkeys().registration_options(*p); },
        [](ngx_http_request_t *r, auto &options) { return send_json(r, 200, options); });
}

ngx_int_t post_passkeys_register(ApiCall &call) {
    if (!id().policy().with_passkeys) return disabled(call.r);
    ngx_int_t rc = NGX_ERROR;
    auto p = signed_in(call, rc);
    if (!p) return rc;
    return start_job(call.r, std::make_unique<RegisterJob>(std::move(*p), std::string(call.body), call.client()));
}

ngx_int_t get_passkeys(ApiCall &call) {
    if (!id().policy().with_passkeys) return disabled(call.r);
    ngx_int_t rc = NGX_ERROR;
    auto p = signed_in(call, rc);
    if (!p) return rc;
    return with_read<std::vector<signin::PasskeyInfo>>(
        call.r, [p] { return id().passkeys().list(*p); },
        [](ngx_http_request_t *r, auto &list) {
            std::string out = "{\"passkeys\":[";
            for (std::size_t i = 0; i < list.size(); ++i) out += (i ? "," : "") + info_json(list[i]);
            return send_json(r, 200, out + "]}");
        });
}

ngx_int_t post_passkeys_remove(ApiCall &call) {
    if (!id().policy().with_passkeys) return disabled(call.r);
    ngx_int_t rc = NGX_ERROR;
    auto p = signed_in(call, rc);
    if (!p) return rc;
    auto f = signin::json::parse_object(call.body, {{"id", true}});
    if (!f) return send_failure(call.r, f.error());
    return start_job(call.r, std::make_unique<RemoveJob>(std::move(*p), f.value()["id"], call.client()));
}

ngx_int_t post_passkeys_login_options(ApiCall &call) {
    if (!id().policy().with_passkeys) return disabled(call.r);
    auto options = id().passkeys().login_options();
    if (!options) return send_failure(call.r, options.error());
    return send_json(call.r, 200, options.value());
}

ngx_int_t post_passkeys_session(ApiCall &call) { return passkey_sign_in(call, signin::SessionKind::Cookie); }
ngx_int_t post_passkeys_token(ApiCall &call) { return passkey_sign_in(call, signin::SessionKind::Bearer); }

}  // namespace signin_ngx
