// Delivery of emails (the Delivery JSON; signin_delivery_retries): every email
// is written to the outbox (signin/outbox.hpp) in its token's own transaction, then sent by this
// worker apart from the visitor's request, as a subrequest to the signin_delivery location made
// from a request of the module's own (no visitor connection waits for the mailer). A refused
// delivery is tried again, 1 s after the first failure and doubling, signin_delivery_retries
// times; then its token is cancelled. A worker checks the outbox every second for entries whose
// sender vanished (signin_delivery_timeout after it took them) and sends them.
#pragma once

#include "ngx_signin_nginx.h"

#include <string>

#include "signin/outbox.hpp"
#include "signin/types.hpp"
#include "signin_metrics.h"

namespace signin_ngx {

struct MainConf;

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

// postconfiguration: the server whose locations serve signin_delivery (requests of the module's
// own are made in it). NGX_ERROR when no server has an exact or prefix location that matches.
ngx_int_t find_delivery_server(ngx_conf_t *cf, MainConf *m);

// init_process: the outbox check every second (after the engine is open).
void start_outbox(ngx_cycle_t *cycle);

}  // namespace signin_ngx
