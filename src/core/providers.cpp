// OpenID Connect providers' accounts (providers.hpp).
#include "signin/providers.hpp"

#include "encoding.hpp"
#include "engine_detail.hpp"

namespace signin {
namespace {

constexpr std::string_view kDefaultGroup = "default";

ProviderLinkRecord new_link(const std::string &key, const User &user, const oidc::ProviderConfig &provider,
                            const oidc::IdClaims &claims, Millis now) {
    ProviderLinkRecord l;
    l.key = key;
    l.user_id = user.id;
    l.provider = provider.name;
    l.issuer = claims.iss;
    l.subject = claims.sub;
    l.email = claims.email;
    l.created_at = now;
    l.last_used_at = now;
    return l;
}

// The flow's state, spent until the flow would have expired: a callback answered once is never
// answered again (its code and cookie replayed).
bool spend_state(WriteTxn &txn, const oidc::Flow &flow) {
    const std::string h = secret_hash(flow.state);
    if (txn.challenge_spent(h)) return false;
    txn.spend_challenge(h, flow.expires_at);
    return true;
}

// How the audit trail names an identity: the provider and the first 8 bytes of its key, in hex
// (never the subject itself).
std::string who(const oidc::ProviderConfig &provider, const std::string &key) {
    return provider.name + ":" + enc::hex(reinterpret_cast<const unsigned char *>(key.data()), 8);
}

// The account a provider's identity is linked to, if any; the link's last use is now.
std::optional<User> linked_account(WriteTxn &txn, const std::string &key, Millis now) {
    auto link = txn.provider_link(key);
    if (!link) return std::nullopt;
    auto user = txn.user_by_id(link->user_id);
    if (user) {
        link->last_used_at = now;
        txn.put_provider_link(*link);
    } else {
        txn.del_provider_link(key);  // its account went without taking it (never: delete takes it)
    }
    return user;
}

// A new account of the default group, linked to the provider's identity (`named` in the audit
// trail); `email` is empty unless the provider may give the account its address.
User new_account(WriteTxn &txn, const oidc::ProviderConfig &provider, const oidc::IdClaims &claims,
                 const std::string &key, std::string email, const std::string &named, std::string_view client,
                 Millis now, std::vector<std::string> roles) {
    User u;
    u.id = enc::uuid7(now);
    u.email = std::move(email);
    u.roles = std::move(roles);  // the registration check's, sorted and each once
    u.group_id = std::string(kDefaultGroup);
    u.created_at = now;
    u.updated_at = now;
    txn.add_user(u);
    txn.put_provider_link(new_link(key, u, provider, claims, now));
    txn.append_audit(detail::audit(now, "user.created", u.email, client, u.id, named));
    return u;
}

}  // namespace

std::string Providers::link_key(std::string_view issuer, std::string_view subject) {
    std::string both(issuer);
    both.push_back('\0');
    both.append(subject);
    return secret_hash(both);  // the store's one digest (BLAKE2b-256), as for tokens and sessions
}

Result<SignInStep> Providers::sign_in(const oidc::ProviderConfig &provider, const oidc::IdClaims &claims,
                                      const oidc::Flow &flow, std::string_view client, SessionKind kind,
                                      std::string_view user_agent, const BrowserCookies *browser,
                                      RegistrationGate *gate) {
    return detail::guarded("provider sign-in", [&]() -> Result<SignInStep> {
        const Millis now = engine_.now();
        const Policy &policy = engine_.policy();
        auto txn = engine_.store_->write();
        const std::string key = link_key(claims.iss, claims.sub);
        const std::string named = who(provider, key);
        auto refuse = [&](Code code, std::string why, std::string message, std::string_view email = {},
                          std::string_view user_id = {}) -> Result<SignInStep> {
            txn->append_audit(detail::audit(now, "provider.refused", email, client, user_id, named + ":" + why));
            txn->commit();
            return Error{code, std::move(message)};
        };
        if (!spend_state(*txn, flow)) {
            return refuse(Code::ProviderRefused, "state spent", "this sign-in was already used; start again");
        }
        std::optional<User> user = linked_account(*txn, key, now);
        std::string how = "linked";
        const bool verified = claims.email_verified && !claims.email.empty();
        // Only a provider declared trust_email=on may give an account its address: any other
        // provider's "verified" is the word of whoever controls the identity there, and an
        // account made under somebody else's address would be entered by its owner's next email
        // sign-in and by the maker's next provider sign-in (pre-account hijacking), and would
        // pass rules that allow that address or domain.
        const bool owns_address = verified && provider.trust_email;
        if (!user && !claims.email.empty()) {
            if (auto owner = txn->user_by_email(kDefaultGroup, claims.email)) {
                if (!verified || !provider.trust_email) {
                    // a provider's word for an address is not enough to enter its account
                    return refuse(Code::AccountExists, verified ? "address not trusted" : "address not verified",
                                  "an account with this address exists: sign in to it another way, then link the "
                                  "provider from the account page",
                                  claims.email, owner->id);
                }
                if (owner->suspended) return refuse(Code::Suspended, "suspended", "this account is suspended", claims.email, owner->id);
                if (txn->provider_links_of(owner->id).size() >= kMaxPerUser) {
                    return refuse(Code::AccountExists, "too many links", "this account has too many providers linked",
                                  claims.email, owner->id);
                }
                txn->put_provider_link(new_link(key, *owner, provider, claims, now));
                txn->append_audit(detail::audit(now, "provider.linked", owner->email, client, owner->id, named + ":email"));
                user = std::move(owner);
            }
        }
        if (!user) {
            if (!policy.allow_registration) {
                return refuse(Code::RegistrationDisabled, "no account", "there is no account for this sign-in",
                              claims.email);
            }
            if (policy.may_join && (!owns_address || !policy.may_join->contains(claims.email))) {
                return refuse(Code::RegistrationDisabled, "may not join", "there is no account for this sign-in",
                              claims.email);
            }
            if (gate != nullptr && gate->ask && !gate->allowed) {
                // nothing is committed: the state is spent by the call made once the check allowed
                gate->needed = true;
                gate->email = owns_address ? claims.email : std::string();
                return Error{Code::RegistrationCheckFailed, "the registration check must allow this account first"};
            }
            user = new_account(*txn, provider, claims, key, owns_address ? claims.email : std::string(), named, client,
                               now, gate != nullptr ? gate->roles : std::vector<std::string>{});
            how = "new";
        }
        if (user->suspended) return refuse(Code::Suspended, "suspended", "this account is suspended", user->email, user->id);
        std::optional<BrowserCookies> joining;
        if (browser != nullptr) {
            joining = *browser;
            joining->add = flow.add;
        }
        SignInStep step = engine_.sign_in(*txn, *user, kind, SignInMethod::Provider, client, user_agent, now,
                                          "provider:" + named + ":" + how, joining ? &*joining : nullptr);
        txn->commit();
        return step;
    });
}

Status Providers::link(const Principal &p, const oidc::ProviderConfig &provider, const oidc::IdClaims &claims,
                       const oidc::Flow &flow, std::string_view client) {
    return detail::guarded("provider link", [&]() -> Status {
        const Millis now = engine_.now();
        auto txn = engine_.store_->write();
        const std::string key = link_key(claims.iss, claims.sub);
        const std::string named = who(provider, key);
        auto user = txn->user_by_id(p.user.id);
        if (!user || !txn->session(p.session.hash) || flow.link_user != user->id) {
            return Error{Code::Unauthenticated, "not signed in as the account that started linking"};
        }
        auto refuse = [&](Code code, std::string why, std::string message) -> Status {
            txn->append_audit(detail::audit(now, "provider.refused", user->email, client, user->id, named + ":" + why));
            txn->commit();
            return Error{code, std::move(message)};
        };
        if (!spend_state(*txn, flow)) return refuse(Code::ProviderRefused, "state spent", "this link was already used; start again");
        auto existing = txn->provider_link(key);
        if (existing && existing->user_id != user->id && txn->user_by_id(existing->user_id)) {
            return refuse(Code::AccountExists, "linked elsewhere", "this provider account is linked to another account");
        }
        if (!existing || existing->user_id != user->id) {
            if (txn->provider_links_of(user->id).size() >= kMaxPerUser) {
                return refuse(Code::AccountExists, "too many links", "this account has too many providers linked");
            }
            txn->put_provider_link(new_link(key, *user, provider, claims, now));
            txn->append_audit(detail::audit(now, "provider.linked", user->email, client, user->id, named + ":account"));
        }
        txn->commit();
        return ok_status();
    });
}

Result<std::vector<ProviderLinkInfo>> Providers::list(const Principal &p) {
    return detail::guarded("provider links", [&]() -> Result<std::vector<ProviderLinkInfo>> {
        auto txn = engine_.store_->read();
        std::vector<ProviderLinkInfo> out;
        for (const auto &l : txn->provider_links_of(p.user.id)) {
            out.push_back(detail::link_info(l));
        }
        return out;
    });
}

Status Providers::unlink(const Principal &p, std::string_view id, std::string_view client) {
    auto key = enc::base64url_decode(id);
    if (!key || key->size() != 32) return Error{Code::NotFound, "no such provider link"};
    return detail::guarded("provider unlink", [&]() -> Status {
        const Millis now = engine_.now();
        auto txn = engine_.store_->write();
        auto user = txn->user_by_id(p.user.id);
        if (!user || !txn->session(p.session.hash)) return Error{Code::Unauthenticated, "not signed in"};
        auto links = txn->provider_links_of(user->id);
        auto it = std::find_if(links.begin(), links.end(), [&](const auto &l) { return l.key == *key; });
        if (it == links.end()) return Error{Code::NotFound, "no such provider link"};
        const bool other_way = links.size() > 1 || !user->password_hash.empty() || !txn->passkeys_of(user->id).empty() ||
                               (engine_.policy().with_email && !user->email.empty());
        if (!other_way) {
            return Error{Code::LastWayIn, "this is the account's only way in: add a passkey, a password or an address first"};
        }
        txn->del_provider_link(it->key);
        txn->append_audit(detail::audit(now, "provider.unlinked", user->email, client, user->id, it->provider));
        txn->commit();
        return ok_status();
    });
}

void Providers::refused(std::string_view provider, std::string_view why, std::string_view client) {
    (void)engine_.record(detail::audit(engine_.now(), "provider.refused", {}, client, {},
                                       std::string(provider) + ":" + std::string(why)));
}

}  // namespace signin
