// signin-admin: operate on an ngx_signin LMDB store from the shell, also while nginx runs
// (LMDB serializes writers across processes). Run it as the nginx worker user, or as root on a
// store nginx has not opened yet (nginx gives the directory to its worker user at start).
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/encoding.hpp"
#include "signin/json.hpp"
#include "signin/auth.hpp"
#include "signin/secret_key.hpp"

namespace {

int usage() {
    std::fprintf(stderr,
                 "usage: signin-admin --store DIR [--create] COMMAND [ARGS]   (options anywhere)\n"
                 "  a missing store is an error unless --create is given\n"
                 "commands:\n"
                 "  suspend EMAIL [GROUP]   suspend an account (its sessions stop working)\n"
                 "  restore EMAIL [GROUP]   lift a suspension\n"
                 "  user EMAIL [GROUP]      print an account as JSON\n"
                 "  users [--email TEXT] [--group G]  every account (or those whose address contains TEXT), JSON lines\n"
                 "  sessions EMAIL [GROUP]  the account's live sessions, JSON lines\n"
                 "  revoke SESSION_ID       end one session (its id as GET /sessions and `sessions` show it)\n"
                 "  role add|remove EMAIL ROLE [--group G]  give or take a role (signin_allow role ROLE)\n"
                 "  mfa reset EMAIL [--group G]  remove the account's second factor, recovery codes and\n"
                 "                          remembered devices, and end its sessions (a lost phone)\n"
                 "  invite EMAIL [--role ROLE]... [--group G] [--send [--key KEYFILE]]\n"
                 "                          make the account (its sign-in works with registration off); --send\n"
                 "                          writes an invitation email to the outbox, sent by nginx within a second\n"
                 "  key rotate [KEYFILE]    the next $signin_assertion signing key (KEYFILE: signin_secret_key,\n"
                 "                          default DIR.key); nginx signs with it after its next reload\n"
                 "  password-hash EMAIL [GROUP]  print the account's Argon2id PHC string (empty: no password)\n"
                 "  audit [N] [--email ADDRESS] [--kind KIND]\n"
                 "                          the newest N audit entries (default 20) that match, JSON lines\n"
                 "  stats                   counts of users and audit entries\n"
                 "  purge                   delete expired tokens and sessions, and old audit entries, now\n");
    return 2;
}

int fail(const signin::Error &e) {
    std::fprintf(stderr, "signin-admin: %s (%s)\n", e.message.c_str(), std::string(signin::code_name(e.code)).c_str());
    return 1;
}

// signin_secret_key's default: the store's path + ".key".
std::string default_key_file(std::string dir) {
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    return dir + ".key";
}

// The account of an address in a group ("" = default).
signin::Result<signin::User> find_account(signin::ReadTxn &txn, const std::string &email_in, const std::string &group) {
    auto email = signin::normalize_email(email_in);
    auto g = signin::normalize_group(group);
    if (!email || !g) return signin::Error{signin::Code::InvalidEmail, "that is not an email address"};
    auto u = txn.user_by_email(*g, *email);
    if (!u) return signin::Error{signin::Code::NotFound, "no such account"};
    return *u;
}

// One account as a JSON line: the user, and what the API does not show.
void print_account(const signin::User &u) {
    signin::json::Writer w;
    w.begin_object().key("user");
    signin::json::write_user(w, u);
    w.key("suspended").value(u.suspended).key("has_password").value(!u.password_hash.empty());
    w.key("pending").value(u.pending);
    w.key("roles").begin_array();
    for (const auto &role : u.roles) w.value(role);
    w.end_array().end_object();
    std::printf("%s\n", w.str().c_str());
}

}  // namespace

int main(int argc, char **argv) {
    // --store DIR, --group G and --create anywhere on the line; the rest is the command and its
    // arguments
    std::vector<std::string> args;
    std::string store;
    std::optional<std::string> group_option;
    bool create = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--store" && i + 1 < argc) {
            store = argv[++i];
        } else if (a.rfind("--store=", 0) == 0) {
            store = a.substr(8);
        } else if (a == "--group" && i + 1 < argc) {
            group_option = argv[++i];
        } else if (a == "--create") {
            create = true;
        } else {
            args.push_back(std::move(a));
        }
    }
    if (store.empty() || args.empty()) return usage();
    // a mistyped --store must not quietly make an empty store and report on it
    struct stat data_file {};
    if (args[0] != "key" && !create && stat((store + "/data.mdb").c_str(), &data_file) != 0) {
        std::fprintf(stderr, "signin-admin: no store at %s (give --create to make one)\n", store.c_str());
        return 1;
    }
    if (args[0] == "key") {  // the key file, not the store
        if (args.size() < 2 || args[1] != "rotate" || args.size() > 3) return usage();
        std::string path = args.size() == 3 ? args[2] : default_key_file(store);
        auto g = signin::rotate_assertion_key(path);
        if (!g) return fail(g.error());
        std::printf("%s: assertion key generation %llu (reload nginx to sign with it)\n", path.c_str(),
                    static_cast<unsigned long long>(g.value()));
        return 0;
    }
    try {
        signin::LmdbOptions opts;
        opts.path = store;
        std::shared_ptr<signin::Store> st = signin::open_lmdb_store(opts);
        std::string why;
        auto origin = signin::parse_origin("http://127.0.0.1", &why);
        signin::Identity id(st, *origin, signin::Policy{});
        const std::string &cmd = args[0];
        // a command's GROUP: --group G, or its argument after the address (suspend EMAIL GROUP)
        std::string group = group_option ? *group_option : args.size() > 2 ? args[2] : "";
        if ((cmd == "suspend" || cmd == "restore") && args.size() >= 2) {
            auto r = id.set_suspended(group, args[1], cmd == "suspend");
            if (!r) return fail(r.error());
            std::printf("%s: %s\n", args[1].c_str(), cmd == "suspend" ? "suspended" : "restored");
            return 0;
        }
        if (cmd == "invite" && args.size() >= 2) {
            std::vector<std::string> roles;
            std::string key_path;
            bool send = false;
            for (std::size_t i = 2; i < args.size(); ++i) {
                if (args[i] == "--send") {
                    send = true;
                } else if (args[i] == "--role" && i + 1 < args.size()) {
                    roles.push_back(args[++i]);
                } else if (args[i] == "--key" && i + 1 < args.size()) {
                    key_path = args[++i];
                } else {
                    return usage();
                }
            }
            if (send) {  // the email goes through nginx's outbox: sealed with the same key
                auto key = signin::load_secret_key(key_path.empty() ? default_key_file(store) : key_path, false);
                if (!key) return fail(key.error());
                signin::OutboxSettings outbox;
                outbox.key = key.value();
                outbox.hold = 0;  // due now: the next outbox check of any nginx worker sends it
                id.use_outbox(outbox);
                outbox.key.fill(0);
            }
            auto r = id.tokens().invite(args[1], group_option.value_or(""), roles, send);
            if (!r) return fail(r.error());
            std::printf("%s: invited%s\n", args[1].c_str(), send ? "; the invitation email waits in the outbox" : "");
            return 0;
        }
        if (cmd == "users" && (args.size() == 1 || (args.size() == 3 && args[1] == "--email"))) {
            const std::string needle = args.size() == 3 ? args[2] : "";
            auto txn = st->read();
            std::string after;
            for (;;) {
                auto page = txn->users(after, 1000);
                for (const auto &u : page) {
                    if (!needle.empty() && u.email.find(needle) == std::string::npos) continue;
                    if (group_option && u.group_id != *group_option) continue;
                    print_account(u);
                }
                if (page.size() < 1000) break;
                after = page.back().id;
            }
            return 0;
        }
        if (cmd == "sessions" && args.size() >= 2) {
            auto txn = st->read();
            auto u = find_account(*txn, args[1], group);
            if (!u) return fail(u.error());
            for (const auto &s : txn->sessions_of(u->id)) {
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
            return 0;
        }
        if (cmd == "revoke" && args.size() == 2) {
            auto txn = st->write();
            auto s = txn->session_by_id(args[1]);
            if (!s) return fail({signin::Code::NotFound, "no such session"});
            txn->del_session(s->hash);
            signin::AuditEntry e;
            e.at = id.now();
            e.kind = "session.revoked";
            e.client = "admin";
            e.user_id = s->user_id;
            if (auto owner = txn->user_by_id(s->user_id)) e.email = owner->email;
            e.detail = s->id;
            txn->append_audit(e);
            txn->commit();
            std::printf("%s: revoked\n", args[1].c_str());
            return 0;
        }
        if (cmd == "role" && args.size() >= 4 && (args[1] == "add" || args[1] == "remove")) {
            auto r = id.set_role(group_option ? *group_option : args.size() > 4 ? args[4] : "", args[2], args[3],
                                 args[1] == "add");
            if (!r) return fail(r.error());
            std::printf("%s: role %s %s\n", args[2].c_str(), args[3].c_str(), args[1] == "add" ? "added" : "removed");
            return 0;
        }
        if (cmd == "mfa" && args.size() >= 3 && args[1] == "reset") {
            auto r = id.mfa().reset(group_option ? *group_option : args.size() > 3 ? args[3] : "", args[2]);
            if (!r) return fail(r.error());
            std::printf("%s: second factor reset, sessions ended\n", args[2].c_str());
            return 0;
        }
        if (cmd == "user" && args.size() >= 2) {
            auto u = find_account(*st->read(), args[1], group);
            if (!u) return fail(u.error());
            print_account(u.value());
            return 0;
        }
        if (cmd == "password-hash" && args.size() >= 2) {
            // a one-way hash, not a secret: printed for audits of the hash settings and for
            // checking it with another Argon2 implementation
            auto u = find_account(*st->read(), args[1], group);
            if (!u) return fail(u.error());
            std::printf("%s\n", u->password_hash.c_str());
            return 0;
        }
        if (cmd == "audit") {
            // audit [N] [--email ADDRESS] [--kind KIND]: the newest N entries (20) that match
            std::size_t n = 20;
            std::string email, kind;
            for (std::size_t i = 1; i < args.size(); ++i) {
                if ((args[i] == "--email" || args[i] == "--kind") && i + 1 < args.size()) {
                    (args[i] == "--email" ? email : kind) = args[i + 1];
                    ++i;
                } else if (!args[i].empty() && args[i].size() <= 9 &&
                           args[i].find_first_not_of("0123456789") == std::string::npos) {
                    n = std::stoul(args[i]);
                } else {
                    return usage();
                }
            }
            if (!email.empty()) {
                auto normalized = signin::normalize_email(email);
                if (!normalized) return fail({signin::Code::InvalidEmail, "that is not an email address"});
                email = *normalized;
            }
            auto txn = st->read();
            const bool filtered = !email.empty() || !kind.empty();
            std::size_t shown = 0;
            for (const auto &e : txn->audit(filtered ? txn->audit_count() : n)) {
                if (shown == n) break;
                if ((!email.empty() && e.email != email) || (!kind.empty() && e.kind != kind)) continue;
                signin::json::Writer w;
                w.begin_object()
                    .key("at").time(e.at)
                    .key("kind").value(e.kind)
                    .key("email").value(e.email)
                    .key("client").value(e.client)
                    .key("user_id").value(e.user_id)
                    .key("detail").value(e.detail)
                    .end_object();
                std::printf("%s\n", w.str().c_str());
                ++shown;
            }
            return 0;
        }
        if (cmd == "stats") {
            auto r = st->read();
            std::printf("{\"users\":%zu,\"audit_entries\":%zu,\"outbox\":%zu}\n", r->user_count(), r->audit_count(),
                        r->outbox_count());
            return 0;
        }
        if (cmd == "purge") {
            auto n = id.purge_expired(static_cast<std::size_t>(-1));
            if (!n) return fail(n.error());
            std::printf("purged %zu expired records\n", n.value());
            return 0;
        }
        return usage();
    } catch (const signin::StoreError &e) {
        std::fprintf(stderr, "signin-admin: %s\n", e.what());
        return 1;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "signin-admin: %s\n", e.what());
        return 1;
    }
}
