// The checks nginx -t runs on the sign-in settings, without nginx (signin/conf_check.hpp): each
// problem names its directive, and the defaults have none.
#include <gtest/gtest.h>

#include <string>

#include "signin/conf_check.hpp"

using namespace signin;

namespace {

std::string directives(const conf::Problems &problems) {
    std::string out;
    for (const conf::Problem &p : problems) out += (out.empty() ? "" : " ") + p.directive;
    return out;
}

}  // namespace

TEST(ConfCheck, DefaultsPass) {
    const Policy policy;
    EXPECT_TRUE(conf::check_sessions(policy).empty());
    EXPECT_TRUE(conf::check_passwords(policy).empty());
    EXPECT_TRUE(conf::check_delivery(conf::Delivery{true, true, false, 60000}).empty());
    EXPECT_TRUE(conf::check_delivery_ways(conf::Delivery{true, false, true, 60000}).empty());
    EXPECT_TRUE(conf::check_site(conf::Site{}).empty());
    EXPECT_TRUE(conf::check_providers(0, false).empty());
    EXPECT_TRUE(conf::check_providers(2, true).empty());
}

TEST(ConfCheck, ZeroLifetimesEachNamed) {
    Policy policy;
    policy.token_ttl = 0;
    policy.bearer_ttl = 0;
    policy.audit_keep = 0;
    const conf::Problems p = conf::check_sessions(policy);
    EXPECT_EQ(directives(p), "signin_token_ttl signin_bearer_ttl signin_audit_keep");
    EXPECT_TRUE(conf::has_error(p));
    EXPECT_EQ(p[0].message, "\"signin_token_ttl\" must be longer than 0 (every code or session would be dead on arrival)");
    EXPECT_EQ(p[2].message, "\"signin_audit_keep\" must be longer than 0");
}

TEST(ConfCheck, PasswordBackoffAboveItsMax) {
    Policy policy;
    policy.attempts.register_backoff = policy.attempts.register_backoff_max + 1;
    conf::Problems p = conf::check_passwords(policy);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].directive, "signin_password_register_backoff");
    EXPECT_EQ(p[0].message, "a signin_password_*backoff must not exceed its _max");

    policy = Policy{};
    policy.attempts.backoff = policy.attempts.backoff_max * 2;
    p = conf::check_passwords(policy);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].directive, "signin_password_backoff");
}

TEST(ConfCheck, PasswordZeroWindowOneAtATime) {
    Policy policy;
    policy.attempts.backoff = 0;
    policy.attempts.address_window = 0;
    const conf::Problems p = conf::check_passwords(policy);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].directive, "signin_password_address_window");
    EXPECT_EQ(p[0].message, "\"signin_password_address_window\" must be longer than 0 (a time window)");
}

TEST(ConfCheck, DeliveryNeedsAWayAndAHold) {
    conf::Problems p = conf::check_delivery(conf::Delivery{true, false, false, 60000});
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].directive, "signin_email");
    EXPECT_NE(p[0].message.find("email sign-in needs \"signin_smtp\""), std::string::npos);
    // no email sign-in: no way needed
    EXPECT_TRUE(conf::check_delivery(conf::Delivery{false, false, false, 60000}).empty());
    p = conf::check_delivery(conf::Delivery{true, false, true, 0});
    EXPECT_EQ(directives(p), "signin_delivery_timeout");
    EXPECT_EQ(p[0].message, "\"signin_delivery_timeout\" must be longer than 0");
}

TEST(ConfCheck, SmtpAndHttpDeliveryContradict) {
    const conf::Problems p = conf::check_delivery_ways(conf::Delivery{true, true, true, 60000});
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].directive, "signin_smtp");
    EXPECT_EQ(p[0].message.rfind("signin_smtp and signin_delivery both send the emails", 0), 0u);
    EXPECT_TRUE(conf::check_delivery_ways(conf::Delivery{true, true, false, 60000}).empty());
}

TEST(ConfCheck, SiteStoreKeyCacheAndBody) {
    conf::Site site;
    site.store.shared_by_nodes = true;
    site.store.reads_may_block = true;
    site.session_cache = 5000;  // of use with a store read over the network
    conf::Problems p = conf::check_site(site);
    EXPECT_EQ(directives(p), "signin_store");
    site.secret_key_named = true;
    EXPECT_TRUE(conf::check_site(site).empty());

    site = conf::Site{};
    site.session_cache = 5000;  // a store read in memory: warned about, not refused
    p = conf::check_site(site);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_TRUE(p[0].warning);
    EXPECT_FALSE(conf::has_error(p));

    site = conf::Site{};
    site.body_max = conf::kBodyMaxLimit;
    EXPECT_TRUE(conf::check_site(site).empty());
    site.body_max = conf::kBodyMaxLimit + 1;
    p = conf::check_site(site);
    EXPECT_EQ(directives(p), "signin_body_max");
    EXPECT_EQ(p[0].message, "\"signin_body_max\" must not exceed 64k");
}

TEST(ConfCheck, ProvidersNeedTheirFetchLocation) {
    const conf::Problems p = conf::check_providers(1, false);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].directive, "signin_provider");
    EXPECT_EQ(p[0].message.rfind("signin_provider needs \"signin_provider_fetch\"", 0), 0u);
}

TEST(ConfCheck, AdminNeedsSecondFactors) {
    EXPECT_TRUE(conf::check_admin(false, false).empty());
    EXPECT_TRUE(conf::check_admin(true, true).empty());
    const conf::Problems p = conf::check_admin(true, false);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_TRUE(conf::has_error(p));
    EXPECT_EQ(p[0].directive, "signin_admin");
    EXPECT_EQ(p[0].message.rfind("signin_admin needs \"signin_mfa on\"", 0), 0u);
}

// A database's connections: every node's workers together against what the server allows.
TEST(ConfCheck, ConnectionsAboveTheDatabasesLimitAreAWarningWithTheArithmetic) {
    EXPECT_TRUE(conf::check_connections(conf::Connections{2, 8, 1, 97}).empty());
    EXPECT_TRUE(conf::check_connections(conf::Connections{4, 7, 3, 96}).empty()) << "exactly the limit is fine";
    EXPECT_FALSE(conf::check_connections(conf::Connections{4, 8, 3, 96}).empty())
        << "each worker's connection for its session reads counts too";
    const conf::Problems p = conf::check_connections(conf::Connections{4, 8, 4, 97});
    ASSERT_EQ(p.size(), 1u);
    EXPECT_TRUE(p[0].warning);
    EXPECT_FALSE(conf::has_error(p));
    EXPECT_EQ(p[0].directive, "signin_store");
    EXPECT_NE(p[0].message.find("4 nodes x 4 worker processes x (connections=8 + 1 for the session reads) = 144 connections"), std::string::npos)
        << p[0].message;
    EXPECT_NE(p[0].message.find("hold 97"), std::string::npos) << p[0].message;
}
