// Internals shared by the engine's source files (engine.cpp and one file per capability). Not
// installed.
#pragma once

#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "signin/engine.hpp"
#include "signin/store.hpp"
#include "signin/types.hpp"

namespace signin {
namespace detail {

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

// The live sessions of p's user as GET /sessions lists them (sessions.cpp), newest first.
std::vector<SessionInfo> live_sessions(ReadTxn &txn, const Principal &p, const Policy &policy, Millis now);

// Runs f and maps every exception to an Error: nothing escapes the API.
template <class F>
auto guarded(const char *what, F &&f) -> decltype(f()) {
    try {
        return f();
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
