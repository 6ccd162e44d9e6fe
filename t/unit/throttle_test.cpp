// Throttle arithmetic: the sliding window behind every request limit, and the backoff
// rule the password limits use. Pure functions: no clock, no store.
#include <gtest/gtest.h>

#include "signin/throttle.hpp"

using namespace signin::throttle;

namespace {

constexpr Millis kT0 = 1795000000000;  // 2026-11-18T11:06:40Z
constexpr Millis kSec = 1000;
constexpr Millis kMin = 60 * kSec;

}  // namespace

TEST(WindowTest, ThirtyPerMinuteRefusesTheThirtyFirst) {
    WindowRule rule{30, kMin};
    WindowState s;
    for (int i = 0; i < 30; i++) {
        EXPECT_TRUE(take(s, rule, kT0 + i * 100).allowed) << i;
    }
    Verdict v = take(s, rule, kT0 + 3100);
    EXPECT_FALSE(v.allowed);
    // the next window starts at kT0 + 60 s; the old 30 weigh (60 - e)/60 * 30 < 30 from e > 2 s
    EXPECT_EQ(v.retry_after, 59u);
    EXPECT_EQ(s.current, 30u);  // a refused request is not counted
}

TEST(WindowTest, RefusedUntilRetryAfterThenAllowed) {
    WindowRule rule{3, 2 * kSec};
    WindowState s;
    for (int i = 0; i < 3; i++) ASSERT_TRUE(take(s, rule, kT0).allowed);
    Verdict v = take(s, rule, kT0 + 10);
    ASSERT_FALSE(v.allowed);
    EXPECT_EQ(v.retry_after, 3u);  // next window at +2 s, then 3*(2000-e)/2000 <= 2 at e >= 667
    EXPECT_FALSE(take(s, rule, kT0 + 2600).allowed);
    EXPECT_TRUE(take(s, rule, kT0 + 10 + v.retry_after * kSec).allowed);
}

TEST(WindowTest, RetryAfterIsNeverEarly) {
    // For many shapes of traffic: at now + retry_after one more request fits, and peek agrees
    // with take.
    for (std::uint32_t limit : {1u, 2u, 3u, 5u, 30u, 300u}) {
        for (Millis window : {kSec, 2 * kSec, kMin, 3600 * kSec}) {
            WindowRule rule{limit, window};
            WindowState s;
            Millis now = kT0;
            for (int i = 0; i < 4000; i++) {
                now += (i * 7919) % (window / 10 + 1);
                Verdict p = peek(s, rule, now);
                WindowState before = s;
                Verdict v = take(s, rule, now);
                ASSERT_EQ(p.allowed, v.allowed);
                if (!v.allowed) {
                    ASSERT_GE(v.retry_after, 1u);
                    ASSERT_LE(static_cast<Millis>(v.retry_after) * kSec, 2 * window + kSec);
                    ASSERT_TRUE(peek(before, rule, now + v.retry_after * kSec).allowed)
                        << "limit " << limit << " window " << window << " i " << i;
                }
            }
        }
    }
}

TEST(WindowTest, NeverMoreThanTheLimitInOneWindow) {
    // A client hammering every 10 ms never gets more than `limit` in any window-long span that
    // starts at a window boundary, and the sustained rate stays at the limit.
    WindowRule rule{30, kMin};
    WindowState s;
    int allowed_total = 0;
    int in_first_window = 0;
    for (Millis t = 0; t < 10 * kMin; t += 10) {
        if (take(s, rule, kT0 + t).allowed) {
            allowed_total++;
            if (t < kMin) in_first_window++;
        }
    }
    EXPECT_EQ(in_first_window, 30);
    EXPECT_LE(allowed_total, 30 * 10 + 1);
    EXPECT_GE(allowed_total, 30 * 9);
}

TEST(WindowTest, WindowsReopenAndQuietKeysStartAfresh) {
    WindowRule rule{2, 10 * kSec};
    WindowState s;
    EXPECT_TRUE(take(s, rule, kT0).allowed);
    EXPECT_TRUE(take(s, rule, kT0 + 1).allowed);
    EXPECT_FALSE(take(s, rule, kT0 + 2).allowed);
    // two windows later nothing is remembered
    EXPECT_TRUE(take(s, rule, kT0 + 25 * kSec).allowed);
    EXPECT_EQ(s.start, kT0 + 25 * kSec);
    EXPECT_EQ(s.previous, 0u);
    EXPECT_EQ(s.current, 1u);
    EXPECT_EQ(window_expiry(s, rule), kT0 + 45 * kSec);
}

TEST(WindowTest, PreviousWindowWeighsLessAsItSlidesAway) {
    WindowRule rule{10, 10 * kSec};
    WindowState s;
    for (int i = 0; i < 10; i++) ASSERT_TRUE(take(s, rule, kT0).allowed);
    // at 5 s into the next window the old 10 weigh 5: five more fit
    int ok = 0;
    for (int i = 0; i < 10; i++) ok += take(s, rule, kT0 + 15 * kSec).allowed ? 1 : 0;
    EXPECT_EQ(ok, 5);
}

TEST(WindowTest, RefundGivesBackOne) {
    WindowRule rule{1, kMin};
    WindowState s;
    EXPECT_TRUE(take(s, rule, kT0).allowed);
    EXPECT_FALSE(peek(s, rule, kT0 + 1).allowed);
    refund(s, rule, kT0 + 2);
    EXPECT_TRUE(take(s, rule, kT0 + 3).allowed);
}

TEST(WindowTest, ZeroLimitIsOffAndBackwardClockIsHarmless) {
    WindowState s;
    for (int i = 0; i < 1000; i++) EXPECT_TRUE(take(s, WindowRule{0, kMin}, kT0).allowed);
    WindowRule rule{2, kMin};
    WindowState t;
    EXPECT_TRUE(take(t, rule, kT0).allowed);
    EXPECT_TRUE(take(t, rule, kT0 - 5 * kSec).allowed);  // clock stepped back: same window
    Verdict v = take(t, rule, kT0 - 10 * kSec);
    EXPECT_FALSE(v.allowed);
    EXPECT_GE(v.retry_after, 60u);
}

TEST(BackoffTest, FiveFreeThenDoublingUpToAnHour) {
    BackoffRule rule;  // 5 free, 60 s, 1 h
    EXPECT_EQ(backoff_delay(1, rule), 0);
    EXPECT_EQ(backoff_delay(4, rule), 0);
    EXPECT_EQ(backoff_delay(5, rule), 60 * kSec);
    EXPECT_EQ(backoff_delay(6, rule), 120 * kSec);
    EXPECT_EQ(backoff_delay(10, rule), 1920 * kSec);
    EXPECT_EQ(backoff_delay(11, rule), 3600 * kSec);
    EXPECT_EQ(backoff_delay(4000000000u, rule), 3600 * kSec);

    BackoffState s;
    Millis now = kT0;
    for (int i = 0; i < 5; i++) {
        ASSERT_TRUE(backoff_check(s, rule, now).allowed) << i;
        s = backoff_fail(s, rule, now);
        now += kSec;
    }
    Verdict v = backoff_check(s, rule, now);
    EXPECT_FALSE(v.allowed);
    EXPECT_EQ(v.retry_after, 59u);
    now = s.until;
    EXPECT_TRUE(backoff_check(s, rule, now).allowed);
    s = backoff_fail(s, rule, now);
    EXPECT_EQ(s.until - now, 120 * kSec);
}

TEST(BackoffTest, RegistrationWaitsAfterTheFirst) {
    BackoffRule rule{1, 60 * kSec, 3600 * kSec, 24 * 3600 * kSec};
    BackoffState s;
    EXPECT_TRUE(backoff_check(s, rule, kT0).allowed);
    s = backoff_fail(s, rule, kT0);  // the first registration
    EXPECT_FALSE(backoff_check(s, rule, kT0 + 59 * kSec).allowed);
    EXPECT_TRUE(backoff_check(s, rule, kT0 + 60 * kSec).allowed);
    s = backoff_fail(s, rule, kT0 + 60 * kSec);
    EXPECT_EQ(s.until, kT0 + 180 * kSec);
}

TEST(BackoffTest, QuietPeriodForgets) {
    BackoffRule rule{2, 10 * kSec, 100 * kSec, 1000 * kSec};
    BackoffState s;
    for (int i = 0; i < 6; i++) s = backoff_fail(s, rule, kT0);
    EXPECT_FALSE(backoff_check(s, rule, kT0 + 50 * kSec).allowed);
    EXPECT_EQ(backoff_expiry(s, rule), kT0 + 1000 * kSec);
    s = backoff_fail(s, rule, kT0 + 1000 * kSec);
    EXPECT_EQ(s.failures, 1u);
    EXPECT_TRUE(backoff_check(s, rule, kT0 + 1000 * kSec).allowed);
}
