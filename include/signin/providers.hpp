// OpenID Connect providers (signin_provider): the identity an ID token proved (oidc.hpp checks it)
// becomes an account's. (issuer, subject) is the identity, never the address: a first sign-in
// links to the account of its address only when the provider is declared trust_email=on and the
// token says email_verified: true; otherwise it makes an account when registration is on, and
// never when another account has that address (a provider's unverified claim to an address must
// not open, nor take, somebody's account). A new account gets the provider's address only under
// the same two conditions: an untrusted provider's accounts have no address, so they match no
// address or domain rule and an email sign-in to that address never lands in them. A signed-in
// person links more providers from the account page; unlinking keeps at least one way in.
// Valid C++17: the glue includes it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "signin/engine.hpp"
#include "signin/oidc.hpp"
#include "signin/types.hpp"

namespace signin {

// The application's registration check for a way in that may make an account on the spot.
struct RegistrationGate {
    bool ask = false;                // the check is on: no account is made before it allowed
    bool allowed = false;            // it allowed, giving the account these roles (sorted, once)
    std::vector<std::string> roles;
    bool needed = false;             // out: an account would be made, and the check must be asked
    std::string email;               // out: ... the address it would get ("" for none)
};

class Providers {
public:
    static constexpr std::size_t kMaxPerUser = 20;

    explicit Providers(Engine &engine) : engine_(engine) {}

    // The store key of an identity: BLAKE2b-256 of issuer '\0' subject.
    static std::string link_key(std::string_view issuer, std::string_view subject);

    // The callback's write: spends the flow's state (a replayed callback is refused), finds or
    // makes the account (see above) and signs it in like every other way in (engine sign_in:
    // a user with a second factor gets the pending step). Codes: ProviderRefused (a state already
    // spent), AccountExists (an address with an account this identity may not enter),
    // RegistrationDisabled (no account and no registration, or an address outside
    // signin_registration's list), Suspended.
    // With a gate that asks (the application's registration check is on), a sign-in that would
    // make an account writes nothing until the check allowed it: the first call returns
    // RegistrationCheckFailed with gate->needed set and gate->email the address the account would
    // get ("" for none); the transport asks, then calls again with gate->allowed and its roles.
    Result<SignInStep> sign_in(const oidc::ProviderConfig &provider, const oidc::IdClaims &claims,
                               const oidc::Flow &flow, std::string_view client, SessionKind kind,
                               std::string_view user_agent, const BrowserCookies *browser,
                               RegistrationGate *gate = nullptr);
    // The callback of a flow started from the account page: links the identity to p's account.
    // AccountExists when another account holds it; Unauthenticated unless p is the flow's user.
    Status link(const Principal &p, const oidc::ProviderConfig &provider, const oidc::IdClaims &claims,
                const oidc::Flow &flow, std::string_view client);
    Result<std::vector<ProviderLinkInfo>> list(const Principal &p);
    // POST /providers/unlink {id}: NotFound unless id is one of the caller's links; LastWayIn when
    // the account would keep no way in (email sign-in on with an address, a password, a passkey,
    // another link).
    Status unlink(const Principal &p, std::string_view id, std::string_view client);

    // A refusal of the callback before any account is looked at (a bad state, an ID token that
    // does not verify): its audit entry, in its own write. `why` names the check; no secret.
    void refused(std::string_view provider, std::string_view why, std::string_view client);

private:
    Engine &engine_;
};

}  // namespace signin
