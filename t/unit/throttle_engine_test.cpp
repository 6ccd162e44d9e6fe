// The engine's side of throttling: issue_token with may_send = false (the address
// is over its send limit: the same answer, nothing sent) and Identity::record for a transport's `throttled` entries.
#include <gtest/gtest.h>

#include "engine_fixtures.hpp"
#include "signin/auth.hpp"

using namespace signin;

namespace {

class ThrottleEngineTest : public signin::testing::EngineTest {
protected:
    void SetUp() override {
        EngineTest::SetUp();
        Policy p;
        p.allow_registration = true;
        make(p, false, "http://127.0.0.1:8080");
    }
};

TEST_F(ThrottleEngineTest, OverTheAddressLimitNothingIsIssuedAndThrottledIsAudited) {
    auto r = id_->tokens().issue_token(Intent::Register, "New@Example.com", "", "198.51.100.7", false);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_FALSE(r->delivery.has_value());
    auto audit = store_->read()->audit(10);
    ASSERT_FALSE(audit.empty());
    EXPECT_EQ(audit.front().kind, "throttled");
    EXPECT_EQ(audit.front().email, "new@example.com");
    EXPECT_EQ(audit.front().client, "198.51.100.7");
    EXPECT_EQ(audit.front().detail, "address:register");
    EXPECT_TRUE(store_->read()->tokens_for("default", "new@example.com").empty());

    // the same request allowed to send makes a token
    auto sent = id_->tokens().issue_token(Intent::Register, "new@example.com", "", "198.51.100.7", true);
    ASSERT_TRUE(sent);
    EXPECT_TRUE(sent->delivery.has_value());
}

TEST_F(ThrottleEngineTest, RecordAppendsOneEntry) {
    AuditEntry e;
    e.kind = "throttled";
    e.client = "203.0.113.9";
    e.detail = "sensitive:/login";
    ASSERT_TRUE(id_->record(e));
    auto audit = store_->read()->audit(10);
    ASSERT_EQ(audit.size(), 1u);
    EXPECT_EQ(audit[0].kind, "throttled");
    EXPECT_EQ(audit[0].detail, "sensitive:/login");
    EXPECT_GT(audit[0].at, 0);
}

}  // namespace
