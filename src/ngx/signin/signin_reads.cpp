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
//
// A store that offers it (Store::session_reader: PostgreSQL) also gives each worker a connection
// of its own for these reads, driven by the event loop itself: the waiting reads are sent over it
// together, and answered when its socket brings their answer, one read out at a time, with no
// thread hand-over (the thread pool's wake-ups, and their context switches, were most of what a
// GET /me cost the worker beyond its round trip). While that connection is being made (in the
// thread pool: connecting waits), or after it broke (made again kReconnectAfter later, when
// reads come), the reads go to the thread pool as above; the reads it carried when it broke go
// there too, and are answered as if it had never been.
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

// The worker's own connection for the reads (start_loop_reads).
constexpr ngx_msec_t kLoopAnswerWait = 10000;  // an answer not in by then: the connection is dropped
constexpr ngx_msec_t kReconnectAfter = 1000;
struct LoopReads {
    std::unique_ptr<signin::SessionReader> reader;
    ngx_connection_t *c = nullptr;  // on the reader's socket, while it is connected
    bool connecting = false;        // reader->connect() runs in the thread pool
    bool failed = false;            // the last connection failed, or could not be made
    ngx_msec_t failed_at = 0;
    ngx_event_t send;  // posted: the reads that came during this turn of the event loop go out
    std::vector<AuthRead> reads;        // sent, waiting for their answer
    signin::Sessions::Reading reading;  // of their credentials (asked_of)
};
LoopReads g_loop;
bool loop_connected() { return g_loop.c != nullptr; }
void launch_waiting_reads();

// What the reads ask the engine (their credentials, in their order).
std::vector<signin::Sessions::Asked> asked_of(std::vector<AuthRead> &reads) {
    std::vector<signin::Sessions::Asked> asked;
    asked.reserve(reads.size());
    for (AuthRead &a : reads) asked.push_back({&a.secret, a.kind});
    return asked;
}

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

void send_loop_reads();
void maybe_connect();

// The reads that waited go over the worker's connection when it is connected (once its read
// out is answered), or else in the next task; a pool that refuses it answers them with an error
// (as a read that could not be posted: the request's handler decides what that means).
void launch_waiting_reads() {
    if (g_reads_waiting.empty()) return;
    if (loop_connected()) {
        if (!g_loop.reader->busy()) send_loop_reads();
        return;
    }
    maybe_connect();
    if (g_read_tasks >= kReadTasks) return;
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

// ---- the worker's own connection -----------------------------------------------------------

// What `f` (a call of the reader) threw, said; empty when it did not.
template <class F>
std::string failure_of(F &&f) {
    std::string failure;
    guard(f, [&](const std::exception *e) { failure = e != nullptr ? e->what() : "an unknown error"; });
    return failure;
}

// The connection's ngx_connection_t goes; the socket is the reader's, which closes it right
// after (reader->close), unless libpq already did on seeing the server go: its events go as a
// closed socket's do (NGX_CLOSE_EVENT: the kernel drops a closed descriptor from epoll), never
// by its number, which may already be another's.
void unwatch() {
    ngx_connection_t *c = std::exchange(g_loop.c, nullptr);
    if (c == nullptr) return;
    if (c->read->timer_set) ngx_del_timer(c->read);
    if (c->write->timer_set) ngx_del_timer(c->write);
    if (ngx_del_conn) {
        ngx_del_conn(c, NGX_CLOSE_EVENT);
    } else {
        if (c->read->active || c->read->disabled) ngx_del_event(c->read, NGX_READ_EVENT, NGX_CLOSE_EVENT);
        if (c->write->active || c->write->disabled) ngx_del_event(c->write, NGX_WRITE_EVENT, NGX_CLOSE_EVENT);
    }
    // (nginx's macro is several statements: braces)
    if (c->read->posted) {
        ngx_delete_posted_event(c->read);
    }
    if (c->write->posted) {
        ngx_delete_posted_event(c->write);
    }
    c->read->closed = 1;
    c->write->closed = 1;
    ngx_free_connection(c);
    c->fd = (ngx_socket_t)-1;
}

// The connection broke (or its answer is overdue): it is closed, made again later, and the reads
// it carried go to the thread pool with those waiting, ahead of them.
void loop_failed(const char *why) {
    ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0, "signin: the session reads' connection to the store failed: %s",
                  why);
    unwatch();
    g_loop.reader->close();
    g_loop.failed = true;
    g_loop.failed_at = ngx_current_msec;
    std::vector<AuthRead> carried = std::move(g_loop.reads);
    g_loop.reads.clear();
    g_loop.reading = {};
    for (AuthRead &a : g_reads_waiting) carried.push_back(std::move(a));
    g_reads_waiting = std::move(carried);
    launch_waiting_reads();
}

// Its answer: the reads take their outcomes, the next waiting ones go out, then these resume.
void loop_answered(std::vector<std::shared_ptr<const signin::Principal>> found) {
    if (g_loop.c->read->timer_set) ngx_del_timer(g_loop.c->read);
    std::vector<AuthRead> reads = std::move(g_loop.reads);
    g_loop.reads.clear();
    const signin::Sessions::Reading reading = std::move(g_loop.reading);
    g_loop.reading = {};
    signin::Identity *id = identity();
    guard(
        [&] {
            using Answers = std::vector<signin::Result<std::shared_ptr<const signin::Principal>>>;
            const signin::Error closed{signin::Code::StorageError, "the sign-in store is not open"};
            Answers got = id != nullptr ? id->sessions().answers(asked_of(reads), reading, std::move(found))
                                        : Answers(reads.size(), closed);
            for (std::size_t i = 0; i < reads.size() && i < got.size(); ++i) {
                reads[i].result = std::move(got[i]);
                if (g_session_cache && *reads[i].result) reads[i].key = signin::record_key(reads[i].secret.reveal());
            }
        },
        [&](const std::exception *) {
            ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0, "signin: reading a session failed");
            for (AuthRead &a : reads)
                if (!a.result) a.result = signin::Error{signin::Code::Internal, "the request failed"};
        });
    guarded("signin: the next session reads", launch_waiting_reads);
    for (AuthRead &a : reads) resume(a);
}

void loop_read(ngx_event_t *ev) {
    if (!loop_connected()) return;
    if (ev->timedout) {
        ev->timedout = 0;
        loop_failed("no answer in 10 s");
        return;
    }
    std::optional<std::vector<std::shared_ptr<const signin::Principal>>> found;
    const std::string failure = failure_of([&] { found = g_loop.reader->receive(); });
    if (!failure.empty()) {
        loop_failed(failure.c_str());
        return;
    }
    if (found) loop_answered(std::move(*found));
}

// What a read left unsent goes when the socket takes it, tried again every kFlushEvery: a
// statement of a few hundred bytes nearly never fills a socket's buffer, and a write event would
// share the socket's one epoll entry with the read event, which must stay level-triggered.
constexpr ngx_msec_t kFlushEvery = 1;
void loop_write(ngx_event_t *ev) {
    ev->timedout = 0;
    if (!loop_connected() || !g_loop.reader->wants_write()) return;
    const std::string failure = failure_of([&] { g_loop.reader->flush(); });
    if (!failure.empty()) {
        loop_failed(failure.c_str());
        return;
    }
    if (g_loop.reader->wants_write()) ngx_add_timer(ev, kFlushEvery);
}

// The waiting reads, sent together over the connection (not busy).
void send_loop_reads() {
    g_loop.reads = std::move(g_reads_waiting);
    g_reads_waiting.clear();
    g_loop.reading = signin::Sessions::reading(asked_of(g_loop.reads));
    if (g_loop.reading.keys.empty()) {  // no credential worth a read: answered as not signed in
        loop_answered({});
        return;
    }
    const std::string failure = failure_of([&] { g_loop.reader->send(g_loop.reading.views()); });
    if (!failure.empty()) {
        loop_failed(failure.c_str());
        return;
    }
    count_read_batch(g_loop.reading.keys.size());
    ngx_add_timer(g_loop.c->read, kLoopAnswerWait);
    if (g_loop.reader->wants_write()) ngx_add_timer(g_loop.c->write, kFlushEvery);
}

void loop_send(ngx_event_t *) { guarded("signin: sending session reads", launch_waiting_reads); }

// The connection, made in the thread pool: watched from the event loop once made.
struct ConnectTask {
    std::string failure;
    ngx_pool_t *pool = nullptr;
    ngx_thread_task_t *task = nullptr;
};

void connect_thread(void *data, ngx_log_t *) {
    static_cast<ConnectTask *>(data)->failure = failure_of([] { g_loop.reader->connect(); });
}

bool watch() {
    const int fd = g_loop.reader->socket();
    ngx_connection_t *c = fd >= 0 ? ngx_get_connection(fd, ngx_cycle->log) : nullptr;
    if (c == nullptr) return false;
    g_loop.c = c;
    c->read->handler = loop_read;
    c->write->handler = loop_write;
    c->read->log = c->log;
    c->write->log = c->log;
    // level-triggered: libpq reads what it needs of the socket, not all that waits there (a large
    // answer), and what it leaves must be told again
    if (ngx_add_event(c->read, NGX_READ_EVENT, NGX_LEVEL_EVENT) == NGX_OK) return true;
    unwatch();
    return false;
}

void connect_done(ngx_event_t *ev) {
    if (task_overdue(ev)) return;
    auto *t = static_cast<ConnectTask *>(ev->data);
    std::string failure = std::move(t->failure);
    delete_task(t);
    g_loop.connecting = false;
    if (failure.empty() && !watch()) failure = "its socket could not be watched";
    if (!failure.empty()) {
        if (!g_loop.failed) {
            ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                          "signin: the session reads' connection to the store could not be made: %s", failure.c_str());
        }
        g_loop.reader->close();
        g_loop.failed = true;
        g_loop.failed_at = ngx_current_msec;
        return;
    }
    g_loop.failed = false;
    guarded("signin: the next session reads", launch_waiting_reads);
}

// Makes the connection in the thread pool, unless it is there or on its way, or broke less
// than kReconnectAfter ago.
void maybe_connect() {
    if (!g_loop.reader || loop_connected() || g_loop.connecting || ngx_exiting || job_write_pool() == nullptr) return;
    if (g_loop.failed && ngx_current_msec - g_loop.failed_at < kReconnectAfter) return;
    auto *t = new_task<ConnectTask>(connect_thread, connect_done);
    if (t == nullptr) return;
    if (post_task(job_write_pool(), t) != NGX_OK) {
        delete_task(t);
        return;
    }
    g_loop.connecting = true;
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
    if (batched && (loop_connected() || g_read_tasks >= kReadTasks)) {
        try {
            g_reads_waiting.push_back(std::move(a));  // goes with the next read out
        } catch (const std::bad_alloc &) {
            return NGX_ERROR;
        }
        // sent once this turn of the event loop is over, with the others that came in it
        if (loop_connected() && !g_loop.send.posted) {
            ngx_post_event(&g_loop.send, &ngx_posted_events);
        }
    } else {
        std::vector<AuthRead> reads;
        reads.push_back(std::move(a));
        if (post_reads(reads, batched) != NGX_OK) return NGX_ERROR;
        if (batched) maybe_connect();
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

void start_loop_reads(std::unique_ptr<signin::SessionReader> reader) {
    g_loop.reader = std::move(reader);
    g_loop.send.handler = loop_send;
    g_loop.send.log = ngx_cycle->log;
    g_loop.send.data = &g_loop;
}

void stop_loop_reads() {
    if (g_loop.send.posted) {
        ngx_delete_posted_event(&g_loop.send);
    }
    unwatch();
    // a connect() still under way in a thread keeps its reader: the worker ends without freeing it
    if (g_loop.connecting) (void)g_loop.reader.release();
    g_loop.reader.reset();
}

void set_shared_limits(std::unique_ptr<signin::SharedLimits> limits) { g_shared_limits = std::move(limits); }
signin::SharedLimits *shared_limits() { return g_shared_limits.get(); }

ngx_int_t start_auth_read(ngx_http_request_t *r, const Credentials &c, std::optional<SharedTake> take) {
    return post_auth_read(r, c, std::move(take), false);
}

ngx_int_t start_pin_read(ngx_http_request_t *r, const Credentials &c) { return post_auth_read(r, c, std::nullopt, true); }

}  // namespace signin_ngx
