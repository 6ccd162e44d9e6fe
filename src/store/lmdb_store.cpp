// The LMDB backend of signin::Store: one file under a directory, opened by each process (each
// nginx worker after the fork), durable when a commit returns, holding digests of tokens and
// session secrets, never the secrets themselves.
//
// Layout: one environment (a directory), named databases opened once at open_lmdb_store():
//   meta           "schema_version" -> decimal text
//   users          user id -> user record
//   user_email     group_id '\0' email -> user id (users without an address have none)
//   tokens         token key (signin::record_key: 6 bytes of creation time + the secret's 32-byte
//                  digest; the digest alone for records of earlier builds) -> token record
//   addr_tokens    (DUPSORT) group_id '\0' email -> created_at (8 bytes BE) + token key; a deleted
//                  token's entry stays until the address's next token or the purge (del_token)
//   sessions       session key (as a token's) -> session record
//   session_ids    session id -> session key
//   user_sessions  (DUPSORT) user id -> session id
//   browser_sessions (DUPSORT) browser cookie's record_key (38 bytes; 32 from earlier builds) -> session id (several accounts in one browser)
//   audit          at (8 bytes BE ms) + 8 random bytes -> JSON text (readable with `mdb_dump -p`)
//   outbox         due_at (8 bytes BE ms) + 8 random bytes -> outbox record (the delivery sealed)
//   events         sequence number (8 bytes BE; the last one's plus 1) -> event record
//   mfa            user id -> second-factor record (TOTP secret sealed, recovery digests, devices)
//   mfa_pending    mfa_token hash (32 bytes) -> a sign-in waiting for its second factor
//   passkeys       credential id digest (32 bytes) -> passkey record (WebAuthn)
//   user_passkeys  (DUPSORT) user id -> credential id digest
//   spent_challenges WebAuthn challenge or OpenID Connect state digest (32 bytes) -> when it expires
//                  (8 bytes BE ms)
//   provider_links (issuer, subject) digest (32 bytes) -> provider link record (OpenID Connect)
//   user_provider_links (DUPSORT) user id -> (issuer, subject) digest
//   counters       a limit's key -> expires_at (8 bytes BE ms) + its state (StoreAttemptLimiter)
//   user_search    user_index_keys (store.hpp) -> "": accounts by address, domain, role and state;
//                  filled from the users at the open that first finds it missing
//   oidc_codes     the OpenID provider's authorization codes: record_key(code) -> code record (a
//                  spent code: only what revoking its grant needs)
//   oidc_access    record_key(access token) -> access token record
//   oidc_refresh   record_key(refresh token) -> refresh token record (its family and generation)
//   oidc_families  family id -> refresh family record
//   oidc_family_tokens (DUPSORT) family id -> 'a' or 'r' + the key of an access or refresh token
//                  the family gave: what ending the family deletes
//   user_oidc_families (DUPSORT) user id -> family id
//   oidc_consents  user id '\0' client id -> consent record (a user's consents are a key range)
//
// Records (users, tokens, sessions) use a compact binary format: one format-version byte, then the
// fields in declaration order; integers are fixed-width little-endian (u8 for enums and bools, i64
// for times), strings are a u32 little-endian length followed by the bytes. The key of a record is
// not repeated inside it (a token's or session's hash is the key). Decoding checks every length and
// throws StoreError(StorageError) on a corrupt record rather than reading past its end.
//
// Transactions are move-free RAII objects holding an MDB_txn*: destroying one that was not committed
// aborts it; values are copied out before a call returns. The environment is opened with MDB_NOTLS
// (read transactions run on nginx's event-loop thread, write transactions on thread-pool threads)
// and with full durability: commit() returns after the data is on disk. It is also opened with
// MDB_NOMETASYNC, and every commit that is not nested in a batch is followed by mdb_env_sync
// (durable() below) before it returns: LMDB's commit fdatasyncs the data pages and writes the
// meta page that names them, both inside the write lock, and by default waits for that meta page
// too (an O_DSYNC write); here that second wait happens after the lock is released, so the other
// worker's batch runs meanwhile (under load, the lock's time per batch bounds how many sign-ins a
// second the store takes).
// When commit() returns, the meta page of this transaction (or of a later one, which holds its
// data) is on disk: nothing acknowledged is lost. LMDB keeps the file consistent in this mode
// (a crash before the sync may only undo the last transaction, which nobody was told about).
#include <errno.h>
#include <lmdb.h>
#include <sodium.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends.hpp"
#include "principal_memo.hpp"
#include "records.hpp"
#include "signin/store.hpp"

namespace signin {
using namespace records;
namespace {

constexpr std::string_view kSchemaKey = "schema_version";
constexpr std::string_view kUserSearchKey = "user_search";

// ---- errors ----------------------------------------------------------------------------------

[[noreturn]] void throw_rc(MDB_env *env, int rc, std::string_view context) {
    if (rc == MDB_MAP_FULL) {
        MDB_envinfo info{};
        std::size_t size = 0;
        if (env != nullptr && mdb_env_info(env, &info) == 0) size = info.me_mapsize;
        throw StoreError(Code::StorageFull, "the store is full (map size " + std::to_string(size) +
                                                " bytes): raise signin_store size=");
    }
    throw StoreError(Code::StorageError, std::string(context) + ": " + mdb_strerror(rc));
}

inline void check(MDB_env *env, int rc, std::string_view context) {
    if (rc != 0) throw_rc(env, rc, context);
}

// After a top-level commit, outside the write lock: the commit's meta page reaches the disk.
void durable(MDB_env *env) { check(env, mdb_env_sync(env, 1), "sync the store"); }

// ---- MDB_val helpers -------------------------------------------------------------------------

inline MDB_val val(std::string_view s) {
    return MDB_val{s.size(), const_cast<char *>(s.data())};  // LMDB never writes through a key
}
inline std::string_view view(const MDB_val &v) {
    return std::string_view(static_cast<const char *>(v.mv_data), v.mv_size);
}

// created_at (BE, so dupsort order is oldest first) + token hash: an addr_tokens value.
std::string addr_token_value(const TokenRecord &t) {
    std::string v(8, '\0');
    put_be64(reinterpret_cast<unsigned char *>(v.data()), static_cast<std::uint64_t>(t.created_at));
    v.append(t.hash);
    return v;
}

// ---- environment -----------------------------------------------------------------------------

struct Dbis {
    MDB_dbi meta = 0, users = 0, user_email = 0, tokens = 0, addr_tokens = 0, sessions = 0,
            session_ids = 0, user_sessions = 0, browser_sessions = 0, audit = 0, outbox = 0, mfa = 0, mfa_pending = 0,
            passkeys = 0, user_passkeys = 0, spent_challenges = 0, provider_links = 0,
            user_provider_links = 0, counters = 0, events = 0, user_search = 0, oidc_codes = 0, oidc_access = 0,
            oidc_refresh = 0, oidc_families = 0, oidc_family_tokens = 0, user_oidc_families = 0, oidc_consents = 0;
};

struct Env {
    MDB_env *env = nullptr;
    Dbis dbi;
    // Where the purge's scan of addr_tokens stopped (it goes on from there next time). Used only
    // in write transactions, which LMDB runs one at a time.
    mutable std::string addr_scan_from;
    // The most audit entries kept (LmdbOptions::audit_max): past it each new entry takes the
    // place of the oldest.
    std::size_t audit_max = 0;
    // Each reading thread's principals of recent sessions (ReadTxn::principal).
    mutable ThreadMemos memos;
};

// Begins a transaction; a full reader table is first cleared of dead processes' slots, once.
MDB_txn *begin_txn(MDB_env *env, unsigned flags, MDB_txn *parent = nullptr) {
    MDB_txn *txn = nullptr;
    int rc = mdb_txn_begin(env, parent, flags, &txn);
    if (rc == MDB_READERS_FULL) {
        int dead = 0;
        mdb_reader_check(env, &dead);
        rc = mdb_txn_begin(env, parent, flags, &txn);
    }
    check(env, rc, flags & MDB_RDONLY ? "begin read transaction" : "begin write transaction");
    return txn;
}

class Cursor {
public:
    Cursor(MDB_env *env, MDB_txn *txn, MDB_dbi dbi) {
        check(env, mdb_cursor_open(txn, dbi, &c_), "open cursor");
    }
    ~Cursor() { mdb_cursor_close(c_); }
    Cursor(const Cursor &) = delete;
    Cursor &operator=(const Cursor &) = delete;
    MDB_cursor *get() const { return c_; }

private:
    MDB_cursor *c_ = nullptr;
};

// The read operations, shared by both transaction kinds.
template <class Iface>
class TxnBase : public Iface {
public:
    TxnBase(const Env &env, MDB_txn *txn) : env_(env), txn_(txn) {}
    TxnBase(const TxnBase &) = delete;
    TxnBase &operator=(const TxnBase &) = delete;

    std::optional<User> user_by_id(std::string_view id) override {
        auto v = get(env_.dbi.users, id, "read user");
        if (!v) return std::nullopt;
        return decode_user(*v);
    }

    std::optional<User> user_by_email(std::string_view group_id, std::string_view email) override {
        auto id = get(env_.dbi.user_email, addr_key(group_id, email), "read user by email");
        if (!id) return std::nullopt;
        return user_by_id(*id);
    }

    std::optional<TokenRecord> token(std::string_view key) override {
        auto r = keyed(env_.dbi.tokens, key, "read token");
        if (!r) return std::nullopt;
        return decode_token(r->key, r->value);
    }

    std::vector<TokenRecord> tokens_for(std::string_view group_id, std::string_view email) override {
        std::vector<TokenRecord> out;
        each_dup(env_.dbi.addr_tokens, addr_key(group_id, email), "read tokens of an address", [&](std::string_view d) {
            if (d.size() <= 8) corrupt("addr_tokens: bad value");
            if (auto t = token(d.substr(8))) out.push_back(std::move(*t));
        });
        return out;
    }

    std::optional<SessionRecord> session(std::string_view key) override {
        auto r = keyed(env_.dbi.sessions, key, "read session");
        if (!r) return std::nullopt;
        return decode_session(r->key, r->value);
    }

    // In place: the two records are compared, as slices of the map, with the bytes this
    // thread's memo decoded before, and decoded only when they differ.
    std::shared_ptr<const Principal> principal(std::string_view key) override {
        auto r = keyed(env_.dbi.sessions, key, "read session");
        if (!r) return nullptr;
        PrincipalMemo &memo = env_.memos.mine();
        if (const auto *hit = memo.find(key, r->value)) {
            auto u = get(env_.dbi.users, (*hit)->session.user_id, "read user");
            if (u && memo.user_matches(key, *u)) return *hit;
        }
        SessionRecord s = decode_session(r->key, r->value);
        auto u = get(env_.dbi.users, s.user_id, "read user");
        if (!u) return nullptr;
        auto p = std::make_shared<const Principal>(Principal{decode_user(*u), std::move(s)});
        memo.put(key, r->value, *u, p);
        return p;
    }

    std::optional<SessionRecord> session_by_id(std::string_view id) override {
        auto hash = get(env_.dbi.session_ids, id, "read session by id");
        if (!hash) return std::nullopt;
        return session(*hash);
    }

    // The sessions a DUPSORT index (key -> session ids) names.
    std::vector<SessionRecord> indexed_sessions(MDB_dbi dbi, std::string_view key, const char *context) {
        std::vector<SessionRecord> out;
        each_dup(dbi, key, context, [&](std::string_view id) {
            if (auto s = session_by_id(id)) out.push_back(std::move(*s));
        });
        return out;
    }

    std::vector<SessionRecord> sessions_of(std::string_view user_id) override {
        return indexed_sessions(env_.dbi.user_sessions, user_id, "read sessions of a user");
    }

    // Under the browser's key and, for a cookie an earlier build made, under its digest alone
    // (legacy_key), in the order of their ids.
    std::vector<SessionRecord> sessions_of_browser(std::string_view browser) override {
        auto out = indexed_sessions(env_.dbi.browser_sessions, browser, "read sessions of a browser");
        if (const std::string_view legacy = legacy_key(browser); !legacy.empty()) {
            auto older = indexed_sessions(env_.dbi.browser_sessions, legacy, "read sessions of a browser");
            if (!older.empty()) {
                for (auto &s : older) out.push_back(std::move(s));
                std::sort(out.begin(), out.end(), [](const SessionRecord &a, const SessionRecord &b) { return a.id < b.id; });
            }
        }
        return out;
    }

    std::vector<AuditEntry> audit(std::size_t limit) override {
        std::vector<AuditEntry> out;
        if (limit == 0) return out;
        Cursor c(env_.env, live(), env_.dbi.audit);
        MDB_val k{}, d{};
        for (int rc = mdb_cursor_get(c.get(), &k, &d, MDB_LAST);
             rc != MDB_NOTFOUND && out.size() < limit;
             rc = mdb_cursor_get(c.get(), &k, &d, MDB_PREV)) {
            check(env_.env, rc, "read audit");
            out.push_back(decode_audit(view(k), view(d)));
        }
        return out;
    }

    std::vector<User> users(std::string_view after_id, std::size_t limit) override {
        std::vector<User> out;
        if (limit == 0) return out;
        Cursor c(env_.env, live(), env_.dbi.users);
        MDB_val k{}, d{};
        int rc;
        if (after_id.empty()) {
            rc = mdb_cursor_get(c.get(), &k, &d, MDB_FIRST);
        } else {
            k = val(after_id);
            rc = mdb_cursor_get(c.get(), &k, &d, MDB_SET_RANGE);
            if (rc == 0 && view(k) == after_id) rc = mdb_cursor_get(c.get(), &k, &d, MDB_NEXT);
        }
        for (; rc != MDB_NOTFOUND && out.size() < limit; rc = mdb_cursor_get(c.get(), &k, &d, MDB_NEXT)) {
            check(env_.env, rc, "list users");
            out.push_back(decode_user(view(d)));
        }
        return out;
    }

    std::vector<std::string> user_index(std::string_view prefix, std::string_view after,
                                        std::size_t limit) override {
        std::vector<std::string> out;
        if (limit == 0) return out;
        Cursor c(env_.env, live(), env_.dbi.user_search);
        MDB_val k = val(after.empty() ? prefix : after), d{};
        int rc = mdb_cursor_get(c.get(), &k, &d, MDB_SET_RANGE);
        if (rc == 0 && !after.empty() && view(k) == after) rc = mdb_cursor_get(c.get(), &k, &d, MDB_NEXT);
        for (; rc != MDB_NOTFOUND && out.size() < limit; rc = mdb_cursor_get(c.get(), &k, &d, MDB_NEXT)) {
            check(env_.env, rc, "search users");
            if (view(k).substr(0, prefix.size()) != prefix) break;
            out.emplace_back(view(k));
        }
        return out;
    }

    std::size_t user_count() override {
        MDB_stat st{};
        check(env_.env, mdb_stat(live(), env_.dbi.users, &st), "count users");
        return st.ms_entries;
    }

    ReadTxn::Counts counts() override {
        auto n = [&](MDB_dbi dbi) {
            MDB_stat st{};
            check(env_.env, mdb_stat(live(), dbi, &st), "count records");
            return static_cast<std::size_t>(st.ms_entries);
        };
        ReadTxn::Counts c;
        c.users = n(env_.dbi.users);
        c.tokens = n(env_.dbi.tokens);
        c.token_index = n(env_.dbi.addr_tokens);
        c.sessions = n(env_.dbi.sessions);
        c.passkeys = n(env_.dbi.passkeys);
        c.audit = n(env_.dbi.audit);
        c.outbox = n(env_.dbi.outbox);
        c.events = n(env_.dbi.events);
        c.provider_links = n(env_.dbi.provider_links);
        return c;
    }

    std::size_t audit_count() override {
        MDB_stat st{};
        check(env_.env, mdb_stat(live(), env_.dbi.audit, &st), "count audit entries");
        return st.ms_entries;
    }

    // Keys start with due_at (big-endian): the earliest come first.
    std::vector<OutboxRecord> outbox_due(Millis now, std::size_t limit) override {
        std::vector<OutboxRecord> out;
        if (limit == 0) return out;
        Cursor c(env_.env, live(), env_.dbi.outbox);
        MDB_val k{}, d{};
        for (int rc = mdb_cursor_get(c.get(), &k, &d, MDB_FIRST); rc != MDB_NOTFOUND && out.size() < limit;
             rc = mdb_cursor_get(c.get(), &k, &d, MDB_NEXT)) {
            check(env_.env, rc, "read outbox");
            OutboxRecord o = decode_outbox(view(k), view(d));
            if (o.due_at > now) break;
            out.push_back(std::move(o));
        }
        return out;
    }

    std::optional<OutboxRecord> outbox(std::string_view key) override {
        auto v = get(env_.dbi.outbox, key, "read outbox");
        if (!v) return std::nullopt;
        return decode_outbox(key, *v);
    }

    std::size_t outbox_count() override {
        MDB_stat st{};
        check(env_.env, mdb_stat(live(), env_.dbi.outbox, &st), "count outbox entries");
        return st.ms_entries;
    }

    std::vector<EventRecord> events(std::size_t limit) override {
        std::vector<EventRecord> out;
        each_event(limit, [&](std::string_view k, std::string_view d) {
            out.push_back(decode_event(k, d));
            return true;
        });
        return out;
    }
    void event_heads(std::size_t limit, const std::function<bool(const EventHead &)> &visit) override {
        each_event(limit, [&](std::string_view k, std::string_view d) { return visit(decode_event_head(k, d)); });
    }
    // The first `limit` events in key order to `f(key, record)` (views of the map), until it
    // returns false.
    template <class F>
    void each_event(std::size_t limit, F &&f) {
        if (limit == 0) return;
        Cursor c(env_.env, live(), env_.dbi.events);
        MDB_val k{}, d{};
        std::size_t n = 0;
        for (int rc = mdb_cursor_get(c.get(), &k, &d, MDB_FIRST); rc != MDB_NOTFOUND && n < limit;
             rc = mdb_cursor_get(c.get(), &k, &d, MDB_NEXT), ++n) {
            check(env_.env, rc, "read events");
            if (!f(view(k), view(d))) return;
        }
    }

    std::optional<EventRecord> event(std::string_view key) override {
        auto v = get(env_.dbi.events, key, "read an event");
        if (!v) return std::nullopt;
        return decode_event(key, *v);
    }

    std::size_t event_count() override {
        MDB_stat st{};
        check(env_.env, mdb_stat(live(), env_.dbi.events, &st), "count events");
        return st.ms_entries;
    }

    std::optional<MfaRecord> mfa(std::string_view user_id) override {
        auto v = get(env_.dbi.mfa, user_id, "read second factors");
        if (!v) return std::nullopt;
        return decode_mfa(user_id, *v);
    }

    std::optional<PasskeyRecord> passkey(std::string_view key) override {
        auto v = get(env_.dbi.passkeys, key, "read a passkey");
        if (!v) return std::nullopt;
        return decode_passkey(key, *v);
    }

    std::vector<PasskeyRecord> passkeys_of(std::string_view user_id) override {
        std::vector<PasskeyRecord> out;
        each_dup(env_.dbi.user_passkeys, user_id, "read a user's passkeys", [&](std::string_view key) {
            if (auto p = passkey(key)) out.push_back(std::move(*p));
        });
        return out;
    }

    std::optional<ProviderLinkRecord> provider_link(std::string_view key) override {
        auto v = get(env_.dbi.provider_links, key, "read a provider link");
        if (!v) return std::nullopt;
        return decode_provider_link(key, *v);
    }

    std::vector<ProviderLinkRecord> provider_links_of(std::string_view user_id) override {
        std::vector<ProviderLinkRecord> out;
        each_dup(env_.dbi.user_provider_links, user_id, "read a user's provider links", [&](std::string_view key) {
            if (auto l = provider_link(key)) out.push_back(std::move(*l));
        });
        return out;
    }

    bool challenge_spent(std::string_view hash) override {
        return get(env_.dbi.spent_challenges, hash, "read a spent challenge").has_value();
    }

    std::optional<std::string> counter(std::string_view key) override {
        auto v = get(env_.dbi.counters, key, "read a counter");
        if (!v) return std::nullopt;
        if (v->size() < 8) corrupt("counters: bad value");
        return std::string(v->substr(8));
    }

    std::optional<MfaPendingRecord> mfa_pending(std::string_view hash) override {
        auto v = get(env_.dbi.mfa_pending, hash, "read a pending second factor");
        if (!v) return std::nullopt;
        return decode_mfa_pending(hash, *v);
    }

    std::optional<op::CodeRecord> oidc_code(std::string_view key) override {
        auto v = get(env_.dbi.oidc_codes, key, "read a provider code");
        if (!v) return std::nullopt;
        return decode_oidc_code(key, *v);
    }
    std::optional<op::AccessTokenRecord> oidc_access_token(std::string_view key) override {
        auto v = get(env_.dbi.oidc_access, key, "read a provider access token");
        if (!v) return std::nullopt;
        return decode_oidc_access(key, *v);
    }
    std::optional<op::RefreshTokenRecord> oidc_refresh_token(std::string_view key) override {
        auto v = get(env_.dbi.oidc_refresh, key, "read a provider refresh token");
        if (!v) return std::nullopt;
        return decode_oidc_refresh(key, *v);
    }
    std::optional<op::RefreshFamily> oidc_family(std::string_view id) override {
        auto v = get(env_.dbi.oidc_families, id, "read a provider refresh family");
        if (!v) return std::nullopt;
        return decode_oidc_family(id, *v);
    }
    std::optional<op::ConsentRecord> oidc_consent(std::string_view user_id, std::string_view client_id) override {
        if (user_id.empty() || client_id.empty()) return std::nullopt;
        const std::string key = oidc_consent_key(user_id, client_id);
        auto v = get(env_.dbi.oidc_consents, key, "read a consent");
        if (!v) return std::nullopt;
        return decode_oidc_consent(key, *v);
    }
    std::vector<op::ConsentRecord> oidc_consents_of(std::string_view user_id) override {
        std::vector<op::ConsentRecord> out;
        if (user_id.empty()) return out;
        const std::string prefix = oidc_consent_key(user_id, "");
        if (!key_ok(prefix)) return out;
        Cursor c(env_.env, live(), env_.dbi.oidc_consents);
        MDB_val k = val(prefix), d{};
        for (int rc = mdb_cursor_get(c.get(), &k, &d, MDB_SET_RANGE); rc != MDB_NOTFOUND;
             rc = mdb_cursor_get(c.get(), &k, &d, MDB_NEXT)) {
            check(env_.env, rc, "read a user's consents");
            if (view(k).substr(0, prefix.size()) != prefix) break;
            out.push_back(decode_oidc_consent(view(k), view(d)));
        }
        return out;
    }

protected:
    MDB_txn *live() const {
        if (txn_ == nullptr) throw StoreError(Code::StorageError, "transaction already ended");
        return txn_;
    }

    // LMDB rejects empty keys and keys over its limit (511 bytes); no record can have such a key.
    bool key_ok(std::string_view key) const {
        return !key.empty() && key.size() <= static_cast<std::size_t>(mdb_env_get_maxkeysize(env_.env));
    }

    // A token or session record by its key, or by the key an earlier build wrote it under
    // (legacy_key); `key` is the one it was found under.
    struct Keyed {
        std::string_view key, value;
    };
    std::optional<Keyed> keyed(MDB_dbi dbi, std::string_view key, const char *context) {
        if (auto v = get(dbi, key, context)) return Keyed{key, *v};
        const std::string_view legacy = legacy_key(key);
        if (legacy.empty()) return std::nullopt;
        if (auto v = get(dbi, legacy, context)) return Keyed{legacy, *v};
        return std::nullopt;
    }

    // f(value) for each value of a DUPSORT table's `key`, in order.
    template <class F>
    void each_dup(MDB_dbi dbi, std::string_view key, const char *context, F f) {
        if (!key_ok(key)) return;
        Cursor c(env_.env, live(), dbi);
        MDB_val k = val(key), d{};
        for (int rc = mdb_cursor_get(c.get(), &k, &d, MDB_SET_KEY); rc != MDB_NOTFOUND;
             rc = mdb_cursor_get(c.get(), &k, &d, MDB_NEXT_DUP)) {
            check(env_.env, rc, context);
            f(view(d));
        }
    }

    // The value under `key`, pointing into the map: valid until the next write or the txn's end,
    // so every caller copies (decodes) it at once.
    std::optional<std::string_view> get(MDB_dbi dbi, std::string_view key, const char *context) {
        MDB_txn *txn = live();
        if (!key_ok(key)) return std::nullopt;
        MDB_val k = val(key), d{};
        int rc = mdb_get(txn, dbi, &k, &d);
        if (rc == MDB_NOTFOUND) return std::nullopt;
        check(env_.env, rc, context);
        return view(d);
    }

    const Env &env_;
    MDB_txn *txn_;
};

// Read transactions ended by a reader are kept reset (their reader slot held, no snapshot pinned)
// and renewed by the next: mdb_txn_begin would allocate the transaction and, with MDB_NOTLS, take
// the environment's shared reader-table mutex to find a slot, on every GET /me and every gated
// request. Two are kept, for the event loop and a thread that
// reads. (Like the environment, they belong to the process that opened the store: each worker
// opens its own after the fork, as LMDB requires.)
class IdleReads {
public:
    ~IdleReads() { clear(); }
    MDB_txn *take() {
        MDB_txn *txn = nullptr;
        {
            std::lock_guard<std::mutex> hold(lock_);
            if (txns_.empty()) return nullptr;
            txn = txns_.back();
            txns_.pop_back();
        }
        if (mdb_txn_renew(txn) == 0) return txn;
        mdb_txn_abort(txn);
        return nullptr;
    }
    void give(MDB_txn *txn) {
        mdb_txn_reset(txn);
        {
            std::lock_guard<std::mutex> hold(lock_);
            if (txns_.size() < kKeep) {
                txns_.push_back(txn);
                return;
            }
        }
        mdb_txn_abort(txn);
    }
    // Before the environment closes.
    void clear() {
        std::lock_guard<std::mutex> hold(lock_);
        for (MDB_txn *t : txns_) mdb_txn_abort(t);
        txns_.clear();
    }

private:
    static constexpr std::size_t kKeep = 2;  // of the 256 reader slots, per worker
    std::mutex lock_;
    std::vector<MDB_txn *> txns_;
};

class LmdbReadTxn final : public TxnBase<ReadTxn> {
public:
    LmdbReadTxn(const Env &env, MDB_txn *txn, IdleReads &idle) : TxnBase(env, txn), idle_(idle) {}
    ~LmdbReadTxn() override {
        if (txn_ != nullptr) idle_.give(txn_);
    }

private:
    IdleReads &idle_;
};

// How a write transaction stands to a batch (LmdbStore::batch).
enum class WriteMode {
    TopLevel,  // a transaction of its own, durable when commit() returns
    Nested,    // a nested transaction of a batch (whose commit is the durable one)
    Flat,      // the batch's own transaction: commit() and abort() are no-ops, and an abort after a
               // write marks the batch spoiled (it then runs again with nested transactions)
};

class LmdbWriteTxn final : public TxnBase<WriteTxn> {
public:
    // spoiled: with WriteMode::Flat, the batch's mark
    LmdbWriteTxn(const Env &env, MDB_txn *txn, WriteMode mode, bool *spoiled = nullptr)
        : TxnBase(env, txn), mode_(mode), spoiled_(spoiled) {}
    ~LmdbWriteTxn() override {
        if (txn_ == nullptr) return;
        if (mode_ != WriteMode::Flat) {
            mdb_txn_abort(txn_);
        } else if (wrote_) {  // its writes cannot be taken back from the batch's transaction
            *spoiled_ = true;
        }
    }

    void put_user(const User &u) override {
        auto old = user_by_id(u.id);
        if (old && (old->email != u.email || old->group_id != u.group_id)) {
            // Only the entry that still names this user: never remove someone else's.
            std::string old_key = addr_key(old->group_id, old->email);
            if (auto owner = get(env_.dbi.user_email, old_key, "read user by email"); owner && *owner == u.id)
                del(env_.dbi.user_email, old_key, nullptr, "delete old email index");
        }
        const auto keys = user_index_keys(u);
        if (old) {
            for (const auto &k : user_index_keys(*old)) {
                if (std::find(keys.begin(), keys.end(), k) == keys.end()) del(env_.dbi.user_search, k, nullptr, "delete search index");
            }
        }
        put(env_.dbi.users, u.id, encode_user(u), 0, "write user");
        if (!u.email.empty()) put(env_.dbi.user_email, addr_key(u.group_id, u.email), u.id, 0, "write email index");
        for (const auto &k : keys) put(env_.dbi.user_search, k, {}, 0, "write search index");
    }

    void del_user(std::string_view user_id) override {
        auto old = user_by_id(user_id);
        if (!old) return;
        const std::string key = addr_key(old->group_id, old->email);
        if (old->email.empty()) {
            // no address, no index entry
        } else if (auto owner = get(env_.dbi.user_email, key, "read user by email"); owner && *owner == user_id) {
            del(env_.dbi.user_email, key, nullptr, "delete email index");
        }
        for (const auto &k : user_index_keys(*old)) del(env_.dbi.user_search, k, nullptr, "delete search index");
        del(env_.dbi.users, user_id, nullptr, "delete user");
    }

    void put_token(const TokenRecord &t) override {
        if (auto old = token(t.hash)) {
            std::string old_dup = addr_token_value(*old);
            del(env_.dbi.addr_tokens, addr_key(old->group_id, old->email), &old_dup, "delete token index");
        }
        put(env_.dbi.tokens, t.hash, encode_token(t), 0, "write token");
        const std::string key = addr_key(t.group_id, t.email);
        drop_spent_entries(key);  // their leaf is written below anyway
        put(env_.dbi.addr_tokens, key, addr_token_value(t), MDB_NODUPDATA, "write token index");
    }

    // The token goes; its address's index entry stays (tokens_for skips an entry whose token is
    // gone) until that address's next token or the purge removes it: an exchange spends a token of
    // an address it writes nothing else for, and deleting that entry would dirty its leaf and
    // branch pages, a large part of what a batch of exchanges writes.
    void del_token(std::string_view hash) override {
        if (del(env_.dbi.tokens, hash, nullptr, "delete token")) return;
        if (const std::string_view legacy = legacy_key(hash); !legacy.empty()) {
            del(env_.dbi.tokens, legacy, nullptr, "delete token");
        }
    }

    void discard_token(const TokenRecord &t) override {
        del_token(t.hash);
        drop_spent_entries(addr_key(t.group_id, t.email));
    }

    // The entries of an address whose tokens are gone (read first, then deleted: a cursor that
    // deletes among duplicates is easy to get wrong).
    void drop_spent_entries(std::string_view key) {
        std::vector<std::string> spent;
        each_dup(env_.dbi.addr_tokens, key, "read tokens of an address", [&](std::string_view d) {
            if (d.size() > 8 && !token(d.substr(8))) spent.emplace_back(d);
        });
        for (const auto &dup : spent) del(env_.dbi.addr_tokens, key, &dup, "delete a spent token's index entry");
    }

    void put_session(const SessionRecord &s) override {
        auto old = session(s.hash);
        // The common update (last_seen_at) keeps id and user: its index entries stay as they are.
        bool same_index = old && old->id == s.id && old->user_id == s.user_id && old->browser == s.browser;
        if (old && !same_index) drop_session_index(*old);
        put(env_.dbi.sessions, s.hash, encode_session(s), 0, "write session");
        if (!same_index) {
            put(env_.dbi.session_ids, s.id, s.hash, 0, "write session id");
            put(env_.dbi.user_sessions, s.user_id, s.id, MDB_NODUPDATA, "write user's sessions");
            if (!s.browser.empty()) {
                put(env_.dbi.browser_sessions, s.browser, s.id, MDB_NODUPDATA, "write browser's sessions");
            }
        }
    }

    void del_session(std::string_view hash) override {
        auto s = session(hash);
        if (!s) return;
        drop_session_index(*s);
        del(env_.dbi.sessions, hash, nullptr, "delete session");
    }

    void write_audit(const AuditEntry &e) override {
        std::array<unsigned char, 16> key{};
        put_be64(key.data(), static_cast<std::uint64_t>(e.at));
        randombytes_buf(key.data() + 8, 8);
        put(env_.dbi.audit,
            std::string_view(reinterpret_cast<const char *>(key.data()), key.size()), encode_audit(e),
            MDB_NOOVERWRITE, "write audit entry");
        drop_oldest_audit();
    }

    void put_outbox(OutboxRecord &r) override {
        std::array<unsigned char, 16> key{};
        put_be64(key.data(), static_cast<std::uint64_t>(r.due_at));
        randombytes_buf(key.data() + 8, 8);
        r.key.assign(reinterpret_cast<const char *>(key.data()), key.size());
        put(env_.dbi.outbox, r.key, encode_outbox(r), MDB_NOOVERWRITE, "write outbox entry");
    }

    void del_outbox(std::string_view key) override { del(env_.dbi.outbox, key, nullptr, "delete outbox entry"); }

    // One writer at a time: the next number is the last key's plus one.
    bool alone_with_events() const override { return true; }  // one write transaction at a time
    void put_event(EventRecord &r) override {
        std::uint64_t next = 1;
        {
            Cursor c(env_.env, live(), env_.dbi.events);
            MDB_val k{}, d{};
            const int rc = mdb_cursor_get(c.get(), &k, &d, MDB_LAST);
            if (rc != MDB_NOTFOUND) {
                check(env_.env, rc, "read events");
                if (k.mv_size != 8) corrupt("event: bad key");
                next = get_be64(static_cast<const unsigned char *>(k.mv_data)) + 1;
            }
        }
        std::array<unsigned char, 8> key{};
        put_be64(key.data(), next);
        r.key.assign(reinterpret_cast<const char *>(key.data()), key.size());
        // after the last key: LMDB appends it to the rightmost leaf without searching the tree
        put(env_.dbi.events, r.key, encode_event(r), MDB_APPEND, "write an event");
    }
    void update_event(const EventRecord &r) override { put(env_.dbi.events, r.key, encode_event(r), 0, "write an event"); }
    void del_event(std::string_view key) override { del(env_.dbi.events, key, nullptr, "delete an event"); }
    // One search: the record's id read in place, and the cursor deletes what it points at.
    bool del_event_if(std::string_view key, std::string_view id) override {
        if (!key_ok(key)) return false;
        Cursor c(env_.env, live(), env_.dbi.events);
        MDB_val k = val(key), d{};
        const int rc = mdb_cursor_get(c.get(), &k, &d, MDB_SET_KEY);
        if (rc == MDB_NOTFOUND) return false;
        check(env_.env, rc, "read an event");
        if (event_id_of(view(d)) != id) return false;
        check(env_.env, mdb_cursor_del(c.get(), 0), "delete an event");
        wrote_ = true;
        return true;
    }

    void put_mfa(const MfaRecord &m) override { put(env_.dbi.mfa, m.user_id, encode_mfa(m), 0, "write second factors"); }
    void del_mfa(std::string_view user_id) override { del(env_.dbi.mfa, user_id, nullptr, "delete second factors"); }
    void put_mfa_pending(const MfaPendingRecord &p) override {
        put(env_.dbi.mfa_pending, p.hash, encode_mfa_pending(p), 0, "write a pending second factor");
    }
    void del_mfa_pending(std::string_view hash) override {
        del(env_.dbi.mfa_pending, hash, nullptr, "delete a pending second factor");
    }
    void put_passkey(const PasskeyRecord &p) override {
        put(env_.dbi.passkeys, p.key, encode_passkey(p), 0, "write a passkey");
        put(env_.dbi.user_passkeys, p.user_id, p.key, MDB_NODUPDATA, "write a user's passkeys");
    }
    void del_passkey(std::string_view key) override {
        auto p = passkey(key);
        if (!p) return;
        del(env_.dbi.user_passkeys, p->user_id, &p->key, "delete a user's passkey");
        del(env_.dbi.passkeys, key, nullptr, "delete a passkey");
    }
    void put_provider_link(const ProviderLinkRecord &l) override {
        if (auto old = provider_link(l.key); old && old->user_id != l.user_id) {
            del(env_.dbi.user_provider_links, old->user_id, &old->key, "delete a user's provider link");
        }
        put(env_.dbi.provider_links, l.key, encode_provider_link(l), 0, "write a provider link");
        put(env_.dbi.user_provider_links, l.user_id, l.key, MDB_NODUPDATA, "write a user's provider links");
    }
    void del_provider_link(std::string_view key) override {
        auto l = provider_link(key);
        if (!l) return;
        del(env_.dbi.user_provider_links, l->user_id, &l->key, "delete a user's provider link");
        del(env_.dbi.provider_links, key, nullptr, "delete a provider link");
    }
    void spend_challenge(std::string_view hash, Millis expires_at) override {
        std::array<unsigned char, 8> at{};
        put_be64(at.data(), static_cast<std::uint64_t>(expires_at));
        put(env_.dbi.spent_challenges, hash, std::string_view(reinterpret_cast<const char *>(at.data()), at.size()), 0,
            "spend a challenge");
    }

    void put_counter(std::string_view key, std::string_view state, Millis expires_at) override {
        std::string v(8, '\0');
        put_be64(reinterpret_cast<unsigned char *>(v.data()), static_cast<std::uint64_t>(expires_at));
        v.append(state);
        put(env_.dbi.counters, key, v, 0, "write a counter");
    }
    void del_counter(std::string_view key) override { del(env_.dbi.counters, key, nullptr, "delete a counter"); }
    std::size_t del_counters(std::string_view prefix) override {
        std::size_t n = 0;
        if (!key_ok(prefix)) return n;
        Cursor c(env_.env, for_write(), env_.dbi.counters);
        MDB_val k = val(prefix), d{};
        for (int rc = mdb_cursor_get(c.get(), &k, &d, MDB_SET_RANGE); rc == 0 && view(k).substr(0, prefix.size()) == prefix;
             rc = mdb_cursor_get(c.get(), &k, &d, MDB_NEXT)) {  // after a delete: the one that followed
            check(env_.env, mdb_cursor_del(c.get(), 0), "delete a counter");
            ++n;
        }
        return n;
    }

    std::size_t del_mfa_pending_of(std::string_view user_id) override {
        std::size_t n = 0;
        Cursor c(env_.env, for_write(), env_.dbi.mfa_pending);
        MDB_val k{}, d{};
        for (int rc = mdb_cursor_get(c.get(), &k, &d, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c.get(), &k, &d, MDB_NEXT)) {
            if (decode_mfa_pending(view(k), view(d)).user_id != user_id) continue;
            check(env_.env, mdb_cursor_del(c.get(), 0), "delete a pending second factor");
            ++n;
        }
        return n;
    }

    // ---- the OpenID provider's grants

    void put_oidc_code(const op::CodeRecord &c) override {
        put(env_.dbi.oidc_codes, c.key, encode_oidc_code(c.spent ? spent_code(c) : c), 0, "write a provider code");
    }

    void put_oidc_access_token(const op::AccessTokenRecord &a) override {
        if (auto old = oidc_access_token(a.key); old && old->family_id != a.family_id) unlink_from_family(*old);
        put(env_.dbi.oidc_access, a.key, encode_oidc_access(a), 0, "write a provider access token");
        if (!a.family_id.empty()) {
            put(env_.dbi.oidc_family_tokens, a.family_id, family_entry('a', a.key), MDB_NODUPDATA,
                "write a family's tokens");
        }
    }
    void del_oidc_access_token(std::string_view key) override {
        auto a = oidc_access_token(key);
        if (!a) return;
        unlink_from_family(*a);
        del(env_.dbi.oidc_access, key, nullptr, "delete a provider access token");
    }

    void put_oidc_family(const op::RefreshFamily &f) override {
        if (auto old = oidc_family(f.id); old && old->user_id != f.user_id) {
            del(env_.dbi.user_oidc_families, old->user_id, &old->id, "delete a user's family");
        }
        put(env_.dbi.oidc_families, f.id, encode_oidc_family(f), 0, "write a provider refresh family");
        put(env_.dbi.user_oidc_families, f.user_id, f.id, MDB_NODUPDATA, "write a user's families");
    }
    void put_oidc_refresh_token(const op::RefreshTokenRecord &r) override {
        put(env_.dbi.oidc_refresh, r.key, encode_oidc_refresh(r), 0, "write a provider refresh token");
        put(env_.dbi.oidc_family_tokens, r.family_id, family_entry('r', r.key), MDB_NODUPDATA, "write a family's tokens");
    }
    void end_oidc_family(std::string_view id) override {
        auto f = oidc_family(id);
        if (!f) return;
        f->revoked = true;
        put(env_.dbi.oidc_families, f->id, encode_oidc_family(*f), 0, "end a provider refresh family");
        drop_family_tokens(f->id);
    }

    void put_oidc_consent(const op::ConsentRecord &c) override {
        put(env_.dbi.oidc_consents, oidc_consent_key(c.user_id, c.client_id), encode_oidc_consent(c), 0,
            "write a consent");
    }
    void del_oidc_consent(std::string_view user_id, std::string_view client_id) override {
        del(env_.dbi.oidc_consents, oidc_consent_key(user_id, client_id), nullptr, "delete a consent");
    }

    // Codes and access tokens live minutes and an hour: a scan of each finds the user's.
    std::size_t del_oidc_of(std::string_view user_id) override {
        if (user_id.empty()) return 0;
        std::size_t n = 0;
        std::vector<std::string> families;
        each_dup(env_.dbi.user_oidc_families, user_id, "read a user's families",
                 [&](std::string_view id) { families.emplace_back(id); });
        for (const auto &id : families) n += delete_family(id);
        std::vector<std::string> access;
        scan_table(env_.dbi.oidc_access, "read provider access tokens", [&](std::string_view k, std::string_view v) {
            if (decode_oidc_access(k, v).user_id == user_id) access.emplace_back(k);
        });
        for (const auto &k : access) del_oidc_access_token(k);
        n += access.size();
        std::vector<std::string> codes;
        scan_table(env_.dbi.oidc_codes, "read provider codes", [&](std::string_view k, std::string_view v) {
            if (decode_oidc_code(k, v).user_id == user_id) codes.emplace_back(k);
        });
        for (const auto &k : codes) del(env_.dbi.oidc_codes, k, nullptr, "delete a provider code");
        n += codes.size();
        for (const auto &c : oidc_consents_of(user_id)) {
            del_oidc_consent(c.user_id, c.client_id);
            ++n;
        }
        return n;
    }

    // The provider's expired records, at most `budget`: codes (a spent one too: its reuse can
    // no longer be told from a code never given), access and refresh tokens, and families (with
    // whatever tokens of theirs are left).
    std::size_t purge_oidc(Millis now, std::size_t budget) {
        std::size_t n = 0;
        auto expired_keys = [&](MDB_dbi dbi, const char *context, Millis (*expiry)(std::string_view, std::string_view)) {
            std::vector<std::string> out;
            if (n >= budget) return out;
            const std::size_t room = budget - n;
            Cursor c(env_.env, live(), dbi);
            MDB_val k{}, d{};
            for (int rc = mdb_cursor_get(c.get(), &k, &d, MDB_FIRST); rc != MDB_NOTFOUND && out.size() < room;
                 rc = mdb_cursor_get(c.get(), &k, &d, MDB_NEXT)) {
                check(env_.env, rc, context);
                if (expiry(view(k), view(d)) <= now) out.emplace_back(view(k));
            }
            return out;
        };
        for (const auto &k : expired_keys(env_.dbi.oidc_codes, "scan provider codes",
                                          [](std::string_view k, std::string_view v) { return decode_oidc_code(k, v).expires_at; })) {
            del(env_.dbi.oidc_codes, k, nullptr, "delete an expired provider code");
            ++n;
        }
        for (const auto &k : expired_keys(env_.dbi.oidc_access, "scan provider access tokens",
                                          [](std::string_view k, std::string_view v) { return decode_oidc_access(k, v).expires_at; })) {
            del_oidc_access_token(k);
            ++n;
        }
        for (const auto &k : expired_keys(env_.dbi.oidc_refresh, "scan provider refresh tokens",
                                          [](std::string_view k, std::string_view v) { return decode_oidc_refresh(k, v).expires_at; })) {
            if (auto r = oidc_refresh_token(k)) {
                const std::string entry = family_entry('r', k);
                del(env_.dbi.oidc_family_tokens, r->family_id, &entry, "delete a family's token");
            }
            del(env_.dbi.oidc_refresh, k, nullptr, "delete an expired provider refresh token");
            ++n;
        }
        for (const auto &id : expired_keys(env_.dbi.oidc_families, "scan provider refresh families",
                                           [](std::string_view k, std::string_view v) { return decode_oidc_family(k, v).expires_at; })) {
            n += delete_family(id);
        }
        return n;
    }

    // A plain full scan of tokens and sessions: both tables are small (live tokens expire in
    // minutes, sessions are bounded per user), and the budget bounds the deletions per call.
    std::size_t purge_expired(Millis now, std::size_t budget) override {
        std::vector<std::string> tokens = expired(env_.dbi.tokens, now, budget, true);
        for (const auto &h : tokens) del_token(h);
        std::vector<std::string> sessions = expired(env_.dbi.sessions, now, budget - tokens.size(), false);
        for (const auto &h : sessions) del_session(h);
        // index entries, not records: in what the records left of the budget, not counted in what
        // is returned
        (void)purge_index(budget - tokens.size() - sessions.size());
        std::size_t pending = 0;  // sign-ins waiting for a second factor: 5 minutes each
        {
            Cursor c(env_.env, for_write(), env_.dbi.mfa_pending);
            MDB_val k{}, d{};
            for (int rc = mdb_cursor_get(c.get(), &k, &d, MDB_FIRST);
                 rc == 0 && tokens.size() + sessions.size() + pending < budget;
                 rc = mdb_cursor_get(c.get(), &k, &d, MDB_NEXT)) {
                if (decode_mfa_pending(view(k), view(d)).expires_at > now) continue;
                check(env_.env, mdb_cursor_del(c.get(), 0), "delete an expired pending second factor");
                ++pending;
            }
        }
        for (MDB_dbi dbi : {env_.dbi.spent_challenges, env_.dbi.counters}) {
            // spent WebAuthn challenges (kept only until they would have expired), and counters
            Cursor c(env_.env, for_write(), dbi);
            MDB_val k{}, d{};
            for (int rc = mdb_cursor_get(c.get(), &k, &d, MDB_FIRST);
                 rc == 0 && tokens.size() + sessions.size() + pending < budget;
                 rc = mdb_cursor_get(c.get(), &k, &d, MDB_NEXT)) {
                if (d.mv_size >= 8 && static_cast<Millis>(get_be64(static_cast<const unsigned char *>(d.mv_data))) > now) {
                    continue;
                }
                check(env_.env, mdb_cursor_del(c.get(), 0), "delete an expired record");
                ++pending;
            }
        }
        const std::size_t done = tokens.size() + sessions.size() + pending;
        return done + (done < budget ? purge_oidc(now, budget - done) : 0);
    }

    // The purge's share of del_token's deferred work: up to `budget` entries of addr_tokens whose
    // token is gone, looking at no more than kAddrScan entries a call (the write lock is held),
    // from the address where the previous call stopped, round the table.
    static constexpr std::size_t kAddrScan = 50000;
    std::size_t purge_index(std::size_t budget) override {
        if (budget == 0) return 0;
        std::vector<std::pair<std::string, std::string>> spent;
        std::string &from = env_.addr_scan_from;
        {
            Cursor c(env_.env, live(), env_.dbi.addr_tokens);
            MDB_val k{}, d{};
            int rc = MDB_NOTFOUND;
            if (!from.empty()) {
                k = val(from);
                rc = mdb_cursor_get(c.get(), &k, &d, MDB_SET_RANGE);
            }
            bool wrapped = from.empty();
            if (rc == MDB_NOTFOUND) {
                wrapped = true;
                rc = mdb_cursor_get(c.get(), &k, &d, MDB_FIRST);
            }
            const std::string start = wrapped ? std::string() : from;  // a lap ends where it began
            bool lapped = false;
            std::size_t seen = 0;
            for (; spent.size() < budget && seen < kAddrScan; ++seen) {
                if (rc == MDB_NOTFOUND) {  // the end: once round from the start
                    if (wrapped) break;
                    wrapped = lapped = true;
                    rc = mdb_cursor_get(c.get(), &k, &d, MDB_FIRST);
                    if (rc == MDB_NOTFOUND) break;
                }
                check(env_.env, rc, "scan the token index");
                if (lapped && view(k) >= start) break;  // seen this call (it was counted twice)
                if (d.mv_size > 8 && !token(view(d).substr(8))) spent.emplace_back(std::string(view(k)), std::string(view(d)));
                rc = mdb_cursor_get(c.get(), &k, &d, MDB_NEXT);
            }
            from = rc == 0 ? std::string(view(k)) : std::string();
        }
        for (const auto &[key, dup] : spent) del(env_.dbi.addr_tokens, key, &dup, "delete a spent token's index entry");
        return spent.size();
    }

    // The audit trail is bounded in entries, not only in age: most of what a request that is
    // not signed in writes is an audit entry (an unknown address, a failed exchange), and a
    // flood of them must never take the room that sign-ins need. Past the bound the oldest
    // entries go, two for each new one at most, so a table over the bound (a bound made
    // smaller) comes back under it as entries are written.
    void drop_oldest_audit() {
        if (env_.audit_max != 0) trim_audit(env_.audit_max, 2);
    }

    std::size_t trim_audit(std::size_t keep, std::size_t budget) override {
        MDB_stat st{};
        check(env_.env, mdb_stat(live(), env_.dbi.audit, &st), "count audit entries");
        if (st.ms_entries <= keep || budget == 0) return 0;
        const std::size_t over = std::min<std::size_t>(st.ms_entries - keep, budget);
        std::size_t n = 0;
        Cursor c(env_.env, for_write(), env_.dbi.audit);
        MDB_val k{}, d{};
        for (int rc = mdb_cursor_get(c.get(), &k, &d, MDB_FIRST); rc == 0 && n < over;
             rc = mdb_cursor_get(c.get(), &k, &d, MDB_NEXT), ++n) {
            check(env_.env, mdb_cursor_del(c.get(), 0), "delete the oldest audit entry");
        }
        return n;
    }

    // Audit keys start with the entry's time (big-endian): the oldest come first.
    std::size_t purge_audit(Millis before, std::size_t budget) override {
        std::size_t n = 0;
        Cursor c(env_.env, for_write(), env_.dbi.audit);
        MDB_val k{}, d{};
        for (int rc = mdb_cursor_get(c.get(), &k, &d, MDB_FIRST); rc == 0 && n < budget;
             rc = mdb_cursor_get(c.get(), &k, &d, MDB_NEXT)) {
            if (k.mv_size < 8 || static_cast<Millis>(get_be64(static_cast<const unsigned char *>(k.mv_data))) >= before) {
                break;
            }
            check(env_.env, mdb_cursor_del(c.get(), 0), "delete audit entry");
            ++n;
        }
        return n;
    }

    void commit() override {
        MDB_txn *txn = live();
        txn_ = nullptr;  // mdb_txn_commit frees the transaction even when it fails
        if (mode_ != WriteMode::Flat) {  // else the batch commits
            check(env_.env, mdb_txn_commit(txn), "commit");
            if (mode_ == WriteMode::TopLevel) durable(env_.env);
        }
        committed();
    }

private:
    const WriteMode mode_;
    bool *const spoiled_;
    bool wrote_ = false;  // something was (or may have been) written

    // The transaction, for a change (marked before LMDB is called: a failed write may have
    // written part of it).
    MDB_txn *for_write() {
        MDB_txn *txn = live();
        wrote_ = true;
        return txn;
    }

    void put(MDB_dbi dbi, std::string_view key, std::string_view data, unsigned flags,
             const char *context) {
        MDB_val k = val(key), d = val(data);
        int rc = mdb_put(for_write(), dbi, &k, &d, flags);
        if (rc == MDB_KEYEXIST && (flags & MDB_NODUPDATA)) return;  // that exact pair is there
        check(env_.env, rc, context);
    }

    // Deletes key (or the one duplicate `data`); a missing entry is not an error.
    // Whether there was something to delete.
    bool del(MDB_dbi dbi, std::string_view key, const std::string *data, const char *context) {
        if (!key_ok(key)) return false;
        MDB_val k = val(key), d{};
        if (data != nullptr) d = val(*data);
        int rc = mdb_del(live(), dbi, &k, data != nullptr ? &d : nullptr);
        if (rc == MDB_NOTFOUND) return false;  // found nothing, changed nothing
        wrote_ = true;
        check(env_.env, rc, context);
        return true;
    }

    // A family's entry for one of its tokens: the tag ('a' access, 'r' refresh) and the token's key.
    static std::string family_entry(char tag, std::string_view key) {
        std::string e(1, tag);
        e.append(key);
        return e;
    }
    void unlink_from_family(const op::AccessTokenRecord &a) {
        if (a.family_id.empty()) return;
        const std::string entry = family_entry('a', a.key);
        del(env_.dbi.oidc_family_tokens, a.family_id, &entry, "delete a family's token");
    }
    // Deletes every token a family gave, and the family's list of them.
    void drop_family_tokens(const std::string &id) {
        std::vector<std::string> entries;
        each_dup(env_.dbi.oidc_family_tokens, id, "read a family's tokens", [&](std::string_view e) { entries.emplace_back(e); });
        for (const auto &e : entries) {
            if (e.size() < 2) corrupt("oidc_family_tokens: bad value");
            const std::string_view key = std::string_view(e).substr(1);
            del(e[0] == 'a' ? env_.dbi.oidc_access : env_.dbi.oidc_refresh, key, nullptr, "delete a family's token");
        }
        if (!entries.empty()) del(env_.dbi.oidc_family_tokens, id, nullptr, "delete a family's tokens");
    }
    // A family and its tokens; how many records went.
    std::size_t delete_family(const std::string &id) {
        auto f = oidc_family(id);
        if (!f) return 0;
        std::size_t tokens = 0;
        each_dup(env_.dbi.oidc_family_tokens, id, "read a family's tokens", [&](std::string_view) { ++tokens; });
        drop_family_tokens(id);
        del(env_.dbi.user_oidc_families, f->user_id, &f->id, "delete a user's family");
        del(env_.dbi.oidc_families, id, nullptr, "delete a provider refresh family");
        return 1 + tokens;
    }
    // f(key, value) for every record of a table (f must not write to it).
    template <class F>
    void scan_table(MDB_dbi dbi, const char *context, F f) {
        Cursor c(env_.env, live(), dbi);
        MDB_val k{}, d{};
        for (int rc = mdb_cursor_get(c.get(), &k, &d, MDB_FIRST); rc != MDB_NOTFOUND;
             rc = mdb_cursor_get(c.get(), &k, &d, MDB_NEXT)) {
            check(env_.env, rc, context);
            f(view(k), view(d));
        }
    }

    void drop_session_index(const SessionRecord &s) {
        if (auto h = get(env_.dbi.session_ids, s.id, "read session by id"); h && *h == s.hash)
            del(env_.dbi.session_ids, s.id, nullptr, "delete session id");
        del(env_.dbi.user_sessions, s.user_id, &s.id, "delete user's session");
        if (!s.browser.empty()) del(env_.dbi.browser_sessions, s.browser, &s.id, "delete browser's session");
    }

    std::vector<std::string> expired(MDB_dbi dbi, Millis now, std::size_t budget, bool is_token) {
        std::vector<std::string> out;
        if (budget == 0) return out;
        Cursor c(env_.env, live(), dbi);
        MDB_val k{}, d{};
        for (int rc = mdb_cursor_get(c.get(), &k, &d, MDB_FIRST); rc != MDB_NOTFOUND && out.size() < budget;
             rc = mdb_cursor_get(c.get(), &k, &d, MDB_NEXT)) {
            check(env_.env, rc, "scan for expired records");
            Millis exp = is_token ? decode_token(view(k), view(d)).expires_at
                                  : decode_session(view(k), view(d)).expires_at;
            if (exp <= now) out.emplace_back(view(k));
        }
        return out;
    }
};

// Transactions refer to the store's environment: they must end before the Store is destroyed.
class LmdbStore final : public Store {
public:
    explicit LmdbStore(const LmdbOptions &opts);
    ~LmdbStore() override {
        idle_reads_.clear();
        if (env_.env != nullptr) mdb_env_close(env_.env);
    }
    LmdbStore(const LmdbStore &) = delete;
    LmdbStore &operator=(const LmdbStore &) = delete;

    void backup(const std::string &file) const override {
        // O_EXCL: never over an existing file (a store, another backup)
        int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) throw StoreError(Code::StorageError, "backup: cannot create " + file + ": " + std::strerror(errno));
        int rc = mdb_env_copyfd2(env_.env, fd, MDB_CP_COMPACT);
        if (rc == 0 && ::fsync(fd) != 0) rc = errno;
        ::close(fd);
        if (rc != 0) {
            ::unlink(file.c_str());
            throw StoreError(Code::StorageError, "backup: " + std::string(mdb_strerror(rc)));
        }
    }

    std::vector<std::string> check_integrity() const override {
        std::vector<std::string> problems;
        MDB_txn *txn = begin_txn(env_.env, MDB_RDONLY);
        const Dbis &d = env_.dbi;
        // every record of a table through its decoder; `each` sees the key and the value
        auto scan = [&](MDB_dbi dbi, const char *table, const std::function<void(std::string_view, std::string_view)> &each) {
            MDB_cursor *c = nullptr;
            if (mdb_cursor_open(txn, dbi, &c) != 0) {
                problems.push_back(std::string(table) + ": cannot be read");
                return;
            }
            MDB_val k{}, v{};
            for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
                try {
                    each(view(k), view(v));
                } catch (const std::exception &e) {
                    problems.push_back(std::string(table) + ": " + e.what());
                }
            }
            mdb_cursor_close(c);
        };
        auto has = [&](MDB_dbi dbi, std::string_view key) {
            MDB_val k = val(key), v{};
            return mdb_get(txn, dbi, &k, &v) == 0;
        };
        scan(d.users, "users", [&](std::string_view, std::string_view v) {
            User u = decode_user(v);
            for (const auto &key : user_index_keys(u)) {
                if (!has(d.user_search, key)) problems.push_back("users: " + u.id + " is missing from the search index");
            }
            if (u.email.empty()) return;  // an account without an address (a provider's)
            const std::string key = addr_key(u.group_id, u.email);
            MDB_val k = val(key), id{};
            if (mdb_get(txn, d.user_email, &k, &id) != 0 || view(id) != u.id) {
                problems.push_back("users: " + u.id + " is missing from the address index");
            }
        });
        scan(d.user_email, "user_email", [&](std::string_view, std::string_view id) {
            if (!has(d.users, id)) problems.push_back("user_email: names a user that does not exist (" + std::string(id) + ")");
        });
        scan(d.user_search, "user_search", [&](std::string_view key, std::string_view) {
            const auto nul = key.rfind('\0');
            const std::string_view id = nul == std::string_view::npos ? std::string_view() : key.substr(nul + 1);
            MDB_val k = val(id), rec{};
            bool current = false;
            if (!id.empty() && mdb_get(txn, d.users, &k, &rec) == 0) {
                const auto keys = user_index_keys(decode_user(view(rec)));
                current = std::find(keys.begin(), keys.end(), key) != keys.end();
            }
            if (!current) problems.push_back("user_search: an entry no user has (" + std::string(id) + ")");
        });
        scan(d.tokens, "tokens", [&](std::string_view k, std::string_view v) { (void)decode_token(k, v); });
        scan(d.sessions, "sessions", [&](std::string_view k, std::string_view v) {
            SessionRecord s = decode_session(k, v);
            if (!has(d.users, s.user_id)) problems.push_back("sessions: " + s.id + " belongs to no user");
            MDB_val idk = val(s.id), h{};
            if (mdb_get(txn, d.session_ids, &idk, &h) != 0 || view(h) != s.hash) {
                problems.push_back("sessions: " + s.id + " is missing from the id index");
            }
        });
        scan(d.session_ids, "session_ids", [&](std::string_view id, std::string_view hash) {
            if (!has(d.sessions, hash)) problems.push_back("session_ids: " + std::string(id) + " names no session");
        });
        scan(d.mfa, "mfa", [&](std::string_view k, std::string_view v) { (void)decode_mfa(k, v); });
        scan(d.mfa_pending, "mfa_pending", [&](std::string_view k, std::string_view v) { (void)decode_mfa_pending(k, v); });
        scan(d.passkeys, "passkeys", [&](std::string_view k, std::string_view v) {
            PasskeyRecord p = decode_passkey(k, v);
            if (!has(d.users, p.user_id)) problems.push_back("passkeys: a passkey of no user (" + p.user_id + ")");
        });
        scan(d.provider_links, "provider_links", [&](std::string_view k, std::string_view v) {
            ProviderLinkRecord l = decode_provider_link(k, v);
            if (!has(d.users, l.user_id)) problems.push_back("provider_links: a link of no user (" + l.user_id + ")");
        });
        scan(d.oidc_codes, "oidc_codes", [&](std::string_view k, std::string_view v) { (void)decode_oidc_code(k, v); });
        scan(d.oidc_access, "oidc_access", [&](std::string_view k, std::string_view v) { (void)decode_oidc_access(k, v); });
        scan(d.oidc_refresh, "oidc_refresh", [&](std::string_view k, std::string_view v) {
            const op::RefreshTokenRecord r = decode_oidc_refresh(k, v);
            if (!has(d.oidc_families, r.family_id)) problems.push_back("oidc_refresh: a token of no family");
        });
        scan(d.oidc_families, "oidc_families", [&](std::string_view k, std::string_view v) {
            const op::RefreshFamily f = decode_oidc_family(k, v);
            if (!has(d.users, f.user_id)) problems.push_back("oidc_families: a family of no user (" + f.user_id + ")");
        });
        scan(d.oidc_consents, "oidc_consents", [&](std::string_view k, std::string_view v) {
            const op::ConsentRecord c = decode_oidc_consent(k, v);
            if (!has(d.users, c.user_id)) problems.push_back("oidc_consents: a consent of no user (" + c.user_id + ")");
        });
        scan(d.outbox, "outbox", [&](std::string_view k, std::string_view v) { (void)decode_outbox(k, v); });
        scan(d.events, "events", [&](std::string_view k, std::string_view v) { (void)decode_event(k, v); });
        scan(d.audit, "audit", [&](std::string_view k, std::string_view v) { (void)decode_audit(k, v); });
        mdb_txn_abort(txn);
        return problems;
    }

    void copy_into(WriteTxn &to) const override {
        MDB_txn *txn = begin_txn(env_.env, MDB_RDONLY);
        const Dbis &d = env_.dbi;
        auto each = [&](MDB_dbi dbi, const std::function<void(std::string_view, std::string_view)> &f) {
            Cursor c(env_.env, txn, dbi);
            MDB_val k{}, v{};
            for (int rc = mdb_cursor_get(c.get(), &k, &v, MDB_FIRST); rc != MDB_NOTFOUND;
                 rc = mdb_cursor_get(c.get(), &k, &v, MDB_NEXT)) {
                check(env_.env, rc, "read the store");
                f(view(k), view(v));
            }
        };
        try {
            each(d.users, [&](std::string_view, std::string_view v) { to.put_user(decode_user(v)); });
            each(d.tokens, [&](std::string_view k, std::string_view v) { to.put_token(decode_token(k, v)); });
            each(d.sessions, [&](std::string_view k, std::string_view v) { to.put_session(decode_session(k, v)); });
            each(d.mfa, [&](std::string_view k, std::string_view v) { to.put_mfa(decode_mfa(k, v)); });
            each(d.mfa_pending, [&](std::string_view k, std::string_view v) { to.put_mfa_pending(decode_mfa_pending(k, v)); });
            each(d.passkeys, [&](std::string_view k, std::string_view v) { to.put_passkey(decode_passkey(k, v)); });
            each(d.provider_links, [&](std::string_view k, std::string_view v) {
                to.put_provider_link(decode_provider_link(k, v));
            });
            each(d.outbox, [&](std::string_view k, std::string_view v) {
                OutboxRecord o = decode_outbox(k, v);
                to.put_outbox(o);
            });
            each(d.events, [&](std::string_view k, std::string_view v) {
                EventRecord e = decode_event(k, v);
                to.put_event(e);
            });
            each(d.audit, [&](std::string_view k, std::string_view v) { to.append_audit(decode_audit(k, v)); });
            each(d.oidc_codes, [&](std::string_view k, std::string_view v) { to.put_oidc_code(decode_oidc_code(k, v)); });
            each(d.oidc_families, [&](std::string_view k, std::string_view v) { to.put_oidc_family(decode_oidc_family(k, v)); });
            each(d.oidc_access, [&](std::string_view k, std::string_view v) {
                to.put_oidc_access_token(decode_oidc_access(k, v));
            });
            each(d.oidc_refresh, [&](std::string_view k, std::string_view v) {
                to.put_oidc_refresh_token(decode_oidc_refresh(k, v));
            });
            each(d.oidc_consents, [&](std::string_view k, std::string_view v) { to.put_oidc_consent(decode_oidc_consent(k, v)); });
            each(d.spent_challenges, [&](std::string_view k, std::string_view v) {
                if (v.size() != 8) corrupt("spent_challenges: bad value");
                to.spend_challenge(k, static_cast<Millis>(get_be64(reinterpret_cast<const unsigned char *>(v.data()))));
            });
        } catch (...) {
            mdb_txn_abort(txn);
            throw;
        }
        mdb_txn_abort(txn);
    }

    StoreTraits traits() const override { return backends::kLmdb; }
    std::size_t audit_bound() const override { return env_.audit_max; }
    Space space() const override {
        MDB_envinfo info{};
        MDB_stat st{};
        Space s;
        if (mdb_env_info(env_.env, &info) == 0 && mdb_env_stat(env_.env, &st) == 0) {
            s.map_bytes = info.me_mapsize;
            s.used_bytes = static_cast<std::uint64_t>(info.me_last_pgno + 1) * st.ms_psize;
        }
        return s;
    }

    std::unique_ptr<ReadTxn> read() override {
        MDB_txn *txn = idle_reads_.take();
        if (txn == nullptr) txn = begin_txn(env_.env, MDB_RDONLY);
        try {
            return std::make_unique<LmdbReadTxn>(env_, txn, idle_reads_);
        } catch (...) {
            mdb_txn_abort(txn);
            throw;
        }
    }

    std::unique_ptr<WriteTxn> write() override {
        // inside batch() on this thread: the batch's transaction, or a nested one of it
        const bool in_batch = t_batch.env == env_.env;
        if (in_batch && t_batch.flat) {
            auto flat = std::make_unique<LmdbWriteTxn>(env_, t_batch.txn, WriteMode::Flat, &t_batch.spoiled);
            flat->follow(audit_hook());
            return flat;
        }
        MDB_txn *txn = begin_txn(env_.env, 0, in_batch ? t_batch.txn : nullptr);
        try {
            auto w = std::make_unique<LmdbWriteTxn>(env_, txn, in_batch ? WriteMode::Nested : WriteMode::TopLevel);
            w->follow(audit_hook());
            return w;
        } catch (...) {
            mdb_txn_abort(txn);
            throw;
        }
    }

    // First every write() of the batch is the batch's own transaction (no nested one: LMDB
    // allocates a nested transaction megabytes of page lists and merges its pages into the
    // parent's on commit, time and heap for every job). That is only right while no
    // write() is abandoned after it wrote, the one thing a nested transaction is for: if one is
    // (the batch is spoiled), or the commit fails, nothing of that run is kept and fn runs again
    // with a nested transaction per write(), which is what decides.
    void batch(const std::function<void()> &fn) override {
        if (t_batch.txn != nullptr) {  // already in a batch on this thread
            fn();
            return;
        }
        if (!run_batch(fn, true)) run_batch(fn, false);
    }

private:
    struct BatchSlot {
        MDB_env *env = nullptr;
        MDB_txn *txn = nullptr;
        bool flat = false;
        bool spoiled = false;
    };
    static thread_local BatchSlot t_batch;

    // One run of a batch; false (and nothing written) when a flat run must run again.
    bool run_batch(const std::function<void()> &fn, bool flat) {
        MDB_txn *txn = begin_txn(env_.env, 0);
        t_batch = {env_.env, txn, flat, false};
        try {
            fn();
        } catch (...) {
            t_batch = {};
            mdb_txn_abort(txn);
            throw;
        }
        const bool spoiled = t_batch.spoiled;
        t_batch = {};
        if (spoiled) {
            mdb_txn_abort(txn);
            return false;
        }
        const int rc = mdb_txn_commit(txn);  // frees the transaction, whatever it returns
        if (rc != 0 && flat) return false;   // e.g. a failed read left it unusable: the nested run says
        check(env_.env, rc, "commit");
        durable(env_.env);
        return true;
    }

    void open_tables();
    void fill_user_search(MDB_txn *txn);
    Env env_;
    IdleReads idle_reads_;
};

thread_local LmdbStore::BatchSlot LmdbStore::t_batch;

// mkdir -p with mode 0700 for every directory it creates.
void make_dirs(const std::string &path) {
    if (path.empty()) throw StoreError(Code::StorageError, "the store path is empty");
    for (std::size_t pos = 1;; ++pos) {
        pos = path.find('/', pos);
        std::string part = path.substr(0, pos);
        if (mkdir(part.c_str(), 0700) != 0 && errno != EEXIST)
            throw StoreError(Code::StorageError,
                             "cannot create the store directory " + part + ": " + std::strerror(errno));
        if (pos == std::string::npos) break;
    }
}

LmdbStore::LmdbStore(const LmdbOptions &opts) {
    if (sodium_init() < 0) throw StoreError(Code::StorageError, "libsodium failed to initialize");
    make_dirs(opts.path);
    check(nullptr, mdb_env_create(&env_.env), "create the LMDB environment");
    try {
        MDB_env *e = env_.env;
        check(e, mdb_env_set_mapsize(e, opts.map_size), "set the map size");
        check(e, mdb_env_set_maxreaders(e, opts.max_readers), "set the reader count");
        check(e, mdb_env_set_maxdbs(e, 32), "set the table count");
        // Never MDB_NOSYNC. MDB_NOMETASYNC with durable() after each commit: a commit is durable
        // when it returns (nothing acknowledged is lost), its last flush outside the write lock (see the top).
        check(e, mdb_env_open(e, opts.path.c_str(), MDB_NOTLS | MDB_NOMETASYNC, 0600),
              "open the store at " + opts.path);
        int dead = 0;
        check(e, mdb_reader_check(e, &dead), "clear stale readers");
        MDB_envinfo info{};
        check(e, mdb_env_info(e, &info), "read the map size");  // the file's, where it is larger
        env_.audit_max = opts.audit_max != 0 ? opts.audit_max : info.me_mapsize / kMapBytesPerAuditEntry;
        open_tables();
    } catch (...) {
        mdb_env_close(env_.env);
        env_.env = nullptr;
        throw;
    }
}

// A store made before the search index has its entries written once, from every user, in the
// transaction that opens the tables; the meta key says it was done.
void LmdbStore::fill_user_search(MDB_txn *txn) {
    MDB_env *e = env_.env;
    const Dbis &d = env_.dbi;
    MDB_val k = val(kUserSearchKey), v{};
    int rc = mdb_get(txn, d.meta, &k, &v);
    if (rc == 0) return;
    if (rc != MDB_NOTFOUND) check(e, rc, "read the search index's state");
    Cursor c(e, txn, d.users);
    MDB_val uk{}, ud{};
    for (rc = mdb_cursor_get(c.get(), &uk, &ud, MDB_FIRST); rc != MDB_NOTFOUND;
         rc = mdb_cursor_get(c.get(), &uk, &ud, MDB_NEXT)) {
        check(e, rc, "read users for the search index");
        const User u = decode_user(view(ud));
        for (const auto &key : user_index_keys(u)) {
            MDB_val ik = val(key), none{};
            check(e, mdb_put(txn, d.user_search, &ik, &none, 0), "fill the search index");
        }
    }
    MDB_val done = val("1");
    check(e, mdb_put(txn, d.meta, &k, &done, 0), "write the search index's state");
}

void LmdbStore::open_tables() {
    MDB_env *e = env_.env;
    MDB_txn *txn = begin_txn(e, 0);
    try {
        auto open = [&](const char *name, unsigned flags, MDB_dbi &dbi) {
            check(e, mdb_dbi_open(txn, name, flags | MDB_CREATE, &dbi),
                  std::string("open table ") + name);
        };
        Dbis &d = env_.dbi;
        open("meta", 0, d.meta);
        open("users", 0, d.users);
        open("user_email", 0, d.user_email);
        open("tokens", 0, d.tokens);
        open("addr_tokens", MDB_DUPSORT, d.addr_tokens);
        open("sessions", 0, d.sessions);
        open("session_ids", 0, d.session_ids);
        open("user_sessions", MDB_DUPSORT, d.user_sessions);
        open("audit", 0, d.audit);
        open("outbox", 0, d.outbox);  // added without a schema change: a new table, created empty
        open("mfa", 0, d.mfa);                  // the same
        open("mfa_pending", 0, d.mfa_pending);  // the same
        open("browser_sessions", MDB_DUPSORT, d.browser_sessions);  // the same
        open("passkeys", 0, d.passkeys);                              // the same
        open("user_passkeys", MDB_DUPSORT, d.user_passkeys);          // the same
        open("spent_challenges", 0, d.spent_challenges);              // the same
        open("provider_links", 0, d.provider_links);                  // the same
        open("user_provider_links", MDB_DUPSORT, d.user_provider_links);  // the same
        open("counters", 0, d.counters);                                  // the same
        open("events", 0, d.events);                                      // the same
        open("user_search", 0, d.user_search);                            // the same, then filled
        open("oidc_codes", 0, d.oidc_codes);                              // the same
        open("oidc_access", 0, d.oidc_access);                            // the same
        open("oidc_refresh", 0, d.oidc_refresh);                          // the same
        open("oidc_families", 0, d.oidc_families);                        // the same
        open("oidc_family_tokens", MDB_DUPSORT, d.oidc_family_tokens);    // the same
        open("user_oidc_families", MDB_DUPSORT, d.user_oidc_families);    // the same
        open("oidc_consents", 0, d.oidc_consents);                        // the same

        MDB_val k = val(kSchemaKey), v{};
        int rc = mdb_get(txn, d.meta, &k, &v);
        std::string mine = std::to_string(kSchemaVersion);
        if (rc == MDB_NOTFOUND) {
            MDB_val nv = val(mine);
            check(e, mdb_put(txn, d.meta, &k, &nv, 0), "write the schema version");
        } else {
            check(e, rc, "read the schema version");
            if (view(v) != mine)
                throw StoreError(Code::StorageError, "store schema version " + std::string(view(v)) +
                                                         ", this build reads " + mine);
        }
        fill_user_search(txn);
    } catch (...) {
        mdb_txn_abort(txn);
        throw;
    }
    check(e, mdb_txn_commit(txn), "commit the table setup");
    durable(e);
}

}  // namespace

std::unique_ptr<Store> open_lmdb_store(const LmdbOptions &opts) {
    return std::make_unique<LmdbStore>(opts);
}

namespace {
[[noreturn]] void prepare_failed(const char *what, const std::string &path) {
    const int err = errno;
    throw StoreError(Code::StorageError, std::string(what) + " \"" + path + "\" failed (" + std::to_string(err) +
                                             ": " + std::strerror(err) + ")");
}
}  // namespace

// The directory is the owner's alone (0700); one made on the way to it must let every user
// through (0755, whatever the umask), as the owner may not be the one who makes it. The files are
// those mdb_env_open makes: given now when they exist (a store opened before), or made by the
// owner itself.
void backends::prepare_lmdb(const std::string &where, std::optional<unsigned> owner) {
    std::string path = where;
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    for (std::size_t i = 1; i <= path.size(); i++) {
        if (i != path.size() && path[i] != '/') continue;
        const std::string part = path.substr(0, i);
        const bool store = i == path.size();
        if (mkdir(part.c_str(), store ? 0700 : 0755) == 0) {
            if (!store && chmod(part.c_str(), 0755) != 0) prepare_failed("chmod", part);
        } else if (errno != EEXIST) {
            prepare_failed("mkdir", part);
        }
    }
    if (!owner) return;
    for (const char *f : {"", "/data.mdb", "/lock.mdb"}) {
        const std::string p = path + f;
        if (chown(p.c_str(), static_cast<uid_t>(*owner), static_cast<gid_t>(-1)) != 0 && errno != ENOENT) {
            prepare_failed("chown", p);
        }
    }
}

}  // namespace signin
