// Email tokens: POST /register, /login (a token request), POST /session, /token (its exchange)
// (a token is single-use, short-lived, and only ever spent by a POST).
#include "signin/json.hpp"
#include "signin_api.h"
#include "signin_conf.h"
#include "signin_delivery.h"
#include "../limits/signin_limits.h"
#include "signin_registration.h"
#include "signin_reply.h"

namespace signin_ngx {
namespace {

using signin::Code;

signin::Identity &id() { return *identity(); }

// POST /session and /token: spends the token and opens a session, in one write (one token
// exchanged by many connections through several workers yields one session).
// With {email, code, group?} instead of {token}: the token's short code, the
// form an email shows beside its link; spending either spends both.
class ExchangeJob final : public SignInJob {
public:
    ExchangeJob(TokenOrCode spent, std::string client, std::string user_agent, signin::SessionKind kind,
                signin::BrowserCookies browser)
        : SignInJob(Code::InvalidToken),
          spent_(std::move(spent)),
          client_(std::move(client)),
          user_agent_(std::move(user_agent)),
          kind_(kind),
          browser_(std::move(browser)) {}

private:
    signin::Result<signin::SignInStep> spend() override {
        return spent_.by_code()
                   ? id().tokens().exchange_code_step_from(spent_.email, spent_.code.reveal(), spent_.group, client_,
                                                           kind_, user_agent_, &browser_)
                   : id().tokens().exchange_step_from(spent_.token, client_, kind_, user_agent_, &browser_);
    }

    std::string token_key() const override {
        if (spent_.by_code() || !signin::plausible_secret(spent_.token.reveal())) return {};
        return signin::record_key(spent_.token.reveal());
    }

    TokenOrCode spent_;
    std::string client_, user_agent_;
    signin::SessionKind kind_;
    signin::BrowserCookies browser_;  // cookie sign-ins only
};

ngx_int_t request_token(ApiCall &call, signin::Intent intent) {
    auto f = signin::json::parse_object(call.body, {{"email", true}, {"group", false}});
    if (!f) return send_failure(call.r, f.error());
    std::string email = f.value()["email"], group = f.value()["group"];
    TokenRequestJob::Send send{signin::mailbox_key(email)};
    if (!send.address.empty() && limits_on(call.r)) {
        send.may_send = limit_take(call.r, Bucket::Address, send.address).allowed;
        send.counted = send.may_send;
        if (shared_limits() != nullptr) send.shared = limit_rule(call.r, Bucket::Address);
    }
    auto job = std::make_unique<TokenRequestJob>(Job::Stage::Write, intent, email, group, call.client(), std::move(send));
    if (intent != signin::Intent::Register) return start_job(call.r, std::move(job));
    // every registration request asks the application first, whether or not the address has an
    // account: the time and the answer then say nothing about that
    return check_registration(call.r, RegistrationAsk{std::move(email), std::move(group), "email", call.client()},
                              std::move(job));
}

ngx_int_t exchange(ApiCall &call, signin::SessionKind kind) {
    ngx_int_t rc = NGX_ERROR;
    auto spent = token_or_code(call, rc, kind == signin::SessionKind::Cookie);
    if (!spent) return rc;
    signin::BrowserCookies browser = browser_of(call.r, kind, spent->add);
    return start_job(call.r, std::make_unique<ExchangeJob>(std::move(*spent), call.client(), user_agent(call.r), kind,
                                                           std::move(browser)));
}

}  // namespace

signin::Status SignInJob::write() {
    auto s = spend();
    if (!s) return s.error();
    step_ = std::move(s.value());
    return signin::ok_status();
}

void SignInJob::failed(ngx_http_request_t *r, const signin::Error &e) {
    // failed exchanges per client bound guessing (signin_limit_exchange_failures)
    if (e.code == counted_) limit_note_failure(r, Bucket::ExchangeFailure, client_key(r));
}

// One form or the other, never both.
std::optional<TokenOrCode> token_or_code(ApiCall &call, ngx_int_t &rc, bool with_add) {
    auto f = with_add ? signin::json::parse_object(call.body, {{"token", false}, {"email", false}, {"code", false},
                                                               {"group", false}, {"add", false, true}})
                      : signin::json::parse_object(call.body,
                                                   {{"token", false}, {"email", false}, {"code", false}, {"group", false}});
    if (!f) {
        rc = send_failure(call.r, f.error());
        return std::nullopt;
    }
    auto &fields = f.value();  // only these names get through parse_object
    const bool add = fields["add"] == "true";
    fields.erase("add");
    const bool token = fields.count("token") != 0;
    const bool code = fields.count("email") != 0 && fields.count("code") != 0;
    if (token ? fields.size() != 1 : !code) {
        rc = send_failure(call.r, signin::Error{Code::InvalidRequest, "send {\"token\"} or {\"email\", \"code\"}"});
        return std::nullopt;
    }
    return TokenOrCode{signin::Secret(std::move(fields["token"])), fields["email"], fields["group"],
                       signin::Secret(std::move(fields["code"])), add};
}

TokenRequestJob::TokenRequestJob(Stage first, signin::Intent intent, std::string email, std::string group,
                                 std::string client, Send send)
    : Job(first),
      intent_(intent),
      email_(std::move(email)),
      group_(std::move(group)),
      client_(std::move(client)),
      send_(std::move(send)) {}

// Once for the job, however often its write runs (Job::write): a send still taken from an
// earlier run is kept, one given back is taken again, and "over the limit" stays so.
void TokenRequestJob::take_shared_send() {
    signin::SharedLimits *shared = shared_limits();
    if (!send_.may_send || shared_taken_ || send_.shared.limit == 0 || shared == nullptr) return;
    if (shared->take("address\n" + send_.address, send_.shared, id().now()) > 0) {
        send_.may_send = false;  // the same answer, nothing sent: a usable token is already waiting
    } else {
        shared_taken_ = true;
    }
}

void TokenRequestJob::settle_shared_send(bool sent) {
    if (!shared_taken_ || sent) return;
    shared_limits()->refund("address\n" + send_.address, send_.shared, id().now());
    shared_taken_ = false;
}

signin::Status TokenRequestJob::write() {
    take_shared_send();
    auto issued = id().tokens().issue_token(intent_, email_, group_, client_, send_.may_send, roles_);
    settle_shared_send(issued && issued->delivery.has_value());
    if (!issued) return issued.error();
    issued_ = std::move(issued.value());
    return signin::ok_status();
}

ngx_int_t TokenRequestJob::answer(ngx_http_request_t *r) {
    if (issued_->delivery) {
        // from the outbox, after this answer: the visitor's connection never waits for the mailer
        start_delivery(*issued_->delivery, std::move(issued_->outbox_key), client_);
    } else if (send_.counted) {
        limit_refund(r, Bucket::Address, send_.address);  // the counter counts sends only
    }
    return send_json(r, 202, "{\"status\":\"sent\"}");
}

void TokenRequestJob::failed(ngx_http_request_t *r, const signin::Error &) {
    if (send_.counted) limit_refund(r, Bucket::Address, send_.address);
}

ngx_int_t post_register(ApiCall &call) { return request_token(call, signin::Intent::Register); }
ngx_int_t post_login(ApiCall &call) { return request_token(call, signin::Intent::Login); }
ngx_int_t post_session(ApiCall &call) { return exchange(call, signin::SessionKind::Cookie); }
ngx_int_t post_token(ApiCall &call) { return exchange(call, signin::SessionKind::Bearer); }

}  // namespace signin_ngx
