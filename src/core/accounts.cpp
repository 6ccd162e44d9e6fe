// Account changes (accounts.hpp).
#include "signin/accounts.hpp"

#include "core/engine_detail.hpp"

namespace signin {

Result<AccountInfo> Accounts::account(const Principal &p) {
    return detail::guarded("account", [&]() -> Result<AccountInfo> {
        const Millis now = engine_.now();
        auto txn = engine_.store_->read();
        auto user = txn->user_by_id(p.user.id);
        if (!user || !txn->session(p.session.hash)) return Error{Code::Unauthenticated, "not signed in"};
        AccountInfo out;
        out.password = !user->password_hash.empty();
        user->password_hash.clear();
        out.user = std::move(*user);
        out.sessions = detail::live_sessions(*txn, p, engine_.policy(), now);
        if (auto m = txn->mfa(p.user.id); m && m->has_factor()) {
            out.mfa.totp = true;
            out.mfa.recovery_codes_left = static_cast<unsigned>(m->recovery_hashes.size());
            for (const auto &d : m->devices) out.mfa.remembered_devices += d.expires_at > now ? 1 : 0;
        }
        for (const auto &t : txn->tokens_for(out.user.group_id, out.user.email)) {
            out.outstanding_tokens += t.expires_at > now ? 1 : 0;
        }
        return out;
    });
}

Status Accounts::delete_account(const Principal &p, std::string_view client) {
    const Millis now = engine_.now();
    if (p.session.method != SignInMethod::EmailToken || now - p.session.created_at >= engine_.policy().fresh_window) {
        return Error{Code::FreshSessionRequired, "deleting an account needs a sign-in with an email code in the last " +
                                                     std::to_string(engine_.policy().fresh_window / 60000) +
                                                     " minutes"};
    }
    return detail::guarded("delete account", [&]() -> Status {
        auto txn = engine_.store_->write();
        auto user = txn->user_by_id(p.user.id);
        if (!user || !txn->session(p.session.hash)) return Error{Code::Unauthenticated, "not signed in"};
        for (const auto &s : txn->sessions_of(user->id)) txn->del_session(s.hash);
        for (const auto &t : txn->tokens_for(user->group_id, user->email)) txn->del_token(t.hash);
        txn->del_mfa(user->id);  // factors, recovery codes, remembered devices
        txn->del_mfa_pending_of(user->id);
        txn->del_user(user->id);
        // no address: the account is gone, its entry says only that it was
        txn->append_audit(detail::audit(now, "user.deleted", {}, client, user->id));
        txn->commit();
        return ok_status();
    });
}

}  // namespace signin
