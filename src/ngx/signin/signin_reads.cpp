// Session reads off the event loop (start_auth_read, start_pin_read), for a store whose reads may
// block (PostgreSQL): who a request's cookie or bearer token belongs to, read in
// signin_thread_pool while the request waits (blocked), then resumed through its
// write_event_handler.
//
// The reads of a worker go together: at most kReadTasks tasks of them run at once, and the reads
// that arrive meanwhile wait here and go, all of them, in the next task, which reads their
// sessions in one round trip to the database (Sessions::authenticate_shared for several
// credentials, ReadTxn::principals) instead of a task, a thread wake-up and a round trip each.
// Each is answered exactly as alone. A read that also counts the request against a limit kept in
// the store (SharedTake) is a write of its own: it keeps a task of its own, as before.
#include "signin_jobs.h"
#include "signin_metrics.h"

#include <exception>
#include <new>
#include <utility>
#include <vector>

#include "signin/sessions.hpp"
#include "signin_conf.h"
#include "signin_request.h"
#include "signin_tasks.h"

namespace signin_ngx {

namespace {

std::unique_ptr<signin::SessionCache> g_session_cache;
std::unique_ptr<signin::SharedLimits> g_shared_limits;

using Read = std::optional<signin::Result<std::shared_ptr<const signin::Principal>>>;

// One request's read.
struct AuthRead {
    ngx_http_request_t *r = nullptr;
    bool read_session = true;
    std::optional<SharedTake> take;
    bool for_pin = false;     // api_versions_pin's read: into ctx->pin_read
    signin::Millis wait = 0;  // the take's verdict
    signin::Secret secret;
    std::string key;  // the session key (for the cache)
    signin::SessionKind kind = signin::SessionKind::Cookie;
    Read result;
};

struct AuthReadTask {
    std::vector<AuthRead> reads;
    bool batched = false;  // counted in g_read_tasks
    ngx_pool_t *pool = nullptr;
    ngx_thread_task_t *task = nullptr;
};

// Tasks of batched reads running at once, in each worker. Two keep a second read in flight while
// the first waits for the database; more would only make each batch smaller.
constexpr std::size_t kReadTasks = 2;
std::size_t g_read_tasks = 0;
std::vector<AuthRead> g_reads_waiting;  // event-loop state, taken by the next task

void auth_read_thread(void *data, ngx_log_t *log) {
    auto *t = static_cast<AuthReadTask *>(data);
    signin::Identity *id = identity();
    guard(
        [&] {
            std::vector<signin::Sessions::Asked> asked;
            std::vector<AuthRead *> asking;
            for (AuthRead &a : t->reads) {
                if (a.take && g_shared_limits && id != nullptr) a.wait = g_shared_limits->take(a.take->key, a.take->rule, id->now());
                if (!a.read_session || a.wait > 0) continue;  // refused: nothing more is read
                if (id == nullptr) {
                    a.result = signin::Error{signin::Code::StorageError, "the sign-in store is not open"};
                    continue;
                }
                asked.push_back({&a.secret, a.kind});
                asking.push_back(&a);
            }
            if (asked.empty()) return;
            count_read_batch(asked.size());
            // records nothing about the client: the same call as authenticate() on the event loop
            auto got = id->sessions().authenticate_shared(asked);
            for (std::size_t i = 0; i < asking.size() && i < got.size(); ++i) {
                asking[i]->result = std::move(got[i]);
                if (g_session_cache && *asking[i]->result) asking[i]->key = signin::record_key(asking[i]->secret.reveal());
            }
        },
        [&](const std::exception *) {
            ngx_log_error(NGX_LOG_ERR, log, 0, "signin: reading a session failed");
            for (AuthRead &a : t->reads)
                if (a.read_session && !a.result) a.result = signin::Error{signin::Code::Internal, "the request failed"};
        });
}

// As a job's completion: the request resumes through its write_event_handler.
void resume(AuthRead &a) {
    ngx_http_request_t *r = a.r;
    if (g_session_cache && !a.key.empty() && a.result && *a.result) {
        guarded("signin: the session cache", [&] {
            if (identity() != nullptr) g_session_cache->put(a.key, *a.result->value(), identity()->now());
        });
    }
    ngx_connection_t *c = r->connection;
    ngx_http_set_log_request(c->log, r);
    r->main->blocked--;
    if (RequestCtx *ctx = get_ctx(r, false)) {
        ctx->auth_reading = false;
        if (a.for_pin) {
            ctx->pin_read = a.result ? std::move(*a.result)
                                     : signin::Result<std::shared_ptr<const signin::Principal>>(
                                           signin::Error{signin::Code::Internal, "nothing was read"});
        } else {
            if (a.result) ctx->pre_auth = std::move(a.result);
            ctx->shared_wait = a.wait;
        }
    }
#if defined(nginx_version) && nginx_version >= 1025004
    if (r->main->terminated) {
        c->write->handler(c->write);
        return;
    }
#endif
    guarded("signin: the end of a session read", [r] { r->write_event_handler(r); });
    ngx_http_run_posted_requests(c);
}

void auth_read_done(ngx_event_t *ev);

// A task for `reads`; NGX_ERROR (and `reads` left as they were) when it could not be posted.
ngx_int_t post_reads(std::vector<AuthRead> &reads, bool batched) {
    auto *t = new_task<AuthReadTask>(auth_read_thread, auth_read_done);
    if (t == nullptr) return NGX_ERROR;
    t->reads.swap(reads);
    t->batched = batched;
    if (post_task(job_write_pool(), t) != NGX_OK) {
        reads.swap(t->reads);
        delete_task(t);
        return NGX_ERROR;
    }
    if (batched) g_read_tasks++;
    return NGX_OK;
}

// The reads that waited go in the next task; a pool that refuses it answers them with an error
// (as a read that could not be posted: the request's handler decides what that means).
void launch_waiting_reads() {
    if (g_reads_waiting.empty() || g_read_tasks >= kReadTasks) return;
    std::vector<AuthRead> reads;
    reads.swap(g_reads_waiting);
    if (post_reads(reads, true) == NGX_OK) return;
    ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0, "signin: could not post session reads to the thread pool");
    for (AuthRead &a : reads) {
        if (a.read_session) a.result = signin::Error{signin::Code::StorageError, "the thread pool refused the read"};
        resume(a);
    }
}

void auth_read_done(ngx_event_t *ev) {
    if (task_overdue(ev)) return;
    auto *t = static_cast<AuthReadTask *>(ev->data);
    std::vector<AuthRead> reads = std::move(t->reads);
    if (t->batched) g_read_tasks--;
    delete_task(t);
    guarded("signin: the next session reads", launch_waiting_reads);  // before these resume: no wait added
    for (AuthRead &a : reads) resume(a);
}

// A session read (and the shared limit's take) in the thread pool, for the access phase or for
// api_versions_pin (`for_pin`: its outcome goes to ctx->pin_read).
ngx_int_t post_auth_read(ngx_http_request_t *r, const Credentials &c, std::optional<SharedTake> take, bool for_pin) {
    RequestCtx *ctx = get_ctx(r, true);
    if (ctx == nullptr || job_write_pool() == nullptr) return NGX_ERROR;
    AuthRead a;
    a.r = r;
    a.for_pin = for_pin;
    a.read_session = for_pin || c.state == Credentials::Cookie || c.state == Credentials::Bearer;
    a.take = std::move(take);
    a.secret = c.secret;
    a.kind = c.kind();
    const bool batched = !a.take;
    if (batched && g_read_tasks >= kReadTasks) {
        try {
            g_reads_waiting.push_back(std::move(a));  // goes with the next task
        } catch (const std::bad_alloc &) {
            return NGX_ERROR;
        }
    } else {
        std::vector<AuthRead> reads;
        reads.push_back(std::move(a));
        if (post_reads(reads, batched) != NGX_OK) return NGX_ERROR;
    }
    ctx->auth_reading = true;
    r->main->blocked++;
    return NGX_OK;
}

}  // namespace

void set_session_cache(std::unique_ptr<signin::SessionCache> cache) { g_session_cache = std::move(cache); }
signin::SessionCache *session_cache() { return g_session_cache.get(); }

bool from_session_cache(ngx_http_request_t *r, const Credentials &c) {
    RequestCtx *ctx = get_ctx(r, true);
    if (ctx == nullptr) return false;
    auto hit = cached_principal(c);
    if (hit == nullptr) return false;
    ctx->pre_auth = std::move(hit);
    return true;
}

void set_shared_limits(std::unique_ptr<signin::SharedLimits> limits) { g_shared_limits = std::move(limits); }
signin::SharedLimits *shared_limits() { return g_shared_limits.get(); }

ngx_int_t start_auth_read(ngx_http_request_t *r, const Credentials &c, std::optional<SharedTake> take) {
    return post_auth_read(r, c, std::move(take), false);
}

ngx_int_t start_pin_read(ngx_http_request_t *r, const Credentials &c) { return post_auth_read(r, c, std::nullopt, true); }

}  // namespace signin_ngx
