// Sessions (SPEC §3 "Session", §4, §5): who is behind a session token, last_seen_at, the
// session list, revocation and logout. Valid C++17: the glue includes it.
#pragma once

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
    // Whether last_seen_at is old enough to be written again, and the write itself.
    bool needs_touch(const Principal &p) const;
    Status touch(const Principal &p);

    // auth.sessions, auth.revoke_session, auth.logout.
    Result<std::vector<SessionInfo>> sessions(const Principal &p);
    Status revoke_session(const Principal &p, std::string_view session_id, std::string_view client);
    Status logout(const Principal &p, std::string_view client);

private:
    Engine &engine_;
};

}  // namespace signin
