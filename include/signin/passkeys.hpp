// Passkeys (signin_passkeys): WebAuthn registration from a fresh session and sign-in with a
// discoverable credential, over the store's passkey records. The ceremonies' rules (WebAuthn
// Level 3 §7.1, §7.2) are applied here; webauthn.hpp reads the structures and checks signatures.
//
// Challenges are stateless: 16 random bytes, their expiry (5 minutes), the ceremony and the user
// they are for, under a MAC of a key derived from the key file, so asking for options writes
// nothing (nobody fills the store by asking); a challenge is spent in the transaction that uses
// it, and that mark lives until it would have expired. Valid C++17: the glue includes it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "signin/engine.hpp"
#include "signin/types.hpp"

namespace signin {

// signin_passkey_rp_id against the origin: "" when rp_id ("" = the origin's host) may serve it
// (the host, or a domain the host is under), else why not. `warning` is set when browsers will
// refuse it anyway (an IP address: WebAuthn wants a domain name; use localhost for development).
std::string check_rp_id(const Origin &origin, std::string_view rp_id, std::string *warning);

class Passkeys {
public:
    static constexpr Millis kChallengeTtl = 5 * 60 * 1000;
    static constexpr std::size_t kMaxPerUser = 20;

    explicit Passkeys(Engine &engine) : engine_(engine) {}

    // The relying party's id: signin_passkey_rp_id, or the origin's host.
    std::string rp_id() const;

    // POST /passkeys/register/options, from a fresh session: PublicKeyCredentialCreationOptions
    // in their JSON form (the user's passkeys excluded).
    Result<std::string> registration_options(const Principal &p);
    // POST /passkeys/register: body {credential, name?}. Checks §7.1 (type, challenge of this
    // user, origin, rpIdHash, UP, the key's algorithm, a credential id not already held) and
    // keeps the passkey. Code::InvalidRequest with the reason when refused (audited).
    Result<PasskeyInfo> add(const Principal &p, std::string_view body, std::string_view client);
    Result<std::vector<PasskeyInfo>> list(const Principal &p);
    // POST /passkeys/remove {id}: Code::NotFound unless id names one of the caller's passkeys.
    Status remove(const Principal &p, std::string_view id, std::string_view client);

    // POST /passkeys/login/options: PublicKeyCredentialRequestOptions (discoverable: no
    // allowCredentials). Writes nothing.
    Result<std::string> login_options();
    // POST /passkeys/session, /passkeys/token: body {credential}. Checks §7.2 (type, challenge,
    // origin, rpIdHash, UP, the signature by the stored key, the signature counter, the user
    // handle) and signs the passkey's user in like every other way in (engine sign_in): with user
    // verification the sign-in counts as two factors; without it a user with a second factor
    // gets the pending step. Code::PasskeyRefused for every refusal (the reason is audited).
    Result<SignInStep> sign_in(std::string_view body, std::string_view client, SessionKind kind = SessionKind::Cookie,
                               std::string_view user_agent = {}, const BrowserCookies *browser = nullptr);

private:
    Engine &engine_;
};

}  // namespace signin
