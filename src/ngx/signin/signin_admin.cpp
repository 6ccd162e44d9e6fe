// The administrators' API (signin_admin): admin/api/users (a search in pages), users/{id} (a
// person), the changes to an account, invitations and the audit trail. The engine's Admin decides
// who may read and who may change; this file reads the request, asks it, and writes the answer.
// Reads go as every read of the API (with_read); changes are jobs in the write batch. Nothing
// secret is ever answered: no code, token, hash or TOTP secret.
#include "signin/admin.hpp"
#include "signin/encoding.hpp"
#include "signin/json.hpp"
#include "signin_api.h"
#include "signin_conf.h"
#include "signin_delivery.h"
#include "signin_handlers.h"
#include "signin_jobs.h"
#include "signin_metrics.h"
#include "signin_registration.h"
#include "signin_reply.h"
#include "signin_request.h"

#include <functional>
#include <iterator>

namespace signin_ngx {
namespace {

using signin::Code;

signin::Identity &id() { return *identity(); }

std::string admin_role(ngx_http_request_t *r) { return std::string(sv(main_conf(r)->admin_role)); }

// A user id as the engine makes them (a UUID, lower-case hex): anything else is refused before
// the store is asked.
bool looks_like_user_id(std::string_view s) {
    if (s.size() != 36) return false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

// The {id} of admin/api/users/{id}/...: the route matched, so the segment is there.
std::string_view user_id_of(ngx_http_request_t *r) {
    constexpr std::string_view kUsers = "admin/api/users/";
    std::string_view path = sub_path(r).value_or("");
    if (path.substr(0, kUsers.size()) != kUsers) return {};
    path.remove_prefix(kUsers.size());
    return path.substr(0, path.find('/'));
}

// The signed-in administrator of a request, or nullptr with the answer's rc in `rc`: 401 without
// a session, 403 without the role, and for a change 403 fresh_session_required unless the
// session passed a second factor within the fresh window. The engine asks again in each call;
// asking here first spares a store read or a write batch for a refusal.
const signin::Principal *administrator(ApiCall &call, ngx_int_t &rc, bool change) {
    const signin::Principal *p = signed_in(call, rc);
    if (p == nullptr) return nullptr;
    signin::Admin admin(id(), id().tokens(), admin_role(call.r));
    if (auto st = change ? admin.may_change(*p) : admin.may_read(*p); !st) {
        rc = send_failure(call.r, st.error());
        return nullptr;
    }
    return p;
}

// One change to an account, in the write batch: `change` is the Admin call; the answer is 204.
class AdminJob final : public Job {
public:
    using Change = std::function<signin::Status(signin::Admin &, const signin::Principal &)>;
    AdminJob(signin::Principal admin, std::string role, Change change)
        : Job(Stage::Write), admin_(std::move(admin)), role_(std::move(role)), change_(std::move(change)) {}

private:
    signin::Status write() override {
        signin::Admin admin(id(), id().tokens(), role_);
        return change_(admin, admin_);
    }
    ngx_int_t answer(ngx_http_request_t *r) override { return send_empty(r, NGX_HTTP_NO_CONTENT); }

    signin::Principal admin_;
    std::string role_;
    Change change_;
};

// POST invitations: the account made (or found) and its roles added in one write, then the
// invitation's email from the outbox when it was asked for. With signin_registration_check, the
// application is asked first; the roles it gives join the administrator's.
class InviteJob final : public Job {
public:
    InviteJob(signin::Principal admin, std::string role, std::string email, std::string group,
              std::vector<std::string> roles, bool send, std::string client)
        : Job(Stage::Write), admin_(std::move(admin)), role_(std::move(role)), email_(std::move(email)),
          group_(std::move(group)), roles_(std::move(roles)), send_(send), client_(std::move(client)) {}

    void add_roles(std::vector<std::string> more) {
        roles_.insert(roles_.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    }

private:
    signin::Status write() override {
        signin::Admin admin(id(), id().tokens(), role_);
        auto issued = admin.invite(admin_, email_, group_, roles_, send_);
        if (!issued) return issued.error();
        issued_ = std::move(issued.value());
        return signin::ok_status();
    }
    ngx_int_t answer(ngx_http_request_t *r) override {
        const bool sent = issued_->delivery.has_value();
        if (sent) start_delivery(*issued_->delivery, std::move(issued_->outbox_key), client_);
        signin::json::Writer w;
        w.begin_object().key("email").value(email_).key("sent").value(sent).end_object();
        return send_json(r, sent ? 202 : 200, w.take());
    }

    signin::Principal admin_;
    std::string role_, email_, group_;
    std::vector<std::string> roles_;
    bool send_;
    std::string client_;
    std::optional<signin::TokenIssue> issued_;
};

// A change to the account {id} that takes nothing else: the administrator and the id checked, a
// body (none, or an empty object) refused when it holds anything.
using AccountChange = std::function<signin::Status(signin::Admin &, const signin::Principal &, const std::string &)>;
ngx_int_t account_change(ApiCall &call, AccountChange change) {
    ngx_int_t rc = NGX_ERROR;
    const signin::Principal *p = administrator(call, rc, true);
    if (p == nullptr) return rc;
    const std::string user_id(user_id_of(call.r));
    if (!looks_like_user_id(user_id)) return send_error(call.r, Code::InvalidRequest, "that is not a user id");
    auto f = signin::json::parse_object(call.body.empty() ? std::string_view("{}") : call.body, {});
    if (!f) return send_failure(call.r, f.error());
    return start_job(call.r, std::make_unique<AdminJob>(*p, admin_role(call.r),
                                                        [user_id, change = std::move(change)](
                                                            signin::Admin &a, const signin::Principal &admin) {
                                                            return change(a, admin, user_id);
                                                        }));
}

void admin_page_resume(ngx_http_request_t *r);

// The sign-in page of this API location ("/auth/" for the admin page "/auth/admin/"): where the
// 403 page's "use another account" leads.
std::string auth_base(ngx_http_request_t *r) {
    const std::string_view uri = sv(r->uri), path = sub_path(r).value_or("");
    return std::string(uri.substr(0, uri.size() - std::min(path.size(), uri.size())));
}

}  // namespace

// A signed-in account that is not an administrator gets the 403 page, not the page's shell: the
// page is for the role, and saying so before any script runs is the server's answer.
ngx_int_t admin_page(ngx_http_request_t *r) {
    signin::Identity *engine = identity();
    if (engine == nullptr) return send_unavailable_page(r);
    Credentials c = read_credentials(r, engine->cookie_name());
    // only a browser's session decides: without one (or with a bearer token, which no browser
    // sends on a navigation) the page asks the visitor to sign in itself
    if (c.state != Credentials::Cookie) return send_admin_shell(r);
    RequestCtx *ctx = get_ctx(r, true);
    if (ctx == nullptr) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    if (reads_block() && !ctx->pre_auth && !from_session_cache(r, c)) {
        if (start_auth_read(r, c) != NGX_OK) {
            if (!add_header(r, "Retry-After", "1")) return NGX_HTTP_INTERNAL_SERVER_ERROR;
            return send_unavailable_page(r);
        }
        r->main->count++;  // the request's own reference while it waits (released by the resume)
        r->write_event_handler = admin_page_resume;
        return NGX_DONE;
    }
    auto p = authenticate(r, c);
    if (!p) return send_admin_shell(r);  // an ended session: the page sends the visitor to sign in
    if (auto st = signin::Admin(id(), id().tokens(), admin_role(r)).may_read(*p.value()); !st) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0, "signin: user %s may not open the admin page",
                      p.value()->user.id.c_str());
        count_failure(signin::Code::Forbidden);
        const std::string email = p.value()->user.email;
        if (RequestCtx *rctx = get_ctx(r, false)) rctx->principal.reset();
        return send_forbidden_page(r, email, auth_base(r));
    }
    return send_admin_shell(r);
}

namespace {

void admin_page_resume(ngx_http_request_t *r) {
    RequestCtx *ctx = get_ctx(r, false);
    if (ctx == nullptr || ctx->auth_reading) return;  // a stray write event while waiting
    r->write_event_handler = ngx_http_request_empty_handler;
    ngx_http_finalize_request(r, guard_request(r, "signin: the admin page", [r] { return admin_page(r); }));
}

}  // namespace

ngx_int_t get_admin_users(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    const signin::Principal *p = administrator(call, rc, false);
    if (p == nullptr) return rc;
    signin::UserQuery q;
    auto arg = [&call](std::string_view name) { return query_arg(call.r, name); };
    q.text = arg("q").value_or("");
    q.role = arg("role").value_or("");
    q.state = arg("state").value_or("");
    // the cursor is the engine's own position (an index key, with NUL bytes): base64url on the wire
    if (auto after = arg("after"); after && !after->empty()) {
        auto raw = signin::enc::base64url_decode(*after);
        if (!raw || raw->size() > 1024) return send_error(call.r, Code::InvalidRequest, "that is not a cursor");
        q.after = std::move(*raw);
    }
    if (auto limit = arg("limit")) {
        const ngx_int_t n = ngx_atoi(reinterpret_cast<u_char *>(limit->data()), limit->size());
        if (n < 1 || static_cast<std::size_t>(n) > signin::Admin::kMaxPage) {
            return send_error(call.r, Code::InvalidRequest,
                              "limit is 1 to " + std::to_string(signin::Admin::kMaxPage));
        }
        q.limit = static_cast<std::size_t>(n);
    }
    return with_read<signin::UserPage>(
        call.r,
        [p, q = std::move(q), role = admin_role(call.r)] {
            return signin::Admin(id(), id().tokens(), role).search(*p, q);
        },
        [](ngx_http_request_t *r, signin::UserPage &page) {
            const auto *raw = reinterpret_cast<const unsigned char *>(page.next.data());
            const std::string next = page.next.empty() ? std::string() : signin::enc::base64url(raw, page.next.size());
            return send_json(r, 200, signin::json::user_page(page.users, next));
        });
}

ngx_int_t get_admin_user(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    const signin::Principal *p = administrator(call, rc, false);
    if (p == nullptr) return rc;
    std::string user_id(user_id_of(call.r));
    if (!looks_like_user_id(user_id)) return send_error(call.r, Code::InvalidRequest, "that is not a user id");
    return with_read<signin::AdminUserInfo>(
        call.r,
        [p, user_id = std::move(user_id), role = admin_role(call.r)] {
            return signin::Admin(id(), id().tokens(), role).user(*p, user_id);
        },
        [](ngx_http_request_t *r, signin::AdminUserInfo &a) { return send_json(r, 200, signin::json::admin_user(a)); });
}

ngx_int_t post_admin_suspend(ApiCall &call) {
    return account_change(call, [](signin::Admin &a, const signin::Principal &p, const std::string &user) {
        return a.suspend(p, user, true);
    });
}

ngx_int_t post_admin_unsuspend(ApiCall &call) {
    return account_change(call, [](signin::Admin &a, const signin::Principal &p, const std::string &user) {
        return a.suspend(p, user, false);
    });
}

ngx_int_t post_admin_sessions_revoke(ApiCall &call) {
    return account_change(call, [](signin::Admin &a, const signin::Principal &p, const std::string &user) {
        return a.end_sessions(p, user);
    });
}

ngx_int_t post_admin_mfa_reset(ApiCall &call) {
    return account_change(call, [](signin::Admin &a, const signin::Principal &p, const std::string &user) {
        return a.reset_mfa(p, user);
    });
}

ngx_int_t post_admin_delete(ApiCall &call) {
    return account_change(call, [](signin::Admin &a, const signin::Principal &p, const std::string &user) {
        return a.erase(p, user);
    });
}

ngx_int_t post_admin_roles(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    const signin::Principal *p = administrator(call, rc, true);
    if (p == nullptr) return rc;
    const std::string user_id(user_id_of(call.r));
    if (!looks_like_user_id(user_id)) return send_error(call.r, Code::InvalidRequest, "that is not a user id");
    auto f = signin::json::parse_object(call.body, {{"add", false, false, true}, {"remove", false, false, true}});
    if (!f) return send_failure(call.r, f.error());
    auto add = signin::json::list_items(f.value()["add"]), remove = signin::json::list_items(f.value()["remove"]);
    if (add.empty() && remove.empty()) {
        return send_error(call.r, Code::InvalidRequest, "name a role to add or to remove");
    }
    return start_job(call.r, std::make_unique<AdminJob>(
                                 *p, admin_role(call.r),
                                 [user_id, add = std::move(add), remove = std::move(remove)](
                                     signin::Admin &a, const signin::Principal &admin) {
                                     return a.set_roles(admin, user_id, add, remove);
                                 }));
}

ngx_int_t post_admin_invitations(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    const signin::Principal *p = administrator(call, rc, true);
    if (p == nullptr) return rc;
    auto f = signin::json::parse_object(
        call.body, {{"email", true}, {"group", false}, {"roles", false, false, true}, {"send", false, true}});
    if (!f) return send_failure(call.r, f.error());
    auto &v = f.value();
    auto job = std::make_unique<InviteJob>(*p, admin_role(call.r), v["email"], v["group"],
                                           signin::json::list_items(v["roles"]), v["send"] == "true", call.client());
    InviteJob *invite = job.get();
    RegistrationAsk ask{v["email"], v["group"], "invitation", call.client()};
    ask.even_if_closed = true;
    return check_registration(call.r, std::move(ask), std::move(job),
                              [invite](std::vector<std::string> roles) { invite->add_roles(std::move(roles)); });
}

// The dashboard: counters of the shared zone (signin_metrics) and the store's use, nothing of
// any one person. Read in the thread pool when the store's reads may block.
ngx_int_t get_admin_stats(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    if (administrator(call, rc, false) == nullptr) return rc;
    return with_read<signin::metrics::Dashboard>(
        call.r, [] { return signin::Result<signin::metrics::Dashboard>(dashboard()); },
        [](ngx_http_request_t *r, signin::metrics::Dashboard &d) {
            return send_json(r, 200, signin::metrics::dashboard_json(d));
        });
}

ngx_int_t get_admin_audit(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    const signin::Principal *p = administrator(call, rc, false);
    if (p == nullptr) return rc;
    signin::AuditQuery q;
    auto arg = [&call](std::string_view name) { return query_arg(call.r, name); };
    q.kind = arg("kind").value_or("");
    q.email = arg("email").value_or("");
    q.user_id = arg("user").value_or("");
    if (auto limit = arg("limit")) {
        const ngx_int_t n = ngx_atoi(reinterpret_cast<u_char *>(limit->data()), limit->size());
        if (n < 1 || static_cast<std::size_t>(n) > signin::Admin::kAuditWindow) {
            return send_error(call.r, Code::InvalidRequest, "limit is 1 to " + std::to_string(signin::Admin::kAuditWindow));
        }
        q.limit = static_cast<std::size_t>(n);
    }
    for (auto [name, at] : {std::pair{"since", &q.since}, std::pair{"until", &q.until}}) {
        auto text = arg(name);
        if (!text || text->empty()) continue;
        auto ms = signin::enc::parse_rfc3339(*text);
        if (!ms) {
            return send_error(call.r, Code::InvalidRequest,
                              std::string(name) + " is a time as 2026-11-24T10:00:00Z");
        }
        *at = *ms;
    }
    const std::string format = arg("format").value_or("json");
    if (format != "json" && format != "csv") return send_error(call.r, Code::InvalidRequest, "format is json or csv");
    const bool csv = format == "csv";
    return with_read<std::vector<signin::AuditEntry>>(
        call.r,
        [p, q = std::move(q), role = admin_role(call.r)] {
            return signin::Admin(id(), id().tokens(), role).audit(*p, q);
        },
        [csv](ngx_http_request_t *r, std::vector<signin::AuditEntry> &entries) {
            if (csv) return send_csv(r, signin::audit_csv(entries));
            return send_json(r, 200, signin::json::audit_entries(entries));
        });
}

}  // namespace signin_ngx
