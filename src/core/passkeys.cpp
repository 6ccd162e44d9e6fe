// Passkeys: the WebAuthn ceremonies of passkeys.hpp over webauthn.hpp's parsers, and the
// store's passkey records.
#include "signin/passkeys.hpp"

#include <sodium.h>

#include <algorithm>
#include <array>

#include "encoding.hpp"
#include "engine_detail.hpp"
#include "signin/json.hpp"
#include "signin/webauthn.hpp"

namespace signin {
namespace {

constexpr std::size_t kNonce = 16, kMac = 32, kChallenge = kNonce + 8 + 1 + kMac;
constexpr char kCreate = 'c', kGet = 'g';

Error disabled() { return Error{Code::PasskeysDisabled, "passkeys are not enabled (signin_passkeys)"}; }
Error no_key() { return Error{Code::Internal, "passkeys need the secret key (signin_secret_key)"}; }
Error refused() { return Error{Code::PasskeyRefused, "this passkey was not accepted: try again, or sign in another way"}; }

std::string mac(const SecretKey &key, std::string_view body, std::string_view user_id) {
    std::string out(kMac, '\0');
    crypto_generichash_state st;
    crypto_generichash_init(&st, key.data(), key.size(), kMac);
    crypto_generichash_update(&st, reinterpret_cast<const unsigned char *>(body.data()), body.size());
    crypto_generichash_update(&st, reinterpret_cast<const unsigned char *>(user_id.data()), user_id.size());
    crypto_generichash_final(&st, reinterpret_cast<unsigned char *>(out.data()), out.size());
    return out;
}

// A challenge for `ceremony` and `user_id`, valid kChallengeTtl from now.
std::string make_challenge(const SecretKey &key, char ceremony, std::string_view user_id, Millis now) {
    std::string body(kNonce + 9, '\0');
    randombytes_buf(body.data(), kNonce);
    const auto expires = static_cast<std::uint64_t>(now + Passkeys::kChallengeTtl);
    for (int i = 0; i < 8; ++i) body[kNonce + static_cast<std::size_t>(i)] = static_cast<char>((expires >> (56 - 8 * i)) & 0xff);
    body[kNonce + 8] = ceremony;
    return body + mac(key, body, user_id);
}

// "" when the challenge is ours, for this ceremony and user, and not expired; else why not.
std::string check_challenge(const SecretKey &key, std::string_view c, char ceremony, std::string_view user_id,
                            Millis now, Millis *expires_at) {
    if (c.size() != kChallenge) return "challenge";
    const std::string_view body = c.substr(0, kNonce + 9);
    const std::string want = mac(key, body, user_id);
    if (sodium_memcmp(want.data(), c.data() + body.size(), kMac) != 0 || body[kNonce + 8] != ceremony) return "challenge";
    std::uint64_t expires = 0;
    for (std::size_t i = 0; i < 8; ++i) expires = (expires << 8) | static_cast<unsigned char>(body[kNonce + i]);
    *expires_at = static_cast<Millis>(expires);
    if (*expires_at <= now) return "challenge expired";
    return {};
}

std::string b64(std::string_view raw) {
    return enc::base64url(reinterpret_cast<const unsigned char *>(raw.data()), raw.size());
}

}  // namespace

PasskeyInfo detail::passkey_info(const PasskeyRecord &r) {
    PasskeyInfo i;
    i.id = b64(r.credential_id);
    i.name = r.name;
    i.created_at = r.created_at;
    i.last_used_at = r.last_used_at;
    i.synced = r.backup_eligible;
    return i;
}

std::string check_rp_id(const Origin &origin, std::string_view rp_id, std::string *warning) {
    const std::string host = origin_host(origin.text);
    const std::string id = rp_id.empty() ? host : std::string(rp_id);
    if (id.empty() || id.find_first_of(":/[]@ ") != std::string::npos ||
        std::any_of(id.begin(), id.end(), [](char ch) { return ch >= 'A' && ch <= 'Z'; })) {
        return "signin_passkey_rp_id must be a lower-case domain name";
    }
    if (id != host && !(host.size() > id.size() && host.compare(host.size() - id.size(), id.size(), id) == 0 &&
                        host[host.size() - id.size() - 1] == '.')) {
        return "signin_passkey_rp_id \"" + id + "\" is neither the origin's host \"" + host + "\" nor a domain it is under";
    }
    const bool ip = host.front() == '[' || host.find_first_not_of("0123456789.") == std::string::npos;
    if (ip && warning != nullptr) {
        *warning = "passkeys: browsers refuse an IP address (\"" + host +
                   "\") as the relying party id; serve the site under a name (for development: http://localhost:PORT)";
    }
    return {};
}

std::string Passkeys::rp_id() const {
    const auto &configured = engine_.policy().passkey_rp_id;
    return configured.empty() ? origin_host(engine_.origin().text) : configured;
}

Result<std::string> Passkeys::registration_options(const Principal &p) {
    if (!engine_.policy().with_passkeys) return disabled();
    if (!engine_.passkey_key_) return no_key();
    const Millis now = engine_.now();
    if (!detail::is_fresh(engine_.policy(), p.session, now)) {
        return detail::fresh_required(engine_.policy(), "adding a passkey");
    }
    return detail::guarded("passkey options", [&]() -> Result<std::string> {
        auto held = engine_.store_->read()->passkeys_of(p.user.id);
        const std::string site = engine_.policy().mfa_issuer.empty() ? rp_id() : engine_.policy().mfa_issuer;
        json::Writer w;
        w.begin_object()
            .key("challenge").value(b64(make_challenge(*engine_.passkey_key_, kCreate, p.user.id, now)))
            .key("rp").begin_object().key("id").value(rp_id()).key("name").value(site).end_object()
            .key("user").begin_object()
            .key("id").value(b64(p.user.id))
            .key("name").value(p.user.email)
            .key("displayName").value(p.user.email)
            .end_object()
            .key("pubKeyCredParams").begin_array();
        for (int alg : {webauthn::kEdDSA, webauthn::kES256, webauthn::kRS256}) {
            w.begin_object().key("type").value("public-key").key("alg").value(static_cast<std::int64_t>(alg)).end_object();
        }
        w.end_array()
            .key("timeout").value(static_cast<std::int64_t>(kChallengeTtl))
            .key("excludeCredentials").begin_array();
        for (const auto &h : held) {
            w.begin_object().key("type").value("public-key").key("id").value(b64(h.credential_id)).end_object();
        }
        w.end_array()
            .key("authenticatorSelection").begin_object()
            .key("residentKey").value("required")
            .key("requireResidentKey").value(true)
            .key("userVerification").value("preferred")
            .end_object()
            .key("attestation").value("none")
            .end_object();
        return w.take();
    });
}

Result<PasskeyInfo> Passkeys::add(const Principal &p, std::string_view body, std::string_view client) {
    if (!engine_.policy().with_passkeys) return disabled();
    if (!engine_.passkey_key_) return no_key();
    const Millis now = engine_.now();
    if (!detail::is_fresh(engine_.policy(), p.session, now)) {
        return detail::fresh_required(engine_.policy(), "adding a passkey");
    }
    // The checks that need no store; `why` is the first that failed.
    std::string why, message;
    Millis expires_at = 0;
    std::string challenge;  // the digest to mark spent, once the challenge is known to be ours
    PasskeyRecord rec;
    auto fail = [&](std::string w, std::string m) {
        if (why.empty()) {
            why = std::move(w);
            message = std::move(m);
        }
    };
    auto c = webauthn::parse_credential_body(body, true);
    if (!c) {
        fail("malformed", c.error().message);
    } else if (auto cd = webauthn::parse_client_data(c->client_data_json); !cd) {
        fail("malformed", cd.error().message);
    } else if (cd->type != "webauthn.create") {
        fail("type", "the client data's type is not webauthn.create");
    } else if (!(why = check_challenge(*engine_.passkey_key_, cd->challenge, kCreate, p.user.id, now, &expires_at)).empty()) {
        message = "the challenge is not one this site gave this account, or it expired: ask for new options";
    } else if ((challenge = secret_hash(cd->challenge), cd->origin != engine_.origin().text || cd->cross_origin)) {
        fail("origin", "the passkey was made for another origin");
    } else if (auto att = webauthn::parse_attestation_object(c->attestation_object); !att) {
        fail("malformed", att.error().message);
    } else {
        const auto &a = att->auth_data;
        auto alg = a.attested() ? webauthn::check_public_key(a.public_key) : Result<int>(Error{});
        if (a.rp_id_hash != webauthn::sha256(rp_id())) {
            fail("rp_id", "the passkey was made for another relying party id");
        } else if (!a.user_present()) {
            fail("user_presence", "the authenticator did not confirm the user's presence");
        } else if (!a.attested() || a.credential_id != c->id) {
            fail("malformed", "the attestation does not carry this credential");
        } else if (!alg) {
            fail("key", alg.error().message);
        } else {
            rec.key = secret_hash(a.credential_id);
            rec.credential_id = a.credential_id;
            rec.user_id = p.user.id;
            rec.name = c->name.empty() ? "Passkey" : c->name;
            rec.public_key = a.public_key;
            rec.alg = alg.value();
            rec.sign_count = a.sign_count;
            rec.user_verified = a.user_verified();
            rec.backup_eligible = a.backup_eligible();
            rec.created_at = now;
        }
    }
    return detail::guarded("add passkey", [&]() -> Result<PasskeyInfo> {
        auto txn = engine_.store_->write();
        if (!challenge.empty() && txn->challenge_spent(challenge)) {
            fail("challenge spent", "this challenge was used already: ask for new options");
        }
        if (why.empty() && txn->passkey(rec.key)) fail("duplicate", "this passkey is registered already");
        if (why.empty() && txn->passkeys_of(p.user.id).size() >= kMaxPerUser) {
            fail("too_many", "an account holds at most " + std::to_string(kMaxPerUser) + " passkeys: remove one first");
        }
        if (!challenge.empty()) txn->spend_challenge(challenge, expires_at);
        if (!why.empty()) {
            txn->append_audit(detail::audit(now, "passkey.refused", p.user.email, client, p.user.id, "register:" + why));
            txn->commit();
            return Error{Code::InvalidRequest, message};
        }
        txn->put_passkey(rec);
        txn->append_audit(detail::audit(now, "passkey.added", p.user.email, client, p.user.id, rec.name));
        txn->commit();
        return detail::passkey_info(rec);
    });
}

Result<std::vector<PasskeyInfo>> Passkeys::list(const Principal &p) {
    if (!engine_.policy().with_passkeys) return disabled();
    return detail::guarded("list passkeys", [&]() -> Result<std::vector<PasskeyInfo>> {
        auto held = engine_.store_->read()->passkeys_of(p.user.id);
        std::sort(held.begin(), held.end(), [](const PasskeyRecord &a, const PasskeyRecord &b) { return a.created_at < b.created_at; });
        std::vector<PasskeyInfo> out;
        for (const auto &r : held) out.push_back(detail::passkey_info(r));
        return out;
    });
}

Status Passkeys::remove(const Principal &p, std::string_view id, std::string_view client) {
    if (!engine_.policy().with_passkeys) return disabled();
    const Error none{Code::NotFound, "no such passkey"};
    auto raw = enc::base64url_decode(id);
    if (!raw || raw->empty()) return none;
    return detail::guarded("remove passkey", [&]() -> Status {
        auto txn = engine_.store_->write();
        auto rec = txn->passkey(secret_hash(*raw));
        if (!rec || rec->user_id != p.user.id) return none;
        txn->del_passkey(rec->key);
        txn->append_audit(detail::audit(engine_.now(), "passkey.removed", p.user.email, client, p.user.id, rec->name));
        txn->commit();
        return ok_status();
    });
}

Result<std::string> Passkeys::login_options() {
    if (!engine_.policy().with_passkeys) return disabled();
    if (!engine_.passkey_key_) return no_key();
    json::Writer w;
    w.begin_object()
        .key("challenge").value(b64(make_challenge(*engine_.passkey_key_, kGet, {}, engine_.now())))
        .key("rpId").value(rp_id())
        .key("timeout").value(static_cast<std::int64_t>(kChallengeTtl))
        .key("userVerification").value("preferred")
        .key("allowCredentials").begin_array().end_array()
        .end_object();
    return w.take();
}

Result<SignInStep> Passkeys::sign_in(std::string_view body, std::string_view client, SessionKind kind,
                                     std::string_view user_agent, const BrowserCookies *browser) {
    if (!engine_.policy().with_passkeys) return disabled();
    if (!engine_.passkey_key_) return no_key();
    const Millis now = engine_.now();
    std::string why;
    Millis expires_at = 0;
    std::string challenge;  // the digest to mark spent, once the challenge is known to be ours
    webauthn::AuthenticatorData data;
    auto c = webauthn::parse_credential_body(body, false);
    if (!c) {
        why = "malformed";
    } else if (auto cd = webauthn::parse_client_data(c->client_data_json); !cd) {
        why = "malformed";
    } else if (cd->type != "webauthn.get") {
        why = "type";
    } else if (!(why = check_challenge(*engine_.passkey_key_, cd->challenge, kGet, {}, now, &expires_at)).empty()) {
        // not ours, or expired
    } else if ((challenge = secret_hash(cd->challenge), cd->origin != engine_.origin().text || cd->cross_origin)) {
        why = "origin";
    } else if (auto a = webauthn::parse_authenticator_data(c->authenticator_data); !a) {
        why = "malformed";
    } else if (a->rp_id_hash != webauthn::sha256(rp_id())) {
        why = "rp_id";
    } else if (!a->user_present()) {
        why = "user_presence";
    } else {
        data = std::move(a.value());
    }
    return detail::guarded("passkey sign-in", [&]() -> Result<SignInStep> {
        auto txn = engine_.store_->write();
        std::optional<PasskeyRecord> rec;
        std::optional<User> user;
        if (why.empty() && txn->challenge_spent(challenge)) why = "challenge spent";
        if (why.empty()) {
            rec = txn->passkey(secret_hash(c->id));
            if (!rec) why = "unknown credential";
        }
        if (why.empty() && c->user_handle != rec->user_id) why = "user handle";
        if (why.empty() &&
            !webauthn::verify_signature(rec->public_key, c->authenticator_data + webauthn::sha256(c->client_data_json),
                                        c->signature)) {
            why = "signature";
        }
        if (why.empty() && (data.sign_count != 0 || rec->sign_count != 0) && data.sign_count <= rec->sign_count) {
            why = "counter " + std::to_string(data.sign_count) + " <= " + std::to_string(rec->sign_count);
        }
        if (why.empty()) {
            user = txn->user_by_id(rec->user_id);
            if (!user) why = "no user";
            else if (user->suspended) why = "suspended";
        }
        if (!challenge.empty()) txn->spend_challenge(challenge, expires_at);
        if (!why.empty()) {
            txn->append_audit(detail::audit(now, "passkey.refused", user ? user->email : std::string(), client,
                                            rec ? rec->user_id : std::string(), "sign_in:" + why));
            txn->commit();
            return refused();
        }
        rec->sign_count = data.sign_count;
        rec->last_used_at = now;
        txn->put_passkey(*rec);
        const bool uv = data.user_verified();
        txn->append_audit(detail::audit(now, "passkey.used", user->email, client, user->id,
                                        rec->name + (uv ? ":uv" : "")));
        std::optional<BrowserCookies> joining;  // the body's add, for the browser's accounts
        if (browser != nullptr) {
            joining = *browser;
            joining->add = c->add;
        }
        SignInStep step = engine_.sign_in(*txn, *user, kind, SignInMethod::Passkey, client, user_agent, now,
                                          "passkey:" + std::string(kind_name(kind)) + (uv ? ":uv" : ""),
                                          joining ? &*joining : nullptr, uv);
        txn->commit();
        return step;
    });
}

}  // namespace signin
