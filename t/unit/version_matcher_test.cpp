// Route patterns and the per-version route table (trie) with no nginx.
#include <gtest/gtest.h>

#include <deque>

#include "signin/version/pattern.hpp"
#include "version/table.hpp"

using namespace signin::version;

namespace {

// Keeps declarations alive for the endpoints that point at them.
struct Routes {
    std::deque<RouteDecl> decls;
    std::vector<Endpoint> endpoints;
    void add(const char *method, const char *pattern, const char *controller = "@c", std::size_t by = 0) {
        decls.push_back(RouteDecl{method, parse_pattern(pattern), controller});
        endpoints.push_back(Endpoint{&decls.back(), by});
    }
};

std::string controller_of(const RouteTable &t, const char *method, const char *path) {
    auto m = t.match(method, path);
    return m.endpoint ? m.endpoint->route->controller : std::string("-");
}

}  // namespace

TEST(VersionPattern, BracesAndColonsAreTheSameShape) {
    auto a = parse_pattern("/users/{id}/posts");
    auto b = parse_pattern("/users/:uid/posts");
    EXPECT_EQ(a.shape(), "/users/{}/posts");
    EXPECT_EQ(a.shape(), b.shape());
    EXPECT_EQ(b.templated(), "/users/{uid}/posts");
    ASSERT_EQ(a.segments.size(), 3u);
    EXPECT_TRUE(a.segments[1].param);
    EXPECT_EQ(a.segments[1].text, "id");
    EXPECT_EQ(parse_pattern("/").shape(), "/");
    EXPECT_TRUE(parse_pattern("/").segments.empty());
}

TEST(VersionPattern, RejectsMalformedPatterns) {
    EXPECT_THROW(parse_pattern(""), ConfigError);
    EXPECT_THROW(parse_pattern("users"), ConfigError);
    EXPECT_THROW(parse_pattern("/users//x"), ConfigError);
    EXPECT_THROW(parse_pattern("/users/"), ConfigError);
    EXPECT_THROW(parse_pattern("/users/{}"), ConfigError);
    EXPECT_THROW(parse_pattern("/users/:"), ConfigError);
    EXPECT_THROW(parse_pattern("/users/{a-b}"), ConfigError);
    EXPECT_THROW(parse_pattern("/a/{id}/b/:id"), ConfigError);
    EXPECT_THROW(parse_pattern("/a b"), ConfigError);
    EXPECT_THROW(parse_pattern("/a{b"), ConfigError);
    EXPECT_THROW(check_method("get"), ConfigError);
    EXPECT_THROW(check_method("FETCH"), ConfigError);
    EXPECT_NO_THROW(check_method("PATCH"));
}

TEST(VersionTable, LiteralAndParameterSegments) {
    Routes r;
    r.add("GET", "/users", "@list");
    r.add("GET", "/users/{id}", "@one");
    r.add("GET", "/users/{id}/posts/:post", "@post");
    r.add("GET", "/", "@root");
    RouteTable t(r.endpoints);
    EXPECT_EQ(controller_of(t, "GET", "/users"), "@list");
    EXPECT_EQ(controller_of(t, "GET", "/users/7"), "@one");
    EXPECT_EQ(controller_of(t, "GET", "/users/7/posts/9"), "@post");
    EXPECT_EQ(controller_of(t, "GET", "/"), "@root");
    EXPECT_EQ(controller_of(t, "GET", ""), "@root");
    EXPECT_EQ(controller_of(t, "GET", "/users/7/posts"), "-");
    EXPECT_EQ(controller_of(t, "GET", "/users/"), "-");   // empty segment
    EXPECT_EQ(controller_of(t, "GET", "/users//7"), "-");
    EXPECT_EQ(controller_of(t, "GET", "/Users"), "-");    // case-sensitive
    EXPECT_EQ(controller_of(t, "GET", "/users/7/x/9"), "-");
    EXPECT_TRUE(t.match("GET", "/nothing").allow.empty());
}

TEST(VersionTable, MethodsHeadAndAllow) {
    Routes r;
    r.add("GET", "/items", "@get");
    r.add("POST", "/items", "@post");
    r.add("DELETE", "/items/{id}", "@del");
    RouteTable t(r.endpoints);
    EXPECT_EQ(controller_of(t, "HEAD", "/items"), "@get");
    EXPECT_EQ(controller_of(t, "POST", "/items"), "@post");
    auto m = t.match("PUT", "/items");
    EXPECT_EQ(m.endpoint, nullptr);
    EXPECT_EQ(m.allow, "GET, HEAD, POST");
    auto d = t.match("GET", "/items/3");
    EXPECT_EQ(d.endpoint, nullptr);
    EXPECT_EQ(d.allow, "DELETE");  // no GET there, so no HEAD either
    EXPECT_EQ(controller_of(t, "HEAD", "/items/3"), "-");
}

TEST(VersionTable, ExplicitHeadRouteWinsOverGet) {
    Routes r;
    r.add("GET", "/x", "@get");
    r.add("HEAD", "/x", "@head");
    RouteTable t(r.endpoints);
    EXPECT_EQ(controller_of(t, "HEAD", "/x"), "@head");
    EXPECT_EQ(t.match("PUT", "/x").allow, "GET, HEAD");
}

TEST(VersionTable, LiteralBeatsParameterWithoutBacktracking) {
    Routes r;
    r.add("GET", "/users/me", "@me");
    r.add("GET", "/users/{id}/posts", "@posts");
    r.add("POST", "/users/{id}", "@update");
    RouteTable t(r.endpoints);
    EXPECT_EQ(controller_of(t, "GET", "/users/me"), "@me");
    // "me" is also a value for {id}: routes below the parameter stay reachable
    EXPECT_EQ(controller_of(t, "GET", "/users/me/posts"), "@posts");
    EXPECT_EQ(controller_of(t, "POST", "/users/me"), "@update");
    EXPECT_EQ(t.match("PUT", "/users/me").allow, "GET, HEAD, POST");
    EXPECT_EQ(controller_of(t, "GET", "/users/5"), "-");
    EXPECT_EQ(t.match("GET", "/users/5").allow, "POST");
}

TEST(VersionTable, TheLeftmostLiteralDecidesBetweenOverlappingRoutes) {
    // issue #19 item 12: for /a/b/c the literal "a" of the first segment wins over {y}, although
    // the other route has the literal at the second segment
    Routes r;
    r.add("GET", "/a/{x}/c", "@a_x_c");
    r.add("GET", "/{y}/b/c", "@y_b_c");
    r.add("GET", "/{y}/b/d", "@y_b_d");
    RouteTable t(r.endpoints);
    EXPECT_EQ(controller_of(t, "GET", "/a/b/c"), "@a_x_c");
    EXPECT_EQ(controller_of(t, "GET", "/z/b/c"), "@y_b_c");
    // where the literal's branch has no route, the parameter's still answers
    EXPECT_EQ(controller_of(t, "GET", "/a/b/d"), "@y_b_d");
    EXPECT_EQ(controller_of(t, "GET", "/a/q/c"), "@a_x_c");
    EXPECT_EQ(controller_of(t, "GET", "/a/q/d"), "-");
}

TEST(VersionTable, ManyRoutesStayCorrect) {
    Routes r;
    std::deque<std::string> texts;
    for (int i = 0; i < 2000; ++i) {
        texts.push_back("/r" + std::to_string(i) + "/items/{id}");
        r.add("GET", texts.back().c_str(), i % 2 ? "@odd" : "@even");
    }
    RouteTable t(r.endpoints);
    EXPECT_EQ(controller_of(t, "GET", "/r1999/items/x"), "@odd");
    EXPECT_EQ(controller_of(t, "GET", "/r1000/items/x"), "@even");
    EXPECT_EQ(controller_of(t, "GET", "/r2000/items/x"), "-");
}
