// signin_events: the events the engine writes with each change (signin/events.hpp), sent by the
// workers as POST subrequests to the signin_events location, signed per Standard Webhooks. Each
// worker looks for events to send several times a second (a read); the claim, and what became of
// each send, are writes in the thread pool. No visitor's request waits for an event.
#pragma once

#include "ngx_signin_nginx.h"

#include "signin/auth.hpp"
#include "signin/events.hpp"

namespace signin_ngx {

struct MainConf;

// signin_events_types TYPE ...: every word (checked by check_events_conf).
char *set_events_types(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
// finish_main_conf: the signin_events checks nginx -t makes (the secret file read and its form,
// the types known, the retries); NGX_OK or NGX_ERROR (logged).
ngx_int_t check_events_conf(ngx_conf_t *cf, MainConf *m);
// postconfiguration: the server whose locations serve signin_events, and that its location is
// internal. NGX_ERROR (logged) when none serves it, or it is reachable from outside.
ngx_int_t find_events_server(ngx_conf_t *cf, MainConf *m);
// init_process, once the engine is open: its event settings, what signin-admin is told, and the
// sending.
void start_events(ngx_cycle_t *cycle, signin::Identity &identity);

// signin_metrics: an event's send ended (types by signin::event_type_index).
enum class EventResult : std::uint8_t { Sent, Retried, Dropped };
void count_event(std::string_view type, EventResult result);
// How events reach their sender and leave the store (signin_event_steps_total): held as their
// write batch wrote them, or claimed; deleted by a later write batch, or by a write of their own.
enum class EventStep : std::uint8_t { HeldAsWritten, Claimed, DeletedWithBatch, DeletedAlone };
void count_event_step(EventStep step, std::size_t n);

}  // namespace signin_ngx
