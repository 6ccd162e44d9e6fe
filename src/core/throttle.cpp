// Throttle arithmetic (see throttle.hpp). Integer milliseconds throughout; products stay far
// below 2^63 for the bounds the glue enforces (limit <= 1e6, window <= 30 days).
#include "signin/throttle.hpp"

#include <algorithm>

namespace signin::throttle {

std::uint32_t seconds_up(Millis wait) {
    if (wait <= 0) return 1;
    Millis s = (wait + 999) / 1000;
    return static_cast<std::uint32_t>(std::min<Millis>(std::max<Millis>(s, 1), 0xffffffffLL));
}

WindowState roll(const WindowState &s, const WindowRule &rule, Millis now) {
    if (s.start == 0 || rule.window <= 0) return WindowState{now, 0, 0};
    if (now <= s.start) return s;  // same window (or a clock that went backwards)
    const Millis windows = (now - s.start) / rule.window;
    if (windows == 0) return s;
    if (windows == 1) return WindowState{s.start + rule.window, 0, s.current};
    return WindowState{now, 0, 0};  // quiet for two windows or more: start afresh at this request
}

Verdict peek(const WindowState &in, const WindowRule &rule, Millis now) {
    if (rule.limit == 0 || rule.window <= 0) return Verdict{};
    const WindowState s = roll(in, rule, now);
    const Millis w = rule.window;
    const Millis limit = rule.limit;
    const Millis prev = s.previous, cur = s.current;
    const Millis e = std::clamp<Millis>(now - s.start, 0, w - 1);
    // weighted count, in request-milliseconds: prev * (w - e) / w + cur, times w
    if (prev * (w - e) + cur * w + w <= limit * w) return Verdict{};

    // Refused: the earliest instant at which one more request fits.
    Millis at = -1;
    if (cur + 1 <= limit && prev > 0) {
        // within this window, as the previous window's weight shrinks
        const Millis e_min = w - ((limit - 1 - cur) * w) / prev;
        if (e_min < w) at = s.start + std::max(e_min, e + 1);
    }
    if (at < 0) {
        // in the next window, where this window's count becomes the previous one
        Millis e_min = 0;
        if (cur > 0) e_min = std::max<Millis>(0, w - ((limit - 1) * w) / cur);
        at = s.start + w + e_min;
    }
    return Verdict{false, seconds_up(at - now)};
}

Verdict take(WindowState &s, const WindowRule &rule, Millis now) {
    if (rule.limit == 0 || rule.window <= 0) return Verdict{};
    WindowState r = roll(s, rule, now);
    Verdict v = peek(r, rule, now);
    if (v.allowed && r.current < 0xffffffffu) r.current++;
    s = r;
    return v;
}

void refund(WindowState &s, const WindowRule &rule, Millis now) {
    if (rule.limit == 0 || rule.window <= 0 || s.start == 0) return;
    WindowState r = roll(s, rule, now);
    if (r.current > 0) r.current--;
    s = r;
}

Millis window_expiry(const WindowState &s, const WindowRule &rule) {
    if (s.start == 0) return 0;
    return s.start + 2 * std::max<Millis>(rule.window, 0);
}

Millis backoff_delay(std::uint32_t failures, const BackoffRule &rule) {
    if (failures < rule.free_failures || rule.base <= 0) return 0;
    std::uint32_t shift = failures - rule.free_failures;
    Millis d = rule.base;
    for (std::uint32_t i = 0; i < shift && d < rule.max; i++) d *= 2;
    return std::min(d, std::max(rule.max, rule.base));
}

Verdict backoff_check(const BackoffState &s, const BackoffRule &rule, Millis now) {
    if (s.last == 0 || now >= s.until) return Verdict{};
    if (rule.forget > 0 && now - s.last >= rule.forget) return Verdict{};
    return Verdict{false, seconds_up(s.until - now)};
}

BackoffState backoff_fail(const BackoffState &in, const BackoffRule &rule, Millis now) {
    BackoffState s = in;
    if (s.last != 0 && rule.forget > 0 && now - s.last >= rule.forget) s = BackoffState{};
    if (s.failures < 0xffffffffu) s.failures++;
    s.last = now;
    s.until = std::max(s.until, now + backoff_delay(s.failures, rule));
    return s;
}

Millis backoff_expiry(const BackoffState &s, const BackoffRule &rule) {
    if (s.last == 0) return 0;
    return std::max(s.until, s.last + std::max<Millis>(rule.forget, 0));
}

}  // namespace signin::throttle
