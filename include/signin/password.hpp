// Passwords (signin_passwords): NFC normalization, the policy, Argon2id hashing, the
// breached-password blocklist, and the attempt-limit rules. Valid C++17: the glue includes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "signin/throttle.hpp"
#include "signin/types.hpp"

namespace signin {
class Store;
}

namespace signin {

// An extra check of a new password (auth.with_password_check): given the NFC form, an error
// refuses the password and its message is shown to the person.
using PasswordChecker = std::function<Status(std::string_view nfc_password)>;

namespace password {

inline constexpr std::size_t kMaxBytes = 1024;        // longer is refused: nobody types more
inline constexpr unsigned kDefaultMinLength = 15;     // code points, after NFC
inline constexpr unsigned kLowestMinLength = 8;       // password_min_length cannot go below

// Argon2id settings (OWASP's minimum): 19 MiB, 2 iterations, parallelism 1, 16-byte salt.
struct HashParams {
    unsigned long long opslimit = 2;
    std::size_t memlimit = 19456 * 1024;  // bytes; m=19456 in the PHC string
};

// The NFC form of UTF-8 text (ICU), or nullopt when the text is not valid UTF-8. Never trims.
std::optional<std::string> normalize_nfc(std::string_view utf8);
// Code points in valid UTF-8 text.
std::size_t code_points(std::string_view utf8);

// A PHC string `$argon2id$v=19$m=…,t=…,p=1$salt$hash` (libsodium crypto_pwhash_str_alg, fresh
// random salt). Code::Internal when libsodium fails (out of memory).
Result<std::string> hash(std::string_view nfc_password, const HashParams &params = {});
// Constant-time verification of a PHC string; false for a malformed one.
bool verify(std::string_view phc, std::string_view nfc_password);
// Whether a PHC string was made with settings other than `params` (or is not Argon2id).
bool needs_rehash(std::string_view phc, const HashParams &params = {});
// A hash of a random password with `params`, made once per settings: sign-in attempts that have
// no real hash to check verify against it, so every failure costs the same work (the time of an
// answer does not tell whether the account exists or has a password).
const std::string &dummy_hash(const HashParams &params = {});

// The built-in policy, applied when a password is set, never at sign-in: length in code points,
// at most kMaxBytes, the common list and the obvious shapes. `nfc` must already be normalized.
// Code::WeakPassword with a sentence a person can act on.
Status check_policy(std::string_view nfc, unsigned min_length = kDefaultMinLength);
// Whether a lowercase ASCII word is on the built-in list (Debian's john-data and wamerican).
bool is_common(std::string_view lowercase_word);
std::size_t common_list_size();

// A breached-password list kept only as SHA-256 digests: a file of sorted, unique 32-byte raw
// digests of the UTF-8 (NFC) passwords, nothing else. mmap'ed read-only and binary-searched, so
// every worker shares the same pages instead of loading it into its heap.
class Blocklist {
public:
    // Code::InvalidRequest with the reason when the file is missing, empty of structure (size
    // not a multiple of 32) or not sorted.
    static Result<std::shared_ptr<const Blocklist>> open(const std::string &path);
    ~Blocklist();
    Blocklist(const Blocklist &) = delete;
    Blocklist &operator=(const Blocklist &) = delete;

    bool contains_digest(const unsigned char digest[32]) const;
    bool contains(std::string_view nfc_password) const;
    std::size_t size() const { return count_; }

private:
    Blocklist() = default;
    const unsigned char *data_ = nullptr;
    std::size_t count_ = 0;
    std::size_t map_len_ = 0;
};
// The blocklist as a checker for Passwords::with_password_check.
PasswordChecker blocklist_checker(std::shared_ptr<const Blocklist> list);

}  // namespace password

// ------------------------------------------------------------------------- attempt limits

struct AttemptLimits {
    unsigned free_attempts = 5;                 // per (address, client) before the backoff
    Millis backoff = 60 * 1000;                 // first wait after the free attempts
    Millis backoff_max = 3600 * 1000;           // the wait doubles up to this
    unsigned address_limit = 100;               // attempts per address, any client …
    Millis address_window = 60 * 1000;          // … per this window
    Millis register_backoff = 60 * 1000;        // repeated password registration for one address
    Millis register_backoff_max = 3600 * 1000;
    unsigned client_ipv6_prefix = 64;           // IPv6 clients are counted by this prefix
};

// The password attempt limits in the throttle vocabulary (signin/throttle.hpp), built from the
// policy's numbers: every limiter applies these same rules, in this process's memory
// (MemoryAttemptLimiter), in the store (StoreAttemptLimiter) or in the nginx glue's shared zone.
struct PasswordRules {
    throttle::BackoffRule pair;          // per (address, client): free failures, then the doubling wait
    throttle::WindowRule address;        // per address, any client
    throttle::BackoffRule registration;  // per address: every password registration counts
};
PasswordRules password_rules(const AttemptLimits &limits);

// The one key of an address in every counter (attempts, sends): group and address as the engine
// normalizes them, or "" when either is invalid.
std::string address_key(std::string_view email, std::string_view group);
// The key of a client in the per-client counters: an IPv6 address is cut to its first
// `ipv6_prefix` bits ("2001:db8:1:2::/64": one host owns a whole /64), anything else is itself.
std::string client_key(std::string_view client, unsigned ipv6_prefix);

// The key of a mailbox in the send counters: the normalized address whatever the group (one
// inbox is one inbox, however many tenants it registers with), or "" when it is invalid.
std::string mailbox_key(std::string_view email);

// Where the engine keeps password-attempt counters. The engine calls it from any thread.
class AttemptLimiter {
public:
    virtual ~AttemptLimiter() = default;
    // Checks both limits for a sign-in attempt and counts it against the address window.
    // 0 = go ahead; else milliseconds to wait (429).
    virtual Millis login_attempt(std::string_view address, std::string_view client, Millis now) = 0;
    virtual void login_failed(std::string_view address, std::string_view client, Millis now) = 0;
    // A success clears this (address, client) pair only.
    virtual void login_succeeded(std::string_view address, std::string_view client) = 0;
    // A password reset clears every pair of the address.
    virtual void reset_address(std::string_view address) = 0;
    // A password registration of the address: 0 = go ahead (and counted), else the wait.
    virtual Millis register_attempt(std::string_view address, Millis now) = 0;
};

// No limits in the engine: for transports that count attempts themselves (the nginx glue keeps
// them in its shared-memory zone, on the event loop).
class UnlimitedAttempts final : public AttemptLimiter {
public:
    Millis login_attempt(std::string_view, std::string_view, Millis) override { return 0; }
    void login_failed(std::string_view, std::string_view, Millis) override {}
    void login_succeeded(std::string_view, std::string_view) override {}
    void reset_address(std::string_view) override {}
    Millis register_attempt(std::string_view, Millis) override { return 0; }
};

// Counters in the store, for a store that several nginx nodes share (PostgreSQL): the same rules,
// and every node sees every attempt. Each call is a transaction of its own (retried when it loses a
// race with another node's). A store that fails lets the attempt go ahead and loses the count:
// the sign-in that follows reads the same store and fails with it.
class StoreAttemptLimiter final : public AttemptLimiter {
public:
    StoreAttemptLimiter(std::shared_ptr<Store> store, AttemptLimits limits)
        : store_(std::move(store)), rules_(password_rules(limits)), ipv6_prefix_(limits.client_ipv6_prefix) {}
    Millis login_attempt(std::string_view address, std::string_view client, Millis now) override;
    void login_failed(std::string_view address, std::string_view client, Millis now) override;
    void login_succeeded(std::string_view address, std::string_view client) override;
    void reset_address(std::string_view address) override;
    Millis register_attempt(std::string_view address, Millis now) override;

private:
    std::string pair_key(std::string_view address, std::string_view client) const;
    std::shared_ptr<Store> store_;
    PasswordRules rules_;
    unsigned ipv6_prefix_;
};

// Counters in this process's memory (one nginx worker, a test, a custom transport with one
// process). Bounded: idle records are dropped when it grows past `max_entries`.
class MemoryAttemptLimiter final : public AttemptLimiter {
public:
    explicit MemoryAttemptLimiter(AttemptLimits limits, std::size_t max_entries = 100000)
        : rules_(password_rules(limits)), ipv6_prefix_(limits.client_ipv6_prefix), max_entries_(max_entries) {}
    Millis login_attempt(std::string_view address, std::string_view client, Millis now) override;
    void login_failed(std::string_view address, std::string_view client, Millis now) override;
    void login_succeeded(std::string_view address, std::string_view client) override;
    void reset_address(std::string_view address) override;
    Millis register_attempt(std::string_view address, Millis now) override;

private:
    std::string key(std::string_view address, std::string_view client) const;
    void prune(Millis now);
    PasswordRules rules_;
    unsigned ipv6_prefix_;
    std::size_t max_entries_;
    std::mutex mu_;
    std::unordered_map<std::string, throttle::BackoffState> pairs_;
    std::unordered_map<std::string, throttle::WindowState> windows_;
    std::unordered_map<std::string, throttle::BackoffState> registrations_;
};

}  // namespace signin
