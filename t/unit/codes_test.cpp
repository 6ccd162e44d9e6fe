// Short codes (codes.hpp): the form people type, one token spent by either form, and
// five wrong codes cancelling an address's tokens.
#include <gtest/gtest.h>

#include "engine_fixtures.hpp"
#include "signin/auth.hpp"
#include "signin/codes.hpp"

using namespace signin;

namespace {

TEST(Codes, TypedFormsAreRead) {
    for (int i = 0; i < 100; ++i) {
        std::string c = new_code();
        ASSERT_EQ(c.size(), 8u);
        EXPECT_EQ(normalize_code(c), c);
        EXPECT_EQ(normalize_code(format_code(c)), c);
    }
    EXPECT_EQ(normalize_code("abcd-efgh"), "ABCDEFGH");
    EXPECT_EQ(normalize_code(" ab cd ef gh "), "ABCDEFGH");
    EXPECT_EQ(normalize_code("oi1l-0000"), "0111" "0000") << "Crockford: O is 0, I and L are 1";
    EXPECT_FALSE(normalize_code("ABCD-EFG")) << "too short";
    EXPECT_FALSE(normalize_code("ABCD-EFGHJ")) << "too long";
    EXPECT_FALSE(normalize_code("ABCD-EFGU")) << "U is not in the alphabet";
    EXPECT_FALSE(normalize_code("ABCD_EFGH"));
    EXPECT_EQ(format_code("ABCDEFGH"), "ABCD-EFGH");
}

class CodeExchange : public signin::testing::EngineTest {
protected:
    void SetUp() override {
        EngineTest::SetUp();
        Policy policy = open_policy();
        make(policy, false, "http://127.0.0.1:8080");
    }
    Delivery request(std::string_view email) {
        EXPECT_TRUE(id_->tokens().request_token(Intent::Register, email, ""));
        return mailer_.last();
    }
    Result<Session> by_code(std::string_view email, std::string_view code) {
        return id_->tokens().exchange_code_from(email, code, "", "198.51.100.9");
    }
};

TEST_F(CodeExchange, EveryTokenEmailHasACodeThatSignsInOnce) {
    Delivery d = request("ann@example.com");
    ASSERT_EQ(d.code.size(), 9u);
    EXPECT_EQ(d.code[4], '-');
    std::string typed = d.code;
    for (auto &c : typed) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto s = by_code("ANN@example.com", typed);
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(s->user.email, "ann@example.com");
    EXPECT_FALSE(id_->tokens().exchange(d.token)) << "spending the code spent the token";
    EXPECT_FALSE(by_code("ann@example.com", d.code)) << "and the code once";
}

TEST_F(CodeExchange, SpendingTheTokenSpendsTheCode) {
    Delivery d = request("bea@example.com");
    ASSERT_TRUE(id_->tokens().exchange(d.token));
    auto s = by_code("bea@example.com", d.code);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, Code::InvalidToken);
}

TEST_F(CodeExchange, ACodeOnlyWorksWithItsAddress) {
    Delivery d = request("cy@example.com");
    request("dan@example.com");
    EXPECT_FALSE(by_code("dan@example.com", d.code));
    EXPECT_TRUE(by_code("cy@example.com", d.code));
}

TEST_F(CodeExchange, FiveWrongCodesCancelTheAddresssTokens) {
    Delivery older = request("eve@example.com");
    Delivery d = request("eve@example.com");
    const std::string wrong = d.code == "0000-0000" ? "1111-1111" : "0000-0000";
    for (int i = 0; i < 4; ++i) {
        auto r = by_code("eve@example.com", wrong);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().code, Code::InvalidToken);
    }
    EXPECT_EQ(store_->read()->tokens_for("default", "eve@example.com").size(), 2u) << "four: still waiting";
    EXPECT_FALSE(by_code("eve@example.com", "not a code at all")) << "the fifth (malformed counts too)";
    EXPECT_TRUE(store_->read()->tokens_for("default", "eve@example.com").empty()) << "five: every token cancelled";
    EXPECT_FALSE(by_code("eve@example.com", d.code)) << "the right code no longer works";
    EXPECT_FALSE(id_->tokens().exchange(older.token)) << "nor the older token";
    bool locked = false;
    for (const auto &e : store_->read()->audit(100)) locked = locked || e.kind == "code.locked";
    EXPECT_TRUE(locked) << "the audit trail says why";
}

TEST_F(CodeExchange, AWrongCodeForAnUnknownAddressLeavesNothing) {
    auto r = by_code("nobody@example.com", "ABCD-EFGH");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Code::InvalidToken);
    EXPECT_TRUE(store_->read()->tokens_for("default", "nobody@example.com").empty());
}

TEST_F(CodeExchange, AnExpiredTokensCodeIsRefused) {
    Delivery d = request("fay@example.com");
    clock_->advance(10 * 60 * 1000);
    EXPECT_FALSE(by_code("fay@example.com", d.code));
}

}  // namespace
