// The encoding of the store's records (records.hpp).
#include "records.hpp"

#include <cjson/cJSON.h>
#include <sodium.h>

#include <memory>

#include "signin/json.hpp"

namespace signin::records {

[[noreturn]] void corrupt(std::string_view what) {
    throw StoreError(Code::StorageError, "corrupt record in the store: " + std::string(what));
}

std::string addr_key(std::string_view group_id, std::string_view email) {
    std::string k;
    k.reserve(group_id.size() + 1 + email.size());
    k.append(group_id);
    k.push_back('\0');
    k.append(email);
    return k;
}

std::string_view legacy_key(std::string_view key) {
    return key.size() == 6 + crypto_generichash_BYTES ? key.substr(6) : std::string_view();
}

void put_be64(unsigned char *out, std::uint64_t v) {
    for (int i = 7; i >= 0; --i) {
        out[i] = static_cast<unsigned char>(v & 0xff);
        v >>= 8;
    }
}
std::uint64_t get_be64(const unsigned char *in) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | in[i];
    return v;
}

namespace {

// ---- record codec ----------------------------------------------------------------------------

class Writer {
public:
    explicit Writer(std::size_t reserve) { buf_.reserve(reserve); }
    void u8(std::uint8_t v) { buf_.push_back(static_cast<char>(v)); }
    // Little-endian, appended at once (not a byte at a time: every record write passes here).
    void i64(std::int64_t v) { le(static_cast<std::uint64_t>(v), 8); }
    void str(std::string_view s) {
        if (s.size() > 0xffffffffu) throw StoreError(Code::StorageError, "string too long to store");
        le(s.size(), 4);
        buf_.append(s);
    }
    // The record, moved out (the writer is done with it): no copy of its bytes.
    std::string take() { return std::move(buf_); }

private:
    void le(std::uint64_t u, std::size_t n) {
        char b[8];
        for (std::size_t i = 0; i < n; ++i, u >>= 8) b[i] = static_cast<char>(u & 0xff);
        buf_.append(b, n);
    }
    std::string buf_;
};

class Reader {
public:
    // Formats 1 .. newest are read (a record is rewritten in the newest when it is next written).
    Reader(std::string_view data, const char *what, std::uint8_t newest = kRecordFormat) : p_(data), what_(what) {
        version_ = u8();
        if (version_ < 1 || version_ > newest) corrupt(std::string(what_) + ": unknown format version");
    }
    std::uint8_t version() const { return version_; }
    std::uint8_t u8() {
        need(1);
        auto v = static_cast<std::uint8_t>(p_[0]);
        p_.remove_prefix(1);
        return v;
    }
    std::int64_t i64() {
        need(8);
        std::uint64_t u = 0;
        for (int i = 7; i >= 0; --i) u = (u << 8) | static_cast<unsigned char>(p_[i]);
        p_.remove_prefix(8);
        return static_cast<std::int64_t>(u);
    }
    std::string str() { return std::string(view()); }
    // The next string without a copy: valid while `data` is.
    std::string_view view() {
        need(4);
        std::uint32_t n = 0;
        for (int i = 3; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(p_[i]);
        p_.remove_prefix(4);
        need(n);
        std::string_view s = p_.substr(0, n);
        p_.remove_prefix(n);
        return s;
    }
    bool boolean() {
        auto v = u8();
        if (v > 1) corrupt(std::string(what_) + ": bad boolean");
        return v == 1;
    }
    template <class E>
    E enumeration(std::uint8_t lo, std::uint8_t hi) {
        auto v = u8();
        if (v < lo || v > hi) corrupt(std::string(what_) + ": bad enumeration value");
        return static_cast<E>(v);
    }
    void done() const {
        if (!p_.empty()) corrupt(std::string(what_) + ": trailing bytes");
    }

private:
    void need(std::size_t n) const {
        if (p_.size() < n) corrupt(std::string(what_) + ": truncated");
    }
    std::string_view p_;
    const char *what_;
    std::uint8_t version_ = 0;
};

}  // namespace

std::string encode_user(const User &u) {
    Writer w(1 + 4 * 4 + 8 * 2 + 1 + u.id.size() + u.email.size() + u.group_id.size() +
             u.password_hash.size() + 4 + u.lang.size() + 4 + u.api_version.size());
    w.u8(kUserFormat);
    w.str(u.id);
    w.str(u.email);
    w.str(u.group_id);
    w.i64(u.created_at);
    w.i64(u.updated_at);
    w.u8(u.suspended ? 1 : 0);
    w.str(u.password_hash);
    if (u.roles.size() > 255) throw StoreError(Code::StorageError, "too many roles to store");
    w.u8(static_cast<std::uint8_t>(u.roles.size()));
    for (const auto &role : u.roles) w.str(role);
    w.u8(u.pending ? 1 : 0);
    w.str(u.lang);
    w.str(u.api_version);
    return w.take();
}

User decode_user(std::string_view data) {
    Reader r(data, "user", kUserFormat);
    User u;
    u.id = r.str();
    u.email = r.str();
    u.group_id = r.str();
    u.created_at = r.i64();
    u.updated_at = r.i64();
    u.suspended = r.boolean();
    u.password_hash = r.str();
    if (r.version() >= 2) {  // format 2 added roles
        const std::uint8_t n = r.u8();
        for (std::uint8_t i = 0; i < n; ++i) {
            u.roles.push_back(r.str());
            if (i > 0 && !(u.roles[i - 1] < u.roles[i])) corrupt("user: roles not sorted");
        }
    }
    if (r.version() >= 3) u.pending = r.boolean();  // format 3 added the pending flag
    if (r.version() >= 4) u.lang = r.str();         // format 4 added the last language
    if (r.version() >= 5) u.api_version = r.str();  // format 5 added the pinned API version
    r.done();
    return u;
}

std::string encode_token(const TokenRecord &t) {
    std::size_t roles = 1;
    for (const auto &role : t.roles) roles += 4 + role.size();
    Writer w(roles + 1 + 4 * 9 + 3 + 8 * 2 + t.group_id.size() + t.email.size() + t.password_hash.size() +
             t.code_hash.size() + t.user_id.size() + t.old_email.size() + t.new_email.size() + t.pair_hash.size() +
             t.session_id.size());
    w.u8(kTokenFormat);
    w.str(t.group_id);
    w.str(t.email);
    w.u8(static_cast<std::uint8_t>(t.purpose));
    w.i64(t.created_at);
    w.i64(t.expires_at);
    w.str(t.password_hash);
    w.str(t.code_hash);
    w.u8(t.code_failures);
    w.str(t.user_id);
    w.str(t.old_email);
    w.str(t.new_email);
    w.str(t.pair_hash);
    w.u8(t.pair_spent ? 1 : 0);
    w.str(t.session_id);
    if (t.roles.size() > 255) throw StoreError(Code::StorageError, "too many roles to store");
    w.u8(static_cast<std::uint8_t>(t.roles.size()));
    for (const auto &role : t.roles) w.str(role);
    return w.take();
}

TokenRecord decode_token(std::string_view key, std::string_view data) {
    Reader r(data, "token", kTokenFormat);
    TokenRecord t;
    t.hash = std::string(key);
    t.group_id = r.str();
    t.email = r.str();
    t.purpose = r.enumeration<Purpose>(1, 9);  // Purpose::SignIn .. Purpose::MfaLocked
    t.created_at = r.i64();
    t.expires_at = r.i64();
    t.password_hash = r.str();
    if (r.version() >= 2) {  // format 2 added the short code
        t.code_hash = r.str();
        t.code_failures = r.u8();
    }
    if (r.version() >= 3) {  // format 3 added an email change's fields
        t.user_id = r.str();
        t.old_email = r.str();
        t.new_email = r.str();
        t.pair_hash = r.str();
        t.pair_spent = r.boolean();
        t.session_id = r.str();
    }
    if (r.version() >= 4) {  // format 4 added a Registration's roles
        const std::uint8_t n = r.u8();
        for (std::uint8_t i = 0; i < n; ++i) {
            t.roles.push_back(r.str());
            if (i > 0 && !(t.roles[i - 1] < t.roles[i])) corrupt("token: roles not sorted");
        }
    }
    r.done();
    return t;
}

std::string encode_session(const SessionRecord &s) {
    Writer w(1 + 4 * 6 + 3 + 8 * 3 + s.id.size() + s.user_id.size() + s.client.size() +
             s.user_agent.size() + s.browser.size() + s.browser_sealed.size());
    w.u8(kSessionFormat);
    w.str(s.id);
    w.str(s.user_id);
    w.u8(static_cast<std::uint8_t>(s.kind));
    w.u8(static_cast<std::uint8_t>(s.method));
    w.i64(s.created_at);
    w.i64(s.last_seen_at);
    w.i64(s.expires_at);
    w.str(s.client);
    w.str(s.user_agent);
    w.u8(s.mfa ? 1 : 0);
    w.str(s.browser);
    w.str(s.browser_sealed);
    return w.take();
}

SessionRecord decode_session(std::string_view key, std::string_view data) {
    Reader r(data, "session", kSessionFormat);
    SessionRecord s;
    s.hash = std::string(key);
    s.id = r.str();
    s.user_id = r.str();
    s.kind = r.enumeration<SessionKind>(1, 2);
    s.method = r.enumeration<SignInMethod>(1, 4);
    s.created_at = r.i64();
    s.last_seen_at = r.i64();
    s.expires_at = r.i64();
    s.client = r.str();
    s.user_agent = r.str();
    if (r.version() >= 2) s.mfa = r.boolean();  // format 2 added the second factor
    if (r.version() >= 3) {  // format 3 added the browser
        s.browser = r.str();
        s.browser_sealed = r.str();
        // record_key of the browser cookie, or (an earlier build's) its digest alone
        if (!s.browser.empty() && s.browser.size() != 38 && s.browser.size() != 32) corrupt("session: bad browser key");
    }
    r.done();
    return s;
}

// At most this many recovery codes and remembered devices are kept per user (a bound on the
// record, whatever a caller does).
constexpr std::size_t kMaxMfaList = 64;

std::string encode_mfa(const MfaRecord &m) {
    if (m.recovery_hashes.size() > kMaxMfaList || m.devices.size() > kMaxMfaList) {
        throw StoreError(Code::StorageError, "too many recovery codes or devices to store");
    }
    Writer w(1 + 4 * 2 + 8 * 5 + 2 + m.totp_sealed.size() + m.pending_sealed.size() +
             m.recovery_hashes.size() * 36 + m.devices.size() * 44);
    w.u8(kMfaFormat);
    w.str(m.totp_sealed);
    w.str(m.pending_sealed);
    w.i64(m.pending_expires_at);
    w.i64(m.last_step);
    w.u8(static_cast<std::uint8_t>(m.recovery_hashes.size()));
    for (const auto &h : m.recovery_hashes) w.str(h);
    w.u8(static_cast<std::uint8_t>(m.devices.size()));
    for (const auto &d : m.devices) {
        w.str(d.hash);
        w.i64(d.expires_at);
    }
    w.i64(m.updated_at);
    w.i64(static_cast<std::int64_t>(m.failures));
    w.i64(m.wait_until);
    return w.take();
}

MfaRecord decode_mfa(std::string_view key, std::string_view data) {
    Reader r(data, "mfa", kMfaFormat);
    MfaRecord m;
    m.user_id = std::string(key);
    m.totp_sealed = r.str();
    m.pending_sealed = r.str();
    m.pending_expires_at = r.i64();
    m.last_step = r.i64();
    const std::size_t codes = r.u8();
    if (codes > kMaxMfaList) corrupt("mfa: too many recovery codes");
    for (std::size_t i = 0; i < codes; i++) m.recovery_hashes.push_back(r.str());
    const std::size_t devices = r.u8();
    if (devices > kMaxMfaList) corrupt("mfa: too many devices");
    for (std::size_t i = 0; i < devices; i++) {
        MfaRecord::Device d;
        d.hash = r.str();
        d.expires_at = r.i64();
        m.devices.push_back(std::move(d));
    }
    m.updated_at = r.i64();
    if (r.version() >= 2) {  // format 2 added the wrong codes in a row
        const std::int64_t failures = r.i64();
        if (failures < 0 || failures > 0xffffffffLL) corrupt("mfa: failures out of range");
        m.failures = static_cast<std::uint32_t>(failures);
        m.wait_until = r.i64();
    }
    r.done();
    return m;
}

std::string encode_mfa_pending(const MfaPendingRecord &p) {
    Writer w(1 + 4 * 3 + 2 + 8 * 2 + 2 + p.user_id.size() + p.client.size() + p.user_agent.size());
    w.u8(kPendingFormat);
    w.str(p.user_id);
    w.u8(static_cast<std::uint8_t>(p.kind));
    w.u8(static_cast<std::uint8_t>(p.method));
    w.str(p.client);
    w.str(p.user_agent);
    w.i64(p.created_at);
    w.i64(p.expires_at);
    w.u8(p.failures);
    w.u8(p.add ? 1 : 0);
    return w.take();
}

MfaPendingRecord decode_mfa_pending(std::string_view key, std::string_view data) {
    Reader r(data, "mfa pending", kPendingFormat);
    MfaPendingRecord p;
    p.hash = std::string(key);
    p.user_id = r.str();
    p.kind = r.enumeration<SessionKind>(1, 2);
    p.method = r.enumeration<SignInMethod>(1, 4);
    p.client = r.str();
    p.user_agent = r.str();
    p.created_at = r.i64();
    p.expires_at = r.i64();
    p.failures = r.u8();
    if (r.version() >= 2) p.add = r.boolean();
    r.done();
    return p;
}

std::string encode_passkey(const PasskeyRecord &p) {
    Writer w(1 + 4 * 4 + 8 * 4 + 2 + p.credential_id.size() + p.user_id.size() + p.name.size() + p.public_key.size());
    w.u8(kRecordFormat);
    w.str(p.credential_id);
    w.str(p.user_id);
    w.str(p.name);
    w.str(p.public_key);
    w.i64(p.alg);
    w.i64(p.sign_count);
    w.u8(p.user_verified ? 1 : 0);
    w.u8(p.backup_eligible ? 1 : 0);
    w.i64(p.created_at);
    w.i64(p.last_used_at);
    return w.take();
}

PasskeyRecord decode_passkey(std::string_view key, std::string_view data) {
    Reader r(data, "passkey");
    PasskeyRecord p;
    p.key = std::string(key);
    p.credential_id = r.str();
    p.user_id = r.str();
    p.name = r.str();
    p.public_key = r.str();
    p.alg = r.i64();
    const std::int64_t count = r.i64();
    if (count < 0 || count > 0xffffffffLL) corrupt("passkey: bad counter");
    p.sign_count = static_cast<std::uint32_t>(count);
    p.user_verified = r.boolean();
    p.backup_eligible = r.boolean();
    p.created_at = r.i64();
    p.last_used_at = r.i64();
    r.done();
    return p;
}

std::string encode_provider_link(const ProviderLinkRecord &l) {
    Writer w(1 + 4 * 5 + 8 * 2 + l.user_id.size() + l.provider.size() + l.issuer.size() + l.subject.size() +
             l.email.size());
    w.u8(kRecordFormat);
    w.str(l.user_id);
    w.str(l.provider);
    w.str(l.issuer);
    w.str(l.subject);
    w.str(l.email);
    w.i64(l.created_at);
    w.i64(l.last_used_at);
    return w.take();
}

ProviderLinkRecord decode_provider_link(std::string_view key, std::string_view data) {
    Reader r(data, "provider link");
    ProviderLinkRecord l;
    l.key = std::string(key);
    l.user_id = r.str();
    l.provider = r.str();
    l.issuer = r.str();
    l.subject = r.str();
    l.email = r.str();
    l.created_at = r.i64();
    l.last_used_at = r.i64();
    r.done();
    return l;
}

namespace {

// A list of short strings (scopes, amr values): a count byte, then each string.
void put_list(Writer &w, const std::vector<std::string> &list, const char *what) {
    if (list.size() > 255) throw StoreError(Code::StorageError, std::string("too many ") + what + " to store");
    w.u8(static_cast<std::uint8_t>(list.size()));
    for (const auto &s : list) w.str(s);
}
std::vector<std::string> get_list(Reader &r) {
    std::vector<std::string> out;
    const std::uint8_t n = r.u8();
    out.reserve(n);
    for (std::uint8_t i = 0; i < n; ++i) out.push_back(r.str());
    return out;
}

}  // namespace

std::string encode_oidc_code(const op::CodeRecord &c) {
    Writer w(128 + c.client_id.size() + c.redirect_uri.size() + c.code_challenge.size() + c.user_id.size() +
             c.nonce.size() + c.family_id.size() + c.access_key.size());
    w.u8(kOidcFormat);
    w.str(c.client_id);
    w.str(c.redirect_uri);
    w.str(c.code_challenge);
    w.str(c.user_id);
    w.i64(c.auth_time);
    put_list(w, c.amr, "amr values");
    w.u8(c.mfa ? 1 : 0);
    w.str(c.nonce);
    put_list(w, c.scopes, "scopes");
    w.i64(c.created_at);
    w.i64(c.expires_at);
    w.u8(c.spent ? 1 : 0);
    w.str(c.family_id);
    w.str(c.access_key);
    return w.take();
}

op::CodeRecord decode_oidc_code(std::string_view key, std::string_view data) {
    Reader r(data, "provider code", kOidcFormat);
    op::CodeRecord c;
    c.key = std::string(key);
    c.client_id = r.str();
    c.redirect_uri = r.str();
    c.code_challenge = r.str();
    c.user_id = r.str();
    c.auth_time = r.i64();
    c.amr = get_list(r);
    c.mfa = r.boolean();
    c.nonce = r.str();
    c.scopes = get_list(r);
    c.created_at = r.i64();
    c.expires_at = r.i64();
    c.spent = r.boolean();
    c.family_id = r.str();
    c.access_key = r.str();
    r.done();
    return c;
}

op::CodeRecord spent_code(const op::CodeRecord &c) {
    op::CodeRecord s;
    s.key = c.key;
    s.client_id = c.client_id;
    s.user_id = c.user_id;
    s.created_at = c.created_at;
    s.expires_at = c.expires_at;
    s.spent = true;
    s.family_id = c.family_id;
    s.access_key = c.access_key;
    return s;
}

std::string encode_oidc_access(const op::AccessTokenRecord &a) {
    Writer w(64 + a.client_id.size() + a.user_id.size() + a.family_id.size() + 16 * a.scopes.size());
    w.u8(kOidcFormat);
    w.str(a.client_id);
    w.str(a.user_id);
    put_list(w, a.scopes, "scopes");
    w.str(a.family_id);
    w.i64(a.created_at);
    w.i64(a.expires_at);
    return w.take();
}

op::AccessTokenRecord decode_oidc_access(std::string_view key, std::string_view data) {
    Reader r(data, "provider access token", kOidcFormat);
    op::AccessTokenRecord a;
    a.key = std::string(key);
    a.client_id = r.str();
    a.user_id = r.str();
    a.scopes = get_list(r);
    a.family_id = r.str();
    a.created_at = r.i64();
    a.expires_at = r.i64();
    r.done();
    return a;
}

std::string encode_oidc_refresh(const op::RefreshTokenRecord &t) {
    Writer w(32 + t.family_id.size());
    w.u8(kOidcFormat);
    w.str(t.family_id);
    w.i64(static_cast<std::int64_t>(t.generation));
    w.i64(t.expires_at);
    return w.take();
}

op::RefreshTokenRecord decode_oidc_refresh(std::string_view key, std::string_view data) {
    Reader r(data, "provider refresh token", kOidcFormat);
    op::RefreshTokenRecord t;
    t.key = std::string(key);
    t.family_id = r.str();
    const std::int64_t generation = r.i64();
    if (generation < 0 || generation > 0xffffffffLL) corrupt("provider refresh token: bad generation");
    t.generation = static_cast<std::uint32_t>(generation);
    t.expires_at = r.i64();
    r.done();
    return t;
}

std::string encode_oidc_family(const op::RefreshFamily &f) {
    Writer w(96 + f.client_id.size() + f.user_id.size() + 16 * (f.scopes.size() + f.amr.size()));
    w.u8(kOidcFormat);
    w.str(f.client_id);
    w.str(f.user_id);
    put_list(w, f.scopes, "scopes");
    w.i64(f.auth_time);
    put_list(w, f.amr, "amr values");
    w.u8(f.mfa ? 1 : 0);
    w.i64(static_cast<std::int64_t>(f.generation));
    w.i64(f.created_at);
    w.i64(f.expires_at);
    w.i64(f.last_used_at);
    w.u8(f.revoked ? 1 : 0);
    return w.take();
}

op::RefreshFamily decode_oidc_family(std::string_view key, std::string_view data) {
    Reader r(data, "provider refresh family", kOidcFormat);
    op::RefreshFamily f;
    f.id = std::string(key);
    f.client_id = r.str();
    f.user_id = r.str();
    f.scopes = get_list(r);
    f.auth_time = r.i64();
    f.amr = get_list(r);
    f.mfa = r.boolean();
    const std::int64_t generation = r.i64();
    if (generation < 0 || generation > 0xffffffffLL) corrupt("provider refresh family: bad generation");
    f.generation = static_cast<std::uint32_t>(generation);
    f.created_at = r.i64();
    f.expires_at = r.i64();
    f.last_used_at = r.i64();
    f.revoked = r.boolean();
    r.done();
    return f;
}

std::string oidc_consent_key(std::string_view user_id, std::string_view client_id) {
    std::string k;
    k.reserve(user_id.size() + 1 + client_id.size());
    k.append(user_id);
    k.push_back('\0');
    k.append(client_id);
    return k;
}

std::string encode_oidc_consent(const op::ConsentRecord &c) {
    Writer w(32 + c.user_id.size() + c.client_id.size() + 16 * c.scopes.size());
    w.u8(kOidcFormat);
    w.str(c.user_id);
    w.str(c.client_id);
    put_list(w, c.scopes, "scopes");
    w.i64(c.granted_at);
    return w.take();
}

op::ConsentRecord decode_oidc_consent(std::string_view key, std::string_view data) {
    Reader r(data, "provider consent", kOidcFormat);
    op::ConsentRecord c;
    c.user_id = r.str();
    c.client_id = r.str();
    c.scopes = get_list(r);
    c.granted_at = r.i64();
    r.done();
    if (key != oidc_consent_key(c.user_id, c.client_id)) corrupt("provider consent: kept under another key");
    return c;
}

std::string encode_outbox(const OutboxRecord &o) {
    Writer w(1 + 8 * 3 + 4 * 4 + o.token_hash.size() + o.client.size() + o.sealed.size() + o.last_error.size());
    w.u8(kOutboxFormat);
    w.i64(o.created_at);
    w.i64(static_cast<std::int64_t>(o.attempts));
    w.str(o.token_hash);
    w.str(o.client);
    w.str(o.sealed);
    w.i64(o.next_try_at);
    w.str(o.last_error);
    return w.take();
}

OutboxRecord decode_outbox(std::string_view key, std::string_view data) {
    if (key.size() != 16) corrupt("outbox: bad key");
    Reader r(data, "outbox", kOutboxFormat);
    OutboxRecord o;
    o.key = std::string(key);
    o.due_at = static_cast<Millis>(get_be64(reinterpret_cast<const unsigned char *>(key.data())));
    o.created_at = r.i64();
    const std::int64_t attempts = r.i64();
    if (attempts < 0 || attempts > 0xffffffffLL) corrupt("outbox: bad attempt count");
    o.attempts = static_cast<std::uint32_t>(attempts);
    o.token_hash = r.str();
    o.client = r.str();
    o.sealed = r.str();
    if (r.version() >= 2) {  // format 2 added the next try and the last failure
        o.next_try_at = r.i64();
        o.last_error = r.str();
    }
    r.done();
    return o;
}

std::string encode_event(const EventRecord &e) {
    Writer w(1 + 8 * 3 + 4 * 5 + e.id.size() + e.type.size() + e.user_id.size() + e.body.size() + e.last_error.size());
    w.u8(kEventFormat);
    w.str(e.id);
    w.str(e.type);
    w.str(e.user_id);
    w.str(e.body);
    w.i64(e.created_at);
    w.i64(e.due_at);
    w.i64(static_cast<std::int64_t>(e.attempts));
    w.str(e.last_error);
    return w.take();
}

EventRecord decode_event(std::string_view key, std::string_view data) {
    if (key.size() != 8) corrupt("event: bad key");
    Reader r(data, "event", kEventFormat);
    EventRecord e;
    e.key = std::string(key);
    e.id = r.str();
    e.type = r.str();
    e.user_id = r.str();
    e.body = r.str();
    e.created_at = r.i64();
    e.due_at = r.i64();
    const std::int64_t attempts = r.i64();
    if (attempts < 0 || attempts > 0xffffffffLL) corrupt("event: bad attempt count");
    e.attempts = static_cast<std::uint32_t>(attempts);
    e.last_error = r.str();
    r.done();
    return e;
}

EventHead decode_event_head(std::string_view key, std::string_view data) {
    if (key.size() != 8) corrupt("event: bad key");
    Reader r(data, "event", kEventFormat);
    EventHead h;
    h.key = key;
    (void)r.view();  // id
    (void)r.view();  // type
    h.user_id = r.view();
    (void)r.view();  // body
    (void)r.i64();   // created_at
    h.due_at = r.i64();
    const std::int64_t attempts = r.i64();
    if (attempts < 0 || attempts > 0xffffffffLL) corrupt("event: bad attempt count");
    h.attempts = static_cast<std::uint32_t>(attempts);
    (void)r.view();  // last_error
    r.done();
    return h;
}

std::string_view event_id_of(std::string_view data) {
    Reader r(data, "event", kEventFormat);
    return r.view();
}

// ---- audit JSON ------------------------------------------------------------------------------

namespace {

struct JsonDeleter {
    void operator()(cJSON *j) const { cJSON_Delete(j); }
};
using Json = std::unique_ptr<cJSON, JsonDeleter>;

}  // namespace

// Written with the engine's JSON writer (two entries per exchange, inside the write lock, where
// cJSON's tree and printer would cost many times more), read with cJSON.
std::string encode_audit(const AuditEntry &e) { return json::audit_entry(e); }

AuditEntry decode_audit(std::string_view key, std::string_view data) {
    if (key.size() != 16) corrupt("audit: bad key");
    AuditEntry e;
    // The key holds the exact millisecond; the JSON "at" is the same instant for a person to read.
    e.at = static_cast<Millis>(get_be64(reinterpret_cast<const unsigned char *>(key.data())));
    Json obj(cJSON_ParseWithLength(data.data(), data.size()));
    if (!obj || !cJSON_IsObject(obj.get())) corrupt("audit: not a JSON object");
    auto get = [&](const char *name) -> std::string {
        const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj.get(), name);
        if (item == nullptr) return {};
        if (!cJSON_IsString(item) || item->valuestring == nullptr) corrupt("audit: field not a string");
        return item->valuestring;
    };
    e.kind = get("kind");
    e.email = get("email");
    e.client = get("client");
    e.user_id = get("user_id");
    e.detail = get("detail");
    return e;
}

}  // namespace signin::records
