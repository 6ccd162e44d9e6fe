// Account changes (accounts.hpp).
#include "signin/accounts.hpp"

#include "engine_detail.hpp"
#include "signin/known_browsers.hpp"

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
        out.mfa = detail::mfa_status(txn->mfa(p.user.id), now);
        for (const auto &t : txn->tokens_for(out.user.group_id, out.user.email)) {
            out.outstanding_tokens += t.expires_at > now ? 1 : 0;
        }
        out.passkeys = static_cast<unsigned>(txn->passkeys_of(p.user.id).size());
        for (const auto &l : txn->provider_links_of(p.user.id)) out.providers.push_back(detail::link_info(l));
        return out;
    });
}

Status Accounts::delete_account(const Principal &p, std::string_view client) {
    const Millis now = engine_.now();
    if (!detail::is_fresh(engine_.policy(), p.session, now)) {
        return detail::fresh_required(engine_.policy(), "deleting an account");
    }
    return detail::guarded("delete account", [&]() -> Status {
        auto txn = engine_.store_->write();
        auto user = txn->user_by_id(p.user.id);
        if (!user || !txn->session(p.session.hash)) return Error{Code::Unauthenticated, "not signed in"};
        detail::erase_account(*txn, *user, now, client);
        txn->commit();
        return ok_status();
    });
}

void detail::erase_account(WriteTxn &txn, const User &user, Millis now, std::string_view client) {
    detail::end_sessions_except(txn, user.id, {}, now, "user_deleted");
    if (!user.email.empty()) {
        for (const auto &t : txn.tokens_for(user.group_id, user.email)) txn.del_token(t.hash);
    }
    txn.del_mfa(user.id);  // factors, recovery codes, remembered devices
    txn.del_mfa_pending_of(user.id);
    for (const auto &k : txn.passkeys_of(user.id)) txn.del_passkey(k.key);
    for (const auto &l : txn.provider_links_of(user.id)) txn.del_provider_link(l.key);
    txn.del_counter(known_key(user.id));  // the browsers it was signed in from
    txn.del_user(user.id);
    // no address: the account is gone, its entry says only that it was
    txn.append_audit(detail::audit(now, "user.deleted", {}, client, user.id));
}

}  // namespace signin
