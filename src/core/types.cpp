#include "signin/types.hpp"

#include "signin/store.hpp"

namespace signin {

std::string_view purpose_name(Purpose p) {
    switch (p) {
    case Purpose::SignIn: return "SignIn";
    case Purpose::Registration: return "Registration";
    case Purpose::AlreadyRegistered: return "AlreadyRegistered";
    case Purpose::EmailChange: return "EmailChange";
    case Purpose::EmailChangeApproval: return "EmailChangeApproval";
    case Purpose::EmailChanged: return "EmailChanged";
    case Purpose::PasswordChanged: return "PasswordChanged";
    case Purpose::Invitation: return "Invitation";
    case Purpose::MfaLocked: return "MfaLocked";
    case Purpose::NewSignIn: return "NewSignIn";
    }
    return "Unknown";
}

std::string_view purpose_tag(Purpose p) {
    switch (p) {
    case Purpose::SignIn: return "sign_in";
    case Purpose::Registration: return "registration";
    case Purpose::AlreadyRegistered: return "already_registered";
    case Purpose::EmailChange: return "email_change";
    case Purpose::EmailChangeApproval: return "email_change_approval";
    case Purpose::EmailChanged: return "email_changed";
    case Purpose::PasswordChanged: return "password_changed";
    case Purpose::Invitation: return "invitation";
    case Purpose::MfaLocked: return "mfa_locked";
    case Purpose::NewSignIn: return "new_sign_in";
    }
    return "unknown";
}

bool purpose_signs_in(Purpose p) {
    return p == Purpose::SignIn || p == Purpose::Registration || p == Purpose::AlreadyRegistered ||
           p == Purpose::Invitation;
}

std::string_view kind_name(SessionKind k) { return k == SessionKind::Bearer ? "bearer" : "cookie"; }

std::string_view method_name(SignInMethod m) {
    switch (m) {
    case SignInMethod::EmailToken: return "email";
    case SignInMethod::Password: return "password";
    case SignInMethod::Passkey: return "passkey";
    case SignInMethod::Provider: return "provider";
    }
    return "email";
}

std::string_view code_name(Code c) {
    switch (c) {
    case Code::InvalidRequest: return "invalid_request";
    case Code::InvalidEmail: return "invalid_email";
    case Code::InvalidToken: return "invalid_token";
    case Code::Unauthenticated: return "unauthenticated";
    case Code::Suspended: return "account_suspended";
    case Code::RegistrationDisabled: return "registration_disabled";
    case Code::RegistrationRefused: return "registration_refused";
    case Code::RegistrationCheckFailed: return "registration_check_failed";
    case Code::EmailDisabled: return "email_disabled";
    case Code::OriginMismatch: return "origin_mismatch";
    case Code::NotFound: return "not_found";
    case Code::RateLimited: return "rate_limited";
    case Code::StorageFull: return "storage_full";
    case Code::StorageError: return "storage_unavailable";
    case Code::DeliveryFailed: return "delivery_failed";
    case Code::Internal: return "internal";
    case Code::PasswordsDisabled: return "passwords_disabled";
    case Code::WeakPassword: return "weak_password";
    case Code::WrongPassword: return "wrong_password";
    case Code::InvalidCredentials: return "invalid_credentials";
    case Code::FreshSessionRequired: return "fresh_session_required";
    case Code::NoPassword: return "no_password";
    case Code::Forbidden: return "forbidden";
    case Code::MfaRequired: return "mfa_required";
    case Code::InvalidCode: return "invalid_code";
    case Code::MfaDisabled: return "mfa_disabled";
    case Code::EmailTaken: return "email_taken";
    case Code::PasskeysDisabled: return "passkeys_disabled";
    case Code::PasskeyRefused: return "passkey_refused";
    case Code::ProviderRefused: return "provider_refused";
    case Code::AccountExists: return "account_exists";
    case Code::LastWayIn: return "last_way_in";
    case Code::MfaLocked: return "mfa_locked";
    }
    return "internal";
}

// Declared with the store's search index (signin/store.hpp), which the admin views share; here,
// among the core's plain helpers, so that whatever links it needs nothing else.
std::string_view user_state(const User &u) {
    return u.suspended ? "suspended" : u.pending ? "pending" : "active";
}

}  // namespace signin
