// What an administrator does from a browser or a script (signin_admin): find accounts, look at
// one, and change it. Every change goes through the same engine operation signin-admin uses and
// is audited with the administrator's user id as its client ("admin:<id>"). Valid C++17: the
// glue includes it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "signin/engine.hpp"
#include "signin/mfa.hpp"
#include "signin/tokens.hpp"
#include "signin/types.hpp"

namespace signin {

// A search of the accounts. `text` is a user id (that account), "@" and the start of a domain
// (the accounts of that domain), or the start of an address; `role` and `state` ("active",
// "pending", "suspended") narrow it. Results come in the order of the index they are read from;
// `after` is the `next` of the page before.
struct UserQuery {
    std::string text, role, state, after;
    std::size_t limit = 50;  // at most kMaxPage
};
struct UserPage {
    std::vector<User> users;  // password hashes emptied
    std::string next;         // empty: no more
};

// A person as an administrator sees them: nothing secret (no hash, code, token or TOTP secret).
struct AdminUserInfo {
    User user;  // password_hash emptied
    bool password = false;
    std::vector<SessionInfo> sessions;  // the live ones, newest first
    MfaStatus mfa;
    std::vector<PasskeyInfo> passkeys;
    std::vector<ProviderLinkInfo> providers;
    std::vector<AuditEntry> audit;  // the newest about this account, newest first
};

// A view of the audit trail: entries of `kind`, of `email`, of `user_id`, from `since` to
// before `until` (0: no bound), newest first, at most `limit`.
struct AuditQuery {
    std::string kind, email, user_id;
    Millis since = 0, until = 0;
    std::size_t limit = 100;
};

// Audit entries as CSV (RFC 4180, CRLF lines): a header row, then at,kind,email,client,user_id,detail
// per entry, times as the JSON writes them. A cell that a spreadsheet would read as a formula
// (starting with =, +, -, @, a tab or a carriage return) is written with a leading apostrophe: an
// address or a client is chosen by whoever signs in, and the file is opened by an administrator.
std::string audit_csv(const std::vector<AuditEntry> &entries);

class Admin {
public:
    static constexpr std::size_t kMaxPage = 200;
    // How many index entries one search reads at most before it answers with what it found and
    // a cursor to go on: a narrow filter over a wide prefix never reads a million records at once.
    static constexpr std::size_t kScanBudget = 5000;
    // How many of the newest audit entries a view of the trail looks through.
    static constexpr std::size_t kAuditWindow = 20000;

    // The administrators are the users holding `role`.
    Admin(Engine &engine, Tokens &tokens, std::string role = "admin")
        : engine_(engine), tokens_(tokens), role_(std::move(role)) {}

    // Reading needs the role (Code::Forbidden otherwise); a change needs, as well, a session
    // younger than the fresh window that passed a second factor (Code::FreshSessionRequired).
    Status may_read(const Principal &admin) const;
    Status may_change(const Principal &admin) const;
    // The client an administrator's changes are audited with: "admin:" and their user id.
    static std::string actor(const Principal &admin) { return "admin:" + admin.user.id; }

    Result<UserPage> search(const Principal &admin, const UserQuery &q);
    Result<AdminUserInfo> user(const Principal &admin, std::string_view user_id);
    Result<std::vector<AuditEntry>> audit(const Principal &admin, const AuditQuery &q);

    Status suspend(const Principal &admin, std::string_view user_id, bool suspended);
    // Ends every session of the account (one session.revoked entry saying how many).
    Status end_sessions(const Principal &admin, std::string_view user_id);
    Status reset_mfa(const Principal &admin, std::string_view user_id);
    Status set_roles(const Principal &admin, std::string_view user_id, const std::vector<std::string> &add,
                     const std::vector<std::string> &remove);
    // Deletes the account and everything tied to it. Not one's own (that is DELETE /account).
    Status erase(const Principal &admin, std::string_view user_id);
    // Makes an account (signin-admin invite), with the invitation sent when `send`.
    Result<TokenIssue> invite(const Principal &admin, std::string_view email, std::string_view group,
                              const std::vector<std::string> &roles, bool send);

private:
    bool holds_role(const User &u) const;
    Engine &engine_;
    Tokens &tokens_;
    std::string role_;
};

}  // namespace signin
