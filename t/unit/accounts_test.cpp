// Account changes (accounts.hpp): what is held, deleting an account, and no email
// for a suspended one.
#include <gtest/gtest.h>

#include "engine_fixtures.hpp"
#include "signin/auth.hpp"

using namespace signin;

namespace {

class AccountsTest : public signin::testing::EngineTest {
protected:
    void SetUp() override {
        EngineTest::SetUp();
        Policy policy = open_policy();
        policy.with_passwords = true;
        policy.with_mfa = true;
        make(policy);
    }
};

TEST_F(AccountsTest, WhatIsHeldAndNothingSecret) {
    Session s = sign_in("held@example.com");
    sign_in("held@example.com");
    ASSERT_TRUE(id_->passwords().set_password(principal(s), Secret(std::string("a long enough password"))));
    EXPECT_TRUE(id_->tokens().request_token(Intent::Login, "held@example.com", ""));
    auto a = id_->accounts().account(principal(s));
    ASSERT_TRUE(a) << a.error().message;
    EXPECT_EQ(a->user.email, "held@example.com");
    EXPECT_TRUE(a->user.password_hash.empty()) << "never the hash";
    EXPECT_TRUE(a->password);
    EXPECT_EQ(a->sessions.size(), 1u) << "setting the password ended the other session";
    EXPECT_TRUE(a->sessions[0].current);
    EXPECT_EQ(a->outstanding_tokens, 1u);
    EXPECT_FALSE(a->mfa.totp);
}

TEST_F(AccountsTest, DeletionNeedsAFreshSession) {
    Session s = sign_in("slow@example.com");
    clock_->advance(id_->policy().fresh_window);
    auto st = id_->accounts().delete_account(principal(s), "c");
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().code, Code::FreshSessionRequired);
}

TEST_F(AccountsTest, DeletionTakesEverythingAndFreesTheAddress) {
    Session other = sign_in("gone@example.com");
    Session s = sign_in("gone@example.com");
    auto setup = id_->mfa().setup_totp(principal(s), "c");
    ASSERT_TRUE(setup);
    EXPECT_TRUE(id_->tokens().request_token(Intent::Login, "gone@example.com", ""));
    const std::string user_id = s.user.id;
    ASSERT_TRUE(id_->accounts().delete_account(principal(s), "203.0.113.5"));
    auto r = store_->read();
    EXPECT_FALSE(r->user_by_id(user_id));
    EXPECT_FALSE(r->user_by_email("default", "gone@example.com"));
    EXPECT_TRUE(r->sessions_of(user_id).empty());
    EXPECT_TRUE(r->tokens_for("default", "gone@example.com").empty());
    EXPECT_FALSE(r->mfa(user_id));
    EXPECT_FALSE(id_->sessions().authenticate_from(other.token, "c"));
    bool found = false;
    for (const auto &e : r->audit(100)) {
        if (e.kind != "user.deleted") continue;
        found = true;
        EXPECT_EQ(e.user_id, user_id);
        EXPECT_EQ(e.email, "") << "the deletion keeps no address";
    }
    EXPECT_TRUE(found);
    r.reset();
    Session again = sign_in("gone@example.com");
    EXPECT_NE(again.user.id, user_id) << "the address registers again, as a new account";
}

TEST_F(AccountsTest, ASuspendedAccountGetsNoEmail) {
    sign_in("held-back@example.com");
    ASSERT_TRUE(id_->set_suspended("", "held-back@example.com", true));
    const std::size_t before = mailer_.count();
    EXPECT_TRUE(id_->tokens().request_token(Intent::Login, "held-back@example.com", "")) << "the same answer";
    EXPECT_TRUE(id_->tokens().request_token(Intent::Register, "held-back@example.com", ""));
    EXPECT_EQ(mailer_.count(), before) << "and nothing sent";
}

}  // namespace
