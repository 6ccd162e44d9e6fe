// Email tokens (single use, short-lived): a token request, its delivery or cancellation, and
// the exchange of a token for a session. Valid C++17: the glue includes it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "signin/engine.hpp"
#include "signin/store.hpp"
#include "signin/types.hpp"

namespace signin {

// What the first half of a token request decided: a delivery to make, or nothing to send.
// With an outbox (Engine::use_outbox), the delivery is also written there, under outbox_key.
struct TokenIssue {
    std::optional<Delivery> delivery;
    std::string outbox_key;
};

// POST /email/change: the two emails to send (the new address confirms, the old approves).
struct EmailChangeIssue {
    TokenIssue to_new;  // EmailChange, to the new address
    TokenIssue to_old;  // EmailChangeApproval, to the current address
};

// POST /email/confirm: which half was spent, and when the change was made, the notice to the old
// address (EmailChanged).
struct EmailChangeStep {
    std::string status;     // "confirmed" (the new address's token), "approved" (the old one's), "changed"
    std::string new_email;  // set when "changed"
    TokenIssue notice;      // set when "changed"
};

class Tokens {
public:
    explicit Tokens(Engine &engine) : engine_(engine) {}

    // Inside a write batch (Engine::write_batch): reads ahead the tokens its exchanges will spend
    // (their secrets' record keys) and their accounts, together (Store::read_tokens_ahead). What
    // cannot be read ahead is read by each exchange as before: it never fails.
    void read_ahead(const std::vector<std::string> &keys) noexcept;

    // auth.request_token_from: issues a token and calls the delivery function; a delivery error
    // cancels the token and is returned as Code::DeliveryFailed. Unknown address on Login, or a
    // usable token already waiting: nothing is sent and the result is success.
    Status request_token_from(Intent intent, std::string_view email, std::string_view group,
                              std::string_view client);
    Status request_token(Intent intent, std::string_view email, std::string_view group) {
        return request_token_from(intent, email, group, {});
    }

    // The two halves of request_token_from, for transports that deliver asynchronously.
    // may_send = false: the address is over its send limit (the address's, not the asker's;
    // decided by the transport's throttle): the same reads, writes and answer as a send, but no
    // token is made, nothing is delivered, and the audit trail records `throttled`.
    // roles: what the application's registration check gave a new account (each a role name,
    // access.hpp normalize_role); kept on a Registration token, given to the account it creates.
    Result<TokenIssue> issue_token(Intent intent, std::string_view email, std::string_view group,
                                   std::string_view client, bool may_send = true,
                                   const std::vector<std::string> &roles = {});
    Status cancel_token(const Secret &token, std::string_view client);

    // signin-admin invite: the account is made now if it does not exist (so its
    // sign-in works with registration off), with `roles` added; with `send`, an Invitation token
    // whose email signs the person in is issued (and written to the outbox when there is one).
    Result<TokenIssue> invite(std::string_view email, std::string_view group, const std::vector<std::string> &roles,
                              bool send, std::string_view client = "admin");

    // auth.exchange_from: spends the token (even when the exchange then fails) and makes a
    // session of `kind`. Registration tokens create the account here.
    Result<Session> exchange_from(const Secret &token, std::string_view client,
                                  SessionKind kind = SessionKind::Cookie,
                                  std::string_view user_agent = {});
    Result<Session> exchange(const Secret &token, SessionKind kind = SessionKind::Cookie) {
        return exchange_from(token, {}, kind, {});
    }
    // The same with the token's short code and its address (codes.hpp): spending either form
    // spends the token. A wrong code counts against the address: the fifth cancels every token
    // waiting for it.
    Result<Session> exchange_code_from(std::string_view email, std::string_view code, std::string_view group,
                                       std::string_view client, SessionKind kind = SessionKind::Cookie,
                                       std::string_view user_agent = {});
    // auth.exchange_step: the same, for sites with second factors (signin_mfa). A user with one
    // gets SecondFactorPending (no session) unless the browser's device cookie is one of their
    // remembered devices; a cookie session with `browser` joins that browser's accounts;
    // exchange_from and exchange_code_from answer Code::MfaRequired for such a user instead.
    Result<SignInStep> exchange_step_from(const Secret &token, std::string_view client,
                                          SessionKind kind = SessionKind::Cookie, std::string_view user_agent = {},
                                          const BrowserCookies *browser = nullptr);
    Result<SignInStep> exchange_code_step_from(std::string_view email, std::string_view code, std::string_view group,
                                               std::string_view client, SessionKind kind = SessionKind::Cookie,
                                               std::string_view user_agent = {}, const BrowserCookies *browser = nullptr);

    // Email change, from a live session: an EmailChange token to the new address and
    // an EmailChangeApproval token to the current one, both sent whatever the new address is (a
    // third party learns nothing of whether it has an account). These tokens never sign in. The
    // caller delivers both (with an outbox they are written there in the same transaction).
    Result<EmailChangeIssue> request_email_change(const Principal &p, std::string_view new_email,
                                                  std::string_view client);
    // Spends one half ({token}, or the address it was sent to and its code); the change is made
    // when both are spent, in the transaction of the second, which re-checks that the new address
    // is still free in the group (Code::EmailTaken otherwise) and that the account still has the
    // old one; then every session but the one that asked ends, and EmailChanged goes to the old
    // address. Sign-in tokens are refused here (Code::InvalidToken), as these are at /session.
    Result<EmailChangeStep> confirm_email_change(const Secret &token, std::string_view client);
    Result<EmailChangeStep> confirm_email_change_code(std::string_view email, std::string_view code,
                                                      std::string_view group, std::string_view client);

private:
    Result<EmailChangeStep> spend_change(WriteTxn &txn, const TokenRecord &t, std::string_view client, Millis now);
    // The token waiting for (group, email) whose short code is `code`, among the purposes
    // `accepts` takes. Without one, the wrong code is counted on those tokens (the fifth cancels
    // them all), a decoy is written when none waits and `decoy` is set, the failure is audited
    // with `audit_detail`, txn is committed, and the answer is nullopt.
    std::optional<TokenRecord> match_code(WriteTxn &txn, const std::string &group, const std::string &email,
                                          const std::optional<std::string> &code, bool (*accepts)(Purpose), bool decoy,
                                          std::string_view client, Millis now, std::string_view audit_detail);
    // A password registration is a Registration token that keeps the password's hash, delivered
    // the same way.
    friend class Passwords;

    // The second half of the synchronous token requests: delivers what was issued, and cancels
    // the token when the delivery function fails.
    Status deliver_or_cancel(Result<TokenIssue> issued, std::string_view client);

    Result<TokenIssue> issue(Intent intent, std::string_view email, std::string_view group, std::string_view client,
                             const std::string *password_hash, bool may_send = true,
                             const std::vector<std::string> &roles = {});
    // The writes of an issued token (token, address index, outbox entry), undone in the same
    // transaction: a request that sends nothing costs the store what one that sends costs, so
    // that the time of its answer does not tell whether the address has an account.
    Result<SignInStep> spend(WriteTxn &txn, const TokenRecord &t, std::string_view client, SessionKind kind,
                             std::string_view user_agent, Millis now, const BrowserCookies *browser);
    void decoy_issue(WriteTxn &txn, const std::string &group, const std::string &email, std::string_view client,
                     Millis now);

    Engine &engine_;
};

}  // namespace signin
