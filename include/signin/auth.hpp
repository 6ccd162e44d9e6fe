// The sign-in engine: SPEC §4 "Operations without HTTP". No exceptions cross this API; every
// operation returns a Result. Thread-safe: one Identity serves every thread of a process.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "signin/password.hpp"
#include "signin/store.hpp"
#include "signin/types.hpp"

namespace signin {

class Clock {
public:
    virtual ~Clock() = default;
    virtual Millis now() const = 0;
};

// Every limit of SPEC §8 with the spec's value as default (DESIGN §3 rule 8).
struct Policy {
    Millis token_ttl = 10 * 60 * 1000;          // a token is valid ten minutes
    unsigned tokens_per_address = 3;            // the three most recent stay valid
    Millis token_resend = 60 * 1000;            // "usable token already waiting" window
    Millis session_ttl = 30LL * 24 * 3600 * 1000;
    Millis session_idle = 7LL * 24 * 3600 * 1000;
    Millis session_touch = 60 * 1000;           // last_seen_at is written at most this often
    Millis bearer_ttl = 3600 * 1000;
    Millis fresh_window = 10 * 60 * 1000;       // a fresh session for POST /password
    bool allow_registration = false;            // auth.allow_registration
    bool with_email = true;                     // off = auth.new_without_email
    bool with_passwords = false;                // auth.with_passwords
    unsigned password_min_length = password::kDefaultMinLength;  // code points; not below 8
    password::HashParams password_hash;         // Argon2id 19 MiB, 2 iterations
    AttemptLimits attempts;                     // the default limiter's numbers (SPEC §8)
};

// A configured origin: "https://app.example.com" or a loopback "http://127.0.0.1:8080".
struct Origin {
    std::string text;  // normalized: lowercase scheme and host, no default port, no trailing slash
    bool https = false;
    bool loopback = false;
};
// Parses and normalizes an origin; nullopt with `why` set when it is not one (an http origin
// that is not loopback is refused: its session cookie could not be Secure).
std::optional<Origin> parse_origin(std::string_view text, std::string *why);

// Lowercased, validated address, or nullopt.
std::optional<std::string> normalize_email(std::string_view email);
// "" → "default"; otherwise [a-z0-9][a-z0-9._-]{0,63}, or nullopt.
std::optional<std::string> normalize_group(std::string_view group);

// Caller-supplied delivery (auth.Delivery). An error cancels the token.
using DeliveryFn = std::function<Status(const Delivery &)>;

// What the first half of a token request decided: a delivery to make, or nothing to send.
struct TokenIssue {
    std::optional<Delivery> delivery;
};

// auth.login_password_step: where a password sign-in stands. Second factors are a later issue:
// then a user with one gets SecondFactorPending (no session yet) and passes the factor to finish.
struct SignInStep {
    enum class State : std::uint8_t { SignedIn = 1, SecondFactorPending = 2 };
    State state = State::SignedIn;
    std::optional<Session> session;  // set when SignedIn
    std::string pending_user_id;     // set when SecondFactorPending
    bool signed_in() const { return state == State::SignedIn; }
};

// What a password change decided: the PasswordChanged notice to deliver (its token is empty).
struct PasswordChange {
    Delivery notice;
};

class Identity;

// The Argon2id half of a password sign-in (Identity::check_password_login): what the verify found.
// It holds no password, only what the write half (finish_password_login) needs. Only Identity
// makes or reads one: a caller cannot forge a "matched" check to open a session.
class PasswordLoginCheck {
public:
    bool matched() const { return matched_; }

private:
    friend class Identity;
    bool matched_ = false;
    Millis at_ = 0;
    std::string key_, email_, client_, user_agent_;  // key_: the attempt limiter's name of the address
    SessionKind kind_ = SessionKind::Cookie;
    std::optional<User> user_;             // the account as it was verified, when there is one
    std::optional<std::string> rehashed_;  // its password hashed again with the current settings
};

// The Argon2id half of set_password and change_password (prepare_set_password,
// check_password_change): the new hash, or (change) a wrong `current` to record. Only Identity
// makes or reads one.
class PasswordUpdate {
private:
    friend class Identity;
    bool wrong_current_ = false;  // change: `current` did not match; the write half audits it
    std::string verified_hash_;   // change: the hash `current` matched; the write refuses if it moved
    std::string new_hash_;
};

class Identity {
public:
    Identity(std::shared_ptr<Store> store, Origin origin, Policy policy, DeliveryFn deliver = {},
             std::shared_ptr<const Clock> clock = nullptr);

    const Policy &policy() const { return policy_; }
    const Origin &origin() const { return origin_; }
    Millis now() const;

    // auth.request_token_from: issues a token and calls the delivery function; a delivery error
    // cancels the token and is returned as Code::DeliveryFailed. Unknown address on Login, or a
    // usable token already waiting: nothing is sent and the result is success.
    Status request_token_from(Intent intent, std::string_view email, std::string_view group,
                              std::string_view client);
    Status request_token(Intent intent, std::string_view email, std::string_view group) {
        return request_token_from(intent, email, group, {});
    }

    // The two halves of request_token_from, for transports that deliver asynchronously.
    // may_send = false: the address is over its send limit (SPEC §8 rule 1, decided by the
    // transport's throttle): the same reads, writes and answer as a send, but no token is made,
    // nothing is delivered, and the audit trail records `throttled`.
    Result<TokenIssue> issue_token(Intent intent, std::string_view email, std::string_view group,
                                   std::string_view client, bool may_send = true);
    Status cancel_token(const Secret &token, std::string_view client);

    // auth.exchange_from: spends the token (even when the exchange then fails) and makes a
    // session of `kind`. Registration tokens create the account here.
    Result<Session> exchange_from(const Secret &token, std::string_view client,
                                  SessionKind kind = SessionKind::Cookie,
                                  std::string_view user_agent = {});
    Result<Session> exchange(const Secret &token, SessionKind kind = SessionKind::Cookie) {
        return exchange_from(token, {}, kind, {});
    }

    // auth.authenticate_from: the principal behind a live session token of `kind`. Read-only.
    Result<Principal> authenticate_from(const Secret &token, std::string_view client,
                                        SessionKind kind = SessionKind::Cookie);
    // Whether last_seen_at is old enough to be written again, and the write itself.
    bool needs_touch(const Principal &p) const;
    Status touch(const Principal &p);

    Result<std::vector<SessionInfo>> sessions(const Principal &p);
    Status revoke_session(const Principal &p, std::string_view session_id, std::string_view client);
    Status logout(const Principal &p, std::string_view client);

    // auth.check_origin: a present origin must match; a cookie write must carry one.
    Status check_origin(std::optional<std::string_view> origin, bool cookie_write) const;
    // auth.cookie_name: __Host-svc_session on https, svc_dev_session on a loopback origin.
    std::string_view cookie_name() const;

    // ---------------------------------------------------------------- passwords (SPEC §4, §5 7-10, §8)
    // Every password operation answers Code::PasswordsDisabled unless policy().with_passwords.
    // Each hashes or verifies with Argon2id (~20 ms of CPU): call them off any event loop.

    // auth.with_password_check: an extra check of every new password (a breached list, a
    // function). Install checkers before serving; they run in order after the built-in policy.
    void with_password_check(PasswordChecker checker);
    // Where attempt counters live (default: this process's memory, SPEC §8 defaults).
    void with_attempt_limiter(std::shared_ptr<AttemptLimiter> limiter);
    // NFC, then the built-in policy and every checker: the NFC form, or Code::WeakPassword.
    Result<std::string> check_new_password(std::string_view password) const;

    // auth.register_password_from, first half: a new address gets a Registration token whose
    // record keeps only the password hash; an address with an account gets AlreadyRegistered and
    // its password is never replaced nor attached. The caller delivers (or cancel_token).
    // may_send = false: over the address's send limit (as for issue_token): nothing is sent.
    // The two halves of issue_password_registration, so that a transport can run the Argon2id
    // hash (prepare) outside the write transaction and the group commit (issue ..._hashed).
    Result<std::string> prepare_password_registration(std::string_view email, const Secret &password,
                                                      std::string_view group);
    Result<TokenIssue> issue_password_registration_hashed(std::string_view email, std::string_view group,
                                                          std::string_view client,
                                                          const std::string &password_hash, bool may_send = true);
    Result<TokenIssue> issue_password_registration(std::string_view email, const Secret &password,
                                                   std::string_view group, std::string_view client,
                                                   bool may_send = true);
    // auth.register_password_from: both halves, through the delivery function.
    Status register_password_from(std::string_view email, const Secret &password, std::string_view client,
                                  std::string_view group = {});

    // A short value that changes whenever the address's password is set, changed or reset
    // ("" for an unknown address or an account without a password): a transport's attempt
    // counters keyed with it start afresh after a reset (SPEC §8 rule 2). A read.
    std::string password_epoch(std::string_view email, std::string_view group);

    // auth.login_password_step: a wrong password, an unknown address, an account without a
    // password and a suspended account all give Code::InvalidCredentials after the same work.
    Result<SignInStep> login_password_step(std::string_view email, const Secret &password,
                                           std::string_view client, SessionKind kind = SessionKind::Cookie,
                                           std::string_view user_agent = {}, std::string_view group = {});
    // The two halves of login_password_step, so that a transport can run the Argon2id verify in
    // one thread and the write with its other writes. check_password_login writes nothing to the
    // store; finish_password_login re-reads the account (a password changed or an account
    // suspended meanwhile makes the old password count for nothing) and writes the session, or
    // the failure's audit entry.
    Result<PasswordLoginCheck> check_password_login(std::string_view email, const Secret &password,
                                                    std::string_view client, SessionKind kind = SessionKind::Cookie,
                                                    std::string_view user_agent = {}, std::string_view group = {});
    Result<SignInStep> finish_password_login(const PasswordLoginCheck &check);
    // auth.login_password_from: a Session, for apps without second factors.
    Result<Session> login_password_from(std::string_view email, const Secret &password, std::string_view client,
                                        SessionKind kind = SessionKind::Cookie, std::string_view user_agent = {},
                                        std::string_view group = {});

    // auth.set_password: only from a session made by an email-token exchange within
    // policy().fresh_window (else Code::FreshSessionRequired); sets, changes or resets the
    // password, ends every other session of the user, clears the address's attempt history.
    Status set_password(const Principal &p, const Secret &password, std::string_view client = {});
    // Its two halves: the freshness rule, the policy and the hash; then the write, which needs
    // the session and the account to be still there.
    Result<PasswordUpdate> prepare_set_password(const Principal &p, const Secret &password);
    Status store_set_password(const Principal &p, const PasswordUpdate &update, std::string_view client);

    // auth.change_password_from, first half: the account must have a password (Code::NoPassword),
    // `current` must match (Code::WrongPassword); ends every other session. Returns the notice.
    Result<PasswordChange> change_password(const Principal &p, const Secret &current, const Secret &next,
                                           std::string_view client);
    // Its two halves: verify `current`, then the policy and the hash of `next` (no store write);
    // then the write (or the audit of a wrong `current`), refused when the password moved meanwhile.
    Result<PasswordUpdate> check_password_change(const Principal &p, const Secret &current, const Secret &next,
                                                 std::string_view client);
    Result<PasswordChange> store_password_change(const Principal &p, const PasswordUpdate &update,
                                                 std::string_view client);
    // auth.change_password_from: both halves; the PasswordChanged notice goes through the
    // delivery function (a failed notice is not an error: the password is changed).
    Status change_password_from(const Principal &p, const Secret &current, const Secret &next,
                                std::string_view client);

    // Administration (signin-admin): suspend or restore an account.
    Status set_suspended(std::string_view group, std::string_view email, bool suspended);

    // Appends one audit entry in its own write transaction (a transport's own decisions, such as
    // a throttled request). The entry must not hold a secret.
    Status record(const AuditEntry &entry);

    // Deletes expired tokens and sessions, at most `budget`; returns how many.
    Result<std::size_t> purge_expired(std::size_t budget);

    // Group commit for a transport: runs `operations` (engine calls on this thread), each of
    // whose writes is a nested transaction of one batch (a failed operation leaves the others
    // alone), and makes the whole batch durable with one commit. An error when that commit
    // failed: then nothing of the batch was written, whatever the operations returned.
    Status write_batch(const std::function<void()> &operations);

private:
    template <class F>
    auto guarded(const char *what, F &&f) -> decltype(f());

    std::shared_ptr<Store> store_;
    Origin origin_;
    Policy policy_;
    DeliveryFn deliver_;
    std::shared_ptr<const Clock> clock_;
    std::vector<PasswordChecker> checkers_;
    std::shared_ptr<AttemptLimiter> limiter_;

    // Writes a new session of `user` in txn (with its audit entry; the caller commits) and returns
    // it with its secret: one place for every way in (email token, password).
    Session open_session(WriteTxn &txn, const User &user, SessionKind kind, SignInMethod method,
                         std::string_view client, std::string_view user_agent, Millis now, std::string detail);

    // The second half of the synchronous token requests: delivers what was issued, and cancels
    // the token when the delivery function fails.
    Status deliver_or_cancel(Result<TokenIssue> issued, std::string_view client);

    Result<TokenIssue> issue(Intent intent, std::string_view email, std::string_view group, std::string_view client,
                             const std::string *password_hash, bool may_send = true);
};

// The token and session secret digest used as store keys (BLAKE2b-256, 32 raw bytes).
std::string secret_hash(std::string_view secret);
// Whether text has the shape of a token or session secret this engine makes.
bool plausible_secret(std::string_view text);

// SPEC-named free functions (auth.*), for callers who prefer the spec's spelling.
namespace auth {
inline Status request_token_from(Identity &id, std::string_view email, Intent intent,
                                 std::string_view client, std::string_view group = {}) {
    return id.request_token_from(intent, email, group, client);
}
inline Result<Session> exchange_from(Identity &id, const Secret &token, std::string_view client) {
    return id.exchange_from(token, client);
}
inline Result<Principal> authenticate_from(Identity &id, const Secret &token, std::string_view client) {
    return id.authenticate_from(token, client);
}
inline std::string_view cookie_name(const Identity &id) { return id.cookie_name(); }
inline void with_password_check(Identity &id, PasswordChecker checker) { id.with_password_check(std::move(checker)); }
inline Status register_password_from(Identity &id, std::string_view email, const Secret &password,
                                     std::string_view client) {
    return id.register_password_from(email, password, client);
}
inline Result<Session> login_password_from(Identity &id, std::string_view email, const Secret &password,
                                           std::string_view client) {
    return id.login_password_from(email, password, client);
}
inline Result<SignInStep> login_password_step(Identity &id, std::string_view email, const Secret &password,
                                              std::string_view client) {
    return id.login_password_step(email, password, client);
}
inline Status set_password(Identity &id, const Principal &p, const Secret &password) {
    return id.set_password(p, password);
}
inline Status change_password_from(Identity &id, const Principal &p, const Secret &current, const Secret &next,
                                   std::string_view client) {
    return id.change_password_from(p, current, next, client);
}
}  // namespace auth

}  // namespace signin
