// Delivery of emails from the outbox (signin_delivery.h).
//
// A send is a background subrequest to the signin_delivery location, made from a request of the
// module's own on a connection of its own, in the shape of HTTP/2's stream connections: the
// connection holds the worker's one /dev/null descriptor, shared (so that nginx's own close path
// works and leaves it open), its events count as
// registered (nothing is ever added to epoll for it), and whatever the subrequest would write to
// a client is discarded (the mailer's answer is only read for its status). The request lives
// until its subrequest is over, then is freed the way nginx frees a finished request.
//
// With signin_smtp the outbox is the same, but a send is signin_smtp.cpp's (a batch in the
// thread pool), whose results come back here (record_send).
#include "signin_delivery.h"
#include "signin_metrics.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <new>
#include <optional>

#include "signin/json.hpp"
#include "signin/outbox.hpp"
#include "signin_conf.h"
#include "signin_jobs.h"
#include "signin_request.h"
#include "signin_smtp.h"

namespace signin_ngx {
namespace {

constexpr std::size_t kMaxSending = 64;     // sends in flight per worker
constexpr std::size_t kMaxWaiting = 4096;   // beyond: left in the outbox, claimed after their hold
constexpr ngx_msec_t kCheckEvery = 1000;    // the outbox check
constexpr ngx_msec_t kReapAgain = 100;      // a request not yet free to go: look again
constexpr ngx_msec_t kSendAfter = 2, kSendSpread = 21;  // a send starts 2-22 ms after its answer

signin::Identity &id() { return *identity(); }

// ---------------------------------------------------------------- one send

// ev: the next step (start, end, or the next try); ok: the mailer took the email.
struct Sending : OwnPost {
    signin::OutboxItem item;
    std::string error;           // why not: what the outbox keeps for signin-admin outbox
};

std::list<std::unique_ptr<Sending>> g_sending;  // in flight or waiting for their next try
std::deque<signin::OutboxItem> g_waiting;       // over kMaxSending
std::size_t g_in_flight = 0;

void begin(Sending *s);
void settle(Sending *s, bool ok, std::string error = {});

Sending *sending_of(ngx_event_t *ev) { return static_cast<Sending *>(static_cast<ngx_connection_t *>(ev->data)->data); }

Sending *new_sending(signin::OutboxItem item) {
    auto s = std::make_unique<Sending>();
    s->item = std::move(item);
    s->dummy.fd = -1;
    s->dummy.data = s.get();
    s->ev.data = &s->dummy;
    s->ev.log = ngx_cycle->log;
    Sending *raw = s.get();
    g_sending.push_back(std::move(s));
    return raw;
}

void drop(Sending *s) {
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

void on_begin(ngx_event_t *ev) { begin(sending_of(ev)); }

// Starts a send now, or queues it when this worker has kMaxSending in flight.
void enqueue(signin::OutboxItem item) {
    if (smtp_on()) {
        send_by_smtp(std::move(item));
        return;
    }
    if (g_in_flight >= kMaxSending) {
        if (g_waiting.size() < kMaxWaiting) {
            g_waiting.push_back(std::move(item));
        } else {
            ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                          "signin: %uz emails are waiting to be sent; this one stays in the outbox and is sent "
                          "after signin_delivery_timeout",
                          g_waiting.size());
        }
        return;
    }
    Sending *s = new_sending(std::move(item));
    ++g_in_flight;
    s->ev.handler = on_begin;
    // Not at once: the worker's own work for the send (the email, the subrequest) would delay the
    // visitor's next request on a keep-alive connection by some microseconds, for accounts only.
    // It starts at a moment that no answer tells: 2 to 22 ms later.
    ngx_add_timer(&s->ev, kSendAfter + static_cast<ngx_msec_t>(ngx_random()) % kSendSpread);
}

void next_waiting() {
    while (g_in_flight < kMaxSending && !g_waiting.empty()) {
        signin::OutboxItem item = std::move(g_waiting.front());
        g_waiting.pop_front();
        enqueue(std::move(item));
    }
}

// ---------------------------------------------------------------- what the send wrote

class SentJob final : public BackgroundJob {
public:
    explicit SentJob(signin::OutboxItem item) : BackgroundJob(Stage::Write), item_(std::move(item)) {}

private:
    signin::Status write() override { return id().outbox().sent(item_); }
    signin::OutboxItem item_;
};

// A refused send: the entry is held until its next try (or given up); the next try is this
// worker's, on a timer that keeps a worker that is shutting down until it is made.
class FailedJob final : public BackgroundJob {
public:
    FailedJob(signin::OutboxItem item, Transport transport, std::string error)
        : BackgroundJob(Stage::Write), sent_(std::move(item)), transport_(transport), error_(std::move(error)) {}

private:
    // failed() moves the entry to a new key: from the item as it was sent each time it runs
    // (a write batch may run it twice, Job::write)
    signin::Status write() override {
        item_ = sent_;
        auto d = id().outbox().failed(item_, error_);
        if (!d) return d.error();
        delay_ = d.value();
        return signin::ok_status();
    }
    void done(const signin::Error *failure) override;

    const signin::OutboxItem sent_;
    const Transport transport_;
    const std::string error_;
    signin::OutboxItem item_;  // held again: its next try
    std::optional<signin::Millis> delay_;
};

// The next try of a send, once the store said whether it is still wanted.
void retry_if(Sending *s, bool wanted) {
    if (!wanted) {  // spent, expired, claimed by another, or the store failed
        drop(s);
        return;
    }
    if (g_in_flight >= kMaxSending || smtp_on()) {  // queued (SMTP: in the next batch)
        signin::OutboxItem item = std::move(s->item);
        drop(s);
        enqueue(std::move(item));
        return;
    }
    ++g_in_flight;
    begin(s);
}

// Whether a send is still wanted, asked in the thread pool (a store whose reads may block). The send
// waits meanwhile: nothing else refers to it until retry_if.
class WantedJob final : public BackgroundJob {
public:
    explicit WantedJob(Sending *s) : BackgroundJob(Stage::Read), s_(s), item_(s->item) {}

private:
    signin::Status read() override {
        auto w = id().outbox().wanted(item_);
        if (!w) return w.error();
        wanted_ = w.value();
        return signin::ok_status();
    }
    void done(const signin::Error *failure) override { retry_if(s_, failure == nullptr && wanted_); }

    Sending *s_;
    signin::OutboxItem item_;
    bool wanted_ = false;
};

void on_retry(ngx_event_t *ev) {
    Sending *s = sending_of(ev);
    if (reads_block()) {
        if (guard([&] { return start_background_job(std::make_unique<WantedJob>(s)) == NGX_OK; },
                  [](const std::exception *) { return false; })) {
            return;
        }
        drop(s);  // not asked: the email stays in the outbox, claimed again after its hold
        return;
    }
    auto wanted = id().outbox().wanted(s->item);
    retry_if(s, wanted && wanted.value());
}

void FailedJob::done(const signin::Error *failure) {
    // a failure to record it leaves the entry in the outbox, claimed again after its hold
    count_delivery(transport_, failure != nullptr || delay_ ? DeliveryResult::Retried : DeliveryResult::Failed);
    if (failure != nullptr) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "signin: could not record a failed delivery (%s); it is tried again after "
                      "signin_delivery_timeout",
                      failure->message.c_str());
        return;
    }
    if (!delay_) return;  // given up (the token is cancelled), or another worker holds it
    Sending *s = new_sending(std::move(item_));
    s->ev.handler = on_retry;
    // Retries go on for as long as the code lives: a worker that is shutting down does not wait
    // for them. The entry stays in the outbox, held until its retry time plus the hold, and the
    // workers that remain (or the next nginx) send it then.
    s->ev.cancelable = 1;
    ngx_add_timer(&s->ev, static_cast<ngx_msec_t>(*delay_));
}

// The send is over: record it, and let the next waiting one go.
void settle(Sending *s, bool ok, std::string error) {
    --g_in_flight;
    signin::OutboxItem item = std::move(s->item);
    drop(s);
    record_send(std::move(item), Transport::Http, ok ? SendEnd::Sent : SendEnd::Retry, std::move(error));
    next_waiting();
}

// A send refused for good (an SMTP 5xx): no retry, the token cancelled, delivery.failed audited.
class RefusedJob final : public BackgroundJob {
public:
    RefusedJob(signin::OutboxItem item, std::string why)
        : BackgroundJob(Stage::Write), item_(std::move(item)), why_(std::move(why)) {}

private:
    signin::Status write() override { return id().outbox().refused(item_, why_); }
    signin::OutboxItem item_;
    std::string why_;
};

}  // namespace

void record_send(signin::OutboxItem item, Transport transport, SendEnd end, std::string why) {
    std::unique_ptr<BackgroundJob> job;
    switch (end) {
        case SendEnd::Sent:
            count_delivery(transport, DeliveryResult::Sent);
            job = std::make_unique<SentJob>(std::move(item));
            break;
        case SendEnd::Retry:  // counted once the outbox says whether it is tried again
            job = std::make_unique<FailedJob>(std::move(item), transport, std::move(why));
            break;
        case SendEnd::Refused:
            count_delivery(transport, DeliveryResult::Failed);
            job = std::make_unique<RefusedJob>(std::move(item), std::move(why));
            break;
    }
    if (start_background_job(std::move(job)) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "signin: could not record a delivery; the outbox sends it again after signin_delivery_timeout");
    }
}

namespace {

// ---------------------------------------------------------------- the module's own request

// What nginx would write to a client: nothing reads it.
ngx_chain_t *discard_chain(ngx_connection_t *c, ngx_chain_t *in, off_t) {
    for (ngx_chain_t *cl = in; cl; cl = cl->next) {
        if (ngx_buf_special(cl->buf)) continue;
        c->sent += ngx_buf_size(cl->buf);
        if (ngx_buf_in_memory(cl->buf)) cl->buf->pos = cl->buf->last;
        if (cl->buf->in_file) cl->buf->file_pos = cl->buf->file_last;
    }
    return nullptr;
}
ssize_t discard_send(ngx_connection_t *c, u_char *, size_t size) {
    c->sent += static_cast<off_t>(size);
    return static_cast<ssize_t>(size);
}
ssize_t nothing_to_read(ngx_connection_t *, u_char *, size_t) { return 0; }

// The log context of a connection of the module's own: nginx's, and what the connection is for.
struct OwnLogCtx {
    ngx_http_log_ctx_t http;  // first: nginx reads log->data as this
    const char *doing;
};

// Error lines of a send say what it was doing, then what nginx says of a request (server,
// subrequest, upstream).
u_char *log_context(ngx_log_t *log, u_char *buf, size_t len) {
    auto *own = static_cast<OwnLogCtx *>(log->data);
    u_char *p = ngx_snprintf(buf, len, " while %s", own->doing);
    len -= static_cast<size_t>(p - buf);
    auto *ctx = &own->http;
    if (ctx != nullptr && ctx->request != nullptr && ctx->request->log_handler != nullptr) {
        return ctx->request->log_handler(ctx->request, ctx->current_request, p, len);
    }
    return p;
}

// "unix:", as nginx shows a client of a unix socket: the module itself.
struct sockaddr g_self_addr = {AF_UNIX, {0}};

ngx_int_t own_post_done(ngx_http_request_t *sr, void *data, ngx_int_t rc) {
    auto *p = static_cast<OwnPost *>(data);
    if (p->answered) return rc;
    p->answered = true;
    p->status = rc == NGX_ERROR ? 0 : sr->headers_out.status;
    p->ok = rc != NGX_ERROR && rc < NGX_HTTP_SPECIAL_RESPONSE && p->status >= 200 && p->status < 300;
    if (!p->ok) {
        ngx_log_error(NGX_LOG_WARN, sr->connection->log, 0, "signin: %s subrequest \"%V\" failed (rc %i, status %ui)",
                      p->what, &sr->uri, rc, p->status);
    }
    ngx_post_event(&p->ev, &ngx_posted_events);  // reap (the owner's handler) once this finalization is over
    return rc;
}

// The /dev/null every connection of the module's own holds in this worker: opened once, and the
// connections marked shared, so that nginx's close path closes none of them (no open and close
// per send: a path lookup in the kernel each, for every email and every event).
ngx_socket_t g_null_fd = -1;

// A connection of the module's own, in the server that holds the location.
ngx_connection_t *own_connection(ngx_http_conf_ctx_t *server, const char *what) {
    if (g_null_fd == -1) g_null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (g_null_fd == -1) {
        ngx_log_error(NGX_LOG_ALERT, ngx_cycle->log, ngx_errno, "signin: open(\"/dev/null\") failed");
        return nullptr;
    }
    ngx_connection_t *c = ngx_get_connection(g_null_fd, ngx_cycle->log);
    if (c == nullptr) return nullptr;
    c->shared = 1;  // ngx_close_connection leaves the descriptor open (and deletes no event: none was added)
#if (NGX_STAT_STUB)
    (void)ngx_atomic_fetch_add(ngx_stat_active, 1);  // as accepted ones; ngx_http_close_connection counts it out
#endif
    c->pool = ngx_create_pool(1024, ngx_cycle->log);
    auto *log = c->pool ? static_cast<ngx_log_t *>(ngx_palloc(c->pool, sizeof(ngx_log_t))) : nullptr;
    auto *lctx = c->pool ? static_cast<OwnLogCtx *>(ngx_pcalloc(c->pool, sizeof(OwnLogCtx))) : nullptr;
    auto *hc = c->pool ? static_cast<ngx_http_connection_t *>(ngx_pcalloc(c->pool, sizeof(ngx_http_connection_t)))
                       : nullptr;
    c->buffer = c->pool ? ngx_create_temp_buf(c->pool, 1) : nullptr;  // empty: nothing was read
    if (log == nullptr || lctx == nullptr || hc == nullptr || c->buffer == nullptr) {
        ngx_http_close_connection(c);
        return nullptr;
    }
    *log = *ngx_cycle->log;
    lctx->http.connection = c;
    lctx->doing = what;
    log->data = lctx;
    log->handler = log_context;
    log->action = nullptr;
    c->log = log;
    c->pool->log = log;
    c->read->log = log;
    c->write->log = log;
    c->log_error = NGX_ERROR_INFO;
    c->sockaddr = &g_self_addr;
    c->socklen = sizeof(sa_family_t);
    c->local_sockaddr = &g_self_addr;
    c->local_socklen = sizeof(sa_family_t);
    ngx_str_set(&c->addr_text, "unix:");
    c->send_chain = discard_chain;
    c->send = discard_send;
    c->recv = nothing_to_read;
    c->read->eof = 1;       // nothing comes from this "client"
    c->write->ready = 1;    // and anything can be written to it
    c->read->active = 1;    // as if registered: nginx adds no event for /dev/null
    c->write->active = 1;   // (and deletes none: closing it with NGX_CLOSE_EVENT makes no call)
    c->start_time = ngx_current_msec;
    hc->conf_ctx = server;
    c->data = hc;
    return c;
}

void forget_request(void *data) { static_cast<OwnPost *>(data)->fr = nullptr; }

}  // namespace

bool start_own_post(OwnPost *p, ngx_http_conf_ctx_t *server, const ngx_str_t &uri,
                    const std::function<bool(ngx_http_request_t *, RequestCtx *)> &fill) {
    p->answered = false;
    p->ok = false;
    p->status = 0;
    if (server == nullptr) return false;
    ngx_connection_t *c = own_connection(server, p->log_action);
    if (c == nullptr) return false;
    ngx_http_request_t *r = ngx_http_create_request(c);
    if (r == nullptr) {
        ngx_http_close_connection(c);
        return false;
    }
    c->data = r;
    r->logged = 1;  // the module's own request: nothing for the access log (log_subrequest logs the send)
    r->method = NGX_HTTP_POST;
    ngx_str_set(&r->method_name, "POST");
    r->uri = uri;
    r->unparsed_uri = uri;
    ngx_str_set(&r->request_line, "POST (signin outbox)");
    ngx_str_set(&r->http_protocol, "HTTP/1.1");
    r->http_version = NGX_HTTP_VERSION_11;
    r->http_state = NGX_HTTP_PROCESS_REQUEST_STATE;
#if (NGX_STAT_STUB)
    if (r->stat_reading) {  // as ngx_http_process_request: it is being answered, not read
        (void)ngx_atomic_fetch_add(ngx_stat_reading, -1);
        r->stat_reading = 0;
        (void)ngx_atomic_fetch_add(ngx_stat_writing, 1);
        r->stat_writing = 1;
    }
#endif
    ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == nullptr || ngx_list_init(&r->headers_in.headers, r->pool, 2, sizeof(ngx_table_elt_t)) != NGX_OK) {
        ngx_http_free_request(r, 0);
        ngx_http_close_connection(c);
        return false;
    }
    cln->handler = forget_request;
    cln->data = p;
    p->fr = r;

    auto *ps = static_cast<ngx_http_post_subrequest_t *>(ngx_palloc(r->pool, sizeof(ngx_http_post_subrequest_t)));
    ngx_http_request_t *sr = nullptr;
    RequestCtx *sctx = nullptr;
    bool ok = ps != nullptr;
    if (ok) {
        ps->handler = own_post_done;
        ps->data = p;
        ok = ngx_http_subrequest(r, &r->uri, nullptr, &sr, ps, NGX_HTTP_SUBREQUEST_BACKGROUND) == NGX_OK;
    }
    if (ok) {
        sr->header_only = 1;  // the answer's body is not needed, only its status
        sr->method = NGX_HTTP_POST;
        ngx_str_set(&sr->method_name, "POST");
        // headers of its own (a copied list would grow the parent's)
        sctx = ngx_list_init(&sr->headers_in.headers, sr->pool, 4, sizeof(ngx_table_elt_t)) == NGX_OK
                   ? get_ctx(sr, true)
                   : nullptr;
        ok = sctx != nullptr;
    }
    if (ok) ok = guard([&] { return fill(sr, sctx); }, [](const std::exception *) { return false; });
    if (!ok && sr == nullptr) {  // nothing runs: free it here
        p->fr = nullptr;
        ngx_http_free_request(r, 0);
        ngx_http_close_connection(c);
        return false;
    }
    // a subrequest without its body still runs: the location refuses it, and it is tried again
    ngx_http_run_posted_requests(c);
    return true;
}

bool reap_own_post(OwnPost *p, ngx_msec_t again) {
    if (ngx_http_request_t *r = p->fr) {
        if (r->count != 1 || r->blocked) {  // the subrequest has not let go yet
            ngx_add_timer(&p->ev, again);
            return false;
        }
        ngx_connection_t *c = r->connection;
        p->fr = nullptr;
        ngx_http_free_request(r, 0);
        ngx_http_close_connection(c);
    }
    return true;
}

namespace {

// The module's own request, and its subrequest to the delivery location.
bool start_subrequest(Sending *s) {
    MainConf *m = cycle_main_conf(const_cast<ngx_cycle_t *>(ngx_cycle));
    if (m == nullptr || m->delivery_ctx == nullptr) return false;
    s->log_action = "sending an email from the signin outbox";
    s->what = "delivery";
    return start_own_post(s, m->delivery_ctx, m->delivery_uri, [&](ngx_http_request_t *sr, RequestCtx *sctx) {
        sctx->delivery_json =
            signin::json::delivery(s->item.delivery, m->emails->render(s->item.delivery, id().origin().text));
        // The delivery JSON is the subrequest's own request body, so that a plain `proxy_pass`
        // sends it to the mailer. No nginx variable carries it into proxy_set_body: nginx's
        // script engine writes the value of every variable it evaluates to a debug-level
        // error.log, token included. The JSON lives in the subrequest's ctx until the pool goes.
        return give_subrequest_body(sr, sctx->delivery_json, "application/json") == NGX_OK;
    });
}

void on_end(ngx_event_t *ev);

void begin(Sending *s) {
    s->answered = false;
    s->ok = false;
    s->error.clear();
    s->ev.handler = on_end;
    if (!start_subrequest(s)) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0, "signin: could not start a delivery subrequest");
        settle(s, false, "could not start the delivery subrequest");
    }
}

// After the subrequest's post handler: free the module's request once nginx is done with it.
void on_end(ngx_event_t *ev) {
    Sending *s = sending_of(ev);
    if (!reap_own_post(s, kReapAgain)) return;
    if (!s->ok) {
        // the status is all the outbox keeps: the mailer's body may quote the email
        s->error = s->status == 0 ? std::string("the delivery location gave no answer")
                                  : "the delivery location answered " + std::to_string(s->status);
    }
    settle(s, s->ok, s->ok ? std::string() : std::move(s->error));
}

// ---------------------------------------------------------------- the outbox check

bool g_claiming = false;
ngx_event_t g_check;
ngx_connection_t g_check_dummy;

// The claimed emails, on the event loop.
void take_claimed(const signin::Error *failure, std::vector<signin::OutboxItem> items) {
    g_claiming = false;
    if (failure != nullptr) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0, "signin: the outbox check failed: %s", failure->message.c_str());
    }
    for (auto &item : items) {
        // the first try of an entry written to be claimed (a new-sign-in notice) is no recovery
        if (item.attempts > 1) {
            ngx_log_error(NGX_LOG_INFO, ngx_cycle->log, 0,
                          "signin: sending an email from the outbox whose sender stopped (try %uD)", item.attempts);
        }
        enqueue(std::move(item));
    }
}

void check_outbox(ngx_event_t *ev) {
    if (ngx_exiting || ngx_quit || ngx_terminate || identity() == nullptr) return;
    if (!g_claiming && g_in_flight < kMaxSending && g_waiting.empty() && smtp_queued() == 0) {
        // a store whose reads may block is not read here: the claim (in the thread pool) finds out
        auto due = reads_block() ? signin::Result<bool>(true) : id().outbox().any_due();
        if (due && due.value()) {
            auto claim = [](std::size_t budget) { return id().outbox().claim_due(budget); };
            g_claiming = guard(
                [&] {
                    return start_background_job(std::make_unique<ClaimJob<signin::OutboxItem>>(
                               kMaxSending - g_in_flight, claim, take_claimed)) == NGX_OK;
                },
                [](const std::exception *) { return false; });
        }
    }
    ngx_add_timer(ev, kCheckEvery);
}

}  // namespace

void start_delivery(signin::Delivery &d, std::string outbox_key, const std::string &client) {
    if (!d.token.empty()) count_token(d.purpose);
    if (outbox_key.empty()) return;
    signin::OutboxItem item;
    item.key = std::move(outbox_key);
    item.delivery = std::move(d);
    item.client = client;
    item.attempts = 1;
    enqueue(std::move(item));
}

void start_outbox(ngx_cycle_t *cycle) {
    g_check_dummy.fd = -1;
    g_check.handler = check_outbox;
    g_check.log = cycle->log;
    g_check.data = &g_check_dummy;
    g_check.cancelable = 1;  // a worker that is shutting down does not wait for the next check
    // workers start their checks apart, so that they do not all claim at the same moment
    ngx_add_timer(&g_check, kCheckEvery + static_cast<ngx_msec_t>(ngx_worker) * 250 % kCheckEvery);
}

}  // namespace signin_ngx
