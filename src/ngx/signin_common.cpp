// Request context, thread-pool jobs, JSON answers and credentials for the sign-in glue.
#include "ngx/signin_glue.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <new>
#include <vector>

#include "core/json.hpp"

namespace signin_ngx {

ngx_thread_pool_t *g_thread_pool = nullptr;
ngx_thread_pool_t *g_password_pool = nullptr;

MainConf *main_conf(ngx_http_request_t *r) {
    return static_cast<MainConf *>(ngx_http_get_module_main_conf(r, ngx_http_signin_module));
}

static void destroy_ctx(void *data) {
    auto *ctx = static_cast<RequestCtx *>(data);
    if (!ctx->delivery_json.empty()) {  // holds a token
        explicit_bzero(ctx->delivery_json.data(), ctx->delivery_json.size());
    }
    ctx->~RequestCtx();
}

RequestCtx *get_ctx(ngx_http_request_t *r, bool create) {
    auto *ctx = static_cast<RequestCtx *>(ngx_http_get_module_ctx(r, ngx_http_signin_module));
    if (ctx || !create) return ctx;
    ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(r->pool, sizeof(RequestCtx));
    if (cln == nullptr) return nullptr;
    ctx = new (cln->data) RequestCtx();
    cln->handler = destroy_ctx;
    ngx_http_set_ctx(r, ctx, ngx_http_signin_module);
    return ctx;
}

// ---------------------------------------------------------------- jobs

void lower_thread_priority() {
    thread_local bool lowered = false;
    if (lowered) return;
    lowered = true;
    // Linux: a thread id names one thread for setpriority; failure (no permission) changes nothing
    auto tid = static_cast<id_t>(syscall(SYS_gettid));
    int now = getpriority(PRIO_PROCESS, tid);
    if (now < 10) (void)setpriority(PRIO_PROCESS, tid, 10);
}

static void job_thread(void *data, ngx_log_t *log) {
    Job *job = *static_cast<Job **>(data);
    try {
        job->run();
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_ERR, log, 0, "signin: job failed: %s", e.what());
    } catch (...) {
        ngx_log_error(NGX_LOG_ERR, log, 0, "signin: job failed");
    }
}

static void job_resume(ngx_http_request_t *r) {
    RequestCtx *ctx = get_ctx(r, false);
    if (ctx == nullptr || !ctx->job_done || !ctx->job) return;  // a stray write event while waiting
    std::unique_ptr<Job> job = std::move(ctx->job);
    ctx->job_done = false;
    r->write_event_handler = ngx_http_request_empty_handler;
    try {
        job->finish(r);
    } catch (...) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "signin: finishing a request failed");
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
    }
}

// Gives a request whose job is done back to its handler (job_resume, or nginx's finalizer when
// the request was terminated meanwhile).
static void resume_request(ngx_http_request_t *r) {
    ngx_connection_t *c = r->connection;
    ngx_http_set_log_request(c->log, r);
    r->main->blocked--;
    if (RequestCtx *ctx = get_ctx(r, false)) ctx->job_done = true;
    r->write_event_handler(r);
    ngx_http_run_posted_requests(c);
}

// ---------------------------------------------------------------- write batches
//
// Batched jobs (store writes only) do not take a pool thread each. They wait on the event loop;
// one thread task per worker runs every waiting job in one group commit (one durable commit),
// and its completion event resumes them all. Jobs that arrive meanwhile form the next batch, which
// starts when this one is done. This replaces two thread hand-offs and a condition-variable wake
// per request with two per batch.

namespace {

struct BatchEntry {
    ngx_http_request_t *r;  // nullptr: a detached job, owned by the batch and deleted after it
    Job *job;
};

struct WriteBatch {
    std::vector<BatchEntry> entries;
    std::optional<signin::Error> failure;
    ngx_pool_t *pool = nullptr;
};

std::vector<BatchEntry> g_waiting;  // event-loop state of this worker: no lock
bool g_batch_running = false;

void batch_thread(void *data, ngx_log_t *log) {
    WriteBatch *b = *static_cast<WriteBatch **>(data);
    signin::Status st = durable([b, log] {
        for (BatchEntry &e : b->entries) job_thread(&e.job, log);  // one failing job stops no other
    });
    if (!st) b->failure = st.error();
}

void batch_done(ngx_event_t *ev);

// Moves every waiting job into a new batch and posts it; on failure they stay waiting. The log is
// the cycle's: the batch outlives the request that happened to start it.
ngx_int_t launch_batch() {
    ngx_log_t *log = ngx_cycle->log;
    ngx_pool_t *pool = ngx_create_pool(512, log);
    if (pool == nullptr) return NGX_ERROR;
    ngx_thread_task_t *task = ngx_thread_task_alloc(pool, sizeof(WriteBatch *));
    WriteBatch *b = task ? new (std::nothrow) WriteBatch() : nullptr;
    if (b == nullptr) {
        ngx_destroy_pool(pool);
        return NGX_ERROR;
    }
    b->pool = pool;
    b->entries.swap(g_waiting);
    *static_cast<WriteBatch **>(task->ctx) = b;
    task->handler = batch_thread;
    task->event.handler = batch_done;
    task->event.data = b;
    if (ngx_thread_task_post(g_thread_pool, task) != NGX_OK) {
        g_waiting.swap(b->entries);
        delete b;
        ngx_destroy_pool(pool);
        return NGX_ERROR;
    }
    g_batch_running = true;
    return NGX_OK;
}

// Finishes every entry: the failure (if any) first becomes each job's answer.
void complete_entries(std::vector<BatchEntry> &entries, const std::optional<signin::Error> &failure) {
    for (BatchEntry &e : entries) {
        if (failure) e.job->commit_failed(*failure);
        if (e.r == nullptr) {
            delete e.job;
        } else {
            resume_request(e.r);
        }
    }
}

void batch_done(ngx_event_t *ev) {
    auto *b = static_cast<WriteBatch *>(ev->data);
    ngx_log_t *log = ngx_cycle->log;
    // still "running" while the entries finish: jobs they post wait for the next launch below
    complete_entries(b->entries, b->failure);
    ngx_destroy_pool(b->pool);
    delete b;
    g_batch_running = false;
    while (!g_waiting.empty() && launch_batch() != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, log, 0, "signin: could not post a write batch to the thread pool");
        std::vector<BatchEntry> failed;
        failed.swap(g_waiting);
        g_batch_running = true;
        complete_entries(failed, signin::Error{signin::Code::StorageError, "the thread pool refused the write"});
        g_batch_running = false;
    }
}

// Adds a batched job; launches a batch now when none is running.
ngx_int_t enqueue_batched(ngx_http_request_t *r, Job *job) {
    g_waiting.push_back({r, job});
    if (g_batch_running || launch_batch() == NGX_OK) return NGX_OK;
    g_waiting.pop_back();
    return NGX_ERROR;
}

}  // namespace

// A job that is not batched is done in the password pool. One with a write stage (its hash is
// done) joins this worker's next write batch here, still blocking its request, whatever became of
// the request meanwhile: a terminated request's write (a failure's audit entry) still happens.
// If the batch cannot take it, the job answers that error through finish().
static void job_event(ngx_event_t *ev) {
    auto *r = static_cast<ngx_http_request_t *>(ev->data);
    RequestCtx *ctx = get_ctx(r, false);
    if (ctx && ctx->job && ctx->job->next_stage()) {
        if (enqueue_batched(r, ctx->job.get()) == NGX_OK) return;
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "signin: could not post a write batch to the thread pool");
        ctx->job->commit_failed(signin::Error{signin::Code::StorageError, "the thread pool refused the write"});
    }
    resume_request(r);
}

// A job that is not batched gets a thread task of its own in the password pool.
static ngx_int_t post_job_task(ngx_http_request_t *r, Job *job) {
    ngx_thread_task_t *task = ngx_thread_task_alloc(r->pool, sizeof(Job *));
    if (task == nullptr) return NGX_ERROR;
    *static_cast<Job **>(task->ctx) = job;
    task->handler = job_thread;
    task->event.handler = job_event;
    task->event.data = r;
    return ngx_thread_task_post(g_password_pool, task);
}

ngx_int_t post_request_job(ngx_http_request_t *r, std::unique_ptr<Job> job) {
    RequestCtx *ctx = get_ctx(r, true);
    if (ctx == nullptr || g_thread_pool == nullptr || g_password_pool == nullptr) return NGX_ERROR;
    // the job runs no earlier than posted, and finishes no earlier than this handler returns
    ngx_int_t rc = job->batched() ? enqueue_batched(r, job.get()) : post_job_task(r, job.get());
    if (rc != NGX_OK) return NGX_ERROR;
    ctx->job = std::move(job);
    ctx->job_done = false;
    r->main->blocked++;
    r->write_event_handler = job_resume;
    return NGX_OK;
}

struct Detached {
    Job *job;
    ngx_pool_t *pool;
};

static void detached_thread(void *data, ngx_log_t *log) {
    auto *d = static_cast<Detached *>(data);
    job_thread(&d->job, log);
}

static void detached_event(ngx_event_t *ev) {
    auto *d = static_cast<Detached *>(ev->data);
    delete d->job;
    ngx_destroy_pool(d->pool);
}

ngx_int_t post_detached_job(ngx_log_t *log, std::unique_ptr<Job> job) {
    if (g_thread_pool == nullptr || g_password_pool == nullptr) return NGX_ERROR;
    if (job->batched()) {
        if (enqueue_batched(nullptr, job.get()) != NGX_OK) return NGX_ERROR;
        job.release();  // deleted when its batch is done
        return NGX_OK;
    }
    ngx_pool_t *pool = ngx_create_pool(512, log);
    if (pool == nullptr) return NGX_ERROR;
    ngx_thread_task_t *task = ngx_thread_task_alloc(pool, sizeof(Detached));
    if (task == nullptr) {
        ngx_destroy_pool(pool);
        return NGX_ERROR;
    }
    auto *d = static_cast<Detached *>(task->ctx);
    d->job = job.get();
    d->pool = pool;
    task->handler = detached_thread;
    task->event.handler = detached_event;
    task->event.data = d;
    if (ngx_thread_task_post(g_password_pool, task) != NGX_OK) {
        ngx_destroy_pool(pool);
        return NGX_ERROR;
    }
    job.release();  // deleted by detached_event
    return NGX_OK;
}

// ---------------------------------------------------------------- answers

bool add_header(ngx_http_request_t *r, std::string_view name, std::string_view value) {
    auto *h = static_cast<ngx_table_elt_t *>(ngx_list_push(&r->headers_out.headers));
    if (h == nullptr) return false;
    h->hash = 1;
#if defined(nginx_version) && nginx_version >= 1023000
    h->next = nullptr;
#endif
    h->key = pool_copy(r->pool, name);
    h->value = pool_copy(r->pool, value);
    return h->key.data && h->value.data;
}

// content_type: a string literal (nginx keeps pointing at it, as with ngx_str_set)
template <std::size_t N = sizeof("application/json")>
static ngx_int_t send_common(ngx_http_request_t *r, ngx_uint_t status, const std::string *body,
                             const char (&content_type)[N] = "application/json") {
    r->headers_out.status = status;
    if (!add_header(r, "Cache-Control", "no-store")) return NGX_ERROR;
    if (body == nullptr) {
        r->header_only = 1;
        r->headers_out.content_length_n = 0;
        return ngx_http_send_header(r);
    }
    r->headers_out.content_type.len = N - 1;
    r->headers_out.content_type.data = reinterpret_cast<u_char *>(const_cast<char *>(content_type));
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_length_n = static_cast<off_t>(body->size());
    if (r->method == NGX_HTTP_HEAD) r->header_only = 1;
    ngx_int_t rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) return rc;
    ngx_buf_t *b = ngx_create_temp_buf(r->pool, body->size() ? body->size() : 1);
    if (b == nullptr) return NGX_ERROR;
    b->last = ngx_cpymem(b->last, body->data(), body->size());
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;
    ngx_chain_t out = {b, nullptr};
    return ngx_http_output_filter(r, &out);
}

ngx_int_t send_json(ngx_http_request_t *r, ngx_uint_t status, const std::string &body) {
    return send_common(r, status, &body);
}

ngx_int_t send_empty(ngx_http_request_t *r, ngx_uint_t status) { return send_common(r, status, nullptr); }

ngx_int_t send_html(ngx_http_request_t *r, const std::string &page) {
    return send_common(r, NGX_HTTP_OK, &page, "text/html; charset=utf-8");
}

ngx_int_t send_error(ngx_http_request_t *r, signin::Code code, const std::string &message) {
    auto status = static_cast<ngx_uint_t>(signin::code_status(code));
    if (status >= 500) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "signin: %s", message.c_str());
    }
    std::string shown = status >= 500 ? std::string(code == signin::Code::StorageFull
                                                        ? "the sign-in store is full"
                                                        : "the sign-in service is unavailable")
                                      : message;
    return send_json(r, status, signin::json::error(code, shown));
}

ngx_int_t send_failure(ngx_http_request_t *r, const signin::Error &e) {
    if (e.code != signin::Code::RateLimited) return send_error(r, e.code, e.message);
    const long long seconds = e.retry_after > 0 ? (e.retry_after + 999) / 1000 : 1;
    if (!add_header(r, "Retry-After", std::to_string(seconds))) return NGX_ERROR;
    signin::json::Writer w;
    w.begin_object()
        .key("error").value(e.message)
        .key("code").value(signin::code_name(e.code))
        .key("retry_after").value(static_cast<std::int64_t>(seconds))
        .end_object();
    return send_json(r, 429, w.str());
}

// ---------------------------------------------------------------- request data

std::optional<std::string_view> header_value(ngx_http_request_t *r, std::string_view name) {
    for (ngx_list_part_t *part = &r->headers_in.headers.part; part; part = part->next) {
        auto *h = static_cast<ngx_table_elt_t *>(part->elts);
        for (ngx_uint_t i = 0; i < part->nelts; i++) {
            if (h[i].key.len == name.size() &&
                ngx_strncasecmp(h[i].key.data, reinterpret_cast<u_char *>(const_cast<char *>(name.data())),
                                name.size()) == 0) {
                return sv(h[i].value);
            }
        }
    }
    return std::nullopt;
}

static std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// Counts the session cookies in one Cookie header line and keeps the last value seen.
static void scan_cookie_line(std::string_view line, std::string_view name, int &count, std::string_view &value) {
    while (!line.empty()) {
        std::size_t semi = line.find(';');
        std::string_view pair = trim(line.substr(0, semi));
        line = semi == std::string_view::npos ? std::string_view() : line.substr(semi + 1);
        std::size_t eq = pair.find('=');
        if (eq == std::string_view::npos) continue;
        if (trim(pair.substr(0, eq)) == name) {
            ++count;
            value = trim(pair.substr(eq + 1));
        }
    }
}

Credentials read_credentials(ngx_http_request_t *r, std::string_view cookie_name) {
    Credentials c;
    int cookies = 0;
    std::string_view cookie;
#if defined(nginx_version) && nginx_version >= 1023000
    for (ngx_table_elt_t *h = r->headers_in.cookie; h; h = h->next) {
        scan_cookie_line(sv(h->value), cookie_name, cookies, cookie);
    }
#else
    auto **lines = static_cast<ngx_table_elt_t **>(r->headers_in.cookies.elts);
    for (ngx_uint_t i = 0; i < r->headers_in.cookies.nelts; i++) {
        scan_cookie_line(sv(lines[i]->value), cookie_name, cookies, cookie);
    }
#endif
    bool bearer = false;
    std::string_view token;
    if (r->headers_in.authorization) {
        std::string_view v = trim(sv(r->headers_in.authorization->value));
        if (v.size() >= 7 && ngx_strncasecmp(reinterpret_cast<u_char *>(const_cast<char *>(v.data())),
                                             reinterpret_cast<u_char *>(const_cast<char *>("bearer ")), 7) == 0) {
            bearer = true;
            token = trim(v.substr(7));
        }
    }
    if (cookies > 1 || (cookies && bearer)) {
        c.state = Credentials::Ambiguous;
    } else if (bearer) {
        c.state = token.empty() ? Credentials::Malformed : Credentials::Bearer;
        c.secret = signin::Secret(std::string(token));
    } else if (cookies) {
        c.state = cookie.empty() ? Credentials::Malformed : Credentials::Cookie;
        c.secret = signin::Secret(std::string(cookie));
    }
    return c;
}

std::string client_of(ngx_http_request_t *r) {
    RequestCtx *ctx = get_ctx(r, true);
    if (ctx && ctx->client_set) return ctx->client;
    std::string client;
    MainConf *m = main_conf(r);
    ngx_str_t v = ngx_null_string;
    if (m->client && ngx_http_complex_value(r, m->client, &v) == NGX_OK) {
        client.assign(sv(v));
    } else {
        client.assign(sv(r->connection->addr_text));
    }
    if (client.size() > 64) client.resize(64);
    if (ctx) {
        ctx->client = client;
        ctx->client_set = true;
    }
    return client;
}

struct TouchJob final : Job {
    explicit TouchJob(signin::Principal p) : principal(std::move(p)) {}
    bool batched() const override { return true; }
    void run() override {
        (void)durable([this] {
            if (auto *id = identity()) (void)id->touch(principal);
        });
    }
    void finish(ngx_http_request_t *) override {}
    signin::Principal principal;
};

signin::Result<signin::Principal> authenticate(ngx_http_request_t *r, const Credentials &c) {
    signin::Identity *id = identity();
    if (id == nullptr) return signin::Error{signin::Code::StorageError, "the sign-in store is not open"};
    if (c.state == Credentials::Ambiguous) {
        return signin::Error{signin::Code::AmbiguousCredentials,
                             "send one credential: a session cookie or a bearer token, not both"};
    }
    if (c.state != Credentials::Cookie && c.state != Credentials::Bearer) {
        return signin::Error{signin::Code::Unauthenticated, "not signed in"};
    }
    auto kind = c.state == Credentials::Bearer ? signin::SessionKind::Bearer : signin::SessionKind::Cookie;
    auto p = id->authenticate_from(c.secret, client_of(r), kind);
    if (!p) return p;
    if (id->needs_touch(p.value())) {
        // last_seen_at feeds the idle timeout; it is not an acknowledgement, so nobody waits for it
        (void)post_detached_job(r->connection->log, std::make_unique<TouchJob>(p.value()));
    }
    if (RequestCtx *ctx = get_ctx(r, true)) ctx->principal = p.value();
    return p;
}

}  // namespace signin_ngx
