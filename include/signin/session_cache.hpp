// A per-process cache of who a session belongs to (signin_session_cache), for a
// store over the network: a request whose session was read less than `ttl` ago is answered
// without reading it again. Off unless configured: a sign-out, a revocation, a suspension or a
// role change made elsewhere (another node, another worker) reaches requests answered from here
// only when their entry is older than `ttl`. Entries are keyed by the session key
// (record_key: a digest of the secret, never the secret) and hold what the store said; a hit is
// still checked against the clock (expiry, idle time) and the kind of credential. Not
// thread-safe: one event loop owns one cache.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "signin/engine.hpp"
#include "signin/types.hpp"

namespace signin {

class SessionCache {
public:
    SessionCache(Millis ttl, std::size_t max_entries) : ttl_(ttl), max_(max_entries) {}

    // The principal cached for this session key, when it was put less than ttl ago and the
    // session is still live and of this kind; nullptr otherwise (a stale entry is dropped).
    const Principal *get(std::string_view key, SessionKind kind, const Policy &policy, Millis now);
    // What the store said about a session at `now`.
    void put(const std::string &key, const Principal &p, Millis now);
    // A touch was started: last_seen_at as it will be written (no second touch from the cache).
    void touched(std::string_view key, Millis now);
    void erase(std::string_view key);
    std::size_t size() const { return entries_.size(); }

private:
    struct Entry {
        Principal principal;
        Millis at = 0;
    };
    const Millis ttl_;
    const std::size_t max_;
    std::unordered_map<std::string, Entry> entries_;
    std::deque<std::string> order_;  // insertion order, for the bound (oldest first)
};

}  // namespace signin
