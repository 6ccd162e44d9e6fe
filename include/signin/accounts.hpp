// Account changes: what is held about a user, and deleting
// the account. Valid C++17: the glue includes it.
#pragma once

#include <string_view>
#include <vector>

#include "signin/engine.hpp"
#include "signin/mfa.hpp"
#include "signin/types.hpp"

namespace signin {

// GET /account: what the store holds about the user, and nothing secret.
struct AccountInfo {
    User user;                         // password_hash is emptied
    bool password = false;             // whether a password is set
    std::vector<SessionInfo> sessions; // the live ones
    MfaStatus mfa;
    unsigned outstanding_tokens = 0;   // codes sent to the address and not yet used or expired
    unsigned passkeys = 0;             // passkeys registered
    std::vector<ProviderLinkInfo> providers;  // linked OpenID Connect identities
};

class Accounts {
public:
    explicit Accounts(Engine &engine) : engine_(engine) {}

    Result<AccountInfo> account(const Principal &p);
    // From a fresh session (an email-code sign-in within policy().fresh_window): the user and
    // everything tied to it (sessions, tokens, second factors, remembered devices, pending sign-ins)
    // go in one transaction; the audit entry keeps the user id and no address; the address can
    // register again.
    Status delete_account(const Principal &p, std::string_view client);

private:
    Engine &engine_;
};

}  // namespace signin
