// The outbox (outbox.hpp): sealed deliveries, and the entry's life: held by
// its sender, sent, tried again, given up, or claimed when its sender vanished.
#include "signin/outbox.hpp"

#include <sodium.h>

#include <limits>
#include <stdexcept>

#include "encoding.hpp"
#include "engine_detail.hpp"
#include "signin/engine.hpp"

namespace signin {
namespace {

// The outbox's subkey: BLAKE2b-based KDF of the secret key, its own context and id.
constexpr std::uint64_t kOutboxSubkeyId = 1;
constexpr char kOutboxContext[crypto_kdf_CONTEXTBYTES + 1] = "sgoutbox";

// Sealed: nonce (24) || XChaCha20-Poly1305 of the plaintext, with the token's hash as associated
// data (a sealed delivery moved to another entry does not open). Plaintext: version byte,
// purpose, with_password, then email, group, token, code and language, each a u16 LE length and
// its bytes; then, in a NewSignIn only, its time (8 bytes, big endian), browser, system and
// client. 2 added the short code after the token, 3 the language, 4 a NewSignIn's facts: every
// other email is still written as 3, which a node of the previous version still opens.
constexpr unsigned char kSealVersion = 4;
constexpr unsigned char kSealVersionWithoutFacts = 3;

void put_str16(std::string &out, std::string_view s) {
    if (s.size() > 0xffff) throw std::length_error("outbox: field too long");
    out.push_back(static_cast<char>(s.size() & 0xff));
    out.push_back(static_cast<char>(s.size() >> 8));
    out.append(s);
}

bool get_str16(std::string_view &in, std::string &out) {
    if (in.size() < 2) return false;
    std::size_t n = static_cast<unsigned char>(in[0]) | (static_cast<std::size_t>(static_cast<unsigned char>(in[1])) << 8);
    in.remove_prefix(2);
    if (in.size() < n) return false;
    out.assign(in.substr(0, n));
    in.remove_prefix(n);
    return true;
}

// A NewSignIn's time, browser, system and client (seal version 4).
bool get_facts(std::string_view &in, Delivery &d) {
    if (in.size() < 8) return false;
    std::uint64_t at = 0;
    for (std::size_t i = 0; i < 8; i++) at = (at << 8) | static_cast<unsigned char>(in[i]);
    in.remove_prefix(8);
    d.signed_in_at = static_cast<Millis>(at);
    return get_str16(in, d.browser) && get_str16(in, d.system) && get_str16(in, d.client);
}

std::string seal(const SecretKey &key, const Delivery &d, std::string_view token_hash) {
    std::string plain;
    plain.reserve(3 + 6 + d.email.size() + d.group_id.size() + 43);
    const bool facts = d.purpose == Purpose::NewSignIn;
    plain.push_back(static_cast<char>(facts ? kSealVersion : kSealVersionWithoutFacts));
    plain.push_back(static_cast<char>(d.purpose));
    plain.push_back(d.with_password ? 1 : 0);
    put_str16(plain, d.email);
    put_str16(plain, d.group_id);
    put_str16(plain, d.token.reveal());
    put_str16(plain, d.code);
    put_str16(plain, d.lang);
    if (facts) {
        const auto at = static_cast<std::uint64_t>(d.signed_in_at);
        for (int shift = 56; shift >= 0; shift -= 8) plain.push_back(static_cast<char>((at >> shift) & 0xff));
        put_str16(plain, d.browser);
        put_str16(plain, d.system);
        put_str16(plain, d.client);
    }
    std::string out = signin::seal(key, plain, token_hash);
    sodium_memzero(plain.data(), plain.size());
    return out;
}

std::optional<Delivery> unseal(const SecretKey &key, std::string_view sealed, std::string_view token_hash) {
    auto opened = open_sealed(key, sealed, token_hash);
    if (!opened) return std::nullopt;
    std::string_view in = opened->reveal();
    std::optional<Delivery> out;
    const auto version = in.empty() ? 0 : static_cast<unsigned char>(in[0]);
    if (in.size() >= 3 && version >= 1 && version <= kSealVersion) {
        const auto purpose = static_cast<unsigned char>(in[1]);
        const auto with_password = static_cast<unsigned char>(in[2]);
        in.remove_prefix(3);
        Delivery d;
        std::string token;
        if (purpose >= 1 && purpose <= static_cast<unsigned char>(Purpose::NewSignIn) && with_password <= 1 && get_str16(in, d.email) &&
            get_str16(in, d.group_id) && get_str16(in, token) && (version < 2 || get_str16(in, d.code)) &&
            (version < 3 || get_str16(in, d.lang)) && (version < 4 || get_facts(in, d)) && in.empty()) {
            d.purpose = static_cast<Purpose>(purpose);
            d.with_password = with_password == 1;
            d.token = Secret(std::move(token));
            out = std::move(d);
        }
        sodium_memzero(token.data(), token.size());
    }
    return out;
}

}  // namespace

// ---- the engine's side -------------------------------------------------------------------------

void Engine::use_outbox(const OutboxSettings &settings) {
    OutboxState st{};
    crypto_kdf_derive_from_key(st.key.data(), st.key.size(), kOutboxSubkeyId, kOutboxContext, settings.key.data());
    st.hold = settings.hold;
    st.retries = settings.retries;
    outbox_ = st;
}

std::string Engine::enqueue(WriteTxn &txn, const Delivery &d, std::string_view client, Millis now,
                            bool held) const {
    if (!outbox_) return {};
    OutboxRecord r;
    // held: the caller sends it at once and holds it meanwhile; else the next check claims it
    r.due_at = held ? now + outbox_->hold : now;
    r.created_at = now;
    r.next_try_at = now;
    r.attempts = held ? 1 : 0;
    if (!d.token.empty()) r.token_hash = record_key(d.token.reveal());
    r.client = std::string(client.substr(0, 64));
    r.sealed = seal(outbox_->key, d, r.token_hash);
    txn.put_outbox(r);
    return r.key;
}

Status Engine::forget_outbox(std::string_view key) const {
    if (key.empty()) return ok_status();
    return detail::guarded("outbox", [&]() -> Status {
        auto txn = store_->write();
        txn->del_outbox(key);
        txn->commit();
        return ok_status();
    });
}

// ---- the outbox ------------------------------------------------------------------------------

namespace {

// Gives an entry up: it goes, its token is cancelled, the audit trail says why (no secret).
void give_up(WriteTxn &txn, const OutboxRecord &r, std::string_view email, std::string_view detail_text, Millis now) {
    txn.del_outbox(r.key);
    if (!r.token_hash.empty()) txn.del_token(r.token_hash);
    txn.append_audit(detail::audit(now, "delivery.failed", email, r.client, {}, detail_text));
}

// Until when an entry is worth sending: its token's expiry, or a notice's lifetime.
Millis worth_until(ReadTxn &txn, const OutboxRecord &r) {
    if (r.token_hash.empty()) return r.created_at + kNoticeLifetime;
    auto t = txn.token(r.token_hash);
    return t ? t->expires_at : 0;
}

// Whether an entry's token (if any: a notice has none) can still be used.
bool token_usable(ReadTxn &txn, const OutboxRecord &r, Millis now) {
    return r.token_hash.empty() || worth_until(txn, r) > now;
}

// The reason kept when a send's end was never recorded: its sender stopped (a crashed worker, a
// stopped server) and another sender took the entry over.
constexpr const char *kSenderVanished = "its sender stopped before the send's end was recorded";
// A failure's reason as kept on the entry, at most (a relay's reply is quoted, cut to fit).
constexpr std::size_t kMaxErrorText = 300;

// Whether an entry that made `attempts` sends has had all signin_delivery_retries allows (none
// when it is unset: then only the token's lifetime ends the tries).
bool out_of_tries(unsigned retries, std::uint32_t attempts) {
    return retries != OutboxSettings::kUntilExpiry && attempts >= 1 + retries;
}

}  // namespace

Millis Outbox::backoff(std::uint32_t failures) {
    if (failures == 0) return 0;
    const std::uint32_t shift = failures - 1 < 20 ? failures - 1 : 20;
    const Millis delay = Millis{1000} << shift;
    return delay < kMaxRetryDelay ? delay : kMaxRetryDelay;
}

Result<std::vector<OutboxItem>> Outbox::claim_due(std::size_t budget) {
    if (!engine_.outbox_) return std::vector<OutboxItem>{};
    return detail::guarded("outbox claim", [&]() -> Result<std::vector<OutboxItem>> {
        const auto &st = *engine_.outbox_;
        const Millis now = engine_.now();
        auto txn = engine_.store_->write();
        std::vector<OutboxItem> out;
        for (auto &r : txn->outbox_due(now, budget)) {
            auto d = unseal(st.key, r.sealed, r.token_hash);
            if (!d) {
                give_up(*txn, r, {}, "unreadable: the secret key changed", now);
                continue;
            }
            const std::string tag(purpose_tag(d->purpose));
            const Millis until = worth_until(*txn, r);
            if (!r.token_hash.empty() && until <= now) {
                txn->del_outbox(r.key);  // spent, expired or cancelled meanwhile: nothing to send
                continue;
            }
            if (out_of_tries(st.retries, r.attempts) || now >= until) {
                give_up(*txn, r, d->email, tag, now);
                continue;
            }
            // its sender vanished mid-send: that send counts as failed (an entry written to be
            // claimed, never held, has had no send yet)
            txn->del_outbox(r.key);
            if (r.attempts > 0) r.last_error = kSenderVanished;
            r.attempts += 1;
            r.due_at = now + st.hold;
            r.next_try_at = now;
            txn->put_outbox(r);
            OutboxItem item;
            item.key = r.key;
            item.delivery = std::move(*d);
            item.client = r.client;
            item.attempts = r.attempts;
            out.push_back(std::move(item));
        }
        txn->commit();
        return out;
    });
}

Status Outbox::sent(const OutboxItem &item) { return engine_.forget_outbox(item.key); }

Result<std::optional<Millis>> Outbox::failed(OutboxItem &item, std::string_view error) {
    if (!engine_.outbox_) return Error{Code::Internal, "no outbox"};
    return detail::guarded("outbox failure", [&]() -> Result<std::optional<Millis>> {
        const auto &st = *engine_.outbox_;
        const Millis now = engine_.now();
        auto txn = engine_.store_->write();
        auto r = txn->outbox(item.key);
        if (!r) {  // claimed by another sender, or gone: not this holder's any more
            txn->commit();
            return std::optional<Millis>{};
        }
        const Millis delay = backoff(r->attempts);
        if (out_of_tries(st.retries, r->attempts) || now + delay >= worth_until(*txn, *r)) {
            give_up(*txn, *r, item.delivery.email, purpose_tag(item.delivery.purpose), now);
            txn->commit();
            return std::optional<Millis>{};
        }
        txn->del_outbox(r->key);
        r->attempts += 1;
        r->due_at = now + delay + st.hold;
        r->next_try_at = now + delay;
        r->last_error = error.empty() ? std::string("no reason given") : std::string(error.substr(0, kMaxErrorText));
        txn->put_outbox(*r);
        txn->commit();
        item.key = r->key;
        item.attempts = r->attempts;
        return std::optional<Millis>{delay};
    });
}

Status Outbox::refused(const OutboxItem &item, std::string_view why) {
    return detail::guarded("outbox refusal", [&]() -> Status {
        const Millis now = engine_.now();
        auto txn = engine_.store_->write();
        if (auto r = txn->outbox(item.key)) {
            std::string detail_text(purpose_tag(item.delivery.purpose));
            if (!why.empty()) detail_text.append(": ").append(why.substr(0, 120));
            give_up(*txn, *r, item.delivery.email, detail_text, now);
        }
        txn->commit();
        return ok_status();
    });
}

Result<bool> Outbox::wanted(const OutboxItem &item) {
    return detail::guarded("outbox read", [&]() -> Result<bool> {
        auto txn = engine_.store_->read();
        auto r = txn->outbox(item.key);
        return r.has_value() && token_usable(*txn, *r, engine_.now());
    });
}

Result<bool> Outbox::any_due() {
    if (!engine_.outbox_) return false;
    return detail::guarded("outbox read", [&]() -> Result<bool> {
        return !engine_.store_->read()->outbox_due(engine_.now(), 1).empty();
    });
}

Result<std::vector<OutboxEntry>> Outbox::waiting(std::size_t limit) {
    return detail::guarded("outbox read", [&]() -> Result<std::vector<OutboxEntry>> {
        auto txn = engine_.store_->read();
        // every entry is due at the end of time: the earliest first, as the store orders them
        auto records = txn->outbox_due(std::numeric_limits<Millis>::max(), limit);
        std::vector<OutboxEntry> out;
        out.reserve(records.size());
        for (auto &r : records) {
            OutboxEntry e;
            if (engine_.outbox_) {
                if (auto d = unseal(engine_.outbox_->key, r.sealed, r.token_hash)) {
                    e.email = std::move(d->email);
                    e.purpose = d->purpose;
                    sodium_memzero(d->code.data(), d->code.size());
                }
            }
            e.attempts = r.attempts;
            e.created_at = r.created_at;
            e.next_try_at = r.next_try_at;
            e.due_at = r.due_at;
            e.last_error = std::move(r.last_error);
            out.push_back(std::move(e));
        }
        return out;
    });
}

Result<std::size_t> Outbox::pending() {
    return detail::guarded("outbox read", [&]() -> Result<std::size_t> { return engine_.store_->read()->outbox_count(); });
}

}  // namespace signin
