// Second factors (mfa.hpp): TOTP enrollment, recovery codes, the second step of a sign-in and
// remembered devices, over the store's mfa and mfa_pending records.
#include "signin/mfa.hpp"

#include <sodium.h>

#include <algorithm>

#include "encoding.hpp"
#include "engine_detail.hpp"
#include "signin/codes.hpp"
#include "signin/totp.hpp"

namespace signin {
namespace {

Error disabled() { return Error{Code::MfaDisabled, "second factors are not enabled"}; }
Error not_signed_in() { return Error{Code::Unauthenticated, "not signed in"}; }
Error wrong_code() { return Error{Code::InvalidCode, "the code is not right"}; }

// The TOTP secret sealed for one user (secret_key.hpp; the user id as associated data: a sealed
// secret copied to another user's record does not open).
std::string seal_for(const SecretKey &key, std::string_view user_id, std::string_view secret) {
    return signin::seal(key, secret, user_id);
}

std::optional<Secret> unseal_for(const SecretKey &key, std::string_view user_id, std::string_view sealed) {
    return open_sealed(key, sealed, user_id);
}

// Recovery codes: 16 Crockford base32 characters (80 bits), shown XXXX-XXXX-XXXX-XXXX, read as
// the short codes are (case, hyphens, spaces, I/L/O); stored as a keyed digest per user.
std::string new_recovery_code() {
    const std::string a = new_code(), b = new_code();
    return format_code(a) + "-" + format_code(b);
}

std::optional<std::string> normalize_recovery_code(std::string_view typed) {
    if (typed.size() > 64) return std::nullopt;
    std::string flat;
    for (char c : typed) {
        if (c != '-' && c != ' ' && c != '\t') flat.push_back(c);
    }
    if (flat.size() != 16) return std::nullopt;
    auto a = normalize_code(flat.substr(0, 8)), b = normalize_code(flat.substr(8));
    if (!a || !b) return std::nullopt;
    return *a + *b;
}

std::string recovery_digest(std::string_view user_id, std::string_view normalized) {
    return secret_hash("recovery-code\n" + std::string(user_id) + "\n" + std::string(normalized));
}

// Ten new codes into m (the old set is void); returns them for the person to keep.
std::vector<std::string> renew_recovery_codes(MfaRecord &m) {
    std::vector<std::string> codes;
    m.recovery_hashes.clear();
    for (unsigned i = 0; i < Mfa::kRecoveryCodes; i++) {
        codes.push_back(new_recovery_code());
        m.recovery_hashes.push_back(recovery_digest(m.user_id, *normalize_recovery_code(codes.back())));
    }
    return codes;
}

// Which factor a code passes: a TOTP code of a step after the last one accepted (the step is
// then recorded), or an unused recovery code (then spent). "" when neither.
std::string pass(const SecretKey &key, MfaRecord &m, std::string_view code, std::string_view recovery_code,
                 Millis now) {
    if (!code.empty() && m.has_factor()) {
        auto secret = unseal_for(key, m.user_id, m.totp_sealed);
        if (!secret) return {};
        auto step = totp::match(secret->reveal(), code, now / 1000);
        if (step && *step > m.last_step) {
            m.last_step = *step;
            return "totp";
        }
        return {};
    }
    if (!recovery_code.empty()) {
        auto normalized = normalize_recovery_code(recovery_code);
        if (!normalized) return {};
        const std::string digest = recovery_digest(m.user_id, *normalized);
        auto it = std::find_if(m.recovery_hashes.begin(), m.recovery_hashes.end(), [&](const std::string &h) {
            return h.size() == digest.size() && sodium_memcmp(h.data(), digest.data(), h.size()) == 0;
        });
        if (it == m.recovery_hashes.end()) return {};
        m.recovery_hashes.erase(it);
        return "recovery_code";
    }
    return {};
}

// The wait an account's wrong codes in a row set: none while they are free, then the policy's
// backoff doubling with each one more, up to the password backoff's ceiling.
Millis failure_wait(const Policy &policy, std::uint32_t failures) {
    if (failures < policy.mfa_free_failures) return 0;
    Millis wait = policy.mfa_backoff;
    for (std::uint32_t i = policy.mfa_free_failures; i < failures && wait < policy.attempts.backoff_max; ++i) wait *= 2;
    return std::min(wait, std::max(policy.attempts.backoff_max, policy.mfa_backoff));
}

Error locked_error() {
    return Error{Code::MfaLocked,
                 "too many wrong codes: the second factor is locked until you sign in by email again or an "
                 "administrator resets it"};
}

bool locked(const Policy &policy, const MfaRecord &m) {
    return policy.mfa_lock_failures > 0 && m.failures >= policy.mfa_lock_failures;
}

// Why the account's factor takes no code now, if it does not: locked, or waiting after wrong
// codes (the refusal is audited; the caller commits). The account's wrong codes count over every
// pending sign-in and client: many pending sign-ins (one password or email each) would otherwise
// give many guesses each.
std::optional<Error> refusal(const Policy &policy, WriteTxn &txn, const MfaRecord &m, const User &user,
                             std::string_view client, Millis now) {
    if (locked(policy, m)) {
        txn.append_audit(detail::audit(now, "mfa.refused", user.email, client, user.id, "locked"));
        return locked_error();
    }
    if (m.wait_until > now) {
        txn.append_audit(detail::audit(now, "mfa.refused", user.email, client, user.id, "waiting"));
        Error e{Code::RateLimited, "too many wrong codes: wait before trying again"};
        e.retry_after = m.wait_until - now;
        return e;
    }
    return std::nullopt;
}

// The email that tells an account's owner its second factor locked: a notice, no token in it.
Delivery lock_notice_to(const User &user) {
    Delivery d;
    d.email = user.email;
    d.purpose = Purpose::MfaLocked;
    d.group_id = user.group_id;
    d.lang = detail::notice_language(user);
    return d;
}

// A wrong code (`what`: "totp" or "recovery_code") for the pending sign-in `hash`, counted twice:
// on the pending sign-in, which ends after the policy's limit, and, for an account with a factor,
// on the account, whose wrong codes in a row set a wait and then the lock (every sign-in waiting
// for the factor ends). True when this code locked the factor: its owner is to be told.
bool count_wrong_code(const Policy &policy, WriteTxn &txn, MfaPendingRecord &pending, const std::string &hash,
                      MfaRecord &m, const User &user, const char *what, std::string_view client, Millis now) {
    pending.failures = static_cast<std::uint8_t>(pending.failures + 1);
    const bool dead = pending.failures >= policy.mfa_pending_failures;
    if (dead) {
        txn.del_mfa_pending(hash);
    } else {
        txn.put_mfa_pending(pending);
    }
    txn.append_audit(detail::audit(now, dead ? "mfa.locked" : "mfa.failed", user.email, client, user.id, what));
    if (!m.has_factor()) return false;
    m.failures = m.failures == UINT32_MAX ? m.failures : m.failures + 1;
    const Millis wait = failure_wait(policy, m.failures);
    m.wait_until = wait > 0 ? now + wait : 0;
    m.updated_at = now;
    txn.put_mfa(m);
    if (locked(policy, m)) {
        txn.append_audit(detail::audit(now, "mfa.account_locked", user.email, client, user.id,
                                       std::to_string(m.failures) + " wrong codes in a row"));
        txn.del_mfa_pending_of(user.id);  // every sign-in waiting for the factor ends
        return true;
    }
    if (wait > 0) {
        txn.append_audit(detail::audit(now, "mfa.backoff", user.email, client, user.id,
                                       std::to_string(m.failures) + " wrong codes in a row"));
    }
    return false;
}

// A new remembered device in m, valid until expires_at (expired ones go, and the oldest beyond
// Mfa::kMaxDevices): the secret for the browser's cookie, only its digest kept.
Secret remember_device(MfaRecord &m, Millis now, Millis expires_at) {
    std::string device = enc::random_secret(32);
    m.devices.erase(std::remove_if(m.devices.begin(), m.devices.end(),
                                   [now](const MfaRecord::Device &d) { return d.expires_at <= now; }),
                    m.devices.end());
    if (m.devices.size() >= Mfa::kMaxDevices) m.devices.erase(m.devices.begin());
    m.devices.push_back({secret_hash(device), expires_at});
    return Secret(std::move(device));
}

}  // namespace

MfaStatus detail::mfa_status(const std::optional<MfaRecord> &m, Millis now) {
    MfaStatus out;
    if (!m || !m->has_factor()) return out;
    out.totp = true;
    out.recovery_codes_left = static_cast<unsigned>(m->recovery_hashes.size());
    out.remembered_devices = static_cast<unsigned>(std::count_if(
        m->devices.begin(), m->devices.end(), [now](const MfaRecord::Device &d) { return d.expires_at > now; }));
    return out;
}

Result<MfaStatus> Mfa::status(const Principal &p) {
    if (!engine_.policy().with_mfa) return disabled();
    return detail::guarded("second factors", [&]() -> Result<MfaStatus> {
        return detail::mfa_status(engine_.store_->read()->mfa(p.user.id), engine_.now());
    });
}

Result<TotpSetup> Mfa::setup_totp(const Principal &p, std::string_view client) {
    if (!engine_.policy().with_mfa) return disabled();
    const Millis now = engine_.now();
    if (!detail::is_fresh(engine_.policy(), p.session, now)) return detail::fresh_required(engine_.policy(), "this");
    if (!engine_.mfa_key_) return Error{Code::Internal, "second factors need the secret key (signin_secret_key)"};
    return detail::guarded("second factor setup", [&]() -> Result<TotpSetup> {
        auto txn = engine_.store_->write();
        auto user = txn->user_by_id(p.user.id);
        if (!user || user->suspended || !txn->session(p.session.hash)) return not_signed_in();
        MfaRecord m = txn->mfa(user->id).value_or(MfaRecord{});
        m.user_id = user->id;
        Secret raw(totp::new_secret());
        m.pending_sealed = seal_for(*engine_.mfa_key_, user->id, raw.reveal());
        m.pending_expires_at = now + engine_.policy().mfa_setup_ttl;
        m.updated_at = now;
        txn->put_mfa(m);
        txn->append_audit(detail::audit(now, "mfa.setup", user->email, client, user->id, "totp"));
        std::string issuer = engine_.policy().mfa_issuer;
        if (issuer.empty()) {
            const std::string &o = engine_.origin().text;
            const auto at = o.find("://");
            issuer = at == std::string::npos ? o : o.substr(at + 3);
        }
        TotpSetup out;
        out.secret = Secret(totp::base32(raw.reveal()));
        out.otpauth_uri = totp::otpauth_uri(issuer, user->email, raw.reveal());
        out.qr_svg = totp::qr_svg(out.otpauth_uri);
        txn->commit();
        return out;
    });
}

Result<std::vector<std::string>> Mfa::confirm_totp(const Principal &p, std::string_view code, std::string_view client) {
    if (!engine_.policy().with_mfa) return disabled();
    if (!engine_.mfa_key_) return Error{Code::Internal, "second factors need the secret key (signin_secret_key)"};
    return detail::guarded("second factor confirmation", [&]() -> Result<std::vector<std::string>> {
        const Millis now = engine_.now();
        auto txn = engine_.store_->write();
        auto user = txn->user_by_id(p.user.id);
        if (!user || user->suspended || !txn->session(p.session.hash)) return not_signed_in();
        auto m = txn->mfa(user->id);
        if (!m || m->pending_sealed.empty() || m->pending_expires_at <= now) {
            return Error{Code::InvalidRequest, "no second factor is being set up: start again with /mfa/totp/setup"};
        }
        auto secret = unseal_for(*engine_.mfa_key_, user->id, m->pending_sealed);
        if (!secret) return Error{Code::Internal, "the pending secret does not open with this secret key"};
        auto step = totp::match(secret->reveal(), code, now / 1000);
        if (!step) {
            txn->append_audit(detail::audit(now, "mfa.failed", user->email, client, user->id, "setup"));
            txn->commit();
            return wrong_code();
        }
        m->totp_sealed = m->pending_sealed;
        m->pending_sealed.clear();
        m->pending_expires_at = 0;
        m->last_step = *step;
        m->updated_at = now;
        std::vector<std::string> codes = renew_recovery_codes(*m);
        txn->put_mfa(*m);
        detail::end_sessions_except(*txn, p.user.id, p.session.hash, now, "mfa_enabled");
        if (auto mine = txn->session(p.session.hash)) {  // this session just showed the factor
            mine->mfa = true;
            txn->put_session(*mine);
        }
        txn->append_audit(detail::audit(now, "mfa.enabled", user->email, client, user->id, "totp"));
        txn->commit();
        return codes;
    });
}

Result<std::vector<std::string>> Mfa::new_recovery_codes(const Principal &p, std::string_view client) {
    if (!engine_.policy().with_mfa) return disabled();
    const Millis now = engine_.now();
    if (!detail::is_fresh(engine_.policy(), p.session, now)) return detail::fresh_required(engine_.policy(), "this");
    return detail::guarded("recovery codes", [&]() -> Result<std::vector<std::string>> {
        auto txn = engine_.store_->write();
        auto user = txn->user_by_id(p.user.id);
        if (!user || user->suspended || !txn->session(p.session.hash)) return not_signed_in();
        auto m = txn->mfa(user->id);
        if (!m || !m->has_factor()) return Error{Code::InvalidRequest, "this account has no second factor"};
        std::vector<std::string> codes = renew_recovery_codes(*m);
        m->updated_at = now;
        txn->put_mfa(*m);
        txn->append_audit(detail::audit(now, "mfa.recovery_codes_renewed", user->email, client, user->id));
        txn->commit();
        return codes;
    });
}

Status Mfa::disable(const Principal &p, std::string_view code, std::string_view recovery_code, std::string_view client) {
    if (!engine_.policy().with_mfa) return disabled();
    const Millis now = engine_.now();
    if (!detail::is_fresh(engine_.policy(), p.session, now)) return detail::fresh_required(engine_.policy(), "this");
    if (!engine_.mfa_key_) return Error{Code::Internal, "second factors need the secret key (signin_secret_key)"};
    return detail::guarded("second factor removal", [&]() -> Status {
        auto txn = engine_.store_->write();
        auto user = txn->user_by_id(p.user.id);
        if (!user || user->suspended || !txn->session(p.session.hash)) return not_signed_in();
        auto m = txn->mfa(user->id);
        if (!m || !m->has_factor()) return Error{Code::InvalidRequest, "this account has no second factor"};
        const std::string how = pass(*engine_.mfa_key_, *m, code, recovery_code, now);
        if (how.empty()) {
            txn->append_audit(detail::audit(now, "mfa.failed", user->email, client, user->id, "disable"));
            txn->commit();
            return wrong_code();
        }
        txn->del_mfa(user->id);  // the secret, the recovery codes and every remembered device
        detail::end_sessions_except(*txn, p.user.id, p.session.hash, now, "mfa_disabled");
        txn->append_audit(detail::audit(now, "mfa.disabled", user->email, client, user->id, how));
        txn->commit();
        return ok_status();
    });
}

Status Mfa::forget_devices(const Principal &p, std::string_view client) {
    if (!engine_.policy().with_mfa) return disabled();
    return detail::guarded("remembered devices", [&]() -> Status {
        auto txn = engine_.store_->write();
        auto user = txn->user_by_id(p.user.id);
        if (!user || !txn->session(p.session.hash)) return not_signed_in();
        engine_.forget_devices(*txn, *user, client, engine_.now());
        txn->commit();
        return ok_status();
    });
}

Status Mfa::reset(std::string_view group_in, std::string_view email_in, std::string_view client) {
    auto email = normalize_email(email_in);
    if (!email) return Error{Code::InvalidEmail, "that is not an email address"};
    auto group = normalize_group(group_in);
    if (!group) return Error{Code::InvalidRequest, "invalid group"};
    return detail::guarded("second factor reset", [&]() -> Status {
        auto txn = engine_.store_->write();
        auto user = txn->user_by_email(*group, *email);
        if (!user) return Error{Code::NotFound, "no account has that address"};
        const bool had = txn->mfa(user->id).has_value();
        txn->del_mfa(user->id);
        txn->del_mfa_pending_of(user->id);
        detail::end_sessions_except(*txn, user->id, {}, engine_.now(), "mfa_reset");
        txn->append_audit(detail::audit(engine_.now(), "mfa.reset", user->email, client, user->id,
                                        had ? "factor removed" : "no factor"));
        txn->commit();
        return ok_status();
    });
}

Result<MfaVerified> Mfa::verify(const Secret &mfa_token, std::string_view code, std::string_view recovery_code,
                                bool remember, std::string_view client, SessionKind kind,
                                const BrowserCookies *browser, TokenIssue *lock_notice) {
    if (!engine_.policy().with_mfa) return disabled();
    if (!plausible_secret(mfa_token.reveal())) return Error{Code::InvalidToken, "the sign-in has expired: start again"};
    if (code.empty() == recovery_code.empty()) {
        return Error{Code::InvalidRequest, "send a code or a recovery_code"};
    }
    if (!engine_.mfa_key_) return Error{Code::Internal, "second factors need the secret key (signin_secret_key)"};
    return detail::guarded("second factor", [&]() -> Result<MfaVerified> {
        const Millis now = engine_.now();
        auto txn = engine_.store_->write();  // one serialized transaction: a code signs in once
        const std::string hash = secret_hash(mfa_token.reveal());
        auto pending = txn->mfa_pending(hash);
        auto user = pending ? txn->user_by_id(pending->user_id) : std::nullopt;
        if (!pending || pending->expires_at <= now || !user || user->suspended) {
            if (pending) txn->del_mfa_pending(hash);
            txn->append_audit(detail::audit(now, "mfa.invalid", user ? user->email : std::string(), client,
                                            user ? user->id : std::string(), pending ? "expired" : "unknown"));
            txn->commit();
            if (user && user->suspended) return Error{Code::Suspended, "this account is suspended"};
            return Error{Code::InvalidToken, "the sign-in has expired: start again"};
        }
        MfaRecord m = txn->mfa(user->id).value_or(MfaRecord{});
        m.user_id = user->id;
        const Policy &policy = engine_.policy();
        if (auto refused = refusal(policy, *txn, m, *user, client, now)) {
            txn->commit();
            return *refused;
        }
        const std::string how = pass(*engine_.mfa_key_, m, code, recovery_code, now);
        if (how.empty()) {
            TokenIssue notice;
            if (count_wrong_code(policy, *txn, *pending, hash, m, *user, recovery_code.empty() ? "totp" : "recovery_code",
                                 client, now)) {
                // the owner hears of it from this transaction on: a lock nobody is told of
                // would only show at their next sign-in, long after whoever guessed
                notice.delivery = lock_notice_to(*user);
                notice.outbox_key = engine_.enqueue(*txn, *notice.delivery, client, now);
            }
            txn->commit();
            if (notice.delivery) {
                if (lock_notice != nullptr) {
                    *lock_notice = std::move(notice);
                } else if (notice.outbox_key.empty()) {
                    (void)engine_.deliver(*notice.delivery);  // the factor is locked whether or not it arrives
                }
            }
            return locked(policy, m) ? locked_error() : wrong_code();
        }
        m.failures = 0;
        m.wait_until = 0;
        txn->del_mfa_pending(hash);
        std::optional<BrowserCookies> joining;
        if (browser != nullptr) {
            joining = *browser;
            joining->add = pending->add;
        }
        MfaVerified out;
        if (remember && kind == SessionKind::Cookie && engine_.policy().mfa_remember > 0) {
            out.device_expires_at = now + engine_.policy().mfa_remember;
            out.device = remember_device(m, now, out.device_expires_at);
            txn->append_audit(detail::audit(now, "mfa.device_remembered", user->email, client, user->id));
        }
        m.updated_at = now;
        txn->put_mfa(m);
        if (how == "recovery_code") {
            txn->append_audit(detail::audit(now, "mfa.recovery_used", user->email, client, user->id,
                                            std::to_string(m.recovery_hashes.size()) + " left"));
        }
        txn->append_audit(detail::audit(now, "mfa.verified", user->email, client, user->id, how));
        out.session = engine_.open_session(*txn, *user, kind, pending->method, pending->client, pending->user_agent,
                                           now, std::string(kind_name(kind)) + ":mfa", true, joining ? &*joining : nullptr);
        txn->commit();
        return out;
    });
}

}  // namespace signin
