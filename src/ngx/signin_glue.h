// Shared declarations of the sign-in glue: configuration, per-request context, thread-pool jobs,
// JSON answers. Only translates between nginx and the core (include/signin).
#pragma once

#include "ngx/ngx_signin_nginx.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "signin/auth.hpp"
#include "signin/emails.hpp"
#include "signin/group_commit.hpp"

extern "C" {
extern ngx_module_t ngx_http_signin_module;
}

namespace signin_ngx {

struct MainConf {
    ngx_str_t store_path;
    size_t store_size;
    ngx_str_t origin_text;
    ngx_flag_t registration;
    ngx_flag_t passwords;
    ngx_flag_t email;
    ngx_str_t delivery_uri;
    ngx_http_complex_value_t *client;
    ngx_str_t thread_pool_name;
    ngx_thread_pool_t *thread_pool;
    ngx_str_t password_pool_name;       // signin_password_thread_pool
    ngx_thread_pool_t *password_pool;   // thread_pool unless that names another
    ngx_msec_t token_ttl;
    ngx_msec_t token_resend;
    ngx_uint_t tokens_per_address;
    ngx_msec_t session_ttl;
    ngx_msec_t session_idle;
    ngx_msec_t bearer_ttl;
    size_t body_max;
    ngx_uint_t password_min_length;
    ngx_uint_t password_attempts;
    ngx_msec_t password_backoff;
    ngx_msec_t password_backoff_max;
    ngx_uint_t password_address_limit;
    ngx_msec_t password_address_window;
    ngx_msec_t password_register_backoff;
    ngx_msec_t password_register_backoff_max;
    ngx_msec_t password_fresh;
    ngx_uint_t password_hash_t;
    size_t password_hash_m;
    std::shared_ptr<const signin::password::Blocklist> *blocklist;  // signin_password_blocklist
    ngx_flag_t used;         // some location uses signin_api or signin_require
    ngx_shm_zone_t *mailbox;  // dev mailbox zone, when signin_dev_mailbox is used
    ngx_flag_t mailbox_insecure;  // "signin_dev_mailbox insecure": allowed with a non-loopback origin
    ngx_uint_t mailbox_line;      // where it was first used, for the nginx -t message
    ngx_str_t mailbox_file;
    signin::Emails *emails;  // the ready-made emails, with every signin_email_template applied
    ngx_flag_t previews;     // some location uses signin_email_previews
    signin::Origin *origin;  // parsed at configuration time (pool cleanup destroys it)
    signin::Policy *policy;
};

struct LocConf {
    ngx_flag_t api;
    ngx_flag_t require;
    ngx_flag_t mailbox;
    ngx_flag_t previews;  // signin_email_previews
};

// The per-process engine, opened in init_process; nullptr when the store could not be opened.
signin::Identity *identity();

// Runs engine writes (in a pool thread) as part of a group commit: returns once they are durable,
// or the batch's commit error. Called from inside such a batch (a batched job's run()), it runs op
// at once: the enclosing commit makes it durable, and reports its failure to the job.
signin::Status durable(const std::function<void()> &op);

// result = f(), made durable; a failed batch commit replaces the result with its error.
template <class R, class F>
void run_durable(std::optional<R> &result, F &&f) {
    signin::Status st = durable([&] { result.emplace(f()); });
    if (!st) result.emplace(st.error());
}

// Called at the start of CPU-heavy jobs (Argon2id): the pool thread drops to nice 10 once, so the
// event loop (nice 0) is scheduled ahead of it when both want the CPU (DESIGN §3 rule 1).
void lower_thread_priority();

// Work for the thread pool: run() in a pool thread, finish() back on the event loop.
struct Job {
    virtual ~Job() = default;
    virtual void run() = 0;
    virtual void finish(ngx_http_request_t *r) = 0;
    // True for a job whose run() only writes through the store (no Argon2id): it waits on the
    // event loop with the other such writes and runs with them in one thread task and one durable
    // commit (write batches, signin_common.cpp), instead of taking a pool thread of its own.
    virtual bool batched() const { return false; }
    // The batch's commit failed after run(): nothing of it was written, the answer is this error.
    virtual void commit_failed(const signin::Error &) {}
    // Every job that is not batched hashes (Argon2id) and runs in g_password_pool.
    // Called on the event loop when such a run() is done: true sends the job on to this
    // worker's next write batch, now batched(), for its write stage (HashThenWriteJob); false
    // gives the request to finish().
    virtual bool next_stage() { return false; }
};

// A batched job with one engine result; a failed commit replaces the result.
template <class R>
struct WriteJob : Job {
    std::optional<R> result;
    bool batched() const override { return true; }
    void commit_failed(const signin::Error &e) override { result.emplace(e); }
};

// A job in two stages: hash() runs in the password pool (Argon2id; it writes nothing), then its
// value goes to write(), which runs in a write batch with this worker's other writes. A hashing
// thread so never waits for a commit, and password writes share the group commit. An error of
// hash() is the answer, and nothing is written.
template <class C, class R>
struct HashThenWriteJob : WriteJob<R> {
    std::optional<signin::Result<C>> hashed;
    bool writing = false;

    // The first stage; it should wipe the passwords it was given once they are used.
    virtual signin::Result<C> hash() = 0;
    virtual R write(const C &value) = 0;
    // Nothing to hash: the job starts at its write stage with this value.
    void start_at_write(C value) {
        hashed.emplace(std::move(value));
        writing = true;
    }

    bool batched() const override { return writing; }
    bool next_stage() override {
        if (writing || !hashed || !*hashed) return false;
        writing = true;
        return true;
    }
    void run() override {
        if (!writing) {
            lower_thread_priority();
            hashed.emplace(hash());
            if (!*hashed) this->result.emplace(hashed->error());
            return;
        }
        run_durable(this->result, [this] { return write(hashed->value()); });
    }
};

// Per-request state (owns C++ members; destroyed by a pool cleanup).
struct RequestCtx {
    std::optional<signin::Principal> principal;  // who is signed in, for $signin_user_*
    std::string delivery_json;                    // the body of a delivery subrequest
    std::string client;                           // the evaluated signin_client value
    bool client_set = false;
    std::unique_ptr<Job> job;
    bool job_done = false;
    int endpoint = -1;
};
RequestCtx *get_ctx(ngx_http_request_t *r, bool create);


// Posts a job tied to request r: the request stays alive (r->main->blocked) until finish() ran.
// The caller holds a request reference (body reading, or count++ and NGX_DONE). A batched() job
// joins this worker's next write batch.
ngx_int_t post_request_job(ngx_http_request_t *r, std::unique_ptr<Job> job);
// Posts work that needs no request (it may outlive it): run(), then the job is deleted.
ngx_int_t post_detached_job(ngx_log_t *log, std::unique_ptr<Job> job);
extern ngx_thread_pool_t *g_thread_pool;
extern ngx_thread_pool_t *g_password_pool;  // where jobs that are not batched (Argon2id) run

// Answers: JSON body, cache-control: no-store; returns the output filter's rc.
ngx_int_t send_json(ngx_http_request_t *r, ngx_uint_t status, const std::string &body);
ngx_int_t send_error(ngx_http_request_t *r, signin::Code code, const std::string &message);
// An engine error: 429 adds Retry-After and "retry_after" (seconds) to the body.
ngx_int_t send_failure(ngx_http_request_t *r, const signin::Error &e);
ngx_int_t send_empty(ngx_http_request_t *r, ngx_uint_t status);
// 200 text/html; charset=utf-8, cache-control: no-store.
ngx_int_t send_html(ngx_http_request_t *r, const std::string &page);
bool add_header(ngx_http_request_t *r, std::string_view name, std::string_view value);

// Credentials of a request (SPEC §5 rules 2, 4; DESIGN §5 cookie tossing).
struct Credentials {
    enum State { None, Cookie, Bearer, Ambiguous, Malformed } state = None;
    signin::Secret secret;
};
Credentials read_credentials(ngx_http_request_t *r, std::string_view cookie_name);
std::optional<std::string_view> header_value(ngx_http_request_t *r, std::string_view name);

// Authenticates a request; sets ctx->principal on success.
signin::Result<signin::Principal> authenticate(ngx_http_request_t *r, const Credentials &c);

std::string client_of(ngx_http_request_t *r);

// Content handlers installed by directives.
ngx_int_t api_handler(ngx_http_request_t *r);
ngx_int_t require_handler(ngx_http_request_t *r);
ngx_int_t require_subrequest_handler(ngx_http_request_t *r);
ngx_int_t mailbox_handler(ngx_http_request_t *r);
ngx_int_t email_previews_handler(ngx_http_request_t *r);
ngx_int_t mailbox_init_zone(ngx_shm_zone_t *zone, void *data);
void mailbox_store(ngx_http_request_t *r, const std::string &json);

MainConf *main_conf(ngx_http_request_t *r);

}  // namespace signin_ngx
