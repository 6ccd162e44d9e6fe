// signin_events (signin_events.h): the sending of the engine's events to the application.
//
// A worker looks for events to send (Events::any_due, a read; in the thread pool's claim for a
// store whose reads may block), claims them in a write (each held for signin_delivery_timeout, so
// that a worker that dies meanwhile leaves them to another), and posts each to the signin_events
// location with its webhook-* headers. The engine hands out at most one event per user at a
// time, so a user's events arrive in order. What became of a send is written back in the thread
// pool: a 2xx deletes the event (the sends that end while one such write runs are deleted together
// by the next); anything else sets its next try (the engine's backoff), or drops it after
// signin_events_retries.
#include "signin_events.h"

#include <fstream>
#include <iterator>
#include <list>
#include <memory>
#include <string>
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

signin::Identity &id() { return *identity(); }

struct EventSend : OwnPost {
    signin::EventItem item;
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

// The events sent while the last record of sends was being written: recorded together by the
// next one, one write however many ended meanwhile.
std::vector<signin::EventItem> g_sent;
bool g_recording_sent = false;
void record_sent();

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
        }
        record_sent();
        check_soon();
    }
    std::vector<signin::EventItem> items_;
};

void record_sent() {
    if (g_recording_sent || g_sent.empty()) return;
    std::vector<signin::EventItem> items;
    items.swap(g_sent);
    const std::size_t n = items.size();
    g_recording_sent = start_background_job(std::make_unique<SentJob>(std::move(items))) == NGX_OK;
    if (!g_recording_sent) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "signin: could not record %uz sent events; they are sent again after signin_delivery_timeout", n);
    }
}

class FailedJob final : public BackgroundJob {
public:
    FailedJob(signin::EventItem item, std::string error)
        : BackgroundJob(Stage::Write), item_(std::move(item)), error_(std::move(error)) {}

private:
    signin::Status write() override {
        auto r = id().events().failed(item_, error_);
        if (!r) return r.error();
        retry_ = r.value();
        return signin::ok_status();
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
    signin::EventRetry retry_ = signin::EventRetry::Lost;
};

void record(signin::EventItem item, bool ok, std::string error) {
    if (ok) {
        count_event(item.type, EventResult::Sent);
        g_sent.push_back(std::move(item));
        record_sent();
        return;
    }
    if (start_background_job(std::make_unique<FailedJob>(std::move(item), std::move(error))) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "signin: could not record an event's send; it is sent again after signin_delivery_timeout");
    }
}

void on_end(ngx_event_t *ev) {
    auto *s = static_cast<EventSend *>(static_cast<ngx_connection_t *>(ev->data)->data);
    if (!reap_own_post(s, kReapAgain)) return;
    const bool ok = s->ok;
    std::string error = ok ? std::string()
                       : s->status == 0 ? std::string("the events location gave no answer")
                                        : "the events location answered " + std::to_string(s->status);
    signin::EventItem item = std::move(s->item);
    forget(s);
    record(std::move(item), ok, std::move(error));
}

void send(signin::EventItem item) {
    MainConf *m = cycle_main_conf(const_cast<ngx_cycle_t *>(ngx_cycle));
    auto owned = std::make_unique<EventSend>();
    EventSend *s = owned.get();
    s->item = std::move(item);
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
        record(std::move(back), false, "could not start the events subrequest");
    }
}

// The claimed deliveries, on the event loop.
void take_claimed(const signin::Error *failure, std::vector<signin::EventItem> items) {
    g_claiming = false;
    if (failure != nullptr) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0, "signin: the events check failed: %s", failure->message.c_str());
    }
    for (auto &item : items) send(std::move(item));
}

void check_events(ngx_event_t *ev) {
    if (ngx_exiting || ngx_quit || ngx_terminate || identity() == nullptr) return;
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
    }
    if (ngx_worker == 0) {
        if (start_background_job(std::make_unique<PublishJob>()) != NGX_OK) {
            ngx_log_error(NGX_LOG_WARN, cycle->log, 0, "signin: could not queue the publication of the event types");
        }
    }
}

}  // namespace signin_ngx
