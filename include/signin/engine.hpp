// The engine's shared context: the store, the origin, the policy, the clock and the delivery
// function that every capability (tokens.hpp, sessions.hpp, passwords.hpp) works over, and the
// operations that belong to no capability. An Identity (auth.hpp) is one Engine with its
// capabilities. No exceptions cross this API. Valid C++17: the glue includes it.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "signin/access.hpp"
#include "signin/events.hpp"
#include "signin/outbox.hpp"
#include "signin/password.hpp"
#include "signin/secret_key.hpp"
#include "signin/store.hpp"
#include "signin/types.hpp"

namespace signin {

class Clock {
public:
    virtual ~Clock() = default;
    virtual Millis now() const = 0;
};

// Every limit, with its documented value as default; each is a directive, so tests can shorten a
// window instead of sleeping through it.
struct Policy {
    Millis token_ttl = 10 * 60 * 1000;          // a token is valid ten minutes
    unsigned tokens_per_address = 3;            // the three most recent stay valid
    Millis token_resend = 60 * 1000;            // "usable token already waiting" window
    Millis session_ttl = 30LL * 24 * 3600 * 1000;
    Millis session_idle = 7LL * 24 * 3600 * 1000;
    Millis session_touch = 60 * 1000;           // last_seen_at is written at most this often
    Millis audit_keep = 90LL * 24 * 3600 * 1000;  // audit entries older than this are purged
    Millis bearer_ttl = 3600 * 1000;
    Millis fresh_window = 10 * 60 * 1000;       // a fresh session for POST /password
    bool allow_registration = false;            // auth.allow_registration
    // Who may join when registration is on (signin_registration on domain=... file=...): an
    // address outside gets the same answer and no account and no email. nullptr: anyone.
    std::shared_ptr<const People> may_join;
    bool with_email = true;                     // off = auth.new_without_email
    bool with_passwords = false;                // auth.with_passwords
    unsigned password_min_length = password::kDefaultMinLength;  // code points; not below 8
    password::HashParams password_hash;         // Argon2id 19 MiB, 2 iterations
    AttemptLimits attempts;                     // the default limiter's numbers
    // Second factors (signin_mfa). Off: the mfa operations answer MfaDisabled and no way in asks
    // for a factor.
    bool with_mfa = false;
    Millis mfa_pending_ttl = 5 * 60 * 1000;      // a sign-in waits this long for its factor
    unsigned mfa_pending_failures = 5;           // ... and dies at this many wrong codes
    Millis mfa_setup_ttl = 10 * 60 * 1000;       // a TOTP setup waits this long for its first code
    Millis mfa_remember = 30LL * 24 * 3600 * 1000;  // remembered devices (0: never remembered)
    // Wrong second-factor codes of one account, over every pending sign-in and client: this many
    // in a row are free, then each try waits mfa_backoff, doubling up to attempts.backoff_max;
    // at mfa_lock_failures (NIST SP 800-63B's 100) the factor is locked until an email sign-in
    // proves the inbox again or an admin resets it.
    unsigned mfa_free_failures = 10;
    Millis mfa_backoff = 60 * 1000;
    unsigned mfa_lock_failures = 100;
    std::string mfa_issuer;                      // the otpauth issuer (signin_site_name); "" = the origin's host
    // Several accounts in one browser (signin_browser_accounts): at most this many
    // cookie sessions per browser; one more ends the one used least recently. At least 1.
    unsigned browser_accounts = 5;
    // Passkeys (signin_passkeys). Off: every passkey operation answers PasskeysDisabled.
    bool with_passkeys = false;
    std::string passkey_rp_id;  // signin_passkey_rp_id; "" = the origin's host
    // signin_new_signin_notice: a sign-in from a browser or app the account has not seen before
    // emails the NewSignIn notice (known_browsers.hpp).
    bool new_signin_notice = false;
};

// A configured origin: "https://app.example.com" or a loopback "http://127.0.0.1:8080".
struct Origin {
    std::string text;  // normalized: lowercase scheme and host, no default port, no trailing slash
    bool https = false;
    bool loopback = false;
};
// Parses and normalizes an origin; nullopt with `why` set when it is not one (an http origin
// that is not loopback is refused: its session cookie could not be Secure).
std::optional<Origin> parse_origin(std::string_view text, std::string *why);
// The host of a normalized origin's text, without scheme or port ("app.example.com", "[::1]").
std::string origin_host(std::string_view origin);
// "localhost", "[::1]" or a dotted 127.x.y.z address (lower case, no port): a name only this
// machine has.
bool is_loopback_host(std::string_view host);
// A host as a URI names it (RFC 3986), lower case: a DNS name of LDH labels (an IDN in its xn--
// form), a dotted IPv4 address, or an IPv6 address in brackets. Nothing else: no other
// punctuation, no control or non-ASCII byte. Both the site's origin and the mail relay's URL.
bool valid_host(std::string_view host);

// Lowercased, validated address, or nullopt.
std::optional<std::string> normalize_email(std::string_view email);
// "" → "default"; otherwise [a-z0-9][a-z0-9._-]{0,63}, or nullopt.
std::optional<std::string> normalize_group(std::string_view group);

// The secret digest of the store (BLAKE2b-256, 32 raw bytes).
std::string secret_hash(std::string_view secret);
// The store key of a token or session: the 6 bytes its secret starts with (for secrets made by
// enc::ordered_secret, the creation time) then secret_hash (38 bytes). Records written before
// keys began with the time (earlier builds of 0.1.0) are under secret_hash alone: the store's
// token() and session() look there when a 38-byte key finds nothing, and same_record_key accepts
// either form.
std::string record_key(std::string_view secret);
// record_key in place, without a heap string (every signed-in request computes one).
class RecordKey {
public:
    explicit RecordKey(std::string_view secret);
    std::string_view view() const { return {bytes_.data(), size_}; }

private:
    std::array<char, 6 + 32> bytes_{};  // 6 + crypto_generichash_BYTES
    std::size_t size_ = 0;
};
bool same_record_key(std::string_view stored, std::string_view key);
// Whether text has the shape of a token or session secret this engine makes.
bool plausible_secret(std::string_view text);

// The account an administrator's change is made to: by its id when `id` is given, otherwise the
// one with `email` in `group`.
struct AccountRef {
    std::string id;
    std::string group, email;
};

// Caller-supplied delivery (auth.Delivery). An error cancels the token.
using DeliveryFn = std::function<Status(const Delivery &)>;

class Engine {
public:
    Engine(std::shared_ptr<Store> store, Origin origin, Policy policy, DeliveryFn deliver = {},
           std::shared_ptr<const Clock> clock = nullptr);
    // The capabilities hold a reference to their engine: it stays where it was made.
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;

    const Policy &policy() const { return policy_; }
    const Origin &origin() const { return origin_; }
    // The store's use and size (signin_metrics).
    Store::Space store_space() const { return store_->space(); }
    Millis now() const;

    // auth.check_origin: a present origin must match; a cookie write must carry one.
    Status check_origin(std::optional<std::string_view> origin, bool cookie_write) const;
    // auth.cookie_name: __Host-svc_session on https, svc_dev_session on a loopback origin.
    std::string_view cookie_name() const;
    // The remembered device's cookie (signin_mfa_remember): __Host-svc_device, or svc_dev_device on
    // loopback.
    std::string_view device_cookie_name() const { return origin_.https ? "__Host-svc_device" : "svc_dev_device"; }
    // The browser cookie (browser accounts): __Host-svc_browser, or svc_dev_browser on loopback.
    std::string_view browser_cookie_name() const { return origin_.https ? "__Host-svc_browser" : "svc_dev_browser"; }
    // The known-browser cookie (signin_new_signin_notice): __Host-svc_known, or svc_dev_known on loopback.
    std::string_view known_cookie_name() const { return origin_.https ? "__Host-svc_known" : "svc_dev_known"; }

    // Administration (signin-admin): suspend or restore an account.
    Status set_suspended(std::string_view group, std::string_view email, bool suspended) {
        return set_suspended(AccountRef{{}, std::string(group), std::string(email)}, suspended);
    }
    // The same for an account by id or address, audited with `client` (who made the change).
    Status set_suspended(const AccountRef &who, bool suspended, std::string_view client = "admin");
    // Administration: give or take a role (access.hpp normalize_role). Adding one held, or
    // removing one not held, changes nothing and succeeds.
    Status set_role(std::string_view group, std::string_view email, std::string_view role, bool add) {
        return set_roles(AccountRef{{}, std::string(group), std::string(email)}, add ? std::vector<std::string>{std::string(role)} : std::vector<std::string>{},
                         add ? std::vector<std::string>{} : std::vector<std::string>{std::string(role)});
    }
    // Gives the roles `add` and takes the roles `remove` in one transaction, each change audited
    // with `client`; nothing is written when one of them is no role.
    Status set_roles(const AccountRef &who, const std::vector<std::string> &add, const std::vector<std::string> &remove,
                     std::string_view client = "admin");

    // api_versions_pin signin: pins an account to the API version its first versioned request
    // was answered in, unless it has a pin already (store.hpp pin_api_version). Not audited: the
    // gateway notes what the account used. A user gone meanwhile is no error.
    Status pin_api_version(std::string_view user_id, std::string_view name);

    // Appends one audit entry in its own write transaction (a transport's own decisions, such as
    // a throttled request). The entry must not hold a secret.
    Status record(const AuditEntry &entry);

    // Deletes expired tokens and sessions, at most `budget`; returns how many.
    // ... and audit entries older than policy().audit_keep, in the same budget.
    Result<std::size_t> purge_expired(std::size_t budget);
    // Deletes index entries whose record is gone (Store::WriteTxn::purge_index), at most
    // `budget`; returns how many. purge_expired does this too with what its budget leaves.
    Result<std::size_t> purge_index(std::size_t budget);

    // Deliveries go through the outbox (outbox.hpp) instead of the delivery function: a token
    // request writes its delivery there in the token's own transaction and returns its key. Set
    // once, before the engine serves.
    void use_outbox(const OutboxSettings &settings);
    bool has_outbox() const { return outbox_.has_value(); }

    // Events for the application (events.hpp): from now on every change this process writes to
    // the store (through any engine over it) is written with its event. Set once, before the
    // engine serves.
    void use_events(const EventSettings &settings);
    bool has_events() const { return events_ != nullptr; }
    // Tells the store which event types this server writes (none when use_events was not called),
    // so that signin-admin's changes are written as events too (use_published_events).
    Status publish_events();
    // signin-admin: writes events of the types the server published (true), or none (false).
    Result<bool> use_published_events();

    // The key file's key (secret_key.hpp): second-factor secrets are sealed under a subkey of it,
    // so a copy of the store alone gives nobody's codes. Set once, before the engine serves;
    // without it, enrolling a second factor fails.
    void use_secret_key(const SecretKey &key);

    // Group commit for a transport: runs `operations` (engine calls on this thread), whose
    // writes are one batch (a failed operation leaves the others alone), and makes the whole
    // batch durable with one commit. An error when that commit failed: then nothing of the
    // batch was written, whatever the operations returned. `operations` may run twice
    // (Store::batch): each run does the same work from the start; what the last run gives counts.
    Status write_batch(const std::function<void()> &operations);

private:
    // Only the capabilities reach the store and open_session: a caller holding an Identity
    // cannot make a session without passing one of their checks.
    friend class Tokens;
    friend class Sessions;
    friend class Passwords;
    friend class Outbox;
    friend class Mfa;
    friend class Accounts;
    friend class Passkeys;
    friend class Providers;
    friend class OidcIssuer;
    friend class Events;
    friend class Admin;

    struct OutboxState {
        SecretKey key;  // the outbox's subkey
        Millis hold;
        unsigned retries;
    };
    // Writes a new session of `user` in txn (with its audit entry; the caller commits) and returns
    // it with its secret: one place for every way in (email token, password). A cookie session
    // with `browser` joins that browser's accounts (join_browser).
    Session open_session(WriteTxn &txn, const User &user, SessionKind kind, SignInMethod method,
                         std::string_view client, std::string_view user_agent, Millis now,
                         std::string detail, bool mfa = false, const BrowserCookies *browser = nullptr) const;
    // Every way in ends here (email token, password, passkey; later providers): a session, or
    // for a user with a second factor a pending step, unless the browser's device cookie is a
    // remembered device of this user or the way in was two factors by itself (a passkey with
    // user verification: the session counts as two factors). The caller commits txn.
    SignInStep sign_in(WriteTxn &txn, const User &user, SessionKind kind, SignInMethod method,
                       std::string_view client, std::string_view user_agent, Millis now, std::string detail,
                       const BrowserCookies *browser, bool two_factors = false) const;
    // A new cookie session's place in its browser: ends the session the browser
    // signed in with unless `add`, an older session of the same user in this browser, and the
    // least recently used ones beyond policy().browser_accounts; returns the browser's new
    // cookie (a new one at every sign-in; the sessions the old cookie opens move to it). The
    // caller commits txn.
    Secret join_browser(WriteTxn &txn, const User &user, const BrowserCookies &browser, std::string_view client,
                        Millis now) const;
    // signin_new_signin_notice: records the browser (or app) of a new session of `user` in txn and
    // writes the NewSignIn notice when the account has not seen it (known_browsers.hpp); returns
    // the known-browser cookie to set (a cookie session), else empty. The caller commits.
    Secret note_browser(WriteTxn &txn, const User &user, SessionKind kind, const BrowserCookies *browser,
                        std::string_view client, std::string_view user_agent, Millis now) const;
    // Ends every remembered device of a user (password set or changed, factor disabled); the caller commits.
    void forget_devices(WriteTxn &txn, const User &user, std::string_view client, Millis now) const;
    // Calls the delivery function; Code::DeliveryFailed when there is none.
    Status deliver(const Delivery &d) const;
    // With an outbox: writes d to it in txn (the caller commits), held by the caller (the first
    // send is its own) unless `held` is false (the outbox's next check sends it), and returns the
    // entry's key; "" without an outbox.
    std::string enqueue(WriteTxn &txn, const Delivery &d, std::string_view client, Millis now,
                        bool held = true) const;
    // Deletes an outbox entry (a synchronous delivery made by the caller instead).
    Status forget_outbox(std::string_view key) const;

    std::shared_ptr<Store> store_;
    Origin origin_;
    Policy policy_;
    DeliveryFn deliver_;
    std::shared_ptr<const Clock> clock_;
    std::optional<OutboxState> outbox_;
    struct EventState {
        std::optional<WebhookKey> key;               // the webhook secret's key (none: nothing is sent)
        std::array<bool, kEventTypes.size()> types;  // written or not, by event_type_index
        unsigned retries;
        Millis hold;
    };
    // shared with the store's audit hook, which holds it weakly
    std::shared_ptr<const EventState> events_;
    std::optional<SecretKey> mfa_key_;  // the subkey that seals TOTP secrets
    std::optional<SecretKey> passkey_key_;  // the subkey of the passkey challenges' MAC
};

}  // namespace signin
