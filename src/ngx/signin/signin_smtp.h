// Email over SMTP (signin_smtp): the directives and their checks are ngx_http_signin_smtp_module's
// (ngx_http_signin_smtp_module.cpp); the sending is signin_smtp.cpp's. The outbox stays the
// delivery's (signin_delivery.cpp): it hands each email to send_by_smtp instead of starting an
// HTTP subrequest, and the results come back to it through record_send.
//
// Emails wait in a queue of the worker; what is waiting goes in batches (at most 16 each, at most
// two at a time per worker), each over one connection to the relay, in one task of
// signin_thread_pool, libcurl doing SMTP and TLS there (signin/smtp.hpp). A batch's connection is
// kept for the next batch while emails keep coming, and closed (QUIT, in the pool) after a few idle
// seconds. The event loop never waits for the relay.
#pragma once

#include "ngx_signin_nginx.h"

#include <cstddef>

#include "signin/outbox.hpp"
#include "signin/smtp.hpp"

extern "C" {
extern ngx_module_t ngx_http_signin_smtp_module;
}

namespace signin_ngx {

// While the http block is checked: whether signin_smtp is written (the sign-in module's checks
// run before this module's, which check the settings themselves).
bool smtp_written(ngx_conf_t *cf);
// The relay's checked settings of a cycle; nullptr when signin_smtp is not set.
const signin::smtp::Settings *smtp_settings(ngx_cycle_t *cycle);

// In a worker: whether emails go over SMTP.
inline bool smtp_on() { return smtp_settings(const_cast<ngx_cycle_t *>(ngx_cycle)) != nullptr; }

// Queues an email of the outbox for the next batch (started a few ms after the current event).
void send_by_smtp(signin::OutboxItem item);
// Emails waiting for a batch or in the batches being sent (the outbox check claims no more meanwhile).
std::size_t smtp_queued();
// At the worker's exit: a send under way stops within about a second (its emails stay in the
// outbox and are tried again).
void stop_smtp();

}  // namespace signin_ngx
