// Strict JSON request bodies and the JSON answers of the sign-in API. Valid C++17 (the glue
// includes it).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "signin/accounts.hpp"
#include "signin/admin.hpp"
#include "signin/emails.hpp"
#include "signin/mfa.hpp"
#include "signin/types.hpp"

namespace signin::json {

bool valid_utf8(std::string_view s);
// Whether the text has no control byte but the whitespace JSON allows between tokens (tab, line
// feed, carriage return). JSON forbids every raw control character inside a string, and a raw NUL
// would end the C string cJSON hands back: "alice@example.com\0.evil.org" would read as alice's.
bool free_of_raw_controls(std::string_view s);

struct Field {
    std::string_view name;
    bool required;
    bool boolean = false;  // a JSON true or false, given as "true" or "false"
    bool list = false;     // an array of at most kMaxListItems strings, given as list_items reads it
};
inline constexpr std::size_t kMaxListItems = 32;
// The items of a Field::list value (each item is kept followed by a NUL, which no item holds).
std::vector<std::string> list_items(std::string_view value);

// The string fields of a request body. They can hold passwords and tokens: the destructor wipes
// every value's buffer, including what a move left in a short string's inline buffer.
struct Fields : std::map<std::string, std::string> {
    Fields() = default;
    Fields(Fields &&) = default;
    Fields &operator=(Fields &&) = default;
    Fields(const Fields &) = delete;
    Fields &operator=(const Fields &) = delete;
    ~Fields() { wipe(); }
    void wipe() noexcept;  // zeroes every value's whole buffer (capacity, not just size)
};

// A flat JSON object of string fields (and booleans or arrays of strings where the Field says so). Refuses: invalid UTF-8, malformed JSON, a non-object,
// a field not in `fields`, a field given twice, a non-string value, a missing required field,
// a string longer than `max_string` bytes or holding a NUL.
Result<Fields> parse_object(std::string_view body,
                                                        std::initializer_list<Field> fields,
                                                        std::size_t max_string = 1024);

// An append-only JSON text builder (no intermediate tree).
class Writer {
public:
    Writer() { out_.reserve(256); }  // most answers fit: one allocation, not a doubling series
    Writer &begin_object();
    Writer &end_object();
    Writer &begin_array();
    Writer &end_array();
    Writer &key(std::string_view k);
    Writer &value(std::string_view s);
    Writer &value(const char *s) { return value(std::string_view(s)); }
    Writer &value(std::int64_t n);
    Writer &value(bool b);
    Writer &null();
    Writer &time(Millis ms);  // RFC 3339
    const std::string &str() const { return out_; }
    std::string take() { return std::move(out_); }

private:
    void sep();
    void open(char c);
    std::string out_;
    // Per open object or array (bit d: depth d+1), whether nothing has been written in it yet:
    // a word, not a vector<bool>, so a small answer allocates nothing besides its text. Deeper
    // than 64 levels throws (nothing this module writes nests more than a few).
    std::uint64_t first_ = 0;
    unsigned depth_ = 0;
    bool after_key_ = false;
};

void append_escaped(std::string &out, std::string_view s);

// {"id", "email", "group_id", "created_at", "updated_at"}: what the API shows of a user.
void write_user(Writer &w, const User &u);
std::string user(const User &u);
// GET /me: the user and its roles.
std::string me(const User &u);
// An audit entry: {"at", "kind", "email", "client", "user_id", "detail"} (the store's record of it,
// and signin-admin audit --json).
std::string audit_entry(const AuditEntry &e);
// {"error": message, "code": code_name(c)}
std::string error(Code c, std::string_view message);
// The same shape with a code of the transport's own (not a Code).
std::string error(std::string_view code, std::string_view message);
std::string sessions(const std::vector<SessionInfo> &list);
// GET /accounts, this browser's accounts: {"accounts": [{"user": {...}, "session_id", "active"}]}
std::string accounts(const std::vector<BrowserAccount> &list);
// {"access_token", "token_type": "Bearer", "expires_in", "user"}
std::string bearer(const Session &s, Millis now);
// The body given to the delivery location: {email, token, code, link, purpose, tag, group,
// password, subject, text, html}, with the email `e` rendered from d (Emails::render); link is
// the email's {{link}} ("" when there is none).
std::string delivery(const Delivery &d, const Email &e);
// {"emails": [{purpose, tag, custom, subject, text, html}, ...]}: every purpose's email, rendered
// with a sample code and address (Emails::previews).
std::string email_previews(const Emails &emails, std::string_view origin);

// GET /account: {"user": {... roles}, "password": bool, "sessions": [...], "mfa": {...}, "outstanding_codes": N}
std::string account(const AccountInfo &a);

// GET /providers/linked: {"providers": [{id, provider, email, created_at, last_used_at}]}
std::string provider_links(const std::vector<ProviderLinkInfo> &links);
void provider_links(Writer &w, const std::vector<ProviderLinkInfo> &links);
// Second factors (signin_mfa).
// GET /mfa: {"totp": bool, "recovery_codes_left": N, "remembered_devices": N}
std::string mfa_status(const MfaStatus &s);
// POST /mfa/totp/setup: {"secret", "otpauth_uri", "qr_svg"}
std::string totp_setup(const TotpSetup &s);
// {"recovery_codes": [...]}
std::string recovery_codes(const std::vector<std::string> &codes);
// The 202 of a way in that stops at the factor: {"mfa_required": true, "mfa_token", "methods", "expires_in"}
std::string mfa_required(const SignInStep &step, Millis now);

// The administrator's views (signin_admin). A user there is the API's user with its roles, its
// state ("active", "pending", "suspended") and whether it is suspended.
// GET admin/api/users: {"users": [...], "next": CURSOR|null} ("" next: null)
std::string user_page(const std::vector<User> &users, std::string_view next);
// GET admin/api/users/{id}: {"user", "password": bool, "sessions", "mfa", "passkeys", "providers", "audit"}
std::string admin_user(const AdminUserInfo &a);
// GET admin/api/audit: {"entries": [...]}, each as audit_entry
std::string audit_entries(const std::vector<AuditEntry> &entries);

}  // namespace signin::json
