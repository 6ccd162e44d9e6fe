// The registration check's core parts (events.hpp): the question it asks, what its answer gives,
// and on both stores (SIGNIN_TEST_PG) a registration whose roles the new account gets when its
// token makes it, while an account that exists keeps its own.
#include <gtest/gtest.h>

#include "engine_fixtures.hpp"
#include "signin/auth.hpp"
#include "signin/events.hpp"
#include "store/records.hpp"

using namespace signin;

namespace {

TEST(RegistrationCheckBody, AsksEmailGroupMethodClient) {
    EXPECT_EQ(registration_check_body("ann@example.com", "staff", "password", "198.51.100.7"),
              R"({"email":"ann@example.com","group":"staff","method":"password","client":"198.51.100.7"})");
    // whatever an address holds stays inside its string
    const std::string odd = registration_check_body("a\"b@example.com", "", "email", "");
    EXPECT_NE(odd.find(R"("email":"a\"b@example.com")"), std::string::npos) << odd;
}

TEST(RegistrationCheckAnswer, RolesSortedOnceAndNothingElse) {
    std::string why;
    auto none = registration_check_roles("", &why);
    ASSERT_TRUE(none) << why;
    EXPECT_TRUE(none->empty());
    auto spaces = registration_check_roles(" \r\n", &why);
    ASSERT_TRUE(spaces) << why;
    EXPECT_TRUE(spaces->empty());
    auto other = registration_check_roles(R"({"ok": true})", &why);
    ASSERT_TRUE(other) << why;
    EXPECT_TRUE(other->empty()) << "an object without roles allows with none";
    auto null_roles = registration_check_roles(R"({"roles": null})", &why);
    ASSERT_TRUE(null_roles) << why;
    EXPECT_TRUE(null_roles->empty());
    auto roles = registration_check_roles(R"({"roles": ["editor", "beta", "editor"]})", &why);
    ASSERT_TRUE(roles) << why;
    EXPECT_EQ(*roles, (std::vector<std::string>{"beta", "editor"}));

    for (const char *bad : {"OK", "[]", R"("roles")", R"({"roles": "admin"})", R"({"roles": [1]})",
                            R"({"roles": ["no spaces"]})", R"({"roles": [""]})", "{\"roles\": [\"a\"]"}) {
        why.clear();
        EXPECT_FALSE(registration_check_roles(bad, &why)) << bad;
        EXPECT_FALSE(why.empty()) << bad;
    }
    std::string many = R"({"roles": [)";
    for (int i = 0; i < 65; ++i) many += (i ? ",\"r" : "\"r") + std::to_string(i) + "\"";
    many += "]}";
    EXPECT_FALSE(registration_check_roles(many, &why)) << "more roles than an account should get from one answer";
}

TEST(RegistrationCheckRecords, ATokensRolesRoundTrip) {
    TokenRecord t;
    t.hash = std::string(32, 'h');
    t.group_id = "";
    t.email = "ann@example.com";
    t.purpose = Purpose::Registration;
    t.created_at = 1;
    t.expires_at = 2;
    t.roles = {"beta", "editor"};
    const std::string data = records::encode_token(t);
    TokenRecord back = records::decode_token(t.hash, data);
    EXPECT_EQ(back.roles, t.roles);
    EXPECT_EQ(records::encode_token(back), data);
    // a token written before roles were kept (format 3) reads as one without roles
    t.roles.clear();
    std::string old = records::encode_token(t);
    ASSERT_EQ(old.back(), '\0') << "no roles: their count, a zero byte, ends the record";
    old.pop_back();
    old[0] = 3;
    EXPECT_TRUE(records::decode_token(t.hash, old).roles.empty());
}

class RegistrationRolesTest : public signin::testing::EngineTest {
protected:
    void SetUp() override {
        EngineTest::SetUp();
        Policy policy = open_policy();
        policy.with_passwords = true;
        policy.password_hash.opslimit = 1;  // a cheap Argon2id: these tests are about roles
        policy.password_hash.memlimit = 8 * 1024 * 1024;
        make(policy);
    }
    // The issued token's email: its purpose, and the account its exchange signs in to.
    Principal exchange(const Result<TokenIssue> &issued, Purpose expected) {
        EXPECT_TRUE(issued.ok() && issued->delivery.has_value());
        EXPECT_EQ(issued->delivery->purpose, expected);
        auto s = id_->tokens().exchange_from(issued->delivery->token, "198.51.100.1");
        EXPECT_TRUE(s) << s.error().message;
        return principal(s.value());
    }
};

TEST_F(RegistrationRolesTest, TheNewAccountGetsTheRoles) {
    auto issued = id_->tokens().issue_token(Intent::Register, "Ann@Example.com", "", "c", true, {"editor", "beta", "beta"});
    ASSERT_TRUE(issued) << issued.error().message;
    EXPECT_EQ(exchange(issued, Purpose::Registration).user.roles, (std::vector<std::string>{"beta", "editor"}));
}

TEST_F(RegistrationRolesTest, APasswordRegistrationToo) {
    auto hash = id_->passwords().prepare_password_registration("pw@example.com", Secret("violet tractor hums quietly"), "");
    ASSERT_TRUE(hash) << hash.error().message;
    auto issued = id_->passwords().issue_password_registration_hashed("pw@example.com", "", "c", hash.value(), true,
                                                                      {"beta"});
    ASSERT_TRUE(issued) << issued.error().message;
    EXPECT_EQ(exchange(issued, Purpose::Registration).user.roles, (std::vector<std::string>{"beta"}));
}

TEST_F(RegistrationRolesTest, AnAccountThatExistsKeepsItsOwn) {
    sign_in("old@example.com");
    auto issued = id_->tokens().issue_token(Intent::Register, "old@example.com", "", "c", true, {"zzgivenzz"});
    ASSERT_TRUE(issued) << issued.error().message;
    EXPECT_TRUE(exchange(issued, Purpose::AlreadyRegistered).user.roles.empty()) << "a registration of a known address gives it nothing";
    EXPECT_EQ(stored_bytes().find("zzgivenzz"), std::string::npos) << "nor keeps the roles anywhere";
}

TEST_F(RegistrationRolesTest, ANameThatIsNoRoleIsRefused) {
    auto issued = id_->tokens().issue_token(Intent::Register, "x@example.com", "", "c", true, {"no spaces"});
    ASSERT_FALSE(issued);
    EXPECT_EQ(issued.error().code, Code::InvalidRequest);
}

TEST(RegistrationCheckCodes, Names) {
    EXPECT_EQ(code_name(Code::RegistrationRefused), "registration_refused");
    EXPECT_EQ(code_name(Code::RegistrationCheckFailed), "registration_check_failed");
}

}  // namespace
