// The password operations of the engine: set (fresh session), change, sign-in, attempt limits.
#include "signin/passwords.hpp"

#include "engine_detail.hpp"

namespace signin {
namespace {

Error rate_limited(Millis wait) {
    Millis seconds = (wait + 999) / 1000;
    Error e{Code::RateLimited, "too many password attempts; try again in " + std::to_string(seconds) + " seconds"};
    e.retry_after = wait;
    return e;
}

// The one answer of every failed password sign-in, whatever the cause (no account probing).
Error invalid_credentials() {
    return Error{Code::InvalidCredentials, "the email address or the password is not right"};
}

Error disabled() { return Error{Code::PasswordsDisabled, "password sign-in is not enabled"}; }

}  // namespace

Passwords::Passwords(Engine &engine, Tokens &tokens)
    : engine_(engine),
      tokens_(tokens),
      limiter_(std::make_shared<MemoryAttemptLimiter>(engine.policy().attempts)) {}

void Passwords::with_password_check(PasswordChecker checker) {
    if (checker) checkers_.push_back(std::move(checker));
}

void Passwords::with_attempt_limiter(std::shared_ptr<AttemptLimiter> limiter) {
    if (limiter) limiter_ = std::move(limiter);
}

Result<std::string> Passwords::check_new_password(std::string_view pw) const {
    if (pw.size() > password::kMaxBytes * 4) {  // far over the limit: not worth normalizing
        return Error{Code::WeakPassword, "Use at most " + std::to_string(password::kMaxBytes) + " bytes."};
    }
    auto nfc = password::normalize_nfc(pw);
    if (!nfc) return Error{Code::InvalidRequest, "the password is not valid UTF-8"};
    Secret held(std::move(*nfc));  // wiped on every way out
    Status st = password::check_policy(held.reveal(), engine_.policy().password_min_length);
    if (!st) return st.error();
    for (const auto &check : checkers_) {
        Status c = check(held.reveal());
        if (!c) return Error{Code::WeakPassword, c.error().message};
    }
    return std::string(held.reveal());
}

Result<std::string> Passwords::prepare_password_registration(std::string_view email_in, const Secret &pw,
                                                             std::string_view group_in) {
    if (!engine_.policy().with_passwords) return disabled();
    // refused by configuration, whatever the address: before an Argon2id hash is spent on it
    if (!engine_.policy().with_email) return Error{Code::EmailDisabled, "sign-in by email is not enabled"};
    if (!engine_.policy().allow_registration) return Error{Code::RegistrationDisabled, "registration is not enabled"};
    auto email = normalize_email(email_in);
    if (!email) return Error{Code::InvalidEmail, "that is not an email address"};
    auto group = normalize_group(group_in);
    if (!group) return Error{Code::InvalidRequest, "invalid group"};
    return detail::guarded("password registration", [&]() -> Result<std::string> {
        auto nfc = check_new_password(pw.reveal());
        if (!nfc) return nfc.error();
        Secret held(std::move(nfc.value()));
        if (Millis wait = limiter_->register_attempt(address_key(*email, *group), engine_.now())) {
            return rate_limited(wait);
        }
        // hashed whether or not the address has an account, so the answer takes the same time
        auto h = password::hash(held.reveal(), engine_.policy().password_hash);
        if (!h) return h.error();
        return std::move(h.value());
    });
}

Result<TokenIssue> Passwords::issue_password_registration_hashed(std::string_view email, std::string_view group,
                                                                 std::string_view client,
                                                                 const std::string &password_hash, bool may_send) {
    return detail::guarded("password registration", [&]() -> Result<TokenIssue> {
        return tokens_.issue(Intent::Register, email, group, client, &password_hash, may_send);
    });
}

Result<TokenIssue> Passwords::issue_password_registration(std::string_view email, const Secret &pw,
                                                          std::string_view group, std::string_view client,
                                                          bool may_send) {
    auto hashed = prepare_password_registration(email, pw, group);
    if (!hashed) return hashed.error();
    return issue_password_registration_hashed(email, group, client, hashed.value(), may_send);
}

Status Passwords::register_password_from(std::string_view email, const Secret &pw, std::string_view client,
                                         std::string_view group) {
    return tokens_.deliver_or_cancel(issue_password_registration(email, pw, group, client), client);
}

std::string Passwords::password_epoch(std::string_view email, std::string_view group) {
    auto e = normalize_email(email);
    auto g = normalize_group(group);
    if (!e || !g) return {};
    try {
        auto u = engine_.store_->read()->user_by_email(*g, *e);
        // the tail of the PHC string is the tail of the hash: a new password, a new tail
        if (u && u->password_hash.size() > 16) return u->password_hash.substr(u->password_hash.size() - 16);
    } catch (const StoreError &) {
        // the attempt counters then key by address and client alone
    }
    return {};
}

Result<PasswordLoginCheck> Passwords::check_password_login(std::string_view email_in, const Secret &pw,
                                                          std::string_view client, SessionKind kind,
                                                          std::string_view user_agent, std::string_view group_in) {
    if (!engine_.policy().with_passwords) return disabled();
    auto email = normalize_email(email_in);
    if (!email) return Error{Code::InvalidEmail, "that is not an email address"};
    auto group = normalize_group(group_in);
    if (!group) return Error{Code::InvalidRequest, "invalid group"};
    return detail::guarded("password sign-in", [&]() -> Result<PasswordLoginCheck> {
        PasswordLoginCheck c;
        c.at_ = engine_.now();
        c.key_ = address_key(*email, *group);
        if (Millis wait = limiter_->login_attempt(c.key_, client, c.at_)) return rate_limited(wait);
        c.email_ = *email;
        c.client_ = std::string(client);
        c.user_agent_ = std::string(user_agent);
        c.kind_ = kind;

        // Passwords are compared in NFC, untrimmed; one that could never have been set still
        // costs a full verification.
        std::optional<std::string> nfc;
        if (pw.reveal().size() <= password::kMaxBytes * 4) nfc = password::normalize_nfc(pw.reveal());
        const bool well_formed = nfc && nfc->size() <= password::kMaxBytes;
        Secret candidate(nfc ? std::move(*nfc) : std::string());

        c.user_ = engine_.store_->read()->user_by_email(*group, *email);
        const bool usable = well_formed && c.user_ && !c.user_->suspended && !c.user_->password_hash.empty();
        const std::string &phc = usable ? c.user_->password_hash : password::dummy_hash(engine_.policy().password_hash);
        c.matched_ = password::verify(phc, candidate.reveal()) && usable;
        if (!c.matched_) {
            limiter_->login_failed(c.key_, client, engine_.now());  // the wait starts when the failure is known
            return c;
        }
        // A hash made with other settings is upgraded now that the password is known.
        if (password::needs_rehash(c.user_->password_hash, engine_.policy().password_hash)) {
            auto h = password::hash(candidate.reveal(), engine_.policy().password_hash);
            if (h) c.rehashed_ = std::move(h.value());
        }
        return c;
    });
}

Result<SignInStep> Passwords::finish_password_login(const PasswordLoginCheck &c, const BrowserCookies *browser) {
    return detail::guarded("password sign-in", [&]() -> Result<SignInStep> {
        auto txn = engine_.store_->write();
        if (!c.matched_) {
            if (c.user_) {
                const char *why = c.user_->suspended                 ? "suspended"
                                  : c.user_->password_hash.empty() ? "no_password"
                                                                  : "wrong_password";
                txn->append_audit(detail::audit(c.at_, "login.failed", c.email_, c.client_, c.user_->id, why));
            } else {
                txn->append_audit(detail::audit(c.at_, "login.unknown_address", c.email_, c.client_));
            }
            txn->commit();
            return invalid_credentials();
        }
        auto fresh = c.user_ ? txn->user_by_id(c.user_->id) : std::nullopt;
        if (!fresh || fresh->suspended || fresh->password_hash != c.user_->password_hash) {
            return invalid_credentials();  // changed while we verified: the old password no longer counts
        }
        const Millis now = engine_.now();
        if (c.rehashed_) {
            fresh->password_hash = *c.rehashed_;
            fresh->updated_at = now;
            txn->put_user(*fresh);
            txn->append_audit(detail::audit(now, "password.rehashed", fresh->email, c.client_, fresh->id));
        }
        SignInStep step = engine_.sign_in(*txn, *fresh, c.kind_, SignInMethod::Password, c.client_, c.user_agent_,
                                          now, "password:" + std::string(kind_name(c.kind_)), browser);
        txn->commit();
        limiter_->login_succeeded(c.key_, c.client_);
        return step;
    });
}

Result<SignInStep> Passwords::login_password_step(std::string_view email, const Secret &pw, std::string_view client,
                                                  SessionKind kind, std::string_view user_agent,
                                                  std::string_view group, const BrowserCookies *browser) {
    auto check = check_password_login(email, pw, client, kind, user_agent, group);
    if (!check) return check.error();
    return finish_password_login(check.value(), browser);
}

Result<Session> Passwords::login_password_from(std::string_view email, const Secret &pw, std::string_view client,
                                               SessionKind kind, std::string_view user_agent,
                                               std::string_view group) {
    auto step = login_password_step(email, pw, client, kind, user_agent, group);
    if (!step) return step.error();
    if (!step->signed_in() || !step->session) {
        return Error{Code::MfaRequired, "this account has a second factor: use login_password_step and /mfa/verify"};
    }
    return std::move(*step->session);
}

Result<PasswordUpdate> Passwords::prepare_set_password(const Principal &p, const Secret &pw) {
    if (!engine_.policy().with_passwords) return disabled();
    const Millis now = engine_.now();
    if (!detail::is_fresh(engine_.policy(), p.session, now)) {
        return detail::fresh_required(engine_.policy(), "setting a password", ": sign in with a code again, then set it");
    }
    return detail::guarded("set password", [&]() -> Result<PasswordUpdate> {
        auto nfc = check_new_password(pw.reveal());
        if (!nfc) return nfc.error();
        Secret held(std::move(nfc.value()));
        auto h = password::hash(held.reveal(), engine_.policy().password_hash);
        if (!h) return h.error();
        PasswordUpdate u;
        u.new_hash_ = std::move(h.value());
        return u;
    });
}

Status Passwords::store_set_password(const Principal &p, const PasswordUpdate &u, std::string_view client) {
    if (!engine_.policy().with_passwords) return disabled();
    return detail::guarded("set password", [&]() -> Status {
        auto txn = engine_.store_->write();
        auto user = txn->user_by_id(p.user.id);
        if (!user || user->suspended || !txn->session(p.session.hash)) {
            return Error{Code::Unauthenticated, "not signed in"};
        }
        const bool had = !user->password_hash.empty();
        user->password_hash = u.new_hash_;
        user->updated_at = engine_.now();
        txn->put_user(*user);
        detail::end_sessions_except(*txn, user->id, p.session.hash, user->updated_at, "password_changed");
        engine_.forget_devices(*txn, *user, client, user->updated_at);  // a new password ends every remembered device
        txn->append_audit(detail::audit(user->updated_at, had ? "password.reset" : "password.set", user->email,
                                        client, user->id));
        txn->commit();
        limiter_->reset_address(address_key(user->email, user->group_id));
        return ok_status();
    });
}

Status Passwords::set_password(const Principal &p, const Secret &pw, std::string_view client) {
    auto update = prepare_set_password(p, pw);
    if (!update) return update.error();
    return store_set_password(p, update.value(), client);
}

Result<PasswordUpdate> Passwords::check_password_change(const Principal &p, const Secret &current, const Secret &next,
                                                        std::string_view client) {
    if (!engine_.policy().with_passwords) return disabled();
    return detail::guarded("change password", [&]() -> Result<PasswordUpdate> {
        const Millis now = engine_.now();
        auto user = engine_.store_->read()->user_by_id(p.user.id);
        if (!user || user->suspended) return Error{Code::Unauthenticated, "not signed in"};
        if (user->password_hash.empty()) {
            return Error{Code::NoPassword,
                         "this account has no password to change: set one from a fresh sign-in with POST /password"};
        }
        PasswordUpdate u;
        const std::string key = address_key(user->email, user->group_id);
        if (Millis wait = limiter_->login_attempt(key, client, now)) return rate_limited(wait);
        std::optional<std::string> cur;
        if (current.reveal().size() <= password::kMaxBytes * 4) cur = password::normalize_nfc(current.reveal());
        Secret cur_held(cur ? std::move(*cur) : std::string());
        if (!cur || !password::verify(user->password_hash, cur_held.reveal())) {
            limiter_->login_failed(key, client, engine_.now());
            u.wrong_current_ = true;
            return u;
        }
        limiter_->login_succeeded(key, client);
        u.verified_hash_ = user->password_hash;
        auto nfc = check_new_password(next.reveal());
        if (!nfc) return nfc.error();
        Secret held(std::move(nfc.value()));
        auto h = password::hash(held.reveal(), engine_.policy().password_hash);
        if (!h) return h.error();
        u.new_hash_ = std::move(h.value());
        return u;
    });
}

Result<PasswordChange> Passwords::store_password_change(const Principal &p, const PasswordUpdate &u,
                                                        std::string_view client) {
    if (!engine_.policy().with_passwords) return disabled();
    return detail::guarded("change password", [&]() -> Result<PasswordChange> {
        const Millis now = engine_.now();
        auto txn = engine_.store_->write();
        auto fresh = txn->user_by_id(p.user.id);
        if (u.wrong_current_) {
            if (fresh) {
                txn->append_audit(detail::audit(now, "login.failed", fresh->email, client, fresh->id, "password_change"));
                txn->commit();
            }
            return Error{Code::WrongPassword, "the current password is not right"};
        }
        if (!fresh || fresh->suspended || !txn->session(p.session.hash)) {
            return Error{Code::Unauthenticated, "not signed in"};
        }
        if (fresh->password_hash != u.verified_hash_) {
            return Error{Code::WrongPassword, "the password was changed meanwhile; try again"};
        }
        fresh->password_hash = u.new_hash_;
        fresh->updated_at = now;
        txn->put_user(*fresh);
        detail::end_sessions_except(*txn, fresh->id, p.session.hash, now, "password_changed");
        engine_.forget_devices(*txn, *fresh, client, now);  // a new password ends every remembered device
        txn->append_audit(detail::audit(fresh->updated_at, "password.changed", fresh->email, client, fresh->id));
        PasswordChange out;
        out.notice.email = fresh->email;
        out.notice.purpose = Purpose::PasswordChanged;  // a notice: its token is empty
        out.notice.group_id = fresh->group_id;
        out.notice.lang = detail::notice_language(*fresh);
        out.outbox_key = engine_.enqueue(*txn, out.notice, client, now);
        txn->commit();
        return out;
    });
}

Result<PasswordChange> Passwords::change_password(const Principal &p, const Secret &current, const Secret &next,
                                                  std::string_view client) {
    auto update = check_password_change(p, current, next, client);
    if (!update) return update.error();
    return store_password_change(p, update.value(), client);
}

Status Passwords::change_password_from(const Principal &p, const Secret &current, const Secret &next,
                                       std::string_view client) {
    auto changed = change_password(p, current, next, client);
    if (!changed) return changed.error();
    (void)engine_.forget_outbox(changed->outbox_key);  // delivered here, not also from the outbox
    (void)engine_.deliver(changed->notice);  // the password is changed whether or not it arrives
    return ok_status();
}

}  // namespace signin
