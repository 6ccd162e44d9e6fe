// The encoding of the store's records: what LMDB holds as values, and what is read back from a
// file that may be damaged. Decoders throw StoreError ("corrupt record") on anything malformed and
// never read out of bounds; fuzz/fuzz_store_records feeds them arbitrary bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "signin/store.hpp"

namespace signin::records {

inline constexpr unsigned char kRecordFormat = 1;
// Users: format 2 adds roles, format 3 the pending flag of an invitation, format 4 the last language;
// older records are still read.
inline constexpr unsigned char kUserFormat = 5;
// Tokens: format 2 adds the short code's digest and its failures, format 3 an email change's
// fields, format 4 the roles a Registration gives its account.
inline constexpr unsigned char kTokenFormat = 4;
// Sessions: format 2 adds whether the sign-in passed a second factor, format 3 the browser.
inline constexpr unsigned char kSessionFormat = 3;
// Pending second steps: format 2 adds whether the sign-in adds an account to its browser.
inline constexpr unsigned char kPendingFormat = 2;
// Second factors: format 2 adds the account's wrong codes in a row and the wait they set.
inline constexpr unsigned char kMfaFormat = 2;
// Outbox entries: format 2 adds the next try's time and the last failure's reason.
inline constexpr unsigned char kOutboxFormat = 2;
inline constexpr unsigned char kEventFormat = 1;
// The OpenID provider's grants (codes, access tokens, refresh tokens, families, consents).
inline constexpr unsigned char kOidcFormat = 1;

[[noreturn]] void corrupt(std::string_view what);

// group_id '\0' email: the key of an address (LMDB's user_email and addr_tokens, PostgreSQL's addr
// columns).
std::string addr_key(std::string_view group_id, std::string_view email);
// A token or session key (signin::record_key: 6 bytes of time, then the secret's 32-byte digest)
// whose record was not found: the key that record has if an earlier build of 0.1.0 wrote it (the
// digest alone), or "" when there is none to try.
std::string_view legacy_key(std::string_view key);

void put_be64(unsigned char *out, std::uint64_t v);
std::uint64_t get_be64(const unsigned char *in);

std::string encode_user(const User &u);
User decode_user(std::string_view data);
std::string encode_token(const TokenRecord &t);
TokenRecord decode_token(std::string_view key, std::string_view data);
std::string encode_session(const SessionRecord &s);
SessionRecord decode_session(std::string_view key, std::string_view data);
std::string encode_mfa(const MfaRecord &m);
MfaRecord decode_mfa(std::string_view key, std::string_view data);
std::string encode_mfa_pending(const MfaPendingRecord &p);
MfaPendingRecord decode_mfa_pending(std::string_view key, std::string_view data);
std::string encode_passkey(const PasskeyRecord &p);
PasskeyRecord decode_passkey(std::string_view key, std::string_view data);
std::string encode_provider_link(const ProviderLinkRecord &l);
ProviderLinkRecord decode_provider_link(std::string_view key, std::string_view data);
std::string encode_outbox(const OutboxRecord &o);
OutboxRecord decode_outbox(std::string_view key, std::string_view data);
// Events: the key is the 8-byte big-endian sequence number.
std::string encode_event(const EventRecord &e);
EventRecord decode_event(std::string_view key, std::string_view data);
// What decode_event gives a sender choosing events, nothing copied: views of key and data.
EventHead decode_event_head(std::string_view key, std::string_view data);
// An event record's webhook-id, read in place (a view of data).
std::string_view event_id_of(std::string_view data);
// The OpenID provider's grants: the key (a secret's record_key, a family's id) is not repeated
// inside. A consent's key is oidc_consent_key(user id, client id).
std::string encode_oidc_code(const op::CodeRecord &c);
op::CodeRecord decode_oidc_code(std::string_view key, std::string_view data);
// What a spent code keeps (ReadTxn::oidc_code): its client, user, times and what it gave.
op::CodeRecord spent_code(const op::CodeRecord &c);
std::string encode_oidc_access(const op::AccessTokenRecord &a);
op::AccessTokenRecord decode_oidc_access(std::string_view key, std::string_view data);
std::string encode_oidc_refresh(const op::RefreshTokenRecord &r);
op::RefreshTokenRecord decode_oidc_refresh(std::string_view key, std::string_view data);
std::string encode_oidc_family(const op::RefreshFamily &f);
op::RefreshFamily decode_oidc_family(std::string_view key, std::string_view data);
std::string oidc_consent_key(std::string_view user_id, std::string_view client_id);
std::string encode_oidc_consent(const op::ConsentRecord &c);
op::ConsentRecord decode_oidc_consent(std::string_view key, std::string_view data);
// Audit entries are JSON (readable with mdb_dump); the key is the time (BE) and 8 random bytes.
std::string encode_audit(const AuditEntry &e);
AuditEntry decode_audit(std::string_view key, std::string_view data);

}  // namespace signin::records
