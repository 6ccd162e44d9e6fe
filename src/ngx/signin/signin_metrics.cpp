// signin_metrics: the shared counters and the Prometheus endpoint (signin_metrics.h).
#include "signin_metrics.h"

#include <iterator>
#include <utility>
#include <vector>

#include "signin/auth.hpp"
#include "signin/metrics.hpp"
#include "signin_conf.h"
#include "signin_events.h"
#include "signin_reply.h"
#include "signin_request.h"

namespace signin_ngx {
namespace {

namespace mx = signin::metrics;

constexpr std::size_t kWays = sizeof mx::kMethods / sizeof mx::kMethods[0];
constexpr std::size_t kReasons = sizeof mx::kFailureCodes / sizeof mx::kFailureCodes[0];
constexpr std::size_t kPurposes = 9;   // signin::Purpose 1..9
constexpr std::size_t kEventTypes = signin::kEventTypes.size();
constexpr std::size_t kBuckets = 7;    // Bucket 1..7
constexpr std::size_t kBatchBounds = sizeof mx::kBatchSizeBounds / sizeof mx::kBatchSizeBounds[0];
constexpr std::size_t kCommitBounds = sizeof mx::kCommitBounds / sizeof mx::kCommitBounds[0];
constexpr std::size_t kWorkers = 256;  // queue depth slots (ngx_worker)

// The zone's one object. Layout changes change its size, so a reload into a new layout gets a
// new zone instead of misreading the old one.
struct Counters {
    ngx_atomic_t signins[kWays];
    ngx_atomic_t failures[kReasons];
    ngx_atomic_t tokens[kPurposes];
    ngx_atomic_t deliveries[2][3];  // [Transport][DeliveryResult]
    ngx_atomic_t events[kEventTypes][3];  // [event_type_index][EventResult]
    ngx_atomic_t event_steps[4];          // [EventStep]
    ngx_atomic_t limited[kBuckets];
    ngx_atomic_t oidc[5];  // [OidcCount]
    ngx_atomic_t batch_sizes[kBatchBounds + 1];
    ngx_atomic_t batch_jobs;
    ngx_atomic_t batch_replays;
    ngx_atomic_t read_batch_sizes[kBatchBounds + 1];
    ngx_atomic_t read_batch_reads;
    ngx_atomic_t commits[kCommitBounds + 1];
    ngx_atomic_t commit_micros;
    ngx_atomic_t queue[kWorkers];
    // the admin page's dashboard (signin/metrics.hpp): counts per minute and per hour
    ngx_atomic_t minutes[mx::kSeries][mx::kMinuteSlots];
    ngx_atomic_t hours[mx::kSeries][mx::kHourSlots];
};

Counters *g_counters = nullptr;  // this worker's cycle's zone, or none

ngx_int_t init_zone(ngx_shm_zone_t *zone, void *data) {
    if (data != nullptr) {  // reload: the same zone, counters and all
        zone->data = data;
        return NGX_OK;
    }
    auto *pool = reinterpret_cast<ngx_slab_pool_t *>(zone->shm.addr);
    if (zone->shm.exists) {
        zone->data = pool->data;
        return NGX_OK;
    }
    auto *c = static_cast<Counters *>(ngx_slab_calloc(pool, sizeof(Counters)));
    if (c == nullptr) return NGX_ERROR;
    pool->data = c;
    zone->data = c;
    return NGX_OK;
}

void add(ngx_atomic_t &a, ngx_atomic_int_t n = 1) { (void)ngx_atomic_fetch_add(&a, n); }

double get(const ngx_atomic_t &a) { return static_cast<double>(a); }

// One more in the current minute's and hour's slots of a series. The compare-and-swap is tried a
// few times: a count lost to a slot that changes under every try is a dashboard's blur, while
// spinning would cost the request.
void add_over_time(mx::Series series) {
    Counters *c = g_counters;
    if (c == nullptr) return;
    const auto now = static_cast<std::uint64_t>(ngx_time());
    const auto i = static_cast<std::size_t>(series);
    const std::pair<ngx_atomic_t *, std::uint32_t> slots[] = {
        {&c->minutes[i][(now / 60) % mx::kMinuteSlots], static_cast<std::uint32_t>(now / 60)},
        {&c->hours[i][(now / 3600) % mx::kHourSlots], static_cast<std::uint32_t>(now / 3600)}};
    for (auto [slot, period] : slots) {
        for (int tries = 0; tries < 4; ++tries) {
            const ngx_atomic_uint_t old = *slot;
            const std::uint64_t next = mx::slot_add(old, period);
            if (next == old || ngx_atomic_cmp_set(slot, old, static_cast<ngx_atomic_uint_t>(next))) break;
        }
    }
}

// The totals by label that both the metrics and the dashboard show.
std::vector<mx::Sample> signin_samples(const Counters &c) {
    std::vector<mx::Sample> out;
    for (std::size_t i = 0; i < kWays; ++i) out.push_back({std::string(mx::kMethods[i]), get(c.signins[i])});
    return out;
}

std::vector<mx::Sample> failure_samples(const Counters &c) {
    std::vector<mx::Sample> out;
    for (std::size_t i = 0; i < kReasons; ++i) {
        out.push_back({std::string(signin::code_name(mx::kFailureCodes[i])), get(c.failures[i])});
    }
    return out;
}

std::vector<mx::Sample> limited_samples(const Counters &c) {
    std::vector<mx::Sample> out;
    for (std::size_t i = 0; i < kBuckets; ++i) out.push_back({bucket_name(static_cast<Bucket>(i + 1)), get(c.limited[i])});
    return out;
}

// The events' families (signin_events): their sends by type and result, and the way they go.
void event_families(std::vector<mx::Family> &f, const Counters &c) {
    using Type = mx::Family::Type;
    f.push_back({"signin_events_total",
                 "Sends of events to the application (signin_events) by type and result: sent, retried "
                 "(refused, tried again), dropped (refused for the last time).",
                 Type::Counter, "result", {}, {}, {}, {}});
    mx::Family &events = f.back();
    events.outer_label = "type";
    for (std::size_t t = 0; t < kEventTypes; ++t) {
        for (std::size_t i = 0; i < 3; ++i) {
            static const char *const results[] = {"sent", "retried", "dropped"};
            events.samples.push_back({results[i], get(c.events[t][i])});
            events.outer_values.emplace_back(signin::kEventTypes[t]);
        }
    }
    f.push_back({"signin_event_steps_total",
                 "How events reach their sender and leave the store: held as their write batch wrote them, "
                 "claimed; deleted with a later write batch, or alone.",
                 Type::Counter, "step", {}, {}, {}, {}});
    static const char *const kSteps[] = {"held_as_written", "claimed", "deleted_with_batch", "deleted_alone"};
    for (std::size_t i = 0; i < 4; ++i) f.back().samples.push_back({kSteps[i], get(c.event_steps[i])});
}

// A histogram: its bounds, its buckets' counts (the last one past the bounds) and the sum.
template <std::size_t N>
void histogram(mx::Family &f, const double (&bounds)[N], const ngx_atomic_t (&buckets)[N + 1], double sum) {
    f.histogram.bounds.assign(bounds, bounds + N);
    for (const auto &n : buckets) f.histogram.counts.push_back(static_cast<std::uint64_t>(n));
    f.histogram.sum = sum;
}

ngx_int_t metrics(ngx_http_request_t *r) {
    if (r->method != NGX_HTTP_GET && r->method != NGX_HTTP_HEAD) return NGX_HTTP_NOT_ALLOWED;
    if (ngx_http_discard_request_body(r) != NGX_OK) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    Counters *c = g_counters;
    if (c == nullptr) return NGX_HTTP_SERVICE_UNAVAILABLE;
    using Type = mx::Family::Type;
    std::vector<mx::Family> f;
    auto family = [&](const char *name, const char *help, Type type, const char *label) -> mx::Family & {
        f.push_back({name, help, type, label, {}, {}, {}, {}});
        return f.back();
    };
    family("signin_signins_total", "Sign-ins (sessions and bearer tokens made), by way in.", Type::Counter, "method")
        .samples = signin_samples(*c);
    family("signin_signin_failures_total", "Refused requests of the sign-in API and the gate, by the answer's code.",
           Type::Counter, "reason")
        .samples = failure_samples(*c);
    auto &tokens = family("signin_tokens_issued_total", "Emails with a code and link handed to delivery, by purpose.",
                          Type::Counter, "purpose");
    for (std::size_t i = 0; i < kPurposes; ++i) {
        tokens.samples.push_back({std::string(signin::purpose_tag(static_cast<signin::Purpose>(i + 1))), get(c->tokens[i])});
    }
    auto &deliveries = family("signin_deliveries_total",
                              "Sends of emails by transport and result: sent, retried (refused, tried again), failed "
                              "(refused for the last time).",
                              Type::Counter, "result");
    deliveries.outer_label = "transport";
    for (std::size_t t = 0; t < 2; ++t) {
        for (std::size_t i = 0; i < 3; ++i) {
            static const char *const transports[] = {"http", "smtp"}, *const results[] = {"sent", "retried", "failed"};
            deliveries.samples.push_back({results[i], get(c->deliveries[t][i])});
            deliveries.outer_values.emplace_back(transports[t]);
        }
    }
    event_families(f, *c);
    family("signin_rate_limited_total", "Requests answered 429, by limit.", Type::Counter, "limit").samples =
        limited_samples(*c);
    auto &oidc = family("signin_oidc_provider_total",
                        "The module as an OpenID provider: codes given, tokens granted, refused authorization and "
                        "token requests, codes or refresh tokens used twice, tokens revoked.",
                        Type::Counter, "outcome");
    static const char *const kOidc[] = {"code", "granted", "refused", "reused", "revoked"};
    for (std::size_t i = 0; i < 5; ++i) oidc.samples.push_back({kOidc[i], get(c->oidc[i])});
    histogram(family("signin_write_batch_size", "Jobs per durable write batch.", Type::Histogram, ""),
              mx::kBatchSizeBounds, c->batch_sizes, get(c->batch_jobs));
    std::uint64_t batch_count = 0;
    for (auto &n : c->batch_sizes) batch_count += static_cast<std::uint64_t>(n);
    family("signin_write_batches_total", "Durable write batches (one commit each).", Type::Counter, "")
        .samples = {{"", static_cast<double>(batch_count)}};
    family("signin_write_batch_replays_total",
           "Write batches run a second time with a nested transaction per job (a job abandoned a write).",
           Type::Counter, "")
        .samples = {{"", static_cast<double>(get(c->batch_replays))}};
    histogram(family("signin_session_read_batch_size",
                     "Session reads per round trip to the store, where they leave the event loop (PostgreSQL).",
                     Type::Histogram, ""),
              mx::kBatchSizeBounds, c->read_batch_sizes, get(c->read_batch_reads));
    histogram(family("signin_commit_seconds", "Time of a write batch's durable commit.", Type::Histogram, ""),
              mx::kCommitBounds, c->commits, get(c->commit_micros) / 1e6);
    double waiting = 0;
    for (auto &q : c->queue) waiting += get(q);
    family("signin_thread_queue_depth", "Jobs waiting for a write batch, over every worker.", Type::Gauge, "")
        .samples = {{"", waiting}};
    signin::Store::Space space;
    if (signin::Identity *id = identity()) space = id->store_space();
    family("signin_store_used_bytes", "Bytes of the store in use.", Type::Gauge, "").samples = {{"", static_cast<double>(space.used_bytes)}};
    family("signin_store_map_bytes", "The store's map size (signin_store size=).", Type::Gauge, "")
        .samples = {{"", static_cast<double>(space.map_bytes)}};
    return send_prometheus(r, mx::render(f));
}

}  // namespace

char *set_metrics(ngx_conf_t *cf, ngx_command_t *, void *) {
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
    clcf->handler = [](ngx_http_request_t *r) { return guard_request(r, "signin_metrics", [r] { return metrics(r); }); };
    auto *m = static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_signin_module));
    if (m->metrics_zone != nullptr) return NGX_CONF_OK;
    static ngx_str_t name = ngx_string("signin_metrics");
    // a slab page for the pool's own header, and the counters
    const size_t size = 8 * ngx_pagesize + sizeof(Counters);
    ngx_shm_zone_t *zone = ngx_shared_memory_add(cf, &name, size, &ngx_http_signin_module);
    if (zone == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
    zone->init = init_zone;
    m->metrics_zone = zone;
    return NGX_CONF_OK;
}

void metrics_attach(ngx_cycle_t *cycle) {
    MainConf *m = cycle_main_conf(cycle);
    g_counters = m != nullptr && m->metrics_zone != nullptr ? static_cast<Counters *>(m->metrics_zone->data) : nullptr;
    if (g_counters != nullptr && ngx_worker < kWorkers) g_counters->queue[ngx_worker] = 0;  // a new worker starts empty
}

void count_signin(Way way) {
    if (!g_counters) return;
    add(g_counters->signins[static_cast<std::size_t>(way)]);
    add_over_time(mx::Series::SignIns);
}

void count_signin(signin::SignInMethod method) {
    switch (method) {
        case signin::SignInMethod::EmailToken: return count_signin(Way::Email);
        case signin::SignInMethod::Password: return count_signin(Way::Password);
        case signin::SignInMethod::Passkey: return count_signin(Way::Passkey);
        case signin::SignInMethod::Provider: return count_signin(Way::Provider);
    }
}

void count_failure(signin::Code code) {
    if (!g_counters) return;
    if (auto slot = mx::failure_slot(code)) {
        add(g_counters->failures[*slot]);
        add_over_time(mx::Series::Failures);
    }
}

void count_token(signin::Purpose purpose) {
    const auto i = static_cast<std::size_t>(purpose);
    if (g_counters && i >= 1 && i <= kPurposes) add(g_counters->tokens[i - 1]);
}

void count_delivery(Transport transport, DeliveryResult result) {
    if (!g_counters) return;
    add(g_counters->deliveries[static_cast<std::size_t>(transport)][static_cast<std::size_t>(result)]);
    if (result == DeliveryResult::Sent) add_over_time(mx::Series::Sent);
    if (result == DeliveryResult::Failed) add_over_time(mx::Series::NotDelivered);
}

void count_event(std::string_view type, EventResult result) {
    const auto t = signin::event_type_index(type);
    if (g_counters && t) add(g_counters->events[*t][static_cast<std::size_t>(result)]);
}

void count_event_step(EventStep step, std::size_t n) {
    if (g_counters && n != 0) add(g_counters->event_steps[static_cast<std::size_t>(step)], static_cast<ngx_atomic_int_t>(n));
}

void count_limited(Bucket bucket) {
    const auto i = static_cast<std::size_t>(bucket);
    if (g_counters && i >= 1 && i <= kBuckets) {
        add(g_counters->limited[i - 1]);
        add_over_time(mx::Series::RateLimited);
    }
}

void count_oidc(OidcCount what) {
    if (g_counters) add(g_counters->oidc[static_cast<std::size_t>(what)]);
}

void count_batch_replay() {
    if (g_counters) add(g_counters->batch_replays);
}

void count_read_batch(std::size_t size) {
    Counters *c = g_counters;
    if (c == nullptr) return;
    add(c->read_batch_sizes[mx::bucket_of(mx::kBatchSizeBounds, kBatchBounds, static_cast<double>(size))]);
    add(c->read_batch_reads, static_cast<ngx_atomic_int_t>(size));
}

void count_batch(std::size_t size, double seconds) {
    Counters *c = g_counters;
    if (c == nullptr) return;
    add(c->batch_sizes[mx::bucket_of(mx::kBatchSizeBounds, kBatchBounds, static_cast<double>(size))]);
    add(c->batch_jobs, static_cast<ngx_atomic_int_t>(size));
    add(c->commits[mx::bucket_of(mx::kCommitBounds, kCommitBounds, seconds)]);
    add(c->commit_micros, static_cast<ngx_atomic_int_t>(seconds * 1e6));
}

signin::metrics::Dashboard dashboard() {
    mx::Dashboard d;
    if (signin::Identity *id = identity()) {
        const signin::Store::Space space = id->store_space();
        d.store_used_bytes = space.used_bytes;
        d.store_map_bytes = space.map_bytes;
    }
    const auto now = static_cast<std::uint64_t>(ngx_time());
    d.at = static_cast<signin::Millis>(now) * 1000;
    const Counters *c = g_counters;
    if (c == nullptr) return d;
    d.metrics = true;
    d.signins = signin_samples(*c);
    d.failures = failure_samples(*c);
    d.rate_limited = limited_samples(*c);
    for (const auto &transport : c->deliveries) {
        d.emails_sent += transport[static_cast<std::size_t>(DeliveryResult::Sent)];
        d.emails_retried += transport[static_cast<std::size_t>(DeliveryResult::Retried)];
        d.emails_failed += transport[static_cast<std::size_t>(DeliveryResult::Failed)];
    }
    for (std::size_t s = 0; s < mx::kSeries; ++s) {
        d.minutes[s] = mx::slot_series(std::vector<std::uint64_t>(std::begin(c->minutes[s]), std::end(c->minutes[s])),
                                       static_cast<std::uint32_t>(now / 60));
        d.hours[s] = mx::slot_series(std::vector<std::uint64_t>(std::begin(c->hours[s]), std::end(c->hours[s])),
                                     static_cast<std::uint32_t>(now / 3600));
    }
    return d;
}

void set_queue_depth(std::size_t waiting) {
    if (g_counters && ngx_worker < kWorkers) g_counters->queue[ngx_worker] = waiting;
}

}  // namespace signin_ngx
