// The engine's shared context: secrets' digests, the one place a session is opened, origin
// rules, and the operations that belong to no capability.
#include "signin/engine.hpp"

#include <sodium.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <thread>

#include "encoding.hpp"
#include "engine_detail.hpp"
#include "signin/access.hpp"
#include "signin/known_browsers.hpp"
#include "signin/user_agent.hpp"

namespace signin {

void detail::retry_pause(int attempt) {
    // up to 1, 2, 4 ... 32 ms (then 32): a random share of it
    const std::uint32_t cap_us = 1000u << (attempt < 6 ? attempt - 1 : 5);
    std::this_thread::sleep_for(std::chrono::microseconds(randombytes_uniform(cap_us) + 1));
}

namespace {

// The value of a base64url digit, or -1. A table: plausible_secret and record_key run for every
// signed-in request, and neither looks at anything secret character by character in
// a way that matters (the length and alphabet of a secret are public; the 8 characters decoded
// by record_key are its creation time).
constexpr std::array<signed char, 256> kBase64urlDigit = [] {
    std::array<signed char, 256> t{};
    for (auto &v : t) v = -1;
    const char *alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(alphabet[i])] = static_cast<signed char>(i);
    return t;
}();

int base64url_digit(char c) { return kBase64urlDigit[static_cast<unsigned char>(c)]; }

class SystemClock final : public Clock {
public:
    Millis now() const override {
        using namespace std::chrono;
        return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
    }
};

}  // namespace

std::string secret_hash(std::string_view secret) {
    std::string out(crypto_generichash_BYTES, '\0');
    crypto_generichash(reinterpret_cast<unsigned char *>(out.data()), out.size(),
                       reinterpret_cast<const unsigned char *>(secret.data()), secret.size(), nullptr, 0);
    return out;
}

static_assert(crypto_generichash_BYTES == 32, "RecordKey holds 6 + 32 bytes");

RecordKey::RecordKey(std::string_view secret) {
    // the first 8 characters are 6 bytes (the creation time of a secret made by time_ordered_secret)
    std::uint64_t head = 0;
    bool whole = secret.size() >= 8;
    for (std::size_t i = 0; whole && i < 8; ++i) {
        const int d = base64url_digit(secret[i]);
        whole = d >= 0;
        head = head << 6 | static_cast<std::uint64_t>(d < 0 ? 0 : d);
    }
    if (whole) {
        for (int shift = 40; shift >= 0; shift -= 8) bytes_[size_++] = static_cast<char>(head >> shift & 0xff);
    }
    crypto_generichash(reinterpret_cast<unsigned char *>(bytes_.data() + size_), crypto_generichash_BYTES,
                       reinterpret_cast<const unsigned char *>(secret.data()), secret.size(), nullptr, 0);
    size_ += crypto_generichash_BYTES;
}

std::string record_key(std::string_view secret) { return std::string(RecordKey(secret).view()); }

bool detail::same_digest(std::string_view a, std::string_view b) {
    return a.size() == b.size() && !a.empty() && sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool same_record_key(std::string_view stored, std::string_view key) {
    if (stored.size() == key.size()) return detail::same_digest(stored, key);
    return stored.size() == crypto_generichash_BYTES && key.size() == 6 + crypto_generichash_BYTES &&
           detail::same_digest(stored, key.substr(6));
}

bool plausible_secret(std::string_view text) {
    if (text.size() != 43) return false;  // 32 random bytes, base64url without padding
    int digits = 0;  // -1 (every bit set) once any character is not a digit
    for (char c : text) digits |= base64url_digit(c);
    return digits >= 0;
}

Engine::Engine(std::shared_ptr<Store> store, Origin origin, Policy policy, DeliveryFn deliver,
               std::shared_ptr<const Clock> clock)
    : store_(std::move(store)),
      origin_(std::move(origin)),
      policy_(policy),
      deliver_(std::move(deliver)),
      clock_(clock ? std::move(clock) : std::make_shared<SystemClock>()) {
    if (sodium_init() < 0) {
        throw std::runtime_error("libsodium could not be initialised");
    }
}

Millis Engine::now() const { return clock_->now(); }

Session Engine::open_session(WriteTxn &txn, const User &user, SessionKind kind, SignInMethod method,
                             std::string_view client, std::string_view user_agent, Millis now,
                             std::string detail, bool mfa, const BrowserCookies *browser) const {
    std::string secret = enc::ordered_secret(now);
    SessionRecord s;
    s.hash = record_key(secret);
    s.id = enc::uuid7(now);
    Secret browser_cookie;
    if (kind == SessionKind::Cookie && browser != nullptr) {
        browser_cookie = join_browser(txn, user, *browser, client, now);
        s.browser = record_key(browser_cookie.reveal());
        s.browser_sealed = detail::seal_for_browser(browser_cookie, secret, s.id);
    }
    s.user_id = user.id;
    s.kind = kind;
    s.method = method;
    s.created_at = now;
    s.last_seen_at = now;
    s.expires_at = now + (kind == SessionKind::Bearer ? policy_.bearer_ttl : policy_.session_ttl);
    s.client = std::string(client.substr(0, 64));
    s.user_agent = std::string(user_agent.substr(0, 256));
    s.mfa = mfa;
    txn.put_session(s);
    if (user.pending) {  // an invitation's first sign-in: the account is no longer pending
        if (auto stored = txn.user_by_id(user.id); stored && stored->pending) {
            stored->pending = false;
            stored->updated_at = now;
            txn.put_user(*stored);
        }
    }
    EventFacts facts;
    facts.session_id = s.id;
    facts.method = method_name(method);
    facts.user_agent = s.user_agent;
    facts.mfa = mfa;
    txn.append_audit(detail::audit(now, "session.created", user.email, client, user.id, detail), facts);
    Secret known;
    if (policy_.new_signin_notice) known = note_browser(txn, user, kind, browser, client, user_agent, now);
    Session out;
    out.user = user;
    out.token = Secret(std::move(secret));
    out.expires_at = s.expires_at;
    out.id = s.id;
    out.kind = kind;
    out.method = method;
    out.browser = std::move(browser_cookie);
    out.known = std::move(known);
    return out;
}

Secret Engine::note_browser(WriteTxn &txn, const User &user, SessionKind kind, const BrowserCookies *browser,
                            std::string_view client, std::string_view user_agent, Millis now) const {
    const Secret none;  // a browser that brought no cookies
    const Secret *brought = kind != SessionKind::Cookie ? nullptr : browser != nullptr ? &browser->known : &none;
    KnownOutcome seen = note_sign_in_browser(txn, user.id, brought, now);
    if (seen.notify && !user.email.empty()) {
        Delivery d;
        d.email = user.email;
        d.purpose = Purpose::NewSignIn;
        d.group_id = user.group_id;
        d.lang = detail::notice_language(user);
        d.signed_in_at = now;
        const UserAgentSummary ua = summarize_user_agent(user_agent);
        d.browser = ua.browser;
        d.system = ua.system;
        d.client = std::string(client.substr(0, 64));
        // not held: the outbox's next check sends it, whichever way in made the session
        enqueue(txn, d, client, now, false);
        txn.append_audit(detail::audit(now, "notice.new_sign_in", user.email, client, user.id));
    }
    return std::move(seen.cookie);
}

Secret Engine::join_browser(WriteTxn &txn, const User &user, const BrowserCookies &b, std::string_view client,
                            Millis now) const {
    auto end = [&](const SessionRecord &s, const char *why) {
        txn.del_session(s.hash);
        auto owner = txn.user_by_id(s.user_id);
        txn.append_audit(detail::audit(now, why, owner ? owner->email : std::string(), client, s.user_id, s.id));
    };
    if (!b.add && plausible_secret(b.current.reveal())) {
        // a sign-in without `add` takes the place of the session the browser had
        if (auto cur = txn.session(record_key(b.current.reveal())); cur && cur->kind == SessionKind::Cookie) {
            end(*cur, "session.replaced");
        }
    }
    // The browser gets a new cookie at every sign-in, as it gets a new session: a cookie value
    // planted before the sign-in (by whoever could set a cookie for this site) names nothing
    // afterwards. The sessions filed under the cookie it sent move to the new one, each re-sealed,
    // but only those that cookie opens: a value the module never gave out carries nothing over.
    // A new cookie begins with its time, like a session's (record_key), so that the index entries
    // of the browsers a batch of sign-ins makes sit together.
    Secret cookie(enc::ordered_secret(now));
    const std::string key = record_key(cookie.reveal());
    std::vector<SessionRecord> live;
    if (plausible_secret(b.browser.reveal())) {
        for (auto &s : txn.sessions_of_browser(record_key(b.browser.reveal()))) {
            if (!detail::is_live(policy_, s, now)) {
                txn.del_session(s.hash);  // expired: the purge would take it anyway
                continue;
            }
            if (s.user_id == user.id) {
                end(s, "session.replaced");  // one session per account in a browser
                continue;
            }
            auto secret = detail::open_for_browser(b.browser, s.browser_sealed, s.id);
            if (!secret) continue;  // not sealed for this cookie: not this browser's to carry
            s.browser = key;
            s.browser_sealed = detail::seal_for_browser(cookie, secret->reveal(), s.id);
            txn.put_session(s);
            live.push_back(std::move(s));
        }
    }
    std::sort(live.begin(), live.end(),
              [](const SessionRecord &x, const SessionRecord &y) { return x.last_seen_at < y.last_seen_at; });
    const std::size_t keep = policy_.browser_accounts > 0 ? policy_.browser_accounts - 1 : 0;
    for (std::size_t i = 0; i + keep < live.size(); ++i) end(live[i], "session.evicted");
    return cookie;
}

SignInStep Engine::sign_in(WriteTxn &txn, const User &user, SessionKind kind, SignInMethod method,
                           std::string_view client, std::string_view user_agent, Millis now, std::string detail,
                           const BrowserCookies *browser, bool two_factors) const {
    SignInStep step;
    // the account keeps the language it last signed in with: its notices are written in it (every
    // caller has written its own changes to the user before this)
    const std::string &lang = i18n::RequestLanguage::current();
    if (!lang.empty() && lang != user.lang) {
        User kept = user;
        kept.lang = lang;
        txn.put_user(kept);
    }
    if (two_factors) {
        step.session = open_session(txn, user, kind, method, client, user_agent, now, std::move(detail), true, browser);
        return step;
    }
    auto factors = policy_.with_mfa ? txn.mfa(user.id) : std::nullopt;
    if (factors && factors->has_factor() && method == SignInMethod::EmailToken && policy_.mfa_lock_failures > 0 &&
        factors->failures >= policy_.mfa_lock_failures) {
        // A factor locked by wrong codes opens again after the inbox is proved, but the next
        // wrong code still waits: the count goes back to where the waits begin, not to zero.
        factors->failures = policy_.mfa_free_failures;
        factors->wait_until = 0;
        factors->updated_at = now;
        txn.put_mfa(*factors);
        txn.append_audit(detail::audit(now, "mfa.unlocked", user.email, client, user.id, "email sign-in"));
    }
    if (factors && factors->has_factor()) {
        const Secret *device = browser != nullptr && kind == SessionKind::Cookie ? &browser->device : nullptr;
        const std::string h = device != nullptr && !device->empty() ? secret_hash(device->reveal()) : std::string();
        const bool remembered =
            !h.empty() && policy_.mfa_remember > 0 &&
            std::any_of(factors->devices.begin(), factors->devices.end(), [&](const MfaRecord::Device &d) {
                return d.expires_at > now && d.hash.size() == h.size() &&
                       sodium_memcmp(d.hash.data(), h.data(), h.size()) == 0;
            });
        if (!remembered) {
            std::string secret = enc::random_secret(32);
            MfaPendingRecord p;
            p.hash = secret_hash(secret);
            p.user_id = user.id;
            p.kind = kind;
            p.method = method;
            p.client = std::string(client.substr(0, 64));
            p.user_agent = std::string(user_agent.substr(0, 256));
            p.created_at = now;
            p.expires_at = now + policy_.mfa_pending_ttl;
            p.add = browser != nullptr && browser->add;
            txn.put_mfa_pending(p);
            txn.append_audit(detail::audit(now, "mfa.required", user.email, client, user.id, detail));
            step.state = SignInStep::State::SecondFactorPending;
            step.pending_user_id = user.id;
            step.mfa_token = Secret(std::move(secret));
            step.mfa_expires_at = p.expires_at;
            step.methods = {"totp", "recovery_code"};
            return step;
        }
        detail += ":remembered_device";
    }
    // a remembered device passed the factor before: the session counts as two factors
    step.session = open_session(txn, user, kind, method, client, user_agent, now, std::move(detail),
                                factors && factors->has_factor(), browser);
    return step;
}

void Engine::forget_devices(WriteTxn &txn, const User &user, std::string_view client, Millis now) const {
    auto factors = txn.mfa(user.id);
    if (!factors || factors->devices.empty()) return;
    factors->devices.clear();
    factors->updated_at = now;
    txn.put_mfa(*factors);
    txn.append_audit(detail::audit(now, "mfa.devices_forgotten", user.email, client, user.id));
}

void Engine::use_secret_key(const SecretKey &key) {
    static constexpr char kContext[crypto_kdf_CONTEXTBYTES + 1] = "sgmfaotp";
    SecretKey sub{};
    crypto_kdf_derive_from_key(sub.data(), sub.size(), 1, kContext, key.data());
    mfa_key_ = sub;
    static constexpr char kPasskeyContext[crypto_kdf_CONTEXTBYTES + 1] = "sgpasskc";
    crypto_kdf_derive_from_key(sub.data(), sub.size(), 1, kPasskeyContext, key.data());
    passkey_key_ = sub;
    sodium_memzero(sub.data(), sub.size());
}

Status Engine::deliver(const Delivery &d) const {
    return deliver_ ? deliver_(d) : Status(Error{Code::DeliveryFailed, "no delivery function"});
}

Status Engine::check_origin(std::optional<std::string_view> origin, bool cookie_write) const {
    if (!origin) {
        if (cookie_write) return Error{Code::OriginMismatch, "this request needs an origin header"};
        return ok_status();
    }
    if (*origin != origin_.text) return Error{Code::OriginMismatch, "origin not allowed"};
    return ok_status();
}

std::string_view Engine::cookie_name() const {
    return origin_.https ? "__Host-svc_session" : "svc_dev_session";
}

Result<User> detail::find_account(ReadTxn &txn, const AccountRef &who) {
    if (!who.id.empty()) {
        if (auto u = txn.user_by_id(who.id)) return std::move(*u);
        return Error{Code::NotFound, "no such account"};
    }
    auto e = normalize_email(who.email);
    auto g = normalize_group(who.group);
    if (!e || !g) return Error{Code::InvalidEmail, "that is not an email address"};
    if (auto u = txn.user_by_email(*g, *e)) return std::move(*u);
    return Error{Code::NotFound, "no such account"};
}

Status Engine::set_suspended(const AccountRef &who, bool suspended, std::string_view client) {
    return detail::guarded("suspend", [&]() -> Status {
        auto txn = store_->write();
        auto u = detail::find_account(*txn, who);
        if (!u) return u.error();
        u->suspended = suspended;
        u->updated_at = clock_->now();
        txn->put_user(*u);
        txn->append_audit(detail::audit(u->updated_at, suspended ? "user.suspended" : "user.restored", u->email,
                                client, u->id));
        txn->commit();
        return ok_status();
    });
}

Status Engine::pin_api_version(std::string_view user_id, std::string_view name) {
    if (!valid_api_version_name(name)) return Error{Code::InvalidRequest, "not an API version's name"};
    return detail::guarded("pin API version", [&]() -> Status {
        auto txn = store_->write();
        if (signin::pin_api_version(*txn, user_id, name, true)) txn->commit();
        return ok_status();
    });
}

Status Engine::set_roles(const AccountRef &who, const std::vector<std::string> &add_in,
                         const std::vector<std::string> &remove_in, std::string_view client) {
    std::vector<std::string> add, remove;
    for (const auto *list : {&add_in, &remove_in}) {
        for (const auto &r : *list) {
            auto role = normalize_role(r);
            if (!role) return Error{Code::InvalidRequest, "a role is 1 to 32 of a-z, 0-9, _ and -"};
            (list == &add_in ? add : remove).push_back(*role);
        }
    }
    return detail::guarded("role", [&]() -> Status {
        auto txn = store_->write();
        auto u = detail::find_account(*txn, who);
        if (!u) return u.error();
        std::vector<AuditEntry> entries;
        const Millis now = clock_->now();
        for (const auto *list : {&add, &remove}) {
            const bool adding = list == &add;
            for (const auto &role : *list) {
                auto it = std::lower_bound(u->roles.begin(), u->roles.end(), role);
                const bool held = it != u->roles.end() && *it == role;
                if (held == adding) continue;
                if (adding) {
                    if (u->roles.size() >= 64) return Error{Code::InvalidRequest, "an account holds at most 64 roles"};
                    u->roles.insert(it, role);
                } else {
                    u->roles.erase(it);
                }
                entries.push_back(detail::audit(now, adding ? "user.role_added" : "user.role_removed", u->email, client,
                                                u->id, role));
            }
        }
        if (entries.empty()) return ok_status();
        u->updated_at = now;
        txn->put_user(*u);
        for (const auto &e : entries) txn->append_audit(e);
        txn->commit();
        return ok_status();
    });
}

Status Engine::record(const AuditEntry &entry) {
    return detail::guarded("audit", [&]() -> Status {
        auto txn = store_->write();
        AuditEntry e = entry;
        if (e.at == 0) e.at = clock_->now();
        txn->append_audit(e);
        txn->commit();
        return ok_status();
    });
}

Status Engine::write_batch(const std::function<void()> &operations) {
    return detail::guarded("write batch", [&]() -> Status {
        store_->batch(operations);
        return ok_status();
    });
}

Result<std::size_t> Engine::purge_expired(std::size_t budget) {
    return detail::guarded("purge", [&]() -> Result<std::size_t> {
        auto txn = store_->write();
        const Millis now = clock_->now();
        std::size_t n = txn->purge_expired(now, budget);
        n += txn->purge_audit(now - policy_.audit_keep, budget - n);
        if (const std::size_t keep = store_->audit_bound(); keep > 0) n += txn->trim_audit(keep, budget - n);
        txn->commit();
        return n;
    });
}

Result<std::size_t> Engine::purge_index(std::size_t budget) {
    return detail::guarded("purge", [&]() -> Result<std::size_t> {
        auto txn = store_->write();
        std::size_t n = txn->purge_index(budget);
        txn->commit();
        return n;
    });
}

}  // namespace signin
