// The per-worker engine: the store opened after fork (each worker opens its own), the job pools, the
// purge of expired records, and the warm-up of the dummy hash.
#include "signin_conf.h"
#include "signin_metrics.h"
#include "signin_delivery.h"
#include "signin_events.h"
#include "signin_handlers.h"
#include "signin_jobs.h"
#include "signin_smtp.h"
#include "../limits/signin_limits.h"

namespace signin_ngx {
namespace {

std::shared_ptr<signin::Store> g_store;
std::unique_ptr<signin::Identity> g_identity;
ngx_event_t g_purge_event;
ngx_connection_t g_purge_dummy;

// The purge (worker 0): expired records every minute, and the index entries that exchanges leave
// (Store::WriteTxn::purge_index) in between. A round deletes at most kPurgeRound entries (and as
// many old audit entries): each deletion dirties a page of its batch's transaction, and a store
// may keep the page buffers of the largest transaction a worker ever made until the worker exits
// (much larger rounds would grow the purging worker's heap by megabytes, and hold the write lock
// meanwhile). A round that used its whole budget is
// followed by the next one a second later, so the purge keeps up with 256 exchanges a second.
constexpr ngx_msec_t kFirstPurge = 5000, kPurgeEvery = 60000, kPurgeAgain = 1000;
constexpr std::size_t kPurgeRound = 256;

ngx_msec_t g_records_purge_at = 0;  // when the next round purges expired records (else: the index)

void schedule_purge(ngx_msec_t after) {
    if (ngx_exiting || ngx_quit || ngx_terminate) return;
    ngx_add_timer(&g_purge_event, after);
}

class PurgeJob final : public BackgroundJob {
public:
    explicit PurgeJob(bool records) : BackgroundJob(Stage::Write), records_(records) {}

private:
    signin::Status write() override {
        auto n = records_ ? g_identity->purge_expired(kPurgeRound) : g_identity->purge_index(kPurgeRound);
        if (!n) return n.error();
        full_ = n.value() >= kPurgeRound;
        return signin::ok_status();
    }
    void done(const signin::Error *failure) override {
        const bool more = failure == nullptr && full_;
        if (records_) g_records_purge_at = ngx_current_msec + (more ? kPurgeAgain : kPurgeEvery);
        // The index again a second after a round of it that was full, and a second after a round
        // of records (which gave the index what its records left, and does not count it); else
        // the records' next round.
        auto next = static_cast<ngx_msec_int_t>(g_records_purge_at - ngx_current_msec);
        if ((records_ || more) && next > static_cast<ngx_msec_int_t>(kPurgeAgain)) next = kPurgeAgain;
        schedule_purge(next > 0 ? static_cast<ngx_msec_t>(next) : 1);
    }
    const bool records_;
    bool full_ = false;
};

// Makes the dummy hash of failed password sign-ins now, in the pool, not in the first failure.
class WarmJob final : public BackgroundJob {
public:
    explicit WarmJob(signin::password::HashParams p) : BackgroundJob(Stage::Hash), params_(p) {}

private:
    signin::Status hash() override {
        (void)signin::password::dummy_hash(params_);
        return signin::ok_status();
    }
    bool writes() const override { return false; }
    signin::password::HashParams params_;
};

// The next round is scheduled when this one is over (PurgeJob::done), or now when it could not start.
void purge_tick(ngx_event_t *ev) {
    if (ngx_exiting || ngx_quit || ngx_terminate) return;
    const bool records = static_cast<ngx_msec_int_t>(ngx_current_msec - g_records_purge_at) >= 0;
    const bool queued = guard([&] { return start_background_job(std::make_unique<PurgeJob>(records)) == NGX_OK; },
                              [](const std::exception *) { return false; });
    if (queued) return;
    ngx_log_error(NGX_LOG_ERR, ev->log, 0, "signin: could not queue the purge of expired records");
    schedule_purge(kPurgeEvery);
}

void open_engine(ngx_cycle_t *cycle, MainConf *m) {
    signin::StoreOptions opts;
    opts.where = std::string(sv(m->store_path));
    opts.map_size = m->store_size;
    opts.connections = m->store_connections;
    opts.audit_max = m->audit_max;
    opts.wait_for_server = true;  // a database that is down at start: 503 until it is back
    g_store = signin::open_store(opts);
    const signin::StoreTraits traits = g_store->traits();
    set_store_traits(traits);  // reads that may block leave the event loop (start_auth_read)
    if (traits.shared_by_nodes && limits_mode(cycle) == LimitsMode::Zone) {
        // the sensitive requests, counted for every node
        set_shared_limits(std::make_unique<signin::SharedLimits>(g_store));
    }
    if (traits.reads_may_block) start_loop_reads(g_store->session_reader());  // GET /me without a thread each
    if (traits.reads_may_block && m->session_cache > 0) {  // per worker, bounded
        set_session_cache(std::make_unique<signin::SessionCache>(static_cast<signin::Millis>(m->session_cache), 100000));
    }
    g_identity = std::make_unique<signin::Identity>(g_store, *m->origin, *m->policy);
    if (m->secret_key != nullptr) g_identity->use_secret_key(*m->secret_key);  // seals second-factor secrets
    // every email leaves through the outbox
    if (m->secret_key != nullptr && (m->delivery_ctx != nullptr || smtp_settings(cycle) != nullptr)) {
        signin::OutboxSettings outbox = *m->outbox;  // signin_delivery_timeout, signin_delivery_retries
        outbox.key = *m->secret_key;
        g_identity->use_outbox(outbox);
        outbox.key.fill(0);
    }
    if (m->blocklist) g_identity->passwords().with_password_check(signin::password::blocklist_checker(*m->blocklist));
    // Password attempt counters live in the signin_limits zone (signin_passwords.cpp), shared by
    // every worker. Without a zone (nginx -t warned) each worker still applies the
    // attempt limits in its own memory, so password guessing is never unlimited unless
    // "signin_limits off" says so.
    if (traits.shared_by_nodes && limits_mode(cycle) != LimitsMode::Off) {
        // several nodes: the counters are in the database, so that every node sees every attempt
        // (in the thread pool, where the engine checks passwords); a zone still counts per node
        g_identity->passwords().with_attempt_limiter(
            std::make_shared<signin::StoreAttemptLimiter>(g_store, m->policy->attempts));
    } else if (limits_mode(cycle) == LimitsMode::None) {
        g_identity->passwords().with_attempt_limiter(
            std::make_shared<signin::MemoryAttemptLimiter>(m->policy->attempts));
    } else {
        g_identity->passwords().with_attempt_limiter(std::make_shared<signin::UnlimitedAttempts>());
    }
}

// Says which store could not be opened, as the store describes itself (a URI may hold a
// password, which is never logged), and why when that is known.
void log_unopened(ngx_cycle_t *cycle, const MainConf *m, const char *why) {
    guard(
        [&] {
            const std::string shown = signin::describe_store(sv(m->store_path));
            ngx_log_error(NGX_LOG_CRIT, cycle->log, 0, "signin_store \"%s\" could not be opened%s%s", shown.c_str(),
                          why != nullptr ? ": " : "", why != nullptr ? why : "");
        },
        [&](const std::exception *) { ngx_log_error(NGX_LOG_CRIT, cycle->log, 0, "signin_store could not be opened"); });
}

}  // namespace

signin::Identity *identity() { return g_identity.get(); }

ngx_int_t init_worker(ngx_cycle_t *cycle) {
    MainConf *m = cycle_main_conf(cycle);
    metrics_attach(cycle);
    if (m == nullptr || !m->used) return NGX_OK;
    const bool opened = guard([&] { return open_engine(cycle, m), true; },
                              [&](const std::exception *e) {
                                  log_unopened(cycle, m, e ? e->what() : nullptr);
                                  return false;
                              });
    if (!opened) {
        g_identity.reset();
        return NGX_OK;  // requests answer 503 storage_unavailable; the worker keeps serving the rest
    }
    set_job_pools(m->thread_pool, m->password_pool);
    const bool warming =
        !m->policy->with_passwords || guard([&] { return start_background_job(std::make_unique<WarmJob>(m->policy->password_hash)) == NGX_OK; },
                               [](const std::exception *) { return false; });
    if (!warming) ngx_log_error(NGX_LOG_WARN, cycle->log, 0, "signin: could not queue the warm-up of the password hash");
    if (g_identity->has_outbox()) start_outbox(cycle);
    start_events(cycle, *g_identity);
    if (ngx_worker == 0) {
        g_purge_dummy.fd = -1;
        g_purge_event.handler = purge_tick;
        g_purge_event.log = cycle->log;
        g_purge_event.data = &g_purge_dummy;
        g_purge_event.cancelable = 1;
        g_records_purge_at = ngx_current_msec + kFirstPurge;
        ngx_add_timer(&g_purge_event, kFirstPurge);
    }
    return NGX_OK;
}

void exit_worker(ngx_cycle_t *cycle) {
    guard_log(cycle->log, NGX_LOG_ALERT, "signin: closing the store", [] {
        stop_loop_reads();
        g_identity.reset();
        g_store.reset();
    });
}

}  // namespace signin_ngx
