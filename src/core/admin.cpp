// What an administrator does (admin.hpp): searches read the user search index (store.hpp
// user_index_keys), changes go through the engine's own operations.
#include "signin/admin.hpp"

#include <algorithm>

#include "engine_detail.hpp"
#include "signin/access.hpp"
#include "signin/encoding.hpp"
#include "signin/mfa.hpp"
#include "signin/tokens.hpp"

namespace signin {
namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    for (char &c : out) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
}

// The user id an index key ends with (after its last '\0': no value holds one).
std::string_view id_of_key(std::string_view key) {
    const auto nul = key.rfind('\0');
    return nul == std::string_view::npos ? std::string_view() : key.substr(nul + 1);
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

Error no_such_account() { return Error{Code::NotFound, "no such account"}; }

void csv_cell(std::string &out, std::string_view cell) {
    const bool formula = !cell.empty() && (cell[0] == '=' || cell[0] == '+' || cell[0] == '-' || cell[0] == '@' ||
                                           cell[0] == '\t' || cell[0] == '\r');
    const bool quote = formula || cell.find_first_of(",\"\r\n") != std::string_view::npos;
    if (quote) out += '"';
    if (formula) out += '\'';
    for (char c : cell) {
        if (c == '"') out += '"';
        out += c;
    }
    if (quote) out += '"';
}

}  // namespace

std::string audit_csv(const std::vector<AuditEntry> &entries) {
    std::string out = "at,kind,email,client,user_id,detail\r\n";
    for (const auto &e : entries) {
        const std::string at = enc::rfc3339(e.at);
        const std::string_view cells[] = {at, e.kind, e.email, e.client, e.user_id, e.detail};
        bool first = true;
        for (std::string_view c : cells) {
            if (!first) out += ',';
            first = false;
            csv_cell(out, c);
        }
        out += "\r\n";
    }
    return out;
}

bool Admin::holds_role(const User &u) const {
    return std::binary_search(u.roles.begin(), u.roles.end(), role_);
}

Status Admin::may_read(const Principal &admin) const {
    if (admin.user.suspended || !holds_role(admin.user)) {
        return Error{Code::Forbidden, "this needs the role " + role_};
    }
    return ok_status();
}

Status Admin::may_change(const Principal &admin) const {
    if (auto st = may_read(admin); !st) return st;
    const Millis now = engine_.now();
    if (!admin.session.mfa || now - admin.session.created_at >= engine_.policy().fresh_window) {
        return Error{Code::FreshSessionRequired,
                     "a change needs a sign-in that passed a second factor in the last " +
                         std::to_string(engine_.policy().fresh_window / 60000) + " minutes"};
    }
    return ok_status();
}

Result<UserPage> Admin::search(const Principal &admin, const UserQuery &q) {
    if (auto st = may_read(admin); !st) return st.error();
    if (!q.state.empty() && q.state != "active" && q.state != "pending" && q.state != "suspended") {
        return Error{Code::InvalidRequest, "state is active, pending or suspended"};
    }
    std::string role;
    if (!q.role.empty()) {
        auto r = normalize_role(q.role);
        if (!r) return Error{Code::InvalidRequest, "a role is 1 to 32 of a-z, 0-9, _ and -"};
        role = *r;
    }
    if (q.text.size() > 320) return Error{Code::InvalidRequest, "the search is too long"};
    const std::size_t limit = std::clamp<std::size_t>(q.limit, 1, kMaxPage);
    const std::string text = lower(q.text);
    auto keep = [&](const User &u) {
        return (role.empty() || std::binary_search(u.roles.begin(), u.roles.end(), role)) &&
               (q.state.empty() || user_state(u) == q.state);
    };
    return detail::guarded("search users", [&]() -> Result<UserPage> {
        auto txn = engine_.store_->read();
        UserPage page;
        auto add = [&](User u) {
            u.password_hash.clear();
            page.users.push_back(std::move(u));
        };
        // an id names one account
        if (!text.empty() && text.find('@') == std::string::npos && q.after.empty()) {
            if (auto u = txn->user_by_id(q.text)) {
                if (keep(*u)) add(std::move(*u));
                return page;
            }
        }
        std::string prefix;
        if (!text.empty() && text[0] == '@') {
            prefix = "d" + text.substr(1);
        } else if (!text.empty()) {
            prefix = "e" + text;
        } else if (!role.empty()) {
            prefix = "r" + role + '\0';
        } else if (!q.state.empty()) {
            prefix = "s" + q.state + '\0';
        }
        if (prefix.empty()) {  // every account, in id order (creation order)
            for (auto &u : txn->users(q.after, limit)) add(std::move(u));
            if (page.users.size() == limit) page.next = page.users.back().id;
            return page;
        }
        if (!q.after.empty() && !starts_with(q.after, prefix)) {
            return Error{Code::InvalidRequest, "that cursor is of another search"};
        }
        std::string after = q.after;
        std::size_t budget = kScanBudget;
        while (budget > 0) {
            const std::size_t want = std::min<std::size_t>(budget, 500);
            auto keys = txn->user_index(prefix, after, want);
            budget -= keys.size();
            for (const auto &k : keys) {
                after = k;
                auto u = txn->user_by_id(id_of_key(k));
                if (!u || !keep(*u)) continue;
                add(std::move(*u));
                if (page.users.size() == limit) {
                    page.next = k;
                    return page;
                }
            }
            if (keys.size() < want) return page;  // the end of the prefix
        }
        page.next = after;  // the budget is spent: the next page goes on from here
        return page;
    });
}

Result<AdminUserInfo> Admin::user(const Principal &admin, std::string_view user_id) {
    if (auto st = may_read(admin); !st) return st.error();
    return detail::guarded("read account", [&]() -> Result<AdminUserInfo> {
        const Millis now = engine_.now();
        auto txn = engine_.store_->read();
        auto u = txn->user_by_id(user_id);
        if (!u) return no_such_account();
        AdminUserInfo out;
        out.password = !u->password_hash.empty();
        u->password_hash.clear();
        out.user = std::move(*u);
        out.sessions = detail::live_sessions(*txn, Principal{out.user, {}}, engine_.policy(), now);
        out.mfa = detail::mfa_status(txn->mfa(out.user.id), now);
        for (const auto &k : txn->passkeys_of(out.user.id)) out.passkeys.push_back(detail::passkey_info(k));
        for (const auto &l : txn->provider_links_of(out.user.id)) out.providers.push_back(detail::link_info(l));
        for (auto &e : txn->audit(kAuditWindow)) {
            if (e.user_id != out.user.id) continue;
            out.audit.push_back(std::move(e));
            if (out.audit.size() == 50) break;
        }
        return out;
    });
}

Result<std::vector<AuditEntry>> Admin::audit(const Principal &admin, const AuditQuery &q) {
    if (auto st = may_read(admin); !st) return st.error();
    const std::size_t limit = std::clamp<std::size_t>(q.limit, 1, kAuditWindow);
    const std::string email = lower(q.email);
    return detail::guarded("read audit", [&]() -> Result<std::vector<AuditEntry>> {
        std::vector<AuditEntry> out;
        for (auto &e : engine_.store_->read()->audit(kAuditWindow)) {
            if ((!q.kind.empty() && e.kind != q.kind) || (!email.empty() && lower(e.email) != email) ||
                (!q.user_id.empty() && e.user_id != q.user_id) || (q.since != 0 && e.at < q.since) ||
                (q.until != 0 && e.at >= q.until)) {
                continue;
            }
            out.push_back(std::move(e));
            if (out.size() == limit) break;
        }
        return out;
    });
}

Status Admin::suspend(const Principal &admin, std::string_view user_id, bool suspended) {
    if (auto st = may_change(admin); !st) return st;
    if (suspended && user_id == admin.user.id) return Error{Code::InvalidRequest, "an administrator cannot suspend themselves"};
    return engine_.set_suspended(AccountRef{std::string(user_id), {}, {}}, suspended, actor(admin));
}

Status Admin::end_sessions(const Principal &admin, std::string_view user_id) {
    if (auto st = may_change(admin); !st) return st;
    return detail::guarded("end sessions", [&]() -> Status {
        auto txn = engine_.store_->write();
        auto u = txn->user_by_id(user_id);
        if (!u) return no_such_account();
        const Millis now = engine_.now();
        // as signin-admin revoke: each session ends with its own entry
        for (const auto &s : txn->sessions_of(u->id)) {
            txn->del_session(s.hash);
            txn->append_audit(detail::audit(now, "session.revoked", u->email, actor(admin), u->id, s.id));
        }
        txn->commit();
        return ok_status();
    });
}

Status Admin::reset_mfa(const Principal &admin, std::string_view user_id) {
    if (auto st = may_change(admin); !st) return st;
    return Mfa(engine_).reset(AccountRef{std::string(user_id), {}, {}}, actor(admin));
}

Status Admin::set_roles(const Principal &admin, std::string_view user_id, const std::vector<std::string> &add,
                        const std::vector<std::string> &remove) {
    if (auto st = may_change(admin); !st) return st;
    if (user_id == admin.user.id && std::find(remove.begin(), remove.end(), role_) != remove.end()) {
        return Error{Code::InvalidRequest, "an administrator cannot take their own role " + role_};
    }
    return engine_.set_roles(AccountRef{std::string(user_id), {}, {}}, add, remove, actor(admin));
}

Status Admin::erase(const Principal &admin, std::string_view user_id) {
    if (auto st = may_change(admin); !st) return st;
    if (user_id == admin.user.id) return Error{Code::InvalidRequest, "an administrator deletes their own account from its page"};
    return detail::guarded("delete account", [&]() -> Status {
        auto txn = engine_.store_->write();
        auto u = txn->user_by_id(user_id);
        if (!u) return no_such_account();
        detail::erase_account(*txn, *u, engine_.now(), actor(admin));
        txn->commit();
        return ok_status();
    });
}

Result<TokenIssue> Admin::invite(const Principal &admin, std::string_view email, std::string_view group,
                                 const std::vector<std::string> &roles, bool send) {
    if (auto st = may_change(admin); !st) return st.error();
    return tokens_.invite(email, group, roles, send, actor(admin));
}

}  // namespace signin
