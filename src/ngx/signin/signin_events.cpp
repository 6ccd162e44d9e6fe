// signin_events (signin_events.h): the sending of the engine's events to the application.
//
// The events a worker's write batch writes are held by that worker as they are written
// (signin::FreshEvents, where no other writer of an event runs beside the batch: LMDB's one write
// at a time, PostgreSQL's batch holding the events' lock) and handed to its sender once
// the batch committed: no claim. The others (a user's events while an earlier one waits, what a
// dead worker held, retries) are claimed: a worker looks for events to send (Events::any_due, a
// read; in the thread pool's claim for a store whose reads may block), claims them in a write
// (each held for signin_delivery_timeout, so that a worker that dies meanwhile leaves them to
// another). Each is posted to the signin_events location with its webhook-* headers, one event
// per user at a time, so a user's events arrive in order. What became of a send is written back
// in the thread pool: a 2xx deletes the event, in the worker's next write batch (or in a write of
// its own when none comes within kDeleteAlone); anything else sets its next try (the engine's
// backoff), or drops it after signin_events_retries, and gives back the user's later events this
// worker held.
#include "signin_events.h"

#include <deque>
#include <fstream>
#include <iterator>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "signin_conf.h"
#include "signin_delivery.h"
#include "signin_directives.h"
#include "signin_jobs.h"
#include "signin_request.h"
#include "signin_smtp.h"

namespace signin_ngx {
namespace {

constexpr std::size_t kMaxSending = 32;  // sends in flight per worker
constexpr ngx_msec_t kCheckMemory = 200, kCheckDatabase = 1000;  // how often a worker looks
constexpr ngx_msec_t kReapAgain = 100;
constexpr std::size_t kMaxSecretFile = 4096;
// How long the events held as written and delivered wait for the worker's next write batch to
// delete them before a write of their own does (claimed ones do not wait: g_sent_claimed). It
// bounds how long a delivered event stays in the store, which another worker sends again if this
// one dies first (at least once: the application sees its webhook-id again). Under load a batch
// commits every few milliseconds, so the deletions ride one long before; with little traffic it
// is at most ten writes a second per worker that no batch would have carried.
constexpr ngx_msec_t kDeleteAlone = 100;
// Events written held that a worker keeps in memory to send at most (their bodies: a few hundred
// bytes each, so a few MiB). It bounds the worker's memory when the application takes events
// more slowly than the sign-ins write them; beyond it the events wait out their hold in the store
// and the claims send them. 4,096 is a fraction of a second of the busiest flood measured (two
// events an exchange, some 10,000 exchanges a second per worker), so a burst rides through it and
// only a backlog that lasts is left to the claims.
constexpr std::size_t kMaxFresh = 4096;

signin::Identity &id() { return *identity(); }

struct EventSend : OwnPost {
    signin::EventItem item;
    bool fresh = false;  // held as written (FreshEvents), not claimed
};

std::list<std::unique_ptr<EventSend>> g_sending;
bool g_claiming = false;
ngx_event_t g_check;
ngx_connection_t g_check_dummy;

ngx_msec_t check_every() { return reads_block() ? kCheckDatabase : kCheckMemory; }

// Looks again soon: the next event of a user whose event just ended may go.
void check_soon() {
    if (ngx_exiting || ngx_quit || ngx_terminate || g_check.handler == nullptr) return;
    if (g_check.timer_set) ngx_del_timer(&g_check);
    ngx_add_timer(&g_check, 1);
}

void forget(EventSend *s) {
    if (s->ev.timer_set) ngx_del_timer(&s->ev);
    if (s->ev.posted) {  // nginx's macro is two statements: braces
        ngx_delete_posted_event(&s->ev);
    }
    for (auto it = g_sending.begin(); it != g_sending.end(); ++it) {
        if (it->get() == s) {
            g_sending.erase(it);
            return;
        }
    }
}

// The events delivered, not deleted yet: the worker's next write batch deletes them (EventRider),
// or a write of their own once none came within kDeleteAlone.
std::vector<signin::EventItem> g_sent;
// Of g_sent, the claimed ones: their users' next events (claimed too) wait in the store until these
// are deleted, so they are deleted at once, as a write of their own, not after kDeleteAlone: a wait
// for a batch would hold every claimed user's next event back that long (on PostgreSQL, where all
// are claimed, it capped the sends at 32 per worker a tenth of a second: about 600 a second here).
std::size_t g_sent_claimed = 0;
bool g_recording_sent = false;
ngx_event_t g_delete;
ngx_connection_t g_delete_dummy;
void record_sent();
void delete_soon();

class SentJob final : public BackgroundJob {
public:
    explicit SentJob(std::vector<signin::EventItem> items) : BackgroundJob(Stage::Write), items_(std::move(items)) {}

private:
    signin::Status write() override { return id().events().sent(items_); }
    void done(const signin::Error *failure) override {
        g_recording_sent = false;
        if (failure != nullptr) {
            ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                          "signin: could not record %uz sent events (%s); they are sent again after "
                          "signin_delivery_timeout",
                          items_.size(), failure->message.c_str());
        } else {
            count_event_step(EventStep::DeletedAlone, items_.size());
        }
        if (g_sent_claimed > 0) {
            record_sent();
        } else {
            delete_soon();
        }
        check_soon();
    }
    std::vector<signin::EventItem> items_;
};

void record_sent() {
    if (g_recording_sent || g_sent.empty()) return;
    std::vector<signin::EventItem> items;
    items.swap(g_sent);
    g_sent_claimed = 0;
    const std::size_t n = items.size();
    g_recording_sent = start_background_job(std::make_unique<SentJob>(std::move(items))) == NGX_OK;
    if (!g_recording_sent) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "signin: could not record %uz sent events; they are sent again after signin_delivery_timeout", n);
    }
}

// No write batch came for the events delivered: they are deleted by a write of their own.
void delete_alone(ngx_event_t *) { record_sent(); }

void delete_soon() {
    if (!g_sent.empty() && !g_delete.timer_set && g_delete.handler != nullptr) ngx_add_timer(&g_delete, kDeleteAlone);
}

class FailedJob final : public BackgroundJob {
public:
    // later: the user's events this worker held behind it, given back
    FailedJob(signin::EventItem item, std::string error, std::vector<signin::EventItem> later)
        : BackgroundJob(Stage::Write), item_(std::move(item)), error_(std::move(error)), later_(std::move(later)) {}

private:
    signin::Status write() override {
        auto r = id().events().failed(item_, error_);
        if (!r) return r.error();
        retry_ = r.value();
        return id().events().release(later_);
    }
    void done(const signin::Error *failure) override {
        if (failure != nullptr) {
            ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                          "signin: could not record a failed event (%s); it is sent again after signin_delivery_timeout",
                          failure->message.c_str());
            return;
        }
        if (retry_ == signin::EventRetry::Later) count_event(item_.type, EventResult::Retried);
        if (retry_ == signin::EventRetry::Dropped) {
            count_event(item_.type, EventResult::Dropped);
            ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                          "signin: event %s (%s) dropped after its last try (signin_events_retries): %s",
                          item_.id.c_str(), item_.type.c_str(), error_.c_str());
            check_soon();
        }
    }
    signin::EventItem item_;
    std::string error_;
    std::vector<signin::EventItem> later_;
    signin::EventRetry retry_ = signin::EventRetry::Lost;
};

// The events written held (FreshEvents) that this worker has not sent yet, by user, in order
// (all of one batch: a later batch finds them waiting and leaves the user's next to the claims); a
// user is here while one of these events is being sent or waits, and in g_turns while its next
// may be sent. One not started within half the hold is left to the claims: after the hold another
// worker may have sent it, and the user's later events.
struct FreshUser {
    std::deque<signin::EventItem> items;
    ngx_msec_t since = 0;
};
std::unordered_map<std::string, FreshUser> g_fresh;
std::deque<std::string> g_turns;
std::size_t g_fresh_waiting = 0;
ngx_msec_t g_fresh_within = 0;

// After a send of an event held as written: on a 2xx the user's next may go; otherwise they are
// given back with the failure (FailedJob).
std::vector<signin::EventItem> fresh_ended(const std::string &user_id, bool ok) {
    std::vector<signin::EventItem> later;
    auto it = g_fresh.find(user_id);
    if (it == g_fresh.end()) return later;
    auto &items = it->second.items;
    if (ok && !items.empty()) {
        g_turns.push_back(user_id);
        return later;
    }
    g_fresh_waiting -= items.size();
    later.assign(std::make_move_iterator(items.begin()), std::make_move_iterator(items.end()));
    g_fresh.erase(it);
    return later;
}

void record(signin::EventItem item, bool ok, std::string error, bool fresh) {
    std::vector<signin::EventItem> later = fresh ? fresh_ended(item.user_id, ok) : std::vector<signin::EventItem>{};
    if (ok) {
        count_event(item.type, EventResult::Sent);
        g_sent.push_back(std::move(item));
        if (fresh) {
            delete_soon();
        } else {
            ++g_sent_claimed;
            record_sent();
        }
        return;
    }
    if (start_background_job(std::make_unique<FailedJob>(std::move(item), std::move(error), std::move(later))) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "signin: could not record an event's send; it is sent again after signin_delivery_timeout");
    }
}

void send_fresh();

void on_end(ngx_event_t *ev) {
    auto *s = static_cast<EventSend *>(static_cast<ngx_connection_t *>(ev->data)->data);
    if (!reap_own_post(s, kReapAgain)) return;
    const bool ok = s->ok;
    std::string error = ok ? std::string()
                       : s->status == 0 ? std::string("the events location gave no answer")
                                        : "the events location answered " + std::to_string(s->status);
    signin::EventItem item = std::move(s->item);
    const bool fresh = s->fresh;
    forget(s);
    record(std::move(item), ok, std::move(error), fresh);
    send_fresh();
}

void send(signin::EventItem item, bool fresh) {
    MainConf *m = cycle_main_conf(const_cast<ngx_cycle_t *>(ngx_cycle));
    auto owned = std::make_unique<EventSend>();
    EventSend *s = owned.get();
    s->item = std::move(item);
    s->fresh = fresh;
    s->dummy.fd = -1;
    s->dummy.data = s;
    s->ev.data = &s->dummy;
    s->ev.log = ngx_cycle->log;
    s->ev.handler = on_end;
    s->what = "events";
    s->log_action = "sending an event to the application (signin_events)";
    g_sending.push_back(std::move(owned));
    const bool started = m != nullptr && start_own_post(s, m->events_ctx, m->events_uri, [&](ngx_http_request_t *sr, RequestCtx *sctx) {
        const std::int64_t now = static_cast<std::int64_t>(ngx_time());
        const std::string signature = id().events().sign(s->item, now);
        sctx->delivery_json = s->item.body;
        return add_subrequest_header(sr, "webhook-id", s->item.id) != nullptr &&
               add_subrequest_header(sr, "webhook-timestamp", std::to_string(now)) != nullptr &&
               add_subrequest_header(sr, "webhook-signature", signature) != nullptr &&
               give_subrequest_body(sr, sctx->delivery_json, "application/json") == NGX_OK;
    });
    if (!started) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0, "signin: could not start an events subrequest");
        signin::EventItem back = std::move(s->item);
        forget(s);
        record(std::move(back), false, "could not start the events subrequest", fresh);
    }
}

// Sends the events held as written whose turn it is, as far as the sends in flight allow.
void send_fresh() {
    while (g_sending.size() < kMaxSending && !g_turns.empty()) {
        auto it = g_fresh.find(g_turns.front());
        g_turns.pop_front();
        if (it == g_fresh.end()) continue;
        auto &items = it->second.items;
        if (items.empty() || ngx_current_msec - it->second.since >= g_fresh_within) {  // left to the claims
            g_fresh_waiting -= items.size();
            g_fresh.erase(it);
            continue;
        }
        signin::EventItem item = std::move(items.front());
        items.pop_front();
        --g_fresh_waiting;
        send(std::move(item), true);
    }
}

// A committed batch's events held as written, to send. One this worker cannot keep (kMaxFresh)
// waits out its hold in the store, and so do its user's later ones.
void take_fresh(std::vector<signin::EventItem> items) {
    std::unordered_set<std::string> left;
    for (auto &item : items) {
        if (g_fresh_waiting >= kMaxFresh || left.count(item.user_id) != 0) {
            left.insert(item.user_id);
            continue;
        }
        auto [it, added] = g_fresh.try_emplace(item.user_id);
        if (added) it->second.since = ngx_current_msec;
        it->second.items.push_back(std::move(item));
        ++g_fresh_waiting;
        count_event_step(EventStep::HeldAsWritten, 1);
        if (added) g_turns.push_back(it->first);
    }
    send_fresh();
}

// What rides each write batch: the events delivered, deleted in its transaction, and the events
// it writes, held for this worker's sender (FreshEvents).
class EventRider final : public BatchRider {
public:
    EventRider() {
        deleting_.swap(g_sent);
        g_sent_claimed = 0;
        if (g_delete.timer_set) ngx_del_timer(&g_delete);
    }

private:
    void begin() override {
        if (identity() != nullptr) fresh_.emplace(id().events());
    }
    void run() override {
        if (fresh_) fresh_->restart();
        deleted_ = deleting_.empty() || (identity() != nullptr && id().events().sent(deleting_));
    }
    void end(bool committed) override {
        if (committed && fresh_) written_ = fresh_->take();
        fresh_.reset();
    }
    void done(bool committed) override {
        if (!committed || !deleted_) {  // deleted later
            for (auto &item : deleting_) g_sent.push_back(std::move(item));
            delete_soon();
        } else if (!deleting_.empty()) {
            count_event_step(EventStep::DeletedWithBatch, deleting_.size());
            check_soon();  // the next event of their users may go
        }
        if (!written_.empty()) take_fresh(std::move(written_));
    }
    std::vector<signin::EventItem> deleting_, written_;
    std::optional<signin::FreshEvents> fresh_;
    bool deleted_ = false;
};

std::unique_ptr<BatchRider> make_rider() { return std::make_unique<EventRider>(); }

// The claimed deliveries, on the event loop.
void take_claimed(const signin::Error *failure, std::vector<signin::EventItem> items) {
    g_claiming = false;
    if (failure != nullptr) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0, "signin: the events check failed: %s", failure->message.c_str());
    }
    count_event_step(EventStep::Claimed, items.size());
    for (auto &item : items) send(std::move(item), false);
}

void check_events(ngx_event_t *ev) {
    if (ngx_exiting || ngx_quit || ngx_terminate || identity() == nullptr) return;
    send_fresh();
    if (!g_claiming && g_sending.size() < kMaxSending) {
        auto due = reads_block() ? signin::Result<bool>(true) : id().events().any_due();
        if (due && due.value()) {
            auto claim = [](std::size_t budget) { return id().events().claim_due(budget); };
            g_claiming = guard(
                [&] {
                    return start_background_job(std::make_unique<ClaimJob<signin::EventItem>>(
                               kMaxSending - g_sending.size(), claim, take_claimed)) == NGX_OK;
                },
                [](const std::exception *) { return false; });
        }
    }
    ngx_add_timer(ev, check_every());
}

// Tells signin-admin which types this server writes (from the first worker only).
class PublishJob final : public BackgroundJob {
public:
    PublishJob() : BackgroundJob(Stage::Write) {}

private:
    signin::Status write() override { return id().publish_events(); }
    void done(const signin::Error *failure) override {
        if (failure != nullptr) {
            ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                          "signin: could not tell the store which events are written (%s); signin-admin's changes "
                          "may not be events until the next start",
                          failure->message.c_str());
        }
    }
};

}  // namespace

char *set_events_types(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    if (m->events_types != NGX_CONF_UNSET_PTR) return const_cast<char *>("is duplicate");
    m->events_types = ngx_array_create(cf->pool, cf->args->nelts, sizeof(ngx_str_t));
    if (m->events_types == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
    auto *words = static_cast<ngx_str_t *>(cf->args->elts);
    for (ngx_uint_t i = 1; i < cf->args->nelts; i++) {
        auto *to = static_cast<ngx_str_t *>(ngx_array_push(m->events_types));
        if (to == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
        *to = words[i];
    }
    return NGX_CONF_OK;
}

static ngx_conf_num_bounds_t events_retries_bounds = {ngx_conf_check_num_bounds, 0, 100};

Directives event_directives() {
    static ngx_command_t table[] = {
        {ngx_string("signin_events"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, noted<ngx_conf_set_str_slot>,
         NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, events_uri), nullptr},
        {ngx_string("signin_events_secret_file"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, noted<ngx_conf_set_str_slot>,
         NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, events_secret_path), nullptr},
        {ngx_string("signin_events_retries"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_conf_set_num_slot,
         NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, events_retries), &events_retries_bounds},
        {ngx_string("signin_events_types"), NGX_HTTP_MAIN_CONF | NGX_CONF_1MORE, noted<set_events_types>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_new_signin_notice"), NGX_HTTP_MAIN_CONF | NGX_CONF_FLAG,
         policy_flag<&signin::Policy::new_signin_notice>, NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        // its checks are find_registration_check's (signin_registration.cpp)
        {ngx_string("signin_registration_check"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, noted<ngx_conf_set_str_slot>,
         NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, registration_check_uri), nullptr},
    };
    return table;
}

ngx_int_t check_events_conf(ngx_conf_t *cf, MainConf *m) {
    if (m->policy->new_signin_notice && m->delivery_uri.len == 0 && !smtp_written(cf)) {
        log_at(cf, NGX_LOG_EMERG, m, "signin_new_signin_notice",
               "signin_new_signin_notice needs a way to send email: \"signin_delivery\" or \"signin_smtp\"");
        return NGX_ERROR;
    }
    if (m->events_retries == NGX_CONF_UNSET_UINT) m->events_retries = 16;
    if (m->events_types == NGX_CONF_UNSET_PTR) m->events_types = nullptr;
    if (m->events_uri.len == 0) {
        if (m->events_secret_path.len || m->events_types != nullptr) {
            log_at(cf, NGX_LOG_EMERG, m, m->events_secret_path.len ? "signin_events_secret_file" : "signin_events_types",
                   "signin_events_secret_file and signin_events_types need \"signin_events\"");
            return NGX_ERROR;
        }
        return NGX_OK;
    }
    if (m->events_uri.data[0] != '/') {
        log_at(cf, NGX_LOG_EMERG, m, "signin_events", "signin_events must name a location (a URI starting with \"/\")");
        return NGX_ERROR;
    }
    if (m->events_secret_path.len == 0) {
        log_at(cf, NGX_LOG_EMERG, m, "signin_events",
               "signin_events needs \"signin_events_secret_file\": the whsec_ secret the events are signed with");
        return NGX_ERROR;
    }
    if (ngx_conf_full_name(cf->cycle, &m->events_secret_path, 1) != NGX_OK) return NGX_ERROR;
    const std::string path(sv(m->events_secret_path));
    std::ifstream in(path, std::ios::binary);
    std::string text;
    if (in) text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (!in && !in.eof()) {
        log_at(cf, NGX_LOG_EMERG, m, "signin_events_secret_file",
               "signin_events_secret_file \"" + path + "\" cannot be read");
        return NGX_ERROR;
    }
    std::string why;
    auto key = text.size() <= kMaxSecretFile ? signin::parse_webhook_secret(text, &why) : std::nullopt;
    ngx_explicit_memzero(text.data(), text.size());
    if (!key) {
        log_at(cf, NGX_LOG_EMERG, m, "signin_events_secret_file",
               "signin_events_secret_file \"" + path + "\" does not hold a Standard Webhooks secret (whsec_ and base64 of 24 to 64 bytes): " +
                   (why.empty() ? std::string("it is too long") : why));
        return NGX_ERROR;
    }
    m->events_key = pool_object<signin::Secret>(cf->pool);
    if (m->events_key == nullptr) return NGX_ERROR;
    *m->events_key = std::move(*key);
    if (m->events_types != nullptr) {
        auto *names = static_cast<ngx_str_t *>(m->events_types->elts);
        for (ngx_uint_t i = 0; i < m->events_types->nelts; i++) {
            if (!signin::event_type_index(sv(names[i]))) {
                std::string known;
                for (auto t : signin::kEventTypes) known += (known.empty() ? "" : ", ") + std::string(t);
                log_at(cf, NGX_LOG_EMERG, m, "signin_events_types",
                       "signin_events_types: \"" + std::string(sv(names[i])) + "\" is no event type (" + known + ")");
                return NGX_ERROR;
            }
        }
    }
    return NGX_OK;
}

ngx_int_t find_events_server(ngx_conf_t *cf, MainConf *m) {
    if (m->events_uri.len == 0) return NGX_OK;
    const std::string uri(sv(m->events_uri));
    ngx_http_core_loc_conf_t *loc = find_location(cf, m->events_uri, &m->events_ctx);
    if (loc == nullptr) {
        log_at(cf, NGX_LOG_EMERG, m, "signin_events",
               "signin_events \"" + uri + "\" matches no exact or prefix location in any server: add \"location = " + uri +
                   " { internal; proxy_pass ...; }\"");
        return NGX_ERROR;
    }
    if (loc->internal != 1) {
        // anyone could post events of their own making to the application through it
        log_at(cf, NGX_LOG_EMERG, m, "signin_events",
               "the signin_events location \"" + uri + "\" is not \"internal\": add \"internal;\" to it");
        return NGX_ERROR;
    }
    return NGX_OK;
}

void start_events(ngx_cycle_t *cycle, signin::Identity &identity) {
    MainConf *m = cycle_main_conf(cycle);
    if (m == nullptr) return;
    if (m->events_uri.len != 0 && m->events_key != nullptr) {
        signin::EventSettings s;
        s.key = *m->events_key;
        s.retries = static_cast<unsigned>(m->events_retries);
        s.hold = m->outbox->hold;
        g_fresh_within = static_cast<ngx_msec_t>(s.hold / 2);
        if (m->events_types != nullptr) {
            auto *names = static_cast<ngx_str_t *>(m->events_types->elts);
            for (ngx_uint_t i = 0; i < m->events_types->nelts; i++) s.types.emplace_back(sv(names[i]));
        }
        identity.use_events(s);
        g_check_dummy.fd = -1;
        g_check.handler = check_events;
        g_check.log = cycle->log;
        g_check.data = &g_check_dummy;
        g_check.cancelable = 1;  // a worker that is shutting down does not wait for the next look
        ngx_add_timer(&g_check, check_every() + static_cast<ngx_msec_t>(ngx_worker) * 37 % check_every());
        g_delete_dummy.fd = -1;
        g_delete.handler = delete_alone;
        g_delete.log = cycle->log;
        g_delete.data = &g_delete_dummy;  // not cancelable: a worker that stops deletes what it delivered
        set_batch_rider(make_rider);
    }
    if (ngx_worker == 0) {
        if (start_background_job(std::make_unique<PublishJob>()) != NGX_OK) {
            ngx_log_error(NGX_LOG_WARN, cycle->log, 0, "signin: could not queue the publication of the event types");
        }
    }
}

}  // namespace signin_ngx
