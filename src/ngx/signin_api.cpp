// The signin_api content handler (SPEC §4 email-token endpoints) and the signin_require gate.
// Request rules run on the event loop; every write runs in the thread pool (DESIGN §3 rule 1).
#include "ngx/signin_glue.h"

#include <array>
#include <map>

#include "core/json.hpp"
#include "ngx/signin_limits.h"

namespace signin_ngx {
namespace {

using signin::Code;

enum Endpoint { Register, Login, SessionEp, Token, Me, Sessions, Revoke, Logout, PwSet, PwRegister, PwSession, PwToken,
                PwChange };

bool is_password_endpoint(Endpoint ep) { return ep >= PwSet; }

struct Route {
    std::string_view path;
    ngx_uint_t method;
    Endpoint ep;
};

constexpr std::array<Route, 13> kRoutes = {{
    {"register", NGX_HTTP_POST, Register},
    {"login", NGX_HTTP_POST, Login},
    {"session", NGX_HTTP_POST, SessionEp},
    {"token", NGX_HTTP_POST, Token},
    {"me", NGX_HTTP_GET, Me},
    {"sessions", NGX_HTTP_GET, Sessions},
    {"sessions/revoke", NGX_HTTP_POST, Revoke},
    {"logout", NGX_HTTP_POST, Logout},
    {"password", NGX_HTTP_POST, PwSet},
    {"password/register", NGX_HTTP_POST, PwRegister},
    {"password/session", NGX_HTTP_POST, PwSession},
    {"password/token", NGX_HTTP_POST, PwToken},
    {"password/change", NGX_HTTP_POST, PwChange},
}};

signin::Identity &id() { return *identity(); }

// SPEC §8: which per-client request limit an endpoint counts against.
Bucket bucket_of(Endpoint ep) {
    switch (ep) {
    case Me: case Sessions: case Revoke: case Logout: return Bucket::SignedIn;
    default: return Bucket::Sensitive;  // sends email, exchanges tokens or checks passwords
    }
}

// The per-address send counter: group + address as the engine normalizes them ("" if invalid).
std::string address_key(std::string_view email, std::string_view group) {
    auto e = signin::normalize_email(email);
    auto g = signin::normalize_group(group);
    if (!e || !g) return {};
    return *g + "\n" + *e;
}

// SPEC §8 password limits, from the signin_password_* directives; kept in the signin_limits zone.
signin::throttle::BackoffRule pair_rule(const MainConf *m) {
    signin::throttle::BackoffRule b;
    b.free_failures = static_cast<std::uint32_t>(m->password_attempts);
    b.base = static_cast<signin::throttle::Millis>(m->password_backoff);
    b.max = static_cast<signin::throttle::Millis>(m->password_backoff_max);
    return b;
}
signin::throttle::BackoffRule registration_rule(const MainConf *m) {
    signin::throttle::BackoffRule b;
    b.free_failures = 1;  // every registration counts: the first makes the next wait
    b.base = static_cast<signin::throttle::Millis>(m->password_register_backoff);
    b.max = static_cast<signin::throttle::Millis>(m->password_register_backoff_max);
    return b;
}
signin::throttle::WindowRule address_rule(const MainConf *m) {
    signin::throttle::WindowRule w;
    w.limit = static_cast<std::uint32_t>(m->password_address_limit);
    w.window = static_cast<signin::throttle::Millis>(m->password_address_window);
    return w;
}

// The key of the (address, client) password backoff. It also names the tail of the address's
// current password hash, so that a reset (a new hash) starts every client's history of that
// address afresh (SPEC §8 rule 2) without visiting them. A read transaction: event-loop safe.
std::string pair_key(const std::string &address, std::string_view email, std::string_view group,
                     const std::string &client) {
    std::string k = address + "\n" + client + "\n";
    auto e = signin::normalize_email(email);
    auto g = signin::normalize_group(group);
    if (e && g) {
        auto u = id().store().read()->user_by_email(*g, *e);
        if (u && u->password_hash.size() > 16) k += u->password_hash.substr(u->password_hash.size() - 16);
    }
    return k;
}

// The path below the location: "/auth/" + "register" → "register".
std::optional<std::string_view> sub_path(ngx_http_request_t *r) {
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_get_module_loc_conf(r, ngx_http_core_module));
    std::string_view uri = sv(r->uri), name = sv(clcf->name);
    if (uri.substr(0, name.size()) != name) return std::nullopt;
    std::string_view rest = uri.substr(name.size());
    while (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
    return rest;
}

bool is_json_content_type(ngx_http_request_t *r) {
    if (r->headers_in.content_type == nullptr) return false;
    std::string_view v = sv(r->headers_in.content_type->value);
    std::string_view base = v.substr(0, v.find(';'));
    while (!base.empty() && base.back() == ' ') base.remove_suffix(1);
    return base.size() == 16 &&
           ngx_strncasecmp(reinterpret_cast<u_char *>(const_cast<char *>(base.data())),
                           reinterpret_cast<u_char *>(const_cast<char *>("application/json")), 16) == 0;
}

ngx_int_t finish_with(ngx_http_request_t *r, ngx_int_t rc) {
    ngx_http_finalize_request(r, rc);
    return NGX_DONE;
}

std::string cookie_header(std::string_view name, std::string_view value, long long max_age) {
    std::string h(name);
    h += "=";
    h += value;
    h += "; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=" + std::to_string(max_age);
    return h;
}

ngx_int_t send_unauthenticated(ngx_http_request_t *r, const signin::Error &e, bool cookie_request) {
    if (!cookie_request) add_header(r, "WWW-Authenticate", "Bearer");
    return send_error(r, e.code, e.message);
}

// ---------------------------------------------------------------- jobs

// A token request. POST /password/register hashes first (the hash stage, in the password pool);
// every other request has nothing to hash and starts at its write stage.
struct IssueJob final : HashThenWriteJob<std::string, signin::Result<signin::TokenIssue>> {
    signin::Intent intent;
    std::string email, group, client;
    std::string address;  // the per-address send counter's key; counted = one send was taken
    bool may_send = true, counted = false;
    std::optional<signin::Secret> password;  // POST /password/register
    bool registration_counted = false;        // the address's password-registration backoff applies

    signin::Result<std::string> hash() override {
        auto prepared = id().prepare_password_registration(email, *password, group);
        password->wipe();  // kept (empty): write() tells a password registration by it
        return prepared;
    }
    signin::Result<signin::TokenIssue> write(const std::string &password_hash) override {
        if (!password) return id().issue_token(intent, email, group, client, may_send);
        return id().issue_password_registration_hashed(email, group, client, password_hash, may_send);
    }
    void finish(ngx_http_request_t *r) override;
};

struct CancelJob final : Job {
    signin::Secret token;
    std::string client;
    bool batched() const override { return true; }
    void run() override {
        (void)durable([this] { (void)id().cancel_token(token, client); });
    }
    void finish(ngx_http_request_t *) override {}
};

struct DeliveryState {
    signin::Secret token;
    std::string client;
    bool handled = false;
};

ngx_int_t delivery_done(ngx_http_request_t *sr, void *data, ngx_int_t rc) {
    auto *st = static_cast<DeliveryState *>(data);
    if (st->handled) return rc;
    st->handled = true;
    if (st->token.empty()) return rc;  // a notice (PasswordChanged): no token to cancel
    ngx_uint_t status = sr->headers_out.status;
    bool ok = rc != NGX_ERROR && rc < NGX_HTTP_SPECIAL_RESPONSE && status >= 200 && status < 300;
    if (ok) return rc;
    ngx_log_error(NGX_LOG_WARN, sr->connection->log, 0,
                  "signin: delivery subrequest \"%V\" failed (rc %i, status %ui); the token is cancelled", &sr->uri,
                  rc, status);
    try {
        auto job = std::make_unique<CancelJob>();
        job->token = std::move(st->token);
        job->client = st->client;
        if (post_detached_job(sr->connection->log, std::move(job)) != NGX_OK) {
            ngx_log_error(NGX_LOG_ERR, sr->connection->log, 0, "signin: could not cancel the undelivered token");
        }
    } catch (...) {
        ngx_log_error(NGX_LOG_ERR, sr->connection->log, 0, "signin: could not cancel the undelivered token");
    }
    return rc;
}

// Starts the delivery subrequest in the background: the client's answer does not wait for it,
// so every address gets its 202 after the same work.
ngx_int_t start_delivery(ngx_http_request_t *r, signin::Delivery &d, const std::string &client) {
    MainConf *m = main_conf(r);
    ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(r->pool, sizeof(DeliveryState));
    if (cln == nullptr) return NGX_ERROR;
    auto *st = new (cln->data) DeliveryState();
    cln->handler = [](void *p) { static_cast<DeliveryState *>(p)->~DeliveryState(); };
    st->client = client;
    auto *ps = static_cast<ngx_http_post_subrequest_t *>(ngx_palloc(r->pool, sizeof(ngx_http_post_subrequest_t)));
    if (ps == nullptr) return NGX_ERROR;
    ps->handler = delivery_done;
    ps->data = st;
    ngx_http_request_t *sr = nullptr;
    if (ngx_http_subrequest(r, &m->delivery_uri, nullptr, &sr, ps, NGX_HTTP_SUBREQUEST_BACKGROUND) != NGX_OK) {
        return NGX_ERROR;
    }
    sr->header_only = 1;  // the mailer's answer body is not needed, only its status
    sr->method = NGX_HTTP_POST;
    ngx_str_set(&sr->method_name, "POST");
    // the mailer must not see the visitor's cookies or authorization
    if (ngx_list_init(&sr->headers_in.headers, sr->pool, 2, sizeof(ngx_table_elt_t)) != NGX_OK) return NGX_ERROR;
    sr->headers_in.authorization = nullptr;
#if defined(nginx_version) && nginx_version >= 1023000
    sr->headers_in.cookie = nullptr;
#else
    sr->headers_in.cookies.nelts = 0;
#endif
    RequestCtx *sctx = get_ctx(sr, true);
    if (sctx == nullptr) return NGX_ERROR;
    sctx->delivery_json = signin::json::delivery(d, m->emails->render(d, id().origin().text));
    st->token = std::move(d.token);
    return NGX_OK;
}

void IssueJob::finish(ngx_http_request_t *r) {
    // the address's send counter counts sends only: give back what turned out to send nothing
    if (counted && !(result && *result && (*result)->delivery)) limit_refund(r, Bucket::Address, address);
    // a password registration that went through (not refused by the policy) makes the next wait
    if (registration_counted && result && *result) {
        backoff_fail(r, Bucket::PasswordRegistration, address, registration_rule(main_conf(r)));
    }
    if (!result || !*result) {
        const signin::Error e = result ? result->error() : signin::Error{Code::Internal, "no result"};
        ngx_http_finalize_request(r, send_failure(r, e));
        return;
    }
    if ((*result)->delivery) {
        if (start_delivery(r, *(*result)->delivery, client) != NGX_OK) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "signin: could not start the delivery subrequest");
            auto job = std::make_unique<CancelJob>();
            job->token = std::move((*result)->delivery->token);
            job->client = client;
            (void)post_detached_job(r->connection->log, std::move(job));
        }
    }
    ngx_http_finalize_request(r, send_json(r, 202, "{\"status\":\"sent\"}"));
}

// 200 with the bearer answer, or the user and the session cookie.
ngx_int_t send_session(ngx_http_request_t *r, signin::Session &s) {
    if (s.kind == signin::SessionKind::Bearer) return send_json(r, 200, signin::json::bearer(s, id().now()));
    long long max_age = (s.expires_at - id().now()) / 1000;
    add_header(r, "Set-Cookie", cookie_header(id().cookie_name(), s.token.reveal(), max_age));
    return send_json(r, 200, signin::json::user(s.user));
}

struct ExchangeJob final : WriteJob<signin::Result<signin::Session>> {
    signin::Secret token;
    std::string client, user_agent;
    signin::SessionKind kind = signin::SessionKind::Cookie;

    void run() override {
        run_durable(result, [this] { return id().exchange_from(token, client, kind, user_agent); });
    }
    void finish(ngx_http_request_t *r) override {
        if (!result || !*result) {
            const signin::Error e = result ? result->error() : signin::Error{Code::Internal, "no result"};
            // failed exchanges per client bound token guessing (signin_limit_exchange_failures)
            if (e.code == Code::InvalidToken) limit_note_failure(r, Bucket::ExchangeFailure, client);
            ngx_http_finalize_request(r, send_failure(r, e));
            return;
        }
        ngx_http_finalize_request(r, send_session(r, result->value()));
    }
};

// POST /password/session and /password/token: the Argon2id verify in the password pool, then the
// session (or the failure's audit entry) in a write batch.
struct PasswordLoginJob final : HashThenWriteJob<signin::PasswordLoginCheck, signin::Result<signin::SignInStep>> {
    std::string email, group, client, user_agent;
    std::string pair;  // the (address, client) backoff key, when the limits zone is on
    signin::Secret password;
    signin::SessionKind kind = signin::SessionKind::Cookie;

    signin::Result<signin::PasswordLoginCheck> hash() override {
        auto check = id().check_password_login(email, password, client, kind, user_agent, group);
        password.wipe();
        return check;
    }
    signin::Result<signin::SignInStep> write(const signin::PasswordLoginCheck &check) override {
        return id().finish_password_login(check);
    }
    void finish(ngx_http_request_t *r) override {
        if (!result || !*result) {
            const signin::Error e = result ? result->error() : signin::Error{Code::Internal, "no result"};
            if (!pair.empty() && e.code == Code::InvalidCredentials) {
                backoff_fail(r, Bucket::PasswordPair, pair, pair_rule(main_conf(r)));
            }
            ngx_http_finalize_request(r, send_failure(r, e));
            return;
        }
        if (!pair.empty()) backoff_clear(r, Bucket::PasswordPair, pair);  // a success clears this pair only
        signin::SignInStep &step = result->value();
        if (!step.signed_in() || !step.session) {
            ngx_http_finalize_request(r, send_json(r, 202, "{\"mfa_required\":true}"));
            return;
        }
        ngx_http_finalize_request(r, send_session(r, *step.session));
    }
};

// POST /password (set, change or reset from a fresh session) and POST /password/change: the hash
// (and the check of `current`) in the password pool, then the write in a write batch. The write
// of a set has no notice: its result is a PasswordChange whose notice is not sent.
struct PasswordWriteJob final : HashThenWriteJob<signin::PasswordUpdate, signin::Result<signin::PasswordChange>> {
    bool change = false;
    std::string pair;  // /password/change: the (address, client) backoff key, when the zone is on
    signin::Principal principal;
    signin::Secret current, password;
    std::string client;

    signin::Result<signin::PasswordUpdate> hash() override {
        auto update = change ? id().check_password_change(principal, current, password, client)
                             : id().prepare_set_password(principal, password);
        current.wipe();
        password.wipe();
        return update;
    }
    signin::Result<signin::PasswordChange> write(const signin::PasswordUpdate &update) override {
        if (change) return id().store_password_change(principal, update, client);
        signin::Status st = id().store_set_password(principal, update, client);
        if (!st) return st.error();
        return signin::PasswordChange{};
    }
    void finish(ngx_http_request_t *r) override {
        if (!result || !*result) {
            const signin::Error e = result ? result->error() : signin::Error{Code::Internal, "no result"};
            if (!pair.empty() && e.code == Code::WrongPassword) {
                backoff_fail(r, Bucket::PasswordPair, pair, pair_rule(main_conf(r)));
            }
            ngx_http_finalize_request(r, send_failure(r, e));
            return;
        }
        if (!pair.empty()) backoff_clear(r, Bucket::PasswordPair, pair);
        if (change && start_delivery(r, result->value().notice, client) != NGX_OK) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "signin: could not send the PasswordChanged notice");
        }
        ngx_http_finalize_request(r, send_empty(r, 204));
    }
};

struct SessionWriteJob final : WriteJob<signin::Status> {
    enum { RevokeOne, LogoutThis } what = RevokeOne;
    signin::Principal principal;
    std::string session_id, client;
    bool cookie = false;

    void run() override {
        run_durable(result, [this] {
            return what == RevokeOne ? id().revoke_session(principal, session_id, client)
                                     : id().logout(principal, client);
        });
    }
    void finish(ngx_http_request_t *r) override {
        if (!result || !*result) {
            const signin::Error e = result ? result->error() : signin::Error{Code::Internal, "no result"};
            ngx_http_finalize_request(r, send_failure(r, e));
            return;
        }
        if (what == LogoutThis && cookie) add_header(r, "Set-Cookie", cookie_header(id().cookie_name(), "", 0));
        ngx_http_finalize_request(r, send_empty(r, 204));
    }
};

// ---------------------------------------------------------------- request flow

std::string read_body(ngx_http_request_t *r, bool &too_large) {
    std::string body;
    too_large = false;
    if (r->request_body == nullptr) return body;
    if (r->request_body->temp_file) {
        too_large = true;
        return body;
    }
    size_t max = main_conf(r)->body_max;
    for (ngx_chain_t *cl = r->request_body->bufs; cl; cl = cl->next) {
        ngx_buf_t *b = cl->buf;
        if (ngx_buf_special(b)) continue;  // the empty end-of-body marker
        if (b->in_file || !ngx_buf_in_memory(b)) {
            too_large = true;
            return body;
        }
        body.append(reinterpret_cast<const char *>(b->pos), static_cast<size_t>(b->last - b->pos));
        if (body.size() > max) {
            too_large = true;
            return body;
        }
    }
    return body;
}

ngx_int_t post_or_fail(ngx_http_request_t *r, std::unique_ptr<Job> job) {
    if (post_request_job(r, std::move(job)) != NGX_OK) {
        return send_error(r, Code::Internal, "could not queue the request to the thread pool");
    }
    return NGX_DONE;
}

// Handles a POST once its body is read; returns an rc for ngx_http_finalize_request, or NGX_DONE.
ngx_int_t handle_post(ngx_http_request_t *r, Endpoint ep) {
    bool too_large = false;
    std::string body = read_body(r, too_large);
    // bodies carry passwords and tokens: wipe our copy and nginx's buffers once handled
    struct Wipe {
        std::string &s;
        ngx_http_request_t *r;
        ~Wipe() {
            ngx_explicit_memzero(s.data(), s.size());
            if (r->request_body == nullptr) return;
            for (ngx_chain_t *cl = r->request_body->bufs; cl; cl = cl->next) {
                ngx_buf_t *b = cl->buf;
                if (b->temporary && !b->in_file && b->pos && b->last > b->pos) {  // our writable copies only
                    ngx_explicit_memzero(b->pos, static_cast<size_t>(b->last - b->pos));
                }
            }
        }
    } wipe{body, r};
    if (too_large) return send_error(r, Code::PayloadTooLarge, "the request body is too large");
    const std::string client = client_of(r);
    auto user_agent = [r]() {
        return r->headers_in.user_agent ? std::string(sv(r->headers_in.user_agent->value)) : std::string();
    };

    switch (ep) {
    case Register:
    case Login: {
        auto f = signin::json::parse_object(body, {{"email", true}, {"group", false}});
        if (!f) return send_error(r, f.error().code, f.error().message);
        auto job = std::make_unique<IssueJob>();
        job->intent = ep == Register ? signin::Intent::Register : signin::Intent::Login;
        job->email = f.value()["email"];
        job->group = f.value()["group"];
        job->client = client;
        job->start_at_write(std::string());  // no password: nothing to hash
        // SPEC §8 rule 1: over the address's send limit, the same 202 and nothing sent
        job->address = address_key(job->email, job->group);
        if (!job->address.empty() && limits_on(r)) {
            job->may_send = limit_take(r, Bucket::Address, job->address).allowed;
            job->counted = job->may_send;
        }
        return post_or_fail(r, std::move(job));
    }
    case SessionEp:
    case Token: {
        auto f = signin::json::parse_object(body, {{"token", true}});
        if (!f) return send_error(r, f.error().code, f.error().message);
        auto job = std::make_unique<ExchangeJob>();
        job->token = signin::Secret(std::move(f.value()["token"]));
        job->client = client;
        job->user_agent = user_agent();
        job->kind = ep == Token ? signin::SessionKind::Bearer : signin::SessionKind::Cookie;
        return post_or_fail(r, std::move(job));
    }
    case Revoke:
    case Logout: {
        Credentials c = read_credentials(r, id().cookie_name());
        auto p = authenticate(r, c);
        if (!p) return send_unauthenticated(r, p.error(), c.state == Credentials::Cookie);
        auto f = ep == Revoke ? signin::json::parse_object(body, {{"id", true}})
                              : signin::json::parse_object(body.empty() ? std::string_view("{}") : body, {});
        if (!f) return send_error(r, f.error().code, f.error().message);
        auto job = std::make_unique<SessionWriteJob>();
        job->what = ep == Revoke ? SessionWriteJob::RevokeOne : SessionWriteJob::LogoutThis;
        job->principal = p.value();
        job->session_id = f.value()["id"];
        job->client = client;
        job->cookie = c.state == Credentials::Cookie;
        return post_or_fail(r, std::move(job));
    }
    case PwRegister:
    case PwSession:
    case PwToken: {
        // passwords may be up to 1024 bytes after NFC; longer ones reach the policy's message
        auto f = signin::json::parse_object(body, {{"email", true}, {"password", true}, {"group", false}}, 8192);
        if (!f) return send_error(r, f.error().code, f.error().message);
        const std::string address = address_key(f.value()["email"], f.value()["group"]);
        const bool limited = limits_on(r) && !address.empty();
        MainConf *m = main_conf(r);
        if (ep == PwRegister) {
            auto job = std::make_unique<IssueJob>();
            job->intent = signin::Intent::Register;
            job->email = f.value()["email"];
            job->group = f.value()["group"];
            job->client = client;
            job->password.emplace(std::move(f.value()["password"]));
            job->address = address;
            if (limited) {
                // repeated password registration of one address: 60 s after the first, doubling
                Verdict v = backoff_check(r, Bucket::PasswordRegistration, address, registration_rule(m));
                if (!v.allowed) return send_rate_limited(r, Bucket::PasswordRegistration, v, "password/register");
                job->registration_counted = true;
                // SPEC §8 rule 1 as for /register: over the address's send limit, nothing is sent
                job->may_send = limit_take(r, Bucket::Address, address).allowed;
                job->counted = job->may_send;
            }
            return post_or_fail(r, std::move(job));
        }
        std::string pair;
        if (limited) {
            pair = pair_key(address, f.value()["email"], f.value()["group"], client);
            Verdict v = backoff_check(r, Bucket::PasswordPair, pair, pair_rule(m));
            if (!v.allowed) return send_rate_limited(r, Bucket::PasswordPair, v, "password");
            v = limit_take_rule(r, Bucket::PasswordAddress, address, address_rule(m));
            if (!v.allowed) return send_rate_limited(r, Bucket::PasswordAddress, v, "password");
        }
        auto job = std::make_unique<PasswordLoginJob>();
        job->pair = std::move(pair);
        job->email = f.value()["email"];
        job->group = f.value()["group"];
        job->password = signin::Secret(std::move(f.value()["password"]));
        job->client = client;
        job->user_agent = user_agent();
        job->kind = ep == PwToken ? signin::SessionKind::Bearer : signin::SessionKind::Cookie;
        return post_or_fail(r, std::move(job));
    }
    case PwSet:
    case PwChange: {
        Credentials c = read_credentials(r, id().cookie_name());
        auto p = authenticate(r, c);
        if (!p) return send_unauthenticated(r, p.error(), c.state == Credentials::Cookie);
        auto f = ep == PwSet ? signin::json::parse_object(body, {{"password", true}}, 8192)
                             : signin::json::parse_object(body, {{"current", true}, {"password", true}}, 8192);
        if (!f) return send_error(r, f.error().code, f.error().message);
        auto job = std::make_unique<PasswordWriteJob>();
        job->change = ep == PwChange;
        if (ep == PwChange && limits_on(r)) {
            // a wrong `current` is a failed password attempt of this (address, client)
            MainConf *m = main_conf(r);
            const signin::User &u = p.value().user;
            const std::string address = address_key(u.email, u.group_id);
            job->pair = pair_key(address, u.email, u.group_id, client);
            Verdict v = backoff_check(r, Bucket::PasswordPair, job->pair, pair_rule(m));
            if (!v.allowed) return send_rate_limited(r, Bucket::PasswordPair, v, "password/change");
            v = limit_take_rule(r, Bucket::PasswordAddress, address, address_rule(m));
            if (!v.allowed) return send_rate_limited(r, Bucket::PasswordAddress, v, "password/change");
        }
        job->principal = p.value();
        job->password = signin::Secret(std::move(f.value()["password"]));
        if (ep == PwChange) job->current = signin::Secret(std::move(f.value()["current"]));
        job->client = client;
        return post_or_fail(r, std::move(job));
    }
    default:
        return send_error(r, Code::NotFound, "not found");
    }
}

void body_ready(ngx_http_request_t *r) {
    ngx_int_t rc;
    try {
        RequestCtx *ctx = get_ctx(r, false);
        rc = ctx ? handle_post(r, static_cast<Endpoint>(ctx->endpoint)) : NGX_HTTP_INTERNAL_SERVER_ERROR;
    } catch (...) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "signin: request failed");
        rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    if (rc != NGX_DONE) ngx_http_finalize_request(r, rc);
}

ngx_int_t handle_get(ngx_http_request_t *r, Endpoint ep) {
    if (ngx_http_discard_request_body(r) != NGX_OK) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    Credentials c = read_credentials(r, id().cookie_name());
    auto p = authenticate(r, c);
    if (!p) return send_unauthenticated(r, p.error(), c.state == Credentials::Cookie);
    if (ep == Me) return send_json(r, 200, signin::json::user(p->user));
    auto list = id().sessions(p.value());
    if (!list) return send_error(r, list.error().code, list.error().message);
    return send_json(r, 200, signin::json::sessions(list.value()));
}

// An error answered before the body was read: the body is discarded first, or its bytes would be
// read as the next request on a keep-alive connection (request smuggling).
ngx_int_t reject(ngx_http_request_t *r, Code code, const std::string &message) {
    if (ngx_http_discard_request_body(r) != NGX_OK) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    return send_error(r, code, message);
}

ngx_int_t api(ngx_http_request_t *r) {
    if (identity() == nullptr) return reject(r, Code::StorageError, "the sign-in store is not open");
    auto path = sub_path(r);
    const Route *route = nullptr;
    for (const auto &candidate : kRoutes) {
        if (path && candidate.path == *path) route = &candidate;
    }
    if (route == nullptr) return reject(r, Code::NotFound, "not found");
    // SPEC §8 per-client request limits, before anything else
    if (Verdict v = limit_take(r, bucket_of(route->ep), client_of(r)); !v.allowed) {
        return send_rate_limited(r, bucket_of(route->ep), v, route->path);
    }
    if (route->ep == SessionEp || route->ep == Token) {  // too many failed exchanges: not even a look
        if (Verdict v = limit_peek(r, Bucket::ExchangeFailure, client_of(r)); !v.allowed) {
            return send_rate_limited(r, Bucket::ExchangeFailure, v, route->path);
        }
    }
    // signin_passwords off: every password endpoint is this 403 and nothing else
    if (is_password_endpoint(route->ep) && !id().policy().with_passwords) {
        if (ngx_http_discard_request_body(r) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        return reject(r, Code::PasswordsDisabled, "password sign-in is not enabled");
    }
    bool method_ok = r->method == route->method || (route->method == NGX_HTTP_GET && r->method == NGX_HTTP_HEAD);
    if (!method_ok) {
        add_header(r, "Allow", route->method == NGX_HTTP_GET ? "GET, HEAD" : "POST");
        return reject(r, Code::MethodNotAllowed, "method not allowed");
    }
    // SPEC §5 rule 4: a present wrong origin is refused everywhere; rule 3: cookie writes need one
    auto origin = header_value(r, "Origin");
    if (auto ok = id().check_origin(origin, route->ep == SessionEp || route->ep == PwSession); !ok) {
        return reject(r, ok.error().code, ok.error().message);
    }
    Credentials c = read_credentials(r, id().cookie_name());
    if (c.state == Credentials::Ambiguous) {
        return reject(r, Code::AmbiguousCredentials,
                          "send one credential: a session cookie or a bearer token, not both");
    }
    if (route->method == NGX_HTTP_GET) return handle_get(r, route->ep);

    if (!is_json_content_type(r)) {
        return reject(r, Code::UnsupportedMediaType, "the request body must be application/json");
    }
    if (r->headers_in.content_length_n > static_cast<off_t>(main_conf(r)->body_max)) {
        return reject(r, Code::PayloadTooLarge, "the request body is too large");
    }
    RequestCtx *ctx = get_ctx(r, true);
    if (ctx == nullptr) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    ctx->endpoint = route->ep;
    r->request_body_in_single_buf = 1;
    ngx_int_t rc = ngx_http_read_client_request_body(r, body_ready);
    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) return rc;
    return NGX_DONE;
}

}  // namespace

ngx_int_t api_handler(ngx_http_request_t *r) {
    try {
        return api(r);
    } catch (...) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "signin: request failed");
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
}

// Access phase: signin_require on → a live session or bearer token, or 401 (JSON, unless the
// location has error_page, which then decides what the visitor sees). nginx skips the access
// phase for subrequests, so the same check also runs in the precontent phase for them
// (require_subrequest_handler): an SSI include or auth_request cannot bypass the gate.
ngx_int_t require_subrequest_handler(ngx_http_request_t *r) {
    if (r == r->main) return NGX_DECLINED;
    return require_handler(r);
}

ngx_int_t require_handler(ngx_http_request_t *r) {
    auto *l = static_cast<LocConf *>(ngx_http_get_module_loc_conf(r, ngx_http_signin_module));
    // the sign-in machinery itself is never gated (signin_require on at server level must not
    // lock visitors out of signing in): the API, the dev mailbox and our delivery subrequest
    if (!l->require || l->api == 1 || l->mailbox == 1) return NGX_DECLINED;
    try {
        RequestCtx *ctx = get_ctx(r, false);
        if (ctx && (ctx->principal || !ctx->delivery_json.empty())) return NGX_DECLINED;
        // A subrequest (SSI include, auth_request, ...) carries the client's headers and is
        // checked the same way; it fails with a bare status for its parent to act on.
        const bool sub = r != r->main;
        if (identity() == nullptr) {
            if (sub) return NGX_HTTP_SERVICE_UNAVAILABLE;
            return finish_with(r, reject(r, Code::StorageError, "the sign-in store is not open"));
        }
        // one client request counts once, however many subrequests it makes
        if (Verdict v = sub ? Verdict{true, 0} : limit_take(r, Bucket::SignedIn, client_of(r)); !v.allowed) {
            return finish_with(r, send_rate_limited(r, Bucket::SignedIn, v, "require"));
        }
        Credentials c = read_credentials(r, identity()->cookie_name());
        // SPEC §5 rule 4 for the upstreams behind the gate: a cookie-carrying state change whose
        // Origin is present and not the site's is refused (a same-site, cross-origin form POST
        // carries a SameSite=Lax cookie; the legacy app may have no CSRF defence of its own).
        const bool unsafe = !(r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD | NGX_HTTP_OPTIONS));
        if (c.state == Credentials::Cookie && unsafe) {
            if (auto ok = identity()->check_origin(header_value(r, "Origin"), false); !ok) {
                if (sub) return NGX_HTTP_FORBIDDEN;
                return finish_with(r, reject(r, ok.error().code, ok.error().message));
            }
        }
        auto p = authenticate(r, c);
        if (p) return NGX_DECLINED;  // let other access checks (allow/deny, auth_request) run too
        auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_get_module_loc_conf(r, ngx_http_core_module));
        auto status = static_cast<ngx_int_t>(signin::code_status(p.error().code));
        if (sub || (clcf->error_pages && status == NGX_HTTP_UNAUTHORIZED)) return status;
        if (ngx_http_discard_request_body(r) != NGX_OK) return NGX_HTTP_INTERNAL_SERVER_ERROR;
        return finish_with(r, send_unauthenticated(r, p.error(), c.state == Credentials::Cookie));
    } catch (...) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "signin: access check failed");
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
}

}  // namespace signin_ngx
