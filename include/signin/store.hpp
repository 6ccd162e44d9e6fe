// The one persistence interface of the engine. Two backends implement it (src/store): files in a
// directory of this machine (LMDB, the default), and a PostgreSQL database that several nginx nodes
// share. The engine and the nginx glue never ask which one they run on: what they plan by is a
// property of the store (StoreTraits), and open_store is the one place a backend is chosen.
//
// Every method may throw signin::StoreError; the engine maps it to a Code at its API boundary.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "signin/oidc_provider.hpp"
#include "signin/types.hpp"

namespace signin {

class StoreError : public std::runtime_error {
public:
    StoreError(Code code, const std::string &what, bool retry = false)
        : std::runtime_error(what), code_(code), retry_(retry) {}
    Code code() const { return code_; }
    // The transaction lost a race with another one (a serialization failure of a database that
    // runs transactions as if one after the other): running it again from the start may succeed.
    bool retry() const { return retry_; }

private:
    Code code_;  // StorageFull or StorageError
    bool retry_;
};

// One email waiting to be delivered, and sent again after a failure (signin_delivery_retries). The delivery itself,
// token included, is sealed by the engine with a key that is not in the store: the store never
// holds a usable token in clear.
struct OutboxRecord {
    std::string key;          // 16 bytes: due_at (8 bytes BE ms) + 8 random bytes; set by put_outbox
    Millis due_at = 0;        // when a worker may (re)send it: a sender holds it until then
    Millis created_at = 0;
    std::uint32_t attempts = 0;  // failed or abandoned sends so far
    std::string token_hash;   // the token it carries (cancelled when the delivery is given up); empty for a notice
    std::string client;       // who asked, for the audit entry of a failure
    std::string sealed;       // the sealed Delivery
    // When its holder sends it next (the first send: when it was written; after a failure: then
    // plus the backoff). due_at is later by the hold: when another sender may take it over.
    Millis next_try_at = 0;
    // Why the last send failed, as the relay or the mail API said it (a reply code and its text;
    // never a password, code or token); empty before any failure.
    std::string last_error;
};

// One event for the application (signin_events), waiting to be sent: written in the transaction
// of the change it reports, sent apart from it, tried again after a failure, dropped after
// signin_events_retries. Nothing secret: the body is what the application is sent.
struct EventRecord {
    // 8 bytes: a big-endian sequence number, set by put_event; the events' order (a user's events
    // are sent in this order). A store may start again from 1 once no event waits.
    std::string key;
    std::string id;           // the webhook-id: the same at every try
    std::string type;         // "user.created", ...
    std::string user_id;      // whose events wait for this one
    std::string body;         // the JSON sent
    Millis created_at = 0;
    // When a sender may send it: at once when written; after a failure, then plus the backoff;
    // while a sender holds it, when another may take it over.
    Millis due_at = 0;
    std::uint32_t attempts = 0;  // sends started
    std::string last_error;      // why the last send failed (a status; no body); empty before any
};

// What a sender needs of a waiting event to choose which to send (EventRecord's fields); its
// views are valid only during the call that gives it.
struct EventHead {
    std::string_view key;
    std::string_view user_id;
    Millis due_at = 0;
    std::uint32_t attempts = 0;
};

// What an audit entry does not say and an event does (signin_events): the way in of a new
// session, whether it passed a second factor and the browser's User-Agent; why a session ended.
struct EventFacts {
    std::string_view session_id;
    std::string_view method;
    std::string_view user_agent;
    std::string_view reason;
    bool mfa = false;
};

// The index that finds accounts for an administrator (signin_admin) without reading them all:
// entries written with the user in the same transaction, by both stores, ordered bytewise. Each
// is a tag byte, a value, '\0' and the user id:
//   'e' the address (lower case)       'd' the domain of the address (lower case)
//   'r' a role                          's' the state: "active", "pending" or "suspended"
// A search takes the entries under a prefix (tag and the start of a value) in order, and goes on
// after the last one it saw: the cursor of a page.
std::vector<std::string> user_index_keys(const User &u);
// "active", "pending" or "suspended" (a suspension counts before a pending invitation). Defined in
// the core (src/core/types.cpp): the admin views and this index share it.
std::string_view user_state(const User &u);

class WriteTxn;

// The API version pinned to an account (api_versions_pin signin), kept on its user record: its
// requests that name no version are answered in it. Sets the pin of `user_id` to `name` in
// `txn` ("" clears it); with `first_use` a pin already there stays (the account's first
// versioned request pins the version it was answered in, and two such requests at once keep the
// first). Returns the pin the account has afterwards, or nullopt when there is no such user. The
// record is written only when the pin changes; nothing else of it changes (not updated_at: the
// pin is the gateway's note, not the person's change). The caller commits.
std::optional<std::string> pin_api_version(WriteTxn &txn, std::string_view user_id, std::string_view name,
                                           bool first_use);
// Whether `name` may be a pin: what a version block's name may be (1 to 64 printable ASCII
// characters, none of space, '/', '"', '\\' or ',').
bool valid_api_version_name(std::string_view name);

// Called with every audit entry a write transaction appends (and the events noted without one),
// in that transaction: what turns changes into events (signin_events).
using AuditHook = std::function<void(WriteTxn &, const AuditEntry &, const EventFacts &)>;

// What a request reads. LMDB: one consistent snapshot; PostgreSQL: each read sees every commit made
// before it (decisions that must hold are made in a WriteTxn). Values are copied out; nothing
// refers into the store after a call.
class ReadTxn {
public:
    virtual ~ReadTxn() = default;
    virtual std::optional<User> user_by_id(std::string_view id) = 0;
    virtual std::optional<User> user_by_email(std::string_view group_id, std::string_view email) = 0;
    virtual std::optional<TokenRecord> token(std::string_view hash) = 0;
    // Every token recorded for an address, oldest first.
    virtual std::vector<TokenRecord> tokens_for(std::string_view group_id, std::string_view email) = 0;
    virtual std::optional<SessionRecord> session(std::string_view hash) = 0;
    // The session stored under `key` with its user, as authentication reads them on every
    // request; nullptr when either is missing. The default decodes them anew (session, then
    // user_by_id). A store that reads its records in place may hand back, instead, a principal it
    // decoded before from exactly the bytes both records still hold (LMDB keeps one memo of them
    // per thread): nothing it hands back is ever stale.
    virtual std::shared_ptr<const Principal> principal(std::string_view key);
    // principal() for several keys, in their order (nullptr where principal() would give it).
    // The default asks for each in turn; a store whose reads are round trips to a server asks for
    // them together (PostgreSQL: one statement, one wait for the server instead of one each).
    virtual std::vector<std::shared_ptr<const Principal>> principals(const std::vector<std::string_view> &keys);
    virtual std::optional<SessionRecord> session_by_id(std::string_view id) = 0;
    virtual std::vector<SessionRecord> sessions_of(std::string_view user_id) = 0;
    // The cookie sessions made in one browser (several accounts signed in side by side), by the
    // digest of its browser cookie.
    virtual std::vector<SessionRecord> sessions_of_browser(std::string_view browser) = 0;
    // The newest `limit` audit entries, newest first.
    virtual std::vector<AuditEntry> audit(std::size_t limit) = 0;
    virtual std::size_t user_count() = 0;
    // Users in id order (ids are UUIDv7: creation order), after `after_id` (exclusive; "" = from
    // the first), at most `limit`.
    virtual std::vector<User> users(std::string_view after_id, std::size_t limit) = 0;
    virtual std::size_t audit_count() = 0;
    // Keys of the user search index (user_index_keys) that start with `prefix`, in order, after
    // `after` (exclusive; "" = from the first), at most `limit`.
    virtual std::vector<std::string> user_index(std::string_view prefix, std::string_view after,
                                                std::size_t limit) = 0;
    // Records per table, expired ones not yet purged included (signin-admin stats).
    struct Counts {
        std::size_t users = 0, tokens = 0, sessions = 0, passkeys = 0, audit = 0, outbox = 0, provider_links = 0,
                    events = 0;
        // Entries of the index of tokens by address: one per token, and on LMDB also those of
        // deleted tokens that the address's next token or the purge has not removed yet.
        std::size_t token_index = 0;
    };
    virtual Counts counts() = 0;
    // Outbox entries whose due_at is at or before `now`, earliest first, at most `limit`.
    virtual std::vector<OutboxRecord> outbox_due(Millis now, std::size_t limit) = 0;
    virtual std::optional<OutboxRecord> outbox(std::string_view key) = 0;
    virtual std::size_t outbox_count() = 0;
    // Events waiting (EventRecord), in key order, at most `limit`; one by its key; how many.
    virtual std::vector<EventRecord> events(std::size_t limit) = 0;
    // The same, only what a sender chooses by (EventHead), nothing copied: each to `visit` in key
    // order, at most `limit`, until it returns false (the rest is not read).
    virtual void event_heads(std::size_t limit, const std::function<bool(const EventHead &)> &visit) = 0;
    virtual std::optional<EventRecord> event(std::string_view key) = 0;
    virtual std::size_t event_count() = 0;
    // A user's second factors; nullopt when the user never had one.
    virtual std::optional<MfaRecord> mfa(std::string_view user_id) = 0;
    virtual std::optional<MfaPendingRecord> mfa_pending(std::string_view hash) = 0;
    // Passkeys (WebAuthn credentials), by the digest of the credential id, and a user's.
    virtual std::optional<PasskeyRecord> passkey(std::string_view key) = 0;
    virtual std::vector<PasskeyRecord> passkeys_of(std::string_view user_id) = 0;
    // Whether a WebAuthn challenge (by its digest) was spent.
    virtual bool challenge_spent(std::string_view hash) = 0;
    // Identities at OpenID Connect providers, by the digest of (issuer, subject), and a user's.
    virtual std::optional<ProviderLinkRecord> provider_link(std::string_view key) = 0;
    virtual std::vector<ProviderLinkRecord> provider_links_of(std::string_view user_id) = 0;
    // A limit's counter (StoreAttemptLimiter: password attempts counted across nginx nodes): its
    // state as the limiter wrote it, or nullopt.
    virtual std::optional<std::string> counter(std::string_view key) = 0;

    // The OpenID provider's grants (oidc_provider.hpp). Codes, access tokens and refresh tokens
    // are found by the record_key of the secret handed out (never the secret), families by their
    // id, consents by user and client. A spent code is only what revoking its grant needs: its
    // client, user, times, and the family and access token it gave.
    virtual std::optional<op::CodeRecord> oidc_code(std::string_view key) = 0;
    virtual std::optional<op::AccessTokenRecord> oidc_access_token(std::string_view key) = 0;
    virtual std::optional<op::RefreshTokenRecord> oidc_refresh_token(std::string_view key) = 0;
    virtual std::optional<op::RefreshFamily> oidc_family(std::string_view id) = 0;
    virtual std::optional<op::ConsentRecord> oidc_consent(std::string_view user_id, std::string_view client_id) = 0;
    // A person's consents, by client id.
    virtual std::vector<op::ConsentRecord> oidc_consents_of(std::string_view user_id) = 0;
};

// One atomic, serialized write. Destroying it without commit() aborts it.
class WriteTxn : public ReadTxn {
public:
    // Called before the transaction's first read or write: transactions that name the same key run
    // one after the other, each seeing what the one before it committed, instead of racing and
    // running again (what a token request does with its address's tokens). PostgreSQL: a session
    // advisory lock on a digest of the key, taken before BEGIN (so the snapshot follows the
    // previous holder's COMMIT) and given back when the transaction ends. LMDB runs one write
    // transaction at a time anyway: nothing to do.
    virtual void serialize_on(std::string_view key) { (void)key; }
    // Inserts or replaces a user and its (group, email) index entry (none for a user without an
    // address: an account made by a provider that gave none).
    virtual void put_user(const User &u) = 0;
    // put_user for an account made now, whose id no account has had (a fresh uuid7): nothing
    // stored under that id needs replacing, which spares a store that reads before it writes
    // (PostgreSQL: the old record, for its index entries) a round trip.
    virtual void add_user(const User &u) { put_user(u); }
    // Deletes a user and its (group, email) index entry (when it still names this user).
    virtual void del_user(std::string_view user_id) = 0;
    virtual void put_token(const TokenRecord &t) = 0;
    virtual void del_token(std::string_view hash) = 0;
    // Deletes a token and, at once, whatever of its address the store keeps to find it: for a
    // token that a request nobody signed in to wrote and took back, which must leave nothing
    // behind (del_token may leave the address's index entry for later).
    virtual void discard_token(const TokenRecord &t) { del_token(t.hash); }
    virtual void put_session(const SessionRecord &s) = 0;
    virtual void del_session(std::string_view hash) = 0;
    // Writes an audit entry, then tells the store's audit hook (if any) in this transaction.
    void append_audit(const AuditEntry &e, const EventFacts &facts = {}) {
        write_audit(e);
        if (hook_) (*hook_)(*this, e, facts);
    }
    // Tells the audit hook of a change that has no audit entry of its own (the sessions a
    // password change ends): `e` is not written.
    void note_event(const AuditEntry &e, const EventFacts &facts = {}) {
        if (hook_) (*hook_)(*this, e, facts);
    }
    // The hook this transaction tells (Store::write sets the store's).
    void follow(std::shared_ptr<const AuditHook> hook) { hook_ = std::move(hook); }
    // Runs `f` once this transaction's writes are kept: when its commit() returns, or for one
    // inside a batch (Store::batch) when they are kept in the batch (whose own commit may still
    // fail: the batch's caller knows). Never for a transaction abandoned.
    void on_commit(std::function<void()> f) { on_commit_.push_back(std::move(f)); }
    // Writes r under the next key of the events' sequence, stored into r.key.
    virtual void put_event(EventRecord &r) = 0;
    // Whether no other transaction writes an event from this one's start to its end, and this one
    // sees every event written before it: then the events it writes may be held by their writer
    // (events.hpp, FreshEvents). LMDB: one write transaction at a time. PostgreSQL: a write
    // batch that holds the events' lock, which every other writer of an event waits for.
    virtual bool alone_with_events() const { return false; }
    // Rewrites an event under its key (a send's result).
    virtual void update_event(const EventRecord &r) = 0;
    virtual void del_event(std::string_view key) = 0;
    // Deletes the event under `key` if it is still the one of webhook-id `id` (a sequence may
    // reuse a key once no event waits); whether it did. A store may do it without reading the
    // whole record.
    virtual bool del_event_if(std::string_view key, std::string_view id) {
        auto r = event(key);
        if (!r || r->id != id) return false;
        del_event(key);
        return true;
    }
    // Writes r under a fresh key made from r.due_at, stored into r.key.
    virtual void put_outbox(OutboxRecord &r) = 0;
    virtual void del_outbox(std::string_view key) = 0;
    virtual void put_mfa(const MfaRecord &m) = 0;
    virtual void del_mfa(std::string_view user_id) = 0;
    virtual void put_mfa_pending(const MfaPendingRecord &p) = 0;
    virtual void del_mfa_pending(std::string_view hash) = 0;
    // Deletes every pending second-factor step of a user (a scan: they live 5 minutes); returns how many.
    virtual std::size_t del_mfa_pending_of(std::string_view user_id) = 0;
    virtual void put_passkey(const PasskeyRecord &p) = 0;
    virtual void del_passkey(std::string_view key) = 0;
    virtual void put_provider_link(const ProviderLinkRecord &l) = 0;
    virtual void del_provider_link(std::string_view key) = 0;
    // Marks a challenge spent until it would have expired anyway (the purge takes it then).
    virtual void spend_challenge(std::string_view hash, Millis expires_at) = 0;
    // A limit's counter, kept until expires_at (the purge takes it then); deleting one, or every
    // counter whose key starts with `prefix` (returns how many).
    virtual void put_counter(std::string_view key, std::string_view state, Millis expires_at) = 0;
    virtual void del_counter(std::string_view key) = 0;
    virtual std::size_t del_counters(std::string_view prefix) = 0;
    // The OpenID provider's grants. A code is written live; spent (c.spent) only what
    // ReadTxn::oidc_code says a spent code keeps is written, whatever else `c` holds (what it
    // gave, so that a second use can revoke that), until it would have expired. The token
    // endpoint reads a code in its write transaction and writes it back spent once, with what it
    // gave: of two transactions that both read it live, one commits; on PostgreSQL the other
    // loses the race (StoreError::retry) and finds it spent when run again, and on LMDB there is
    // one writer at a time.
    virtual void put_oidc_code(const op::CodeRecord &c) = 0;
    virtual void put_oidc_access_token(const op::AccessTokenRecord &a) = 0;
    virtual void del_oidc_access_token(std::string_view key) = 0;
    // A family as op::use_refresh leaves it: a rotation writes the family (its generation moved
    // on, which makes the token just used an old one) and the next token, in one transaction.
    virtual void put_oidc_family(const op::RefreshFamily &f) = 0;
    virtual void put_oidc_refresh_token(const op::RefreshTokenRecord &r) = 0;
    // Ends a family (a token of it came back twice, was revoked, or its code was reused): the
    // family is kept, revoked, until it would have expired, and every refresh and access token
    // it gave is deleted. Nothing happens for an id that names no family.
    virtual void end_oidc_family(std::string_view id) = 0;
    virtual void put_oidc_consent(const op::ConsentRecord &c) = 0;
    virtual void del_oidc_consent(std::string_view user_id, std::string_view client_id) = 0;
    // Deletes every grant of a user (codes, access tokens, families with their refresh tokens,
    // consents): the account goes. Returns how many records.
    virtual std::size_t del_oidc_of(std::string_view user_id) = 0;
    // Deletes expired tokens, sessions, pending second-factor steps, spent challenges, counters
    // and the provider's codes, access tokens, refresh tokens and families (at most `budget`
    // records); returns how many. What is left of the budget goes to purge_index.
    virtual std::size_t purge_expired(Millis now, std::size_t budget) = 0;
    // Deletes index entries whose record is gone (at most `budget`); returns how many. LMDB's
    // per-address token entries are left by an exchange for this (the exchange then dirties no
    // page of that table); PostgreSQL has no such entries.
    virtual std::size_t purge_index(std::size_t budget) = 0;
    // Deletes audit entries recorded before `before`, oldest first (at most `budget`); returns how many.
    virtual std::size_t purge_audit(Millis before, std::size_t budget) = 0;
    // Deletes the oldest audit entries beyond the newest `keep` (at most `budget`); returns how many.
    virtual std::size_t trim_audit(std::size_t keep, std::size_t budget) = 0;
    // Durable when it returns (the backend's strongest setting).
    virtual void commit() = 0;

protected:
    virtual void write_audit(const AuditEntry &e) = 0;
    // What a backend's commit() calls once the writes are kept (on_commit).
    void committed() {
        auto fs = std::move(on_commit_);
        on_commit_.clear();
        for (auto &f : fs) f();
    }

private:
    std::shared_ptr<const AuditHook> hook_;
    std::vector<std::function<void()>> on_commit_;
};

// What a caller plans by, as properties of a store rather than the name of its backend. The same
// whether asked of where a store is (store_traits, before anything opens it: configuration
// checks, the preparation before workers start) or of the open store (Store::traits).
struct StoreTraits {
    // A read may wait on another machine (a database over the network), for as long as that
    // machine takes: a thread that must never stall, such as an event loop serving many requests,
    // has its reads made elsewhere. False: a read is a look into this process's memory, quick
    // enough for any thread.
    bool reads_may_block = false;
    // Several machines use the store at once. What every one of them must see alike is kept in
    // the store (request and password-attempt limits) or given to each of them (the key that
    // seals what the store keeps), not made or counted by one machine for itself.
    bool shared_by_nodes = false;
    // The store is files in a directory of this machine, which `where` names: a path (relative to
    // a prefix when not absolute) that may be given the most the files may grow to (map_size);
    // the directory is made and handed to the user the store's processes run as before they
    // start (prepare_store), so that user must be able to reach it; other files (a key) may sit
    // beside it.
    bool in_directory = false;
};

// The session reads of one event loop, over a connection of their own that nothing waits on
// (PostgreSQL: a libpq connection in non-blocking mode): the loop sends the record keys of the
// sessions its requests name, watches socket(), and takes the principals when they have come,
// while it serves everything else. One read at a time; the keys that arrive meanwhile go
// together in the next. Only connect() waits, and so belongs in a thread that may.
class SessionReader {
public:
    virtual ~SessionReader() = default;
    // Opens the connection (closed first if open), ready for send(); throws StoreError.
    virtual void connect() = 0;
    // The connection's socket, for the loop to watch; -1 while there is none.
    virtual int socket() const = 0;
    // A read was sent and its answer has not been taken (receive).
    virtual bool busy() const = 0;
    // Sends the read of these record keys' principals (ReadTxn::principals: the same answers, in
    // the same order); only when connected and not busy. Throws StoreError when it could not (the
    // connection is then closed).
    virtual void send(const std::vector<std::string_view> &keys) = 0;
    // Some of what send() gave is still to go out: flush() once the socket is writable.
    virtual bool wants_write() const = 0;
    virtual void flush() = 0;
    // Takes what the socket brought, once it is readable: the principals of the keys sent when the
    // whole answer is in, nullopt before (or when nothing was sent). Throws StoreError when the
    // read failed or the connection broke (it is then closed).
    virtual std::optional<std::vector<std::shared_ptr<const Principal>>> receive() = 0;
    // Closes the connection (socket() is -1 after); connect() may open another.
    virtual void close() = 0;
};

class Store {
public:
    virtual ~Store() = default;
    virtual std::unique_ptr<ReadTxn> read() = 0;
    virtual std::unique_ptr<WriteTxn> write() = 0;
    // What this store is, for a caller that plans by it (StoreTraits).
    virtual StoreTraits traits() const = 0;

    // Group commit: runs fn, during which every write() on this thread is part of one batch
    // (its commit() keeps its writes in the batch, its abort leaves the rest of the batch
    // alone), and makes the whole batch durable with one commit when fn returns. Throws
    // StoreError if that commit fails. A backend without nested transactions runs fn with plain
    // ones. fn may be run twice (LMDB: when a write() was abandoned after writing, the first run
    // is undone whole and the second decides), so it must redo the same work from the start
    // and keep only what its last run gives.
    virtual void batch(const std::function<void()> &fn) { fn(); }
    // Inside batch(): reads the tokens stored under these record keys (and their legacy forms),
    // and the accounts of their addresses, ahead and together, so that the batch's writes that
    // read them (a token exchanged) find them without a round trip each. What a write of the batch
    // changes is read from the store again. A store whose reads are memory reads does nothing.
    virtual void read_tokens_ahead(const std::vector<std::string> &keys) { (void)keys; }
    // A reader of sessions for an event loop (SessionReader), not yet connected; nullptr from a
    // store whose reads are memory reads (nothing to wait for: read() serves any thread).
    virtual std::unique_ptr<SessionReader> session_reader() const { return nullptr; }

    // The most audit entries the store keeps (signin_audit_max; 0: no bound): anyone can add
    // entries, so the trail is bounded in size as well as in age, and a flood of them never
    // takes the room that sign-ins need. The purge brings the trail back to it (trim_audit); an
    // LMDB store also holds to it as entries are written.
    virtual std::size_t audit_bound() const { return 0; }
    // How much of the store is used (the file's pages in use) and its mapped size (signin_metrics).
    struct Space {
        std::uint64_t used_bytes = 0;
        std::uint64_t map_bytes = 0;
    };
    virtual Space space() const { return {}; }
    // A consistent copy of the whole store into a new file (signin-admin backup), while others
    // read and write; throws StoreError. The file is the backend's own format (LMDB: a data.mdb).
    virtual void backup(const std::string &file) const = 0;
    // Every record decoded and every index checked against what it indexes (signin-admin check):
    // the problems found, none when the store is sound.
    virtual std::vector<std::string> check_integrity() const = 0;
    // Writes every record of this store through `to` (signin-admin copy: an LMDB store into
    // PostgreSQL). Audit and outbox entries get fresh keys with the same times.
    virtual void copy_into(WriteTxn &to) const = 0;

    // What every write transaction opened after this tells of its audit entries (nullptr: nothing).
    void set_audit_hook(std::shared_ptr<const AuditHook> hook) { audit_hook_ = std::move(hook); }
    const std::shared_ptr<const AuditHook> &audit_hook() const { return audit_hook_; }

private:
    std::shared_ptr<const AuditHook> audit_hook_;
};

// Where a store is and how to open it: what signin_store (and signin-admin --store) say.
struct StoreOptions {
    // A PostgreSQL connection URI (postgresql://... or postgres://...), or else a directory.
    std::string where;
    // A store in a directory: the most its file may grow to, in bytes (0: 1 GiB).
    std::size_t map_size = 0;
    // The most audit entries kept (0: the store's own bound, see LmdbOptions and PgOptions).
    std::size_t audit_max = 0;
    // A database that cannot be reached at open is not an error: transactions fail with
    // StorageError until it is back (see PgOptions).
    bool wait_for_server = false;
    // A database: the most connections this process holds (0: PgOptions' default).
    std::size_t connections = 0;
};

// What the store `where` names is, known without opening it.
StoreTraits store_traits(std::string_view where);

// Opens (creating if needed) the store `where` names: the one place a backend is chosen. Throws
// StoreError. Open it after fork, once per process.
std::unique_ptr<Store> open_store(const StoreOptions &opts);

// Readies the store `where` names for processes that will open it as another user, from a
// process that may do more (nginx's master, as root, before its workers start): a store in a
// directory has the directory made (with the directories above it, which others may search) and,
// when `owner` is given, the directory and its files given to that user. A database needs
// nothing. Throws StoreError saying what failed.
void prepare_store(std::string_view where, std::optional<unsigned> owner);

// How a log line names the store `where` names: the directory, or what kind of database it is
// (never the URI, which may hold a password).
std::string describe_store(std::string_view where);

// The two backends, each opened by itself (tests, and copying one store into another).
struct LmdbOptions {
    std::string path;                     // a directory; created if missing
    std::size_t map_size = 1ull << 30;    // bytes (the file grows sparsely up to this)
    unsigned max_readers = 256;
    // The most audit entries kept: past it each new entry takes the oldest one's place, so that
    // entries written by requests nobody signed in to (unknown addresses, failed exchanges) can
    // never fill the store. 0: one entry for each kMapBytesPerAuditEntry of the map (262 144 in
    // the default 1 GiB, about a tenth of it at the entries' usual size).
    std::size_t audit_max = 0;
};
inline constexpr std::size_t kMapBytesPerAuditEntry = 4096;

// Opens (creating if needed) an LMDB environment and its tables, checking the schema version.
// Throws StoreError. Open it after fork, once per process.
std::unique_ptr<Store> open_lmdb_store(const LmdbOptions &opts);

// A database that several nginx nodes share: a libpq connection string (a URI or key=value
// words). Transactions are SERIALIZABLE; one that loses a race throws StoreError with retry().
inline constexpr std::size_t kDefaultPgConnections = 8;
struct PgOptions {
    std::string conninfo;
    // The most connections this process holds open (made when needed, then kept for the next
    // transaction); a transaction that finds them all busy waits for one, up to 5 s.
    std::size_t connections = kDefaultPgConnections;
    // A server that cannot be reached at open is not an error: the schema is checked (and made)
    // by the first transaction that reaches it, and transactions fail with StorageError until
    // then (an nginx worker answers 503 and recovers by itself). A wrong schema still throws.
    bool wait_for_server = false;
    // The most audit entries kept, the purge taking the oldest beyond it (0: kDefaultPgAuditMax).
    std::size_t audit_max = 0;
};
inline constexpr std::size_t kDefaultPgAuditMax = 262144;  // as an LMDB store of the default 1 GiB

// Connects, creates or migrates the schema (tables named signin_*), and checks its version.
// Throws StoreError. Connections are made per transaction from a small pool of idle ones, so the
// store may be opened before fork only if nothing uses it there.
std::unique_ptr<Store> open_pg_store(const PgOptions &opts);

// What a PostgreSQL server lets ordinary clients hold at once: max_connections less the ones
// reserved for superusers (and, from PostgreSQL 16, reserved_connections), asked over one short
// connection of its own. Throws StoreError when the server cannot be asked.
std::size_t pg_connection_limit(const std::string &conninfo);

// Whether a store's `where` names a PostgreSQL database (postgresql:// or postgres://).
inline bool is_pg_url(std::string_view s) {
    return s.substr(0, 13) == "postgresql://" || s.substr(0, 11) == "postgres://";
}

inline constexpr unsigned kSchemaVersion = 1;

}  // namespace signin
