// Passwords (only when signin_passwords is on): POST /password/register,
// /password/session, /password/token, /password, /password/change. Each Argon2id runs in the
// hashing pool (the job's Hash stage), its write in a write batch; the attempt limits live in
// the signin_limits zone.
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
namespace throttle = signin::throttle;

signin::Identity &id() { return *identity(); }

// Passwords may be up to 1024 bytes after NFC; longer ones reach the policy's message.
constexpr std::size_t kPasswordBodyField = 8192;

// The password attempt limits: the engine's rules (signin_password_* directives), kept in the zone.
signin::PasswordRules rules() { return signin::password_rules(id().policy().attempts); }

// The key of the (address, client) password backoff. It also names the address's password
// epoch, so that a reset (a new hash) starts every client's history of that address afresh
// (a success clears only its own pair's history) without visiting them. A read transaction on
// the event loop: made only when the zone counts the attempts (see attempt_allowed), for a
// store of one machine.
std::string pair_key(const std::string &address, std::string_view email, std::string_view group,
                     const std::string &client) {
    return address + "\n" + client + "\n" + id().passwords().password_epoch(email, group);
}

// The limits that come before a password is checked: the pair's backoff and the address's
// window. `pair` is set when the zone is on; a refusal's 429 rc goes to `rc`. A store
// that several nodes share counts password attempts itself, in the database, where every node
// sees them (StoreAttemptLimiter, in the thread pool): not in this node's zone.
bool attempt_allowed(ApiCall &call, const std::string &address, std::string_view email, std::string_view group,
                     std::string &pair, std::string_view what, ngx_int_t &rc) {
    if (!limits_on(call.r) || address.empty() || store_shared()) return true;
    pair = pair_key(address, email, group, client_key(call.r));
    Verdict v = backoff_check(call.r, Bucket::PasswordPair, pair, rules().pair);
    if (!v.allowed) {
        rc = send_rate_limited(call.r, Bucket::PasswordPair, v, what);
        return false;
    }
    v = limit_take_rule(call.r, Bucket::PasswordAddress, address, rules().address);
    if (!v.allowed) {
        rc = send_rate_limited(call.r, Bucket::PasswordAddress, v, what);
        return false;
    }
    return true;
}

// POST /password/register: the hash first; then, as any token request, the token's write, which
// keeps only the hash until the token is exchanged (no account exists before).
class PasswordRegistrationJob final : public TokenRequestJob {
public:
    PasswordRegistrationJob(std::string email, std::string group, std::string client, Send send,
                            signin::Secret password, bool backoff)
        : TokenRequestJob(Stage::Hash, signin::Intent::Register, std::move(email), std::move(group),
                          std::move(client), std::move(send)),
          password_(std::move(password)),
          backoff_(backoff) {}

private:
    signin::Status hash() override {
        auto hashed = id().passwords().prepare_password_registration(email_, password_, group_);
        password_.wipe();
        if (!hashed) return hashed.error();
        password_hash_ = std::move(hashed.value());
        return signin::ok_status();
    }
    signin::Status write() override {
        take_shared_send();
        auto issued = id().passwords().issue_password_registration_hashed(email_, group_, client_, password_hash_,
                                                                           send_.may_send, roles_);
        settle_shared_send(issued && issued->delivery.has_value());
        if (!issued) return issued.error();
        issued_ = std::move(issued.value());
        return signin::ok_status();
    }
    ngx_int_t answer(ngx_http_request_t *r) override {
        // a registration that went through (not refused by the policy) makes the next one wait
        if (backoff_) backoff_fail(r, Bucket::PasswordRegistration, send_.address, rules().registration);
        return TokenRequestJob::answer(r);
    }

    signin::Secret password_;
    std::string password_hash_;
    bool backoff_;  // the address's password-registration backoff applies (the zone is on)
};

// POST /password/session and /password/token: the Argon2id verify, then the session (or the
// failure's audit entry).
class PasswordLoginJob final : public Job {
public:
    PasswordLoginJob(std::string email, std::string group, std::string client, std::string user_agent,
                     signin::Secret password, signin::SessionKind kind, std::string pair,
                     signin::BrowserCookies browser)
        : Job(Stage::Hash),
          email_(std::move(email)),
          group_(std::move(group)),
          client_(std::move(client)),
          user_agent_(std::move(user_agent)),
          password_(std::move(password)),
          kind_(kind),
          pair_(std::move(pair)),
          browser_(std::move(browser)) {}

private:
    signin::Status hash() override {
        auto check = id().passwords().check_password_login(email_, password_, client_, kind_, user_agent_, group_);
        password_.wipe();
        if (!check) return check.error();
        check_ = std::move(check.value());
        return signin::ok_status();
    }
    signin::Status write() override {
        auto step = id().passwords().finish_password_login(*check_, &browser_);
        if (!step) return step.error();
        step_ = std::move(step.value());
        return signin::ok_status();
    }
    ngx_int_t answer(ngx_http_request_t *r) override {
        if (!pair_.empty()) backoff_clear(r, Bucket::PasswordPair, pair_);  // a success clears this pair only
        return send_step(r, *step_);
    }
    void failed(ngx_http_request_t *r, const signin::Error &e) override {
        if (!pair_.empty() && e.code == Code::InvalidCredentials) {
            backoff_fail(r, Bucket::PasswordPair, pair_, rules().pair);
        }
    }

    std::string email_, group_, client_, user_agent_;
    signin::Secret password_;
    signin::SessionKind kind_;
    std::string pair_;  // the (address, client) backoff key, when the zone is on
    signin::BrowserCookies browser_;  // cookie sign-ins only
    std::optional<signin::PasswordLoginCheck> check_;
    std::optional<signin::SignInStep> step_;
};

// POST /password: set, change or reset from a fresh session (no current password: the fresh email sign-in proves the owner).
class PasswordSetJob final : public Job {
public:
    PasswordSetJob(signin::Principal p, signin::Secret password, std::string client)
        : Job(Stage::Hash), principal_(std::move(p)), password_(std::move(password)), client_(std::move(client)) {}

private:
    signin::Status hash() override {
        auto update = id().passwords().prepare_set_password(principal_, password_);
        password_.wipe();
        if (!update) return update.error();
        update_ = std::move(update.value());
        return signin::ok_status();
    }
    signin::Status write() override { return id().passwords().store_set_password(principal_, *update_, client_); }
    ngx_int_t answer(ngx_http_request_t *r) override { return send_empty(r, NGX_HTTP_NO_CONTENT); }

    signin::Principal principal_;
    signin::Secret password_;
    std::string client_;
    std::optional<signin::PasswordUpdate> update_;
};

// POST /password/change: `current` verified and `password` hashed, then the write and the
// PasswordChanged notice (the owner hears of every change).
class PasswordChangeJob final : public Job {
public:
    PasswordChangeJob(signin::Principal p, signin::Secret current, signin::Secret password, std::string client,
                      std::string pair)
        : Job(Stage::Hash),
          principal_(std::move(p)),
          current_(std::move(current)),
          password_(std::move(password)),
          client_(std::move(client)),
          pair_(std::move(pair)) {}

private:
    signin::Status hash() override {
        auto update = id().passwords().check_password_change(principal_, current_, password_, client_);
        current_.wipe();
        password_.wipe();
        if (!update) return update.error();
        update_ = std::move(update.value());
        return signin::ok_status();
    }
    signin::Status write() override {
        auto change = id().passwords().store_password_change(principal_, *update_, client_);
        if (!change) return change.error();
        change_ = std::move(change.value());
        return signin::ok_status();
    }
    ngx_int_t answer(ngx_http_request_t *r) override {
        if (!pair_.empty()) backoff_clear(r, Bucket::PasswordPair, pair_);
        start_delivery(change_->notice, std::move(change_->outbox_key), client_);
        return send_empty(r, NGX_HTTP_NO_CONTENT);
    }
    void failed(ngx_http_request_t *r, const signin::Error &e) override {
        // a wrong `current` is a failed password attempt of this (address, client)
        if (!pair_.empty() && e.code == Code::WrongPassword) backoff_fail(r, Bucket::PasswordPair, pair_, rules().pair);
    }

    signin::Principal principal_;
    signin::Secret current_, password_;
    std::string client_;
    std::string pair_;
    std::optional<signin::PasswordUpdate> update_;
    std::optional<signin::PasswordChange> change_;
};

using signin::json::Fields;

// {email, password, group?} of the three sign-in-less password endpoints.
// with_add: a cookie sign-in's body may also say {"add": true|false}: another account in this browser.
std::optional<Fields> credentials_body(ApiCall &call, ngx_int_t &rc, bool with_add = false) {
    auto f = with_add ? signin::json::parse_object(
                            call.body, {{"email", true}, {"password", true}, {"group", false}, {"add", false, true}},
                            kPasswordBodyField)
                      : signin::json::parse_object(call.body, {{"email", true}, {"password", true}, {"group", false}},
                                                   kPasswordBodyField);
    if (!f) {
        rc = send_failure(call.r, f.error());
        return std::nullopt;
    }
    return std::move(f.value());
}

ngx_int_t password_login(ApiCall &call, signin::SessionKind kind) {
    ngx_int_t rc = NGX_ERROR;
    auto f = credentials_body(call, rc, kind == signin::SessionKind::Cookie);
    if (!f) return rc;
    Fields &v = *f;
    const bool add = v["add"] == "true";
    std::string pair;
    if (!attempt_allowed(call, address_key(v["email"], v["group"]), v["email"], v["group"], pair, "password", rc)) {
        return rc;
    }
    return start_job(call.r, std::make_unique<PasswordLoginJob>(v["email"], v["group"], call.client(), user_agent(call.r),
                                                                signin::Secret(std::move(v["password"])), kind,
                                                                std::move(pair), browser_of(call.r, kind, add)));
}

}  // namespace

ngx_int_t post_password_register(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    auto f = credentials_body(call, rc);
    if (!f) return rc;
    Fields &v = *f;
    TokenRequestJob::Send send{signin::mailbox_key(v["email"])};
    const bool limited = limits_on(call.r) && !send.address.empty();
    // repeated password registration of one address: 60 s after the first, doubling (in the
    // database for a store that several nodes share, as attempt_allowed)
    const bool backoff = limited && !store_shared();
    if (limited) {
        if (backoff) {
            Verdict verdict = backoff_check(call.r, Bucket::PasswordRegistration, send.address, rules().registration);
            if (!verdict.allowed) {
                return send_rate_limited(call.r, Bucket::PasswordRegistration, verdict, "password/register");
            }
        }
        // as for /register: over the address's send limit, nothing is sent
        send.may_send = limit_take(call.r, Bucket::Address, send.address).allowed;
        send.counted = send.may_send;
        if (shared_limits() != nullptr) send.shared = limit_rule(call.r, Bucket::Address);
    }
    RegistrationAsk ask{v["email"], v["group"], "password", call.client()};
    return check_registration(call.r, std::move(ask),
                              std::make_unique<PasswordRegistrationJob>(v["email"], v["group"], call.client(),
                                                                        std::move(send),
                                                                        signin::Secret(std::move(v["password"])), backoff));
}

ngx_int_t post_password_session(ApiCall &call) { return password_login(call, signin::SessionKind::Cookie); }
ngx_int_t post_password_token(ApiCall &call) { return password_login(call, signin::SessionKind::Bearer); }

ngx_int_t post_password(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    auto p = signed_in(call, rc);
    if (!p) return rc;
    auto f = signin::json::parse_object(call.body, {{"password", true}}, kPasswordBodyField);
    if (!f) return send_failure(call.r, f.error());
    return start_job(call.r, std::make_unique<PasswordSetJob>(std::move(*p), signin::Secret(std::move(f.value()["password"])),
                                                              call.client()));
}

ngx_int_t post_password_change(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    auto p = signed_in(call, rc);
    if (!p) return rc;
    auto f = signin::json::parse_object(call.body, {{"current", true}, {"password", true}}, kPasswordBodyField);
    if (!f) return send_failure(call.r, f.error());
    const signin::User &u = p->user;
    std::string pair;
    if (!attempt_allowed(call, address_key(u.email, u.group_id), u.email, u.group_id, pair, "password/change", rc)) {
        return rc;
    }
    return start_job(call.r, std::make_unique<PasswordChangeJob>(std::move(*p), signin::Secret(std::move(f.value()["current"])),
                                                                 signin::Secret(std::move(f.value()["password"])),
                                                                 call.client(), std::move(pair)));
}

}  // namespace signin_ngx
