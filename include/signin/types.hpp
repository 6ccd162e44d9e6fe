// Value types shared by the core's API (SPEC §2): users, deliveries, sessions, results.
// Valid C++17: the nginx glue includes these headers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "signin/secret.hpp"

namespace signin {

using Millis = std::int64_t;  // milliseconds since the Unix epoch, or a duration in milliseconds

// Why an email is sent (SPEC §2 "Delivery").
enum class Purpose : std::uint8_t {
    SignIn = 1,
    Registration = 2,
    AlreadyRegistered = 3,
    EmailChange = 4,
    EmailChangeApproval = 5,
    EmailChanged = 6,
    PasswordChanged = 7,
};
// "SignIn", "Registration", ... as SPEC names them.
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
enum class SignInMethod : std::uint8_t { EmailToken = 1, Password = 2 };

struct User {
    std::string id;
    std::string email;
    std::string group_id;
    Millis created_at = 0;
    Millis updated_at = 0;
    bool suspended = false;
    std::string password_hash;  // PHC string, empty when the account has no password
};

// What the delivery function is given: the token is revealed only where the email is written.
struct Delivery {
    std::string email;
    Secret token;
    Purpose purpose = Purpose::SignIn;
    std::string group_id;
    bool with_password = false;  // a Registration token that creates the account with a chosen password
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
};

// auth.Session: the result of an exchange or a password sign-in.
struct Session {
    User user;
    Secret token;
    Millis expires_at = 0;
    std::string id;
    SessionKind kind = SessionKind::Cookie;
};

// The caller behind a session token.
struct Principal {
    User user;
    SessionRecord session;
};

// One entry of GET /sessions (DESIGN §5).
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

// Stable error codes (DESIGN §5 `code`).
enum class Code : std::uint8_t {
    Ok = 0,
    InvalidRequest,        // 400 invalid_request
    InvalidEmail,          // 400 invalid_email
    InvalidToken,          // 401 invalid_token: unknown, expired, spent or cancelled
    Unauthenticated,       // 401 unauthenticated
    Suspended,             // 403 account_suspended
    RegistrationDisabled,  // 403 registration_disabled
    EmailDisabled,         // 403 email_disabled
    OriginMismatch,        // 403 origin_mismatch
    NotFound,              // 404 not_found
    RateLimited,           // 429 rate_limited
    StorageFull,           // 507 storage_full
    StorageError,          // 503 storage_unavailable
    DeliveryFailed,        // the delivery function failed (never told to an HTTP client)
    Internal,              // 500 internal
    AmbiguousCredentials,  // 400 ambiguous_credentials: cookie and bearer, or two session cookies
    UnsupportedMediaType,  // 415 unsupported_media_type
    PayloadTooLarge,       // 413 payload_too_large
    MethodNotAllowed,      // 405 method_not_allowed
    PasswordsDisabled,     // 403 passwords_disabled
    WeakPassword,          // 400 weak_password: refused by the policy or a custom checker
    WrongPassword,         // 400 wrong_password: wrong `current` at /password/change
    InvalidCredentials,    // 401 invalid_credentials: password sign-in failed, whatever the cause
    FreshSessionRequired,  // 403 fresh_session_required: POST /password needs a fresh email-token session
    NoPassword,            // 403 no_password: /password/change on an account without a password
};
std::string_view code_name(Code c);
int code_status(Code c);

struct Error {
    Code code = Code::Internal;
    std::string message;  // a sentence a person can read; never holds a secret
    Millis retry_after = 0;  // RateLimited: how long to wait (ms)
};

// Success with a value, or an Error. No exceptions cross the API.
template <class T>
class Result {
public:
    Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
    Result(Error e) : error_(std::move(e)) {}      // NOLINT
    Result(Code c, std::string message) : error_(Error{c, std::move(message)}) {}

    bool ok() const { return value_.has_value(); }
    explicit operator bool() const { return ok(); }
    T &value() { return *value_; }
    const T &value() const { return *value_; }
    T *operator->() { return &*value_; }
    const T *operator->() const { return &*value_; }
    const Error &error() const { return error_; }

private:
    std::optional<T> value_;
    Error error_;
};

struct Done {};
using Status = Result<Done>;
inline Status ok_status() { return Status(Done{}); }

}  // namespace signin
