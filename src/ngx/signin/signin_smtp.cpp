// Email over SMTP: the worker's queue and its batches in the thread pool (signin_smtp.h).
#include "signin_smtp.h"
#include "signin_conf.h"
#include "signin_delivery.h"

#include <atomic>
#include <chrono>
#include <deque>
#include <new>
#include <vector>

namespace signin_ngx {
namespace {

namespace smtp = signin::smtp;

constexpr std::size_t kBatch = 16;          // emails per batch (one connection)
constexpr std::size_t kMaxQueued = 4096;    // beyond: left in the outbox, claimed after their hold
constexpr ngx_msec_t kSendAfter = 2, kSendSpread = 21;  // a batch starts 2-22 ms after the answer
constexpr ngx_msec_t kWatchEvery = 200;     // while a batch runs: is the worker stopping?

std::deque<signin::OutboxItem> g_queue;
std::size_t g_sending = 0;      // emails of the batch in the thread pool (0: none)
std::atomic<bool> g_cancel{false};

// The batch's start (a timer, so that what this event queues goes with it) and, while a batch
// runs, the watch that tells it to stop when the worker does. The watch is not cancelable: a
// worker that shuts down waits for the batch (stopped within about a second) and records it.
ngx_event_t g_start, g_watch;
ngx_connection_t g_start_dummy, g_watch_dummy;

struct Batch {
    ngx_pool_t *pool = nullptr;
    ngx_thread_task_t *task = nullptr;
    const smtp::Settings *settings = nullptr;
    std::vector<signin::OutboxItem> items;
    std::vector<smtp::Message> messages;
    std::vector<smtp::SendResult> results;
};

void start_batch(ngx_event_t *);

void schedule() {
    if (g_sending != 0 || g_queue.empty() || g_start.timer_set) return;
    if (ngx_exiting || ngx_quit || ngx_terminate) return;  // the outbox keeps them for the next worker
    g_start_dummy.fd = -1;
    g_start.data = &g_start_dummy;
    g_start.handler = start_batch;
    g_start.log = ngx_cycle->log;
    g_start.cancelable = 1;
    // Not at once: the visitor's answer goes first, and no answer's timing tells that a send
    // followed it.
    ngx_add_timer(&g_start, kSendAfter + static_cast<ngx_msec_t>(ngx_random()) % kSendSpread);
}

void watch(ngx_event_t *ev) {
    if (ngx_exiting || ngx_quit || ngx_terminate) g_cancel.store(true);
    if (g_sending != 0) ngx_add_timer(ev, kWatchEvery);
}

// In a thread of the pool: the whole batch, over one connection.
void send_thread(void *data, ngx_log_t *) {
    auto *b = static_cast<Batch *>(data);
    try {
        const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
        b->results = smtp::send_batch(*b->settings, b->messages, static_cast<signin::Millis>(now), &g_cancel);
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
    g_sending = 0;
    if (g_watch.timer_set) ngx_del_timer(&g_watch);
    guard_log(ngx_cycle->log, NGX_LOG_ALERT, "signin: recording an SMTP batch", [b] { apply(b); });
    free_batch(b);
    schedule();
}

// What is waiting, at most kBatch, as one task of signin_thread_pool.
void start_batch(ngx_event_t *) {
    guard_log(ngx_cycle->log, NGX_LOG_ALERT, "signin: starting an SMTP batch", [] {
        if (g_sending != 0 || g_queue.empty()) return;
        auto *cycle = const_cast<ngx_cycle_t *>(ngx_cycle);
        MainConf *m = cycle_main_conf(cycle);
        const smtp::Settings *settings = smtp_settings(cycle);
        signin::Identity *id = identity();
        if (m == nullptr || settings == nullptr || id == nullptr) return;
        ngx_pool_t *pool = ngx_create_pool(512, ngx_cycle->log);
        ngx_thread_task_t *task = pool != nullptr ? ngx_thread_task_alloc(pool, sizeof(Batch)) : nullptr;
        if (task == nullptr) {
            if (pool != nullptr) ngx_destroy_pool(pool);
            ngx_add_timer(&g_start, 1000);  // no memory now: the queue waits a second
            return;
        }
        auto *b = new (task->ctx) Batch();
        b->pool = pool;
        b->task = task;
        b->settings = settings;
        task->handler = send_thread;
        task->event.handler = batch_done;
        task->event.data = b;
        task->event.log = ngx_cycle->log;
        while (!g_queue.empty() && b->items.size() < kBatch) {
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
        if (!rendered || ngx_thread_task_post(m->thread_pool, task) != NGX_OK) {
            ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0, "signin: smtp: could not start a batch of %uz emails; they are tried again",
                          b->items.size());
            for (signin::OutboxItem &item : b->items) {
                record_send(std::move(item), Transport::Smtp, SendEnd::Retry, "the SMTP batch could not be started");
            }
            free_batch(b);
            schedule();
            return;
        }
        g_sending = b->items.size();
        g_watch_dummy.fd = -1;
        g_watch.data = &g_watch_dummy;
        g_watch.handler = watch;
        g_watch.log = ngx_cycle->log;
        ngx_add_timer(&g_watch, kWatchEvery);
    });
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

void stop_smtp() { g_cancel.store(true); }

}  // namespace signin_ngx
