// The outbox (outbox.hpp): the secret key file, sealed deliveries, and the entry's life: held by
// its sender, sent, tried again, given up, or claimed when its sender vanished.
#include "signin/outbox.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <sstream>
#include <stdexcept>

#include "core/encoding.hpp"
#include "core/engine_detail.hpp"
#include "signin/engine.hpp"

namespace signin {
namespace {

constexpr char kKeyComment[] =
    "# ngx_signin secret key (signin_secret_key). Keep it secret and back it up apart from the store:\n"
    "# without it, emails waiting in the outbox cannot be sent.\n";

// The outbox's subkey: BLAKE2b-based KDF of the secret key, its own context and id.
constexpr std::uint64_t kOutboxSubkeyId = 1;
constexpr char kOutboxContext[crypto_kdf_CONTEXTBYTES + 1] = "sgoutbox";

// Sealed: nonce (24) || XChaCha20-Poly1305 of the plaintext, with the token's hash as associated
// data (a sealed delivery moved to another entry does not open). Plaintext: version byte,
// purpose, with_password, then email, group and token, each a u16 LE length and its bytes.
constexpr unsigned char kSealVersion = 1;

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

std::string seal(const SecretKey &key, const Delivery &d, std::string_view token_hash) {
    std::string plain;
    plain.reserve(3 + 6 + d.email.size() + d.group_id.size() + 43);
    plain.push_back(static_cast<char>(kSealVersion));
    plain.push_back(static_cast<char>(d.purpose));
    plain.push_back(d.with_password ? 1 : 0);
    put_str16(plain, d.email);
    put_str16(plain, d.group_id);
    put_str16(plain, d.token.reveal());
    std::string out(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES + plain.size() +
                        crypto_aead_xchacha20poly1305_ietf_ABYTES,
                    '\0');
    auto *nonce = reinterpret_cast<unsigned char *>(out.data());
    randombytes_buf(nonce, crypto_aead_xchacha20poly1305_ietf_NPUBBYTES);
    unsigned long long clen = 0;
    crypto_aead_xchacha20poly1305_ietf_encrypt(
        nonce + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, &clen,
        reinterpret_cast<const unsigned char *>(plain.data()), plain.size(),
        reinterpret_cast<const unsigned char *>(token_hash.data()), token_hash.size(), nullptr, nonce, key.data());
    sodium_memzero(plain.data(), plain.size());
    out.resize(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES + clen);
    return out;
}

std::optional<Delivery> unseal(const SecretKey &key, std::string_view sealed, std::string_view token_hash) {
    constexpr std::size_t nb = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
    if (sealed.size() < nb + crypto_aead_xchacha20poly1305_ietf_ABYTES) return std::nullopt;
    std::string plain(sealed.size() - nb - crypto_aead_xchacha20poly1305_ietf_ABYTES, '\0');
    unsigned long long plen = 0;
    const auto *nonce = reinterpret_cast<const unsigned char *>(sealed.data());
    if (crypto_aead_xchacha20poly1305_ietf_decrypt(
            reinterpret_cast<unsigned char *>(plain.data()), &plen, nullptr, nonce + nb, sealed.size() - nb,
            reinterpret_cast<const unsigned char *>(token_hash.data()), token_hash.size(), nonce, key.data()) != 0) {
        return std::nullopt;
    }
    std::string_view in(plain.data(), static_cast<std::size_t>(plen));
    std::optional<Delivery> out;
    if (in.size() >= 3 && static_cast<unsigned char>(in[0]) == kSealVersion) {
        const auto purpose = static_cast<unsigned char>(in[1]);
        const auto with_password = static_cast<unsigned char>(in[2]);
        in.remove_prefix(3);
        Delivery d;
        std::string token;
        if (purpose >= 1 && purpose <= 7 && with_password <= 1 && get_str16(in, d.email) &&
            get_str16(in, d.group_id) && get_str16(in, token) && in.empty()) {
            d.purpose = static_cast<Purpose>(purpose);
            d.with_password = with_password == 1;
            d.token = Secret(std::move(token));
            out = std::move(d);
        }
        sodium_memzero(token.data(), token.size());
    }
    sodium_memzero(plain.data(), plain.size());
    return out;
}

Error key_error(const std::string &path, const std::string &why) {
    return Error{Code::Internal, "signin_secret_key \"" + path + "\": " + why};
}

std::optional<SecretKey> parse_key_text(const std::string &text) {
    std::istringstream lines(text);
    std::string line;
    std::optional<SecretKey> key;
    while (std::getline(lines, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || line[0] == '#') continue;
        if (key) return std::nullopt;  // one key line
        auto raw = enc::base64url_decode(line);
        if (!raw || raw->size() != 32) return std::nullopt;
        SecretKey k{};
        std::memcpy(k.data(), raw->data(), 32);
        sodium_memzero(raw->data(), raw->size());
        key = k;
        sodium_memzero(line.data(), line.size());
    }
    return key;
}

}  // namespace

std::string secret_key_text(const SecretKey &key) {
    return std::string(kKeyComment) + enc::base64url(key.data(), key.size()) + "\n";
}

Result<SecretKey> load_secret_key(const std::string &path, bool create) {
    if (sodium_init() < 0) return key_error(path, "libsodium could not be initialised");
    for (int round = 0; round < 2; ++round) {
        int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0) {
            struct stat st {};
            if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
                close(fd);
                return key_error(path, "not a regular file");
            }
            if (st.st_mode & 077) {
                close(fd);
                return key_error(path, "readable by others: chmod 600 it");
            }
            std::string text;
            char buf[512];
            for (;;) {
                ssize_t n = read(fd, buf, sizeof buf);
                if (n < 0 && errno == EINTR) continue;
                if (n <= 0) break;
                text.append(buf, static_cast<std::size_t>(n));
                if (text.size() > 64 * 1024) break;
            }
            sodium_memzero(buf, sizeof buf);
            close(fd);
            auto key = parse_key_text(text);
            sodium_memzero(text.data(), text.size());
            if (!key) return key_error(path, "not a key file (one line of 43 base64url characters expected)");
            return *key;
        }
        if (errno != ENOENT) return key_error(path, std::strerror(errno));
        if (!create) return key_error(path, "does not exist");
        // Written whole under a temporary name, then linked in place: a reader never sees half a
        // key, and of two processes creating it at once, the second reads the first's.
        SecretKey key{};
        randombytes_buf(key.data(), key.size());
        std::string text = secret_key_text(key);
        std::string tmp = path + ".tmp." + std::to_string(getpid());
        int out = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (out < 0) return key_error(path, std::string("cannot create it: ") + std::strerror(errno));
        bool ok = write(out, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && fsync(out) == 0;
        ok = close(out) == 0 && ok;
        sodium_memzero(text.data(), text.size());
        int linked = ok ? link(tmp.c_str(), path.c_str()) : -1;
        int link_errno = errno;
        unlink(tmp.c_str());
        if (!ok) return key_error(path, "cannot write it");
        if (linked == 0) return key;
        if (link_errno != EEXIST) return key_error(path, std::string("cannot create it: ") + std::strerror(link_errno));
        // another process made it first: read theirs
    }
    return key_error(path, "cannot be read");
}

// ---- the engine's side -------------------------------------------------------------------------

void Engine::use_outbox(const OutboxSettings &settings) {
    OutboxState st{};
    crypto_kdf_derive_from_key(st.key.data(), st.key.size(), kOutboxSubkeyId, kOutboxContext, settings.key.data());
    st.hold = settings.hold;
    st.retries = settings.retries;
    outbox_ = st;
}

std::string Engine::enqueue(WriteTxn &txn, const Delivery &d, std::string_view client, Millis now) const {
    if (!outbox_) return {};
    OutboxRecord r;
    r.due_at = now + outbox_->hold;  // the caller sends it at once and holds it meanwhile
    r.created_at = now;
    r.attempts = 1;
    if (!d.token.empty()) r.token_hash = secret_hash(d.token.reveal());
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

bool token_usable(ReadTxn &txn, const std::string &token_hash, Millis now) {
    if (token_hash.empty()) return true;  // a notice
    auto t = txn.token(token_hash);
    return t && t->expires_at > now;
}

}  // namespace

Millis Outbox::backoff(std::uint32_t failures) {
    if (failures == 0) return 0;
    const std::uint32_t shift = failures - 1 < 20 ? failures - 1 : 20;
    return Millis{1000} << shift;
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
            if (!token_usable(*txn, r.token_hash, now)) {
                txn->del_outbox(r.key);  // spent, expired or cancelled meanwhile: nothing to send
                continue;
            }
            if (r.attempts >= 1 + st.retries) {
                give_up(*txn, r, d->email, tag, now);
                continue;
            }
            // its sender vanished mid-send: that send counts as failed
            txn->del_outbox(r.key);
            r.attempts += 1;
            r.due_at = now + st.hold;
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

Status Outbox::sent(const OutboxItem &item) {
    return detail::guarded("outbox sent", [&]() -> Status {
        auto txn = engine_.store_->write();
        txn->del_outbox(item.key);
        txn->commit();
        return ok_status();
    });
}

Result<std::optional<Millis>> Outbox::failed(OutboxItem &item) {
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
        if (r->attempts >= 1 + st.retries) {
            give_up(*txn, *r, item.delivery.email, purpose_tag(item.delivery.purpose), now);
            txn->commit();
            return std::optional<Millis>{};
        }
        const Millis delay = backoff(r->attempts);
        txn->del_outbox(r->key);
        r->attempts += 1;
        r->due_at = now + delay + st.hold;
        txn->put_outbox(*r);
        txn->commit();
        item.key = r->key;
        item.attempts = r->attempts;
        return std::optional<Millis>{delay};
    });
}

Result<bool> Outbox::wanted(const OutboxItem &item) {
    return detail::guarded("outbox read", [&]() -> Result<bool> {
        auto txn = engine_.store_->read();
        auto r = txn->outbox(item.key);
        return r.has_value() && token_usable(*txn, r->token_hash, engine_.now());
    });
}

Result<bool> Outbox::any_due() {
    if (!engine_.outbox_) return false;
    return detail::guarded("outbox read", [&]() -> Result<bool> {
        return !engine_.store_->read()->outbox_due(engine_.now(), 1).empty();
    });
}

Result<std::size_t> Outbox::pending() {
    return detail::guarded("outbox read", [&]() -> Result<std::size_t> { return engine_.store_->read()->outbox_count(); });
}

}  // namespace signin
