// The PostgreSQL backend of signin::Store: several nginx nodes share one set of
// users, tokens and sessions.
//
// Layout: the records are the LMDB backend's (store/records.hpp: the same binary encoding, the
// same keys), one table per kind, with the columns the lookups need beside them, so that an index
// is an SQL index and not a second table to keep in step:
//   signin_meta          name -> value ("schema_version")
//   signin_users         id -> rec
//   signin_user_email    addr (group_id '\0' email) -> user_id   (as LMDB's user_email: the latest
//                        put_user of an address owns it)
//   signin_tokens        key -> addr, created_at, expires_at, rec
//   signin_sessions      key -> id, user_id, browser, expires_at, rec
//   signin_audit         key (at BE + 8 random bytes) -> at, rec (JSON text)
//   signin_outbox        key (due_at BE + 8 random bytes) -> due_at, rec
//   signin_events        key (int8send of signin_events_seq's next value: 8 bytes BE) -> rec
//   signin_mfa           user_id -> rec;  signin_mfa_pending  hash -> user_id, expires_at, rec
//   signin_passkeys      key -> user_id, rec;  signin_provider_links  key -> user_id, rec
//   signin_spent_challenges hash -> expires_at
//   signin_counters      key -> expires_at, state (password attempts counted across nodes)
//   signin_oidc_codes    key -> user_id, expires_at, rec    (the OpenID provider's grants)
//   signin_oidc_access   key -> user_id, family_id, expires_at, rec
//   signin_oidc_refresh  key -> family_id, expires_at, rec
//   signin_oidc_families id -> user_id, expires_at, rec
//   signin_oidc_consents key (user id '\0' client id) -> user_id, rec
// Keys and records are bytea (sent and read in binary), times bigint milliseconds.
//
// Transactions: a write is BEGIN ISOLATION LEVEL SERIALIZABLE ... COMMIT, so a check-and-spend
// (read a token, delete it, write a session) is one transaction that the database runs as if alone:
// of two nodes that race, one commits and the other gets a serialization failure (SQLSTATE 40001),
// thrown as StoreError with retry(), and runs again from the start (detail::guarded), finding the
// token gone. No SELECT ... FOR UPDATE. One advisory lock: a token request, or a code typed for an
// address, first waits for the others on the same address (WriteTxn::serialize_on: a session lock
// taken before BEGIN). 64 requests for one address at once had lost their races 10 times in a row
// about once in a thousand (a 503); they take turns instead. On a database whose advisory locks are
// stubs (CockroachDB's) they race and retry as before. commit() returns when COMMIT has: durable as
// the server's synchronous_commit says (on by default). A read (Store::read: what a request shows)
// runs each statement on its own, without BEGIN and ROLLBACK around them: each sees every commit
// made before it (READ COMMITTED), two statements need not see one snapshot (LMDB's reads do), and
// a GET /me is one round trip (the session read brings its user). Every decision that must hold
// against other nodes is made in a write transaction. The whole-store scans (check, copy) are one
// REPEATABLE READ snapshot.
//
// Write batches (Store::batch, a worker's waiting writes): one transaction for them all, one
// COMMIT, kept whole or run again with a transaction per write (PgStore::batch).
//
// Connections: a transaction takes an idle connection of this process or opens one, and gives
// it back when it ends (unless it broke). A process holds at most PgOptions::connections (the
// `connections=` of signin_store): connections are kept open once made (warm for the next
// transaction), and a transaction that finds them all busy waits for one (kConnectionWait), so
// that the database's max_connections can be planned for (nginx -t compares them). A thread that
// already holds one (a read beside a write, a write inside a batch) is never made to wait for a
// second: it takes one beyond the bound, so threads cannot wait on each other. Every statement is prepared at its first use on a
// connection; BEGIN, and the preparation, travel with a transaction's first statement (libpq's
// pipeline mode: one round trip). A session_reader (an event loop's session reads:
// PgSessionReader) has a connection of its own outside the pool, in non-blocking mode, one more
// for each process that makes one (nginx -t counts it).
// A server that is down or refuses writes (read-only, disk full) is a StoreError; the next
// transaction connects again: the store recovers by itself.
#include <libpq-fe.h>
#include <sodium.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "signin/store.hpp"
#include "backends.hpp"
#include "pg_merge.hpp"
#include "records.hpp"

namespace signin {
using namespace records;
namespace {

// ---- the statements ----------------------------------------------------------------------------

// The schema, version 1. Every statement is idempotent: nodes that start together all run it.
constexpr const char *kSchema[] = {
    "CREATE TABLE IF NOT EXISTS signin_meta (name text PRIMARY KEY, value text NOT NULL)",
    "CREATE TABLE IF NOT EXISTS signin_users (id bytea PRIMARY KEY, rec bytea NOT NULL)",
    "CREATE TABLE IF NOT EXISTS signin_user_email (addr bytea PRIMARY KEY, user_id bytea NOT NULL)",
    "CREATE TABLE IF NOT EXISTS signin_tokens (key bytea PRIMARY KEY, addr bytea NOT NULL, "
    "created_at bigint NOT NULL, expires_at bigint NOT NULL, rec bytea NOT NULL)",
    "CREATE INDEX IF NOT EXISTS signin_tokens_addr ON signin_tokens (addr, created_at)",
    "CREATE INDEX IF NOT EXISTS signin_tokens_expires ON signin_tokens (expires_at)",
    "CREATE TABLE IF NOT EXISTS signin_sessions (key bytea PRIMARY KEY, id bytea NOT NULL, "
    "user_id bytea NOT NULL, browser bytea NOT NULL, expires_at bigint NOT NULL, rec bytea NOT NULL)",
    "CREATE INDEX IF NOT EXISTS signin_sessions_id ON signin_sessions (id)",
    "CREATE INDEX IF NOT EXISTS signin_sessions_user ON signin_sessions (user_id)",
    "CREATE INDEX IF NOT EXISTS signin_sessions_browser ON signin_sessions (browser)",
    "CREATE INDEX IF NOT EXISTS signin_sessions_expires ON signin_sessions (expires_at)",
    "CREATE TABLE IF NOT EXISTS signin_audit (key bytea PRIMARY KEY, at bigint NOT NULL, rec bytea NOT NULL)",
    "CREATE TABLE IF NOT EXISTS signin_outbox (key bytea PRIMARY KEY, due_at bigint NOT NULL, rec bytea NOT NULL)",
    "CREATE TABLE IF NOT EXISTS signin_mfa (user_id bytea PRIMARY KEY, rec bytea NOT NULL)",
    "CREATE TABLE IF NOT EXISTS signin_mfa_pending (hash bytea PRIMARY KEY, user_id bytea NOT NULL, "
    "expires_at bigint NOT NULL, rec bytea NOT NULL)",
    "CREATE INDEX IF NOT EXISTS signin_mfa_pending_user ON signin_mfa_pending (user_id)",
    "CREATE TABLE IF NOT EXISTS signin_passkeys (key bytea PRIMARY KEY, user_id bytea NOT NULL, rec bytea NOT NULL)",
    "CREATE INDEX IF NOT EXISTS signin_passkeys_user ON signin_passkeys (user_id)",
    "CREATE TABLE IF NOT EXISTS signin_provider_links (key bytea PRIMARY KEY, user_id bytea NOT NULL, rec bytea NOT NULL)",
    "CREATE INDEX IF NOT EXISTS signin_provider_links_user ON signin_provider_links (user_id)",
    "CREATE TABLE IF NOT EXISTS signin_spent_challenges (hash bytea PRIMARY KEY, expires_at bigint NOT NULL)",
    "CREATE TABLE IF NOT EXISTS signin_counters (key bytea PRIMARY KEY, expires_at bigint NOT NULL, state bytea NOT NULL)",
    "CREATE SEQUENCE IF NOT EXISTS signin_events_seq",
    "CREATE TABLE IF NOT EXISTS signin_events (key bytea PRIMARY KEY, rec bytea NOT NULL)",
    "CREATE TABLE IF NOT EXISTS signin_user_search (key bytea PRIMARY KEY)",
    "CREATE TABLE IF NOT EXISTS signin_oidc_codes (key bytea PRIMARY KEY, user_id bytea NOT NULL, "
    "expires_at bigint NOT NULL, rec bytea NOT NULL)",
    "CREATE INDEX IF NOT EXISTS signin_oidc_codes_user ON signin_oidc_codes (user_id)",
    "CREATE INDEX IF NOT EXISTS signin_oidc_codes_expires ON signin_oidc_codes (expires_at)",
    "CREATE TABLE IF NOT EXISTS signin_oidc_access (key bytea PRIMARY KEY, user_id bytea NOT NULL, "
    "family_id bytea NOT NULL, expires_at bigint NOT NULL, rec bytea NOT NULL)",
    "CREATE INDEX IF NOT EXISTS signin_oidc_access_user ON signin_oidc_access (user_id)",
    "CREATE INDEX IF NOT EXISTS signin_oidc_access_family ON signin_oidc_access (family_id)",
    "CREATE INDEX IF NOT EXISTS signin_oidc_access_expires ON signin_oidc_access (expires_at)",
    "CREATE TABLE IF NOT EXISTS signin_oidc_refresh (key bytea PRIMARY KEY, family_id bytea NOT NULL, "
    "expires_at bigint NOT NULL, rec bytea NOT NULL)",
    "CREATE INDEX IF NOT EXISTS signin_oidc_refresh_family ON signin_oidc_refresh (family_id)",
    "CREATE INDEX IF NOT EXISTS signin_oidc_refresh_expires ON signin_oidc_refresh (expires_at)",
    "CREATE TABLE IF NOT EXISTS signin_oidc_families (id bytea PRIMARY KEY, user_id bytea NOT NULL, "
    "expires_at bigint NOT NULL, rec bytea NOT NULL)",
    "CREATE INDEX IF NOT EXISTS signin_oidc_families_user ON signin_oidc_families (user_id)",
    "CREATE INDEX IF NOT EXISTS signin_oidc_families_expires ON signin_oidc_families (expires_at)",
    "CREATE TABLE IF NOT EXISTS signin_oidc_consents (key bytea PRIMARY KEY, user_id bytea NOT NULL, rec bytea NOT NULL)",
    "CREATE INDEX IF NOT EXISTS signin_oidc_consents_user ON signin_oidc_consents (user_id)",
    "INSERT INTO signin_meta (name, value) VALUES ('schema_version', '1') ON CONFLICT (name) DO NOTHING",
};

enum Stmt : unsigned {
    UserById, UserByEmail, Token, TokensFor, Session, SessionById, SessionsOf, SessionsOfBrowser, Audit,
    Users, UserCount, AuditCount, CountTokens, CountSessions, CountPasskeys, CountOutbox, CountLinks,
    OutboxDue, Outbox, Mfa, MfaPending, Passkey, PasskeysOf, ChallengeSpent, ProviderLink, ProviderLinksOf,
    PutUser, EmailOwner, PutEmail, DelEmail, DelUser, PutToken, DelToken, PutSession, DelSession,
    PutAudit, PutOutbox, DelOutbox, PutMfa, DelMfa, PutPending, DelPending, DelPendingOf, PutPasskey,
    DelPasskey, PutLink, DelLink, SpendChallenge, PurgeTokens, PurgeSessions, PurgePending,
    PurgeChallenges, PurgeAudit, TrimAudit, AllTokens, AllSessions, AllMfa, AllPending, AllPasskeys, AllLinks,
    AllOutbox, AllAudit, AllChallenges, AllEmails, SessionWithUser, SessionsWithUsers, TokensAny, Counter, PutCounter, DelCounter, DelCounters, PurgeCounters,
    Events, Event, CountEvents, PutEvent, UpdateEvent, DelEvent, AllEvents, EventsAfter, EventKeys, PutKeyedEvent,
    UserIndex, PutUserIndex, DelUserIndex, AllUserSearch, AdvisoryLock, AdvisoryUnlock, TryAdvisoryLock, BatchTurn, ReleaseKeys,
    OidcCode, OidcAccess, OidcRefresh, OidcFamily, OidcConsent, OidcConsentsOf, PutOidcCode, PutOidcAccess,
    DelOidcAccess, PutOidcRefresh, PutOidcFamily, DelFamilyTokens, PutOidcConsent, DelOidcConsent, DelOidcOf,
    PurgeOidcCodes, PurgeOidcAccess, PurgeOidcRefresh, PurgeOidcFamilies, AllOidcCodes, AllOidcAccess,
    AllOidcRefresh, AllOidcFamilies, AllOidcConsents,
    // a write batch's writes of one kind, one statement over arrays (Connection::merged)
    PutUsers, PutEmails, PutTokens, DelTokens, PutSessions, DelSessions, PutAudits, PutOutboxes, DelOutboxes, DelEvents,
    PutKeyedEvents, UserAndTokensByEmail, StmtCount
};

constexpr const char *kStatements[StmtCount] = {
    /* UserById */ "SELECT rec FROM signin_users WHERE id = $1",
    /* UserByEmail */
    "SELECT u.rec FROM signin_user_email e JOIN signin_users u ON u.id = e.user_id WHERE e.addr = $1",
    /* Token */ "SELECT key, rec FROM signin_tokens WHERE key = $1",
    /* TokensFor */ "SELECT key, rec FROM signin_tokens WHERE addr = $1 ORDER BY created_at, key",
    /* Session */ "SELECT key, rec FROM signin_sessions WHERE key = $1",
    /* SessionById */ "SELECT key, rec FROM signin_sessions WHERE id = $1 ORDER BY expires_at DESC LIMIT 1",
    /* SessionsOf */ "SELECT key, rec FROM signin_sessions WHERE user_id = $1 ORDER BY id",
    /* SessionsOfBrowser */ "SELECT key, rec FROM signin_sessions WHERE browser = $1 OR browser = $2 ORDER BY id",
    /* Audit */ "SELECT key, rec FROM signin_audit ORDER BY key DESC LIMIT $1",
    /* Users */ "SELECT rec FROM signin_users WHERE id > $1 ORDER BY id LIMIT $2",
    /* UserCount */ "SELECT count(*) FROM signin_users",
    /* AuditCount */ "SELECT count(*) FROM signin_audit",
    /* CountTokens */ "SELECT count(*) FROM signin_tokens",
    /* CountSessions */ "SELECT count(*) FROM signin_sessions",
    /* CountPasskeys */ "SELECT count(*) FROM signin_passkeys",
    /* CountOutbox */ "SELECT count(*) FROM signin_outbox",
    /* CountLinks */ "SELECT count(*) FROM signin_provider_links",
    /* OutboxDue */ "SELECT key, rec FROM signin_outbox WHERE due_at <= $1 ORDER BY key LIMIT $2",
    /* Outbox */ "SELECT key, rec FROM signin_outbox WHERE key = $1",
    /* Mfa */ "SELECT user_id, rec FROM signin_mfa WHERE user_id = $1",
    /* MfaPending */ "SELECT hash, rec FROM signin_mfa_pending WHERE hash = $1",
    /* Passkey */ "SELECT key, rec FROM signin_passkeys WHERE key = $1",
    /* PasskeysOf */ "SELECT key, rec FROM signin_passkeys WHERE user_id = $1 ORDER BY key",
    /* ChallengeSpent */ "SELECT 1 FROM signin_spent_challenges WHERE hash = $1",
    /* ProviderLink */ "SELECT key, rec FROM signin_provider_links WHERE key = $1",
    /* ProviderLinksOf */ "SELECT key, rec FROM signin_provider_links WHERE user_id = $1 ORDER BY key",
    /* PutUser */
    "INSERT INTO signin_users (id, rec) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET rec = excluded.rec",
    /* EmailOwner */ "SELECT user_id FROM signin_user_email WHERE addr = $1",
    /* PutEmail */
    "INSERT INTO signin_user_email (addr, user_id) VALUES ($1, $2) "
    "ON CONFLICT (addr) DO UPDATE SET user_id = excluded.user_id",
    /* DelEmail */ "DELETE FROM signin_user_email WHERE addr = $1 AND user_id = $2",
    /* DelUser */ "DELETE FROM signin_users WHERE id = $1",
    /* PutToken */
    "INSERT INTO signin_tokens (key, addr, created_at, expires_at, rec) VALUES ($1, $2, $3, $4, $5) "
    "ON CONFLICT (key) DO UPDATE SET addr = excluded.addr, created_at = excluded.created_at, "
    "expires_at = excluded.expires_at, rec = excluded.rec",
    /* DelToken */ "DELETE FROM signin_tokens WHERE key = $1 OR key = $2",  // the key, and its legacy form
    /* PutSession */
    "INSERT INTO signin_sessions (key, id, user_id, browser, expires_at, rec) VALUES ($1, $2, $3, $4, $5, $6) "
    "ON CONFLICT (key) DO UPDATE SET id = excluded.id, user_id = excluded.user_id, browser = excluded.browser, "
    "expires_at = excluded.expires_at, rec = excluded.rec",
    /* DelSession */ "DELETE FROM signin_sessions WHERE key = $1 OR key = $2",
    /* PutAudit */ "INSERT INTO signin_audit (key, at, rec) VALUES ($1, $2, $3)",
    /* PutOutbox */ "INSERT INTO signin_outbox (key, due_at, rec) VALUES ($1, $2, $3)",
    /* DelOutbox */ "DELETE FROM signin_outbox WHERE key = $1",
    /* PutMfa */
    "INSERT INTO signin_mfa (user_id, rec) VALUES ($1, $2) ON CONFLICT (user_id) DO UPDATE SET rec = excluded.rec",
    /* DelMfa */ "DELETE FROM signin_mfa WHERE user_id = $1",
    /* PutPending */
    "INSERT INTO signin_mfa_pending (hash, user_id, expires_at, rec) VALUES ($1, $2, $3, $4) "
    "ON CONFLICT (hash) DO UPDATE SET user_id = excluded.user_id, expires_at = excluded.expires_at, rec = excluded.rec",
    /* DelPending */ "DELETE FROM signin_mfa_pending WHERE hash = $1",
    /* DelPendingOf */ "DELETE FROM signin_mfa_pending WHERE user_id = $1",
    /* PutPasskey */
    "INSERT INTO signin_passkeys (key, user_id, rec) VALUES ($1, $2, $3) "
    "ON CONFLICT (key) DO UPDATE SET user_id = excluded.user_id, rec = excluded.rec",
    /* DelPasskey */ "DELETE FROM signin_passkeys WHERE key = $1",
    /* PutLink */
    "INSERT INTO signin_provider_links (key, user_id, rec) VALUES ($1, $2, $3) "
    "ON CONFLICT (key) DO UPDATE SET user_id = excluded.user_id, rec = excluded.rec",
    /* DelLink */ "DELETE FROM signin_provider_links WHERE key = $1",
    /* SpendChallenge */
    "INSERT INTO signin_spent_challenges (hash, expires_at) VALUES ($1, $2) "
    "ON CONFLICT (hash) DO UPDATE SET expires_at = excluded.expires_at",
    /* PurgeTokens */
    "DELETE FROM signin_tokens WHERE key IN "
    "(SELECT key FROM signin_tokens WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2)",
    /* PurgeSessions */
    "DELETE FROM signin_sessions WHERE key IN "
    "(SELECT key FROM signin_sessions WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2)",
    /* PurgePending */
    "DELETE FROM signin_mfa_pending WHERE hash IN "
    "(SELECT hash FROM signin_mfa_pending WHERE expires_at <= $1 LIMIT $2)",
    /* PurgeChallenges */
    "DELETE FROM signin_spent_challenges WHERE hash IN "
    "(SELECT hash FROM signin_spent_challenges WHERE expires_at <= $1 LIMIT $2)",
    /* PurgeAudit */
    "DELETE FROM signin_audit WHERE key IN (SELECT key FROM signin_audit WHERE at < $1 ORDER BY key LIMIT $2)",
    /* TrimAudit */
    "DELETE FROM signin_audit WHERE key IN (SELECT key FROM signin_audit ORDER BY key LIMIT "
    "LEAST(GREATEST((SELECT count(*) FROM signin_audit) - $1, 0), $2))",
    /* AllTokens */ "SELECT key, rec FROM signin_tokens ORDER BY key",
    /* AllSessions */ "SELECT key, rec FROM signin_sessions ORDER BY key",
    /* AllMfa */ "SELECT user_id, rec FROM signin_mfa ORDER BY user_id",
    /* AllPending */ "SELECT hash, rec FROM signin_mfa_pending ORDER BY hash",
    /* AllPasskeys */ "SELECT key, rec FROM signin_passkeys ORDER BY key",
    /* AllLinks */ "SELECT key, rec FROM signin_provider_links ORDER BY key",
    /* AllOutbox */ "SELECT key, rec FROM signin_outbox ORDER BY key",
    /* AllAudit */ "SELECT key, rec FROM signin_audit ORDER BY key",
    /* AllChallenges */ "SELECT hash, expires_at FROM signin_spent_challenges ORDER BY hash",
    /* AllEmails */ "SELECT addr, user_id FROM signin_user_email ORDER BY addr",
    /* SessionWithUser */
    "SELECT s.key, s.rec, u.rec FROM signin_sessions s LEFT JOIN signin_users u ON u.id = s.user_id WHERE s.key = $1",
    // sessions by their keys, each with its account (NULL: gone), looked up by its key (as a join,
    // a generic plan made while the tables were small hashed the whole accounts' table)
    /* SessionsWithUsers */
    "SELECT s.key, s.rec, (SELECT u.rec FROM signin_users u WHERE u.id = s.user_id) FROM signin_sessions s "
    "WHERE s.key = ANY($1::bytea[])",
    // tokens by their keys, each with its address and that address's account (NULL: none), looked
    // up row by row (as a join, the planner's generic plan scanned the accounts: 1.5 ms a batch)
    /* TokensAny */
    "SELECT t.key, t.rec, t.addr, (SELECT u.rec FROM signin_user_email e JOIN signin_users u ON u.id = e.user_id "
    "WHERE e.addr = t.addr) FROM signin_tokens t WHERE t.key = ANY($1::bytea[])",
    /* Counter */ "SELECT state FROM signin_counters WHERE key = $1",
    /* PutCounter */
    "INSERT INTO signin_counters (key, expires_at, state) VALUES ($1, $2, $3) "
    "ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at, state = excluded.state",
    /* DelCounter */ "DELETE FROM signin_counters WHERE key = $1",
    /* DelCounters */ "DELETE FROM signin_counters WHERE substring(key from 1 for octet_length($1::bytea)) = $1::bytea",
    /* PurgeCounters */
    "DELETE FROM signin_counters WHERE key IN (SELECT key FROM signin_counters WHERE expires_at <= $1 LIMIT $2)",
    /* Events */ "SELECT key, rec FROM signin_events ORDER BY key LIMIT $1",
    /* Event */ "SELECT key, rec FROM signin_events WHERE key = $1",
    /* CountEvents */ "SELECT count(*) FROM signin_events",
    // an event written beside the batch holding the events' lock ($2): its key is drawn once that
    // batch has committed (PgWriteTxn::put_event)
    /* PutEvent */
    "WITH l AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared($2::bigint)) "
    "INSERT INTO signin_events (key, rec) SELECT int8send(nextval('signin_events_seq')), $1 FROM l RETURNING key",
    /* UpdateEvent */ "UPDATE signin_events SET rec = $2 WHERE key = $1",
    /* DelEvent */ "DELETE FROM signin_events WHERE key = $1",
    /* AllEvents */ "SELECT key, rec FROM signin_events ORDER BY key",
    /* EventsAfter */ "SELECT key, rec FROM signin_events WHERE key > $1 ORDER BY key LIMIT $2",
    // the next $1 keys of the events' sequence, in order, for a batch that holds the events' lock
    /* EventKeys */
    "SELECT k FROM (SELECT int8send(nextval('signin_events_seq')) AS k FROM generate_series(1, $1::int)) AS s ORDER BY k",
    /* PutKeyedEvent */ "INSERT INTO signin_events (key, rec) VALUES ($1, $2)",
    /* UserIndex */
    "SELECT key FROM signin_user_search WHERE key >= $1 AND key > $2 AND key < $3 ORDER BY key LIMIT $4",
    /* PutUserIndex */ "INSERT INTO signin_user_search (key) SELECT unnest($1::bytea[]) ON CONFLICT (key) DO NOTHING",
    /* DelUserIndex */ "DELETE FROM signin_user_search WHERE key = ANY($1::bytea[])",
    /* AllUserSearch */ "SELECT key, ''::bytea FROM signin_user_search ORDER BY key",
    /* AdvisoryLock */ "SELECT pg_advisory_lock($1::bigint)",
    /* AdvisoryUnlock */ "SELECT pg_advisory_unlock($1::bigint)",
    /* TryAdvisoryLock */ "SELECT pg_try_advisory_lock($1::bigint)",
    // the write batches' turn, waited for kBatchTurnWait at most (lock_timeout, for this statement
    // only), and then the events' lock ($3) if no writer of an event holds it: whether it did
    /* BatchTurn */
    "WITH t AS MATERIALIZED (SELECT set_config('lock_timeout', $2::text, true)), "
    "turn AS MATERIALIZED (SELECT pg_advisory_lock($1::bigint) FROM t) SELECT pg_try_advisory_lock($3::bigint) FROM turn",
    // a write batch's keys given back one by one in their order, and then every other lock (its turn)
    /* ReleaseKeys */
    "SELECT pg_advisory_unlock_all() FROM (SELECT count(pg_advisory_unlock(k)) FROM unnest($1::int8[]) AS k) AS keys",
    /* OidcCode */ "SELECT key, rec FROM signin_oidc_codes WHERE key = $1",
    /* OidcAccess */ "SELECT key, rec FROM signin_oidc_access WHERE key = $1",
    /* OidcRefresh */ "SELECT key, rec FROM signin_oidc_refresh WHERE key = $1",
    /* OidcFamily */ "SELECT id, rec FROM signin_oidc_families WHERE id = $1",
    /* OidcConsent */ "SELECT key, rec FROM signin_oidc_consents WHERE key = $1",
    /* OidcConsentsOf */ "SELECT key, rec FROM signin_oidc_consents WHERE user_id = $1 ORDER BY key",
    /* PutOidcCode */
    "INSERT INTO signin_oidc_codes (key, user_id, expires_at, rec) VALUES ($1, $2, $3, $4) "
    "ON CONFLICT (key) DO UPDATE SET user_id = excluded.user_id, expires_at = excluded.expires_at, rec = excluded.rec",
    /* PutOidcAccess */
    "INSERT INTO signin_oidc_access (key, user_id, family_id, expires_at, rec) VALUES ($1, $2, $3, $4, $5) "
    "ON CONFLICT (key) DO UPDATE SET user_id = excluded.user_id, family_id = excluded.family_id, "
    "expires_at = excluded.expires_at, rec = excluded.rec",
    /* DelOidcAccess */ "DELETE FROM signin_oidc_access WHERE key = $1",
    /* PutOidcRefresh */
    "INSERT INTO signin_oidc_refresh (key, family_id, expires_at, rec) VALUES ($1, $2, $3, $4) "
    "ON CONFLICT (key) DO UPDATE SET family_id = excluded.family_id, expires_at = excluded.expires_at, rec = excluded.rec",
    /* PutOidcFamily */
    "INSERT INTO signin_oidc_families (id, user_id, expires_at, rec) VALUES ($1, $2, $3, $4) "
    "ON CONFLICT (id) DO UPDATE SET user_id = excluded.user_id, expires_at = excluded.expires_at, rec = excluded.rec",
    /* DelFamilyTokens */
    "WITH a AS (DELETE FROM signin_oidc_access WHERE family_id = $1) "
    "DELETE FROM signin_oidc_refresh WHERE family_id = $1",
    /* PutOidcConsent */
    "INSERT INTO signin_oidc_consents (key, user_id, rec) VALUES ($1, $2, $3) "
    "ON CONFLICT (key) DO UPDATE SET user_id = excluded.user_id, rec = excluded.rec",
    /* DelOidcConsent */ "DELETE FROM signin_oidc_consents WHERE key = $1",
    /* DelOidcOf */
    "WITH f AS (DELETE FROM signin_oidc_families WHERE user_id = $1 RETURNING id), "
    "r AS (DELETE FROM signin_oidc_refresh WHERE family_id IN (SELECT id FROM f) RETURNING 1), "
    "a AS (DELETE FROM signin_oidc_access WHERE user_id = $1 OR family_id IN (SELECT id FROM f) RETURNING 1), "
    "c AS (DELETE FROM signin_oidc_codes WHERE user_id = $1 RETURNING 1), "
    "k AS (DELETE FROM signin_oidc_consents WHERE user_id = $1 RETURNING 1) "
    "SELECT (SELECT count(*) FROM f) + (SELECT count(*) FROM r) + (SELECT count(*) FROM a) + "
    "(SELECT count(*) FROM c) + (SELECT count(*) FROM k)",
    /* PurgeOidcCodes */
    "DELETE FROM signin_oidc_codes WHERE key IN (SELECT key FROM signin_oidc_codes WHERE expires_at <= $1 LIMIT $2)",
    /* PurgeOidcAccess */
    "DELETE FROM signin_oidc_access WHERE key IN (SELECT key FROM signin_oidc_access WHERE expires_at <= $1 LIMIT $2)",
    /* PurgeOidcRefresh */
    "DELETE FROM signin_oidc_refresh WHERE key IN (SELECT key FROM signin_oidc_refresh WHERE expires_at <= $1 LIMIT $2)",
    /* PurgeOidcFamilies */
    "DELETE FROM signin_oidc_families WHERE id IN (SELECT id FROM signin_oidc_families WHERE expires_at <= $1 LIMIT $2)",
    /* AllOidcCodes */ "SELECT key, rec FROM signin_oidc_codes ORDER BY key",
    /* AllOidcAccess */ "SELECT key, rec FROM signin_oidc_access ORDER BY key",
    /* AllOidcRefresh */ "SELECT key, rec FROM signin_oidc_refresh ORDER BY key",
    /* AllOidcFamilies */ "SELECT id, rec FROM signin_oidc_families ORDER BY id",
    /* AllOidcConsents */ "SELECT key, rec FROM signin_oidc_consents ORDER BY key",
    /* PutUsers */
    "INSERT INTO signin_users (id, rec) SELECT * FROM unnest($1::bytea[], $2::bytea[]) "
    "ON CONFLICT (id) DO UPDATE SET rec = excluded.rec",
    /* PutEmails */
    "INSERT INTO signin_user_email (addr, user_id) SELECT * FROM unnest($1::bytea[], $2::bytea[]) "
    "ON CONFLICT (addr) DO UPDATE SET user_id = excluded.user_id",
    /* PutTokens */
    "INSERT INTO signin_tokens (key, addr, created_at, expires_at, rec) "
    "SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::int8[], $4::int8[], $5::bytea[]) "
    "ON CONFLICT (key) DO UPDATE SET addr = excluded.addr, created_at = excluded.created_at, "
    "expires_at = excluded.expires_at, rec = excluded.rec",
    /* DelTokens */ "DELETE FROM signin_tokens WHERE key = ANY($1::bytea[] || $2::bytea[])",
    /* PutSessions */
    "INSERT INTO signin_sessions (key, id, user_id, browser, expires_at, rec) "
    "SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[], $4::bytea[], $5::int8[], $6::bytea[]) "
    "ON CONFLICT (key) DO UPDATE SET id = excluded.id, user_id = excluded.user_id, browser = excluded.browser, "
    "expires_at = excluded.expires_at, rec = excluded.rec",
    /* DelSessions */ "DELETE FROM signin_sessions WHERE key = ANY($1::bytea[] || $2::bytea[])",
    /* PutAudits */ "INSERT INTO signin_audit (key, at, rec) SELECT * FROM unnest($1::bytea[], $2::int8[], $3::bytea[])",
    /* PutOutboxes */
    "INSERT INTO signin_outbox (key, due_at, rec) SELECT * FROM unnest($1::bytea[], $2::int8[], $3::bytea[])",
    /* DelOutboxes */ "DELETE FROM signin_outbox WHERE key = ANY($1::bytea[])",
    /* DelEvents */ "DELETE FROM signin_events WHERE key = ANY($1::bytea[])",
    /* PutKeyedEvents */ "INSERT INTO signin_events (key, rec) SELECT * FROM unnest($1::bytea[], $2::bytea[])",
    // an address's account (the row without a key) and its tokens, oldest first
    /* UserAndTokensByEmail */
    "SELECT NULL::bytea, u.rec, NULL::bigint FROM signin_user_email e JOIN signin_users u ON u.id = e.user_id "
    "WHERE e.addr = $1 UNION ALL SELECT key, rec, created_at FROM signin_tokens WHERE addr = $1 ORDER BY 3 NULLS FIRST, 1",
};

constexpr bool every_statement_written() {
    for (const char *sql : kStatements)
        if (sql == nullptr) return false;
    return true;
}
static_assert(every_statement_written(), "a statement of Stmt without its SQL in kStatements");

// Whether a statement changes the store (a write transaction that ran one cannot be left out of
// a write batch's commit: PgStore::batch).
constexpr bool changes(Stmt s) {
    switch (s) {
    case PutUser: case PutEmail: case DelEmail: case DelUser: case PutToken: case DelToken: case PutSession:
    case DelSession: case PutAudit: case PutOutbox: case DelOutbox: case PutMfa: case DelMfa: case PutPending:
    case DelPending: case DelPendingOf: case PutPasskey: case DelPasskey: case PutLink: case DelLink:
    case SpendChallenge: case PurgeTokens: case PurgeSessions: case PurgePending: case PurgeChallenges:
    case PurgeAudit: case TrimAudit: case PutCounter: case DelCounter: case DelCounters: case PurgeCounters:
    case PutEvent: case UpdateEvent: case DelEvent: case PutOidcCode: case PutOidcAccess: case DelOidcAccess:
    case PutOidcRefresh: case PutOidcFamily: case DelFamilyTokens: case PutOidcConsent: case DelOidcConsent:
    case DelOidcOf: case PurgeOidcCodes: case PurgeOidcAccess: case PurgeOidcRefresh: case PurgeOidcFamilies:
    case PutUsers: case PutEmails: case PutTokens: case DelTokens: case PutSessions: case DelSessions:
    case PutAudits: case PutOutboxes: case DelOutboxes: case DelEvents: case PutKeyedEvent: case PutKeyedEvents:
        return true;
    default:
        return false;
    }
}

// The deferred writes that may be joined into one statement (store/pg_merge.hpp), and the tables
// of a few that may not but should not stop the others from joining across them. `many` is the
// statement that takes the arrays of a group's parameters (StmtCount: none); `rows`, how many of
// its first parameters name the rows (by primary key) it touches and all it touches (a deletion
// names a key and its legacy form; 0: any row of its table); `once`, that a statement may write
// each row once (ON CONFLICT DO UPDATE); `arrays`, that the write's one parameter is already an
// array (bytea_array), joined by putting their elements under one header.
enum Table : int { UsersTable, EmailsTable, TokensTable, SessionsTable, AuditTable, OutboxTable, EventsTable, SearchTable };
struct Joinable {
    Stmt one;
    Stmt many;
    Table table;
    int rows;
    bool once;
    bool arrays;
};
constexpr Joinable kJoinable[] = {
    {PutUser, PutUsers, UsersTable, 1, true, false},
    {DelUser, StmtCount, UsersTable, 1, false, false},
    {PutEmail, PutEmails, EmailsTable, 1, true, false},
    {DelEmail, StmtCount, EmailsTable, 1, false, false},  // the address's row, if it is still this user's
    {PutToken, PutTokens, TokensTable, 1, true, false},
    {DelToken, DelTokens, TokensTable, 2, false, false},
    {PutSession, PutSessions, SessionsTable, 1, true, false},
    {DelSession, DelSessions, SessionsTable, 2, false, false},
    {PutAudit, PutAudits, AuditTable, 1, true, false},
    {PutOutbox, PutOutboxes, OutboxTable, 1, true, false},
    {DelOutbox, DelOutboxes, OutboxTable, 1, false, false},
    {PutKeyedEvent, PutKeyedEvents, EventsTable, 1, true, false},
    {UpdateEvent, StmtCount, EventsTable, 1, false, false},
    {DelEvent, DelEvents, EventsTable, 1, false, false},
    {PutUserIndex, PutUserIndex, SearchTable, 0, false, true},
    {DelUserIndex, DelUserIndex, SearchTable, 0, false, true},
};

// ---- values ------------------------------------------------------------------------------------

// A statement's parameter: bytes (bytea, or an array in binary form) or a number (sent as text).
class Param {
public:
    Param(std::string_view bytes) : data_(bytes.data()), len_(bytes.size()), binary_(true) {}  // NOLINT
    Param(const std::string &bytes) : Param(std::string_view(bytes)) {}                         // NOLINT
    Param(std::int64_t n) : kept_(std::to_string(n)), data_(kept_.c_str()), len_(kept_.size()), binary_(false), own_(true) {}  // NOLINT
    Param(const Param &o) : kept_(o.kept_), data_(o.data_), len_(o.len_), binary_(o.binary_), own_(o.own_) {
        if (own_) data_ = kept_.data();
    }
    Param &operator=(const Param &) = delete;
    // Bytes made for the statement (an array: bytea_array), kept with the parameter.
    static Param kept(std::string bytes) {
        Param p(std::int64_t{0});
        p.kept_ = std::move(bytes);
        p.data_ = p.kept_.data();
        p.len_ = p.kept_.size();
        p.binary_ = true;
        return p;
    }
    const char *data() const { return data_; }
    int len() const { return static_cast<int>(len_); }
    bool binary() const { return binary_; }

private:
    std::string kept_;  // a number's text, or bytes made for the statement
    const char *data_ = nullptr;
    std::size_t len_ = 0;
    bool binary_ = true;
    bool own_ = false;  // data_ points into kept_
};

// A bytea key or value cannot be empty where an index is: LMDB refuses empty keys, and the
// engine never asks for one; a lookup of "" finds nothing in either backend.

struct ResultFree {
    void operator()(PGresult *r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultFree>;

std::string_view cell(const Result &r, int row, int col) {
    return std::string_view(PQgetvalue(r.get(), row, col), static_cast<std::size_t>(PQgetlength(r.get(), row, col)));
}

// The first key after every key that starts with `prefix` (its last byte below 0xff plus one):
// the end of a range scan of the prefix. Empty when there is none (a prefix of 0xff bytes only).
std::string prefix_end(std::string_view prefix) {
    std::string end(prefix);
    while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
    if (!end.empty()) end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
    return end;
}

// Whether a one-row answer's boolean (binary: one byte) is true: a pg_try_advisory_lock that got it.
bool answered_true(const Result &r) { return PQntuples(r.get()) == 1 && cell(r, 0, 0) == std::string_view("\x01", 1); }

// A binary bigint (count(*), expires_at) in network order.
std::int64_t number(const Result &r, int row, int col) {
    std::string_view v = cell(r, row, col);
    if (v.size() != 8) corrupt("a number of " + std::to_string(v.size()) + " bytes");
    return static_cast<std::int64_t>(get_be64(reinterpret_cast<const unsigned char *>(v.data())));
}

// PostgreSQL's binary form of a one-dimensional array without nulls, written in two parts:
// the header (the element type's oid and the count), then each element (its length, its bytes).
constexpr std::uint32_t kByteaOid = 17, kInt8Oid = 20;
constexpr std::size_t kArrayHeader = 20;  // five 4-byte words
void put_be(std::string &out, std::uint64_t v, int octets) {
    for (int b = octets - 1; b >= 0; --b) out.push_back(static_cast<char>((v >> (8 * b)) & 0xff));
}
void array_header(std::string &out, std::uint32_t oid, std::size_t count) {
    put_be(out, 1, 4);  // dimensions
    put_be(out, 0, 4);  // no nulls
    put_be(out, oid, 4);
    put_be(out, count, 4);
    put_be(out, 1, 4);  // lower bound
}
void array_element(std::string &out, std::string_view bytes) {
    put_be(out, bytes.size(), 4);
    out += bytes;
}
void array_element(std::string &out, std::int64_t number) {
    put_be(out, 8, 4);
    put_be(out, static_cast<std::uint64_t>(number), 8);
}
// The count an array's header gives (the fourth word).
std::size_t array_count(std::string_view array) {
    std::size_t n = 0;
    for (std::size_t i = 12; i < 16 && i < array.size(); ++i) n = (n << 8) | static_cast<unsigned char>(array[i]);
    return n;
}

// Keys as one bytea[] parameter (binary): `key = ANY($1::bytea[])`, `unnest($1::bytea[])`.
template <class Keys>
std::string bytea_array(const Keys &keys) {
    std::string out;
    array_header(out, kByteaOid, keys.size());
    for (std::string_view k : keys) array_element(out, k);
    return out;
}

Param index_keys(const std::vector<std::string> &keys) { return Param::kept(bytea_array(keys)); }

// Record keys with the legacy form of each that has one after them: what a lookup that falls back
// to the legacy key (token(), session()) may find, asked for at once.
template <class Key>
std::vector<std::string_view> with_legacy_keys(const std::vector<Key> &keys) {
    std::vector<std::string_view> asked(keys.begin(), keys.end());
    for (std::string_view k : keys)
        if (!legacy_key(k).empty()) asked.push_back(legacy_key(k));
    return asked;
}

// A key that starts with a time (big-endian milliseconds) and 8 random bytes (audit, outbox).
std::string timed_key(Millis at) {
    std::array<unsigned char, 16> key{};
    put_be64(key.data(), static_cast<std::uint64_t>(at));
    randombytes_buf(key.data() + 8, 8);
    return std::string(reinterpret_cast<const char *>(key.data()), key.size());
}

// ---- connections -------------------------------------------------------------------------------

// What a failed statement means: a lost race (retry), a full disk, or the store unavailable.
[[noreturn]] void throw_result(PGconn *conn, const PGresult *res, std::string_view context) {
    const char *state = res != nullptr ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
    // the primary message only: a DETAIL line may quote a row's values (an address, a digest),
    // which have no place in nginx's error log
    const char *primary = res != nullptr ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
    std::string message = primary != nullptr ? primary : "";
    if (message.empty() && conn != nullptr) message = PQerrorMessage(conn);
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
    const std::string what = std::string(context) + ": " + (message.empty() ? "the database did not answer" : message);
    const std::string_view s = state != nullptr ? state : "";
    // 40001 serialization_failure, 40P01 deadlock_detected: the transaction may run again
    if (s == "40001" || s == "40P01") throw StoreError(Code::StorageError, what, true);
    if (s == "53100") throw StoreError(Code::StorageFull, what);  // disk_full
    throw StoreError(Code::StorageError, what);
}

// No connection could be made (the server is down, or unreachable, or refuses the login).
class Unreachable : public StoreError {
public:
    explicit Unreachable(const std::string &what) : StoreError(Code::StorageError, what) {}
};

// A new connection, waited for; throws Unreachable.
PGconn *open_connection(const std::string &conninfo) {
    // a server that does not answer is given up after 5 s (libpq waits forever by default),
    // and the connections are named in pg_stat_activity, unless the URI says so itself: its
    // words come after, and win
    const char *const keys[] = {"connect_timeout", "application_name", "dbname", nullptr};
    const char *const values[] = {"5", "ngx_signin", conninfo.c_str(), nullptr};
    PGconn *conn = PQconnectdbParams(keys, values, 1);
    if (conn == nullptr) throw Unreachable("connect to PostgreSQL: out of memory");
    if (PQstatus(conn) != CONNECTION_OK) {
        std::string why = PQerrorMessage(conn);
        while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
        PQfinish(conn);
        throw Unreachable("connect to PostgreSQL: " + why);
    }
    // the server's notices ("already exists, skipping") are not errors: libpq would print
    // them on stderr, which nginx sends to its error log
    PQsetNoticeProcessor(conn, [](void *, const char *) {}, nullptr);
    return conn;
}

class Pool;

class Connection {
public:
    // `pool` counts it while it is open (nullptr: nobody counts it).
    Connection(const std::string &conninfo, Pool *pool) : conn_(open_connection(conninfo)), pool_(pool) {}
    ~Connection();
    Connection(const Connection &) = delete;
    Connection &operator=(const Connection &) = delete;

    bool healthy() const {
        return PQstatus(conn_) == CONNECTION_OK && PQtransactionStatus(conn_) == PQTRANS_IDLE &&
               PQpipelineStatus(conn_) == PQ_PIPELINE_OFF && pending_.empty();
    }

    // Runs a prepared statement; results in binary. Throws StoreError on failure. `first`, when
    // given, is a statement without parameters (a BEGIN) sent ahead of it in the same round trip,
    // as are the writes deferred before it (defer).
    Result run(Stmt s, std::initializer_list<Param> params, std::string_view context, const char *first = nullptr) {
        if (first != nullptr) defer_text(first, context);
        if (!pending_.empty()) return pipelined(command(s, params, context), context);
        std::array<const char *, 8> values{};
        std::array<int, 8> lengths{}, formats{};
        std::size_t n = 0;
        for (const Param &p : params) {
            values[n] = p.data();
            lengths[n] = p.len();
            formats[n] = p.binary() ? 1 : 0;
            ++n;
        }
        const std::string name = "s" + std::to_string(static_cast<unsigned>(s));
        if (!prepared_[s]) {  // once per connection, at its first use
            Result p(PQprepare(conn_, name.c_str(), kStatements[s], 0, nullptr));
            if (PQresultStatus(p.get()) != PGRES_COMMAND_OK) throw_result(conn_, p.get(), context);
            prepared_[s] = true;
        }
        Result r(PQexecPrepared(conn_, name.c_str(), static_cast<int>(n), values.data(), lengths.data(),
                                formats.data(), 1));
        const auto st = PQresultStatus(r.get());
        if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) throw_result(conn_, r.get(), context);
        return r;
    }

    // A statement run at once, ahead of the deferred writes, which stay deferred (a lock taken
    // before a transaction whose BEGIN waits with them).
    Result run_ahead(Stmt s, std::initializer_list<Param> params, std::string_view context) {
        std::vector<Command> waiting = std::exchange(pending_, {});
        struct Back {
            std::vector<Command> &to, &from;
            ~Back() { to = std::move(from); }
        } back{pending_, waiting};
        return run(s, params, context);
    }

    // A write whose answer nobody reads: kept (with copies of its parameters) and sent with the
    // next statement that is run, or with the COMMIT, in one round trip. Its failure is thrown by
    // that statement: the transaction fails as a whole either way.
    void defer(Stmt s, std::initializer_list<Param> params, std::string_view context) {
        pending_.push_back(command(s, params, context));
    }
    void defer_text(const char *sql, std::string_view context) { pending_.push_back(text_command(sql, context)); }
    // The deferred writes are dropped (their transaction is rolled back).
    void discard() { pending_.clear(); }
    // The last failure thrown was a deferred write's, not the statement it went with.
    bool failed_deferred() const { return failed_deferred_; }

    // A statement without parameters (BEGIN, COMMIT, the schema), after the deferred writes.
    void exec(const char *sql, std::string_view context) {
        if (!pending_.empty()) {
            (void)pipelined(text_command(sql, context), context);
            return;
        }
        Result r(PQexec(conn_, sql));
        const auto st = PQresultStatus(r.get());
        if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) throw_result(conn_, r.get(), context);
    }
    // `sql` (a COMMIT) after the deferred writes, and behind it, whatever became of them, the
    // statement `then`, in one round trip; `then_ok` says whether `then` succeeded (set before
    // what `sql` or the writes threw is thrown).
    void exec_then(const char *sql, Stmt then, std::initializer_list<Param> params, bool &then_ok,
                   std::string_view context) {
        then_ok = false;
        const Command after = command(then, params, context);
        (void)pipelined(text_command(sql, context), context, &after, &then_ok);
    }
    std::optional<std::string> text(const char *sql, std::string_view context) {
        Result r(PQexec(conn_, sql));
        if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) throw_result(conn_, r.get(), context);
        if (PQntuples(r.get()) == 0) return std::nullopt;
        return std::string(PQgetvalue(r.get(), 0, 0));
    }

private:
    // A statement to send in a pipeline: a prepared one with its parameters' bytes, or a text
    // without parameters.
    struct Command {
        const char *text = nullptr;
        Stmt stmt{};
        std::vector<std::string> values;
        std::vector<int> binary;
        std::string context;
    };
    static Command command(Stmt s, std::initializer_list<Param> params, std::string_view context) {
        Command c;
        c.stmt = s;
        c.context = std::string(context);
        for (const Param &p : params) {
            c.values.emplace_back(p.data(), static_cast<std::size_t>(p.len()));
            c.binary.push_back(p.binary() ? 1 : 0);
        }
        return c;
    }
    static Command text_command(const char *sql, std::string_view context) {
        Command c;
        c.text = sql;
        c.context = std::string(context);
        return c;
    }

    // The deferred writes, those of one kind to one table joined into one statement wherever that
    // keeps the transaction's effect (store/pg_merge.hpp): a write batch's sessions, spent tokens,
    // accounts and audit entries each in one statement instead of one a row.
    static std::vector<Command> merged(std::vector<Command> cmds) {
        if (cmds.size() < 2) return cmds;
        std::vector<pg_merge::Write> shape;
        shape.reserve(cmds.size());
        for (const Command &c : cmds) {
            const Joinable *j = c.text != nullptr ? nullptr : joinable(c.stmt);
            if (j == nullptr) {
                shape.push_back({});
                continue;
            }
            pg_merge::Write w{j->many != StmtCount ? static_cast<int>(j - kJoinable) : -1, j->table, {}, j->once};
            for (std::size_t k = 0; k < static_cast<std::size_t>(j->rows) && k < c.values.size(); ++k) w.rows[k] = c.values[k];
            shape.push_back(w);
        }
        const auto groups = pg_merge::plan(shape);
        if (groups.size() == cmds.size()) return cmds;
        std::vector<Command> out;
        out.reserve(groups.size());
        for (const auto &g : groups) out.push_back(g.size() == 1 ? std::move(cmds[g[0]]) : joined(cmds, g));
        return out;
    }
    static const Joinable *joinable(Stmt s) {
        for (const Joinable &j : kJoinable)
            if (j.one == s) return &j;
        return nullptr;
    }
    // One statement for the group `g` of `cmds` (all of one kind): each parameter becomes the
    // array of that parameter's values (bytea[] or int8[]), or, where it is an array already,
    // the arrays' elements in one.
    static Command joined(const std::vector<Command> &cmds, const std::vector<std::size_t> &g) {
        const Command &first = cmds[g[0]];
        const Joinable &j = *joinable(first.stmt);
        Command c;
        c.stmt = j.many;
        c.context = first.context;
        for (std::size_t k = 0; k < first.values.size(); ++k) {
            c.values.push_back(j.arrays ? elements_of(cmds, g, k) : array_of(cmds, g, k));
            c.binary.push_back(1);
        }
        return c;
    }
    // The k-th parameters of the group as one array: bytea where they are bytes, int8 where they
    // are numbers (sent as text).
    static std::string array_of(const std::vector<Command> &cmds, const std::vector<std::size_t> &g, std::size_t k) {
        const bool bytes = cmds[g[0]].binary[k] != 0;
        std::string out;
        array_header(out, bytes ? kByteaOid : kInt8Oid, g.size());
        for (std::size_t i : g) {
            const std::string &v = cmds[i].values[k];
            if (bytes) array_element(out, v);
            else array_element(out, static_cast<std::int64_t>(std::stoll(v)));
        }
        return out;
    }
    // The k-th parameters of the group, each a bytea[] (bytea_array), as one array of all their
    // elements.
    static std::string elements_of(const std::vector<Command> &cmds, const std::vector<std::size_t> &g, std::size_t k) {
        std::size_t count = 0;
        std::string elements;
        for (std::size_t i : g) {
            const std::string &v = cmds[i].values[k];
            if (v.size() < kArrayHeader) continue;
            count += array_count(v);
            elements.append(v, kArrayHeader);
        }
        std::string out;
        array_header(out, kByteaOid, count);
        return out + elements;
    }

    // What one result of a pipeline answers: a command, or the preparation of its statement.
    struct Slot {
        std::size_t cmd;
        bool prepare;
    };

    // Sends one command in pipeline mode; false when libpq could not. A statement this
    // connection has not prepared yet is prepared first, in the same pipeline.
    bool send(const std::vector<Command> &cmds, std::size_t i, std::vector<Slot> &slots) {
        const Command &c = cmds[i];
        if (c.text != nullptr) {
            slots.push_back(Slot{i, false});
            return PQsendQueryParams(conn_, c.text, 0, nullptr, nullptr, nullptr, nullptr, 0) == 1;
        }
        const std::string name = "s" + std::to_string(static_cast<unsigned>(c.stmt));
        bool preparing = false;
        for (const Slot &sl : slots) preparing = preparing || (sl.prepare && cmds[sl.cmd].stmt == c.stmt);
        if (!prepared_[c.stmt] && !preparing) {
            slots.push_back(Slot{i, true});
            if (PQsendPrepare(conn_, name.c_str(), kStatements[c.stmt], 0, nullptr) != 1) return false;
        }
        std::array<const char *, 8> values{};
        std::array<int, 8> lengths{};
        const std::size_t n = c.values.size();
        for (std::size_t k = 0; k < n; ++k) {
            values[k] = c.values[k].data();
            lengths[k] = static_cast<int>(c.values[k].size());
        }
        slots.push_back(Slot{i, false});
        return PQsendQueryPrepared(conn_, name.c_str(), static_cast<int>(n), values.data(), lengths.data(),
                                   c.binary.data(), 1) == 1;
    }

    // The deferred commands, then `last`, in libpq's pipeline mode: sent together, answered
    // together, one wait for the server instead of one each. `last`'s result is returned. The
    // first failure is thrown with its own command's context; what follows it in the pipeline was
    // skipped by the server. A connection left in pipeline mode (it broke
    // half-way) is not healthy: its pool closes it. `after`, when given, goes in the same round
    // trip behind a sync of its own, so that it runs whatever became of the others; `after_ok`
    // says whether it did (set before anything is thrown).
    Result pipelined(Command last, std::string_view context, const Command *after = nullptr, bool *after_ok = nullptr) {
        std::vector<Command> cmds = merged(std::exchange(pending_, {}));
        const std::size_t deferred = cmds.size();
        failed_deferred_ = false;
        cmds.push_back(std::move(last));
        if (PQenterPipelineMode(conn_) != 1) throw_result(conn_, nullptr, context);
        std::vector<Slot> slots, after_slots;
        bool sent = true;
        for (std::size_t i = 0; sent && i < cmds.size(); ++i) sent = send(cmds, i, slots);
        if (sent) sent = PQpipelineSync(conn_) == 1;
        if (sent && after != nullptr) {
            cmds.push_back(*after);
            sent = send(cmds, cmds.size() - 1, after_slots) && PQpipelineSync(conn_) == 1;
        }
        if (!sent) throw_result(conn_, nullptr, context);
        std::vector<Result> results = until_sync(context);
        std::vector<Result> after_results;
        if (after != nullptr) after_results = until_sync(context);
        PQexitPipelineMode(conn_);
        // a preparation that succeeded stays, whatever became of the rest
        auto keep_prepared = [&](const std::vector<Slot> &sl, const std::vector<Result> &res) {
            for (std::size_t i = 0; i < res.size() && i < sl.size(); ++i) {
                if (sl[i].prepare && PQresultStatus(res[i].get()) == PGRES_COMMAND_OK) prepared_[cmds[sl[i].cmd].stmt] = true;
            }
        };
        keep_prepared(slots, results);
        if (after != nullptr) {
            keep_prepared(after_slots, after_results);
            *after_ok = after_results.size() == after_slots.size() && !after_results.empty() &&
                        PQresultStatus(after_results.back().get()) == PGRES_TUPLES_OK;
        }
        for (std::size_t i = 0; i < results.size(); ++i) {
            const auto st = PQresultStatus(results[i].get());
            if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK || st == PGRES_PIPELINE_ABORTED) continue;
            roll_back_if_aborted();
            failed_deferred_ = i < slots.size() && slots[i].cmd < deferred;
            throw_result(conn_, results[i].get(), i < slots.size() ? std::string_view(cmds[slots[i].cmd].context) : context);
        }
        if (results.size() != slots.size() || (!results.empty() && PQresultStatus(results.back().get()) == PGRES_PIPELINE_ABORTED)) {
            roll_back_if_aborted();
            throw StoreError(Code::StorageError, std::string(context) + ": the database's answers were cut short");
        }
        return std::move(results.back());  // `last`'s: as many results as slots, and it has one
    }

    // Every result of a pipeline up to its sync. Each command's results end with a null; the
    // sync's marks the end of them all.
    std::vector<Result> until_sync(std::string_view context) {
        std::vector<Result> results;
        for (int nulls = 0; nulls < 2;) {
            PGresult *raw = PQgetResult(conn_);
            if (raw == nullptr) {
                ++nulls;  // two in a row: the connection broke before the sync came back
                continue;
            }
            nulls = 0;
            if (PQresultStatus(raw) == PGRES_PIPELINE_SYNC) {
                PQclear(raw);
                return results;
            }
            results.emplace_back(raw);
        }
        throw_result(conn_, results.empty() ? nullptr : results.back().get(), context);
    }

    // A transaction a failed statement left aborted is ended, so the connection can be kept.
    void roll_back_if_aborted() noexcept {
        if (PQtransactionStatus(conn_) != PQTRANS_INERROR) return;
        Result r(PQexec(conn_, "ROLLBACK"));
    }

    PGconn *conn_ = nullptr;
    std::array<bool, StmtCount> prepared_{};
    std::vector<Command> pending_;  // deferred writes (defer), sent with the next statement
    bool failed_deferred_ = false;
    Pool *pool_ = nullptr;

public:
    bool lent = false;  // handed out by its pool to a thread (Pool::take), not yet given back
};

// How long a transaction waits for one of the process's connections when all are busy.
constexpr std::chrono::seconds kConnectionWait{5};

// The connections a thread holds (of any pool): a thread that holds one never waits for another.
thread_local std::size_t t_held = 0;

class Pool {
public:
    Pool(std::string conninfo, std::size_t most) : conninfo_(std::move(conninfo)), most_(std::max<std::size_t>(most, 1)) {}

    std::unique_ptr<Connection> take() {
        std::unique_lock<std::mutex> hold(lock_);
        const auto deadline = std::chrono::steady_clock::now() + kConnectionWait;
        for (;;) {
            if (!idle_.empty()) {
                auto c = std::move(idle_.back());
                idle_.pop_back();
                return lend(std::move(c));
            }
            if (open_ < most_ || t_held > 0) break;
            if (freed_.wait_until(hold, deadline) == std::cv_status::timeout && idle_.empty() && open_ >= most_) {
                throw StoreError(Code::StorageError, "all " + std::to_string(most_) +
                                                         " connections to PostgreSQL of this process are busy");
            }
        }
        ++open_;  // counted before it is made: others wait for it rather than open one more
        hold.unlock();
        try {
            return lend(std::make_unique<Connection>(conninfo_, this));
        } catch (...) {
            closed();
            throw;
        }
    }
    // Kept for the next transaction; a connection that broke, or is still in a transaction, is
    // closed instead.
    void give(std::unique_ptr<Connection> c) {
        if (!c) return;
        returned(*c);
        if (!c->healthy()) return;  // closed here: ~Connection counts it out
        {
            std::lock_guard<std::mutex> hold(lock_);
            if (open_ <= most_) {  // not one taken beyond the bound by a thread that held another
                idle_.push_back(std::move(c));
                freed_.notify_one();
                return;
            }
        }
        c.reset();  // outside the lock: ~Connection takes it
    }
    // A connection of this pool closed (~Connection).
    void closed() {
        std::lock_guard<std::mutex> hold(lock_);
        if (open_ > 0) --open_;
        freed_.notify_one();
    }
    static void returned(Connection &c) {
        if (!c.lent) return;
        c.lent = false;
        if (t_held > 0) --t_held;
    }
    // The idle connections are closed before the pool is gone.
    ~Pool() {
        std::vector<std::unique_ptr<Connection>> idle;
        {
            std::lock_guard<std::mutex> hold(lock_);
            idle.swap(idle_);
        }
    }

private:
    static std::unique_ptr<Connection> lend(std::unique_ptr<Connection> c) {
        c->lent = true;
        ++t_held;
        return c;
    }

    const std::string conninfo_;
    const std::size_t most_;
    std::mutex lock_;
    std::condition_variable freed_;
    std::size_t open_ = 0;  // made and not yet closed: idle or lent
    std::vector<std::unique_ptr<Connection>> idle_;
};

Connection::~Connection() {
    if (conn_ != nullptr) PQfinish(conn_);
    if (pool_ != nullptr) {
        Pool::returned(*this);
        pool_->closed();
    }
}

// The principals SessionsWithUsers found for `keys` (asked with their legacy forms), in the keys'
// order; nullptr where a key found none, or a session whose account is gone (NULL).
std::vector<std::shared_ptr<const Principal>> principals_of(const Result &r, const std::vector<std::string_view> &keys) {
    std::vector<std::shared_ptr<const Principal>> out(keys.size()), legacy(keys.size());
    const int rows = PQntuples(r.get());
    for (int row = 0; row < rows; ++row) {
        if (PQgetisnull(r.get(), row, 2)) continue;
        const std::string_view key = cell(r, row, 0);
        auto p = std::make_shared<const Principal>(Principal{decode_user(cell(r, row, 2)), decode_session(key, cell(r, row, 1))});
        for (std::size_t i = 0; i < keys.size(); ++i) {  // a key asked twice gets it twice
            if (keys[i] == key) out[i] = p;
            else if (!legacy_key(keys[i]).empty() && legacy_key(keys[i]) == key) legacy[i] = p;
        }
    }
    for (std::size_t i = 0; i < keys.size(); ++i)
        if (!out[i]) out[i] = std::move(legacy[i]);
    return out;
}

// An event loop's session reads (SessionReader) over a connection of their own, in non-blocking
// mode: the loop's thread never waits for the server. Its one statement, SessionsWithUsers, is
// prepared when the connection is made, under a comment (kMark) that tells the connection apart
// in pg_stat_activity's query column. It lives as long as the worker, so its plan must suit
// tables of any size: a plan made while they were small (a fresh site, a test) would scan them
// whole once they are large, until an ANALYZE happened to invalidate it (bench/run's GET /me fell
// from 90 000 answers a second to 2 000 after its sign-ins had filled the tables). So the
// connection plans no sequential scan (enable_seqscan off: every lookup is by a primary key).
class PgSessionReader final : public SessionReader {
public:
    explicit PgSessionReader(std::string conninfo) : conninfo_(std::move(conninfo)) {}
    ~PgSessionReader() override { close(); }
    PgSessionReader(const PgSessionReader &) = delete;
    PgSessionReader &operator=(const PgSessionReader &) = delete;

    void connect() override {
        close();
        PGconn *conn = open_connection(conninfo_);
        Result set(PQexec(conn, "SET enable_seqscan = off"));
        const std::string sql = std::string(kMark) + kStatements[SessionsWithUsers];
        Result p(PQresultStatus(set.get()) == PGRES_COMMAND_OK ? PQprepare(conn, kName, sql.c_str(), 0, nullptr) : nullptr);
        if (PQresultStatus(p.get()) != PGRES_COMMAND_OK || PQsetnonblocking(conn, 1) != 0) {
            try {
                throw_result(conn, p ? p.get() : set.get(), "prepare the session reads");
            } catch (...) {
                PQfinish(conn);
                throw;
            }
        }
        conn_ = conn;
    }
    int socket() const override { return conn_ != nullptr ? PQsocket(conn_) : -1; }
    bool busy() const override { return !keys_.empty(); }

    void send(const std::vector<std::string_view> &keys) override {
        if (conn_ == nullptr || busy() || keys.empty()) throw StoreError(Code::Internal, "read sessions: not ready to send");
        const std::string array = bytea_array(with_legacy_keys(keys));
        const char *values[] = {array.data()};
        const int lengths[] = {static_cast<int>(array.size())};
        const int formats[] = {1};
        if (PQsendQueryPrepared(conn_, kName, 1, values, lengths, formats, 1) != 1) fail(nullptr);
        keys_.assign(keys.begin(), keys.end());
        flush();
    }
    bool wants_write() const override { return wants_write_; }
    void flush() override {
        if (conn_ == nullptr) return;
        const int left = PQflush(conn_);
        if (left < 0) fail(nullptr);
        wants_write_ = left == 1;
    }

    std::optional<std::vector<std::shared_ptr<const Principal>>> receive() override {
        if (conn_ == nullptr) return std::nullopt;
        if (PQconsumeInput(conn_) != 1 || PQstatus(conn_) != CONNECTION_OK) fail(nullptr);
        // Over TLS, what the socket brought may wait decrypted in the TLS library rather than in
        // the socket (a record longer than libpq's free room), where no readiness of the socket
        // tells of it: a few more reads take it (a record is at most 16 KiB, and libpq reads
        // 8 KiB or more at a time). A read with nothing there returns at once.
        for (int more = 0; more < kMoreReads && busy() && PQisBusy(conn_) != 0; ++more)
            if (PQconsumeInput(conn_) != 1) fail(nullptr);
        if (wants_write_) flush();
        // PQgetResult waits while the answer is incomplete: asked only when it is not
        while (busy() && PQisBusy(conn_) == 0) {
            Result r(PQgetResult(conn_));
            if (r) {
                if (!result_) result_ = std::move(r);
                continue;
            }
            // the end of the answer
            Result got = std::move(result_);
            std::vector<std::string> keys = std::move(keys_);
            keys_.clear();
            if (!got || PQresultStatus(got.get()) != PGRES_TUPLES_OK) fail(got.get());
            std::vector<std::string_view> views(keys.begin(), keys.end());
            return principals_of(got, views);
        }
        return std::nullopt;
    }

    void close() override {
        if (conn_ != nullptr) PQfinish(conn_);
        conn_ = nullptr;
        keys_.clear();
        result_.reset();
        wants_write_ = false;
    }

private:
    static constexpr const char *kName = "r";
    static constexpr int kMoreReads = 2;
    static constexpr const char *kMark = "/* ngx_signin session reads */ ";
    [[noreturn]] void fail(const PGresult *res) {
        PGconn *conn = conn_;
        conn_ = nullptr;  // closed whatever the failure: the next connect() makes a fresh one
        struct Finish {
            PGconn *c;
            ~Finish() { PQfinish(c); }
        } finish{conn};
        keys_.clear();
        result_.reset();
        wants_write_ = false;
        throw_result(conn, res, "read sessions");
    }

    const std::string conninfo_;
    PGconn *conn_ = nullptr;
    std::vector<std::string> keys_;  // of the read sent (busy)
    Result result_;                  // its answer, while the rest comes
    bool wants_write_ = false;
};

// ---- transactions ------------------------------------------------------------------------------

// How a transaction runs: a write (SERIALIZABLE), a whole-store scan (one REPEATABLE READ
// snapshot), or the reads of a request (each statement on its own: see read() below).
enum class Kind { Write, Snapshot, Reads };

// A write batch running on this thread (PgStore::batch): every write() of it is a part of one
// transaction on one connection, committed once at the end.
struct Group {
    const void *store = nullptr;  // whose batch
    std::unique_ptr<Connection> conn;
    bool begun = false;    // BEGIN was sent, or queued with the deferred writes
    bool sent = false;     // a statement of the transaction went to the server (its snapshot is taken)
    // A write failed (the transaction is aborted) or was abandoned after it changed something
    // (its changes cannot be taken back alone): nothing of this run is kept.
    bool spoiled = false;
    std::vector<std::int64_t> locks;  // serialize_on's keys, held by the connection until the end
    // The batch holds the events' lock (kEventsLock) from before its transaction began: no other
    // transaction writes an event until it ends. Its events take their keys from event_keys,
    // drawn from the sequence kEventKeys at a time, without a round trip each.
    bool events_alone = false;
    std::vector<std::string> event_keys;
    std::size_t next_event_key = 0;
    // Read ahead (read_tokens_ahead): a token's record by its key, an account's by its address
    // key; nullopt where the store had none. A write of the batch drops what it changes.
    std::unordered_map<std::string, std::optional<std::string>> tokens, users;
    // An address's tokens as the batch read them with its account (PgTxn::addresses): a flood of
    // token requests for one address reads them once a batch instead of once a request.
    std::unordered_map<std::string, std::vector<TokenRecord>> address_tokens;
};
thread_local Group *t_group = nullptr;

// The write batches of every worker of every node take turns: one runs at a time. Two batches at
// once nearly always lost a serialization race to each other (their reads and writes share index
// pages, where PostgreSQL's serializable checks lock whole pages) and ran again with a
// transaction per write: 73-88 % of exchange batches did in bench/run (2026-11-29). Waiting for
// the turn costs less: the jobs that arrive meanwhile join the next batch. A turn not given
// within kBatchTurnWait (a node that vanished holding it, until the database notices) is not
// waited for: the batch runs beside the others, as before.
constexpr std::int64_t kBatchLock = 0x5349474e494e4231;  // "SIGNINB1"
constexpr const char *kBatchTurnWait = "2000ms";

// The events' lock, for a user's events sent in order though written by several nodes. A write
// batch that got its turn tries it, before its transaction begins, and keeps it to its end; any
// other transaction that writes an event first waits for it (shared: such writers do not wait for
// each other), and draws its event's key after. So a batch that holds it sees every event written
// before it, and no event is written beside it: the events it writes may be held by the worker
// that wrote them and sent without a claim, after the batch's commit (events.hpp, FreshEvents),
// as on LMDB. A batch that did not get it writes its events as the others, for the claims.
// (A transaction outside the batches that holds an address's key (serialize_on) and waits here,
// while the batch holding this lock waits for that key before its BEGIN, is a deadlock that
// PostgreSQL breaks after deadlock_timeout: one of them fails with 40P01 and runs again.)
constexpr std::int64_t kEventsLock = 0x5349474e494e4532;  // "SIGNINE2"
constexpr std::int64_t kEventKeys = 128;

// serialize_on's lock: 64 bits of a digest of the key (two keys that share them only wait for
// each other needlessly).
std::int64_t lock_key(std::string_view key) {
    unsigned char digest[8];
    static const unsigned char kContext[] = "ngx_signin serialize_on";
    crypto_generichash(digest, sizeof digest, reinterpret_cast<const unsigned char *>(key.data()), key.size(),
                       kContext, sizeof kContext - 1);
    std::uint64_t k = 0;
    for (unsigned char b : digest) k = (k << 8) | b;
    return static_cast<std::int64_t>(k);
}

template <class Iface>
class PgTxn : public Iface {
public:
    PgTxn(Pool &pool, Kind kind) : pool_(pool), kind_(kind), conn_(pool.take()) {}
    // A part of a write batch: the batch's connection and transaction.
    PgTxn(Pool &pool, Group &group) : pool_(pool), kind_(Kind::Write), group_(&group) {
        if (!group.conn) group.conn = pool.take();
    }
    ~PgTxn() override {
        if (group_ != nullptr) {
            if (!ended_ && wrote_) group_->spoiled = true;
            return;
        }
        if (conn_ && open_) {
            conn_->discard();
            try {
                conn_->exec("ROLLBACK", "end a transaction");
            } catch (const StoreError &) {
                return;  // the connection is dropped with the transaction (and its lock with it)
            }
        }
        unlock();
        pool_.give(std::move(conn_));
    }
    PgTxn(const PgTxn &) = delete;
    PgTxn &operator=(const PgTxn &) = delete;

    std::optional<User> user_by_id(std::string_view id) override {
        if (id.empty()) return std::nullopt;
        if (prefetched_ && prefetched_->id == id) {  // came with the session: authenticate's next read
            std::optional<User> u = std::move(prefetched_);
            prefetched_.reset();
            return u;
        }
        Result r = run(UserById, {id}, "read user");
        if (PQntuples(r.get()) == 0) return std::nullopt;
        return decode_user(cell(r, 0, 0));
    }
    std::optional<User> user_by_email(std::string_view group_id, std::string_view email) override {
        std::string addr = addr_key(group_id, email);
        if (group_ != nullptr) {
            auto it = group_->users.find(addr);
            if (it != group_->users.end()) return it->second ? std::optional<User>(decode_user(*it->second)) : std::nullopt;
        }
        if (kind_ == Kind::Write) return user_and_tokens(std::move(addr));
        Result r = run(UserByEmail, {addr}, "read user by email");
        if (PQntuples(r.get()) == 0) return std::nullopt;
        return decode_user(cell(r, 0, 0));
    }
    // In a write, an address's account comes with its tokens: a token request (or a typed code)
    // reads both, and its next reads of the tokens are answered from here (addresses()) instead
    // of a round trip each. In a write batch the account is kept for the batch's later requests
    // too.
    std::optional<User> user_and_tokens(std::string addr) {
        Result r = run(UserAndTokensByEmail, {addr}, "read user by email");
        std::optional<User> user;
        std::optional<std::string> user_rec;
        std::vector<TokenRecord> tokens;
        for (int row = 0; row < PQntuples(r.get()); ++row) {
            if (PQgetisnull(r.get(), row, 0)) {
                user_rec = std::string(cell(r, row, 1));
                user = decode_user(*user_rec);
            } else {
                tokens.push_back(decode_token(cell(r, row, 0), cell(r, row, 1)));
            }
        }
        if (group_ != nullptr) group_->users[addr] = std::move(user_rec);
        addresses()[std::move(addr)] = std::move(tokens);
        return user;
    }
    std::optional<TokenRecord> token(std::string_view key) override {
        if (group_ != nullptr && !key.empty()) {
            // read ahead: found under its key, or else under its legacy key, as keyed() looks
            auto it = group_->tokens.find(std::string(key));
            if (it != group_->tokens.end()) {
                if (it->second) return decode_token(key, *it->second);
                const std::string_view legacy = legacy_key(key);
                if (legacy.empty()) return std::nullopt;
                auto old = group_->tokens.find(std::string(legacy));
                if (old != group_->tokens.end()) {
                    if (old->second) return decode_token(legacy, *old->second);
                    return std::nullopt;
                }
            }
        }
        return keyed<TokenRecord>(Token, key, "read token", decode_token, true);
    }
    // Store::read_tokens_ahead in this batch's transaction: one statement for all the keys, which
    // brings each token's account along.
    void read_ahead(const std::vector<std::string> &keys) {
        if (group_ == nullptr || keys.empty()) return;
        const std::vector<std::string_view> asked = with_legacy_keys(keys);
        Result r = run(TokensAny, {Param::kept(bytea_array(asked))}, "read tokens ahead");
        std::unordered_map<std::string, std::optional<std::string>> tokens, users;
        for (std::string_view k : asked) tokens.emplace(std::string(k), std::nullopt);
        for (int row = 0; row < PQntuples(r.get()); ++row) {
            const TokenRecord t = decode_token(cell(r, row, 0), cell(r, row, 1));
            tokens[std::string(cell(r, row, 0))] = std::string(cell(r, row, 1));
            std::string addr = addr_key(t.group_id, t.email);
            if (cell(r, row, 2) != addr) continue;  // a row whose address column says otherwise: read when asked
            users[std::move(addr)] = PQgetisnull(r.get(), row, 3) ? std::nullopt : std::optional<std::string>(cell(r, row, 3));
        }
        group_->tokens = std::move(tokens);
        group_->users = std::move(users);
    }
    std::vector<TokenRecord> tokens_for(std::string_view group_id, std::string_view email) override {
        std::string addr = addr_key(group_id, email);
        if (auto it = addresses().find(addr); it != addresses().end()) return it->second;  // read with the account
        return rows<TokenRecord>(TokensFor, {addr}, "read tokens of an address", decode_token);
    }
    std::optional<SessionRecord> session(std::string_view key) override {
        if (kind_ == Kind::Reads && !key.empty()) {
            // a request's session brings its user along (one round trip for authenticate)
            Result r = run(SessionWithUser, {key}, "read session");
            if (PQntuples(r.get()) == 0 && !legacy_key(key).empty()) r = run(SessionWithUser, {legacy_key(key)}, "read session");
            if (PQntuples(r.get()) == 0) return std::nullopt;
            SessionRecord s = decode_session(cell(r, 0, 0), cell(r, 0, 1));
            prefetched_.reset();
            if (!PQgetisnull(r.get(), 0, 2)) prefetched_ = decode_user(cell(r, 0, 2));
            return s;
        }
        return keyed<SessionRecord>(Session, key, "read session", decode_session, true);
    }
    // A request's reads: every key's session with its user, in one statement that also looks
    // under each key's legacy form (found there only when the key itself finds nothing, as
    // session() does).
    std::vector<std::shared_ptr<const Principal>> principals(const std::vector<std::string_view> &keys) override {
        if (kind_ != Kind::Reads || keys.size() < 2) return Iface::principals(keys);
        return principals_of(run(SessionsWithUsers, {Param::kept(bytea_array(with_legacy_keys(keys)))}, "read sessions"), keys);
    }
    std::optional<SessionRecord> session_by_id(std::string_view id) override {
        return keyed<SessionRecord>(SessionById, id, "read session by id", decode_session, false);
    }
    std::vector<SessionRecord> sessions_of(std::string_view user_id) override {
        return rows<SessionRecord>(SessionsOf, {user_id}, "read sessions of a user", decode_session);
    }
    std::vector<SessionRecord> sessions_of_browser(std::string_view browser) override {
        if (browser.empty()) return {};
        // and under the digest alone, for a browser cookie an earlier build made (legacy_key)
        std::string_view legacy = legacy_key(browser);
        if (legacy.empty()) legacy = browser;
        return rows<SessionRecord>(SessionsOfBrowser, {browser, legacy}, "read sessions of a browser", decode_session);
    }
    std::vector<AuditEntry> audit(std::size_t limit) override {
        if (limit == 0) return {};
        return rows<AuditEntry>(Audit, {static_cast<std::int64_t>(limit)}, "read audit", decode_audit);
    }
    std::size_t user_count() override { return count(UserCount, "count users"); }
    std::vector<User> users(std::string_view after_id, std::size_t limit) override {
        std::vector<User> out;
        if (limit == 0) return out;
        Result r = run(Users, {after_id, static_cast<std::int64_t>(limit)}, "list users");
        for (int i = 0; i < PQntuples(r.get()); ++i) out.push_back(decode_user(cell(r, i, 0)));
        return out;
    }
    std::vector<std::string> user_index(std::string_view prefix, std::string_view after,
                                        std::size_t limit) override {
        std::vector<std::string> out;
        if (limit == 0 || prefix.empty()) return out;
        Result r = run(UserIndex, {prefix, after, prefix_end(prefix), static_cast<std::int64_t>(limit)}, "search users");
        for (int i = 0; i < PQntuples(r.get()); ++i) out.emplace_back(cell(r, i, 0));
        return out;
    }
    std::size_t audit_count() override { return count(AuditCount, "count audit entries"); }
    ReadTxn::Counts counts() override {
        ReadTxn::Counts c;
        c.users = count(UserCount, "count users");
        c.tokens = count(CountTokens, "count tokens");
        c.token_index = c.tokens;  // the address is a column of the token's row
        c.sessions = count(CountSessions, "count sessions");
        c.passkeys = count(CountPasskeys, "count passkeys");
        c.audit = count(AuditCount, "count audit entries");
        c.outbox = count(CountOutbox, "count outbox entries");
        c.events = count(CountEvents, "count events");
        c.provider_links = count(CountLinks, "count provider links");
        return c;
    }
    std::vector<OutboxRecord> outbox_due(Millis now, std::size_t limit) override {
        if (limit == 0) return {};
        return rows<OutboxRecord>(OutboxDue, {now, static_cast<std::int64_t>(limit)}, "read outbox", decode_outbox);
    }
    std::optional<OutboxRecord> outbox(std::string_view key) override {
        return keyed<OutboxRecord>(Outbox, key, "read outbox", decode_outbox, false);
    }
    std::size_t outbox_count() override { return count(CountOutbox, "count outbox entries"); }
    std::vector<EventRecord> events(std::size_t limit) override {
        if (limit == 0) return {};
        return rows<EventRecord>(Events, {static_cast<std::int64_t>(limit)}, "read events", decode_event);
    }
    // In pages, so that a sender that finds what it wants early reads no more of a long queue.
    void event_heads(std::size_t limit, const std::function<bool(const EventHead &)> &visit) override {
        constexpr std::size_t kPage = 64;
        std::string after;  // no key is less than the empty one
        while (limit > 0) {
            const std::size_t want = std::min(limit, kPage);
            Result r = run(EventsAfter, {after, static_cast<std::int64_t>(want)}, "read events");
            const int n = PQntuples(r.get());
            for (int i = 0; i < n; ++i) {
                if (!visit(decode_event_head(cell(r, i, 0), cell(r, i, 1)))) return;
            }
            if (static_cast<std::size_t>(n) < want) return;
            after = std::string(cell(r, n - 1, 0));
            limit -= want;
        }
    }
    std::optional<EventRecord> event(std::string_view key) override {
        return keyed<EventRecord>(Event, key, "read an event", decode_event, false);
    }
    std::size_t event_count() override { return count(CountEvents, "count events"); }
    std::optional<MfaRecord> mfa(std::string_view user_id) override {
        return keyed<MfaRecord>(Mfa, user_id, "read second factors", decode_mfa, false);
    }
    std::optional<MfaPendingRecord> mfa_pending(std::string_view hash) override {
        return keyed<MfaPendingRecord>(MfaPending, hash, "read a pending second factor", decode_mfa_pending, false);
    }
    std::optional<PasskeyRecord> passkey(std::string_view key) override {
        return keyed<PasskeyRecord>(Passkey, key, "read a passkey", decode_passkey, false);
    }
    std::vector<PasskeyRecord> passkeys_of(std::string_view user_id) override {
        return rows<PasskeyRecord>(PasskeysOf, {user_id}, "read a user's passkeys", decode_passkey);
    }
    std::optional<std::string> counter(std::string_view key) override {
        if (key.empty()) return std::nullopt;
        Result r = run(Counter, {key}, "read a counter");
        if (PQntuples(r.get()) == 0) return std::nullopt;
        return std::string(cell(r, 0, 0));
    }
    bool challenge_spent(std::string_view hash) override {
        if (hash.empty()) return false;
        return PQntuples(run(ChallengeSpent, {hash}, "read a spent challenge").get()) > 0;
    }
    std::optional<ProviderLinkRecord> provider_link(std::string_view key) override {
        return keyed<ProviderLinkRecord>(ProviderLink, key, "read a provider link", decode_provider_link, false);
    }
    std::vector<ProviderLinkRecord> provider_links_of(std::string_view user_id) override {
        return rows<ProviderLinkRecord>(ProviderLinksOf, {user_id}, "read a user's provider links",
                                        decode_provider_link);
    }
    std::optional<op::CodeRecord> oidc_code(std::string_view key) override {
        return keyed<op::CodeRecord>(OidcCode, key, "read a provider code", decode_oidc_code, false);
    }
    std::optional<op::AccessTokenRecord> oidc_access_token(std::string_view key) override {
        return keyed<op::AccessTokenRecord>(OidcAccess, key, "read a provider access token", decode_oidc_access, false);
    }
    std::optional<op::RefreshTokenRecord> oidc_refresh_token(std::string_view key) override {
        return keyed<op::RefreshTokenRecord>(OidcRefresh, key, "read a provider refresh token", decode_oidc_refresh,
                                             false);
    }
    std::optional<op::RefreshFamily> oidc_family(std::string_view id) override {
        return keyed<op::RefreshFamily>(OidcFamily, id, "read a provider refresh family", decode_oidc_family, false);
    }
    std::optional<op::ConsentRecord> oidc_consent(std::string_view user_id, std::string_view client_id) override {
        if (user_id.empty() || client_id.empty()) return std::nullopt;
        return keyed<op::ConsentRecord>(OidcConsent, oidc_consent_key(user_id, client_id), "read a consent",
                                        decode_oidc_consent, false);
    }
    std::vector<op::ConsentRecord> oidc_consents_of(std::string_view user_id) override {
        if (user_id.empty()) return {};
        return rows<op::ConsentRecord>(OidcConsentsOf, {user_id}, "read a user's consents", decode_oidc_consent);
    }

protected:
    // serialize_on: the lock is the session's, taken before BEGIN, so that this transaction's
    // snapshot is taken after the previous holder's COMMIT (a lock taken inside a SERIALIZABLE
    // transaction would come after its snapshot, and the race would be lost all the same).
    void lock_before_begin(std::string_view key) {
        if (group_ != nullptr) {
            lock_in_group(key);
            return;
        }
        if (!conn_) throw StoreError(Code::StorageError, "transaction already ended");
        if (open_ || locked_) throw StoreError(Code::Internal, "serialize_on after the transaction began");
        lock_key_ = lock_key(key);
        locked_ = true;  // set first: a wait that fails half-way may have the lock all the same
        conn_->run(AdvisoryLock, {lock_key_}, "wait for the other transactions on that key");
    }

    // Gives the session's lock back when the transaction has ended; a connection that cannot say
    // so is closed (which gives it back too), never kept with the lock held.
    void unlock() noexcept {
        if (!locked_ || !conn_) return;
        locked_ = false;
        try {
            conn_->run(AdvisoryUnlock, {lock_key_}, "end a transaction");
        } catch (...) {
            conn_.reset();
        }
    }

    // A statement of this transaction, which begins at its first (BEGIN goes with it).
    Result run(Stmt s, std::initializer_list<Param> params, std::string_view context) {
        if (group_ != nullptr) return run_in_group(s, params, context);
        if (!conn_) throw StoreError(Code::StorageError, "transaction already ended");
        if (!open_ && kind_ != Kind::Reads) {
            open_ = true;  // set first: a BEGIN sent is ended by the destructor's ROLLBACK
            return conn_->run(s, params, context,
                              kind_ == Kind::Write ? "BEGIN ISOLATION LEVEL SERIALIZABLE"
                                                   : "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY");
        }
        return conn_->run(s, params, context);
    }

    // A write whose answer is not read: sent with the transaction's next statement, or with its
    // COMMIT, in one round trip (Connection::defer). What fails is thrown there.
    void later(Stmt s, std::initializer_list<Param> params, std::string_view context) {
        if (group_ != nullptr) {
            if (ended_) throw StoreError(Code::StorageError, "transaction already ended");
            if (group_->spoiled) throw StoreError(Code::StorageError, std::string(context) + ": the write batch runs again");
            wrote_ = true;
            if (!group_->begun) {
                group_->begun = true;
                group_->conn->defer_text("BEGIN ISOLATION LEVEL SERIALIZABLE", context);
            }
            group_->conn->defer(s, params, context);
            return;
        }
        if (!conn_) throw StoreError(Code::StorageError, "transaction already ended");
        if (!open_) {
            open_ = true;  // set first: a BEGIN deferred is dropped and ended by the destructor's ROLLBACK
            conn_->defer_text("BEGIN ISOLATION LEVEL SERIALIZABLE", context);
        }
        conn_->defer(s, params, context);
    }

    // A statement of a write batch's transaction. A failed one leaves that transaction aborted:
    // the batch's run is spoiled, and every later statement of it fails at once.
    Result run_in_group(Stmt s, std::initializer_list<Param> params, std::string_view context) {
        if (ended_) throw StoreError(Code::StorageError, "transaction already ended");
        if (group_->spoiled) throw StoreError(Code::StorageError, std::string(context) + ": the write batch runs again");
        if (changes(s)) wrote_ = true;
        try {
            group_->sent = true;  // set first: a statement that fails half-way may have been run
            if (!group_->begun) {
                group_->begun = true;
                return group_->conn->run(s, params, context, "BEGIN ISOLATION LEVEL SERIALIZABLE");
            }
            return group_->conn->run(s, params, context);
        } catch (const StoreError &) {
            group_->spoiled = true;
            throw;
        }
    }

    // serialize_on in a write batch. Before the batch's transaction began (or while its BEGIN
    // waits with deferred writes nothing has sent yet), the lock is taken as outside a batch
    // (waiting for the holder's commit, so that the batch's snapshot comes after it; ahead of
    // what waits to be sent); the batch keeps it to its end. After that, waiting would not make
    // the snapshot see the holder's commit, and could wait on a batch that waits on this one: a
    // key that another transaction holds spoils this run instead, and the batch runs again with
    // a transaction of its own for every write, which waits its turn.
    void lock_in_group(std::string_view key) {
        if (ended_) throw StoreError(Code::StorageError, "transaction already ended");
        if (group_->spoiled) throw StoreError(Code::StorageError, "the write batch runs again");
        const std::int64_t k = lock_key(key);
        for (std::int64_t held : group_->locks) {
            if (held == k) return;
        }
        if (!group_->sent) {
            group_->locks.push_back(k);  // first: a wait that fails half-way may have the lock all the same
            try {
                group_->conn->run_ahead(AdvisoryLock, {k}, "wait for the other transactions on that key");
            } catch (const StoreError &) {
                group_->spoiled = true;
                throw;
            }
            return;
        }
        Result r = run_in_group(TryAdvisoryLock, {k}, "take a key");
        if (!answered_true(r)) {
            group_->spoiled = true;
            throw StoreError(Code::StorageError, "another transaction holds that key: the write batch runs again");
        }
        group_->locks.push_back(k);
    }

    std::size_t count(Stmt s, std::string_view context) {
        Result r = run(s, {}, context);
        return static_cast<std::size_t>(number(r, 0, 0));
    }

    // The one record under `key` (row: key, rec); a token's or session's under its legacy key too.
    template <class T>
    std::optional<T> keyed(Stmt s, std::string_view key, std::string_view context,
                           T (*decode)(std::string_view, std::string_view), bool legacy) {
        if (key.empty()) return std::nullopt;
        Result r = run(s, {key}, context);
        if (PQntuples(r.get()) == 0 && legacy && !legacy_key(key).empty()) r = run(s, {legacy_key(key)}, context);
        if (PQntuples(r.get()) == 0) return std::nullopt;
        return decode(cell(r, 0, 0), cell(r, 0, 1));
    }

    template <class T>
    std::vector<T> rows(Stmt s, std::initializer_list<Param> params, std::string_view context,
                        T (*decode)(std::string_view, std::string_view)) {
        std::vector<T> out;
        Result r = run(s, params, context);
        const int n = PQntuples(r.get());
        out.reserve(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i) out.push_back(decode(cell(r, i, 0), cell(r, i, 1)));
        return out;
    }

    Pool &pool_;
    const Kind kind_;
    std::unique_ptr<Connection> conn_;  // none in a write batch: the batch's (group_)
    Group *group_ = nullptr;
    bool ended_ = false;   // in a write batch: commit() was called
    bool wrote_ = false;   // in a write batch: a statement that changes the store was sent
    bool open_ = false;    // BEGIN was sent
    bool locked_ = false;  // serialize_on's lock is (or may be) held by the connection
    std::int64_t lock_key_ = 0;
    std::optional<User> prefetched_;  // the user of the last session read (Kind::Reads)
    // The tokens of the addresses this transaction read with their accounts (user_and_tokens),
    // kept as its own token writes change them (PgWriteTxn::drop_token, remember_token), oldest
    // first as TokensFor orders them; in a write batch, the batch's (Group::address_tokens).
    std::unordered_map<std::string, std::vector<TokenRecord>> own_addresses_;
    std::unordered_map<std::string, std::vector<TokenRecord>> &addresses() {
        return group_ != nullptr ? group_->address_tokens : own_addresses_;
    }
};

class PgReadTxn final : public PgTxn<ReadTxn> {
public:
    explicit PgReadTxn(Pool &pool) : PgTxn(pool, Kind::Reads) {}
};

class PgWriteTxn final : public PgTxn<WriteTxn> {
public:
    explicit PgWriteTxn(Pool &pool) : PgTxn(pool, Kind::Write) {}
    PgWriteTxn(Pool &pool, Group &group) : PgTxn(pool, group) {}

    void serialize_on(std::string_view key) override { lock_before_begin(key); }

    void put_user(const User &u) override {
        auto old = user_by_id(u.id);
        if (old) forget_user(*old);
        forget_user(u);
        if (old && !old->email.empty() && (old->email != u.email || old->group_id != u.group_id)) {
            // only the entry that still names this user: never remove someone else's
            later(DelEmail, {addr_key(old->group_id, old->email), u.id}, "delete old email index");
        }
        const auto keys = user_index_keys(u);
        if (old) {
            std::vector<std::string> gone;
            for (auto &k : user_index_keys(*old))
                if (std::find(keys.begin(), keys.end(), k) == keys.end()) gone.push_back(std::move(k));
            if (!gone.empty()) later(DelUserIndex, {index_keys(gone)}, "delete search index");
        }
        write_user(u, keys);
    }
    void add_user(const User &u) override {
        forget_user(u);
        write_user(u, user_index_keys(u));
    }
    // What was read ahead of the batch about this account's address is no longer what it is.
    void forget_user(const User &u) {
        if (group_ != nullptr && !group_->users.empty()) group_->users.erase(addr_key(u.group_id, u.email));
    }
    void forget_token(std::string_view hash) {
        if (group_ == nullptr || group_->tokens.empty()) return;
        group_->tokens.erase(std::string(hash));
        if (!legacy_key(hash).empty()) group_->tokens.erase(std::string(legacy_key(hash)));
    }
    // The rows a token's write (under `hash`) or deletion (`legacy` too) leaves out of the
    // addresses' tokens kept (addresses()).
    void drop_token(std::string_view hash, std::string_view legacy) {
        for (auto &[addr, tokens] : addresses())
            std::erase_if(tokens, [&](const TokenRecord &t) { return t.hash == hash || (!legacy.empty() && t.hash == legacy); });
    }
    // A token written takes its place among its address's tokens where they are kept, in
    // TokensFor's order (created_at, then key).
    void remember_token(const TokenRecord &t) {
        if (addresses().empty()) return;
        drop_token(t.hash, {});
        auto it = addresses().find(addr_key(t.group_id, t.email));
        if (it == addresses().end()) return;
        auto &tokens = it->second;
        auto at = std::find_if(tokens.begin(), tokens.end(), [&](const TokenRecord &o) {
            return o.created_at > t.created_at || (o.created_at == t.created_at && o.hash > t.hash);
        });
        tokens.insert(at, t);
    }
    void write_user(const User &u, const std::vector<std::string> &keys) {
        later(PutUser, {u.id, encode_user(u)}, "write user");
        if (!u.email.empty()) later(PutEmail, {addr_key(u.group_id, u.email), u.id}, "write email index");
        if (!keys.empty()) later(PutUserIndex, {index_keys(keys)}, "write search index");
    }
    void del_user(std::string_view user_id) override {
        auto old = user_by_id(user_id);
        if (!old) return;
        forget_user(*old);
        if (!old->email.empty()) later(DelEmail, {addr_key(old->group_id, old->email), user_id}, "delete email index");
        if (const auto keys = user_index_keys(*old); !keys.empty()) later(DelUserIndex, {index_keys(keys)}, "delete search index");
        later(DelUser, {user_id}, "delete user");
    }
    void put_token(const TokenRecord &t) override {
        forget_token(t.hash);
        remember_token(t);
        later(PutToken, {t.hash, addr_key(t.group_id, t.email), t.created_at, t.expires_at, encode_token(t)},
            "write token");
    }
    void del_token(std::string_view hash) override {
        if (hash.empty()) return;
        forget_token(hash);
        drop_token(hash, legacy_key(hash));
        later(DelToken, {hash, legacy_key(hash).empty() ? hash : legacy_key(hash)}, "delete token");
    }
    void put_session(const SessionRecord &s) override {
        later(PutSession, {s.hash, s.id, s.user_id, s.browser, s.expires_at, encode_session(s)}, "write session");
    }
    void del_session(std::string_view hash) override {
        if (hash.empty()) return;
        later(DelSession, {hash, legacy_key(hash).empty() ? hash : legacy_key(hash)}, "delete session");
    }
    void write_audit(const AuditEntry &e) override {
        later(PutAudit, {timed_key(e.at), e.at, encode_audit(e)}, "write audit entry");
    }
    void put_outbox(OutboxRecord &r) override {
        r.key = timed_key(r.due_at);
        later(PutOutbox, {r.key, r.due_at, encode_outbox(r)}, "write outbox entry");
    }
    void del_outbox(std::string_view key) override {
        if (!key.empty()) later(DelOutbox, {key}, "delete outbox entry");
    }
    bool alone_with_events() const override { return group_ != nullptr && group_->events_alone; }
    void put_event(EventRecord &r) override {
        if (!alone_with_events()) {
            Result res = run(PutEvent, {encode_event(r), kEventsLock}, "write an event");
            r.key = std::string(cell(res, 0, 0));
            return;
        }
        if (group_->next_event_key == group_->event_keys.size()) {
            Result keys = run(EventKeys, {kEventKeys}, "draw event keys");
            group_->event_keys.clear();
            group_->next_event_key = 0;
            for (int i = 0; i < PQntuples(keys.get()); ++i) group_->event_keys.emplace_back(cell(keys, i, 0));
            if (group_->event_keys.empty()) throw StoreError(Code::StorageError, "draw event keys: no key came");
        }
        r.key = group_->event_keys[group_->next_event_key++];
        later(PutKeyedEvent, {r.key, encode_event(r)}, "write an event");
    }
    void update_event(const EventRecord &r) override { later(UpdateEvent, {r.key, encode_event(r)}, "write an event"); }
    void del_event(std::string_view key) override {
        if (!key.empty()) later(DelEvent, {key}, "delete an event");
    }
    void put_mfa(const MfaRecord &m) override { later(PutMfa, {m.user_id, encode_mfa(m)}, "write second factors"); }
    void del_mfa(std::string_view user_id) override {
        if (!user_id.empty()) later(DelMfa, {user_id}, "delete second factors");
    }
    void put_mfa_pending(const MfaPendingRecord &p) override {
        later(PutPending, {p.hash, p.user_id, p.expires_at, encode_mfa_pending(p)}, "write a pending second factor");
    }
    void del_mfa_pending(std::string_view hash) override {
        if (!hash.empty()) later(DelPending, {hash}, "delete a pending second factor");
    }
    std::size_t del_mfa_pending_of(std::string_view user_id) override {
        return affected(run(DelPendingOf, {user_id}, "delete a user's pending second factors"));
    }
    void put_passkey(const PasskeyRecord &p) override {
        later(PutPasskey, {p.key, p.user_id, encode_passkey(p)}, "write a passkey");
    }
    void del_passkey(std::string_view key) override {
        if (!key.empty()) later(DelPasskey, {key}, "delete a passkey");
    }
    void put_provider_link(const ProviderLinkRecord &l) override {
        later(PutLink, {l.key, l.user_id, encode_provider_link(l)}, "write a provider link");
    }
    void del_provider_link(std::string_view key) override {
        if (!key.empty()) later(DelLink, {key}, "delete a provider link");
    }
    void spend_challenge(std::string_view hash, Millis expires_at) override {
        later(SpendChallenge, {hash, expires_at}, "spend a challenge");
    }
    void put_counter(std::string_view key, std::string_view state, Millis expires_at) override {
        later(PutCounter, {key, expires_at, state}, "write a counter");
    }
    void del_counter(std::string_view key) override {
        if (!key.empty()) later(DelCounter, {key}, "delete a counter");
    }
    std::size_t del_counters(std::string_view prefix) override {
        if (prefix.empty()) return 0;
        return affected(run(DelCounters, {prefix}, "delete counters"));
    }
    void put_oidc_code(const op::CodeRecord &c) override {
        run(PutOidcCode, {c.key, c.user_id, c.expires_at, encode_oidc_code(c.spent ? spent_code(c) : c)},
            "write a provider code");
    }
    void put_oidc_access_token(const op::AccessTokenRecord &a) override {
        later(PutOidcAccess, {a.key, a.user_id, a.family_id, a.expires_at, encode_oidc_access(a)},
            "write a provider access token");
    }
    void del_oidc_access_token(std::string_view key) override {
        if (!key.empty()) later(DelOidcAccess, {key}, "delete a provider access token");
    }
    void put_oidc_family(const op::RefreshFamily &f) override {
        later(PutOidcFamily, {f.id, f.user_id, f.expires_at, encode_oidc_family(f)}, "write a provider refresh family");
    }
    void put_oidc_refresh_token(const op::RefreshTokenRecord &r) override {
        later(PutOidcRefresh, {r.key, r.family_id, r.expires_at, encode_oidc_refresh(r)},
            "write a provider refresh token");
    }
    void end_oidc_family(std::string_view id) override {
        auto f = oidc_family(id);
        if (!f) return;
        f->revoked = true;
        put_oidc_family(*f);
        later(DelFamilyTokens, {f->id}, "delete a family's tokens");
    }
    void put_oidc_consent(const op::ConsentRecord &c) override {
        later(PutOidcConsent, {oidc_consent_key(c.user_id, c.client_id), c.user_id, encode_oidc_consent(c)},
            "write a consent");
    }
    void del_oidc_consent(std::string_view user_id, std::string_view client_id) override {
        later(DelOidcConsent, {oidc_consent_key(user_id, client_id)}, "delete a consent");
    }
    std::size_t del_oidc_of(std::string_view user_id) override {
        if (user_id.empty()) return 0;
        Result r = run(DelOidcOf, {user_id}, "delete a user's grants");
        return static_cast<std::size_t>(number(r, 0, 0));
    }

    std::size_t purge_expired(Millis now, std::size_t budget) override {
        if (group_ != nullptr) group_->tokens.clear();
        addresses().clear();
        std::size_t n = 0;
        for (Stmt s : {PurgeTokens, PurgeSessions, PurgePending, PurgeChallenges, PurgeCounters, PurgeOidcCodes,
                       PurgeOidcAccess, PurgeOidcRefresh, PurgeOidcFamilies}) {
            if (n >= budget) break;
            n += affected(run(s, {now, static_cast<std::int64_t>(budget - n)}, "purge expired records"));
        }
        return n;
    }
    // Tokens are found by address through their own table's index: nothing is left behind.
    std::size_t purge_index(std::size_t) override { return 0; }
    std::size_t purge_audit(Millis before, std::size_t budget) override {
        if (budget == 0) return 0;
        return affected(run(PurgeAudit, {before, static_cast<std::int64_t>(budget)}, "purge audit entries"));
    }
    std::size_t trim_audit(std::size_t keep, std::size_t budget) override {
        if (budget == 0) return 0;
        return affected(run(TrimAudit, {static_cast<std::int64_t>(keep), static_cast<std::int64_t>(budget)},
                            "trim audit entries"));
    }
    void commit() override {
        if (group_ != nullptr) {  // kept in the batch, whose commit makes it durable
            if (ended_) throw StoreError(Code::StorageError, "transaction already ended");
            if (group_->spoiled) throw StoreError(Code::StorageError, "commit: the write batch runs again");
            ended_ = true;
            committed();
            return;
        }
        if (!conn_) throw StoreError(Code::StorageError, "transaction already ended");
        if (open_) {
            open_ = false;
            // a COMMIT that fails (a serialization failure found at the end, a lost connection)
            // has not committed: the caller is told, nothing is acknowledged
            conn_->exec("COMMIT", "commit");
        }
        unlock();  // committed: a failure to unlock closes the connection, it does not undo that
        pool_.give(std::move(conn_));
        committed();
    }

private:
    static std::size_t affected(const Result &r) {
        const char *n = PQcmdTuples(r.get());
        return n != nullptr && *n != '\0' ? static_cast<std::size_t>(std::stoull(n)) : 0;
    }
};

// ---- the store -------------------------------------------------------------------------------

class PgStore final : public Store {
public:
    explicit PgStore(const PgOptions &opts)
        : conninfo_(opts.conninfo),
          pool_(opts.conninfo, opts.connections),
          audit_max_(opts.audit_max != 0 ? opts.audit_max : kDefaultPgAuditMax) {
        if (sodium_init() < 0) throw StoreError(Code::StorageError, "libsodium failed to initialize");
        try {
            migrate();
            ready_ = true;
        } catch (const Unreachable &) {
            if (!opts.wait_for_server) throw;
        }
    }

    std::unique_ptr<ReadTxn> read() override {
        ensure_ready();
        return std::make_unique<PgReadTxn>(pool_);
    }
    StoreTraits traits() const override { return backends::kPg; }
    std::size_t audit_bound() const override { return audit_max_; }
    std::unique_ptr<WriteTxn> write() override {
        ensure_ready();
        auto txn = t_group != nullptr && t_group->store == this ? std::make_unique<PgWriteTxn>(pool_, *t_group)
                                                                 : std::make_unique<PgWriteTxn>(pool_);
        txn->follow(audit_hook());
        return txn;
    }

    // Group commit: first every write() of fn is a part of one SERIALIZABLE transaction, committed
    // once (one durable commit for a worker's waiting sign-ins). That run is kept whole or not
    // at all: when one of its writes failed (a lost race, 40001, leaves the transaction
    // aborted), was abandoned after changing something, or its commit lost a race, it is rolled
    // back and fn runs again with a transaction of its own for every write(), as outside a batch
    // (each with its own retries). What fn's writes were told is only acted upon once this
    // returns, so nothing is acknowledged before its commit.
    void batch(const std::function<void()> &fn) override {
        if (t_group != nullptr && t_group->store == this) {  // already in a batch on this thread
            fn();
            return;
        }
        if (!grouped(fn)) fn();
    }

    std::unique_ptr<SessionReader> session_reader() const override { return std::make_unique<PgSessionReader>(conninfo_); }

    void read_tokens_ahead(const std::vector<std::string> &keys) override {
        if (t_group == nullptr || t_group->store != this) return;
        PgWriteTxn txn(pool_, *t_group);
        txn.read_ahead(keys);
    }

    void backup(const std::string &) const override {
        throw StoreError(Code::StorageError,
                         "a PostgreSQL store is backed up by PostgreSQL (pg_dump, or its continuous archiving)");
    }

    std::vector<std::string> check_integrity() const override {
        std::vector<std::string> problems;
        ScanTxn txn(pool_);
        auto scan = [&](Stmt s, const char *table, const std::function<void(std::string_view, std::string_view)> &each) {
            Result r = txn.all(s);
            for (int i = 0; i < PQntuples(r.get()); ++i) {
                try {
                    each(cell(r, i, 0), cell(r, i, 1));
                } catch (const std::exception &e) {
                    problems.push_back(std::string(table) + ": " + e.what());
                }
            }
        };
        std::string after;
        for (;;) {
            auto users = txn.users(after, 1000);
            for (const User &u : users) {
                for (const auto &key : user_index_keys(u)) {
                    const auto found = txn.user_index(key, "", 1);
                    if (found.empty() || found.front() != key) {
                        problems.push_back("users: " + u.id + " is missing from the search index");
                    }
                }
                if (u.email.empty()) continue;
                auto owner = txn.user_by_email(u.group_id, u.email);
                if (!owner || owner->id != u.id) problems.push_back("users: " + u.id + " is missing from the address index");
            }
            if (users.size() < 1000) break;
            after = users.back().id;
        }
        scan(AllEmails, "signin_user_email", [&](std::string_view, std::string_view id) {
            if (!txn.user_by_id(id)) problems.push_back("signin_user_email: names a user that does not exist (" + std::string(id) + ")");
        });
        // an entry's user id follows its last NUL; the entry must be one that user's record makes
        scan(AllUserSearch, "signin_user_search", [&](std::string_view key, std::string_view) {
            const auto nul = key.rfind('\0');
            const std::string_view id = nul == std::string_view::npos ? std::string_view() : key.substr(nul + 1);
            auto u = id.empty() ? std::nullopt : txn.user_by_id(id);
            bool current = false;
            if (u) {
                const auto keys = user_index_keys(*u);
                current = std::find(keys.begin(), keys.end(), key) != keys.end();
            }
            if (!current) problems.push_back("signin_user_search: an entry no user has (" + std::string(id) + ")");
        });
        scan(AllTokens, "signin_tokens", [](std::string_view k, std::string_view v) { (void)decode_token(k, v); });
        scan(AllSessions, "signin_sessions", [&](std::string_view k, std::string_view v) {
            SessionRecord s = decode_session(k, v);
            if (!txn.user_by_id(s.user_id)) problems.push_back("signin_sessions: " + s.id + " belongs to no user");
        });
        scan(AllMfa, "signin_mfa", [](std::string_view k, std::string_view v) { (void)decode_mfa(k, v); });
        scan(AllPending, "signin_mfa_pending", [](std::string_view k, std::string_view v) { (void)decode_mfa_pending(k, v); });
        scan(AllPasskeys, "signin_passkeys", [&](std::string_view k, std::string_view v) {
            PasskeyRecord p = decode_passkey(k, v);
            if (!txn.user_by_id(p.user_id)) problems.push_back("signin_passkeys: a passkey of no user (" + p.user_id + ")");
        });
        scan(AllLinks, "signin_provider_links", [&](std::string_view k, std::string_view v) {
            ProviderLinkRecord l = decode_provider_link(k, v);
            if (!txn.user_by_id(l.user_id)) problems.push_back("signin_provider_links: a link of no user (" + l.user_id + ")");
        });
        scan(AllOidcCodes, "signin_oidc_codes", [](std::string_view k, std::string_view v) { (void)decode_oidc_code(k, v); });
        scan(AllOidcAccess, "signin_oidc_access", [](std::string_view k, std::string_view v) { (void)decode_oidc_access(k, v); });
        scan(AllOidcRefresh, "signin_oidc_refresh", [&](std::string_view k, std::string_view v) {
            const op::RefreshTokenRecord r = decode_oidc_refresh(k, v);
            if (!txn.oidc_family(r.family_id)) problems.push_back("signin_oidc_refresh: a token of no family");
        });
        scan(AllOidcFamilies, "signin_oidc_families", [&](std::string_view k, std::string_view v) {
            const op::RefreshFamily f = decode_oidc_family(k, v);
            if (!txn.user_by_id(f.user_id)) problems.push_back("signin_oidc_families: a family of no user (" + f.user_id + ")");
        });
        scan(AllOidcConsents, "signin_oidc_consents", [&](std::string_view k, std::string_view v) {
            const op::ConsentRecord c = decode_oidc_consent(k, v);
            if (!txn.user_by_id(c.user_id)) problems.push_back("signin_oidc_consents: a consent of no user (" + c.user_id + ")");
        });
        scan(AllOutbox, "signin_outbox", [](std::string_view k, std::string_view v) { (void)decode_outbox(k, v); });
        scan(AllEvents, "signin_events", [](std::string_view k, std::string_view v) { (void)decode_event(k, v); });
        scan(AllAudit, "signin_audit", [](std::string_view k, std::string_view v) { (void)decode_audit(k, v); });
        return problems;
    }

    void copy_into(WriteTxn &to) const override {
        ScanTxn txn(pool_);
        for (std::string after;;) {
            auto users = txn.users(after, 1000);
            for (const User &u : users) to.put_user(u);
            if (users.size() < 1000) break;
            after = users.back().id;
        }
        auto each = [&](Stmt s, const std::function<void(std::string_view, std::string_view)> &f) {
            Result r = txn.all(s);
            for (int i = 0; i < PQntuples(r.get()); ++i) f(cell(r, i, 0), cell(r, i, 1));
        };
        each(AllTokens, [&](std::string_view k, std::string_view v) { to.put_token(decode_token(k, v)); });
        each(AllSessions, [&](std::string_view k, std::string_view v) { to.put_session(decode_session(k, v)); });
        each(AllMfa, [&](std::string_view k, std::string_view v) { to.put_mfa(decode_mfa(k, v)); });
        each(AllPending, [&](std::string_view k, std::string_view v) { to.put_mfa_pending(decode_mfa_pending(k, v)); });
        each(AllPasskeys, [&](std::string_view k, std::string_view v) { to.put_passkey(decode_passkey(k, v)); });
        each(AllLinks, [&](std::string_view k, std::string_view v) { to.put_provider_link(decode_provider_link(k, v)); });
        each(AllOutbox, [&](std::string_view k, std::string_view v) {
            OutboxRecord o = decode_outbox(k, v);
            to.put_outbox(o);
        });
        each(AllEvents, [&](std::string_view k, std::string_view v) {
            EventRecord e = decode_event(k, v);
            to.put_event(e);
        });
        each(AllAudit, [&](std::string_view k, std::string_view v) { to.append_audit(decode_audit(k, v)); });
        each(AllOidcCodes, [&](std::string_view k, std::string_view v) { to.put_oidc_code(decode_oidc_code(k, v)); });
        each(AllOidcFamilies, [&](std::string_view k, std::string_view v) { to.put_oidc_family(decode_oidc_family(k, v)); });
        each(AllOidcAccess, [&](std::string_view k, std::string_view v) { to.put_oidc_access_token(decode_oidc_access(k, v)); });
        each(AllOidcRefresh, [&](std::string_view k, std::string_view v) {
            to.put_oidc_refresh_token(decode_oidc_refresh(k, v));
        });
        each(AllOidcConsents, [&](std::string_view k, std::string_view v) { to.put_oidc_consent(decode_oidc_consent(k, v)); });
        Result r = txn.all(AllChallenges);
        for (int i = 0; i < PQntuples(r.get()); ++i) to.spend_challenge(cell(r, i, 0), number(r, i, 1));
    }

private:
    // One run of a batch as one transaction; false (and nothing written) when fn must run again.
    bool grouped(const std::function<void()> &fn) {
        Group g;
        g.store = this;
        t_group = &g;
        try {
            take_turn(g);
            fn();
        } catch (...) {
            t_group = nullptr;
            end_group(g, false);
            if (g.spoiled) return false;  // what failed may be the spoiled run's writes: the next run says
            throw;
        }
        t_group = nullptr;
        if (g.spoiled) {
            end_group(g, false);
            return false;
        }
        return end_group(g, true);
    }

    // The write batches' turn (kBatchLock), taken before the batch's transaction begins and held
    // to its end (end_group gives it back with the keys). Not given in time: the batch goes on
    // without it.
    void take_turn(Group &g) {
        g.conn = pool_.take();
        g.locks.push_back(kBatchLock);  // first: a wait that fails half-way may have the lock all the same
        try {
            Result r = g.conn->run(BatchTurn, {kBatchLock, std::string_view(kBatchTurnWait), kEventsLock},
                                   "wait for the other write batches");
            g.events_alone = answered_true(r);
        } catch (const StoreError &) {
            // lock_timeout (or a broken connection, which the batch's first statement meets)
        }
    }

    // Commits (or rolls back) a batch's transaction, then gives its keys (in the same round trip as a
    // COMMIT) and its connection back.
    // False when the commit lost a race (nothing was written: the batch runs again); throws when
    // it failed otherwise.
    bool end_group(Group &g, bool commit) {
        if (!g.conn) return true;  // no write reached the database
        std::optional<StoreError> failed;
        bool deferred = false;  // what failed was a write sent with the COMMIT, not the COMMIT
        bool released = false;  // the keys went with the COMMIT
        if (g.begun) {
            if (!commit) g.conn->discard();
            try {
                if (commit && !g.locks.empty()) {
                    g.conn->exec_then("COMMIT", ReleaseKeys, {Param::kept(held_keys(g))}, released, "commit a write batch");
                } else {
                    g.conn->exec(commit ? "COMMIT" : "ROLLBACK", commit ? "commit a write batch" : "end a write batch");
                }
            } catch (const StoreError &e) {
                failed = e;
                deferred = g.conn->failed_deferred();
            }
        }
        if (!g.locks.empty() && !released) {
            try {
                if (failed || !commit) g.conn->exec("SELECT pg_advisory_unlock_all()", "end a write batch");
                else g.conn->run(ReleaseKeys, {Param::kept(held_keys(g))}, "end a write batch");
            } catch (const StoreError &) {
                g.conn.reset();  // closed: which gives its keys back too
            }
        }
        pool_.give(std::move(g.conn));
        if (failed && commit) {
            // a write of the run that failed spoils it as it would have when sent alone: the batch
            // runs again with a transaction per write, which finds whose it was
            if (failed->retry() || deferred) return false;
            throw *failed;
        }
        return true;
    }

    // The keys a batch holds but its turn, as ReleaseKeys gives them back: first, the turn last.
    // The next batch, given the turn, must find them free (pg_advisory_unlock_all gives locks back
    // in no set order, and a batch whose key is still held the moment it asks runs again).
    static std::string held_keys(const Group &g) {
        std::vector<std::int64_t> held;
        for (std::int64_t k : g.locks)
            if (k != kBatchLock) held.push_back(k);
        std::string keys;
        array_header(keys, kInt8Oid, held.size());
        for (std::int64_t k : held) array_element(keys, k);
        return keys;
    }

    // The read transaction of the whole-store scans (check, copy).
    class ScanTxn final : public PgTxn<ReadTxn> {
    public:
        explicit ScanTxn(Pool &pool) : PgTxn(pool, Kind::Snapshot) {}
        Result all(Stmt s) { return run(s, {}, "read a table"); }
    };

    // The schema's version, or nullopt when there is no schema yet, or one of its tables is
    // missing (a table added since, created empty: no version change, as LMDB's tables).
    static std::optional<std::string> version(Connection &conn) {
        auto missing = conn.text("SELECT count(*) FROM unnest(ARRAY['signin_meta', 'signin_users', 'signin_user_email', "
                                 "'signin_tokens', 'signin_sessions', 'signin_audit', 'signin_outbox', 'signin_mfa', "
                                 "'signin_mfa_pending', 'signin_passkeys', 'signin_provider_links', "
                                 "'signin_spent_challenges', 'signin_counters', 'signin_events', 'signin_user_search', "
                                 "'signin_oidc_codes', 'signin_oidc_access', 'signin_oidc_refresh', "
                                 "'signin_oidc_families', 'signin_oidc_consents']) "
                                 "AS t(name) WHERE to_regclass(name) IS NULL",
                                 "read the schema version");
        if (!missing || *missing != "0") return std::nullopt;
        return conn.text("SELECT value FROM signin_meta WHERE name = 'schema_version'", "read the schema version");
    }

    // A database set up before the search index has its entries written from every user, in the
    // transaction that creates the table (for a new database: none to write).
    static void fill_user_search(Connection &conn) {
        if (conn.text("SELECT value FROM signin_meta WHERE name = 'user_search'", "read the search index's state")) return;
        std::string after;
        for (;;) {
            Result r = conn.run(Users, {after, static_cast<std::int64_t>(1000)}, "read users for the search index");
            const int n = PQntuples(r.get());
            for (int i = 0; i < n; ++i) {
                const User u = decode_user(cell(r, i, 0));
                if (const auto keys = user_index_keys(u); !keys.empty())
                    conn.run(PutUserIndex, {index_keys(keys)}, "fill the search index");
                after = u.id;
            }
            if (n < 1000) break;
        }
        conn.exec("INSERT INTO signin_meta (name, value) VALUES ('user_search', '1') ON CONFLICT (name) DO NOTHING",
                  "write the search index's state");
    }

    // Checks the schema's version, first creating the schema where there is none (every statement
    // is idempotent). A database that is already set up is only read: a read-only one opens, and
    // answers its writes with StorageError. Nodes that start together may race on CREATE: the
    // loser sees a unique violation and tries again.
    void migrate() {
        const std::string mine = std::to_string(kSchemaVersion);
        for (int attempt = 1;; ++attempt) {
            auto conn = pool_.take();
            try {
                auto v = version(*conn);
                if (!v) {
                    conn->exec("BEGIN", "begin the schema setup");
                    for (const char *sql : kSchema) conn->exec(sql, "set up the schema");
                    fill_user_search(*conn);
                    conn->exec("COMMIT", "commit the schema setup");
                    v = version(*conn);
                }
                if (!v || *v != mine) {
                    throw StoreError(Code::StorageError, "store schema version " + v.value_or("(none)") +
                                                             ", this build reads " + mine);
                }
                pool_.give(std::move(conn));
                return;
            } catch (const StoreError &e) {
                const std::string what = e.what();
                // 23505 (two CREATEs at once), 40001: another node is setting up the same schema
                const bool race = e.retry() || what.find("duplicate key") != std::string::npos ||
                                  what.find("already exists") != std::string::npos;
                if (!race || attempt >= 5) throw;
            }
        }
    }

    // A store opened while the server was unreachable checks its schema at the first transaction
    // that reaches it (one thread at a time; the others wait for it).
    void ensure_ready() {
        if (ready_.load(std::memory_order_acquire)) return;
        std::lock_guard<std::mutex> hold(migrate_lock_);
        if (ready_.load(std::memory_order_relaxed)) return;
        migrate();
        ready_.store(true, std::memory_order_release);
    }

    const std::string conninfo_;
    mutable Pool pool_;
    const std::size_t audit_max_;
    std::atomic<bool> ready_{false};
    std::mutex migrate_lock_;
};

}  // namespace

std::unique_ptr<Store> open_pg_store(const PgOptions &opts) { return std::make_unique<PgStore>(opts); }

std::size_t pg_connection_limit(const std::string &conninfo) {
    Connection conn(conninfo, nullptr);
    // reserved_connections is PostgreSQL 16's (missing_ok: NULL before it)
    const auto n = conn.text("SELECT current_setting('max_connections')::int - "
                             "current_setting('superuser_reserved_connections')::int - "
                             "coalesce(current_setting('reserved_connections', true)::int, 0)",
                             "read max_connections");
    if (!n) throw StoreError(Code::StorageError, "read max_connections: no answer");
    const long long v = std::stoll(*n);
    return v > 0 ? static_cast<std::size_t>(v) : 0;
}

}  // namespace signin
