// Email over SMTP: the worker's queue and its batches in the thread pool (signin_smtp.h).
#include "signin_smtp.h"
#include "signin_conf.h"
#include "signin_delivery.h"

#include <atomic>
#include <chrono>
#include <algorithm>
#include <deque>
#include <memory>
#include <new>
#include <vector>

namespace signin_ngx {
namespace {

namespace smtp = signin::smtp;

constexpr std::size_t kBatch = 16;          // emails per batch at most
// Batches in the thread pool at once, each over a connection of its own: a relay that takes some
// milliseconds per email (its own disk, a filter) is kept busy on the others while one waits for a
// reply. Three: against exim4 on loopback, two sent half as many emails a second and four took the
// last thread of a four-thread pool, so that sign-ins waited behind emails for their store writes.
constexpr std::size_t kMaxBatches = 3;
constexpr std::size_t kMaxQueued = 4096;    // beyond: left in the outbox, claimed after their hold
constexpr ngx_msec_t kSendAfter = 2, kSendSpread = 21;  // a batch starts 2-22 ms after the answer
constexpr ngx_msec_t kWatchEvery = 200;     // while a batch runs or a connection is kept
// A connection no batch has used for this long is closed (QUIT): a burst of sign-ins goes over
// the connections it opened, and a quiet site holds none open at the relay.
constexpr ngx_msec_t kKeepIdle = 5000;

std::deque<signin::OutboxItem> g_queue;
std::size_t g_batches = 0;      // batches in the thread pool
std::size_t g_sending = 0;      // their emails
std::size_t g_closing = 0;      // kept connections being closed in the thread pool
std::atomic<bool> g_cancel{false};

// A session between two batches: its connection, while the relay keeps it open, carries the next
// batch without a new connection, EHLO, STARTTLS and login. Only the event loop touches the list;
// a session is in one batch or one close at a time, so one thread uses it at a time.
struct Kept {
    std::unique_ptr<smtp::Session> session;
    const smtp::Settings *settings = nullptr;  // the cycle's, which the session was made for
    ngx_msec_t used = 0;
};
std::vector<Kept> g_kept;  // the most recently used last

// The batches' start (a timer, so that what this event queues goes with it) and the watch, which
// runs while a batch is in the pool or a connection is kept: it tells a batch to stop when the
// worker does, and closes the connections that waited long enough (all of them when the worker
// stops). The watch is not cancelable: a worker that shuts down waits for its batches (stopped
// within about a second), records them, and says QUIT to the relay first.
ngx_event_t g_start, g_watch;
ngx_connection_t g_start_dummy, g_watch_dummy;

struct Batch {
    ngx_pool_t *pool = nullptr;
    ngx_thread_task_t *task = nullptr;
    const smtp::Settings *settings = nullptr;
    std::unique_ptr<smtp::Session> session;  // a kept one, or made in the thread
    std::vector<signin::OutboxItem> items;
    std::vector<smtp::Message> messages;
    std::vector<smtp::SendResult> results;
};

struct Closing {
    ngx_pool_t *pool = nullptr;
    std::unique_ptr<smtp::Session> session;
};

bool stopping() { return ngx_exiting || ngx_quit || ngx_terminate; }

void start_batches();
void close_idle(bool all);

void on_start(ngx_event_t *) {
    guard_log(ngx_cycle->log, NGX_LOG_ALERT, "signin: starting an SMTP batch", [] { start_batches(); });
}

void start_after(ngx_msec_t delay) {
    g_start_dummy.fd = -1;
    g_start.data = &g_start_dummy;
    g_start.handler = on_start;
    g_start.log = ngx_cycle->log;
    g_start.cancelable = 1;
    ngx_add_timer(&g_start, delay);
}

void schedule() {
    if (g_batches >= kMaxBatches || g_queue.empty() || g_start.timer_set) return;
    if (stopping()) return;  // the outbox keeps them for the next worker
    // Not at once: the visitor's answer goes first, and no answer's timing tells that a send
    // followed it.
    start_after(kSendAfter + static_cast<ngx_msec_t>(ngx_random()) % kSendSpread);
}

void watch(ngx_event_t *ev) {
    if (stopping()) g_cancel.store(true);
    guard_log(ngx_cycle->log, NGX_LOG_ALERT, "signin: closing SMTP connections", [] { close_idle(stopping()); });
    if (g_batches != 0 || g_closing != 0 || !g_kept.empty()) ngx_add_timer(ev, kWatchEvery);
}

void keep_watching() {
    if (g_watch.timer_set) return;
    g_watch_dummy.fd = -1;
    g_watch.data = &g_watch_dummy;
    g_watch.handler = watch;
    g_watch.log = ngx_cycle->log;
    ngx_add_timer(&g_watch, kWatchEvery);
}

// ---------------------------------------------------------------- kept connections

// In a thread of the pool: QUIT, and the connection closed (the relay may take a moment to answer).
void close_thread(void *data, ngx_log_t *) { static_cast<Closing *>(data)->session.reset(); }

void close_done(ngx_event_t *ev) {
    auto *c = static_cast<Closing *>(ev->data);
    ngx_pool_t *pool = c->pool;
    c->~Closing();
    ngx_destroy_pool(pool);
    --g_closing;
}

void close_session(std::unique_ptr<smtp::Session> session, const smtp::Settings *settings) {
    if (!session) return;
    MainConf *m = cycle_main_conf(const_cast<ngx_cycle_t *>(ngx_cycle));
    ngx_pool_t *pool = m != nullptr ? ngx_create_pool(512, ngx_cycle->log) : nullptr;
    ngx_thread_task_t *task = pool != nullptr ? ngx_thread_task_alloc(pool, sizeof(Closing)) : nullptr;
    if (task != nullptr) {
        auto *c = new (task->ctx) Closing();
        c->pool = pool;
        c->session = std::move(session);
        task->handler = close_thread;
        task->event.handler = close_done;
        task->event.data = c;
        task->event.log = ngx_cycle->log;
        if (ngx_thread_task_post(m->thread_pool, task) == NGX_OK) {
            ++g_closing;
            keep_watching();
            return;
        }
        session = std::move(c->session);
        c->~Closing();
    }
    if (pool != nullptr) ngx_destroy_pool(pool);
    if (stopping()) {
        // The worker is ending and its sockets close with it; closing here would wait for the
        // relay's answer to QUIT on the event loop.
        (void)session.release();
        return;
    }
    // no memory now: kept a while longer, and the watch tries again
    g_kept.insert(g_kept.begin(), Kept{std::move(session), settings, ngx_current_msec});
    keep_watching();
}

void close_idle(bool all) {
    while (!g_kept.empty() && (all || ngx_current_msec - g_kept.front().used >= kKeepIdle)) {
        Kept k = std::move(g_kept.front());
        g_kept.erase(g_kept.begin());
        close_session(std::move(k.session), k.settings);
    }
}

// The most recently used session kept for these settings, or none.
std::unique_ptr<smtp::Session> take_session(const smtp::Settings *settings) {
    while (!g_kept.empty()) {
        Kept k = std::move(g_kept.back());
        g_kept.pop_back();
        if (k.settings == settings) return std::move(k.session);
        close_session(std::move(k.session), k.settings);
    }
    return nullptr;
}

void keep_session(std::unique_ptr<smtp::Session> session, const smtp::Settings *settings) {
    if (!session) return;
    if (stopping() || g_cancel.load()) {
        close_session(std::move(session), settings);
        return;
    }
    g_kept.push_back(Kept{std::move(session), settings, ngx_current_msec});
    keep_watching();
}

// ---------------------------------------------------------------- batches

// In a thread of the pool: the whole batch, over the kept connection or a new one.
void send_thread(void *data, ngx_log_t *) {
    auto *b = static_cast<Batch *>(data);
    try {
        const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
        if (!b->session) b->session = std::make_unique<smtp::Session>(*b->settings, &g_cancel);
        b->results = smtp::send_batch(*b->session, b->messages, static_cast<signin::Millis>(now));
    } catch (const std::exception &e) {
        b->results.clear();
        smtp::SendResult r;
        r.error = std::string("the send failed: ") + e.what();
        r.relay_failure = true;
        b->results.assign(b->messages.size(), r);
    } catch (...) {
        b->results.assign(b->messages.size(), smtp::SendResult{smtp::Outcome::Retry, 0, "the send failed", true});
    }
}

void log_failure(const signin::OutboxItem &item, const smtp::SendResult &r, const char *then) {
    const std::string purpose(signin::purpose_tag(item.delivery.purpose));
    ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0, "signin: smtp: an email (%s, try %uD) was not sent: reply %d, %s; %s",
                  purpose.c_str(), item.attempts, r.reply,
                  r.error.empty() ? "no reason given" : r.error.c_str(), then);
}

// Back on the event loop: each email's end goes to the outbox.
void apply(Batch *b) {
    for (std::size_t i = 0; i < b->items.size(); i++) {
        smtp::SendResult r;
        if (i < b->results.size()) {
            r = b->results[i];
        } else {
            r.error = "no result";
        }
        signin::OutboxItem &item = b->items[i];
        switch (r.outcome) {
            case smtp::Outcome::Sent:
                record_send(std::move(item), Transport::Smtp, SendEnd::Sent);
                break;
            case smtp::Outcome::Retry:
                log_failure(item, r, "it is tried again");
                record_send(std::move(item), Transport::Smtp, SendEnd::Retry,
                            r.error.empty() ? "smtp " + std::to_string(r.reply) : r.error);
                break;
            case smtp::Outcome::Permanent:
                log_failure(item, r, "refused for good: its code is cancelled");
                record_send(std::move(item), Transport::Smtp, SendEnd::Refused, "smtp " + std::to_string(r.reply));
                break;
        }
    }
}

void free_batch(Batch *b) {
    ngx_pool_t *pool = b->pool;
    b->~Batch();
    ngx_destroy_pool(pool);
}

void batch_done(ngx_event_t *ev) {
    auto *b = static_cast<Batch *>(ev->data);
    --g_batches;
    g_sending -= b->items.size();
    guard_log(ngx_cycle->log, NGX_LOG_ALERT, "signin: recording an SMTP batch", [b] { apply(b); });
    keep_session(std::move(b->session), b->settings);
    free_batch(b);
    // what waited goes at once: this is no visitor's answer
    guard_log(ngx_cycle->log, NGX_LOG_ALERT, "signin: starting an SMTP batch", [] { start_batches(); });
}

// One batch of what is waiting, as one task of signin_thread_pool; false when none could start.
bool start_batch() {
    auto *cycle = const_cast<ngx_cycle_t *>(ngx_cycle);
    MainConf *m = cycle_main_conf(cycle);
    const smtp::Settings *settings = smtp_settings(cycle);
    signin::Identity *id = identity();
    if (m == nullptr || settings == nullptr || id == nullptr) return false;
    ngx_pool_t *pool = ngx_create_pool(512, ngx_cycle->log);
    ngx_thread_task_t *task = pool != nullptr ? ngx_thread_task_alloc(pool, sizeof(Batch)) : nullptr;
    if (task == nullptr) {
        if (pool != nullptr) ngx_destroy_pool(pool);
        if (!g_start.timer_set) start_after(1000);  // no memory now: the queue waits a second
        return false;
    }
    auto *b = new (task->ctx) Batch();
    b->pool = pool;
    b->task = task;
    b->settings = settings;
    task->handler = send_thread;
    task->event.handler = batch_done;
    task->event.data = b;
    task->event.log = ngx_cycle->log;
    // what waits is shared among the batches that can start, so that each connection takes a part
    const std::size_t free = kMaxBatches - g_batches;
    const std::size_t take = std::min(kBatch, (g_queue.size() + free - 1) / free);
    while (!g_queue.empty() && b->items.size() < take) {
        b->items.push_back(std::move(g_queue.front()));
        g_queue.pop_front();
    }
    bool rendered = guard([&] {
        for (const signin::OutboxItem &item : b->items) {
            b->messages.push_back(
                smtp::message(m->emails->render(item.delivery, id->origin().text), item.delivery.email));
        }
        return true;
    }, [](const std::exception *) { return false; });
    b->session = take_session(settings);
    if (!rendered || ngx_thread_task_post(m->thread_pool, task) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0, "signin: smtp: could not start a batch of %uz emails; they are tried again",
                      b->items.size());
        for (signin::OutboxItem &item : b->items) {
            record_send(std::move(item), Transport::Smtp, SendEnd::Retry, "the SMTP batch could not be started");
        }
        keep_session(std::move(b->session), settings);
        free_batch(b);
        return false;
    }
    ++g_batches;
    g_sending += b->items.size();
    keep_watching();
    return true;
}

void start_batches() {
    while (!g_queue.empty() && g_batches < kMaxBatches && !stopping()) {
        if (!start_batch()) return;
    }
}

}  // namespace

void send_by_smtp(signin::OutboxItem item) {
    if (g_queue.size() >= kMaxQueued) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "signin: smtp: %uz emails are waiting to be sent; this one stays in the outbox and is sent "
                      "after signin_delivery_timeout",
                      g_queue.size());
        return;
    }
    g_queue.push_back(std::move(item));
    schedule();
}

std::size_t smtp_queued() { return g_queue.size() + g_sending; }

void stop_smtp() {
    g_cancel.store(true);
    // A fast stop leaves no time for QUIT (a graceful one has closed them already): the sockets
    // close with the process, and nothing here waits for the relay on the event loop.
    for (Kept &k : g_kept) (void)k.session.release();
    g_kept.clear();
}

}  // namespace signin_ngx
