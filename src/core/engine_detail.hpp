// Internals shared by the engine's source files (engine.cpp and one file per capability). Not
// installed.
#pragma once

#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "encoding.hpp"
#include "signin/engine.hpp"
#include "signin/i18n.hpp"
#include "signin/mfa.hpp"
#include "signin/store.hpp"
#include "signin/types.hpp"

namespace signin {
namespace detail {

// The language of a notice (an email no request of the person asked for): the account's last, else
// the request's (which may be someone else's, as for a locked second factor), else the default.
inline std::string notice_language(const User &user) {
    return user.lang.empty() ? i18n::RequestLanguage::current() : user.lang;
}

inline AuditEntry audit(Millis at, std::string kind, std::string_view email, std::string_view client,
                 std::string_view user_id = {}, std::string_view detail = {}) {
    AuditEntry e;
    e.at = at;
    e.kind = std::move(kind);
    e.email = std::string(email);
    e.client = std::string(client);
    e.user_id = std::string(user_id);
    e.detail = std::string(detail);
    return e;
}

// Two digests (or keys) equal, in constant time; an empty one equals nothing.
bool same_digest(std::string_view a, std::string_view b);

// What GET /account and GET /providers/linked show of a provider link: its key as the id.
inline ProviderLinkInfo link_info(const ProviderLinkRecord &l) {
    return {enc::base64url(reinterpret_cast<const unsigned char *>(l.key.data()), l.key.size()), l.provider, l.email,
            l.created_at, l.last_used_at};
}

// "Fresh" (enough to set a password or delete the account): a session made within
// policy.fresh_window by an email-code exchange, or by an OpenID Connect provider (the person
// proved an outside identity just now, as an email code proves an inbox: on a providers-only site
// it is the only proof there is).
inline bool is_fresh(const Policy &policy, const SessionRecord &s, Millis now) {
    return (s.method == SignInMethod::EmailToken || s.method == SignInMethod::Provider) &&
           now - s.created_at < policy.fresh_window;
}
// The refusal of an operation that needs a fresh session: "<what> needs a sign-in with an email
// code (or a provider) in the last N minutes<then>".
inline Error fresh_required(const Policy &policy, std::string_view what, std::string_view then = {}) {
    return Error{Code::FreshSessionRequired, std::string(what) + " needs a sign-in with an email code or a provider in the last " +
                                                 std::to_string(policy.fresh_window / 60000) + " minutes" +
                                                 std::string(then)};
}

// Ends every session of a user but `keep` (a session hash; "" ends them all), each noted as a
// session.ended event for `reason` (no audit entry: the change that ends them has its own). The
// caller commits.
inline void end_sessions_except(WriteTxn &txn, std::string_view user_id, std::string_view keep, Millis now,
                                std::string_view reason) {
    for (const auto &s : txn.sessions_of(user_id)) {
        if (s.hash == keep) continue;
        txn.del_session(s.hash);
        EventFacts facts;
        facts.session_id = s.id;
        facts.reason = reason;
        txn.note_event(audit(now, "session.ended", {}, {}, user_id), facts);
    }
}

// Whether a session may still be used: not past its expiry, and a cookie session not idle too long.
inline bool is_live(const Policy &policy, const SessionRecord &s, Millis now) {
    return s.expires_at > now && (s.kind != SessionKind::Cookie || s.last_seen_at + policy.session_idle > now);
}

// A session secret sealed under a key derived from its browser's cookie, bound to the session
// id (so only sessions made in this browser can be switched to), and opened again; nullopt when it does not open (sessions.cpp).
std::string seal_for_browser(const Secret &browser, std::string_view session_secret, std::string_view session_id);
std::optional<Secret> open_for_browser(const Secret &browser, std::string_view sealed, std::string_view session_id);

// The live sessions of p's user as GET /sessions lists them (sessions.cpp), newest first.
std::vector<SessionInfo> live_sessions(ReadTxn &txn, const Principal &p, const Policy &policy, Millis now);

// A passkey as GET /passkeys lists it: no key material (passkeys.cpp).
PasskeyInfo passkey_info(const PasskeyRecord &r);

// The account a change names: by id, or by (group, address) (engine.cpp).
Result<User> find_account(ReadTxn &txn, const AccountRef &who);

// Deletes a user and everything tied to it (sessions, tokens, second factors, remembered devices,
// pending sign-ins, passkeys, provider links, the grants and consents of the OpenID provider) with
// the user.deleted entry; the caller commits
// (accounts.cpp).
void erase_account(WriteTxn &txn, const User &user, Millis now, std::string_view client);

// GET /mfa's counts of a user's second-factor record (none: all off) (mfa.cpp).
MfaStatus mfa_status(const std::optional<MfaRecord> &m, Millis now);

// Before the next try of a transaction that lost a race (StoreError::retry): a short random
// pause that grows with the tries, so that the racers do not meet again (engine.cpp).
void retry_pause(int attempt);
inline constexpr int kTransactionTries = 10;

// Runs f and maps every exception to an Error: nothing escapes the API. A transaction that lost a
// race with another (only a database with serializable transactions says so) runs
// again from the start, so f reads what the winner wrote: f's effects outside the store are only
// its result, which the last try makes.
template <class F>
auto guarded(const char *what, F &&f) -> decltype(f()) {
    try {
        for (int attempt = 1;; ++attempt) {
            try {
                return f();
            } catch (const StoreError &e) {
                if (!e.retry() || attempt >= kTransactionTries) throw;
            }
            retry_pause(attempt);
        }
    } catch (const StoreError &e) {
        return Error{e.code(), std::string(what) + ": " + e.what()};
    } catch (const std::bad_alloc &) {
        return Error{Code::Internal, std::string(what) + ": out of memory"};
    } catch (const std::exception &e) {
        return Error{Code::Internal, std::string(what) + ": " + e.what()};
    }
}

}  // namespace detail
}  // namespace signin
