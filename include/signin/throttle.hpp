// Throttle rules (request, send and attempt limits): pure arithmetic on small fixed-size states, no
// clock, no storage, no nginx. The nginx glue keeps the states in a shared-memory zone (one per
// bucket kind and key) and calls these functions under the zone's lock; the limiters that count
// in the store or in process memory (password.hpp, shared_limits.hpp) call them too, as tests do.
// Valid C++17: the glue includes this header.
#pragma once

#include <cstdint>

namespace signin::throttle {

using Millis = std::int64_t;  // wall-clock milliseconds (epoch), or a duration

// ---------------------------------------------------------------- sliding window
// "At most `limit` requests per `window`", counted with a sliding window: the current window's
// count plus the previous window's count weighted by how much of the previous window still
// overlaps the last `window` milliseconds. Windows start at the key's first request (not at a
// wall-clock boundary), so a burst from a quiet key is counted exactly: the (limit+1)th request
// within one window is refused.
struct WindowRule {
    std::uint32_t limit = 0;  // 0 = no limit
    Millis window = 0;        // > 0
};

struct WindowState {
    Millis start = 0;          // start of the current window; 0 = never used
    std::uint32_t current = 0;  // requests counted in the current window
    std::uint32_t previous = 0; // requests counted in the window before it
};

struct Verdict {
    bool allowed = true;
    std::uint32_t retry_after = 0;  // whole seconds (>= 1) when refused; 0 when allowed
};

// Moves the state to the window holding `now` (a clock that went backwards counts as `start`).
WindowState roll(const WindowState &s, const WindowRule &rule, Millis now);

// Whether one more request fits now, without counting it; retry_after says when one will.
Verdict peek(const WindowState &s, const WindowRule &rule, Millis now);

// Counts one request if it fits: returns the verdict and updates `s` (rolled in any case).
Verdict take(WindowState &s, const WindowRule &rule, Millis now);

// Gives back one request counted by take() (for work that turned out not to happen).
void refund(WindowState &s, const WindowRule &rule, Millis now);

// When the state stops mattering: after this instant it equals a fresh state.
Millis window_expiry(const WindowState &s, const WindowRule &rule);

// ---------------------------------------------------------------- backoff
// "`free_failures` free, then each failure must wait `base`, doubling up to `max`":
// after the n-th counted failure the next attempt waits 0 while n < free_failures, then
// base * 2^(n - free_failures), at most max. Password attempts per address+client: free 5, 60 s,
// 1 h. Repeated password registration ("wait 60 seconds after the first, doubling up to 1 hour"):
// every registration counts, free 1. A success clears the state (the caller deletes it); a quiet
// period of `forget` starts over.
struct BackoffRule {
    std::uint32_t free_failures = 5;
    Millis base = 60 * 1000;
    Millis max = 3600 * 1000;
    Millis forget = 24 * 3600 * 1000;  // a quiet period this long starts over
};

struct BackoffState {
    std::uint32_t failures = 0;  // counted failures (attempts, for registration)
    Millis last = 0;             // when the last one happened; 0 = never
    Millis until = 0;            // no attempt before this instant
};

// Whether an attempt may be made now.
Verdict backoff_check(const BackoffState &s, const BackoffRule &rule, Millis now);

// Records a failure (or, for registration, an attempt) at `now`: the new state.
BackoffState backoff_fail(const BackoffState &s, const BackoffRule &rule, Millis now);

// The wait imposed after the n-th counted failure (0 while n <= free_failures).
Millis backoff_delay(std::uint32_t failures, const BackoffRule &rule);

// When the state stops mattering.
Millis backoff_expiry(const BackoffState &s, const BackoffRule &rule);

// Whole seconds, at least 1, for a positive wait in milliseconds.
std::uint32_t seconds_up(Millis wait);

}  // namespace signin::throttle
