// signin_session_cache (session_cache.hpp): what a hit may return, and for how long.
#include <gtest/gtest.h>

#include "signin/session_cache.hpp"

using namespace signin;

namespace {

Principal principal(SessionKind kind = SessionKind::Cookie) {
    Principal p;
    p.user.id = "u1";
    p.user.email = "a@example.com";
    p.session.id = "s1";
    p.session.kind = kind;
    p.session.created_at = 1000;
    p.session.last_seen_at = 1000;
    p.session.expires_at = 1000000;
    return p;
}

Policy policy() {
    Policy p;
    p.session_idle = 500000;
    return p;
}

}  // namespace

TEST(SessionCache, AHitIsWhatTheStoreSaidForTtl) {
    SessionCache c(5000, 10);
    c.put("k", principal(), 2000);
    const Principal *hit = c.get("k", SessionKind::Cookie, policy(), 6999);
    ASSERT_NE(hit, nullptr);
    EXPECT_EQ(hit->user.email, "a@example.com");
    EXPECT_EQ(c.get("k", SessionKind::Cookie, policy(), 7000), nullptr) << "ttl over: read the store again";
    EXPECT_EQ(c.size(), 0u) << "and the entry is gone";
}

TEST(SessionCache, NeverOutlivesTheSessionOrItsKind) {
    SessionCache c(1000000, 10);
    Principal p = principal();
    p.session.expires_at = 3000;
    c.put("k", p, 2000);
    EXPECT_NE(c.get("k", SessionKind::Cookie, policy(), 2999), nullptr);
    EXPECT_EQ(c.get("k", SessionKind::Cookie, policy(), 3000), nullptr) << "expired by its own date";
    c.put("b", principal(SessionKind::Bearer), 2000);
    EXPECT_EQ(c.get("b", SessionKind::Cookie, policy(), 2001), nullptr) << "a bearer token is no cookie";
    Principal idle = principal();
    c.put("i", idle, 2000);
    EXPECT_EQ(c.get("i", SessionKind::Cookie, policy(), 1000 + 500000), nullptr) << "idle too long";
    EXPECT_EQ(c.get("k", SessionKind::Cookie, policy(), 1999), nullptr) << "a clock that went back: no hit";
}

TEST(SessionCache, TouchedEntriesDoNotAskForAnotherTouch) {
    SessionCache c(100000, 10);
    c.put("k", principal(), 2000);
    c.touched("k", 50000);
    EXPECT_EQ(c.get("k", SessionKind::Cookie, policy(), 50001)->session.last_seen_at, 50000);
}

TEST(SessionCache, IsBoundedOldestFirstAndErasable) {
    SessionCache c(100000, 3);
    for (int i = 0; i < 5; ++i) c.put("k" + std::to_string(i), principal(), 2000 + i);
    EXPECT_EQ(c.size(), 3u);
    EXPECT_EQ(c.get("k0", SessionKind::Cookie, policy(), 3000), nullptr);
    EXPECT_NE(c.get("k4", SessionKind::Cookie, policy(), 3000), nullptr);
    c.erase("k4");
    EXPECT_EQ(c.get("k4", SessionKind::Cookie, policy(), 3000), nullptr);
    SessionCache off(0, 3);
    off.put("k", principal(), 2000);
    EXPECT_EQ(off.size(), 0u) << "ttl 0: nothing is kept";
}
