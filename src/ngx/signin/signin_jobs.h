// Work off the event loop, which never waits for a hash or an fsync: a job runs in explicit stages,
//
//   Hash    Argon2id in the hashing pool (signin_password_thread_pool); it writes nothing.
//   Write   in this worker's write batch: one thread task runs every waiting job's write in one
//           store transaction with one durable commit (signin_thread_pool).
//   AfterCommit  (for a job that asks) once its batch committed, a task of its own in the hashing
//           pool: work its answer needs that must not hold up the single-threaded batch (an ID
//           token's signature); it writes nothing.
//   Answer  back on the event loop: answer() with the job's outcome, or the one failure path
//           (failed(), then the error's answer).
//
// A stage that returns an error ends the job with that error, and so does a batch whose commit
// failed: a 2xx goes out only once its write is durable, so nothing acknowledged is lost. A job
// is a request's (its answer is the request's) or a background job's (its outcome concerns
// nobody; it is deleted when done).
#pragma once

#include "ngx_signin_nginx.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "signin/session_cache.hpp"
#include "signin/shared_limits.hpp"
#include "signin/store.hpp"
#include "signin/types.hpp"
#include "signin_reply.h"

namespace signin_ngx {

class Job {
public:
    enum class Stage : std::uint8_t { Hash, Write, Answer, Read, AfterCommit };

    virtual ~Job() = default;
    Job(const Job &) = delete;
    Job &operator=(const Job &) = delete;

    Stage stage() const { return stage_; }
    // Why the job failed, or nullptr.
    const signin::Error *failure() const { return failure_ ? &*failure_ : nullptr; }

    // The current stage, in a pool thread; never throws. Then the stage after it.
    void run_stage(ngx_log_t *log);
    // Ends the job with e (a batch whose commit failed, a pool that refused the job).
    void fail(signin::Error e);
    // The record key of the token its Write stage spends first (an exchange), for the batch to
    // read ahead with the others' (Tokens::read_ahead); "" for none.
    virtual std::string token_key() const { return {}; }
    // Back to the Write stage with no failure: the batch it ran in runs again (Store::batch).
    void rewind_write() {
        stage_ = Stage::Write;
        failure_.reset();
    }
    // The Answer stage of a request's job: an rc for ngx_http_finalize_request.
    ngx_int_t finish(ngx_http_request_t *r);
    // The language of the request (a signin_languages tag, "" when none is configured): the
    // stages run with it as signin::i18n::RequestLanguage, for the emails they cause.
    void set_language(std::string tag) { language_ = std::move(tag); }

protected:
    explicit Job(Stage first) : stage_(first) {}

    // Hash stage (only for a job that starts there): verify or hash, write nothing.
    virtual signin::Status hash() { return signin::ok_status(); }
    // Read stage (only for a job that starts there): reads of a store whose reads may block, in
    // signin_thread_pool (a task of its own, not a write batch); the Answer follows.
    virtual signin::Status read() { return signin::ok_status(); }
    // Whether a Write stage follows the Hash stage.
    virtual bool writes() const { return true; }
    // Write stage: engine calls that write through the store; the batch's commit makes them
    // durable. It may run twice (rewind_write): it does the same from the start each time and
    // sets every outcome it has, so that the last run's is what is answered.
    virtual signin::Status write() { return signin::ok_status(); }
    // Whether an AfterCommit stage follows a Write stage that succeeded.
    virtual bool after_commit_wanted() const { return false; }
    // AfterCommit stage: what the answer needs once the write is durable; never a store call.
    virtual signin::Status after_commit() { return signin::ok_status(); }
    // Answer stage of a request's job: the answer to the outcome.
    virtual ngx_int_t answer(ngx_http_request_t *r) = 0;
    // Answer stage after a failure, before the error is answered (counters of failed attempts).
    virtual void failed(ngx_http_request_t *, const signin::Error &) {}
    // The answer to a failure: the error's JSON answer (send_failure), unless the job's request
    // wants another (a provider's callback goes back to the sign-in page).
    virtual ngx_int_t answer_failure(ngx_http_request_t *r, const signin::Error &e);

private:
    Stage stage_;
    std::optional<signin::Error> failure_;
    std::string language_;
};

// A job whose outcome no request waits for (a touch, a cancel, a purge, an audit entry).
class BackgroundJob : public Job {
public:
    // Back on the event loop when the job is over, before it is deleted: `failure` is why it
    // failed, or nullptr.
    virtual void done(const signin::Error *failure) { (void)failure; }

protected:
    using Job::Job;
    ngx_int_t answer(ngx_http_request_t *) final { return NGX_OK; }
};

// A background job that claims, in the write batch, up to `budget` of what is due (the outbox's
// emails, the events' deliveries), then gives them, or why the claim failed, to `take` on the
// event loop.
template <class Item>
class ClaimJob final : public BackgroundJob {
public:
    using Claim = std::function<signin::Result<std::vector<Item>>(std::size_t budget)>;
    using Take = std::function<void(const signin::Error *failure, std::vector<Item> items)>;
    ClaimJob(std::size_t budget, Claim claim, Take take)
        : BackgroundJob(Stage::Write), budget_(budget), claim_(std::move(claim)), take_(std::move(take)) {}

private:
    signin::Status write() override {
        auto items = claim_(budget_);
        if (!items) return items.error();
        items_ = std::move(items.value());
        return signin::ok_status();
    }
    void done(const signin::Error *failure) override { take_(failure, std::move(items_)); }

    std::size_t budget_;
    Claim claim_;
    Take take_;
    std::vector<Item> items_;
};

// What rides every write batch of this worker besides its jobs (signin_events: the deletion of
// the events delivered, and the events the batch writes, held for this worker's sender). One is
// made on the event loop as each batch is posted.
class BatchRider {
public:
    virtual ~BatchRider() = default;
    // In the batch's pool thread: before the batch; at the start of each of its runs, in its
    // transaction, before its jobs; after it, `committed` or not.
    virtual void begin() {}
    virtual void run() {}
    virtual void end(bool committed) { (void)committed; }
    // Back on the event loop once the batch ended, before its jobs finish.
    virtual void done(bool committed) = 0;
};
// What makes the rider of each batch (nullptr, or a maker that gives nullptr: nothing rides).
void set_batch_rider(std::unique_ptr<BatchRider> (*make)());

// The pools of this worker's jobs (init_process): writes, and Argon2id.
void set_job_pools(ngx_thread_pool_t *writes, ngx_thread_pool_t *hashes);

// Starts a request's job: the request waits (r->main->blocked) until the job's answer. The
// caller holds a request reference (the body reading's, or count++). Returns NGX_DONE, or the
// rc of the 503 answered when the job could not be queued.
ngx_int_t start_job(ngx_http_request_t *r, std::unique_ptr<Job> job);
// Starts a job that may outlive any request. NGX_ERROR when it could not be queued.
ngx_int_t start_background_job(std::unique_ptr<BackgroundJob> job);

// What this worker's store says of itself (Store::traits), set once per worker at init_process
// and asked on every request (inline).
void set_store_traits(const signin::StoreTraits &traits);
extern signin::StoreTraits g_store_traits;
// A read may wait on another machine: what the event loop would read is read in the thread pool
// instead, since the event loop never waits (a round trip would stall every request of the
// worker). Otherwise a read is a memory read, made on the event loop at once.
inline bool reads_block() { return g_store_traits.reads_may_block; }
// Several nodes share the store: limits that must hold across them are counted in it.
inline bool store_shared() { return g_store_traits.shared_by_nodes; }

struct Credentials;
// Reads, in signin_thread_pool, who the credentials (a cookie or bearer token) belong to; the
// outcome waits in ctx->pre_auth for authenticate(). The request is blocked meanwhile
// (ctx->auth_reading); when the read is done its write_event_handler runs: the phase handlers
// again for the gate, or what the caller set. NGX_OK, or NGX_ERROR when it could not be posted.
// `take`, when given, also counts the request against a request limit kept in the store
// (SharedLimits: every node's requests), its verdict in ctx->shared_wait; the credentials may
// then be none (nothing is read about them).
struct SharedTake {
    std::string key;
    signin::throttle::WindowRule rule;
};
ngx_int_t start_auth_read(ngx_http_request_t *r, const Credentials &c, std::optional<SharedTake> take = std::nullopt);
// The same read for api_versions_pin (signin_caller.h): its outcome waits in ctx->pin_read.
ngx_int_t start_pin_read(ngx_http_request_t *r, const Credentials &c);
void set_shared_limits(std::unique_ptr<signin::SharedLimits> limits);
signin::SharedLimits *shared_limits();
// The session reads of this worker over a connection of its own, on the event loop
// (Store::session_reader; nullptr: none, every read goes to the thread pool), and its end when
// the worker stops.
void start_loop_reads(std::unique_ptr<signin::SessionReader> reader);
void stop_loop_reads();
// signin_session_cache: the cache of this worker (nullptr: off), and a hit for the credentials
// put into ctx->pre_auth (true) instead of a read.
void set_session_cache(std::unique_ptr<signin::SessionCache> cache);
signin::SessionCache *session_cache();
// Who the credentials belong to, from this worker's session cache; nullptr when it has no entry.
std::shared_ptr<const signin::Principal> cached_principal(const Credentials &c);
bool from_session_cache(ngx_http_request_t *r, const Credentials &c);

// An endpoint's read of the store, then its answer: `fetch` (an engine call; it must not use the
// request) runs at once on the event loop for a store whose reads are memory reads, and in the
// thread pool for one whose reads may block, the request waiting (a GET: our own reference); `reply`
// answers with its outcome on the event loop. Returns the handler's rc.
template <class T>
class ReadJob final : public Job {
public:
    ReadJob(std::function<signin::Result<T>()> fetch, std::function<ngx_int_t(ngx_http_request_t *, T &)> reply)
        : Job(Stage::Read), fetch_(std::move(fetch)), reply_(std::move(reply)) {}

private:
    signin::Status read() override {
        auto v = fetch_();
        if (!v) return v.error();
        value_ = std::move(v.value());
        return signin::ok_status();
    }
    ngx_int_t answer(ngx_http_request_t *r) override { return reply_(r, *value_); }

    std::function<signin::Result<T>()> fetch_;
    std::function<ngx_int_t(ngx_http_request_t *, T &)> reply_;
    std::optional<T> value_;
};

template <class T>
ngx_int_t with_read(ngx_http_request_t *r, std::function<signin::Result<T>()> fetch,
                    std::function<ngx_int_t(ngx_http_request_t *, T &)> reply) {
    if (!reads_block()) {
        auto v = fetch();
        if (!v) return send_failure(r, v.error());
        return reply(r, v.value());
    }
    // a POST's body reading holds a reference until its answer; a GET takes its own while it
    // waits (released by the final finalize)
    const bool own = (r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD)) != 0;
    if (own) r->main->count++;
    ngx_int_t rc = start_job(r, std::make_unique<ReadJob<T>>(std::move(fetch), std::move(reply)));
    if (own && rc != NGX_DONE) r->main->count--;
    return rc;
}

// Called by a hashing thread: drops it to nice 10 once, so the event loop (nice 0) is scheduled
// ahead of Argon2id when both want the CPU.
void lower_thread_priority();

}  // namespace signin_ngx
