#include "signin/json.hpp"

#include <cjson/cJSON.h>
#include <sodium.h>

#include <array>
#include <cstring>

#include <memory>
#include <stdexcept>

#include "encoding.hpp"

namespace signin::json {

bool valid_utf8(std::string_view s) {
    const auto *p = reinterpret_cast<const unsigned char *>(s.data());
    std::size_t n = s.size(), i = 0;
    while (i < n) {
        unsigned char c = p[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        std::size_t len;
        std::uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf) {
            len = 2;
            cp = c & 0x1fu;
        } else if (c >= 0xe0 && c <= 0xef) {
            len = 3;
            cp = c & 0x0fu;
        } else if (c >= 0xf0 && c <= 0xf4) {
            len = 4;
            cp = c & 0x07u;
        } else {
            return false;
        }
        if (i + len > n) return false;
        for (std::size_t k = 1; k < len; ++k) {
            if ((p[i + k] & 0xc0) != 0x80) return false;
            cp = (cp << 6) | (p[i + k] & 0x3fu);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff)) {
            return false;  // overlong, out of range, or a surrogate
        }
        i += len;
    }
    return true;
}

bool free_of_raw_controls(std::string_view s) {
    for (char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return false;
    }
    return true;
}

namespace {
// Whether the (valid) JSON text holds the escape \u0000: a backslash that is not itself escaped,
// i.e. the odd member of a run of backslashes, followed by u0000.
bool has_nul_escape(std::string_view body) {
    for (std::size_t at = body.find("\\u0000"); at != std::string_view::npos;
         at = body.find("\\u0000", at + 1)) {
        std::size_t run = 1;
        while (at >= run && body[at - run] == '\\') ++run;
        if (run % 2 == 1) return true;
    }
    return false;
}
// The first bytes of valid UTF-8 text, at most `max`, never cutting a character in two (an error
// message quotes a field name, and an answer must stay valid UTF-8).
std::string_view utf8_prefix(std::string_view s, std::size_t max) {
    if (s.size() <= max) return s;
    std::size_t n = max;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // s[n] continues a character
    return s.substr(0, n);
}
}  // namespace

void Fields::wipe() noexcept {
    for (auto &kv : *this) sodium_memzero(kv.second.data(), kv.second.capacity());
}

// cJSON keeps its own copies of the strings: wipe them before freeing the tree.
static void wipe_and_delete(cJSON *node) {
    for (cJSON *c = node ? node->child : nullptr; c; c = c->next) {
        if (cJSON_IsString(c) && c->valuestring) sodium_memzero(c->valuestring, std::strlen(c->valuestring));
    }
    cJSON_Delete(node);
}

Result<Fields> parse_object(std::string_view body,
                                                        std::initializer_list<Field> fields,
                                                        std::size_t max_string) {
    auto bad = [](std::string m) { return Error{Code::InvalidRequest, std::move(m)}; };
    if (!valid_utf8(body)) return bad("the body is not valid UTF-8");
    if (!free_of_raw_controls(body)) return bad("the body is not valid JSON: a control character is not escaped");
    const char *end = nullptr;
    std::unique_ptr<cJSON, void (*)(cJSON *)> root(
        cJSON_ParseWithLengthOpts(body.data(), body.size(), &end, false), wipe_and_delete);
    if (!root) return bad("the body is not valid JSON");
    for (const char *p = end; p && p < body.data() + body.size(); ++p) {
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') return bad("the body is not valid JSON");
    }
    if (!cJSON_IsObject(root.get())) return bad("the body must be a JSON object");
    Fields out;
    for (cJSON *item = root->child; item; item = item->next) {
        std::string_view name = item->string ? item->string : "";
        const Field *f = nullptr;
        for (const auto &candidate : fields) {
            if (candidate.name == name) f = &candidate;
        }
        if (!f) return bad("unknown field \"" + std::string(utf8_prefix(name, 40)) + "\"");
        if (out.count(std::string(name))) return bad("field \"" + std::string(name) + "\" given twice");
        if (f->boolean) {
            if (!cJSON_IsBool(item)) return bad("field \"" + std::string(name) + "\" must be true or false");
            out.emplace(std::string(name), cJSON_IsTrue(item) ? "true" : "false");
            continue;
        }
        if (f->list) {
            if (!cJSON_IsArray(item)) return bad("field \"" + std::string(name) + "\" must be an array of strings");
            std::string items;
            std::size_t n = 0;
            for (cJSON *e = item->child; e; e = e->next) {
                if (++n > kMaxListItems) return bad("field \"" + std::string(name) + "\" has too many items");
                if (!cJSON_IsString(e) || !e->valuestring) {
                    return bad("field \"" + std::string(name) + "\" must be an array of strings");
                }
                std::string_view v(e->valuestring);
                if (v.size() > max_string || !valid_utf8(v)) {
                    return bad("an item of field \"" + std::string(name) + "\" is too long or not valid UTF-8");
                }
                items.append(v).push_back('\0');
            }
            out.emplace(std::string(name), std::move(items));
            continue;
        }
        if (!cJSON_IsString(item) || !item->valuestring) {
            return bad("field \"" + std::string(name) + "\" must be a string");
        }
        std::string_view v(item->valuestring);
        // cJSON stops a string at an escaped NUL (\u0000): compare with what it parsed
        if (v.size() > max_string) return bad("field \"" + std::string(name) + "\" is too long");
        if (!valid_utf8(v)) return bad("field \"" + std::string(name) + "\" is not valid UTF-8");
        out.emplace(std::string(name), std::string(v));
    }
    for (const auto &f : fields) {
        if (f.required && !out.count(std::string(f.name))) {
            return bad("field \"" + std::string(f.name) + "\" is required");
        }
    }
    if (has_nul_escape(body)) return bad("a string holds a NUL character");
    return out;
}

std::vector<std::string> list_items(std::string_view value) {
    std::vector<std::string> out;
    while (!value.empty()) {
        const auto nul = value.find('\0');
        out.emplace_back(value.substr(0, nul));
        if (nul == std::string_view::npos) break;
        value.remove_prefix(nul + 1);
    }
    return out;
}

namespace {

// The bytes append_escaped writes as an escape: control characters, the quote and backslash, and
// <, >, & and DEL so that the text is safe inside HTML too. A table: every JSON answer's keys
// and values pass here, so a chain of comparisons per byte would cost every answer.
constexpr std::array<bool, 256> kNeedsEscape = [] {
    std::array<bool, 256> t{};
    for (int c = 0; c < 0x20; ++c) t[static_cast<std::size_t>(c)] = true;
    for (unsigned char c : {'"', '\\', '<', '>', '&', '\x7f'}) t[c] = true;
    return t;
}();

}  // namespace

void append_escaped(std::string &out, std::string_view s) {
    static const char hexd[] = "0123456789abcdef";
    std::size_t first = 0;  // the first byte that needs an escape, if any
    while (first < s.size() && !kNeedsEscape[static_cast<unsigned char>(s[first])]) ++first;
    const std::size_t at = out.size();
    if (first == s.size()) {  // nothing to escape (nearly every key and value): one copy
        out.resize(at + s.size() + 2);
        char *p = out.data() + at;
        *p = '"';
        if (!s.empty()) std::memcpy(p + 1, s.data(), s.size());
        p[s.size() + 1] = '"';
        return;
    }
    out.reserve(at + s.size() + 8);
    out.push_back('"');
    std::size_t run = 0;  // start of the pending run of characters that need no escape
    for (std::size_t i = first; i < s.size(); ++i) {
        auto c = static_cast<unsigned char>(s[i]);
        if (!kNeedsEscape[c]) continue;
        out.append(s.data() + run, i - run);
        run = i + 1;
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '<': out += "\\u003c"; break;  // safe inside HTML too
        case '>': out += "\\u003e"; break;
        case '&': out += "\\u0026"; break;
        default:
            out += "\\u00";
            out.push_back(hexd[c >> 4]);
            out.push_back(hexd[c & 15]);
        }
    }
    out.append(s.data() + run, s.size() - run);
    out.push_back('"');
}

void Writer::sep() {
    if (after_key_) {
        after_key_ = false;
        return;
    }
    if (depth_ == 0) return;
    const std::uint64_t bit = std::uint64_t{1} << (depth_ - 1);
    if (!(first_ & bit)) out_.push_back(',');
    first_ &= ~bit;
}
void Writer::open(char c) {
    sep();
    if (depth_ == 64) throw std::length_error("JSON nested too deep");
    out_.push_back(c);
    first_ |= std::uint64_t{1} << depth_++;
}
Writer &Writer::begin_object() {
    open('{');
    return *this;
}
Writer &Writer::end_object() {
    out_.push_back('}');
    --depth_;
    return *this;
}
Writer &Writer::begin_array() {
    open('[');
    return *this;
}
Writer &Writer::end_array() {
    out_.push_back(']');
    --depth_;
    return *this;
}
Writer &Writer::key(std::string_view k) {
    sep();
    append_escaped(out_, k);
    out_.push_back(':');
    after_key_ = true;  // the value that follows needs no separator
    return *this;
}
Writer &Writer::value(std::string_view s) {
    sep();
    append_escaped(out_, s);
    return *this;
}
Writer &Writer::value(std::int64_t n) {
    sep();
    out_ += std::to_string(n);
    return *this;
}
Writer &Writer::value(bool b) {
    sep();
    out_ += b ? "true" : "false";
    return *this;
}
Writer &Writer::null() {
    sep();
    out_ += "null";
    return *this;
}
Writer &Writer::time(Millis ms) {  // digits, '-', 'T', ':', '.' and 'Z': nothing to escape
    sep();
    char text[24];
    enc::rfc3339(ms, text);
    const std::size_t at = out_.size();
    out_.resize(at + sizeof text + 2);
    out_[at] = '"';
    std::memcpy(out_.data() + at + 1, text, sizeof text);
    out_[at + sizeof text + 1] = '"';
    return *this;
}

namespace {

// The user's fields, in an object the caller opened (and closes).
void user_fields(Writer &w, const User &u) {
    w.key("id").value(u.id).key("email");
    if (u.email.empty()) {
        w.null();  // an account a provider made without an address
    } else {
        w.value(u.email);
    }
    w.key("group_id").value(u.group_id)
        .key("created_at").time(u.created_at)
        .key("updated_at").time(u.updated_at);
}

}  // namespace

void write_user(Writer &w, const User &u) {
    w.begin_object();
    user_fields(w, u);
    w.end_object();
}

std::string user(const User &u) {
    Writer w;
    write_user(w, u);
    return w.take();
}

namespace {

// The user's fields and its roles, as an object.
void write_user_with_roles(Writer &w, const User &u) {
    w.begin_object();
    user_fields(w, u);
    w.key("roles").begin_array();
    for (const auto &role : u.roles) w.value(role);
    w.end_array().end_object();
}

void write_audit_entry(Writer &w, const AuditEntry &e) {
    w.begin_object()
        .key("at").time(e.at)
        .key("kind").value(e.kind)
        .key("email").value(e.email)
        .key("client").value(e.client)
        .key("user_id").value(e.user_id)
        .key("detail").value(e.detail)
        .end_object();
}

}  // namespace

std::string audit_entry(const AuditEntry &e) {
    Writer w;
    write_audit_entry(w, e);
    return w.take();
}

std::string me(const User &u) {
    Writer w;
    write_user_with_roles(w, u);
    return w.take();
}

std::string error(Code c, std::string_view message) { return error(code_name(c), message); }

std::string error(std::string_view code, std::string_view message) {
    Writer w;
    w.begin_object().key("error").value(message).key("code").value(code).end_object();
    return w.take();
}

namespace {

void write_session_list(Writer &w, const std::vector<SessionInfo> &list) {
    w.begin_array();
    for (const auto &s : list) {
        w.begin_object()
            .key("id").value(s.id)
            .key("created_at").time(s.created_at)
            .key("last_seen_at").time(s.last_seen_at)
            .key("expires_at").time(s.expires_at)
            .key("client").value(s.client)
            .key("user_agent").value(s.user_agent)
            .key("current").value(s.current)
            .key("kind").value(kind_name(s.kind))
            .key("fresh").value(s.fresh)
            .end_object();
    }
    w.end_array();
}

}  // namespace

std::string sessions(const std::vector<SessionInfo> &list) {
    Writer w;
    w.begin_object().key("sessions");
    write_session_list(w, list);
    w.end_object();
    return w.take();
}

std::string accounts(const std::vector<BrowserAccount> &list) {
    Writer w;
    w.begin_object().key("accounts").begin_array();
    for (const auto &a : list) {
        w.begin_object().key("user");
        write_user(w, a.user);
        w.key("session_id").value(a.session_id).key("active").value(a.active).end_object();
    }
    w.end_array().end_object();
    return w.take();
}

std::string bearer(const Session &s, Millis now) {
    Writer w;
    w.begin_object()
        .key("access_token").value(s.token.reveal())
        .key("token_type").value("Bearer")
        // whole seconds left, rounded up: a token issued with a 90 s lifetime says 90
        .key("expires_in").value(static_cast<std::int64_t>((s.expires_at - now + 999) / 1000))
        .key("user");
    write_user(w, s.user);
    w.end_object();
    return w.take();
}

void provider_links(Writer &w, const std::vector<ProviderLinkInfo> &links) {
    w.begin_array();
    for (const auto &l : links) {
        w.begin_object().key("id").value(l.id).key("provider").value(l.provider).key("email");
        if (l.email.empty()) {
            w.null();
        } else {
            w.value(l.email);
        }
        w.key("created_at").time(l.created_at).key("last_used_at").time(l.last_used_at).end_object();
    }
    w.end_array();
}

std::string provider_links(const std::vector<ProviderLinkInfo> &links) {
    Writer w;
    w.begin_object().key("providers");
    provider_links(w, links);
    w.end_object();
    return w.take();
}

namespace {

// {totp, recovery_codes_left, remembered_devices}: GET /mfa, and the account's and the admin's views.
void write_mfa_status(Writer &w, const MfaStatus &s) {
    w.begin_object()
        .key("totp").value(s.totp)
        .key("recovery_codes_left").value(static_cast<std::int64_t>(s.recovery_codes_left))
        .key("remembered_devices").value(static_cast<std::int64_t>(s.remembered_devices))
        .end_object();
}

}  // namespace

std::string account(const AccountInfo &a) {
    Writer w;
    w.begin_object().key("user");
    write_user_with_roles(w, a.user);
    w.key("password").value(a.password);
    w.key("sessions");
    write_session_list(w, a.sessions);
    w.key("mfa");
    write_mfa_status(w, a.mfa);
    w.key("outstanding_codes").value(static_cast<std::int64_t>(a.outstanding_tokens));
    w.key("passkeys").value(static_cast<std::int64_t>(a.passkeys));
    w.key("providers");
    provider_links(w, a.providers);
    w.end_object();
    return w.take();
}

std::string mfa_status(const MfaStatus &s) {
    Writer w;
    write_mfa_status(w, s);
    return w.take();
}

std::string totp_setup(const TotpSetup &s) {
    Writer w;
    w.begin_object()
        .key("secret").value(s.secret.reveal())
        .key("otpauth_uri").value(s.otpauth_uri)
        .key("qr_svg").value(s.qr_svg)
        .end_object();
    return w.take();
}

std::string recovery_codes(const std::vector<std::string> &codes) {
    Writer w;
    w.begin_object().key("recovery_codes").begin_array();
    for (const auto &c : codes) w.value(c);
    w.end_array().end_object();
    return w.take();
}

std::string mfa_required(const SignInStep &step, Millis now) {
    Writer w;
    w.begin_object()
        .key("mfa_required").value(true)
        .key("mfa_token").value(step.mfa_token.reveal())
        .key("methods").begin_array();
    for (const auto &m : step.methods) w.value(m);
    w.end_array()
        .key("expires_in").value(static_cast<std::int64_t>((step.mfa_expires_at - now + 999) / 1000))
        .end_object();
    return w.take();
}

std::string delivery(const Delivery &d, const Email &e) {
    Writer w;
    w.begin_object()
        .key("email").value(d.email)
        .key("token").value(d.token.reveal())
        .key("code").value(d.code)
        .key("link").value(e.link)
        .key("purpose").value(purpose_name(d.purpose))
        .key("tag").value(e.tag)
        .key("group").value(d.group_id)
        .key("password").value(d.with_password)
        .key("subject").value(e.subject)
        .key("text").value(e.text)
        .key("html").value(e.html)
        .end_object();
    return w.take();
}

std::string email_previews(const Emails &emails, std::string_view origin) {
    Writer w;
    w.begin_object().key("emails").begin_array();
    for (const Email &e : emails.previews(origin)) {
        w.begin_object()
            .key("purpose").value(purpose_name(e.purpose))
            .key("tag").value(e.tag)
            .key("custom").value(emails.is_custom(e.purpose))
            .key("subject").value(e.subject)
            .key("text").value(e.text)
            .key("html").value(e.html)
            .end_object();
    }
    w.end_array().end_object();
    return w.take();
}

namespace {

void write_admin_user(Writer &w, const User &u) {
    w.begin_object();
    user_fields(w, u);
    w.key("roles").begin_array();
    for (const auto &role : u.roles) w.value(role);
    w.end_array();
    w.key("state").value(user_state(u)).key("suspended").value(u.suspended).end_object();
}

}  // namespace

std::string user_page(const std::vector<User> &users, std::string_view next) {
    Writer w;
    w.begin_object().key("users").begin_array();
    for (const auto &u : users) write_admin_user(w, u);
    w.end_array().key("next");
    if (next.empty()) {
        w.null();
    } else {
        w.value(next);
    }
    w.end_object();
    return w.take();
}

std::string admin_user(const AdminUserInfo &a) {
    Writer w;
    w.begin_object().key("user");
    write_admin_user(w, a.user);
    w.key("password").value(a.password);
    w.key("sessions");
    write_session_list(w, a.sessions);
    w.key("mfa");
    write_mfa_status(w, a.mfa);
    w.key("passkeys").begin_array();
    for (const auto &k : a.passkeys) {
        w.begin_object().key("id").value(k.id).key("name").value(k.name).key("created_at").time(k.created_at);
        w.key("last_used_at");
        if (k.last_used_at > 0) {
            w.time(k.last_used_at);
        } else {
            w.null();
        }
        w.key("synced").value(k.synced).end_object();
    }
    w.end_array().key("providers");
    provider_links(w, a.providers);
    w.key("audit").begin_array();
    for (const auto &e : a.audit) write_audit_entry(w, e);
    w.end_array().end_object();
    return w.take();
}

std::string audit_entries(const std::vector<AuditEntry> &entries) {
    Writer w;
    w.begin_object().key("entries").begin_array();
    for (const auto &e : entries) write_audit_entry(w, e);
    w.end_array().end_object();
    return w.take();
}

}  // namespace signin::json
