// The throttle of the sign-in glue (SPEC §8, DESIGN §4 `signin_limits`): counters in one nginx
// shared-memory zone, shared by every worker and kept across `nginx -s reload`, keyed by bucket
// kind and key. The rules are the core's (signin/throttle.hpp); this header is what the
// endpoints and the require gate call. All calls run on the event loop.
#pragma once

#include "ngx_signin_nginx.h"

#include <cstdint>
#include <string_view>

#include "signin/throttle.hpp"

extern "C" {
extern ngx_module_t ngx_http_signin_limits_module;
}

namespace signin_ngx {

// The kind of a counter; part of its key, so one client has one counter per kind.
enum class Bucket : std::uint8_t {
    Sensitive = 1,        // per client: endpoints that send email, exchange tokens or check passwords
    SignedIn = 2,         // per client: signed-in endpoints and signin_require
    Address = 3,          // per address (group + email): token sends (SPEC §8 rule 1)
    ExchangeFailure = 4,  // per client: failed token exchanges (bounds token guessing)
    PasswordPair = 5,     // per address+client: password failures (backoff; the passwords issue)
    PasswordAddress = 6,  // per address: password attempts from any client (window)
    PasswordRegistration = 7,  // per address: repeated password registration (backoff)
};
const char *bucket_name(Bucket b);

struct Verdict {
    bool allowed = true;
    unsigned retry_after = 0;  // seconds, when refused
    bool audit = false;        // the first refusal of this key in this window: worth an audit entry
};

// Whether a zone is configured (limits can apply at all).
bool limits_on(ngx_http_request_t *r);

// Whether this cycle has a signin_limits zone, says "signin_limits off", or neither.
enum class LimitsMode { None, Zone, Off };
LimitsMode limits_mode(ngx_cycle_t *cycle);

// Window buckets with the configured rule (signin_limit_* directives): take counts one request
// if it fits; peek only asks; refund gives one back (work that turned out not to happen);
// note_failure counts one (its verdict does not matter to the caller).
Verdict limit_take(ngx_http_request_t *r, Bucket b, std::string_view key);
Verdict limit_peek(ngx_http_request_t *r, Bucket b, std::string_view key);
void limit_refund(ngx_http_request_t *r, Bucket b, std::string_view key);
void limit_note_failure(ngx_http_request_t *r, Bucket b, std::string_view key);
// The configured rule of a window bucket (none without a zone): what a store-kept counter of the
// same bucket applies (SharedLimits, a store that several nodes share).
signin::throttle::WindowRule limit_rule(ngx_http_request_t *r, Bucket b);
// The same with an explicit rule (buckets whose rule lives elsewhere, e.g. PasswordAddress).
Verdict limit_take_rule(ngx_http_request_t *r, Bucket b, std::string_view key,
                        const signin::throttle::WindowRule &rule);

// Backoff buckets (PasswordPair, PasswordRegistration): check before the attempt, fail after a
// failure (or, for registration, after every attempt), clear after a success.
Verdict backoff_check(ngx_http_request_t *r, Bucket b, std::string_view key,
                      const signin::throttle::BackoffRule &rule);
void backoff_fail(ngx_http_request_t *r, Bucket b, std::string_view key, const signin::throttle::BackoffRule &rule);
void backoff_clear(ngx_http_request_t *r, Bucket b, std::string_view key);

// The 429 answer (DESIGN §5): Retry-After, cache-control no-store and
// {"error", "code": "rate_limited", "retry_after"}; the request body is discarded. When
// v.audit, a `throttled` audit entry (client, bucket and `what`, never a secret) is written in
// the thread pool. Returns the output filter's rc.
ngx_int_t send_rate_limited(ngx_http_request_t *r, Bucket b, const Verdict &v, std::string_view what);

}  // namespace signin_ngx
