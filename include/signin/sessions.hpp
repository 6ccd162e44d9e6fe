// Sessions: who is behind a session token (cookie or bearer), last_seen_at, the
// session list, revocation and logout. Valid C++17: the glue includes it.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "signin/engine.hpp"
#include "signin/types.hpp"

namespace signin {

class Sessions {
public:
    explicit Sessions(Engine &engine) : engine_(engine) {}

    // auth.authenticate_from: the principal behind a live session token of `kind`. Read-only.
    Result<Principal> authenticate_from(const Secret &token, std::string_view client,
                                        SessionKind kind = SessionKind::Cookie);
    // The same, shared: a store that reads in place may hand back a principal it decoded before
    // from the same bytes (ReadTxn::principal), to this caller and to later ones.
    Result<std::shared_ptr<const Principal>> authenticate_shared(const Secret &token, SessionKind kind);
    // authenticate_shared for several credentials at once, each its token and kind; the results in
    // their order. A store whose reads are round trips reads every session in one (principals).
    struct Asked {
        const Secret *token;
        SessionKind kind;
    };
    std::vector<Result<std::shared_ptr<const Principal>>> authenticate_shared(const std::vector<Asked> &asked);
    // The same in two halves, for a caller that reads the principals itself (an event loop with a
    // Store::session_reader): the record keys to read for `asked` (of its plausible tokens), and
    // then the answers from the principals they found (in the keys' order). Nothing is read.
    struct Reading {
        std::vector<RecordKey> keys;
        std::vector<std::size_t> at;  // where each key's token was asked
        std::vector<std::string_view> views() const;
    };
    static Reading reading(const std::vector<Asked> &asked);
    std::vector<Result<std::shared_ptr<const Principal>>> answers(const std::vector<Asked> &asked, const Reading &reading,
                                                                 std::vector<std::shared_ptr<const Principal>> found) const;
    // Whether last_seen_at is old enough to be written again, and the write itself.
    bool needs_touch(const Principal &p) const;
    Status touch(const Principal &p);

    // auth.sessions, auth.revoke_session, auth.logout.
    Result<std::vector<SessionInfo>> sessions(const Principal &p);
    Status revoke_session(const Principal &p, std::string_view session_id, std::string_view client);
    Status logout(const Principal &p, std::string_view client);

    // Several accounts in one browser (signin_browser_accounts), by its browser cookie. The
    // accounts: its live cookie sessions, oldest sign-in first, the one `current` (the session
    // cookie) names marked active, and listed even when another browser made it.
    Result<std::vector<BrowserAccount>> accounts(const Secret &browser, const Secret &current);
    // Another session of this browser becomes the one the browser uses: the session with its
    // secret, to be set as the session cookie. Code::NotFound unless session_id names a live
    // session made in this browser, of an account that is not suspended.
    Result<Session> switch_to(const Secret &browser, std::string_view session_id, std::string_view client);
    // POST /logout {all: true}: ends every session of this browser, and p's when given.
    Status logout_browser(const Secret &browser, const Principal *p, std::string_view client);

private:
    Engine &engine_;
};

}  // namespace signin
