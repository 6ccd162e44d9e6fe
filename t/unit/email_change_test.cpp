// Email change (tokens.hpp): the new address confirms, the old one approves, in
// either order; the change is made by the second, and only then.
#include <gtest/gtest.h>

#include "engine_fixtures.hpp"
#include "signin/auth.hpp"

using namespace signin;

namespace {

class EmailChangeTest : public signin::testing::EngineTest {
protected:
    void SetUp() override {
        EngineTest::SetUp();
        Policy policy = open_policy();
        make(policy, false);
    }
    EmailChangeIssue change(const Session &s, std::string_view to) {
        auto c = id_->tokens().request_email_change(principal(s), to, "c");
        EXPECT_TRUE(c) << c.error().message;
        return std::move(c.value());
    }
    std::string email_of(const std::string &user_id) { return store_->read()->user_by_id(user_id)->email; }
};

TEST_F(EmailChangeTest, BothHalvesInEitherOrder) {
    for (bool new_first : {true, false}) {
        const std::string from = new_first ? "a1@example.com" : "b1@example.com";
        const std::string to = new_first ? "a2@example.com" : "b2@example.com";
        Session other = sign_in(from);
        Session s = sign_in(from);
        auto c = change(s, to);
        ASSERT_TRUE(c.to_new.delivery && c.to_old.delivery);
        EXPECT_EQ(c.to_new.delivery->email, to);
        EXPECT_EQ(c.to_new.delivery->purpose, Purpose::EmailChange);
        EXPECT_EQ(c.to_old.delivery->email, from);
        EXPECT_EQ(c.to_old.delivery->purpose, Purpose::EmailChangeApproval);
        const Secret &first = new_first ? c.to_new.delivery->token : c.to_old.delivery->token;
        const Secret &second = new_first ? c.to_old.delivery->token : c.to_new.delivery->token;
        auto one = id_->tokens().confirm_email_change(first, "c");
        ASSERT_TRUE(one) << one.error().message;
        EXPECT_EQ(one->status, new_first ? "confirmed" : "approved");
        EXPECT_EQ(email_of(s.user.id), from) << "nothing changes with one half";
        auto two = id_->tokens().confirm_email_change(second, "c");
        ASSERT_TRUE(two) << two.error().message;
        EXPECT_EQ(two->status, "changed");
        EXPECT_EQ(two->new_email, to);
        EXPECT_EQ(email_of(s.user.id), to);
        ASSERT_TRUE(two->notice.delivery);
        EXPECT_EQ(two->notice.delivery->email, from) << "EmailChanged goes to the old address";
        EXPECT_EQ(two->notice.delivery->purpose, Purpose::EmailChanged);
        EXPECT_TRUE(two->notice.delivery->token.empty());
        EXPECT_TRUE(id_->sessions().authenticate_from(s.token, "c")) << "the session that asked stays";
        EXPECT_FALSE(id_->sessions().authenticate_from(other.token, "c")) << "every other session ends";
        EXPECT_FALSE(id_->tokens().confirm_email_change(second, "c")) << "spent";
        // the new address signs in to the same account; the old one has none
        Session again = sign_in(to);
        EXPECT_EQ(again.user.id, s.user.id);
    }
}

// An account a provider made without an address (accounts.hpp) gets its first one: only the new
// address confirms, nothing is sent to an empty address, and no notice goes anywhere.
TEST_F(EmailChangeTest, AnAccountWithoutAnAddressGetsItsFirstByTheNewOneAlone) {
    Session s = sign_in("h1@example.com");
    {
        auto w = store_->write();
        User u = *w->user_by_id(s.user.id);
        u.email.clear();
        w->put_user(u);
        w->commit();
    }
    ASSERT_EQ(email_of(s.user.id), "");
    auto c = change(s, "h2@example.com");
    ASSERT_TRUE(c.to_new.delivery);
    EXPECT_EQ(c.to_new.delivery->email, "h2@example.com");
    EXPECT_FALSE(c.to_old.delivery) << "no approval to send to no address";
    EXPECT_TRUE(c.to_old.outbox_key.empty());
    auto done = id_->tokens().confirm_email_change(c.to_new.delivery->token, "c");
    ASSERT_TRUE(done) << done.error().message;
    EXPECT_EQ(done->status, "changed");
    EXPECT_EQ(email_of(s.user.id), "h2@example.com");
    EXPECT_FALSE(done->notice.delivery) << "no notice to no address";
    EXPECT_EQ(sign_in("h2@example.com").user.id, s.user.id) << "the address now signs in to the account";
}

TEST_F(EmailChangeTest, TheseTokensNeverSignInAndSignInTokensDoNotConfirm) {
    Session s = sign_in("c1@example.com");
    auto c = change(s, "c2@example.com");
    auto by_token = id_->tokens().exchange_from(c.to_new.delivery->token, "c");
    ASSERT_FALSE(by_token);
    EXPECT_EQ(by_token.error().code, Code::InvalidToken);
    EXPECT_FALSE(id_->tokens().exchange_code_from("c2@example.com", c.to_new.delivery->code, "", "c"));
    EXPECT_TRUE(id_->tokens().request_token(Intent::Login, "c1@example.com", ""));
    auto refused = id_->tokens().confirm_email_change(mailer_.last().token, "c");
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, Code::InvalidToken);
}

TEST_F(EmailChangeTest, ByCodeWithTheAddress) {
    Session s = sign_in("d1@example.com");
    auto c = change(s, "d2@example.com");
    EXPECT_FALSE(id_->tokens().confirm_email_change_code("d1@example.com", c.to_new.delivery->code, "", "c"))
        << "a code only with the address it was sent to";
    auto one = id_->tokens().confirm_email_change_code("d2@example.com", c.to_new.delivery->code, "", "c");
    ASSERT_TRUE(one) << one.error().message;
    auto two = id_->tokens().confirm_email_change_code("D1@example.com", c.to_old.delivery->code, "", "c");
    ASSERT_TRUE(two) << two.error().message;
    EXPECT_EQ(two->status, "changed");
}

TEST_F(EmailChangeTest, OneHalfExpiringEndsTheChange) {
    Session s = sign_in("e1@example.com");
    auto c = change(s, "e2@example.com");
    ASSERT_TRUE(id_->tokens().confirm_email_change(c.to_new.delivery->token, "c"));
    clock_->advance(id_->policy().token_ttl);
    EXPECT_FALSE(id_->tokens().confirm_email_change(c.to_old.delivery->token, "c"));
    EXPECT_EQ(email_of(s.user.id), "e1@example.com");
    auto d = change(s, "e2@example.com");
    clock_->advance(id_->policy().token_ttl / 2);
    ASSERT_TRUE(id_->tokens().confirm_email_change(d.to_old.delivery->token, "c"));
    clock_->advance(id_->policy().token_ttl / 2);
    EXPECT_FALSE(id_->tokens().confirm_email_change(d.to_new.delivery->token, "c")) << "the other half expired";
    EXPECT_EQ(email_of(s.user.id), "e1@example.com");
}

TEST_F(EmailChangeTest, ATakenAddressIsRecheckedAtTheChange) {
    Session s = sign_in("f1@example.com");
    auto c = change(s, "f2@example.com");  // free when asked: both emails go
    ASSERT_TRUE(c.to_new.delivery);
    ASSERT_TRUE(id_->tokens().confirm_email_change(c.to_new.delivery->token, "c"));
    sign_in("f2@example.com");  // someone registers it meanwhile
    auto two = id_->tokens().confirm_email_change(c.to_old.delivery->token, "c");
    ASSERT_FALSE(two);
    EXPECT_EQ(two.error().code, Code::EmailTaken);
    EXPECT_EQ(email_of(s.user.id), "f1@example.com");
}

TEST_F(EmailChangeTest, AskingForATakenAddressLooksTheSame) {
    sign_in("g2@example.com");
    Session s = sign_in("g1@example.com");
    auto c = id_->tokens().request_email_change(principal(s), "g2@example.com", "c");
    ASSERT_TRUE(c) << "the same answer: a third party learns nothing";
    EXPECT_TRUE(c->to_new.delivery && c->to_old.delivery) << "and both emails go";
    EXPECT_FALSE(id_->tokens().request_email_change(principal(s), "G1@example.com", "c")) << "its own address";
}

}  // namespace
