// Password attempt limits (per address and client, and per address): the rules in the throttle vocabulary, and counters kept in
// this process's memory, or in the store (a store that several nginx nodes share). The nginx glue keeps the same states under the same rules in its
// shared-memory zone (ngx_http_signin_limits_module.cpp).
#include <arpa/inet.h>

#include <algorithm>

#include "engine_detail.hpp"
#include "signin/engine.hpp"
#include "signin/password.hpp"
#include "signin/shared_limits.hpp"
#include "signin/store.hpp"

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

// ---------------------------------------------------------------- counters in the store

namespace signin {
namespace {

// A state as the store keeps it: a kind byte, then fixed-width little-endian fields.
void put_le(std::string &out, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
std::uint64_t get_le(std::string_view in, std::size_t at, int bytes) {
    std::uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(in[at + static_cast<std::size_t>(i)]);
    return v;
}

std::string encode(const throttle::BackoffState &s) {
    std::string out("B");
    put_le(out, s.failures, 4);
    put_le(out, static_cast<std::uint64_t>(s.last), 8);
    put_le(out, static_cast<std::uint64_t>(s.until), 8);
    return out;
}
// A state that is not one (damaged, or of another kind) counts as a fresh one.
throttle::BackoffState decode_backoff(const std::optional<std::string> &v) {
    throttle::BackoffState s;
    if (!v || v->size() != 21 || (*v)[0] != 'B') return s;
    s.failures = static_cast<std::uint32_t>(get_le(*v, 1, 4));
    s.last = static_cast<Millis>(get_le(*v, 5, 8));
    s.until = static_cast<Millis>(get_le(*v, 13, 8));
    return s;
}
std::string encode(const throttle::WindowState &s) {
    std::string out("W");
    put_le(out, static_cast<std::uint64_t>(s.start), 8);
    put_le(out, s.current, 4);
    put_le(out, s.previous, 4);
    return out;
}
throttle::WindowState decode_window(const std::optional<std::string> &v) {
    throttle::WindowState s;
    if (!v || v->size() != 17 || (*v)[0] != 'W') return s;
    s.start = static_cast<Millis>(get_le(*v, 1, 8));
    s.current = static_cast<std::uint32_t>(get_le(*v, 9, 4));
    s.previous = static_cast<std::uint32_t>(get_le(*v, 13, 4));
    return s;
}

// Keys: one prefix per kind, so that a reset deletes an address's pairs by prefix.
std::string window_key(std::string_view address) { return std::string("pa\n") + std::string(address); }
std::string registration_key(std::string_view address) { return std::string("pr\n") + std::string(address); }

// f(txn) in a write transaction of its own, run again when it loses a race (detail::guarded); a
// store that fails gives `fallback`.
template <class T, class F>
T counted(Store &store, T fallback, F f) {
    Result<T> r = detail::guarded("limit counter", [&]() -> Result<T> {
        auto txn = store.write();
        T out = f(*txn);
        txn->commit();
        return out;
    });
    return r ? r.value() : fallback;
}

}  // namespace

std::string StoreAttemptLimiter::pair_key(std::string_view address, std::string_view client) const {
    std::string k("pw\n");
    k.append(address);
    k.push_back('\0');
    k.append(client_key(client, ipv6_prefix_));
    return k;
}

Millis StoreAttemptLimiter::login_attempt(std::string_view address, std::string_view client, Millis now) {
    return counted<Millis>(*store_, 0, [&](WriteTxn &txn) -> Millis {
        const throttle::BackoffState pair = decode_backoff(txn.counter(pair_key(address, client)));
        if (Millis w = backoff_wait(pair, rules_.pair, now)) return w;
        const std::string key = window_key(address);
        throttle::WindowState s = decode_window(txn.counter(key));
        throttle::Verdict v = throttle::take(s, rules_.address, now);
        txn.put_counter(key, encode(s), throttle::window_expiry(s, rules_.address));
        return v.allowed ? 0 : Millis{v.retry_after} * 1000;
    });
}

void StoreAttemptLimiter::login_failed(std::string_view address, std::string_view client, Millis now) {
    (void)counted<bool>(*store_, false, [&](WriteTxn &txn) {
        const std::string key = pair_key(address, client);
        const throttle::BackoffState s = throttle::backoff_fail(decode_backoff(txn.counter(key)), rules_.pair, now);
        txn.put_counter(key, encode(s), throttle::backoff_expiry(s, rules_.pair));
        return true;
    });
}

void StoreAttemptLimiter::login_succeeded(std::string_view address, std::string_view client) {
    (void)counted<bool>(*store_, false, [&](WriteTxn &txn) {
        txn.del_counter(pair_key(address, client));
        return true;
    });
}

void StoreAttemptLimiter::reset_address(std::string_view address) {
    (void)counted<bool>(*store_, false, [&](WriteTxn &txn) {
        (void)txn.del_counters(pair_key(address, {}));  // "pw\n" address '\0': every client's
        return true;
    });
}

Millis StoreAttemptLimiter::register_attempt(std::string_view address, Millis now) {
    return counted<Millis>(*store_, 0, [&](WriteTxn &txn) -> Millis {
        const std::string key = registration_key(address);
        throttle::BackoffState s = decode_backoff(txn.counter(key));
        if (Millis w = backoff_wait(s, rules_.registration, now)) return w;
        s = throttle::backoff_fail(s, rules_.registration, now);
        txn.put_counter(key, encode(s), throttle::backoff_expiry(s, rules_.registration));
        return 0;
    });
}

Millis SharedLimits::take(std::string_view key, const throttle::WindowRule &rule, Millis now) {
    if (rule.limit == 0) return 0;
    return counted<Millis>(*store_, 0, [&](WriteTxn &txn) -> Millis {
        const std::string k = std::string("rq\n") + std::string(key);
        throttle::WindowState s = decode_window(txn.counter(k));
        throttle::Verdict v = throttle::take(s, rule, now);
        txn.put_counter(k, encode(s), throttle::window_expiry(s, rule));
        return v.allowed ? 0 : Millis{v.retry_after} * 1000;
    });
}

void SharedLimits::refund(std::string_view key, const throttle::WindowRule &rule, Millis now) {
    if (rule.limit == 0) return;
    (void)counted<bool>(*store_, false, [&](WriteTxn &txn) {
        const std::string k = std::string("rq\n") + std::string(key);
        throttle::WindowState s = decode_window(txn.counter(k));
        throttle::refund(s, rule, now);
        txn.put_counter(k, encode(s), throttle::window_expiry(s, rule));
        return true;
    });
}

}  // namespace signin
