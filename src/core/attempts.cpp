// Password attempt limits (SPEC §8): the rules, and counters kept in this process's memory.
#include <algorithm>

#include "signin/password.hpp"

namespace signin {
namespace throttle_rules {
namespace {

// base doubled `n` times, at most `max`
Millis doubled(Millis base, std::uint32_t n, Millis max) {
    Millis d = base;
    for (std::uint32_t i = 0; i < n && d < max; ++i) d *= 2;
    return std::min(d, max);
}

}  // namespace

Millis pair_wait(const Pair &p, Millis now) { return p.blocked_until > now ? p.blocked_until - now : 0; }

void pair_failed(Pair &p, Millis now, const AttemptLimits &l) {
    // a quiet hour past the last wait forgets the history
    if (p.failures > 0 && now >= std::max(p.blocked_until, p.last) + l.backoff_max) p = Pair{};
    p.failures++;
    p.last = now;
    // the free attempts used up, each failure makes the next attempt wait, doubling
    if (p.failures >= l.free_attempts) {
        p.blocked_until = now + doubled(l.backoff, p.failures - l.free_attempts, l.backoff_max);
    }
}

bool pair_idle(const Pair &p, Millis now, const AttemptLimits &l) {
    return now >= std::max(p.blocked_until, p.last) + l.backoff_max;
}

Millis window_take(Window &w, Millis now, const AttemptLimits &l) {
    if (now >= w.start + l.address_window) {
        w.start = now;
        w.count = 0;
    }
    if (w.count >= l.address_limit) return w.start + l.address_window - now;
    w.count++;
    return 0;
}

Millis backoff_take(Backoff &b, Millis now, const AttemptLimits &l) {
    if (b.count > 0 && now < b.next_allowed) return b.next_allowed - now;
    if (b.count > 0 && now >= b.next_allowed + l.register_backoff_max) b.count = 0;  // long quiet: start over
    b.next_allowed = now + doubled(l.register_backoff, b.count, l.register_backoff_max);
    b.count++;
    return 0;
}

}  // namespace throttle_rules

std::string MemoryAttemptLimiter::key(std::string_view address, std::string_view client) {
    std::string k(address);
    k.push_back('\0');
    k.append(client);
    return k;
}

void MemoryAttemptLimiter::prune(Millis now) {
    if (pairs_.size() + windows_.size() + registrations_.size() < max_entries_) return;
    for (auto it = pairs_.begin(); it != pairs_.end();) {
        it = throttle_rules::pair_idle(it->second, now, limits_) ? pairs_.erase(it) : std::next(it);
    }
    for (auto it = windows_.begin(); it != windows_.end();) {
        it = now >= it->second.start + limits_.address_window ? windows_.erase(it) : std::next(it);
    }
    for (auto it = registrations_.begin(); it != registrations_.end();) {
        it = now >= it->second.next_allowed + limits_.register_backoff_max ? registrations_.erase(it)
                                                                             : std::next(it);
    }
}

Millis MemoryAttemptLimiter::login_attempt(std::string_view address, std::string_view client, Millis now) {
    std::lock_guard<std::mutex> lock(mu_);
    prune(now);
    if (auto it = pairs_.find(key(address, client)); it != pairs_.end()) {
        if (Millis w = throttle_rules::pair_wait(it->second, now)) return w;
    }
    return throttle_rules::window_take(windows_[std::string(address)], now, limits_);
}

void MemoryAttemptLimiter::login_failed(std::string_view address, std::string_view client, Millis now) {
    std::lock_guard<std::mutex> lock(mu_);
    throttle_rules::pair_failed(pairs_[key(address, client)], now, limits_);
}

void MemoryAttemptLimiter::login_succeeded(std::string_view address, std::string_view client) {
    std::lock_guard<std::mutex> lock(mu_);
    pairs_.erase(key(address, client));
}

void MemoryAttemptLimiter::reset_address(std::string_view address) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string prefix = key(address, {});
    for (auto it = pairs_.begin(); it != pairs_.end();) {
        it = it->first.compare(0, prefix.size(), prefix) == 0 ? pairs_.erase(it) : std::next(it);
    }
}

Millis MemoryAttemptLimiter::register_attempt(std::string_view address, Millis now) {
    std::lock_guard<std::mutex> lock(mu_);
    prune(now);
    return throttle_rules::backoff_take(registrations_[std::string(address)], now, limits_);
}

}  // namespace signin
