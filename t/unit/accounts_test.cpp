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

// What the account let other applications have (the OpenID provider's codes, tokens, refresh
// families) and what it agreed to goes with it; another account's stays.
TEST_F(AccountsTest, DeletionTakesTheProvidersGrantsAndConsents) {
    Session s = sign_in("leaving@example.com");
    Session other = sign_in("staying@example.com");
    auto grant = [&](const std::string &user_id, const std::string &tag) {
        op::AuthorizeRequest req;
        req.client_id = "wiki";
        req.redirect_uri = "https://wiki.example.com/cb";
        req.scopes = {"openid", "offline_access"};
        const Millis now = clock_->now();
        op::CodeRecord c = op::new_code(req, user_id, now, SignInMethod::EmailToken, false, "code-" + tag, now);
        auto family = op::new_family(c, "family-" + tag, now);
        auto w = store_->write();
        w->put_oidc_code(c);
        w->put_oidc_family(*family);
        w->put_oidc_refresh_token(op::refresh_token_record(*family, "refresh-" + tag, now));
        w->put_oidc_access_token(op::new_access_token("access-" + tag, "wiki", user_id, c.scopes, family->id, now));
        w->put_oidc_consent(op::grant_consent(nullptr, req, user_id, now));
        w->commit();
    };
    grant(s.user.id, "a");
    grant(other.user.id, "b");
    ASSERT_TRUE(id_->accounts().delete_account(principal(s), "c"));
    auto r = store_->read();
    EXPECT_FALSE(r->oidc_code("code-a"));
    EXPECT_FALSE(r->oidc_family("family-a"));
    EXPECT_FALSE(r->oidc_refresh_token("refresh-a"));
    EXPECT_FALSE(r->oidc_access_token("access-a"));
    EXPECT_FALSE(r->oidc_consent(s.user.id, "wiki"));
    EXPECT_TRUE(r->oidc_code("code-b"));
    EXPECT_TRUE(r->oidc_family("family-b"));
    EXPECT_TRUE(r->oidc_refresh_token("refresh-b"));
    EXPECT_TRUE(r->oidc_access_token("access-b"));
    EXPECT_TRUE(r->oidc_consent(other.user.id, "wiki"));
    EXPECT_TRUE(store_->check_integrity().empty());
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
