// The sign-in engine: every operation as a call, with no HTTP, for any transport. No exceptions
// cross this API; every operation returns a Result. Thread-safe: one Identity serves every thread
// of a process.
#pragma once

#include <memory>
#include <string_view>
#include <utility>

#include "signin/accounts.hpp"
#include "signin/engine.hpp"
#include "signin/events.hpp"
#include "signin/mfa.hpp"
#include "signin/outbox.hpp"
#include "signin/passkeys.hpp"
#include "signin/passwords.hpp"
#include "signin/oidc_issuer.hpp"
#include "signin/providers.hpp"
#include "signin/sessions.hpp"
#include "signin/tokens.hpp"

namespace signin {

// What a transport creates: the shared context with its operations (engine.hpp: policy, origin,
// check_origin, cookie_name, record, write_batch, purge_expired, set_suspended, use_outbox) and one of each
// capability over it. A new way in is a new capability here, not more operations on Identity.
class Identity final : public Engine {
public:
    Identity(std::shared_ptr<Store> store, Origin origin, Policy policy, DeliveryFn deliver = {},
             std::shared_ptr<const Clock> clock = nullptr)
        : Engine(std::move(store), std::move(origin), std::move(policy), std::move(deliver), std::move(clock)),
          tokens_(*this),
          sessions_(*this),
          passwords_(*this, tokens_),
          outbox_(*this),
          events_(*this),
          mfa_(*this),
          accounts_(*this),
          passkeys_(*this),
          providers_(*this),
          oidc_issuer_(*this) {}

    Tokens &tokens() { return tokens_; }
    Sessions &sessions() { return sessions_; }
    Passwords &passwords() { return passwords_; }
    Outbox &outbox() { return outbox_; }
    Events &events() { return events_; }
    Mfa &mfa() { return mfa_; }
    Accounts &accounts() { return accounts_; }
    Passkeys &passkeys() { return passkeys_; }
    Providers &providers() { return providers_; }
    // The module as an OpenID provider (signin_oidc_client).
    OidcIssuer &oidc_issuer() { return oidc_issuer_; }

private:
    Tokens tokens_;
    Sessions sessions_;
    Passwords passwords_;
    Outbox outbox_;
    Events events_;
    Mfa mfa_;
    Accounts accounts_;
    Passkeys passkeys_;
    Providers providers_;
    OidcIssuer oidc_issuer_;
};

// The same operations as free functions named auth.*, for callers who prefer that spelling.
namespace auth {
inline Status request_token_from(Identity &id, std::string_view email, Intent intent,
                                 std::string_view client, std::string_view group = {}) {
    return id.tokens().request_token_from(intent, email, group, client);
}
inline Result<Session> exchange_from(Identity &id, const Secret &token, std::string_view client) {
    return id.tokens().exchange_from(token, client);
}
inline Result<SignInStep> exchange_step(Identity &id, const Secret &token, std::string_view client) {
    return id.tokens().exchange_step_from(token, client);
}
inline Result<Principal> authenticate_from(Identity &id, const Secret &token, std::string_view client) {
    return id.sessions().authenticate_from(token, client);
}
inline std::string_view cookie_name(const Identity &id) { return id.cookie_name(); }
inline void with_password_check(Identity &id, PasswordChecker checker) {
    id.passwords().with_password_check(std::move(checker));
}
inline Status register_password_from(Identity &id, std::string_view email, const Secret &password,
                                     std::string_view client) {
    return id.passwords().register_password_from(email, password, client);
}
inline Result<Session> login_password_from(Identity &id, std::string_view email, const Secret &password,
                                           std::string_view client) {
    return id.passwords().login_password_from(email, password, client);
}
inline Result<SignInStep> login_password_step(Identity &id, std::string_view email, const Secret &password,
                                              std::string_view client) {
    return id.passwords().login_password_step(email, password, client);
}
inline Status set_password(Identity &id, const Principal &p, const Secret &password) {
    return id.passwords().set_password(p, password);
}
inline Status change_password_from(Identity &id, const Principal &p, const Secret &current, const Secret &next,
                                   std::string_view client) {
    return id.passwords().change_password_from(p, current, next, client);
}
}  // namespace auth

}  // namespace signin
