// signin-admin: operate on an ngx_signin store from the shell, also while nginx runs (LMDB
// serializes writers across processes and keeps readers apart). The command line is CLI11's
// (Debian's libcli11-dev); output is a table for people, JSON lines with --json for scripts.
// Run it as the nginx worker user (the owner of the store), or as root.
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "signin/encoding.hpp"
#include "signin/auth.hpp"
#include "signin/json.hpp"
#include "signin/secret_key.hpp"

namespace {

using signin::Code;
using signin::Error;

int fail(const Error &e) {
    std::fprintf(stderr, "signin-admin: %s (%s)\n", e.message.c_str(), std::string(signin::code_name(e.code)).c_str());
    return 1;
}

// signin_secret_key's default: the store's path + ".key" (a PostgreSQL store has none: nginx
// needs signin_secret_key named, and so does this tool).
std::string default_key_file(std::string dir) {
    if (signin::is_pg_url(dir)) throw std::runtime_error("a postgresql:// store has no default key file: name it (signin_secret_key)");
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    return dir + ".key";
}

std::string when(signin::Millis t) { return t > 0 ? signin::enc::rfc3339(t).substr(0, 19) + "Z" : "-"; }

// Columns padded to their widest cell; the last column is not padded.
class Table {
public:
    explicit Table(std::vector<std::string> head) { rows_.push_back(std::move(head)); }
    void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
    void print() const {
        if (rows_.size() == 1) {
            std::printf("(none)\n");
            return;
        }
        std::vector<std::size_t> width(rows_[0].size(), 0);
        for (const auto &r : rows_) {
            for (std::size_t i = 0; i < r.size() && i < width.size(); ++i) width[i] = std::max(width[i], r[i].size());
        }
        for (const auto &r : rows_) {
            std::string line;
            for (std::size_t i = 0; i < r.size(); ++i) {
                line += r[i];
                if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 2, ' ');
            }
            std::printf("%s\n", line.c_str());
        }
    }

private:
    std::vector<std::vector<std::string>> rows_;
};

std::string state_of(const signin::User &u) { return u.suspended ? "suspended" : u.pending ? "pending" : "active"; }
std::string joined(const std::vector<std::string> &v) {
    std::string out;
    for (const auto &s : v) out += (out.empty() ? "" : ",") + s;
    return out.empty() ? "-" : out;
}

std::string account_json(const signin::User &u) {
    signin::json::Writer w;
    w.begin_object().key("user");
    signin::json::write_user(w, u);
    w.key("suspended").value(u.suspended).key("has_password").value(!u.password_hash.empty());
    w.key("pending").value(u.pending);
    w.key("roles").begin_array();
    for (const auto &role : u.roles) w.value(role);
    w.end_array().end_object();
    return w.take();
}

// The account named by an address (in the group) or by its id.
signin::Result<signin::User> find_account(signin::ReadTxn &txn, const std::string &who, const std::string &group) {
    if (who.find('@') == std::string::npos) {
        if (auto u = txn.user_by_id(who)) return *u;
        return Error{Code::NotFound, "no such account"};
    }
    auto email = signin::normalize_email(who);
    auto g = signin::normalize_group(group);
    if (!email || !g) return Error{Code::InvalidEmail, "that is not an email address"};
    auto u = txn.user_by_email(*g, *email);
    if (!u) return Error{Code::NotFound, "no such account"};
    return *u;
}

// The audit entry of an operator's change to an account (client "admin"), with its address.
void audit_admin(signin::WriteTxn &txn, signin::Millis now, const char *kind, const std::string &user_id,
                 const std::string &detail) {
    signin::AuditEntry e;
    e.at = now;
    e.kind = kind;
    e.client = "admin";
    e.user_id = user_id;
    if (auto owner = txn.user_by_id(user_id)) e.email = owner->email;
    e.detail = detail;
    txn.append_audit(e);
}

// "2026-11-24", "2026-11-24T10:00:00Z" (UTC), or a time ago: "30m", "12h", "7d".
std::optional<signin::Millis> parse_time(const std::string &s, signin::Millis now) {
    // (at most 18 digits: std::stoll of more could throw; a longer count is no time anyway)
    if (s.size() >= 2 && s.size() <= 19 && std::all_of(s.begin(), s.end() - 1, ::isdigit)) {
        const long long n = std::stoll(s.substr(0, s.size() - 1));
        const char u = s.back();
        const long long unit = u == 's' ? 1000 : u == 'm' ? 60000 : u == 'h' ? 3600000 : u == 'd' ? 86400000 : 0;
        if (unit != 0 && n < 100000) return now - n * unit;
    }
    std::tm tm{};
    const char *end = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
    if (end == nullptr || (*end != '\0' && std::string(end) != "Z")) {
        tm = {};
        end = strptime(s.c_str(), "%Y-%m-%d", &tm);
        if (end == nullptr || *end != '\0') return std::nullopt;
    }
    return static_cast<signin::Millis>(timegm(&tm)) * 1000;
}

// --since and --until are checked when the line is parsed: a word that is no time is a usage
// error (exit 2, with the usage), found before the store is opened. Whether a word is a time does
// not depend on the moment it is read at.
const CLI::Validator kTime(
    [](std::string &s) { return parse_time(s, 0) ? std::string() : "not a time: " + s + " (2026-11-24, 2026-11-24T10:00:00Z, 30m, 12h, 7d)"; },
    "TIME");

// The first word of the line that is no option, when no subcommand took it: what the user meant as
// the subcommand. CLI11 reports a missing subcommand before words it did not use.
std::optional<std::string> unknown_word(const CLI::App &app) {
    if (!app.get_subcommands().empty()) return std::nullopt;
    for (const std::string &w : app.remaining()) {
        if (!w.empty() && w[0] != '-') return w;
    }
    return std::nullopt;
}

// Whether this process may use the store nginx uses: its owner, or root. Otherwise the message
// names the user to run as.
std::optional<std::string> wrong_user(const std::string &dir) {
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0) {
        if (errno != EACCES) return std::nullopt;
        return "permission denied on the way to " + dir + ": run as the store's owner (nginx's worker user) or root";
    }
    if (geteuid() == 0 || geteuid() == st.st_uid) return std::nullopt;
    const passwd *pw = getpwuid(st.st_uid);
    const std::string owner = pw != nullptr ? pw->pw_name : std::to_string(st.st_uid);
    return "the store " + dir + " belongs to " + owner + " (nginx's worker user): run as that user, e.g. sudo -u " +
           owner + " signin-admin ...";
}

// What the commands share: the options of the whole line, the words of the one command the line
// names (each command binds the fields it reads), the store it opened and the exit status.
struct Admin {
    std::string store_arg, group;  // --store, --group
    bool create = false, json = false;
    std::string who, group_arg;  // the account named, and its group given as a word
    std::string email, kind, since, until, session_id, revoke_user, role_action, role, key_file, passkey_id, file, copy_to,
        api_version;
    std::vector<std::string> roles;
    bool send = false;
    std::size_t count = 20;

    std::shared_ptr<signin::Store> store;
    std::unique_ptr<signin::Identity> id;
    int status = 0;

    // the group of the account named: --group, else the word after the address
    std::string group_of() const { return !group.empty() ? group : group_arg; }

    // Opens the store once the line is parsed; false (status 1, the reason printed) when this
    // process may not or there is none.
    bool open() {
        std::string why;
        if (signin::is_pg_url(store_arg)) {  // the schema is made at the first open, as nginx does
            signin::PgOptions po;
            po.conninfo = store_arg;
            store = signin::open_pg_store(po);
        } else {
            if (auto why_not = wrong_user(store_arg)) {
                std::fprintf(stderr, "signin-admin: %s\n", why_not->c_str());
                status = 1;
                return false;
            }
            struct stat data {};
            if (!create && stat((store_arg + "/data.mdb").c_str(), &data) != 0) {
                std::fprintf(stderr, "signin-admin: no store at %s (give --create to make one)\n", store_arg.c_str());
                status = 1;
                return false;
            }
            signin::LmdbOptions lo;
            lo.path = store_arg;
            store = signin::open_lmdb_store(lo);
        }
        id = std::make_unique<signin::Identity>(store, *signin::parse_origin("http://127.0.0.1", &why), signin::Policy{});
        // the changes made here are events for the application as nginx's are (signin_events)
        if (auto events = id->use_published_events(); !events) {
            std::fprintf(stderr, "signin-admin: %s: changes made now are not events for the application\n",
                         events.error().message.c_str());
        }
        return true;
    }

    // What `sub` does when the line names it: open the store (unless the command needs only the
    // key file), then run for the exit status.
    void on(CLI::App *sub, std::function<int()> run, bool needs_store = true) {
        sub->callback([this, run = std::move(run), needs_store] {
            if (needs_store && !open()) return;
            status = run();
        });
    }
};

// One function per command: its words on the line, then what it does.

void users_command(CLI::App &app, Admin &a) {
    auto *sub = app.add_subcommand("users", "every account (or those whose address contains --email TEXT)");
    sub->add_option("--email", a.email, "a part of the address");
    a.on(sub, [&a] {
        auto txn = a.store->read();
        Table t({"EMAIL", "GROUP", "STATE", "ROLES", "CREATED", "ID"});
        std::string after;
        for (;;) {
            auto page = txn->users(after, 1000);
            for (const auto &u : page) {
                if ((!a.email.empty() && u.email.find(a.email) == std::string::npos) ||
                    (!a.group.empty() && u.group_id != a.group)) {
                    continue;
                }
                if (a.json) std::printf("%s\n", account_json(u).c_str());
                t.add({u.email, u.group_id, state_of(u), joined(u.roles), when(u.created_at), u.id});
            }
            if (page.size() < 1000) break;
            after = page.back().id;
        }
        if (!a.json) t.print();
        return 0;
    });
}

void user_command(CLI::App &app, Admin &a) {
    auto *sub = app.add_subcommand("user", "one account, by address or id");
    sub->add_option("who", a.who, "EMAIL or ID")->required();
    sub->add_option("group", a.group_arg, "its group (or --group)");
    a.on(sub, [&a] {
        auto txn = a.store->read();
        auto u = find_account(*txn, a.who, a.group_of());
        if (!u) return fail(u.error());
        if (a.json) {
            std::printf("%s\n", account_json(*u).c_str());
            return 0;
        }
        auto passkeys = txn->passkeys_of(u->id);
        auto factors = txn->mfa(u->id);
        Table t({"FIELD", "VALUE"});
        t.add({"email", u->email});
        t.add({"id", u->id});
        t.add({"group", u->group_id});
        t.add({"state", state_of(*u)});
        t.add({"roles", joined(u->roles)});
        t.add({"api version", u->api_version.empty() ? "-" : u->api_version});
        t.add({"password", u->password_hash.empty() ? "no" : "yes"});
        t.add({"second factor", factors && factors->has_factor() ? "totp" : "no"});
        t.add({"passkeys", std::to_string(passkeys.size())});
        std::vector<std::string> providers;
        for (const auto &l : txn->provider_links_of(u->id)) providers.push_back(l.provider);
        t.add({"providers", providers.empty() ? "none" : joined(providers)});
        t.add({"sessions", std::to_string(txn->sessions_of(u->id).size())});
        t.add({"created", when(u->created_at)});
        t.print();
        return 0;
    });
}

// suspend, and its opposite under two names: unsuspend, restore
void suspend_commands(CLI::App &app, Admin &a) {
    for (const char *name : {"suspend", "unsuspend", "restore"}) {
        const bool suspend = std::string(name) == "suspend";
        auto *sub = app.add_subcommand(name, suspend ? "suspend an account (its sessions stop working, no email is sent to it)"
                                                     : "lift a suspension");
        sub->add_option("email", a.who, "EMAIL")->required();
        sub->add_option("group", a.group_arg, "its group (or --group)");
        a.on(sub, [&a, suspend] {
            auto r = a.id->set_suspended(a.group_of(), a.who, suspend);
            if (!r) return fail(r.error());
            std::printf("%s: %s\n", a.who.c_str(), suspend ? "suspended" : "restored");
            return 0;
        });
    }
}

void sessions_command(CLI::App &app, Admin &a) {
    auto *sub = app.add_subcommand("sessions", "an account's sessions");
    sub->add_option("email", a.who, "EMAIL or ID")->required();
    sub->add_option("group", a.group_arg, "its group (or --group)");
    a.on(sub, [&a] {
        auto txn = a.store->read();
        auto u = find_account(*txn, a.who, a.group_of());
        if (!u) return fail(u.error());
        Table t({"ID", "KIND", "CREATED", "LAST SEEN", "EXPIRES", "CLIENT", "USER AGENT"});
        for (const auto &s : txn->sessions_of(u->id)) {
            if (a.json) {
                signin::json::Writer w;
                w.begin_object()
                    .key("id").value(s.id)
                    .key("kind").value(signin::kind_name(s.kind))
                    .key("created_at").time(s.created_at)
                    .key("last_seen_at").time(s.last_seen_at)
                    .key("expires_at").time(s.expires_at)
                    .key("client").value(s.client)
                    .key("user_agent").value(s.user_agent)
                    .end_object();
                std::printf("%s\n", w.str().c_str());
            }
            t.add({s.id, std::string(signin::kind_name(s.kind)), when(s.created_at), when(s.last_seen_at), when(s.expires_at),
                   s.client, s.user_agent.substr(0, 40)});
        }
        if (!a.json) t.print();
        return 0;
    });
}

void revoke_command(CLI::App &app, Admin &a) {
    auto *sub = app.add_subcommand("revoke", "end a session (SESSION_ID), or every session of an account (--user EMAIL)");
    sub->add_option("session", a.session_id, "SESSION_ID (as `sessions` and GET /sessions show it)");
    sub->add_option("--user", a.revoke_user, "every session of this account");
    a.on(sub, [&a] {
        if (a.session_id.empty() == a.revoke_user.empty()) {
            std::fprintf(stderr, "signin-admin revoke: give a SESSION_ID or --user EMAIL\n");
            return 2;
        }
        auto txn = a.store->write();
        std::vector<signin::SessionRecord> ending;
        if (!a.session_id.empty()) {
            auto s = txn->session_by_id(a.session_id);
            if (!s) return fail({Code::NotFound, "no such session"});
            ending.push_back(*s);
        } else {
            auto u = find_account(*txn, a.revoke_user, a.group_of());
            if (!u) return fail(u.error());
            ending = txn->sessions_of(u->id);
        }
        for (const auto &s : ending) {
            txn->del_session(s.hash);
            audit_admin(*txn, a.id->now(), "session.revoked", s.user_id, s.id);
        }
        txn->commit();
        std::printf("%zu session%s revoked\n", ending.size(), ending.size() == 1 ? "" : "s");
        return 0;
    });
}

void role_command(CLI::App &app, Admin &a) {
    auto *sub = app.add_subcommand("role", "give or take a role (signin_allow role ROLE)");
    sub->add_option("action", a.role_action, "add or remove")->required()->check(CLI::IsMember({"add", "remove"}));
    sub->add_option("email", a.who, "EMAIL")->required();
    sub->add_option("role", a.role, "ROLE")->required();
    sub->add_option("group", a.group_arg, "its group (or --group)");
    a.on(sub, [&a] {
        const bool add = a.role_action == "add";
        auto r = a.id->set_role(a.group_of(), a.who, a.role, add);
        if (!r) return fail(r.error());
        std::printf("%s: role %s %s\n", a.who.c_str(), a.role.c_str(), add ? "added" : "removed");
        return 0;
    });
}

// api_versions_pin signin: the version an account's requests without one are answered in. Shown
// without NAME ("-": none yet), set with NAME, cleared with "-" (its next versioned request pins
// the default of then). NAME is not checked against nginx's configuration, which this command
// does not read: a name no version has any more is answered in the default (and logged).
void api_version_command(CLI::App &app, Admin &a) {
    auto *sub = app.add_subcommand("api-version", "the API version pinned to an account (api_versions_pin signin): "
                                                  "show it, set it with NAME, clear it with -");
    sub->add_option("email", a.who, "EMAIL or ID")->required();
    sub->add_option("name", a.api_version, "NAME: pin to this version; -: clear the pin");
    a.on(sub, [&a] {
        if (a.api_version.empty()) {
            auto u = find_account(*a.store->read(), a.who, a.group_of());
            if (!u) return fail(u.error());
            if (a.json) {
                signin::json::Writer w;
                w.begin_object().key("id").value(u->id).key("email").value(u->email).key("api_version");
                if (u->api_version.empty()) w.null(); else w.value(u->api_version);
                std::printf("%s\n", w.end_object().take().c_str());
            } else {
                std::printf("%s\n", u->api_version.empty() ? "-" : u->api_version.c_str());
            }
            return 0;
        }
        const bool clear = a.api_version == "-";
        if (!clear && !signin::valid_api_version_name(a.api_version)) {
            return fail({Code::InvalidRequest, "a version's name is 1 to 64 printable characters, none of space, / \" \\ ,"});
        }
        auto txn = a.store->write();
        auto u = find_account(*txn, a.who, a.group_of());
        if (!u) return fail(u.error());
        signin::pin_api_version(*txn, u->id, clear ? "" : a.api_version, false);
        audit_admin(*txn, a.id->now(), "user.api_version", u->id, clear ? "-" : a.api_version);
        txn->commit();
        if (clear) {
            std::printf("%s: no API version pinned\n", a.who.c_str());
        } else {
            std::printf("%s: API version %s pinned\n", a.who.c_str(), a.api_version.c_str());
        }
        return 0;
    });
}

void mfa_command(CLI::App &app, Admin &a) {
    auto *mfa = app.add_subcommand("mfa", "second factors");
    auto *reset = mfa->add_subcommand("reset", "remove an account's second factor, recovery codes and remembered "
                                               "devices, and end its sessions (a lost phone)");
    mfa->require_subcommand(1);
    reset->add_option("email", a.who, "EMAIL")->required();
    reset->add_option("group", a.group_arg, "its group (or --group)");
    a.on(reset, [&a] {
        auto r = a.id->mfa().reset(a.group_of(), a.who);
        if (!r) return fail(r.error());
        std::printf("%s: second factor reset, sessions ended\n", a.who.c_str());
        return 0;
    });
}

void passkeys_command(CLI::App &app, Admin &a) {
    auto *sub = app.add_subcommand("passkeys", "an account's passkeys");
    sub->add_option("email", a.who, "EMAIL or ID")->required();
    a.on(sub, [&a] {
        auto txn = a.store->read();
        auto u = find_account(*txn, a.who, a.group_of());
        if (!u) return fail(u.error());
        Table t({"ID", "NAME", "CREATED", "LAST USED", "SYNCED"});
        for (const auto &p : txn->passkeys_of(u->id)) {
            const std::string pid = signin::enc::base64url(reinterpret_cast<const unsigned char *>(p.credential_id.data()),
                                                           p.credential_id.size());
            if (a.json) {
                signin::json::Writer w;
                w.begin_object().key("id").value(pid).key("name").value(p.name).key("created_at").time(p.created_at);
                w.key("synced").value(p.backup_eligible).end_object();
                std::printf("%s\n", w.str().c_str());
            }
            t.add({pid, p.name, when(p.created_at), when(p.last_used_at), p.backup_eligible ? "yes" : "no"});
        }
        if (!a.json) t.print();
        return 0;
    });
}

void passkey_command(CLI::App &app, Admin &a) {
    auto *passkey = app.add_subcommand("passkey", "one passkey");
    auto *remove = passkey->add_subcommand("remove", "remove a passkey (its id as `passkeys` shows it)");
    passkey->require_subcommand(1);
    remove->add_option("id", a.passkey_id, "ID")->required();
    a.on(remove, [&a] {
        auto raw = signin::enc::base64url_decode(a.passkey_id);
        if (!raw || raw->empty()) return fail({Code::NotFound, "no such passkey"});
        auto txn = a.store->write();
        auto p = txn->passkey(signin::secret_hash(*raw));
        if (!p) return fail({Code::NotFound, "no such passkey"});
        txn->del_passkey(p->key);
        audit_admin(*txn, a.id->now(), "passkey.removed", p->user_id, p->name);
        txn->commit();
        std::printf("passkey %s removed\n", p->name.c_str());
        return 0;
    });
}

void invite_command(CLI::App &app, Admin &a) {
    auto *sub = app.add_subcommand("invite", "make an account (its sign-in works with registration off)");
    sub->add_option("email", a.who, "EMAIL")->required();
    sub->add_option("--role", a.roles, "a role it holds (repeatable)");
    sub->add_flag("--send", a.send, "write an invitation email to the outbox (nginx sends it within a second)");
    sub->add_option("--key", a.key_file, "signin_secret_key (default: the store's path + .key)");
    a.on(sub, [&a] {
        if (a.send) {  // the email goes through nginx's outbox: sealed with the same key
            auto key = signin::load_secret_key(a.key_file.empty() ? default_key_file(a.store_arg) : a.key_file, false);
            if (!key) return fail(key.error());
            signin::OutboxSettings outbox;
            outbox.key = key.value();
            outbox.hold = 0;  // due now: the next outbox check of any nginx worker sends it
            a.id->use_outbox(outbox);
            outbox.key.fill(0);
        }
        auto r = a.id->tokens().invite(a.who, a.group, a.roles, a.send);
        if (!r) return fail(r.error());
        std::printf("%s: invited%s\n", a.who.c_str(), a.send ? "; the invitation email waits in the outbox" : "");
        return 0;
    });
}

void key_command(CLI::App &app, Admin &a) {
    auto *key = app.add_subcommand("key", "the key file (signin_secret_key)");
    auto *rotate = key->add_subcommand("rotate", "the next $signin_assertion signing key; nginx signs with it after its next reload");
    key->require_subcommand(1);
    rotate->add_option("file", a.key_file, "KEYFILE (default: the store's path + .key)");
    a.on(rotate, [&a] {
        const std::string path = a.key_file.empty() ? default_key_file(a.store_arg) : a.key_file;
        auto g = signin::rotate_assertion_key(path);
        if (!g) return fail(g.error());
        std::printf("%s: assertion key generation %llu (reload nginx to sign with it)\n", path.c_str(),
                    static_cast<unsigned long long>(g.value()));
        return 0;
    }, false);
}

void password_hash_command(CLI::App &app, Admin &a) {
    auto *sub = app.add_subcommand("password-hash", "an account's Argon2id PHC string (a one-way hash; empty: no password)");
    sub->add_option("email", a.who, "EMAIL")->required();
    sub->add_option("group", a.group_arg, "its group (or --group)");
    a.on(sub, [&a] {
        auto u = find_account(*a.store->read(), a.who, a.group_of());
        if (!u) return fail(u.error());
        std::printf("%s\n", u->password_hash.c_str());
        return 0;
    });
}

void audit_command(CLI::App &app, Admin &a) {
    auto *sub = app.add_subcommand("audit", "the newest audit entries that match");
    sub->add_option("count", a.count, "how many (default 20)")->check(CLI::Range(1, 1000000));
    sub->add_option("--email", a.email, "of this address");
    sub->add_option("--kind", a.kind, "of this kind (session.created, passkey.refused, ...)");
    sub->add_option("--since", a.since, "at or after: 2026-11-24, 2026-11-24T10:00:00Z, or ago: 30m, 12h, 7d")->check(kTime);
    sub->add_option("--until", a.until, "before (the same forms)")->check(kTime);
    a.on(sub, [&a] {
        const signin::Millis now = a.id->now();
        std::optional<signin::Millis> from, to;
        if (!a.since.empty() && !(from = parse_time(a.since, now))) return fail({Code::InvalidRequest, "--since: not a time"});
        if (!a.until.empty() && !(to = parse_time(a.until, now))) return fail({Code::InvalidRequest, "--until: not a time"});
        std::string email = a.email;
        if (!email.empty()) {
            auto normalized = signin::normalize_email(email);
            if (!normalized) return fail({Code::InvalidEmail, "that is not an email address"});
            email = *normalized;
        }
        auto txn = a.store->read();
        const bool filtered = !email.empty() || !a.kind.empty() || from || to;
        std::size_t shown = 0;
        Table t({"AT", "KIND", "EMAIL", "CLIENT", "DETAIL"});
        for (const auto &e : txn->audit(filtered ? txn->audit_count() : a.count)) {
            if (shown == a.count) break;
            if ((!email.empty() && e.email != email) || (!a.kind.empty() && e.kind != a.kind) || (from && e.at < *from) ||
                (to && e.at >= *to)) {
                continue;
            }
            if (a.json) std::printf("%s\n", signin::json::audit_entry(e).c_str());
            t.add({signin::enc::rfc3339(e.at), e.kind, e.email.empty() ? "-" : e.email, e.client, e.detail});
            ++shown;
        }
        if (!a.json) t.print();
        return 0;
    });
}

void stats_command(CLI::App &app, Admin &a) {
    auto *sub = app.add_subcommand("stats", "what the store holds, and how full it is");
    a.on(sub, [&a] {
        auto c = a.store->read()->counts();
        auto space = a.store->space();
        const double used = space.map_bytes ? 100.0 * static_cast<double>(space.used_bytes) / static_cast<double>(space.map_bytes) : 0;
        if (a.json) {
            std::printf("{\"users\":%zu,\"sessions\":%zu,\"tokens\":%zu,\"passkeys\":%zu,\"provider_links\":%zu,"
                        "\"audit_entries\":%zu,\"outbox\":%zu,\"events\":%zu,\"used_bytes\":%llu,\"map_bytes\":%llu,\"used_percent\":%.1f}\n",
                        c.users, c.sessions, c.tokens, c.passkeys, c.provider_links, c.audit, c.outbox, c.events,
                        static_cast<unsigned long long>(space.used_bytes), static_cast<unsigned long long>(space.map_bytes), used);
            return 0;
        }
        Table t({"WHAT", "COUNT"});
        t.add({"users", std::to_string(c.users)});
        t.add({"sessions (expired ones until purged)", std::to_string(c.sessions)});
        t.add({"tokens (outstanding codes)", std::to_string(c.tokens)});
        t.add({"passkeys", std::to_string(c.passkeys)});
        t.add({"provider links", std::to_string(c.provider_links)});
        t.add({"audit entries", std::to_string(c.audit)});
        t.add({"emails waiting in the outbox", std::to_string(c.outbox)});
        t.add({"events waiting to be sent", std::to_string(c.events)});
        char pct[32];
        std::snprintf(pct, sizeof pct, "%.1f%%", used);
        t.add({"store used", std::to_string(space.used_bytes) + " of " + std::to_string(space.map_bytes) + " bytes (" + pct + ")"});
        t.print();
        return 0;
    });
}

void backup_command(CLI::App &app, Admin &a) {
    auto *sub = app.add_subcommand("backup", "a consistent, compacted copy of the store into FILE (a new file), while nginx runs");
    sub->add_option("file", a.file, "FILE (restore: stop nginx, copy it to the store's data.mdb)")->required();
    a.on(sub, [&a] {
        a.store->backup(a.file);
        std::printf("%s: written\n", a.file.c_str());
        return 0;
    });
}

void copy_command(CLI::App &app, Admin &a) {
    auto *sub = app.add_subcommand("copy", "copy every record of this store into an empty PostgreSQL store (signin_store postgresql://...)");
    sub->add_option("to", a.copy_to, "the PostgreSQL store's URI")->required();
    a.on(sub, [&a] {
        if (!signin::is_pg_url(a.copy_to)) {
            std::fprintf(stderr, "signin-admin: copy goes into a postgresql:// store\n");
            return 2;
        }
        signin::PgOptions po;
        po.conninfo = a.copy_to;
        auto target = signin::open_pg_store(po);
        auto txn = target->write();
        const auto held = txn->counts();
        if (held.users + held.tokens + held.sessions + held.audit + held.outbox > 0) {
            std::fprintf(stderr, "signin-admin: the PostgreSQL store is not empty (%zu accounts): nothing copied\n", held.users);
            return 1;
        }
        a.store->copy_into(*txn);
        const auto copied = txn->counts();
        txn->commit();  // one transaction: all of it, or nothing
        std::printf("copied %zu accounts, %zu sessions, %zu tokens, %zu passkeys, %zu provider links, %zu audit entries, %zu emails waiting\n",
                    copied.users, copied.sessions, copied.tokens, copied.passkeys, copied.provider_links, copied.audit,
                    copied.outbox);
        return 0;
    });
}

void outbox_command(CLI::App &app, Admin &a) {
    auto *sub = app.add_subcommand("outbox", "the emails waiting to be sent: address, purpose, tries, next try, last error");
    sub->add_option("--key", a.key_file, "signin_secret_key, which opens the address and purpose (default: the store's path + .key)");
    sub->add_option("count", a.count, "how many, the earliest due first (default 20)")->check(CLI::Range(1, 1000000));
    a.on(sub, [&a] {
        // address and purpose are sealed with the key file nginx uses: without it the rest is shown
        const std::string path = a.key_file.empty() && !signin::is_pg_url(a.store_arg) ? default_key_file(a.store_arg)
                                                                                           : a.key_file;
        auto key = path.empty() ? signin::Result<signin::SecretKey>(Error{Code::Internal, "no key file named (--key)"})
                                : signin::load_secret_key(path, false);
        if (key) {
            signin::OutboxSettings outbox;
            outbox.key = key.value();
            a.id->use_outbox(outbox);
            outbox.key.fill(0);
        } else {
            std::fprintf(stderr, "signin-admin: %s: addresses and purposes are not shown\n", key.error().message.c_str());
        }
        auto entries = a.id->outbox().waiting(a.count);
        if (!entries) return fail(entries.error());
        const std::size_t total = a.store->read()->outbox_count();
        Table t({"EMAIL", "PURPOSE", "TRIES", "NEXT TRY", "CREATED", "LAST ERROR"});
        for (const auto &e : *entries) {
            const std::string purpose = e.purpose ? std::string(signin::purpose_tag(*e.purpose)) : std::string();
            if (a.json) {
                signin::json::Writer w;
                w.begin_object().key("email");
                if (e.email.empty()) w.null(); else w.value(e.email);
                w.key("purpose");
                if (purpose.empty()) w.null(); else w.value(purpose);
                w.key("tries").value(static_cast<std::int64_t>(e.attempts))
                    .key("next_try_at").time(e.next_try_at)
                    .key("takeover_at").time(e.due_at)
                    .key("created_at").time(e.created_at)
                    .key("last_error");
                if (e.last_error.empty()) w.null(); else w.value(e.last_error);
                w.end_object();
                std::printf("%s\n", w.str().c_str());
            }
            t.add({e.email.empty() ? "?" : e.email, purpose.empty() ? "?" : purpose, std::to_string(e.attempts),
                   when(e.next_try_at), when(e.created_at), e.last_error.empty() ? "-" : e.last_error});
        }
        if (!a.json) {
            t.print();
            if (total > entries->size()) std::printf("(%zu of %zu shown)\n", entries->size(), total);
        }
        return 0;
    });
}

void events_command(CLI::App &app, Admin &a) {
    auto *sub = app.add_subcommand("events", "the events waiting to be sent to the application (signin_events): id, type, "
                                             "user, tries, next try, last error");
    sub->add_option("count", a.count, "how many, in the order they are sent (default 20)")->check(CLI::Range(1, 1000000));
    a.on(sub, [&a] {
        auto entries = a.id->events().waiting(a.count);
        if (!entries) return fail(entries.error());
        const std::size_t total = a.store->read()->event_count();
        Table t({"ID", "TYPE", "USER", "TRIES", "NEXT TRY", "CREATED", "LAST ERROR"});
        for (const auto &e : *entries) {
            if (a.json) {  // the body is the application's to see: only what says where the event is
                signin::json::Writer w;
                w.begin_object().key("id").value(e.id).key("type").value(e.type).key("user_id").value(e.user_id)
                    .key("tries").value(static_cast<std::int64_t>(e.attempts))
                    .key("next_try_at").time(e.due_at)
                    .key("created_at").time(e.created_at)
                    .key("last_error");
                if (e.last_error.empty()) w.null(); else w.value(e.last_error);
                w.end_object();
                std::printf("%s\n", w.str().c_str());
            }
            t.add({e.id, e.type, e.user_id, std::to_string(e.attempts), when(e.due_at), when(e.created_at),
                   e.last_error.empty() ? "-" : e.last_error});
        }
        if (!a.json) {
            t.print();
            if (total > entries->size()) std::printf("(%zu of %zu shown)\n", entries->size(), total);
        }
        return 0;
    });
}

void check_command(CLI::App &app, Admin &a) {
    auto *sub = app.add_subcommand("check", "decode every record and check every index");
    a.on(sub, [&a] {
        auto problems = a.store->check_integrity();
        for (const auto &p : problems) std::printf("%s\n", p.c_str());
        if (problems.empty()) std::printf("the store is sound\n");
        return problems.empty() ? 0 : 1;
    });
}

void purge_command(CLI::App &app, Admin &a) {
    auto *sub = app.add_subcommand("purge", "delete expired tokens and sessions, and old audit entries, now");
    a.on(sub, [&a] {
        auto n = a.id->purge_expired(static_cast<std::size_t>(-1));
        if (!n) return fail(n.error());
        std::printf("purged %zu expired records\n", n.value());
        return 0;
    });
}

// Parses the line and runs the command it names. Exit status: the command's; 2 for a line that
// is no command (with the usage); 1 for a store that failed under it.
int run(CLI::App &app, const Admin &a, int argc, char **argv) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp &e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp &e) {
        return app.exit(e);
    } catch (const CLI::ParseError &e) {
        if (auto word = unknown_word(app)) {
            std::fprintf(stderr, "signin-admin: unknown command \"%s\" (signin-admin --help lists the commands)\n", word->c_str());
            return 2;
        }
        (void)app.exit(e);  // prints the message and the usage
        return 2;
    } catch (const signin::StoreError &e) {
        std::fprintf(stderr, "signin-admin: %s\n", e.what());
        return 1;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "signin-admin: %s\n", e.what());
        return 1;
    }
    return a.status;
}

}  // namespace

int main(int argc, char **argv) {
    Admin a;
    CLI::App app{"signin-admin: operate on an ngx_signin store, also while nginx runs"};
    app.require_subcommand(1);
    app.fallthrough();  // --store, --group, --json and --create anywhere on the line
    app.add_option("--store", a.store_arg, "the store: its directory, or a postgresql:// URI (signin_store)")->required();
    app.add_option("--group", a.group, "the group of the account named (default: default)");
    app.add_flag("--create", a.create, "make the store if it does not exist");
    app.add_flag("--json", a.json, "JSON lines instead of tables");
    app.set_version_flag("--version", std::string("signin-admin (ngx_signin) ") + SIGNIN_VERSION);
    // in the order --help lists them
    for (auto add : {users_command, user_command, suspend_commands, sessions_command, revoke_command, role_command,
                     api_version_command, mfa_command, passkeys_command, passkey_command, invite_command, key_command, password_hash_command,
                     audit_command, stats_command, outbox_command, events_command, backup_command, copy_command, check_command, purge_command}) {
        add(app, a);
    }
    return run(app, a, argc, argv);
}
