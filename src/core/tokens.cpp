// Email tokens: the request (issue and deliver, or cancel) and the exchange for a session
// (a token is spent by its first exchange, even one that then fails).
#include "signin/tokens.hpp"

#include <algorithm>
#include <vector>

#include <sodium.h>

#include "encoding.hpp"
#include "signin/codes.hpp"
#include "engine_detail.hpp"
#include "signin/access.hpp"
#include "signin/i18n.hpp"

namespace signin {
namespace {

std::string_view intent_name(Intent i) { return i == Intent::Register ? "register" : "login"; }

// The stored form of a short code: bound to its address, so a code is only ever tried with it.
std::string code_digest(std::string_view group, std::string_view email, std::string_view code8) {
    std::string in;
    in.reserve(8 + group.size() + email.size() + code8.size());
    in.append("code\0", 5).append(group).push_back('\0');
    in.append(email).push_back('\0');
    in.append(code8);
    std::string out = secret_hash(in);
    sodium_memzero(in.data(), in.size());
    return out;
}

constexpr std::uint8_t kCodeFailures = 5;  // wrong codes for an address that cancel its tokens

// A new token: its record (the secret and the code only as digests) and the email that carries it.
bool is_change(Purpose p) { return p == Purpose::EmailChange || p == Purpose::EmailChangeApproval; }

struct NewToken {
    TokenRecord record;
    Delivery delivery;
};

NewToken new_token(const std::string &group, const std::string &email, Purpose purpose, Millis now,
                   Millis expires_at) {
    NewToken t;
    std::string secret = enc::ordered_secret(now);
    const std::string code = new_code();
    t.record.hash = record_key(secret);
    t.record.group_id = group;
    t.record.email = email;
    t.record.purpose = purpose;
    t.record.created_at = now;
    t.record.expires_at = expires_at;
    t.record.code_hash = code_digest(group, email, code);
    t.delivery.email = email;
    t.delivery.token = Secret(std::move(secret));
    t.delivery.code = format_code(code);
    t.delivery.purpose = purpose;
    t.delivery.group_id = group;
    t.delivery.lang = i18n::RequestLanguage::current();  // the language of the request that asked
    return t;
}

// What the transactions on one address's tokens serialize on (WriteTxn::serialize_on): a token
// request reads them, deletes the oldest and adds one; a typed code counts its failures on them.
std::string address_lock(const std::string &group, const std::string &email) {
    std::string k = "address:";
    k += group;
    k += '\0';
    k += email;
    return k;
}

// What a token request for this address means: a sign-in for an account, a registration for a
// new address, an "already registered" notice for a registration of a known one; none for a
// sign-in without an account.
std::optional<Purpose> purpose_of(Intent intent, bool has_account) {
    if (intent == Intent::Login) return has_account ? std::optional(Purpose::SignIn) : std::nullopt;
    return has_account ? Purpose::AlreadyRegistered : Purpose::Registration;
}

// The address's tokens still usable, oldest first; expired ones are deleted on the way.
std::vector<TokenRecord> live_tokens(WriteTxn &txn, const std::string &group, const std::string &email, Millis now) {
    std::vector<TokenRecord> live;
    for (auto &t : txn.tokens_for(group, email)) {
        if (t.expires_at <= now) {
            txn.del_token(t.hash);
        } else {
            live.push_back(std::move(t));
        }
    }
    return live;
}

// Whether a usable token issued within the resend window stands in for a new one (then nothing
// is sent). A waiting registration token that carries a password someone chose does not stand in
// for a registration without one (or with another): the owner of the inbox would only get the
// email that creates the account with that password.
bool recently_sent(const std::vector<TokenRecord> &live, const std::string *password_hash, const Policy &policy,
                   Millis now) {
    for (const auto &t : live) {
        const bool carries_password = !t.password_hash.empty();
        if (carries_password && (password_hash == nullptr || *password_hash != t.password_hash)) continue;
        if (purpose_signs_in(t.purpose) && now - t.created_at < policy.token_resend) return true;
    }
    return false;
}

}  // namespace

Result<TokenIssue> Tokens::issue_token(Intent intent, std::string_view email, std::string_view group,
                                       std::string_view client, bool may_send, const std::vector<std::string> &roles) {
    return issue(intent, email, group, client, nullptr, may_send, roles);
}

// A token request; a password registration passes the hash its Registration token keeps.
Result<TokenIssue> Tokens::issue(Intent intent, std::string_view email_in, std::string_view group_in,
                                 std::string_view client, const std::string *password_hash, bool may_send,
                                 const std::vector<std::string> &roles_in) {
    const Policy &policy = engine_.policy();
    if (!policy.with_email) return Error{Code::EmailDisabled, "sign-in by email is not enabled"};
    auto email = normalize_email(email_in);
    if (!email) return Error{Code::InvalidEmail, "that is not an email address"};
    auto group = normalize_group(group_in);
    if (!group) return Error{Code::InvalidRequest, "invalid group"};
    if (intent == Intent::Register && !policy.allow_registration) {
        return Error{Code::RegistrationDisabled, "registration is not enabled"};
    }
    std::vector<std::string> roles;
    for (const auto &r : roles_in) {
        auto role = normalize_role(r);
        if (!role) return Error{Code::InvalidRequest, "\"" + r + "\" is not a role ([a-z0-9_-]{1,32})"};
        auto it = std::lower_bound(roles.begin(), roles.end(), *role);
        if (it == roles.end() || *it != *role) roles.insert(it, *role);
    }
    return detail::guarded("token request", [&]() -> Result<TokenIssue> {
        const Millis now = engine_.now();
        auto txn = engine_.store_->write();
        txn->serialize_on(address_lock(*group, *email));
        auto user = txn->user_by_email(*group, *email);
        const std::optional<Purpose> purpose = purpose_of(intent, user.has_value());
        const std::string uid = user ? user->id : std::string();
        // Read by every request, whatever it finds: the same reads whether an email goes out or
        // not (over a network store each read is a round trip, so one more is a timing oracle).
        std::vector<TokenRecord> live = live_tokens(*txn, *group, *email, now);
        // A request that sends nothing writes what one that sends does (a decoy token) and
        // answers the same; only its audit entry tells why.
        auto nothing_sent = [&](const char *kind, const std::string &why) {
            decoy_issue(*txn, *group, *email, client, now);
            txn->append_audit(detail::audit(now, kind, *email, client, uid, why));
            txn->commit();
            return TokenIssue{};
        };
        const std::string intent_tag(intent_name(intent));
        // a new account outside who may join: no email (the address's owner is not told either)
        if (purpose == Purpose::Registration && policy.may_join && !policy.may_join->contains(*email)) {
            return nothing_sent("token.requested", std::string(password_hash ? "password_" : "") + "register:not_allowed");
        }
        if (!purpose) return nothing_sent("token.requested", "login:no_account");
        // a suspended account gets no email at all (its code would not sign in)
        if (user && user->suspended) return nothing_sent("token.requested", intent_tag + ":suspended");
        if (recently_sent(live, password_hash, policy, now)) return nothing_sent("token.requested", intent_tag + ":waiting");
        // Over the address's send limit: the same answer, nothing sent (the limit is the address's).
        if (!may_send) return nothing_sent("throttled", "address:" + intent_tag);
        // The newest tokens stay valid: keep room for this one among tokens_per_address.
        const std::size_t keep = policy.tokens_per_address > 0 ? policy.tokens_per_address - 1 : 0;
        for (std::size_t i = 0; i + keep < live.size(); ++i) txn->del_token(live[i].hash);

        NewToken t = new_token(*group, *email, *purpose, now, now + policy.token_ttl);
        // only a new address keeps the hash: an existing account's password is never replaced
        if (password_hash && *purpose == Purpose::Registration) t.record.password_hash = *password_hash;
        if (*purpose == Purpose::Registration) t.record.roles = roles;
        t.delivery.with_password = !t.record.password_hash.empty();
        txn->put_token(t.record);
        txn->append_audit(detail::audit(now, "token.requested", *email, client, uid,
                                std::string(password_hash ? "password_" : "") + std::string(intent_name(intent)) +
                                    ":" + std::string(purpose_tag(*purpose))));
        // sent with the token, or not at all
        std::string outbox_key = engine_.enqueue(*txn, t.delivery, client, now);
        txn->commit();
        return TokenIssue{std::move(t.delivery), std::move(outbox_key)};
    });
}

std::optional<TokenRecord> Tokens::match_code(WriteTxn &txn, const std::string &group, const std::string &email,
                                              const std::optional<std::string> &code, bool (*accepts)(Purpose),
                                              bool decoy, std::string_view client, Millis now,
                                              std::string_view audit_detail) {
    std::vector<TokenRecord> live;
    for (auto &t : txn.tokens_for(group, email)) {
        if (t.expires_at > now && accepts(t.purpose) && !t.code_hash.empty()) live.push_back(std::move(t));
    }
    if (code) {
        const std::string digest = code_digest(group, email, *code);
        for (auto &t : live) {
            if (sodium_memcmp(t.code_hash.data(), digest.data(), digest.size()) == 0) return std::move(t);
        }
    }
    // A wrong code: counted on the address's tokens; the fifth cancels them all.
    bool locked = false;
    for (auto &t : live) {
        t.code_failures = static_cast<std::uint8_t>(t.code_failures + 1);
        locked = locked || t.code_failures >= kCodeFailures;
        txn.put_token(t);
    }
    if (live.empty() && decoy) decoy_issue(txn, group, email, client, now);
    if (locked) {
        for (const auto &t : live) txn.del_token(t.hash);
    }
    txn.append_audit(detail::audit(now, locked ? "code.locked" : "token.invalid", email, client, {}, audit_detail));
    txn.commit();
    return std::nullopt;
}

void Tokens::decoy_issue(WriteTxn &txn, const std::string &group, const std::string &email, std::string_view client,
                         Millis now) {
    // expires at once: never usable, even for the instant it exists; and leaves nothing behind,
    // so that requests for addresses nobody owns (anyone can make them) cannot fill the store
    const NewToken t = new_token(group, email, Purpose::SignIn, now, now);
    txn.put_token(t.record);
    const std::string key = engine_.enqueue(txn, t.delivery, client, now);
    if (!key.empty()) txn.del_outbox(key);
    txn.discard_token(t.record);
}

Result<TokenIssue> Tokens::invite(std::string_view email_in, std::string_view group_in,
                                  const std::vector<std::string> &roles_in, bool send, std::string_view client) {
    auto email = normalize_email(email_in);
    if (!email) return Error{Code::InvalidEmail, "that is not an email address"};
    auto group = normalize_group(group_in);
    if (!group) return Error{Code::InvalidRequest, "invalid group"};
    std::vector<std::string> roles;
    for (const auto &r : roles_in) {
        auto role = normalize_role(r);
        if (!role) return Error{Code::InvalidRequest, "\"" + r + "\" is not a role ([a-z0-9_-]{1,32})"};
        roles.push_back(*role);
    }
    return detail::guarded("invite", [&]() -> Result<TokenIssue> {
        const Millis now = engine_.now();
        auto txn = engine_.store_->write();
        auto user = txn->user_by_email(*group, *email);
        const bool existed = user.has_value();
        if (!user) {
            User u;
            u.id = enc::uuid7(now);
            u.email = *email;
            u.group_id = *group;
            u.created_at = now;
            u.pending = true;  // until its first sign-in
            user = std::move(u);
        }
        for (const auto &role : roles) {
            auto it = std::lower_bound(user->roles.begin(), user->roles.end(), role);
            if (it == user->roles.end() || *it != role) user->roles.insert(it, role);
        }
        user->updated_at = now;
        if (existed) txn->put_user(*user);
        else txn->add_user(*user);
        txn->append_audit(detail::audit(now, "user.invited", *email, client, user->id, existed ? "existing" : "new"));
        TokenIssue out;
        if (send) {
            NewToken t = new_token(*group, *email, Purpose::Invitation, now, now + engine_.policy().token_ttl);
            txn->put_token(t.record);
            out.outbox_key = engine_.enqueue(*txn, t.delivery, client, now);
            out.delivery = std::move(t.delivery);
        }
        txn->commit();
        return out;
    });
}

Status Tokens::cancel_token(const Secret &token, std::string_view client) {
    return detail::guarded("cancel token", [&]() -> Status {
        const std::string hash = record_key(token.reveal());
        auto txn = engine_.store_->write();
        auto t = txn->token(hash);
        if (t) {
            txn->del_token(t->hash);  // where it was found (a record of an earlier build has the shorter key)
            txn->append_audit(detail::audit(engine_.now(), "delivery.failed", t->email, client, {},
                                    purpose_tag(t->purpose)));
            txn->commit();
        }
        return ok_status();
    });
}

Status Tokens::request_token_from(Intent intent, std::string_view email, std::string_view group,
                                  std::string_view client) {
    return deliver_or_cancel(issue_token(intent, email, group, client), client);
}

Status Tokens::deliver_or_cancel(Result<TokenIssue> issued, std::string_view client) {
    if (!issued) return issued.error();
    if (!issued->delivery) return ok_status();
    // delivered here, by the caller's function: not also from the outbox
    if (auto forgot = engine_.forget_outbox(issued->outbox_key); !forgot) return forgot.error();
    Status sent = engine_.deliver(*issued->delivery);
    if (!sent) {
        auto cancelled = cancel_token(issued->delivery->token, client);
        if (!cancelled) return cancelled.error();
        return Error{Code::DeliveryFailed, "the email could not be delivered: " + sent.error().message};
    }
    return ok_status();
}

namespace {

// The Session of a step, for the operations made for apps without second factors: email alone
// never signs in a user who has one (the token is spent all the same).
Result<Session> session_of(Result<SignInStep> step) {
    if (!step) return step.error();
    if (!step->signed_in() || !step->session) {
        return Error{Code::MfaRequired, "this account has a second factor: use the step operations and /mfa/verify"};
    }
    return std::move(*step->session);
}

}  // namespace

Result<Session> Tokens::exchange_from(const Secret &token, std::string_view client, SessionKind kind,
                                      std::string_view user_agent) {
    return session_of(exchange_step_from(token, client, kind, user_agent));
}

Result<Session> Tokens::exchange_code_from(std::string_view email, std::string_view code, std::string_view group,
                                           std::string_view client, SessionKind kind, std::string_view user_agent) {
    return session_of(exchange_code_step_from(email, code, group, client, kind, user_agent));
}

void Tokens::read_ahead(const std::vector<std::string> &keys) noexcept {
    try {
        engine_.store_->read_tokens_ahead(keys);
    } catch (...) {
        // a failed read spoils the batch's run: it runs again, each write reading for itself
    }
}

Result<SignInStep> Tokens::exchange_step_from(const Secret &token, std::string_view client, SessionKind kind,
                                              std::string_view user_agent, const BrowserCookies *browser) {
    if (!plausible_secret(token.reveal())) return Error{Code::InvalidToken, "the token is not valid"};
    return detail::guarded("token exchange", [&]() -> Result<SignInStep> {
        const Millis now = engine_.now();
        const std::string hash = record_key(token.reveal());
        auto txn = engine_.store_->write();  // check and spend in one serialized write transaction
        auto t = txn->token(hash);
        if (!t || t->expires_at <= now || !purpose_signs_in(t->purpose)) {
            if (t && t->expires_at <= now) txn->del_token(t->hash);
            txn->append_audit(detail::audit(now, "token.invalid", t ? t->email : std::string(), client));
            txn->commit();
            return Error{Code::InvalidToken, "the token is not valid"};
        }
        return spend(*txn, *t, client, kind, user_agent, now, browser);
    });
}

Result<SignInStep> Tokens::exchange_code_step_from(std::string_view email_in, std::string_view typed_code,
                                                   std::string_view group_in, std::string_view client,
                                                   SessionKind kind, std::string_view user_agent,
                                                   const BrowserCookies *browser) {
    auto email = normalize_email(email_in);
    if (!email) return Error{Code::InvalidEmail, "that is not an email address"};
    auto group = normalize_group(group_in);
    if (!group) return Error{Code::InvalidRequest, "invalid group"};
    auto code = normalize_code(typed_code);
    return detail::guarded("code exchange", [&]() -> Result<SignInStep> {
        const Millis now = engine_.now();
        auto txn = engine_.store_->write();
        txn->serialize_on(address_lock(*group, *email));
        // an address with no token waiting gets the same writes (a decoy): the time of the answer
        // does not tell whether one is waiting
        auto t = match_code(*txn, *group, *email, code, purpose_signs_in, true, client, now, "code");
        if (t) return spend(*txn, *t, client, kind, user_agent, now, browser);
        return Error{Code::InvalidToken, "the code is not valid"};
    });
}

// Spends t (it is gone whatever happens next) and opens a session, or the second-factor step;
// the caller's transaction.
Result<SignInStep> Tokens::spend(WriteTxn &txn, const TokenRecord &t, std::string_view client, SessionKind kind,
                                 std::string_view user_agent, Millis now, const BrowserCookies *browser) {
    txn.del_token(t.hash);  // spent, whatever happens next
    auto user = txn.user_by_email(t.group_id, t.email);
    if (!user && t.purpose == Purpose::Registration) {
        User u;
        u.id = enc::uuid7(now);
        u.email = t.email;
        u.group_id = t.group_id;
        u.created_at = now;
        u.updated_at = now;
        u.password_hash = t.password_hash;  // only a password registration carries one
        u.roles = t.roles;                  // what the registration check gave it, if anything
        txn.add_user(u);
        txn.append_audit(detail::audit(now, "user.created", u.email, client, u.id));
        user = std::move(u);
    }
    if (!user) {
        txn.append_audit(detail::audit(now, "token.invalid", t.email, client, {}, "no_account"));
        txn.commit();
        return Error{Code::InvalidToken, "the token is not valid"};
    }
    if (user->suspended) {
        txn.append_audit(detail::audit(now, "login.suspended", user->email, client, user->id));
        txn.commit();
        return Error{Code::Suspended, "this account is suspended"};
    }
    SignInStep out = engine_.sign_in(txn, *user, kind, SignInMethod::EmailToken, client, user_agent, now,
                                     std::string(kind_name(kind)), browser);
    txn.commit();
    return out;
}

// ---- email change: a token to the new address, a notice to the old ----------------------------

Result<EmailChangeIssue> Tokens::request_email_change(const Principal &p, std::string_view new_email_in,
                                                      std::string_view client) {
    auto new_email = normalize_email(new_email_in);
    if (!new_email) return Error{Code::InvalidEmail, "that is not an email address"};
    return detail::guarded("email change", [&]() -> Result<EmailChangeIssue> {
        const Millis now = engine_.now();
        auto txn = engine_.store_->write();
        auto user = txn->user_by_id(p.user.id);
        if (!user || user->suspended || !txn->session(p.session.hash)) {
            return Error{Code::Unauthenticated, "not signed in"};
        }
        if (*new_email == user->email) return Error{Code::InvalidRequest, "that is already the account's address"};
        // An account a provider made without an address gets its first one: there is no old
        // address to approve, so only the new one confirms (its token is the second half).
        const bool first_address = user->email.empty();
        // any change asked before is replaced: its tokens go
        for (const std::string &addr : {user->email, *new_email}) {
            if (addr.empty()) continue;
            for (const auto &t : txn->tokens_for(user->group_id, addr)) {
                if (is_change(t.purpose) && t.user_id == user->id) txn->del_token(t.hash);
            }
        }
        const Millis expires = now + engine_.policy().token_ttl;
        NewToken to_new = new_token(user->group_id, *new_email, Purpose::EmailChange, now, expires);
        NewToken to_old = new_token(user->group_id, user->email, Purpose::EmailChangeApproval, now, expires);
        for (NewToken *t : {&to_new, &to_old}) {
            t->record.user_id = user->id;
            t->record.old_email = user->email;
            t->record.new_email = *new_email;
            t->record.session_id = p.session.id;
        }
        EmailChangeIssue out;
        if (first_address) {
            to_new.record.pair_spent = true;
            txn->put_token(to_new.record);
        } else {
            to_new.record.pair_hash = to_old.record.hash;
            to_old.record.pair_hash = to_new.record.hash;
            txn->put_token(to_new.record);
            txn->put_token(to_old.record);
        }
        txn->append_audit(detail::audit(now, "email.change_requested", user->email, client, user->id, *new_email));
        out.to_new.outbox_key = engine_.enqueue(*txn, to_new.delivery, client, now);
        if (!first_address) out.to_old.outbox_key = engine_.enqueue(*txn, to_old.delivery, client, now);
        txn->commit();
        out.to_new.delivery = std::move(to_new.delivery);
        if (!first_address) out.to_old.delivery = std::move(to_old.delivery);
        return out;
    });
}

Result<EmailChangeStep> Tokens::confirm_email_change(const Secret &token, std::string_view client) {
    if (!plausible_secret(token.reveal())) return Error{Code::InvalidToken, "the code is not valid"};
    return detail::guarded("email change", [&]() -> Result<EmailChangeStep> {
        const Millis now = engine_.now();
        auto txn = engine_.store_->write();
        auto t = txn->token(record_key(token.reveal()));
        if (!t || t->expires_at <= now || !is_change(t->purpose)) {
            if (t && t->expires_at <= now) txn->del_token(t->hash);
            txn->append_audit(detail::audit(now, "token.invalid", t ? t->email : std::string(), client, {}, "email_change"));
            txn->commit();
            return Error{Code::InvalidToken, "the code is not valid"};
        }
        return spend_change(*txn, *t, client, now);
    });
}

Result<EmailChangeStep> Tokens::confirm_email_change_code(std::string_view email_in, std::string_view typed_code,
                                                          std::string_view group_in, std::string_view client) {
    auto email = normalize_email(email_in);
    if (!email) return Error{Code::InvalidEmail, "that is not an email address"};
    auto group = normalize_group(group_in);
    if (!group) return Error{Code::InvalidRequest, "invalid group"};
    auto code = normalize_code(typed_code);
    return detail::guarded("email change", [&]() -> Result<EmailChangeStep> {
        const Millis now = engine_.now();
        auto txn = engine_.store_->write();
        txn->serialize_on(address_lock(*group, *email));
        auto t = match_code(*txn, *group, *email, code, is_change, false, client, now, "email_change");
        if (t) return spend_change(*txn, *t, client, now);
        return Error{Code::InvalidToken, "the code is not valid"};
    });
}

Result<EmailChangeStep> Tokens::spend_change(WriteTxn &txn, const TokenRecord &t, std::string_view client, Millis now) {
    txn.del_token(t.hash);  // spent, whatever happens next
    const char *half = t.purpose == Purpose::EmailChange ? "confirmed" : "approved";
    auto user = txn.user_by_id(t.user_id);
    auto fail = [&](Code code, const char *why, std::string message) -> Result<EmailChangeStep> {
        // the change is over (an account's first address has no other half)
        if (auto other = t.pair_hash.empty() ? std::nullopt : txn.token(t.pair_hash)) txn.del_token(other->hash);
        txn.append_audit(detail::audit(now, "email.change_failed", t.old_email, client, t.user_id, why));
        txn.commit();
        return Error{code, std::move(message)};
    };
    if (!user || user->suspended || user->email != t.old_email) {
        return fail(Code::InvalidToken, "account_changed", "this change is no longer possible: ask again");
    }
    if (!t.pair_spent) {
        auto other = txn.token(t.pair_hash);
        if (!other || other->expires_at <= now) {
            return fail(Code::InvalidToken, "other_half_expired", "this change has expired: ask again");
        }
        other->pair_spent = true;
        txn.put_token(*other);
        txn.append_audit(detail::audit(now, std::string("email.change_") + half, user->email, client, user->id,
                                       t.new_email));
        txn.commit();
        EmailChangeStep out;
        out.status = half;
        return out;
    }
    // the second half: the change itself
    if (auto taken = txn.user_by_email(user->group_id, t.new_email); taken && taken->id != user->id) {
        return fail(Code::EmailTaken, "taken", "the new address has an account of its own now");
    }
    const std::string old_email = user->email;
    user->email = t.new_email;
    user->updated_at = now;
    txn.put_user(*user);
    auto asker = txn.session_by_id(t.session_id);
    detail::end_sessions_except(txn, user->id, asker ? asker->hash : std::string(), now, "email_changed");
    if (!old_email.empty()) {
        for (const auto &old : txn.tokens_for(user->group_id, old_email)) txn.del_token(old.hash);
    }
    txn.append_audit(detail::audit(now, "email.changed", t.new_email, client, user->id,
                                   old_email.empty() ? "the account's first address" : "from " + old_email));
    EmailChangeStep out;
    out.status = "changed";
    out.new_email = t.new_email;
    if (!old_email.empty()) {  // the notice to the address that was
        out.notice.delivery = Delivery{};
        out.notice.delivery->email = old_email;
        out.notice.delivery->purpose = Purpose::EmailChanged;  // a notice: no token
        out.notice.delivery->group_id = user->group_id;
        out.notice.delivery->lang = detail::notice_language(*user);
        out.notice.outbox_key = engine_.enqueue(txn, *out.notice.delivery, client, now);
    }
    txn.commit();
    return out;
}

}  // namespace signin
