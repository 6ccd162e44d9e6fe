// Password attempt limits (SPEC §8): the rules in the throttle vocabulary, and counters kept in
// this process's memory. The nginx glue keeps the same states under the same rules in its
// shared-memory zone (ngx_http_signin_limits_module.cpp).
#include <arpa/inet.h>

#include <algorithm>

#include "signin/engine.hpp"
#include "signin/password.hpp"

namespace signin {

PasswordRules password_rules(const AttemptLimits &l) {
    PasswordRules r;
    r.pair.free_failures = l.free_attempts;
    r.pair.base = l.backoff;
    r.pair.max = l.backoff_max;
    r.address.limit = l.address_limit;
    r.address.window = l.address_window;
    r.registration.free_failures = 1;  // every registration counts: the first makes the next wait
    r.registration.base = l.register_backoff;
    r.registration.max = l.register_backoff_max;
    return r;
}

std::string address_key(std::string_view email, std::string_view group) {
    auto e = normalize_email(email);
    auto g = normalize_group(group);
    if (!e || !g) return {};
    return *g + "\n" + *e;
}

std::string client_key(std::string_view client, unsigned ipv6_prefix) {
    if (client.find(':') == std::string_view::npos || client.size() >= INET6_ADDRSTRLEN) return std::string(client);
    char text[INET6_ADDRSTRLEN];
    client.copy(text, client.size());
    text[client.size()] = '\0';
    unsigned char a[16];
    if (inet_pton(AF_INET6, text, a) != 1) return std::string(client);
    const unsigned bits = std::min(ipv6_prefix, 128u);
    for (unsigned i = 0; i < 16; ++i) {
        if (bits >= 8 * (i + 1)) continue;
        const unsigned keep = bits <= 8 * i ? 0 : bits - 8 * i;  // 0-7 high bits of this byte
        a[i] = static_cast<unsigned char>(a[i] & static_cast<unsigned char>(0xffu << (8 - keep)));
    }
    if (inet_ntop(AF_INET6, a, text, sizeof text) == nullptr) return std::string(client);
    return std::string(text) + "/" + std::to_string(bits);
}

std::string mailbox_key(std::string_view email) {
    auto e = normalize_email(email);
    return e ? *e : std::string();
}

namespace {

// How long a backoff still refuses, in milliseconds (0: an attempt may go ahead).
Millis backoff_wait(const throttle::BackoffState &s, const throttle::BackoffRule &rule, Millis now) {
    return throttle::backoff_check(s, rule, now).allowed ? 0 : s.until - now;
}

}  // namespace

std::string MemoryAttemptLimiter::key(std::string_view address, std::string_view client) const {
    std::string k(address);
    k.push_back('\0');
    k.append(client_key(client, ipv6_prefix_));
    return k;
}

void MemoryAttemptLimiter::prune(Millis now) {
    if (pairs_.size() + windows_.size() + registrations_.size() < max_entries_) return;
    // only state that no longer refuses anything is dropped
    for (auto it = pairs_.begin(); it != pairs_.end();) {
        it = now >= throttle::backoff_expiry(it->second, rules_.pair) ? pairs_.erase(it) : std::next(it);
    }
    for (auto it = windows_.begin(); it != windows_.end();) {
        it = now >= throttle::window_expiry(it->second, rules_.address) ? windows_.erase(it) : std::next(it);
    }
    for (auto it = registrations_.begin(); it != registrations_.end();) {
        it = now >= throttle::backoff_expiry(it->second, rules_.registration) ? registrations_.erase(it)
                                                                              : std::next(it);
    }
}

Millis MemoryAttemptLimiter::login_attempt(std::string_view address, std::string_view client, Millis now) {
    std::lock_guard<std::mutex> lock(mu_);
    prune(now);
    if (auto it = pairs_.find(key(address, client)); it != pairs_.end()) {
        if (Millis w = backoff_wait(it->second, rules_.pair, now)) return w;
    }
    throttle::Verdict v = throttle::take(windows_[std::string(address)], rules_.address, now);
    return v.allowed ? 0 : Millis{v.retry_after} * 1000;
}

void MemoryAttemptLimiter::login_failed(std::string_view address, std::string_view client, Millis now) {
    std::lock_guard<std::mutex> lock(mu_);
    throttle::BackoffState &s = pairs_[key(address, client)];
    s = throttle::backoff_fail(s, rules_.pair, now);
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
    throttle::BackoffState &s = registrations_[std::string(address)];
    if (Millis w = backoff_wait(s, rules_.registration, now)) return w;
    s = throttle::backoff_fail(s, rules_.registration, now);
    return 0;
}

}  // namespace signin
