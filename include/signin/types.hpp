// Value types shared by the core's API: users, deliveries, sessions, results.
// Valid C++17: the nginx glue includes these headers.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "signin/secret.hpp"

namespace signin {

using Millis = std::int64_t;  // milliseconds since the Unix epoch, or a duration in milliseconds

// Why an email is sent (a Delivery's purpose).
enum class Purpose : std::uint8_t {
    SignIn = 1,
    Registration = 2,
    AlreadyRegistered = 3,
    EmailChange = 4,
    EmailChangeApproval = 5,
    EmailChanged = 6,
    PasswordChanged = 7,
    Invitation = 8,  // signin-admin invite --send; its token signs the person in
    MfaLocked = 9,   // a notice: too many wrong second-factor codes locked the account's factor
    NewSignIn = 10,  // a notice: the account was signed in to from a browser or app not seen before
};
// "SignIn", "Registration", ...: a delivery's "purpose" in JSON.
std::string_view purpose_name(Purpose p);
// "sign_in", "registration", ...: the suffix of the email tag auth.<purpose>.
std::string_view purpose_tag(Purpose p);
// Whether a token of this purpose can be exchanged for a session.
bool purpose_signs_in(Purpose p);

// auth.Login / auth.Register: what a token request asks for.
enum class Intent : std::uint8_t { Login = 1, Register = 2 };

enum class SessionKind : std::uint8_t { Cookie = 1, Bearer = 2 };
std::string_view kind_name(SessionKind k);

// How a session was made; POST /password needs an email-token session.
enum class SignInMethod : std::uint8_t { EmailToken = 1, Password = 2, Passkey = 3, Provider = 4 };
// The way in as events and logs name it: "email", "password", "passkey", "provider".
std::string_view method_name(SignInMethod m);

struct User {
    std::string id;
    std::string email;
    std::string group_id;
    Millis created_at = 0;
    Millis updated_at = 0;
    bool suspended = false;
    std::string password_hash;  // PHC string, empty when the account has no password
    std::vector<std::string> roles;  // sorted, each [a-z0-9_-]{1,32} (access.hpp)
    bool pending = false;  // made by an invitation and never signed in yet
    std::string lang;      // the language of the account's last sign-in (a tag; "" before any), for notices
    // api_versions_pin signin: the API version this account's requests without one are answered
    // in (a version's name; "" until its first versioned request)
    std::string api_version;
};

// What the delivery function is given: the token is revealed only where the email is written.
struct Delivery {
    std::string email;
    Secret token;
    std::string code;  // the token's short code, XXXX-XXXX (codes.hpp); empty in notices
    Purpose purpose = Purpose::SignIn;
    std::string group_id;
    bool with_password = false;  // a Registration token that creates the account with a chosen password
    // The language to write it in (a signin_languages tag): the request's that caused it, or for a
    // notice the account's last. "" or a tag no longer configured: the first configured.
    std::string lang;
    // NewSignIn: when, from where and with what the account was signed in to. browser and system
    // are summarize_user_agent's fixed names (empty when not recognized), never the header's words.
    Millis signed_in_at = 0;
    std::string browser, system, client;
};

// A token record as stored: keyed by the hash of the token, never the token itself.
struct TokenRecord {
    std::string hash;  // 32 raw bytes
    std::string group_id;
    std::string email;
    Purpose purpose = Purpose::SignIn;
    Millis created_at = 0;
    Millis expires_at = 0;
    std::string password_hash;  // a password registration keeps only the hash until the exchange
    std::string code_hash;      // the short code's digest with its address (codes.hpp), 32 raw bytes
    std::uint8_t code_failures = 0;  // wrong codes for the address while this token waited
    // An email change's two tokens (EmailChange to the new address, EmailChangeApproval to the
    // old one; the change needs both) name their account, both addresses and each other.
    std::string user_id;
    std::string old_email, new_email;
    std::string pair_hash;        // the other half
    bool pair_spent = false;      // the other half was spent: this one completes the change
    std::string session_id;       // the session that asked: the one that stays when the change is made
    // A Registration's roles, given by the application's registration check: the account gets
    // them when the token creates it (sorted, each once).
    std::vector<std::string> roles;
};

// A session (cookie) or bearer token as stored, keyed by the hash of its secret.
struct SessionRecord {
    std::string hash;  // 32 raw bytes
    std::string id;    // public identifier (UUIDv7), the `id` of GET /sessions and revoke
    std::string user_id;
    SessionKind kind = SessionKind::Cookie;
    SignInMethod method = SignInMethod::EmailToken;
    Millis created_at = 0;
    Millis last_seen_at = 0;
    Millis expires_at = 0;  // absolute expiry
    std::string client;
    std::string user_agent;
    bool mfa = false;  // the sign-in passed a second factor ($signin_mfa, signin_require mfa)
    // Several accounts in one browser: the store key of the browser cookie of the
    // browser that made this cookie session (record_key, 38 bytes, or 32 when an earlier build
    // of 0.1.0 made it: the digest alone; empty: none), and this session's
    // secret sealed under a key only that cookie gives, so that the browser can switch back to
    // it. The store alone opens nothing.
    std::string browser;
    std::string browser_sealed;
};

// A user's second factors (signin_mfa), one record per user, keyed by the user id. The TOTP
// secrets are sealed under the key file (signin_secret_key), never in clear in the store.
struct MfaRecord {
    std::string user_id;
    std::string totp_sealed;         // the confirmed TOTP secret, sealed; empty: no TOTP
    std::string pending_sealed;      // a setup's secret until its first code confirms it; empty: none
    Millis pending_expires_at = 0;   // when that setup lapses
    std::int64_t last_step = -1;     // the last TOTP time step accepted: it and older are never accepted again
    std::vector<std::string> recovery_hashes;  // the digests of the unused recovery codes
    struct Device {
        std::string hash;  // digest of the remembered device's cookie secret
        Millis expires_at = 0;
    };
    std::vector<Device> devices;     // remembered devices (signin_mfa_remember)
    Millis updated_at = 0;
    // Wrong codes in a row at the second step of a sign-in, whatever the client or the pending
    // sign-in: past Policy::mfa_free_failures each try waits until wait_until; at
    // Policy::mfa_lock_failures the factor is locked until an email sign-in or an admin reset.
    std::uint32_t failures = 0;
    Millis wait_until = 0;
    bool has_factor() const { return !totp_sealed.empty(); }
};

// A sign-in that passed its first step and waits for the second factor (POST /mfa/verify or
// /mfa/token), keyed by the hash of its mfa_token. Lives 5 minutes, dies after 5 wrong codes.
struct MfaPendingRecord {
    std::string hash;  // 32 raw bytes
    std::string user_id;
    SessionKind kind = SessionKind::Cookie;
    SignInMethod method = SignInMethod::EmailToken;
    std::string client;
    std::string user_agent;
    Millis created_at = 0;
    Millis expires_at = 0;
    std::uint8_t failures = 0;
    bool add = false;  // the first step asked to add an account to its browser
};

// A passkey (signin_passkeys): a WebAuthn credential of a user, keyed by the digest of its id. Only
// public data: the authenticator keeps the private key.
struct PasskeyRecord {
    std::string key;            // BLAKE2b-256 of credential_id (32 raw bytes)
    std::string credential_id;  // as the authenticator made it (1..1023 bytes)
    std::string user_id;
    std::string name;
    std::string public_key;     // the COSE_Key's CBOR bytes
    std::int64_t alg = 0;       // its COSE algorithm (-7, -8, -257)
    std::uint32_t sign_count = 0;
    bool user_verified = false;    // the registration verified the user (UV)
    bool backup_eligible = false;  // a synced passkey (BE)
    Millis created_at = 0;
    Millis last_used_at = 0;    // 0: never
};

// An OpenID Connect identity (issuer, subject) linked to an account (signin_provider), keyed by the
// digest of both: the provider's word for who signed in, never its tokens.
struct ProviderLinkRecord {
    std::string key;        // BLAKE2b-256 of issuer '\0' subject (32 raw bytes)
    std::string user_id;
    std::string provider;   // the signin_provider NAME it was linked through
    std::string issuer;
    std::string subject;
    std::string email;      // the address the provider gave when linked ("" when none)
    Millis created_at = 0;
    Millis last_used_at = 0;
};

// One entry of GET /providers/linked and GET /account.
struct ProviderLinkInfo {
    std::string id;        // the key, base64url
    std::string provider;  // its name
    std::string email;
    Millis created_at = 0;
    Millis last_used_at = 0;
};

// One entry of GET /passkeys.
struct PasskeyInfo {
    std::string id;  // the credential id, base64url
    std::string name;
    Millis created_at = 0;
    Millis last_used_at = 0;
    bool synced = false;  // backup eligible: the passkey may live on several devices
};

// What a browser brings to a cookie sign-in: its cookies (device, browser), and whether the new
// session joins the browser's accounts (add) or replaces the session it signed in with.
struct BrowserCookies {
    Secret device;   // the remembered-device cookie (second factors)
    Secret browser;  // the browser cookie; empty or unknown: the sign-in makes a new one
    Secret current;  // the session cookie the request carried
    Secret known;    // the known-browser cookie (signin_new_signin_notice)
    bool add = false;
};

// auth.Session: the result of an exchange or a password sign-in.
struct Session {
    User user;
    Secret token;
    Millis expires_at = 0;
    std::string id;
    SessionKind kind = SessionKind::Cookie;
    Secret browser;  // a browser sign-in's browser cookie, to set again; else empty
    Secret known;    // a new known-browser cookie to set (signin_new_signin_notice); else empty
    SignInMethod method = SignInMethod::EmailToken;  // the way in (signin_metrics counts by it)
};

// One account of this browser (GET /accounts).
struct BrowserAccount {
    User user;
    std::string session_id;
    bool active = false;  // the session the request's cookie names
};

// Where a sign-in stands (auth.exchange_step, auth.login_password_step): signed in, or, for a
// user with a second factor, waiting for it (no way in skips it): then mfa_token is the secret
// that POST /mfa/verify or /mfa/token finishes it with, within 5 minutes.
struct SignInStep {
    enum class State : std::uint8_t { SignedIn = 1, SecondFactorPending = 2 };
    State state = State::SignedIn;
    std::optional<Session> session;  // set when SignedIn
    std::string pending_user_id;     // set when SecondFactorPending
    Secret mfa_token;                // set when SecondFactorPending
    Millis mfa_expires_at = 0;
    std::vector<std::string> methods;  // the factors that finish it: "totp", "recovery_code"
    bool signed_in() const { return state == State::SignedIn; }
};

// The caller behind a session token.
struct Principal {
    User user;
    SessionRecord session;
};

// One entry of GET /sessions.
struct SessionInfo {
    std::string id;
    Millis created_at = 0;
    Millis last_seen_at = 0;
    Millis expires_at = 0;
    std::string client;
    std::string user_agent;
    SessionKind kind = SessionKind::Cookie;
    bool current = false;
    bool fresh = false;
};

// An audit entry. Never holds a token, session secret or password.
struct AuditEntry {
    Millis at = 0;
    std::string kind;  // "token.requested", "login.failed", ...
    std::string email;
    std::string client;
    std::string user_id;
    std::string detail;
};

// Why an engine operation failed: a stable code (the error body's `code`, by code_name) that a
// transport maps to its own answer (the nginx glue: an HTTP status).
enum class Code : std::uint8_t {
    InvalidRequest = 1,    // invalid_request: malformed or missing input
    InvalidEmail,          // invalid_email
    InvalidToken,          // invalid_token: unknown, expired, spent or cancelled
    Unauthenticated,       // unauthenticated: no live session
    Suspended,             // account_suspended
    RegistrationDisabled,  // registration_disabled
    EmailDisabled,         // email_disabled
    OriginMismatch,        // origin_mismatch
    NotFound,              // not_found
    RateLimited,           // rate_limited (Error::retry_after says how long)
    StorageFull,           // storage_full
    StorageError,          // storage_unavailable
    DeliveryFailed,        // delivery_failed: the delivery function failed
    Internal,              // internal
    PasswordsDisabled,     // passwords_disabled
    WeakPassword,          // weak_password: refused by the policy or a custom checker
    WrongPassword,         // wrong_password: wrong `current` when changing a password
    InvalidCredentials,    // invalid_credentials: password sign-in failed, whatever the cause
    FreshSessionRequired,  // fresh_session_required: setting a password needs a fresh email-token session
    NoPassword,            // no_password: changing a password of an account without one
    Forbidden,             // forbidden: signed in, and the location's access rules refuse this account
    MfaRequired,           // mfa_required: this way in, or this location, needs the second factor
    InvalidCode,           // invalid_code: a wrong second-factor code or recovery code
    MfaDisabled,           // mfa_disabled: signin_mfa is off
    EmailTaken,            // email_taken: an email change whose new address got an account meanwhile
    PasskeysDisabled,      // passkeys_disabled: signin_passkeys is off
    PasskeyRefused,        // passkey_refused: a passkey sign-in that does not pass (the audit says why)
    ProviderRefused,       // provider_refused: an OpenID Connect sign-in that does not pass (the audit says why)
    AccountExists,         // account_exists: a provider's address has an account it may not sign in to
    LastWayIn,             // last_way_in: removing it would leave the account no way in
    MfaLocked,             // mfa_locked: too many wrong second-factor codes; an email sign-in or an admin unlocks
    RegistrationRefused,   // registration_refused: the application's registration check said no
    RegistrationCheckFailed,  // registration_check_failed: the registration check gave no usable answer
};
std::string_view code_name(Code c);

struct Error {
    Code code = Code::Internal;
    std::string message;  // a sentence a person can read; never holds a secret
    Millis retry_after = 0;  // RateLimited: how long to wait (ms)
};

// Reading the value of a Result that holds an error (a bug of the caller, never an outcome).
class BadResultAccess : public std::logic_error {
public:
    explicit BadResultAccess(const Error &e) : std::logic_error("value() of a failed result: " + e.message) {}
};

// A value or an Error, never both (the contract of absl::StatusOr): ok() says which; value()
// and operator-> on an error throw BadResultAccess; error() on a value is Code::Internal. No
// exception crosses the API otherwise. Ignoring a Result is a compile-time warning.
template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
    Result(Error e) : v_(std::in_place_index<1>, std::move(e)) {}      // NOLINT
    Result(Code c, std::string message) : v_(std::in_place_index<1>, Error{c, std::move(message)}) {}

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T &value() & { return checked(); }
    const T &value() const & { return checked(); }
    T &&value() && { return std::move(checked()); }
    T *operator->() { return &checked(); }
    const T *operator->() const { return &checked(); }
    T &operator*() & { return checked(); }
    const T &operator*() const & { return checked(); }

    const Error &error() const {
        static const Error not_an_error{Code::Internal, "error() of a successful result"};
        return ok() ? not_an_error : std::get<1>(v_);
    }

private:
    T &checked() {
        if (!ok()) throw BadResultAccess(std::get<1>(v_));
        return std::get<0>(v_);
    }
    const T &checked() const {
        if (!ok()) throw BadResultAccess(std::get<1>(v_));
        return std::get<0>(v_);
    }
    std::variant<T, Error> v_;
};

struct Done {};
using Status = Result<Done>;
inline Status ok_status() { return Status(Done{}); }

}  // namespace signin
