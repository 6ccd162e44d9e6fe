// Delivery of emails (the Delivery JSON; signin_delivery_retries): every email
// is written to the outbox (signin/outbox.hpp) in its token's own transaction, then sent by this
// worker apart from the visitor's request, as a subrequest to the signin_delivery location made
// from a request of the module's own (no visitor connection waits for the mailer). A refused
// delivery is tried again, 1 s after the first failure and doubling, signin_delivery_retries
// times; then its token is cancelled. A worker checks the outbox every second for entries whose
// sender vanished (signin_delivery_timeout after it took them) and sends them.
#pragma once

#include "ngx_signin_nginx.h"

#include <functional>
#include <string>

#include "signin/outbox.hpp"
#include "signin/types.hpp"
#include "signin_metrics.h"

namespace signin_ngx {

struct MainConf;
struct RequestCtx;

// One POST of the module's own to an internal location (the emails' delivery, the events):
// a subrequest made from a request of the module's own, on a connection of its own, that no
// visitor waits for. Its owner embeds it; ev's handler and dummy.data are the owner's.
struct OwnPost {
    ngx_event_t ev{};            // posted once the answer is in: then reap_own_post
    ngx_connection_t dummy{};    // ev->data (nginx's event code reads it as a connection)
    ngx_http_request_t *fr = nullptr;  // the module's own request while the subrequest runs
    bool answered = false;       // the subrequest's post handler ran
    bool ok = false;             // ... with a 2xx
    ngx_uint_t status = 0;       // the answer's status (0: none)
    const char *what = "signin";             // the error log's name for the send
    const char *log_action = "sending from the signin outbox";  // "... while <log_action>"
};
// Starts the POST to `uri` in `server`; fill gives the subrequest its body and headers (its
// RequestCtx keeps what must live as long as the subrequest). False when it did not start.
bool start_own_post(OwnPost *p, ngx_http_conf_ctx_t *server, const ngx_str_t &uri,
                    const std::function<bool(ngx_http_request_t *, RequestCtx *)> &fill);
// Once ev fired: frees the module's request when nginx let go of it (true); else ev fires again
// after `again` ms (false).
bool reap_own_post(OwnPost *p, ngx_msec_t again);

// Sends what a token request or a notice just wrote to the outbox under outbox_key,
// once the current event is over (the visitor's answer goes first). The delivery moves out of d.
// An empty key (no outbox) sends nothing.
void start_delivery(signin::Delivery &d, std::string outbox_key, const std::string &client);

// What became of one send (the HTTP subrequest's, or an SMTP batch's): sent; refused for now
// (tried again after its delay, for as long as its code lives); refused for good (`why`, e.g.
// "smtp 550": no retry, the token cancelled, delivery.failed audited). For a retry, `why` is
// the reason the outbox keeps for signin-admin outbox (a reply code and text, no secret).
// Recorded in the outbox in the thread pool, and counted in signin_deliveries_total.
enum class SendEnd : std::uint8_t { Sent, Retry, Refused };
void record_send(signin::OutboxItem item, Transport transport, SendEnd end, std::string why = {});

// postconfiguration (conf_delivery.cpp): the server whose locations serve signin_delivery
// (requests of the module's own are made in it). NGX_ERROR when no server has an exact or prefix location that matches.
ngx_int_t find_delivery_server(ngx_conf_t *cf, MainConf *m);

// init_process: the outbox check every second (after the engine is open).
void start_outbox(ngx_cycle_t *cycle);

}  // namespace signin_ngx
