// Sessions: the principal behind a session token, last_seen_at, the list, revocation and logout
// (a session lives until logout, revocation or a password change ends it).
#include "signin/sessions.hpp"

#include <sodium.h>

#include <algorithm>

#include "engine_detail.hpp"

namespace signin {

Result<Principal> Sessions::authenticate_from(const Secret &token, std::string_view, SessionKind kind) {
    auto p = authenticate_shared(token, kind);
    if (!p) return p.error();
    return Principal(*p.value());
}

namespace {

// Who a principal read for a token of `kind` is: nobody unless its session is of that kind,
// live, and its user not suspended. The same checks whether the principal was decoded now or
// before: the clock moves.
Result<std::shared_ptr<const Principal>> signed_in(std::shared_ptr<const Principal> p, SessionKind kind,
                                                   const Policy &policy, Millis now) {
    if (!p || p->session.kind != kind || !detail::is_live(policy, p->session, now) || p->user.suspended)
        return Error{Code::Unauthenticated, "not signed in"};
    return p;
}

}  // namespace

Result<std::shared_ptr<const Principal>> Sessions::authenticate_shared(const Secret &token, SessionKind kind) {
    if (!plausible_secret(token.reveal())) return Error{Code::Unauthenticated, "not signed in"};
    return detail::guarded("authenticate", [&]() -> Result<std::shared_ptr<const Principal>> {
        const Millis now = engine_.now();
        auto txn = engine_.store_->read();
        return signed_in(txn->principal(RecordKey(token.reveal()).view()), kind, engine_.policy(), now);
    });
}

Sessions::Reading Sessions::reading(const std::vector<Asked> &asked) {
    Reading out;
    for (std::size_t i = 0; i < asked.size(); ++i) {
        if (!plausible_secret(asked[i].token->reveal())) continue;
        out.keys.emplace_back(asked[i].token->reveal());
        out.at.push_back(i);
    }
    return out;
}

std::vector<std::string_view> Sessions::Reading::views() const {
    std::vector<std::string_view> out;
    out.reserve(keys.size());
    for (const RecordKey &k : keys) out.push_back(k.view());
    return out;
}

std::vector<Result<std::shared_ptr<const Principal>>> Sessions::answers(const std::vector<Asked> &asked, const Reading &reading,
                                                                       std::vector<std::shared_ptr<const Principal>> found) const {
    std::vector<Result<std::shared_ptr<const Principal>>> out(asked.size(), Error{Code::Unauthenticated, "not signed in"});
    const Millis now = engine_.now();
    for (std::size_t j = 0; j < reading.at.size() && j < found.size(); ++j)
        out[reading.at[j]] = signed_in(std::move(found[j]), asked[reading.at[j]].kind, engine_.policy(), now);
    return out;
}

std::vector<Result<std::shared_ptr<const Principal>>> Sessions::authenticate_shared(const std::vector<Asked> &asked) {
    const Reading r = reading(asked);
    if (r.keys.empty()) return answers(asked, r, {});
    std::vector<Result<std::shared_ptr<const Principal>>> out;
    Status st = detail::guarded("authenticate", [&]() -> Status {
        out = answers(asked, r, engine_.store_->read()->principals(r.views()));
        return ok_status();
    });
    if (!st) {
        out = answers(asked, r, {});
        for (std::size_t i : r.at) out[i] = st.error();
    }
    return out;
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
        if (!detail::is_live(policy, s, now)) continue;
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

namespace signin {
namespace {

// The key that seals a browser's session secrets: BLAKE2b of a fixed context and the browser
// cookie. Only the browser holds the cookie; the store holds its digest (another BLAKE2b).
SecretKey browser_key(const Secret &browser) {
    static constexpr std::string_view kContext = "ngx_signin browser accounts v1";
    SecretKey key{};
    crypto_generichash_state st;
    crypto_generichash_init(&st, nullptr, 0, key.size());
    crypto_generichash_update(&st, reinterpret_cast<const unsigned char *>(kContext.data()), kContext.size());
    crypto_generichash_update(&st, reinterpret_cast<const unsigned char *>(browser.reveal().data()),
                              browser.reveal().size());
    crypto_generichash_final(&st, key.data(), key.size());
    sodium_memzero(&st, sizeof st);
    return key;
}

}  // namespace

std::string detail::seal_for_browser(const Secret &browser, std::string_view session_secret,
                                     std::string_view session_id) {
    SecretKey key = browser_key(browser);
    std::string out = seal(key, session_secret, session_id);
    sodium_memzero(key.data(), key.size());
    return out;
}

std::optional<Secret> detail::open_for_browser(const Secret &browser, std::string_view sealed,
                                               std::string_view session_id) {
    SecretKey key = browser_key(browser);
    auto out = open_sealed(key, sealed, session_id);
    sodium_memzero(key.data(), key.size());
    return out;
}

Result<std::vector<BrowserAccount>> Sessions::accounts(const Secret &browser, const Secret &current) {
    return detail::guarded("list accounts", [&]() -> Result<std::vector<BrowserAccount>> {
        const Millis now = engine_.now();
        auto txn = engine_.store_->read();
        const std::string current_hash = plausible_secret(current.reveal()) ? record_key(current.reveal()) : "";
        std::vector<SessionRecord> list;
        if (plausible_secret(browser.reveal())) list = txn->sessions_of_browser(record_key(browser.reveal()));
        if (!current_hash.empty() &&
            std::none_of(list.begin(), list.end(),
                         [&](const SessionRecord &s) { return same_record_key(s.hash, current_hash); })) {
            if (auto s = txn->session(current_hash); s && s->kind == SessionKind::Cookie) list.push_back(std::move(*s));
        }
        std::sort(list.begin(), list.end(),
                  [](const SessionRecord &a, const SessionRecord &b) { return a.created_at < b.created_at; });
        std::vector<BrowserAccount> out;
        for (auto &s : list) {
            if (!detail::is_live(engine_.policy(), s, now)) continue;
            auto user = txn->user_by_id(s.user_id);
            if (!user || user->suspended) continue;
            BrowserAccount a;
            a.user = std::move(*user);
            a.session_id = s.id;
            a.active = !current_hash.empty() && same_record_key(s.hash, current_hash);
            out.push_back(std::move(a));
        }
        return out;
    });
}

Result<Session> Sessions::switch_to(const Secret &browser, std::string_view session_id, std::string_view client) {
    const Error none{Code::NotFound, "no such account in this browser"};
    if (!plausible_secret(browser.reveal())) return none;
    return detail::guarded("switch account", [&]() -> Result<Session> {
        const Millis now = engine_.now();
        auto txn = engine_.store_->write();
        auto s = txn->session_by_id(session_id);
        if (!s || s->kind != SessionKind::Cookie || !same_record_key(s->browser, record_key(browser.reveal())) ||
            !detail::is_live(engine_.policy(), *s, now)) {
            return none;
        }
        auto user = txn->user_by_id(s->user_id);
        auto secret = detail::open_for_browser(browser, s->browser_sealed, s->id);
        if (!user || user->suspended || !secret || !same_record_key(s->hash, record_key(secret->reveal()))) return none;
        s->last_seen_at = now;  // a switch is a use: the least recently used account goes first
        txn->put_session(*s);
        txn->append_audit(detail::audit(now, "session.switched", user->email, client, user->id, s->id));
        txn->commit();
        Session out;
        out.user = std::move(*user);
        out.token = std::move(*secret);
        out.expires_at = s->expires_at;
        out.id = s->id;
        out.kind = SessionKind::Cookie;
        out.browser = browser;
        return out;
    });
}

Status Sessions::logout_browser(const Secret &browser, const Principal *p, std::string_view client) {
    return detail::guarded("logout everywhere in this browser", [&]() -> Status {
        const Millis now = engine_.now();
        auto txn = engine_.store_->write();
        std::vector<SessionRecord> list;
        if (plausible_secret(browser.reveal())) list = txn->sessions_of_browser(record_key(browser.reveal()));
        if (p != nullptr &&
            std::none_of(list.begin(), list.end(), [&](const SessionRecord &s) { return s.hash == p->session.hash; })) {
            list.push_back(p->session);
        }
        for (const auto &s : list) {
            txn->del_session(s.hash);
            auto user = txn->user_by_id(s.user_id);
            txn->append_audit(detail::audit(now, "logout", user ? user->email : std::string(), client, s.user_id,
                                            s.id + ":all"));
        }
        txn->commit();
        return ok_status();
    });
}

}  // namespace signin
