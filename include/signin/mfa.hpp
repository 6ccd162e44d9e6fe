// Second factors (signin_mfa): TOTP enrollment from a
// fresh session, 10 single-use recovery codes, the second step of a sign-in (mfa_token and a
// code), remembered devices. Valid C++17: the glue includes it.
//
// Rules: a TOTP step once accepted for a user is never accepted again; the TOTP secret is sealed
// under a subkey of the key file (Engine::use_secret_key) and never logged or audited; recovery
// codes are stored only as digests; a pending sign-in lives policy().mfa_pending_ttl and dies at
// policy().mfa_pending_failures wrong codes; enabling ends every other session, disabling ends
// them and every remembered device.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "signin/engine.hpp"
#include "signin/tokens.hpp"
#include "signin/types.hpp"

namespace signin {

// GET /mfa
struct MfaStatus {
    bool totp = false;
    unsigned recovery_codes_left = 0;
    unsigned remembered_devices = 0;
};

// POST /mfa/totp/setup: what an authenticator app is given (the secret is shown once).
struct TotpSetup {
    Secret secret;  // base32
    std::string otpauth_uri;
    std::string qr_svg;
};

// The second step passed: the session, and the remembered device's cookie secret when asked for.
struct MfaVerified {
    Session session;
    Secret device;  // empty unless remember was asked (and signin_mfa_remember is not 0)
    Millis device_expires_at = 0;
};

class Mfa {
public:
    static constexpr unsigned kRecoveryCodes = 10;
    static constexpr unsigned kMaxDevices = 20;  // the oldest remembered device goes first

    explicit Mfa(Engine &engine) : engine_(engine) {}

    Result<MfaStatus> status(const Principal &p);
    // From a fresh session: a new secret, pending until confirm_totp (policy().mfa_setup_ttl).
    Result<TotpSetup> setup_totp(const Principal &p, std::string_view client);
    // The first code of the pending secret turns TOTP on: 10 recovery codes (shown once), and
    // every other session of the user ends. Code::InvalidCode for a wrong code.
    Result<std::vector<std::string>> confirm_totp(const Principal &p, std::string_view code, std::string_view client);
    // From a fresh session: a new set of recovery codes; the old set is void.
    Result<std::vector<std::string>> new_recovery_codes(const Principal &p, std::string_view client);
    // From a fresh session and with a current TOTP code or a recovery code: the factor is off,
    // every other session and every remembered device ends.
    Status disable(const Principal &p, std::string_view code, std::string_view recovery_code, std::string_view client);
    // Ends every remembered device of the user.
    Status forget_devices(const Principal &p, std::string_view client);
    // The second step: a live mfa_token with a TOTP code or a recovery code. A wrong one counts
    // (the fifth ends the pending sign-in); Code::InvalidToken when the mfa_token is unknown,
    // expired or dead. remember: a device cookie secret for policy().mfa_remember.
    // kind: a cookie session (/mfa/verify) or a bearer token (/mfa/token), whatever the first
    // step was. A cookie session with `browser` joins that browser's accounts, added or in
    // place of its session as the first step asked (its `add` is the first step's, not browser's).
    // The wrong code that locks the factor (policy().mfa_lock_failures in a row, Code::MfaLocked)
    // also writes the MfaLocked notice to the account's address in its transaction. With
    // `lock_notice`, the notice is handed to the caller there (its outbox_key set with an
    // outbox) to send at once; without, an outbox's sweep sends it after its hold, and without
    // an outbox it goes through the delivery function before verify returns.
    Result<MfaVerified> verify(const Secret &mfa_token, std::string_view code, std::string_view recovery_code,
                               bool remember, std::string_view client, SessionKind kind = SessionKind::Cookie,
                               const BrowserCookies *browser = nullptr, TokenIssue *lock_notice = nullptr);

    // Administration (signin-admin mfa reset): the account's factor, recovery codes, remembered
    // devices and pending sign-ins go, and every session ends (whoever lost the phone signs in
    // again with email alone). Code::NotFound for an unknown address.
    Status reset(std::string_view group, std::string_view email, std::string_view client = "admin");
    // The same for an account by id or address.
    Status reset(const AccountRef &who, std::string_view client = "admin");

private:
    Engine &engine_;
};

}  // namespace signin
