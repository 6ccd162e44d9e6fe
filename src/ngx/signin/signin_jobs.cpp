// Jobs and write batches (signin_jobs.h).
//
// A job waits on the event loop, runs its stage in a pool thread, and comes back on the event
// loop for the next stage, in the shape of nginx's own thread offloads (ngx_http_file_cache.c):
// the waiting request is blocked (r->main->blocked), every running thread task carries a timer
// (nginx 1.25.4, ticket #2162: a worker that is shutting down exits once no timer is left, and
// would drop requests whose task is still running), and on completion the request is resumed
// through its write_event_handler (or nginx's finalizer when it was terminated meanwhile),
// followed by ngx_http_run_posted_requests.
//
// Write stages do not take a pool thread each: they wait in this worker's list, and one thread
// task runs every waiting write in one store transaction with one durable commit; its completion
// event then resumes them all. The task takes the list once it holds the store's write lock, so
// writes that arrive while it waits for the lock (another worker's batch is committing) join it;
// writes that arrive after that form the next batch, started when this one is done.
#include "signin_jobs.h"
#include "signin_metrics.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <deque>
#include <exception>
#include <chrono>
#include <mutex>
#include <new>
#include <vector>

#include "signin_conf.h"
#include "signin_reply.h"
#include "signin_request.h"
#include "signin_tasks.h"

namespace signin_ngx {

// ---------------------------------------------------------------- the job's stages

void Job::run_stage(ngx_log_t *log) {
    const Stage ran = stage_;
    const signin::i18n::RequestLanguage language(language_);
    // runs in a thread of a pool: an exception becomes the job's failure
    signin::Status st = guard_log(log, NGX_LOG_ERR, "signin: a job", signin::Status(signin::Error{signin::Code::Internal, "the request failed"}),
                                  [&]() -> signin::Status {
                                      return ran == Stage::Hash          ? hash()
                                             : ran == Stage::Read        ? read()
                                             : ran == Stage::AfterCommit ? after_commit()
                                                                         : write();
                                  });
    if (!st) {
        fail(st.error());
        return;
    }
    // a Read is answered; a Write's AfterCommit runs only once its batch committed (batch_done)
    stage_ = ran == Stage::Hash && writes()                  ? Stage::Write
             : ran == Stage::Write && after_commit_wanted() ? Stage::AfterCommit
                                                            : Stage::Answer;
}

void Job::fail(signin::Error e) {
    failure_ = std::move(e);
    stage_ = Stage::Answer;
}

ngx_int_t Job::finish(ngx_http_request_t *r) {
    if (!failure_) return answer(r);
    failed(r, *failure_);
    return answer_failure(r, *failure_);
}

ngx_int_t Job::answer_failure(ngx_http_request_t *r, const signin::Error &e) { return send_failure(r, e); }

void lower_thread_priority() {
    thread_local bool lowered = false;
    if (lowered) return;
    lowered = true;
    // Linux: a thread id names one thread for setpriority; failure (no permission) changes nothing
    auto tid = static_cast<id_t>(syscall(SYS_gettid));
    int now = getpriority(PRIO_PROCESS, tid);
    if (now < 10) (void)setpriority(PRIO_PROCESS, tid, 10);
}

// ---------------------------------------------------------------- waiting on the event loop

namespace {

ngx_thread_pool_t *g_write_pool = nullptr;
ngx_thread_pool_t *g_hash_pool = nullptr;

// A job and who waits for it: a request, or nobody (a background job, owned here).
struct Waiter {
    ngx_http_request_t *r;
    Job *job;
};

ngx_int_t start_stage(const Waiter &w);

// The job's Answer stage: the request resumes (job_resume), or a background job is deleted.
void complete(const Waiter &w) {
    if (w.r == nullptr) {
        auto *job = static_cast<BackgroundJob *>(w.job);
        guard_log(ngx_cycle->log, NGX_LOG_ERR, "signin: a background job's completion",
                  [job] { job->done(job->failure()); });
        delete job;
        return;
    }
    ngx_http_request_t *r = w.r;
    ngx_connection_t *c = r->connection;
    ngx_http_set_log_request(c->log, r);
    r->main->blocked--;
    if (RequestCtx *ctx = get_ctx(r, false)) ctx->job_answered = true;
#if defined(nginx_version) && nginx_version >= 1025004
    if (r->main->terminated) {  // the request is gone: nginx finalizes it from the connection
        c->write->handler(c->write);
        return;
    }
#endif
    // nginx before 1.25.4 set write_event_handler to its finalizer when it terminated the request
    r->write_event_handler(r);
    ngx_http_run_posted_requests(c);
}

// After a stage ran: the next one, or the answer. A pool that refuses the job ends it.
// Once start_stage succeeded the job belongs to a thread: nothing here reads it again.
// An AfterCommit the pool refuses runs here instead: its write is durable already, and the
// answer must not say otherwise.
void next_stage(const Waiter &w) {
    if (w.job->stage() != Job::Stage::Answer) {
        if (start_stage(w) == NGX_OK) return;
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0, "signin: the thread pool refused a job");
        if (w.job->stage() == Job::Stage::AfterCommit) {
            w.job->run_stage(ngx_cycle->log);
        } else {
            w.job->fail(signin::Error{signin::Code::StorageError, "the thread pool refused the job"});
        }
    }
    complete(w);
}

// ---------------------------------------------------------------- the Hash stage

struct HashTask {
    Waiter w{};
    ngx_pool_t *pool = nullptr;
    ngx_thread_task_t *task = nullptr;
};

// With one pool for both stages (no signin_password_thread_pool of its own) a write batch would
// wait behind every queued Argon2id: seconds under a password flood. Then each worker runs one
// hash at a time and keeps the rest here, so a batch waits for at most one hash per worker.
// A pool of its own takes as many as it has threads and queue.
constexpr std::size_t kHashWaiting = 64;  // beyond this the request is answered 503 at once
std::deque<Waiter> g_hash_waiting;
std::size_t g_hashing = 0;

std::size_t hash_slots() { return g_hash_pool == g_write_pool ? 1 : static_cast<std::size_t>(-1); }

ngx_int_t post_hash(const Waiter &w);

// A hash slot came free: the next waiting job takes it (a pool that refuses it ends the job).
void next_hash() {
    while (g_hashing < hash_slots() && !g_hash_waiting.empty()) {
        const Waiter w = g_hash_waiting.front();
        g_hash_waiting.pop_front();
        if (post_hash(w) == NGX_OK) continue;
        w.job->fail(signin::Error{signin::Code::StorageError, "the thread pool refused the job"});
        complete(w);
    }
}

void hash_thread(void *data, ngx_log_t *log) {
    auto *t = static_cast<HashTask *>(data);
    lower_thread_priority();
    t->w.job->run_stage(log);
}

void hash_done(ngx_event_t *ev) {
    if (task_overdue(ev)) return;
    auto *t = static_cast<HashTask *>(ev->data);
    const Waiter w = t->w;
    delete_task(t);
    g_hashing--;
    guarded("signin: the end of a hashing job", [&w] {
        next_stage(w);
        next_hash();
    });
}

ngx_int_t post_hash(const Waiter &w) {
    auto *t = new_task<HashTask>(hash_thread, hash_done);
    if (t == nullptr) return NGX_ERROR;
    t->w = w;
    if (post_task(g_hash_pool, t) != NGX_OK) {
        delete_task(t);
        return NGX_ERROR;
    }
    g_hashing++;
    return NGX_OK;
}

// ---------------------------------------------------------------- the Read and AfterCommit stages

// One stage of one job as a task of its own: a Read in the write pool, an AfterCommit in the
// hashing pool (no hash slot: it is short, and waits for no lock).
struct StageTask {
    Waiter w{};
    ngx_pool_t *pool = nullptr;
    ngx_thread_task_t *task = nullptr;
};

void stage_thread(void *data, ngx_log_t *log) { static_cast<StageTask *>(data)->w.job->run_stage(log); }

void stage_done(ngx_event_t *ev) {
    if (task_overdue(ev)) return;
    auto *t = static_cast<StageTask *>(ev->data);
    const Waiter w = t->w;
    delete_task(t);
    guarded("signin: the end of a job's stage", [&w] { next_stage(w); });
}

ngx_int_t post_stage(ngx_thread_pool_t *pool, const Waiter &w) {
    auto *t = new_task<StageTask>(stage_thread, stage_done);
    if (t == nullptr) return NGX_ERROR;
    t->w = w;
    if (post_task(pool, t) != NGX_OK) {
        delete_task(t);
        return NGX_ERROR;
    }
    return NGX_OK;
}

// ---------------------------------------------------------------- the Write stage: batches

struct WriteBatch {
    std::vector<Waiter> members;            // taken by the thread from g_waiting
    std::unique_ptr<BatchRider> rider;      // made when posted
    bool taken = false;
    bool replayed = false;                 // it ran twice (Store::batch)
    std::optional<signin::Error> failure;  // the commit's
    ngx_pool_t *pool = nullptr;
    ngx_thread_task_t *task = nullptr;
};

// The jobs waiting for a batch: the event loop adds them, the batch's thread takes them. Only
// this list is shared; g_batch_running and everything else here is event-loop state.
std::mutex g_waiting_lock;
std::vector<Waiter> g_waiting;
bool g_batch_running = false;
std::unique_ptr<BatchRider> (*g_make_rider)() = nullptr;

bool anyone_waiting() {
    std::lock_guard<std::mutex> hold(g_waiting_lock);
    return !g_waiting.empty();
}

void take_waiting(WriteBatch *b) {
    std::lock_guard<std::mutex> hold(g_waiting_lock);
    b->members.swap(g_waiting);
    b->taken = true;
    set_queue_depth(0);
}

// The tokens the batch's exchanges spend, and their accounts, read together before the jobs run
// (a store whose reads are round trips saves one each).
void read_ahead(signin::Identity &id, const std::vector<Waiter> &members) {
    std::vector<std::string> keys;
    for (const Waiter &w : members) {
        if (w.job->stage() != Job::Stage::Write) continue;
        std::string k = w.job->token_key();
        if (!k.empty()) keys.push_back(std::move(k));
    }
    if (!keys.empty()) id.tokens().read_ahead(keys);
}

// The list of waiting writes is taken only once the store's write lock is held: while a batch
// waits for another worker's commit to release the lock, the exchanges that arrive meanwhile join
// this commit instead of waiting for the next batch, another lock wait and commit later.
void batch_thread(void *data, ngx_log_t *log) {
    auto *b = static_cast<WriteBatch *>(data);
    signin::Identity *id = identity();
    const auto started = std::chrono::steady_clock::now();
    BatchRider *rider = b->rider.get();
    if (rider != nullptr) rider->begin();
    signin::Status st = id == nullptr
                            ? signin::Status(signin::Code::StorageError, "the sign-in store is not open")
                            : id->write_batch([b, log, id, rider] {
                                  if (!b->taken) {
                                      take_waiting(b);
                                  } else {  // the batch runs again (Store::batch): the same jobs
                                      b->replayed = true;
                                      for (Waiter &w : b->members) w.job->rewind_write();
                                  }
                                  read_ahead(*id, b->members);
                                  if (rider != nullptr) rider->run();
                                  for (Waiter &w : b->members) w.job->run_stage(log);  // one failing job stops no other
                              });
    if (rider != nullptr) rider->end(static_cast<bool>(st));
    if (st) {
        count_batch(b->members.size(),
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    }
    if (b->replayed) count_batch_replay();
    if (!st) {
        b->failure = st.error();
        if (!b->taken) take_waiting(b);  // the transaction never began: they get its error
    }
}

void batch_done(ngx_event_t *ev);

// Posts a batch for the waiting jobs (its thread takes them).
ngx_int_t launch_batch() {
    auto *b = new_task<WriteBatch>(batch_thread, batch_done);
    if (b == nullptr) return NGX_ERROR;
    if (g_make_rider != nullptr) guarded("signin: a write batch's rider", [b] { b->rider = g_make_rider(); });
    if (post_task(g_write_pool, b) != NGX_OK) {
        if (b->rider) b->rider->done(false);
        delete_task(b);
        return NGX_ERROR;
    }
    g_batch_running = true;
    return NGX_OK;
}

// Starts a batch for the waiting jobs when none runs; a pool that refuses it ends them.
void launch_waiting() {
    while (!g_batch_running && anyone_waiting()) {
        if (launch_batch() == NGX_OK) return;
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0, "signin: could not post a write batch to the thread pool");
        std::vector<Waiter> refused;
        {
            std::lock_guard<std::mutex> hold(g_waiting_lock);
            refused.swap(g_waiting);
        }
        g_batch_running = true;  // what they post while finishing waits for the next round
        for (const Waiter &w : refused) {
            w.job->fail(signin::Error{signin::Code::StorageError, "the thread pool refused the write"});
            complete(w);
        }
        g_batch_running = false;
    }
}

void batch_done(ngx_event_t *ev) {
    if (task_overdue(ev)) return;
    auto *b = static_cast<WriteBatch *>(ev->data);
    std::vector<Waiter> members = std::move(b->members);
    std::optional<signin::Error> failure = std::move(b->failure);
    std::unique_ptr<BatchRider> rider = std::move(b->rider);
    delete_task(b);
    if (rider) guarded("signin: the end of a write batch's rider", [&] { rider->done(!failure); });
    // still "running" while the members finish: jobs they start wait for the launch below
    for (const Waiter &w : members) {
        guarded("signin: the end of a write batch", [&] {
            if (failure) w.job->fail(*failure);
            next_stage(w);  // the answer, or an AfterCommit first
        });
    }
    g_batch_running = false;
    guarded("signin: the next write batch", launch_waiting);
}

ngx_int_t start_stage(const Waiter &w) {
    if (g_write_pool == nullptr || g_hash_pool == nullptr) return NGX_ERROR;
    // (A store whose reads may block runs its writes in the batch too, as one transaction where
    // they do not conflict (Store::batch): with a task per job the exchanges were no faster and
    // lost many more races to each other.)
    if (w.job->stage() == Job::Stage::Read) return post_stage(g_write_pool, w);
    if (w.job->stage() == Job::Stage::AfterCommit) return post_stage(g_hash_pool, w);
    if (w.job->stage() == Job::Stage::Hash) {
        if (g_hashing < hash_slots()) return post_hash(w);
        if (g_hash_waiting.size() >= kHashWaiting) return NGX_ERROR;
        try {
            g_hash_waiting.push_back(w);
        } catch (const std::bad_alloc &) {
            return NGX_ERROR;
        }
        return NGX_OK;
    }
    try {
        std::lock_guard<std::mutex> hold(g_waiting_lock);
        g_waiting.push_back(w);
        set_queue_depth(g_waiting.size());
    } catch (const std::bad_alloc &) {
        return NGX_ERROR;
    }
    if (g_batch_running || launch_batch() == NGX_OK) return NGX_OK;
    std::lock_guard<std::mutex> hold(g_waiting_lock);  // no batch runs: nobody took it
    g_waiting.pop_back();
    return NGX_ERROR;
}

// The write_event_handler of a request waiting for its job.
void job_resume(ngx_http_request_t *r) {
    RequestCtx *ctx = get_ctx(r, false);
    if (ctx == nullptr || ctx->job == nullptr || !ctx->job_answered) return;  // a stray write event while waiting
    std::unique_ptr<Job> job = std::move(ctx->job);
    ctx->job_answered = false;
    r->write_event_handler = ngx_http_request_empty_handler;
    ngx_http_finalize_request(r, guard_request(r, "signin: answering a request", [&] { return job->finish(r); }));
}

}  // namespace

void set_batch_rider(std::unique_ptr<BatchRider> (*make)()) { g_make_rider = make; }

ngx_thread_pool_t *job_write_pool() { return g_write_pool; }

void set_job_pools(ngx_thread_pool_t *writes, ngx_thread_pool_t *hashes) {
    g_write_pool = writes;
    g_hash_pool = hashes;
}

ngx_int_t start_job(ngx_http_request_t *r, std::unique_ptr<Job> job) {
    RequestCtx *ctx = get_ctx(r, true);
    job->set_language(request_language_tag(r));
    if (ctx == nullptr || start_stage(Waiter{r, job.get()}) != NGX_OK) {
        // overloaded (a full queue) or misconfigured: the client may try again shortly; the log
        // says it at most once a second, however many requests are refused
        static ngx_msec_t logged = 0;
        if (logged == 0 || ngx_current_msec - logged >= 1000) {
            logged = ngx_current_msec;
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "signin: the thread pool is full: requests are answered 503 (said at most once a second)");
        }
        if (!add_header(r, "Retry-After", "1")) return NGX_HTTP_INTERNAL_SERVER_ERROR;
        return send_error(r, kBusy, "the server is busy; try again in a second");
    }
    // the job's stage runs no earlier than posted, and comes back no earlier than this handler returns
    ctx->job = std::move(job);
    ctx->job_answered = false;
    r->main->blocked++;
    r->write_event_handler = job_resume;
    return NGX_DONE;
}

signin::StoreTraits g_store_traits;
void set_store_traits(const signin::StoreTraits &traits) { g_store_traits = traits; }

ngx_int_t start_background_job(std::unique_ptr<BackgroundJob> job) {
    if (start_stage(Waiter{nullptr, job.get()}) != NGX_OK) return NGX_ERROR;
    job.release();  // deleted by complete()
    return NGX_OK;
}

}  // namespace signin_ngx
