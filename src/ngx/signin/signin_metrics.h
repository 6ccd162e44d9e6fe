// signin_metrics (Prometheus' text format): counters in one shared-memory zone, summed over workers and kept
// across reloads like limit_req's zone, and the location that answers them in Prometheus' text
// format (the core renders it: signin/metrics.hpp). Counting is a few atomic adds; without a
// signin_metrics location there is no zone and nothing is counted.
#pragma once

#include "ngx_signin_nginx.h"

#include <cstddef>

#include "signin/metrics.hpp"
#include "signin/types.hpp"
#include "../limits/signin_limits.h"

namespace signin_ngx {

// The directive (a location's content handler) and the zone it adds.
char *set_metrics(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
// In each worker: the zone of its cycle (or none).
void metrics_attach(ngx_cycle_t *cycle);

enum class Way : std::uint8_t { Email, Password, Passkey, Provider, Mfa };
void count_signin(Way way);
void count_signin(signin::SignInMethod method);
void count_failure(signin::Code code);
void count_token(signin::Purpose purpose);
// A send's end, by transport: sent, refused and tried again, refused for the last time.
enum class Transport : std::uint8_t { Http, Smtp };
enum class DeliveryResult : std::uint8_t { Sent, Retried, Failed };
void count_delivery(Transport transport, DeliveryResult result);
void count_limited(Bucket bucket);
// The module as an OpenID provider: a code given, tokens granted, a refusal (of an authorization
// or token request), a code or refresh token used twice, a token revoked.
enum class OidcCount : std::uint8_t { Code, Granted, Refused, Reused, Revoked };
void count_oidc(OidcCount what);
// A write batch of `size` jobs whose durable commit took `seconds` (a pool thread calls it).
void count_batch(std::size_t size, double seconds);
// Session reads that went to the store together, `size` of them (a pool thread calls it).
void count_read_batch(std::size_t size);
// A write batch that ran twice (Store::batch), whatever its end (a pool thread calls it).
void count_batch_replay();
// The admin page's dashboard: the totals and the counts over time (none without a signin_metrics
// location), and the store's use. Reads shared memory and the store: a pool thread may call it.
signin::metrics::Dashboard dashboard();
// This worker's jobs waiting for a write batch.
void set_queue_depth(std::size_t waiting);

}  // namespace signin_ngx
