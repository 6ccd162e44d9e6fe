// Sessions: the principal behind a session token, last_seen_at, the list, revocation and logout
// (SPEC §3 "Session", §5).
#include "signin/sessions.hpp"

#include <algorithm>

#include "core/engine_detail.hpp"

namespace signin {

Result<Principal> Sessions::authenticate_from(const Secret &token, std::string_view, SessionKind kind) {
    if (!plausible_secret(token.reveal())) return Error{Code::Unauthenticated, "not signed in"};
    return detail::guarded("authenticate", [&]() -> Result<Principal> {
        const Millis now = engine_.now();
        auto txn = engine_.store_->read();
        auto s = txn->session(secret_hash(token.reveal()));
        if (!s || s->kind != kind || s->expires_at <= now ||
            (kind == SessionKind::Cookie && s->last_seen_at + engine_.policy().session_idle <= now)) {
            return Error{Code::Unauthenticated, "not signed in"};
        }
        auto user = txn->user_by_id(s->user_id);
        if (!user || user->suspended) return Error{Code::Unauthenticated, "not signed in"};
        return Principal{std::move(*user), std::move(*s)};
    });
}

bool Sessions::needs_touch(const Principal &p) const {
    return engine_.now() - p.session.last_seen_at >= engine_.policy().session_touch;
}

Status Sessions::touch(const Principal &p) {
    return detail::guarded("touch session", [&]() -> Status {
        auto txn = engine_.store_->write();
        auto s = txn->session(p.session.hash);
        if (s) {
            s->last_seen_at = engine_.now();
            txn->put_session(*s);
            txn->commit();
        }
        return ok_status();
    });
}

std::vector<SessionInfo> detail::live_sessions(ReadTxn &txn, const Principal &p, const Policy &policy, Millis now) {
    std::vector<SessionInfo> out;
    for (auto &s : txn.sessions_of(p.user.id)) {
        if (s.expires_at <= now || (s.kind == SessionKind::Cookie && s.last_seen_at + policy.session_idle <= now)) {
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
        i.fresh = detail::is_fresh(policy, s, now);
        out.push_back(std::move(i));
    }
    std::sort(out.begin(), out.end(), [](const SessionInfo &a, const SessionInfo &b) { return a.created_at > b.created_at; });
    return out;
}

Result<std::vector<SessionInfo>> Sessions::sessions(const Principal &p) {
    return detail::guarded("list sessions", [&]() -> Result<std::vector<SessionInfo>> {
        return detail::live_sessions(*engine_.store_->read(), p, engine_.policy(), engine_.now());
    });
}

Status Sessions::revoke_session(const Principal &p, std::string_view session_id, std::string_view client) {
    return detail::guarded("revoke session", [&]() -> Status {
        auto txn = engine_.store_->write();
        auto s = txn->session_by_id(session_id);
        if (!s || s->user_id != p.user.id) {
            return Error{Code::NotFound, "no such session"};  // aborted: nothing written
        }
        txn->del_session(s->hash);
        txn->append_audit(detail::audit(engine_.now(), "session.revoked", p.user.email, client, p.user.id, s->id));
        txn->commit();
        return ok_status();
    });
}

Status Sessions::logout(const Principal &p, std::string_view client) {
    return detail::guarded("logout", [&]() -> Status {
        auto txn = engine_.store_->write();
        txn->del_session(p.session.hash);
        txn->append_audit(detail::audit(engine_.now(), "logout", p.user.email, client, p.user.id, p.session.id));
        txn->commit();
        return ok_status();
    });
}

}  // namespace signin
