#include "signin/types.hpp"

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
    }
    return "unknown";
}

bool purpose_signs_in(Purpose p) {
    return p == Purpose::SignIn || p == Purpose::Registration || p == Purpose::AlreadyRegistered;
}

std::string_view kind_name(SessionKind k) { return k == SessionKind::Bearer ? "bearer" : "cookie"; }

std::string_view code_name(Code c) {
    switch (c) {
    case Code::Ok: return "ok";
    case Code::InvalidRequest: return "invalid_request";
    case Code::InvalidEmail: return "invalid_email";
    case Code::InvalidToken: return "invalid_token";
    case Code::Unauthenticated: return "unauthenticated";
    case Code::Suspended: return "account_suspended";
    case Code::RegistrationDisabled: return "registration_disabled";
    case Code::EmailDisabled: return "email_disabled";
    case Code::OriginMismatch: return "origin_mismatch";
    case Code::NotFound: return "not_found";
    case Code::RateLimited: return "rate_limited";
    case Code::StorageFull: return "storage_full";
    case Code::StorageError: return "storage_unavailable";
    case Code::DeliveryFailed: return "delivery_failed";
    case Code::Internal: return "internal";
    case Code::AmbiguousCredentials: return "ambiguous_credentials";
    case Code::UnsupportedMediaType: return "unsupported_media_type";
    case Code::PayloadTooLarge: return "payload_too_large";
    case Code::MethodNotAllowed: return "method_not_allowed";
    case Code::PasswordsDisabled: return "passwords_disabled";
    case Code::WeakPassword: return "weak_password";
    case Code::WrongPassword: return "wrong_password";
    case Code::InvalidCredentials: return "invalid_credentials";
    case Code::FreshSessionRequired: return "fresh_session_required";
    case Code::NoPassword: return "no_password";
    }
    return "internal";
}

int code_status(Code c) {
    switch (c) {
    case Code::Ok: return 200;
    case Code::InvalidRequest:
    case Code::InvalidEmail: return 400;
    case Code::InvalidToken:
    case Code::Unauthenticated: return 401;
    case Code::Suspended:
    case Code::RegistrationDisabled:
    case Code::EmailDisabled:
    case Code::OriginMismatch: return 403;
    case Code::NotFound: return 404;
    case Code::RateLimited: return 429;
    case Code::StorageFull: return 507;
    case Code::StorageError: return 503;
    case Code::DeliveryFailed:
    case Code::Internal: return 500;
    case Code::AmbiguousCredentials: return 400;
    case Code::UnsupportedMediaType: return 415;
    case Code::PayloadTooLarge: return 413;
    case Code::MethodNotAllowed: return 405;
    case Code::PasswordsDisabled: return 403;
    case Code::WeakPassword:
    case Code::WrongPassword: return 400;
    case Code::InvalidCredentials: return 401;
    case Code::FreshSessionRequired:
    case Code::NoPassword: return 403;
    }
    return 500;
}

}  // namespace signin
