// The per-process session cache of signin_session_cache (session_cache.hpp).
#include "signin/session_cache.hpp"

#include "engine_detail.hpp"

namespace signin {

const Principal *SessionCache::get(std::string_view key, SessionKind kind, const Policy &policy, Millis now) {
    auto it = entries_.find(std::string(key));
    if (it == entries_.end()) return nullptr;
    const Entry &e = it->second;
    // too old, from the future (a clock step), or no longer live by its own dates
    if (now - e.at >= ttl_ || now < e.at || !detail::is_live(policy, e.principal.session, now) ||
        e.principal.user.suspended) {
        entries_.erase(it);
        return nullptr;
    }
    if (e.principal.session.kind != kind) return nullptr;
    return &e.principal;
}

void SessionCache::put(const std::string &key, const Principal &p, Millis now) {
    if (ttl_ <= 0 || max_ == 0) return;
    auto [it, fresh] = entries_.insert_or_assign(key, Entry{p, now});
    (void)it;
    if (!fresh) return;
    order_.push_back(key);
    // the bound: the oldest keys go (a key put again keeps its first place: it only goes sooner)
    while (entries_.size() > max_ && !order_.empty()) {
        entries_.erase(order_.front());
        order_.pop_front();
    }
    if (order_.size() > 2 * max_) {  // keys erased or expired since: drop their places
        std::deque<std::string> live;
        for (auto &k : order_) {
            if (entries_.count(k)) live.push_back(std::move(k));
        }
        order_.swap(live);
    }
}

void SessionCache::touched(std::string_view key, Millis now) {
    auto it = entries_.find(std::string(key));
    if (it != entries_.end()) it->second.principal.session.last_seen_at = now;
}

void SessionCache::erase(std::string_view key) { entries_.erase(std::string(key)); }

}  // namespace signin
