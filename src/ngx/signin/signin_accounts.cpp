// Account changes: GET /account (what is held), POST /account/delete.
#include "signin/json.hpp"
#include "signin_api.h"
#include "signin_jobs.h"
#include "signin_conf.h"
#include "signin_delivery.h"
#include "../limits/signin_limits.h"
#include "signin_reply.h"

namespace signin_ngx {
namespace {

signin::Identity &id() { return *identity(); }

class DeleteJob final : public Job {
public:
    DeleteJob(signin::Principal p, std::string client, bool by_cookie)
        : Job(Stage::Write), principal_(std::move(p)), client_(std::move(client)), by_cookie_(by_cookie) {}

private:
    signin::Status write() override { return id().accounts().delete_account(principal_, client_); }
    ngx_int_t answer(ngx_http_request_t *r) override {
        if (by_cookie_) {  // nothing of the account stays in this browser
            add_header(r, "Set-Cookie", cookie_header(id().cookie_name(), "", 0));
            add_header(r, "Set-Cookie", cookie_header(id().device_cookie_name(), "", 0));
        }
        return send_empty(r, NGX_HTTP_NO_CONTENT);
    }

    signin::Principal principal_;
    std::string client_;
    bool by_cookie_;
};

// POST /email/change: both tokens in one write, then both emails from the outbox.
class EmailChangeJob final : public Job {
public:
    EmailChangeJob(signin::Principal p, std::string email, std::string client)
        : Job(Stage::Write), principal_(std::move(p)), email_(std::move(email)), client_(std::move(client)) {}

private:
    signin::Status write() override {
        auto c = id().tokens().request_email_change(principal_, email_, client_);
        if (!c) return c.error();
        issued_ = std::move(c.value());
        return signin::ok_status();
    }
    ngx_int_t answer(ngx_http_request_t *r) override {
        for (signin::TokenIssue *t : {&issued_->to_new, &issued_->to_old}) {
            if (t->delivery) start_delivery(*t->delivery, std::move(t->outbox_key), client_);
        }
        return send_json(r, 202, "{\"status\":\"sent\"}");
    }

    signin::Principal principal_;
    std::string email_, client_;
    std::optional<signin::EmailChangeIssue> issued_;
};

// POST /email/confirm: one half spent; the second makes the change and sends EmailChanged.
class EmailConfirmJob final : public Job {
public:
    EmailConfirmJob(TokenOrCode spent, std::string client)
        : Job(Stage::Write), spent_(std::move(spent)), client_(std::move(client)) {}

private:
    signin::Status write() override {
        auto s = spent_.by_code()
                     ? id().tokens().confirm_email_change_code(spent_.email, spent_.code.reveal(), spent_.group, client_)
                     : id().tokens().confirm_email_change(spent_.token, client_);
        if (!s) return s.error();
        step_ = std::move(s.value());
        return signin::ok_status();
    }
    ngx_int_t answer(ngx_http_request_t *r) override {
        if (step_->notice.delivery) start_delivery(*step_->notice.delivery, std::move(step_->notice.outbox_key), client_);
        signin::json::Writer w;
        w.begin_object().key("status").value(step_->status);
        if (!step_->new_email.empty()) w.key("email").value(step_->new_email);
        w.end_object();
        return send_json(r, 200, w.take());
    }
    void failed(ngx_http_request_t *r, const signin::Error &e) override {
        if (e.code == signin::Code::InvalidToken) limit_note_failure(r, Bucket::ExchangeFailure, client_key(r));
    }

    TokenOrCode spent_;
    std::string client_;
    std::optional<signin::EmailChangeStep> step_;
};

}  // namespace

ngx_int_t post_email_change(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    auto p = signed_in(call, rc);
    if (!p) return rc;
    auto f = signin::json::parse_object(call.body, {{"email", true}});
    if (!f) return send_failure(call.r, f.error());
    std::string email = f.value()["email"];
    // the limit of the new address: its send counter, as a token request's
    const std::string key = signin::mailbox_key(email);
    if (!key.empty() && limits_on(call.r) && !limit_take(call.r, Bucket::Address, key).allowed) {
        return send_json(call.r, 202, "{\"status\":\"sent\"}");  // the same answer, nothing sent
    }
    return start_job(call.r, std::make_unique<EmailChangeJob>(std::move(*p), std::move(email), call.client()));
}

ngx_int_t post_email_confirm(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    auto spent = token_or_code(call, rc);
    if (!spent) return rc;
    return start_job(call.r, std::make_unique<EmailConfirmJob>(std::move(*spent), call.client()));
}

ngx_int_t get_account(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    auto p = signed_in(call, rc);
    if (!p) return rc;
    return with_read<signin::AccountInfo>(
        call.r, [p] { return id().accounts().account(*p); },
        [](ngx_http_request_t *r, auto &a) { return send_json(r, 200, signin::json::account(a)); });
}

ngx_int_t post_account_delete(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    bool by_cookie = false;
    auto p = signed_in(call, rc, &by_cookie);
    if (!p) return rc;
    auto f = signin::json::parse_object(call.body.empty() ? std::string_view("{}") : call.body, {});
    if (!f) return send_failure(call.r, f.error());
    return start_job(call.r, std::make_unique<DeleteJob>(std::move(*p), call.client(), by_cookie));
}

}  // namespace signin_ngx
