// The password operations of the engine (signin_passwords):
// registration, sign-in, set and change, each also in two halves so that a transport can run
// Argon2id apart from the write. The policy, hashing, blocklist and attempt limits they use are
// password.hpp. Valid C++17: the glue includes it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "signin/engine.hpp"
#include "signin/password.hpp"
#include "signin/tokens.hpp"
#include "signin/types.hpp"

namespace signin {

// What a password change decided: the PasswordChanged notice to deliver (its token is empty).
// With an outbox (Engine::use_outbox), the notice is also written there, under outbox_key.
struct PasswordChange {
    Delivery notice;
    std::string outbox_key;
};

class Passwords;

// The Argon2id half of a password sign-in (Passwords::check_password_login): what the verify
// found. It holds no password, only what the write half (finish_password_login) needs. Only
// Passwords makes or reads one: a caller cannot forge a "matched" check to open a session.
class PasswordLoginCheck {
public:
    bool matched() const { return matched_; }

private:
    friend class Passwords;
    bool matched_ = false;
    Millis at_ = 0;
    std::string key_, email_, client_, user_agent_;  // key_: the attempt limiter's name of the address
    SessionKind kind_ = SessionKind::Cookie;
    std::optional<User> user_;             // the account as it was verified, when there is one
    std::optional<std::string> rehashed_;  // its password hashed again with the current settings
};

// The Argon2id half of set_password and change_password (prepare_set_password,
// check_password_change): the new hash, or (change) a wrong `current` to record. Only Passwords
// makes or reads one.
class PasswordUpdate {
private:
    friend class Passwords;
    bool wrong_current_ = false;  // change: `current` did not match; the write half audits it
    std::string verified_hash_;   // change: the hash `current` matched; the write refuses if it moved
    std::string new_hash_;
};

// Every password operation answers Code::PasswordsDisabled unless policy().with_passwords.
// Each hashes or verifies with Argon2id (~20 ms of CPU): call them off any event loop.
class Passwords {
public:
    // A registration's token is issued and delivered by `tokens`.
    Passwords(Engine &engine, Tokens &tokens);
    // Checkers and the limiter installed on a copy would never run: there is one per engine.
    Passwords(const Passwords &) = delete;
    Passwords &operator=(const Passwords &) = delete;

    // auth.with_password_check: an extra check of every new password (a breached list, a
    // function). Install checkers before serving; they run in order after the built-in policy.
    void with_password_check(PasswordChecker checker);
    // Where attempt counters live (default: this process's memory, the policy's numbers).
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
                                                          const std::string &password_hash, bool may_send = true,
                                                          const std::vector<std::string> &roles = {});
    Result<TokenIssue> issue_password_registration(std::string_view email, const Secret &password,
                                                   std::string_view group, std::string_view client,
                                                   bool may_send = true);
    // auth.register_password_from: both halves, through the delivery function.
    Status register_password_from(std::string_view email, const Secret &password, std::string_view client,
                                  std::string_view group = {});

    // A short value that changes whenever the address's password is set, changed or reset ("" for
    // an unknown address or an account without a password): a transport's attempt counters keyed
    // with it start afresh after a reset (a reset clears the address's history). A read.
    std::string password_epoch(std::string_view email, std::string_view group);

    // auth.login_password_step: a wrong password, an unknown address, an account without a
    // password and a suspended account all give Code::InvalidCredentials after the same work.
    // A user with a second factor gets SecondFactorPending unless the browser's device cookie is
    // one of their remembered devices; a cookie session with `browser` joins that browser's
    // accounts.
    Result<SignInStep> login_password_step(std::string_view email, const Secret &password,
                                           std::string_view client, SessionKind kind = SessionKind::Cookie,
                                           std::string_view user_agent = {}, std::string_view group = {},
                                           const BrowserCookies *browser = nullptr);
    // The two halves of login_password_step, so that a transport can run the Argon2id verify in
    // one thread and the write with its other writes. check_password_login writes nothing to the
    // store; finish_password_login re-reads the account (a password changed or an account
    // suspended meanwhile makes the old password count for nothing) and writes the session, or
    // the failure's audit entry.
    Result<PasswordLoginCheck> check_password_login(std::string_view email, const Secret &password,
                                                    std::string_view client, SessionKind kind = SessionKind::Cookie,
                                                    std::string_view user_agent = {}, std::string_view group = {});
    Result<SignInStep> finish_password_login(const PasswordLoginCheck &check, const BrowserCookies *browser = nullptr);
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

private:
    Engine &engine_;
    Tokens &tokens_;
    std::vector<PasswordChecker> checkers_;
    std::shared_ptr<AttemptLimiter> limiter_;
};

}  // namespace signin
