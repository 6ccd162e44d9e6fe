// Version changes: parsing the four changes, the chain checks, and migrating bodies forward and
// back through a chain of versions.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "signin/version/changes.hpp"
#include "signin/version/group.hpp"

using namespace signin::version;
using Result = Migrator::Result;

namespace {

Change change(std::vector<std::string> words) {
    Change c;
    std::string err = parse_change(words, c);
    EXPECT_EQ(err, "") << words[0];
    return c;
}

std::string refused(std::vector<std::string> words) {
    Change c;
    return parse_change(words, c);
}

// Runs `body` through the migrator; Unchanged gives the body back as it was.
std::string run(const Migrator &m, const std::string &body, std::size_t from, std::size_t to,
                const std::string &method = "GET", const std::string &shape = "/users") {
    std::string out;
    switch (m.migrate(body, from, to, method, shape, out)) {
    case Result::Rewritten: return out;
    case Result::Unchanged: return body;
    case Result::Invalid: return "invalid";
    }
    return "?";
}

// v1 (oldest), v2, v3 (the upstream's): the example the tests migrate through
std::vector<std::vector<Change>> chain() {
    return {
        {},
        {change({"field_renamed", "/name", "/full_name"}),
         change({"field_added", "/tier", "default=\"free\""}),
         change({"value_mapped", "/items/*/state", "active", "enabled"})},
        {change({"field_removed", "/legacy", "value=false"}),
         change({"field_renamed", "/address/zip", "/address/postal_code"}),
         change({"field_added", "/meta", "default={\"v\":3}", "on", "GET", "/users/:id"})},
    };
}

}  // namespace

TEST(VersionChanges, ParsesTheFourChanges) {
    Change a = change({"field_added", "/a/b", "default={\"tier\":\"free\"}"});
    EXPECT_EQ(a.kind, ChangeKind::FieldAdded);
    EXPECT_EQ(a.path, "/a/b");
    EXPECT_EQ(a.value, "{\"tier\":\"free\"}");
    EXPECT_EQ(a.method, "");

    Change r = change({"field_removed", "/x", "value=1", "on", "POST", "/users/{id}"});
    EXPECT_EQ(r.kind, ChangeKind::FieldRemoved);
    EXPECT_EQ(r.value, "1");
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.shape, "/users/{}");

    Change n = change({"field_renamed", "/u/*/name", "/u/*/full_name"});
    EXPECT_EQ(n.kind, ChangeKind::FieldRenamed);
    EXPECT_EQ(n.new_path, "/u/*/full_name");

    // bare words are strings, JSON words are JSON
    Change v = change({"value_mapped", "/state", "active", "3"});
    EXPECT_EQ(v.kind, ChangeKind::ValueMapped);
    EXPECT_EQ(v.value, "\"active\"");
    EXPECT_EQ(v.mapped, "3");
    EXPECT_EQ(change({"value_mapped", "/s", "a b", "null"}).value, "\"a b\"");
}

TEST(VersionChanges, RefusesBadChanges) {
    EXPECT_NE(refused({"field_added", "a"}), "");                     // not a pointer
    EXPECT_NE(refused({"field_added", "/a/~2"}), "");                 // bad escape
    EXPECT_NE(refused({"field_added", "/a/*"}), "");                  // a field is named
    EXPECT_NE(refused({"field_added", "/a", "default=nope"}), "");    // not JSON
    EXPECT_NE(refused({"field_added", "/a", "value=1"}), "");         // the other change's word
    EXPECT_NE(refused({"field_removed", "/a", "value={"}), "");
    EXPECT_NE(refused({"field_renamed", "/a/b", "/c/b"}), "");        // other object
    EXPECT_NE(refused({"field_renamed", "/a", "/a"}), "");
    EXPECT_NE(refused({"field_renamed", "/a"}), "");
    EXPECT_NE(refused({"value_mapped", "/a", "x"}), "");
    EXPECT_NE(refused({"value_mapped", "/a", "x", "\"x\""}), "");     // onto itself
    EXPECT_NE(refused({"field_added", "/a", "on", "FETCH", "/u"}), "");  // bad method
    EXPECT_NE(refused({"field_added", "/a", "on", "GET", "u"}), "");     // bad route
    EXPECT_NE(refused({"field_moved", "/a"}), "");
    EXPECT_EQ(check_pointer("/a~1b/~0/*/c", true), "");
    EXPECT_EQ(check_pointer("/a/*", false), "");  // value_mapped may end in every element
    EXPECT_NE(check_pointer("", false), "");
    EXPECT_NE(check_pointer("/a~", false), "");
}

TEST(VersionChanges, ChecksRoutesAgainstTheGroup) {
    Group g;
    auto v1 = g.add_version("v1", std::nullopt, std::nullopt);
    g.add_route(v1, "@v1", "GET", "/users/:id");
    auto v2 = g.add_version("v2", std::nullopt, std::nullopt);
    g.add_route(v2, "@v2", "POST", "/users");
    g.finish();
    std::vector<std::vector<Change>> ok{{}, {change({"field_added", "/a", "on", "GET", "/users/{uid}"})}};
    EXPECT_EQ(check_routes(ok, g), "");
    std::vector<std::vector<Change>> bad{{}, {change({"field_added", "/a", "on", "GET", "/users"})}};
    EXPECT_NE(check_routes(bad, g).find("GET /users"), std::string::npos);
}

TEST(VersionChanges, ChecksTheChain) {
    EXPECT_EQ(check_chain(chain()), "");
    // a rename onto a field an earlier version added
    EXPECT_NE(check_chain({{}, {change({"field_added", "/b"})}, {change({"field_renamed", "/a", "/b"})}}), "");
    // ... unless it was removed since
    EXPECT_EQ(check_chain({{}, {change({"field_added", "/b"})}, {change({"field_removed", "/b"}), change({"field_renamed", "/a", "/b"})}}), "");
    // ... or only on another route
    EXPECT_EQ(check_chain({{},
                           {change({"field_added", "/b", "on", "GET", "/x"})},
                           {change({"field_renamed", "/a", "/b", "on", "GET", "/y"})}}),
              "");
    EXPECT_NE(check_chain({{}, {change({"field_added", "/a"}), change({"field_removed", "/a"})}}), "");
    EXPECT_NE(check_chain({{}, {change({"value_mapped", "/s", "a", "b"}), change({"value_mapped", "/s", "c", "b"})}}), "");
    EXPECT_NE(check_chain({{}, {change({"value_mapped", "/s", "a", "b"}), change({"value_mapped", "/s", "b", "c"})}}), "");
    EXPECT_EQ(check_chain({{}, {change({"value_mapped", "/s", "a", "b"}), change({"value_mapped", "/t", "c", "b"})}}), "");
    EXPECT_NE(check_chain({{}, {change({"field_renamed", "/a", "/b"}), change({"field_renamed", "/b", "/c"})}}), "");
    EXPECT_NE(check_chain({{change({"field_added", "/a"})}}), "");  // the oldest differs from nothing
    // adding a field the chain already has
    EXPECT_NE(check_chain({{}, {change({"field_renamed", "/b", "/a"})}, {change({"field_added", "/a"})}}), "");
    // removed on one route only: it still exists on the others
    EXPECT_NE(check_chain({{},
                           {change({"field_added", "/a"})},
                           {change({"field_removed", "/a", "on", "POST", "/u"}), change({"field_renamed", "/c", "/a"})}}),
              "");
    // `*` meets every index
    EXPECT_NE(check_chain({{}, {change({"field_added", "/i/*/a"})}, {change({"field_added", "/i/0/a"})}}), "");
    EXPECT_EQ(check_chain({{}, {change({"field_added", "/i/*/a"})}, {change({"field_added", "/i/0/b"})}}), "");
}

TEST(VersionChanges, MigratesResponsesBackOneVersionAtATime) {
    Migrator m(chain());
    std::string upstream =
        R"({"full_name":"Ada","tier":"pro","items":[{"state":"enabled"},{"state":"gone"}],)"
        R"("address":{"postal_code":"1000","city":"X"},"id":12345678901234567890,"ratio":1.0})";
    EXPECT_EQ(run(m, upstream, 2, 1),
              R"({"full_name":"Ada","tier":"pro","items":[{"state":"enabled"},{"state":"gone"}],)"
              R"("address":{"zip":"1000","city":"X"},"id":12345678901234567890,"ratio":1.0,"legacy":false})");
    // numbers keep their spelling: a 64-bit id is not rounded, 1.0 stays 1.0
    EXPECT_EQ(run(m, upstream, 2, 0),
              R"({"name":"Ada","items":[{"state":"active"},{"state":"gone"}],)"
              R"("address":{"zip":"1000","city":"X"},"id":12345678901234567890,"ratio":1.0,"legacy":false})");
    EXPECT_EQ(run(m, upstream, 2, 2), upstream);  // the upstream's own version
}

TEST(VersionChanges, MigratesRequestsForward) {
    Migrator m(chain());
    EXPECT_EQ(run(m, R"({"name":"Ada","legacy":true,"items":[{"state":"active"}],"address":{"zip":"1"}})", 0, 2),
              R"({"full_name":"Ada","items":[{"state":"enabled"}],"address":{"postal_code":"1"},"tier":"free"})");
    // a field the client sent is not overwritten by the default
    EXPECT_EQ(run(m, R"({"tier":"pro"})", 0, 1), R"({"tier":"pro"})");
    // the scoped change applies to its route only
    EXPECT_EQ(run(m, R"({})", 1, 2, "GET", "/users/{}"), R"({"meta":{"v":3}})");
    EXPECT_EQ(run(m, R"({})", 1, 2, "POST", "/users/{}"), R"({})");
    EXPECT_TRUE(m.applies(1, 2, "GET", "/users/{}"));
    EXPECT_TRUE(m.applies(2, 0, "POST", "/orders"));
    Migrator scoped({{}, {change({"field_added", "/a", "on", "GET", "/users"})}});
    EXPECT_FALSE(scoped.applies(0, 1, "POST", "/users"));
    EXPECT_FALSE(scoped.applies(0, 0, "GET", "/users"));
}

TEST(VersionChanges, LeavesWhatNoChangeTouches) {
    Migrator m(chain());
    std::string out = "x";
    // no field a change names: the body passes as it came, whitespace and all
    EXPECT_EQ(m.migrate(" {\"other\" : [1, 2]} ", 1, 0, "GET", "/users", out), Result::Unchanged);
    EXPECT_EQ(m.migrate("[1,2]", 2, 0, "GET", "/users", out), Result::Unchanged);
    for (const char *bad : {"", "{", "{\"a\":}", "[1,]", "{\"a\":1}x", "\"\\q\"", "01", "-", "1.", "1e", "tru",
                            "\"a\tb\"", "{\"a\" 1}", "\"\\u12\""}) {
        EXPECT_EQ(m.migrate(bad, 2, 0, "GET", "/users", out), Result::Invalid) << bad;
    }
    std::string deep(1000, '[');
    EXPECT_EQ(m.migrate(deep + std::string(1000, ']'), 2, 0, "GET", "/users", out), Result::Invalid);
}

TEST(VersionChanges, ArraysNestedObjectsAndEscapes) {
    Migrator m({{},
                {change({"field_renamed", "/data/*/a~1b", "/data/*/c"}),
                 change({"value_mapped", "/tags/*", "old", "new"}),
                 change({"field_removed", "/data/0/x"}),
                 change({"value_mapped", "/code", "not_found", "{\"n\":404}"})}});
    EXPECT_EQ(run(m, R"({"data":[{"a/b":1,"c":0},{"a\/b":2},3],"tags":["old","o\u006cd","x"]})", 0, 1),
              R"({"data":[{"c":1},{"c":2},3],"tags":["new","new","x"]})");
    EXPECT_EQ(run(m, R"({"data":[{"c":1,"x":1},{"x":2}],"tags":["new"]})", 1, 0),
              R"({"data":[{"a/b":1,"x":1},{"x":2}],"tags":["old"]})");
    EXPECT_EQ(run(m, R"({"data":[{"x":1},{"x":2}]})", 0, 1), R"({"data":[{},{"x":2}]})");
    // an error body too: any JSON value can be mapped
    EXPECT_EQ(run(m, R"({"error":"no","code":{"n":404}})", 1, 0), R"({"error":"no","code":"not_found"})");
    // keys and strings with unicode escapes and UTF-8 pass as written
    EXPECT_EQ(run(m, "{\"\\u00e9\":\"caf\xc3\xa9\",\"tags\":[\"old\"]}", 0, 1), "{\"\\u00e9\":\"caf\xc3\xa9\",\"tags\":[\"new\"]}");
}

TEST(VersionChanges, NamesGivenTwice) {
    Migrator m({{}, {change({"field_added", "/a"}), change({"field_renamed", "/b", "/c"})}});
    EXPECT_EQ(run(m, R"({"a":1,"x":0,"a":{"k":2}})", 1, 0), R"({"x":0})");
    EXPECT_EQ(run(m, R"({"b":1,"c":0,"b":2})", 0, 1), R"({"c":1,"c":2})");
}

TEST(VersionChanges, ForwardThenBackReturnsTheOldShape) {
    Migrator m(chain());
    for (const char *old : {R"({"name":"A","items":[{"state":"active"},{"state":"x"}],"address":{"zip":"1"},"legacy":false})",
                            R"({"name":"A","legacy":false})", R"([{"name":1}])", R"({"address":[1],"legacy":false})"}) {
        std::string fwd = run(m, old, 0, 2);
        EXPECT_EQ(run(m, fwd, 2, 0), old) << fwd;
    }
}
