// Second factors (TOTP, recovery codes, remembered devices): GET /mfa; POST /mfa/totp/setup, /mfa/totp/confirm,
// /mfa/recovery-codes, /mfa/disable, /mfa/devices/forget (the caller's own account); POST
// /mfa/verify and /mfa/token (the second step of a sign-in). Every write is a job of the write
// batch; the rules are the core's (signin/mfa.hpp).
#include <sodium.h>

#include "signin/json.hpp"
#include "signin_api.h"
#include "signin_jobs.h"
#include "signin_metrics.h"
#include "signin_conf.h"
#include "signin_delivery.h"
#include "../limits/signin_limits.h"
#include "signin_reply.h"

namespace signin_ngx {
namespace {

using signin::Code;

signin::Identity &id() { return *identity(); }

// The remembered-device cookie: like the session cookie (HttpOnly, Secure, SameSite=Lax, Path=/).
std::string device_cookie(std::string_view value, long long max_age) {
    return cookie_header(id().device_cookie_name(), value, max_age);
}

// A write on the caller's own second factors, answered by `answer_with`.
class AccountJob final : public Job {
public:
    enum class What { Setup, Confirm, RecoveryCodes, Disable, ForgetDevices };
    AccountJob(What what, signin::Principal p, std::string client, signin::Secret code, signin::Secret recovery_code)
        : Job(Stage::Write),
          what_(what),
          principal_(std::move(p)),
          client_(std::move(client)),
          code_(std::move(code)),
          recovery_code_(std::move(recovery_code)) {}

private:
    signin::Status write() override {
        signin::Mfa &mfa = id().mfa();
        switch (what_) {
        case What::Setup: {
            auto s = mfa.setup_totp(principal_, client_);
            if (!s) return s.error();
            body_ = signin::json::totp_setup(s.value());
            break;
        }
        case What::Confirm:
        case What::RecoveryCodes: {
            auto codes = what_ == What::Confirm ? mfa.confirm_totp(principal_, code_.reveal(), client_)
                                                : mfa.new_recovery_codes(principal_, client_);
            if (!codes) return codes.error();
            body_ = signin::json::recovery_codes(codes.value());
            break;
        }
        case What::Disable: return mfa.disable(principal_, code_.reveal(), recovery_code_.reveal(), client_);
        case What::ForgetDevices: return mfa.forget_devices(principal_, client_);
        }
        return signin::ok_status();
    }
    ngx_int_t answer(ngx_http_request_t *r) override {
        if (what_ == What::Disable || what_ == What::ForgetDevices) {
            // this browser's device cookie names nothing any more
            add_header(r, "Set-Cookie", device_cookie("", 0));
            return send_empty(r, NGX_HTTP_NO_CONTENT);
        }
        return send_json(r, 200, body_);
    }

    What what_;
    signin::Principal principal_;
    std::string client_;
    signin::Secret code_, recovery_code_;
    std::string body_;  // holds the secret or the recovery codes until the answer

public:
    ~AccountJob() override { sodium_memzero(body_.data(), body_.size()); }  // ... and no longer
};

// POST /mfa/verify and /mfa/token: one write transaction, so one code finishes one sign-in
// however many connections and workers race with it.
class VerifyJob final : public Job {
public:
    VerifyJob(signin::Secret mfa_token, signin::Secret code, signin::Secret recovery_code, bool remember,
              std::string client, signin::SessionKind kind, signin::BrowserCookies browser)
        : Job(Stage::Write),
          mfa_token_(std::move(mfa_token)),
          code_(std::move(code)),
          recovery_code_(std::move(recovery_code)),
          remember_(remember),
          client_(std::move(client)),
          kind_(kind),
          browser_(std::move(browser)) {}

private:
    signin::Status write() override {
        lock_notice_ = signin::TokenIssue{};  // a batch run again starts from nothing
        auto v = id().mfa().verify(mfa_token_, code_.reveal(), recovery_code_.reveal(), remember_, client_, kind_,
                                   &browser_, &lock_notice_);
        if (!v) return v.error();
        verified_ = std::move(v.value());
        return signin::ok_status();
    }
    ngx_int_t answer(ngx_http_request_t *r) override {
        if (!verified_->device.empty()) {
            const long long max_age = (verified_->device_expires_at - id().now() + 999) / 1000;  // whole seconds, up
            add_header(r, "Set-Cookie", device_cookie(verified_->device.reveal(), max_age));
        }
        count_signin(Way::Mfa);  // a sign-in finished by its second factor
        return send_session(r, verified_->session);
    }
    void failed(ngx_http_request_t *r, const signin::Error &e) override {
        // wrong codes and dead mfa_tokens count as failed exchanges of this client (guessing)
        if (e.code == Code::InvalidCode || e.code == Code::InvalidToken) {
            limit_note_failure(r, Bucket::ExchangeFailure, client_key(r));
        }
        // the code that locked the factor: its notice leaves now rather than after the outbox's
        // hold. Only with this error: a batch whose commit failed answers another, and then the
        // notice was never written
        if (e.code == Code::MfaLocked && lock_notice_.delivery) {
            start_delivery(*lock_notice_.delivery, std::move(lock_notice_.outbox_key), client_);
        }
    }

    signin::Secret mfa_token_, code_, recovery_code_;
    bool remember_;
    std::string client_;
    signin::SessionKind kind_;
    signin::BrowserCookies browser_;  // cookie sign-ins only
    std::optional<signin::MfaVerified> verified_;
    signin::TokenIssue lock_notice_;  // set by the wrong code that locks the factor
};

ngx_int_t disabled(ngx_http_request_t *r) {
    return send_error(r, Code::MfaDisabled, "second factors are not enabled (signin_mfa)");
}

// The signed-in caller's account job, with the body's fields.
ngx_int_t account_job(ApiCall &call, AccountJob::What what, std::initializer_list<signin::json::Field> fields) {
    if (!id().policy().with_mfa) return disabled(call.r);
    ngx_int_t rc = NGX_ERROR;
    auto p = signed_in(call, rc);
    if (!p) return rc;
    auto f = signin::json::parse_object(call.body.empty() ? std::string_view("{}") : call.body, fields);
    if (!f) return send_failure(call.r, f.error());
    auto &v = f.value();
    if (what == AccountJob::What::Disable && v.count("code") == v.count("recovery_code")) {
        return send_failure(call.r, signin::Error{Code::InvalidRequest, "send a code or a recovery_code"});
    }
    return start_job(call.r, std::make_unique<AccountJob>(what, std::move(*p), call.client(),
                                                          signin::Secret(std::move(v["code"])),
                                                          signin::Secret(std::move(v["recovery_code"]))));
}

ngx_int_t verify(ApiCall &call, signin::SessionKind kind) {
    if (!id().policy().with_mfa) return disabled(call.r);
    auto f = signin::json::parse_object(call.body, {{"mfa_token", true},
                                                    {"code", false},
                                                    {"recovery_code", false},
                                                    {"remember", false, true}});
    if (!f) return send_failure(call.r, f.error());
    auto &v = f.value();
    if (v.count("code") == v.count("recovery_code")) {
        return send_failure(call.r, signin::Error{Code::InvalidRequest, "send a code or a recovery_code"});
    }
    const bool remember = v["remember"] == "true";
    return start_job(call.r, std::make_unique<VerifyJob>(signin::Secret(std::move(v["mfa_token"])),
                                                         signin::Secret(std::move(v["code"])),
                                                         signin::Secret(std::move(v["recovery_code"])), remember,
                                                         call.client(), kind, browser_of(call.r, kind)));
}

}  // namespace

ngx_int_t get_mfa(ApiCall &call) {
    if (!id().policy().with_mfa) return disabled(call.r);
    ngx_int_t rc = NGX_ERROR;
    auto p = signed_in(call, rc);
    if (!p) return rc;
    return with_read<signin::MfaStatus>(
        call.r, [p] { return id().mfa().status(*p); },
        [](ngx_http_request_t *r, auto &s) { return send_json(r, 200, signin::json::mfa_status(s)); });
}

ngx_int_t post_mfa_totp_setup(ApiCall &call) { return account_job(call, AccountJob::What::Setup, {}); }
ngx_int_t post_mfa_totp_confirm(ApiCall &call) {
    return account_job(call, AccountJob::What::Confirm, {{"code", true}});
}
ngx_int_t post_mfa_recovery_codes(ApiCall &call) { return account_job(call, AccountJob::What::RecoveryCodes, {}); }
ngx_int_t post_mfa_disable(ApiCall &call) {
    return account_job(call, AccountJob::What::Disable, {{"code", false}, {"recovery_code", false}});
}
ngx_int_t post_mfa_devices_forget(ApiCall &call) { return account_job(call, AccountJob::What::ForgetDevices, {}); }
ngx_int_t post_mfa_verify(ApiCall &call) { return verify(call, signin::SessionKind::Cookie); }
ngx_int_t post_mfa_token(ApiCall &call) { return verify(call, signin::SessionKind::Bearer); }

}  // namespace signin_ngx
