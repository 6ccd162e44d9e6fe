// The sign-in engine: token issue and exchange, sessions, origin rules (SPEC §3, §5).
#include "signin/auth.hpp"

#include <sodium.h>

#include <algorithm>
#include <chrono>

#include "core/encoding.hpp"
#include "core/engine_detail.hpp"

namespace signin {
namespace {

class SystemClock final : public Clock {
public:
    Millis now() const override {
        using namespace std::chrono;
        return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
    }
};

std::string_view intent_name(Intent i) { return i == Intent::Register ? "register" : "login"; }

}  // namespace

std::string secret_hash(std::string_view secret) {
    std::string out(crypto_generichash_BYTES, '\0');
    crypto_generichash(reinterpret_cast<unsigned char *>(out.data()), out.size(),
                       reinterpret_cast<const unsigned char *>(secret.data()), secret.size(), nullptr, 0);
    return out;
}

bool plausible_secret(std::string_view text) {
    if (text.size() != 43) return false;  // 32 random bytes, base64url without padding
    return std::all_of(text.begin(), text.end(), [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
               c == '_';
    });
}

Identity::Identity(std::shared_ptr<Store> store, Origin origin, Policy policy, DeliveryFn deliver,
                   std::shared_ptr<const Clock> clock)
    : store_(std::move(store)),
      origin_(std::move(origin)),
      policy_(policy),
      deliver_(std::move(deliver)),
      clock_(clock ? std::move(clock) : std::make_shared<SystemClock>()),
      limiter_(std::make_shared<MemoryAttemptLimiter>(policy_.attempts)) {
    if (sodium_init() < 0) {
        throw std::runtime_error("libsodium could not be initialised");
    }
}

Millis Identity::now() const { return clock_->now(); }

Result<TokenIssue> Identity::issue_token(Intent intent, std::string_view email, std::string_view group,
                                         std::string_view client, bool may_send) {
    return issue(intent, email, group, client, nullptr, may_send);
}

// A token request; a password registration passes the hash its Registration token keeps.
Result<TokenIssue> Identity::issue(Intent intent, std::string_view email_in, std::string_view group_in,
                                   std::string_view client, const std::string *password_hash, bool may_send) {
    if (!policy_.with_email) return Error{Code::EmailDisabled, "sign-in by email is not enabled"};
    auto email = normalize_email(email_in);
    if (!email) return Error{Code::InvalidEmail, "that is not an email address"};
    auto group = normalize_group(group_in);
    if (!group) return Error{Code::InvalidRequest, "invalid group"};
    if (intent == Intent::Register && !policy_.allow_registration) {
        return Error{Code::RegistrationDisabled, "registration is not enabled"};
    }
    return guarded("token request", [&]() -> Result<TokenIssue> {
        const Millis now = clock_->now();
        auto txn = store_->write();
        auto user = txn->user_by_email(*group, *email);
        std::optional<Purpose> purpose;
        if (intent == Intent::Login) {
            if (user) purpose = Purpose::SignIn;
        } else {
            purpose = user ? Purpose::AlreadyRegistered : Purpose::Registration;
        }
        const std::string uid = user ? user->id : std::string();
        if (!purpose) {
            txn->append_audit(detail::audit(now, "token.requested", *email, client, uid, "login:no_account"));
            txn->commit();
            return TokenIssue{};
        }
        // Expired tokens go; a usable one issued within the resend window means nothing is sent.
        std::vector<TokenRecord> live;
        for (auto &t : txn->tokens_for(*group, *email)) {
            if (t.expires_at <= now) {
                txn->del_token(t.hash);
            } else {
                live.push_back(std::move(t));
            }
        }
        for (const auto &t : live) {
            // A waiting registration token that carries a password someone chose does not stand in
            // for a registration without one (or with another): the owner of the inbox would only
            // get the email that creates the account with that password.
            const bool carries_password = !t.password_hash.empty();
            if (carries_password && (password_hash == nullptr || *password_hash != t.password_hash)) continue;
            if (purpose_signs_in(t.purpose) && now - t.created_at < policy_.token_resend) {
                txn->append_audit(detail::audit(now, "token.requested", *email, client, uid,
                                        std::string(intent_name(intent)) + ":waiting"));
                txn->commit();
                return TokenIssue{};
            }
        }
        // Over the address's send limit: the same answer, nothing sent (SPEC §8 rule 1).
        if (!may_send) {
            txn->append_audit(detail::audit(now, "throttled", *email, client, uid,
                                    "address:" + std::string(intent_name(intent))));
            txn->commit();
            return TokenIssue{};
        }
        // The newest tokens stay valid: keep room for this one among tokens_per_address.
        const std::size_t keep = policy_.tokens_per_address > 0 ? policy_.tokens_per_address - 1 : 0;
        for (std::size_t i = 0; i + keep < live.size(); ++i) txn->del_token(live[i].hash);

        std::string secret = enc::random_secret(32);
        TokenRecord rec;
        rec.hash = secret_hash(secret);
        rec.group_id = *group;
        rec.email = *email;
        rec.purpose = *purpose;
        rec.created_at = now;
        rec.expires_at = now + policy_.token_ttl;
        // only a new address keeps the hash: an existing account's password is never replaced
        if (password_hash && *purpose == Purpose::Registration) rec.password_hash = *password_hash;
        txn->put_token(rec);
        txn->append_audit(detail::audit(now, "token.requested", *email, client, uid,
                                std::string(password_hash ? "password_" : "") + std::string(intent_name(intent)) +
                                    ":" + std::string(purpose_tag(*purpose))));
        txn->commit();
        Delivery d;
        d.email = *email;
        d.token = Secret(std::move(secret));
        d.purpose = *purpose;
        d.group_id = *group;
        d.with_password = !rec.password_hash.empty();
        return TokenIssue{std::move(d)};
    });
}

Status Identity::cancel_token(const Secret &token, std::string_view client) {
    return guarded("cancel token", [&]() -> Status {
        const std::string hash = secret_hash(token.reveal());
        auto txn = store_->write();
        auto t = txn->token(hash);
        if (t) {
            txn->del_token(hash);
            txn->append_audit(detail::audit(clock_->now(), "delivery.failed", t->email, client, {},
                                    purpose_tag(t->purpose)));
            txn->commit();
        }
        return ok_status();
    });
}

Status Identity::request_token_from(Intent intent, std::string_view email, std::string_view group,
                                    std::string_view client) {
    return deliver_or_cancel(issue_token(intent, email, group, client), client);
}

Status Identity::deliver_or_cancel(Result<TokenIssue> issued, std::string_view client) {
    if (!issued) return issued.error();
    if (!issued->delivery) return ok_status();
    Status sent = deliver_ ? deliver_(*issued->delivery)
                           : Status(Error{Code::DeliveryFailed, "no delivery function"});
    if (!sent) {
        auto cancelled = cancel_token(issued->delivery->token, client);
        if (!cancelled) return cancelled.error();
        return Error{Code::DeliveryFailed, "the email could not be delivered: " + sent.error().message};
    }
    return ok_status();
}

Result<Session> Identity::exchange_from(const Secret &token, std::string_view client, SessionKind kind,
                                        std::string_view user_agent) {
    if (!plausible_secret(token.reveal())) return Error{Code::InvalidToken, "the token is not valid"};
    return guarded("token exchange", [&]() -> Result<Session> {
        const Millis now = clock_->now();
        const std::string hash = secret_hash(token.reveal());
        auto txn = store_->write();  // check and spend in one serialized write transaction
        auto t = txn->token(hash);
        if (!t || t->expires_at <= now || !purpose_signs_in(t->purpose)) {
            if (t && t->expires_at <= now) txn->del_token(hash);
            txn->append_audit(detail::audit(now, "token.invalid", t ? t->email : std::string(), client));
            txn->commit();
            return Error{Code::InvalidToken, "the token is not valid"};
        }
        txn->del_token(hash);  // spent, whatever happens next
        auto user = txn->user_by_email(t->group_id, t->email);
        if (!user && t->purpose == Purpose::Registration) {
            User u;
            u.id = enc::uuid7(now);
            u.email = t->email;
            u.group_id = t->group_id;
            u.created_at = now;
            u.updated_at = now;
            u.password_hash = t->password_hash;  // only a password registration carries one
            txn->put_user(u);
            txn->append_audit(detail::audit(now, "user.created", u.email, client, u.id));
            user = std::move(u);
        }
        if (!user) {
            txn->append_audit(detail::audit(now, "token.invalid", t->email, client, {}, "no_account"));
            txn->commit();
            return Error{Code::InvalidToken, "the token is not valid"};
        }
        if (user->suspended) {
            txn->append_audit(detail::audit(now, "login.suspended", user->email, client, user->id));
            txn->commit();
            return Error{Code::Suspended, "this account is suspended"};
        }
        Session out = open_session(*txn, *user, kind, SignInMethod::EmailToken, client, user_agent, now,
                                   std::string(kind_name(kind)));
        txn->commit();
        return out;
    });
}

Session Identity::open_session(WriteTxn &txn, const User &user, SessionKind kind, SignInMethod method,
                               std::string_view client, std::string_view user_agent, Millis now,
                               std::string detail) {
    std::string secret = enc::random_secret(32);
    SessionRecord s;
    s.hash = secret_hash(secret);
    s.id = enc::uuid7(now);
    s.user_id = user.id;
    s.kind = kind;
    s.method = method;
    s.created_at = now;
    s.last_seen_at = now;
    s.expires_at = now + (kind == SessionKind::Bearer ? policy_.bearer_ttl : policy_.session_ttl);
    s.client = std::string(client.substr(0, 64));
    s.user_agent = std::string(user_agent.substr(0, 256));
    txn.put_session(s);
    txn.append_audit(detail::audit(now, "session.created", user.email, client, user.id, detail));
    Session out;
    out.user = user;
    out.token = Secret(std::move(secret));
    out.expires_at = s.expires_at;
    out.id = s.id;
    out.kind = kind;
    return out;
}

Result<Principal> Identity::authenticate_from(const Secret &token, std::string_view, SessionKind kind) {
    if (!plausible_secret(token.reveal())) return Error{Code::Unauthenticated, "not signed in"};
    return guarded("authenticate", [&]() -> Result<Principal> {
        const Millis now = clock_->now();
        auto txn = store_->read();
        auto s = txn->session(secret_hash(token.reveal()));
        if (!s || s->kind != kind || s->expires_at <= now ||
            (kind == SessionKind::Cookie && s->last_seen_at + policy_.session_idle <= now)) {
            return Error{Code::Unauthenticated, "not signed in"};
        }
        auto user = txn->user_by_id(s->user_id);
        if (!user || user->suspended) return Error{Code::Unauthenticated, "not signed in"};
        return Principal{std::move(*user), std::move(*s)};
    });
}

bool Identity::needs_touch(const Principal &p) const {
    return clock_->now() - p.session.last_seen_at >= policy_.session_touch;
}

Status Identity::touch(const Principal &p) {
    return guarded("touch session", [&]() -> Status {
        auto txn = store_->write();
        auto s = txn->session(p.session.hash);
        if (s) {
            s->last_seen_at = clock_->now();
            txn->put_session(*s);
            txn->commit();
        }
        return ok_status();
    });
}

Result<std::vector<SessionInfo>> Identity::sessions(const Principal &p) {
    return guarded("list sessions", [&]() -> Result<std::vector<SessionInfo>> {
        const Millis now = clock_->now();
        auto txn = store_->read();
        std::vector<SessionInfo> out;
        for (auto &s : txn->sessions_of(p.user.id)) {
            if (s.expires_at <= now ||
                (s.kind == SessionKind::Cookie && s.last_seen_at + policy_.session_idle <= now)) {
                continue;
            }
            SessionInfo i;
            i.id = s.id;
            i.created_at = s.created_at;
            i.last_seen_at = s.last_seen_at;
            i.expires_at = s.expires_at;
            i.client = s.client;
            i.user_agent = s.user_agent;
            i.kind = s.kind;
            i.current = s.id == p.session.id;
            i.fresh = s.method == SignInMethod::EmailToken && now - s.created_at < policy_.fresh_window;
            out.push_back(std::move(i));
        }
        std::sort(out.begin(), out.end(),
                  [](const SessionInfo &a, const SessionInfo &b) { return a.created_at > b.created_at; });
        return out;
    });
}

Status Identity::revoke_session(const Principal &p, std::string_view session_id, std::string_view client) {
    return guarded("revoke session", [&]() -> Status {
        auto txn = store_->write();
        auto s = txn->session_by_id(session_id);
        if (!s || s->user_id != p.user.id) {
            return Error{Code::NotFound, "no such session"};  // aborted: nothing written
        }
        txn->del_session(s->hash);
        txn->append_audit(detail::audit(clock_->now(), "session.revoked", p.user.email, client, p.user.id, s->id));
        txn->commit();
        return ok_status();
    });
}

Status Identity::logout(const Principal &p, std::string_view client) {
    return guarded("logout", [&]() -> Status {
        auto txn = store_->write();
        txn->del_session(p.session.hash);
        txn->append_audit(detail::audit(clock_->now(), "logout", p.user.email, client, p.user.id, p.session.id));
        txn->commit();
        return ok_status();
    });
}

Status Identity::check_origin(std::optional<std::string_view> origin, bool cookie_write) const {
    if (!origin) {
        if (cookie_write) return Error{Code::OriginMismatch, "this request needs an origin header"};
        return ok_status();
    }
    if (*origin != origin_.text) return Error{Code::OriginMismatch, "origin not allowed"};
    return ok_status();
}

std::string_view Identity::cookie_name() const {
    return origin_.https ? "__Host-svc_session" : "svc_dev_session";
}

Status Identity::set_suspended(std::string_view group, std::string_view email, bool suspended) {
    auto e = normalize_email(email);
    auto g = normalize_group(group);
    if (!e || !g) return Error{Code::InvalidEmail, "that is not an email address"};
    return guarded("suspend", [&]() -> Status {
        auto txn = store_->write();
        auto u = txn->user_by_email(*g, *e);
        if (!u) return Error{Code::NotFound, "no such account"};
        u->suspended = suspended;
        u->updated_at = clock_->now();
        txn->put_user(*u);
        txn->append_audit(detail::audit(u->updated_at, suspended ? "user.suspended" : "user.restored", u->email,
                                "admin", u->id));
        txn->commit();
        return ok_status();
    });
}

Status Identity::record(const AuditEntry &entry) {
    return guarded("audit", [&]() -> Status {
        auto txn = store_->write();
        AuditEntry e = entry;
        if (e.at == 0) e.at = clock_->now();
        txn->append_audit(e);
        txn->commit();
        return ok_status();
    });
}

Status Identity::write_batch(const std::function<void()> &operations) {
    return guarded("write batch", [&]() -> Status {
        store_->batch(operations);
        return ok_status();
    });
}

Result<std::size_t> Identity::purge_expired(std::size_t budget) {
    return guarded("purge", [&]() -> Result<std::size_t> {
        auto txn = store_->write();
        std::size_t n = txn->purge_expired(clock_->now(), budget);
        txn->commit();
        return n;
    });
}

}  // namespace signin
