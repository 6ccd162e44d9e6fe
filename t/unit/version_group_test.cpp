// The version group: validation, fallback flattening and the routing decisions.
#include <gtest/gtest.h>

#include <limits>

#include "signin/version/group.hpp"

using namespace signin::version;
using Kind = Decision::Kind;

namespace {

// v1: GET /users, GET /users/{id}, POST /users; v2: GET /users/{id}, DELETE /users/{id};
// v3: GET /orders
void declare(Group &g) {
    auto v1 = g.add_version("v1", std::nullopt, std::nullopt);
    g.add_route(v1, "@legacy_v1", "GET", "/users");
    g.add_route(v1, "@legacy_v1", "GET", "/users/:id");
    g.add_route(v1, "@legacy_v1", "POST", "/users");
    auto v2 = g.add_version("v2", std::nullopt, std::nullopt);
    g.add_route(v2, "@users_v2", "GET", "/users/{id}");
    g.add_route(v2, "@users_v2", "DELETE", "/users/{id}");
    auto v3 = g.add_version("v3", std::nullopt, std::nullopt);
    g.add_route(v3, "@orders_v3", "GET", "/orders");
}

std::string who(const Decision &d) {
    if (d.kind != Kind::Route) return "-";
    return d.endpoint->route->controller;
}

}  // namespace

TEST(VersionGroup, ConfigurationErrors) {
    Group g;
    EXPECT_THROW(g.add_version("", std::nullopt, std::nullopt), ConfigError);
    auto v1 = g.add_version("v1", std::nullopt, std::nullopt);
    EXPECT_THROW(g.add_version("v1", std::nullopt, std::nullopt), ConfigError);
    EXPECT_THROW(g.add_version("v 2", std::nullopt, std::nullopt), ConfigError);
    EXPECT_THROW(g.add_version("a/b", std::nullopt, std::nullopt), ConfigError);
    EXPECT_THROW(g.add_version("v9", 200, 100), ConfigError);  // sunset before deprecation
    EXPECT_NO_THROW(g.add_version("v8", 100, 100));
    g.add_route(v1, "@a", "GET", "/x/{id}");
    EXPECT_THROW(g.add_route(v1, "@b", "GET", "/x/:other"), ConfigError);  // same route, other name
    EXPECT_NO_THROW(g.add_route(v1, "@b", "POST", "/x/:other"));
    EXPECT_THROW(g.add_route(v1, "legacy", "GET", "/y"), ConfigError);
    EXPECT_THROW(g.add_route(v1, "@a", "FETCH", "/y"), ConfigError);
    EXPECT_THROW(g.set_strategy(Strategy::Header, ""), ConfigError);
    EXPECT_THROW(g.set_strategy(Strategy::Header, "x api"), ConfigError);
    EXPECT_THROW(g.set_strategy(Strategy::Accept, ""), ConfigError);
    g.set_default("v7");
    EXPECT_THROW(g.finish(), ConfigError);  // default never declared
    g.set_default("v1");
    EXPECT_NO_THROW(g.finish());
    EXPECT_THROW(g.add_version("v10", std::nullopt, std::nullopt), ConfigError);
}

TEST(VersionGroup, EmptyGroupIsAnError) {
    Group g;
    EXPECT_THROW(g.finish(), ConfigError);
}

TEST(VersionGroup, HeaderNameIsLowerCased) {
    Group g;
    g.set_strategy(Strategy::Header, "X-API-Version");
    EXPECT_EQ(g.strategy_argument(), "x-api-version");
}

TEST(VersionGroup, FallbackIsPerRouteNewestFirst) {
    Group g;
    declare(g);
    g.finish();
    auto v3 = g.find("v3");
    ASSERT_NE(v3, npos);
    EXPECT_EQ(who(g.decide("GET", "/orders", "v3")), "@orders_v3");
    EXPECT_EQ(who(g.decide("GET", "/users/7", "v3")), "@users_v2");    // from v2, the newest
    EXPECT_EQ(who(g.decide("GET", "/users", "v3")), "@legacy_v1");     // only v1 has it
    EXPECT_EQ(who(g.decide("DELETE", "/users/7", "v3")), "@users_v2");
    EXPECT_EQ(who(g.decide("GET", "/users/7", "v1")), "@legacy_v1");
    EXPECT_EQ(who(g.decide("GET", "/orders", "v2")), "-");             // never backwards
    auto d = g.decide("GET", "/users/7", "v3");
    EXPECT_EQ(d.version, v3);                                          // requested stays
    EXPECT_EQ(d.endpoint->answered_by, g.find("v2"));
    // the flattened table of v3 lists everything it answers
    EXPECT_EQ(g.endpoints(v3).size(), 5u);
}

TEST(VersionGroup, NoFallbackAnswersOnlyOwnRoutes) {
    Group g;
    declare(g);
    g.set_fallback(false);
    g.finish();
    EXPECT_EQ(who(g.decide("GET", "/orders", "v3")), "@orders_v3");
    EXPECT_EQ(g.decide("GET", "/users/7", "v3").kind, Kind::NotFound);
    EXPECT_EQ(g.decide("GET", "/users", "v2").kind, Kind::NotFound);
    EXPECT_EQ(who(g.decide("GET", "/users/7", "v2")), "@users_v2");
    EXPECT_EQ(g.endpoints(g.find("v3")).size(), 1u);
}

TEST(VersionGroup, MethodNotAllowedListsWhatTheVersionAnswers) {
    Group g;
    declare(g);
    g.finish();
    auto d = g.decide("PUT", "/users/7", "v2");
    EXPECT_EQ(d.kind, Kind::MethodNotAllowed);
    EXPECT_EQ(d.allow, "GET, HEAD, DELETE");
    auto e = g.decide("DELETE", "/users", "v3");  // inherited GET and POST
    EXPECT_EQ(e.kind, Kind::MethodNotAllowed);
    EXPECT_EQ(e.allow, "GET, HEAD, POST");
    EXPECT_EQ(who(g.decide("HEAD", "/users", "v3")), "@legacy_v1");
}

TEST(VersionGroup, MissingAndUnknownVersions) {
    Group g;
    declare(g);
    g.set_strategy(Strategy::Header, "x-api-version");
    g.finish();
    EXPECT_EQ(g.decide("GET", "/users", "").kind, Kind::MissingVersion);
    EXPECT_EQ(g.decide("GET", "/no/route", "").kind, Kind::MissingVersion);  // even with no route
    auto u = g.decide("GET", "/users", "v9");
    EXPECT_EQ(u.kind, Kind::UnknownVersion);
    EXPECT_EQ(u.requested, "v9");
    EXPECT_EQ(g.decide("GET", "/users", "V1").kind, Kind::UnknownVersion);  // case-sensitive
    EXPECT_EQ(g.decide("GET", "/nothing", "v1").kind, Kind::NotFound);
}

TEST(VersionGroup, DefaultVersionAnswersWhenNoneIsNamed) {
    Group g;
    declare(g);
    g.set_strategy(Strategy::Accept, "acme");
    g.set_default("v2");
    g.finish();
    auto d = g.decide("GET", "/users/1", "");
    EXPECT_EQ(d.version, g.find("v2"));
    EXPECT_EQ(who(d), "@users_v2");
    EXPECT_EQ(g.decide("GET", "/orders", "").kind, Kind::NotFound);
}

TEST(VersionGroup, PathStrategyStripsOnlyDeclaredVersions) {
    Group g;
    declare(g);
    g.finish();
    auto d = g.decide_path("GET", "/v2/users/7");
    EXPECT_EQ(d.kind, Kind::Route);
    EXPECT_EQ(d.version, g.find("v2"));
    EXPECT_EQ(d.route_path, "/users/7");
    EXPECT_EQ(d.strip_len, 3u);
    auto root = g.decide_path("GET", "/v2");
    EXPECT_EQ(root.route_path, "/");
    EXPECT_EQ(root.version, g.find("v2"));
    // no default: unversioned and unknown prefixes are 404, never 400
    auto none = g.decide_path("GET", "/users");
    EXPECT_EQ(none.kind, Kind::NotFound);
    EXPECT_EQ(none.version, npos);
    EXPECT_EQ(g.decide_path("GET", "/v9/users").kind, Kind::NotFound);
    EXPECT_EQ(g.decide_path("GET", "/").kind, Kind::NotFound);
}

TEST(VersionGroup, PathStrategyWithDefault) {
    Group g;
    declare(g);
    g.set_default("v1");
    g.finish();
    auto d = g.decide_path("GET", "/users");
    EXPECT_EQ(who(d), "@legacy_v1");
    EXPECT_EQ(d.strip_len, 0u);
    EXPECT_EQ(d.route_path, "/users");
    // "v9" is not a version, so it is an ordinary segment of the default version: no route
    auto u = g.decide_path("GET", "/v9/users");
    EXPECT_EQ(u.kind, Kind::NotFound);
    EXPECT_EQ(u.version, g.find("v1"));
    EXPECT_EQ(g.decide_path("GET", "/v3/orders").endpoint->route->controller, "@orders_v3");
}

TEST(VersionGroup, AcceptHeaderParsing) {
    EXPECT_EQ(accept_version("application/vnd.acme.v2+json", "acme"), "v2");
    EXPECT_EQ(accept_version("text/html, Application/VND.Acme.2024-01+JSON; q=0.9", "acme"), "2024-01");
    EXPECT_EQ(accept_version("application/json, */*", "acme"), "");
    EXPECT_EQ(accept_version("application/vnd.acme+json", "acme"), "");
    EXPECT_EQ(accept_version("application/vnd.other.v2+json", "acme"), "");
    EXPECT_EQ(accept_version("application/vnd.acmex.v2+json", "acme"), "");
    EXPECT_EQ(accept_version("application/vnd.acme.v2+xml", "acme"), "");
    EXPECT_EQ(accept_version("application/vnd.acme.v1+json,application/vnd.acme.v3+json", "acme"), "v1");
    EXPECT_EQ(accept_version("", "acme"), "");
}

TEST(VersionGroup, ResolutionDoesNotDependOnGroupSize) {
    // 20 versions of 1,000 routes each: still exact answers (speed is measured in bench/)
    Group g;
    for (int v = 1; v <= 20; ++v) {
        auto i = g.add_version("v" + std::to_string(v), std::nullopt, std::nullopt);
        for (int r = 0; r < 1000; ++r) {
            int id = r < 500 ? r : v * 1000 + r;
            g.add_route(i, "@c" + std::to_string(v), "GET", "/res" + std::to_string(id) + "/items/{id}");
        }
    }
    g.finish();
    EXPECT_EQ(g.endpoints(g.find("v20")).size(), 500u + 20u * 500u);
    EXPECT_EQ(who(g.decide("GET", "/res3/items/9", "v20")), "@c20");
    EXPECT_EQ(who(g.decide("GET", "/res1600/items/9", "v20")), "@c1");
    EXPECT_EQ(g.decide("GET", "/res20600/items/9", "v19").kind, Kind::NotFound);
}

TEST(VersionGroup, GoneNeedsASunset) {
    Group g;
    EXPECT_THROW(g.add_version("v1", std::nullopt, std::nullopt, true), ConfigError);
    EXPECT_NO_THROW(g.add_version("v1", std::nullopt, 1000, true));
}

// v1 retired at 2000 (gone), v2 deprecated at 1500 with a sunset at 3000 (not gone: still answered
// after it), v3 current.
TEST(VersionGroup, RetiredAtTheSunsetOnlyWhenGone) {
    Group g;
    auto v1 = g.add_version("v1", 1000, 2000, true);
    g.add_route(v1, "@a", "GET", "/users");
    auto v2 = g.add_version("v2", 1500, 3000);
    g.add_route(v2, "@b", "GET", "/orders");
    auto v3 = g.add_version("v3", std::nullopt, std::nullopt);
    g.finish();
    EXPECT_FALSE(g.retired(v1, 1999));
    EXPECT_TRUE(g.retired(v1, 2000));
    EXPECT_TRUE(g.retired(v1, 1 << 30));
    EXPECT_FALSE(g.retired(v2, 3000));  // a sunset without `gone` only announces
    EXPECT_FALSE(g.retired(v3, 1 << 30));
    EXPECT_FALSE(g.retired(npos, 1 << 30));
    EXPECT_EQ(g.retired_message(v1), "API version v1 was retired on 1970-01-01T00:33:20Z");
    // the retired version's routes still answer the newer versions by fallback
    Decision d = g.decide("GET", "/users", "v3");
    ASSERT_EQ(d.kind, Kind::Route);
    EXPECT_EQ(d.endpoint->answered_by, v1);
}

TEST(VersionGroup, RetiredMessageWritesTheDateAsConfigured) {
    Group g;
    auto v1 = g.add_version("v1", std::nullopt, 1798761600, true);  // 2027-01-01
    g.add_route(v1, "@a", "GET", "/x");
    g.finish();
    EXPECT_EQ(g.retired_message(v1), "API version v1 was retired on 2027-01-01");
}

TEST(VersionGroup, ReportSplitsSupportedAndDeprecatedAndDropsRetired) {
    Group g;
    g.add_route(g.add_version("v1", 1000, 2000, true), "@a", "GET", "/users");
    g.add_version("v2", 1500, 3000);
    g.add_version("v3", std::nullopt, std::nullopt);
    g.finish();
    Report r = g.report(0);
    EXPECT_EQ(r.supported, "v1, v2, v3");
    EXPECT_EQ(r.deprecated, "");
    EXPECT_EQ(r.until, 1000);
    r = g.report(1000);
    EXPECT_EQ(r.supported, "v2, v3");
    EXPECT_EQ(r.deprecated, "v1");
    EXPECT_EQ(r.until, 1500);
    r = g.report(1700);
    EXPECT_EQ(r.supported, "v3");
    EXPECT_EQ(r.deprecated, "v1, v2");
    EXPECT_EQ(r.until, 2000);
    r = g.report(2000);
    EXPECT_EQ(r.supported, "v3");
    EXPECT_EQ(r.deprecated, "v2");  // v1 retired; v2's sunset (not gone) changes nothing
    EXPECT_EQ(r.until, std::numeric_limits<std::int64_t>::max());
}

// api_versions_pin: a request that named no version is answered in the caller's pinned version,
// routed by that version's table (fallback included); a named version is never re-decided.
TEST(VersionGroup, AnUnnamedRequestAnswersInAPinnedVersion) {
    Group g;
    declare(g);
    g.set_strategy(Strategy::Header, "x-api-version");
    g.set_default("v3");
    g.finish();
    auto unnamed = g.decide("GET", "/users/7", "");
    EXPECT_TRUE(unnamed.unnamed);
    EXPECT_EQ(unnamed.kind, Kind::Route);  // v3 inherits GET /users/{id} from v2
    auto pinned = g.decide_as("GET", unnamed, g.find("v1"));
    EXPECT_EQ(pinned.version, g.find("v1"));
    EXPECT_EQ(who(pinned), "@legacy_v1");
    EXPECT_EQ(pinned.route_path, "/users/7");
    EXPECT_TRUE(pinned.unnamed);
    // v3 answers DELETE /users/{id} (from v2), v1 does not
    EXPECT_EQ(g.decide("DELETE", "/users/7", "").kind, Kind::Route);
    auto refused = g.decide_as("DELETE", g.decide("DELETE", "/users/7", ""), g.find("v1"));
    EXPECT_EQ(refused.kind, Kind::MethodNotAllowed);
    EXPECT_EQ(refused.allow, "GET, HEAD");
    // a named version stays, and so does anything when the pin is no version of the group
    auto named = g.decide("GET", "/users/7", "v2");
    EXPECT_FALSE(named.unnamed);
    EXPECT_EQ(g.decide_as("GET", named, g.find("v1")).version, g.find("v2"));
    EXPECT_EQ(g.decide_as("GET", unnamed, npos).version, g.find("v3"));
    // no default: a missing version is unnamed too, and a pin answers it
    Group nodefault;
    declare(nodefault);
    nodefault.set_strategy(Strategy::Header, "x-api-version");
    nodefault.finish();
    auto missing = nodefault.decide("GET", "/users", "");
    EXPECT_EQ(missing.kind, Kind::MissingVersion);
    EXPECT_TRUE(missing.unnamed);
    EXPECT_EQ(who(nodefault.decide_as("GET", missing, nodefault.find("v1"))), "@legacy_v1");
}

TEST(VersionGroup, PathStrategyPinsOnlyPathsWithoutAVersion) {
    Group g;
    declare(g);
    g.finish();
    auto none = g.decide_path("GET", "/users");
    EXPECT_TRUE(none.unnamed);
    auto d = g.decide_as("GET", none, g.find("v1"));
    EXPECT_EQ(who(d), "@legacy_v1");
    EXPECT_EQ(d.strip_len, 0u);
    EXPECT_EQ(d.route_path, "/users");
    EXPECT_FALSE(g.decide_path("GET", "/v2/users/1").unnamed);
}
