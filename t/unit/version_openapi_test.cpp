// OpenAPI writer, dates and JSON quoting of the version half, with no nginx.
#include <gtest/gtest.h>
#include <cjson/cJSON.h>

#include <memory>

#include "signin/version/dates.hpp"
#include "signin/version/group.hpp"
#include "signin/version/openapi.hpp"

using namespace signin::version;

namespace {

using Json = std::unique_ptr<cJSON, decltype(&cJSON_Delete)>;

Json parse(const std::string &text) { return Json(cJSON_Parse(text.c_str()), &cJSON_Delete); }

const cJSON *at(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

std::string str(const cJSON *o) { return o && cJSON_IsString(o) ? o->valuestring : "<none>"; }

}  // namespace

TEST(VersionDates, ParseAndFormat) {
    EXPECT_EQ(parse_date("1970-01-01"), 0);
    EXPECT_EQ(parse_date("2026-12-31"), 1798675200);
    EXPECT_EQ(parse_date("2026-12-31T18:30:05Z"), 1798675200 + 18 * 3600 + 30 * 60 + 5);
    EXPECT_EQ(parse_date("2024-02-29"), 1709164800);
    EXPECT_FALSE(parse_date("2025-02-29"));
    EXPECT_FALSE(parse_date("2026-13-01"));
    EXPECT_FALSE(parse_date("2026-1-01"));
    EXPECT_FALSE(parse_date("2026-12-31T24:00:00Z"));
    EXPECT_FALSE(parse_date("2026-12-31 00:00:00"));
    EXPECT_FALSE(parse_date("yesterday"));
    EXPECT_EQ(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    EXPECT_EQ(http_date(1798675200), "Thu, 31 Dec 2026 00:00:00 GMT");
    EXPECT_EQ(http_date(1709164800 + 3661), "Thu, 29 Feb 2024 01:01:01 GMT");
    EXPECT_EQ(deprecation_value(1798675200), "@1798675200");
}

TEST(VersionJson, QuoteEscapesAndRepairsUtf8) {
    EXPECT_EQ(json_quote("v2"), "\"v2\"");
    EXPECT_EQ(json_quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    EXPECT_EQ(json_quote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
    EXPECT_EQ(json_quote("x\xff"), "\"x\\ufffd\"");
    EXPECT_EQ(json_quote("\xc0\xaf"), "\"\\ufffd\\ufffd\"");  // overlong
    auto j = parse("{\"e\":" + json_quote("bad \xe2\x28\xa1 \"quote\"") + "}");
    ASSERT_TRUE(j);
}

TEST(VersionOpenapi, DocumentListsOwnAndInheritedRoutes) {
    Group g;
    auto v1 = g.add_version("v1", std::nullopt, std::nullopt);
    g.add_route(v1, "@legacy_v1", "GET", "/users");
    g.add_route(v1, "@legacy_v1", "GET", "/users/:id");
    g.add_route(v1, "@legacy_v1", "POST", "/users");
    auto v2 = g.add_version("v2", parse_date("2026-01-01"), parse_date("2026-12-31"));
    g.add_route(v2, "@users_v2", "GET", "/users/{uid}");
    g.add_route(v2, "@users_v2", "DELETE", "/users/:id");
    g.finish();

    auto doc = parse(openapi_document(g, v2, "Acme \"API\""));
    ASSERT_TRUE(doc) << openapi_document(g, v2, "Acme");
    EXPECT_EQ(str(at(doc.get(), "openapi")), "3.1.0");
    EXPECT_EQ(str(at(at(doc.get(), "info"), "version")), "v2");
    EXPECT_EQ(str(at(at(doc.get(), "info"), "title")), "Acme \"API\"");
    const cJSON *paths = at(doc.get(), "paths");
    ASSERT_TRUE(paths);
    EXPECT_EQ(cJSON_GetArraySize(paths), 2);  // one path item per shape, never two equivalent templates
    const cJSON *one = at(paths, "/users/{uid}");
    ASSERT_TRUE(one) << cJSON_Print(paths);
    EXPECT_EQ(str(at(at(one, "get"), "x-answered-by-version")), "v2");
    EXPECT_EQ(str(at(at(one, "get"), "x-controller")), "<none>");  // internal names only on request
    OpenApiOptions named;
    named.controllers = true;
    named.mount = "/api";
    auto with = parse(openapi_document(g, v2, "Acme", named));
    ASSERT_TRUE(with);
    EXPECT_EQ(str(at(at(at(at(with.get(), "paths"), "/users/{uid}"), "get"), "x-controller")), "@users_v2");
    EXPECT_EQ(str(at(at(one, "delete"), "x-answered-by-version")), "v2");
    EXPECT_TRUE(cJSON_IsTrue(at(at(one, "get"), "deprecated")));
    const cJSON *param = cJSON_GetArrayItem(at(at(one, "delete"), "parameters"), 0);
    EXPECT_EQ(str(at(param, "name")), "uid");  // the path item's name is used by every operation
    EXPECT_EQ(str(at(param, "in")), "path");
    EXPECT_TRUE(cJSON_IsTrue(at(param, "required")));
    const cJSON *list = at(paths, "/users");
    ASSERT_TRUE(list);
    EXPECT_EQ(str(at(at(list, "get"), "x-answered-by-version")), "v1");
    EXPECT_EQ(str(at(at(list, "post"), "x-answered-by-version")), "v1");
    EXPECT_EQ(cJSON_GetArraySize(at(at(list, "get"), "parameters")), 0);

    auto first = parse(openapi_document(g, v1, "Acme"));
    ASSERT_TRUE(first);
    const cJSON *p1 = at(first.get(), "paths");
    EXPECT_FALSE(at(at(p1, "/users/{id}"), "delete"));  // a version never answers newer routes
    EXPECT_EQ(str(at(at(at(p1, "/users/{id}"), "get"), "x-answered-by-version")), "v1");
    EXPECT_FALSE(at(at(at(p1, "/users/{id}"), "get"), "deprecated"));
}
