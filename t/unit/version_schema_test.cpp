// The upstream's OpenAPI document carried to each version's field names, and the changelog.
#include <gtest/gtest.h>

#include <cjson/cJSON.h>

#include "signin/version/openapi.hpp"
#include "signin/version/schema.hpp"

using namespace signin::version;

namespace {

Change change(std::vector<std::string> words) {
    Change c;
    std::string err = parse_change(words, c);
    EXPECT_EQ(err, "");
    return c;
}

// v1 < v2 < v3; the upstream speaks v3.
// v2: field_renamed /name /full_name; value_mapped /status active enabled
// v3: field_added /tier default="free"; field_removed /legacy value=true on GET /users/:id;
//     field_renamed /items/*/sku /items/*/code on GET /orders
struct Fixture {
    Group group;
    std::vector<std::vector<Change>> changes{3};
    Fixture() {
        auto v1 = group.add_version("v1", std::nullopt, std::nullopt);
        group.add_route(v1, "@legacy", "GET", "/users/:id");
        group.add_route(v1, "@legacy", "POST", "/users");
        group.add_route(v1, "@legacy", "GET", "/orders");
        group.add_version("v2", 1000, 2000, true);
        group.add_version("v3", std::nullopt, std::nullopt);
        group.finish();
        changes[1].push_back(change({"field_renamed", "/name", "/full_name"}));
        changes[1].push_back(change({"value_mapped", "/status", "active", "enabled"}));
        changes[2].push_back(change({"field_added", "/tier", "default=\"free\""}));
        changes[2].push_back(change({"field_removed", "/legacy", "value=true", "on", "GET", "/users/:id"}));
        changes[2].push_back(change({"field_renamed", "/items/*/sku", "/items/*/code", "on", "GET", "/orders"}));
    }
};

const char *kUpstream = R"({
  "openapi": "3.1.0", "info": {"title": "legacy", "version": "3"},
  "paths": {
    "/api/users/{user}": {"get": {"summary": "a user", "responses": {"200": {"description": "the user",
      "content": {"application/json": {"schema": {"$ref": "#/components/schemas/User"}}}}}}},
    "/users": {"post": {"requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/User"}}}},
      "parameters": [{"name": "dry", "in": "query", "schema": {"type": "boolean"}}],
      "responses": {"201": {"description": "made"}}}},
    "/api/orders": {"get": {"responses": {"200": {"description": "orders", "content": {"application/json": {"schema":
      {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object",
        "properties": {"code": {"type": "string"}}, "required": ["code"]}}}}}}}}}}
  },
  "components": {"schemas": {"User": {"type": "object", "required": ["full_name", "status", "tier"],
    "properties": {"full_name": {"type": "string"}, "status": {"enum": ["enabled", "locked"]},
                   "tier": {"type": "string"}}}}}
})";

struct Doc {
    cJSON *j;
    explicit Doc(const std::string &text) : j(cJSON_Parse(text.c_str())) {}
    ~Doc() { cJSON_Delete(j); }
    const cJSON *at(std::initializer_list<const char *> keys) const {
        const cJSON *n = j;
        for (const char *k : keys) n = n ? cJSON_GetObjectItemCaseSensitive(n, k) : nullptr;
        return n;
    }
    std::string text(std::initializer_list<const char *> keys) const {
        const cJSON *n = at(keys);
        if (!n) return "<none>";
        char *s = cJSON_PrintUnformatted(n);
        std::string out(s);
        cJSON_free(s);
        return out;
    }
};

std::string doc_for(Fixture &f, const UpstreamSchema &s, std::size_t v) {
    return s.document(openapi_document(f.group, v, "T", OpenApiOptions{"/api", false}), f.group, v, 2, f.changes,
                      "/api");
}

}  // namespace

TEST(VersionSchema, TheUpstreamVersionIsTheUpstreamsShape) {
    Fixture f;
    UpstreamSchema s(kUpstream);
    Doc d(doc_for(f, s, 2));
    ASSERT_NE(d.j, nullptr);
    // matched with the mount in front, the router's parameter name kept
    EXPECT_EQ(d.text({"paths", "/users/{id}", "get", "summary"}), "\"a user\"");
    EXPECT_EQ(d.text({"paths", "/users/{id}", "get", "responses", "200", "content", "application/json", "schema"}),
              "{\"$ref\":\"#/components/schemas/User\"}");
    EXPECT_NE(d.at({"paths", "/users/{id}", "get", "responses", "4XX"}), nullptr);  // the router's stay
    EXPECT_NE(d.at({"components", "schemas", "User"}), nullptr);
    EXPECT_NE(d.at({"components", "schemas", "RouterError"}), nullptr);
    // matched without the mount too; the query parameter joins the router's
    EXPECT_EQ(d.text({"paths", "/users", "post", "parameters"}),
              "[{\"name\":\"dry\",\"in\":\"query\",\"schema\":{\"type\":\"boolean\"}}]");
}

TEST(VersionSchema, OlderVersionsShowTheirOwnFieldNames) {
    Fixture f;
    UpstreamSchema s(kUpstream);
    Doc v2(doc_for(f, s, 1));
    const char *get_user[] = {"paths", "/users/{id}", "get", "responses", "200", "content", "application/json", "schema"};
    auto user = [&](Doc &d, const char *tail1, const char *tail2) {
        return d.text({get_user[0], get_user[1], get_user[2], get_user[3], get_user[4], get_user[5], get_user[6],
                       get_user[7], tail1, tail2});
    };
    // v2: tier removed (added by v3), legacy back with its value as default (on GET /users/:id)
    EXPECT_EQ(user(v2, "properties", "tier"), "<none>");
    EXPECT_EQ(user(v2, "properties", "legacy"), "{\"default\":true}");
    EXPECT_EQ(v2.text({get_user[0], get_user[1], get_user[2], get_user[3], get_user[4], get_user[5], get_user[6],
                       get_user[7], "required"}),
              "[\"full_name\",\"status\"]");
    Doc v1(doc_for(f, s, 0));
    EXPECT_EQ(user(v1, "properties", "full_name"), "<none>");
    EXPECT_EQ(user(v1, "properties", "name"), "{\"type\":\"string\"}");
    EXPECT_EQ(user(v1, "properties", "status"), "{\"enum\":[\"active\",\"locked\"]}");
    EXPECT_EQ(v1.text({get_user[0], get_user[1], get_user[2], get_user[3], get_user[4], get_user[5], get_user[6],
                       get_user[7], "required"}),
              "[\"name\",\"status\"]");
    // POST /users: not in the scope of field_removed /legacy; the shared component is untouched
    EXPECT_EQ(v1.text({"paths", "/users", "post", "requestBody", "content", "application/json", "schema", "properties",
                       "legacy"}),
              "<none>");
    EXPECT_EQ(v1.text({"paths", "/users", "post", "requestBody", "content", "application/json", "schema", "properties",
                       "name"}),
              "{\"type\":\"string\"}");
    EXPECT_EQ(v1.text({"components", "schemas", "User", "required"}), "[\"full_name\",\"status\",\"tier\"]");
    // arrays: GET /orders items' code was sku before v3
    EXPECT_EQ(v2.text({"paths", "/orders", "get", "responses", "200", "content", "application/json", "schema",
                       "properties", "items", "items", "required"}),
              "[\"sku\"]");
}

TEST(VersionSchema, ChangesReachIntoAllOfBranches) {
    Fixture f;
    UpstreamSchema s(R"({"paths": {"/users/{id}": {"get": {"responses": {"200": {"description": "u", "content":
      {"application/json": {"schema": {"allOf": [{"$ref": "#/components/schemas/Named"},
        {"type": "object", "properties": {"tier": {"type": "string"}}}]}}}}}}}},
      "components": {"schemas": {"Named": {"type": "object", "required": ["full_name"],
        "properties": {"full_name": {"type": "string"}}}}}})");
    Doc v1(doc_for(f, s, 0));
    EXPECT_EQ(v1.text({"paths", "/users/{id}", "get", "responses", "200", "content", "application/json", "schema",
                       "allOf"}),
              "[{\"type\":\"object\",\"required\":[\"name\"],\"properties\":{\"name\":{\"type\":\"string\"}}},"
              "{\"type\":\"object\",\"properties\":{}}]");
    // a field brought back is added once, beside the allOf
    EXPECT_EQ(v1.text({"paths", "/users/{id}", "get", "responses", "200", "content", "application/json", "schema",
                       "properties"}),
              "{\"legacy\":{\"default\":true}}");
}

TEST(VersionSchema, RefusesWhatIsNotAnOpenApiDocument) {
    EXPECT_THROW(UpstreamSchema("{"), ConfigError);
    EXPECT_THROW(UpstreamSchema("{\"openapi\":\"3.1.0\"}"), ConfigError);
    EXPECT_THROW(UpstreamSchema(R"({"paths":{},"components":{"schemas":{"RouterError":{}}}})"), ConfigError);
}

TEST(VersionSchema, ChangesAsJsonAndMarkdown) {
    Fixture f;
    EXPECT_EQ(changes_json(f.group, f.changes),
              R"({"versions":[{"version":"v1","changes":[]},{"version":"v2","previous":"v1","changes":[)"
              R"({"change":"field_renamed","path":"/name","new_path":"/full_name"},)"
              R"({"change":"value_mapped","path":"/status","old":"active","new":"enabled"}]},)"
              R"({"version":"v3","previous":"v2","changes":[{"change":"field_added","path":"/tier","default":"free"},)"
              R"({"change":"field_removed","path":"/legacy","value":true,"on":{"method":"GET","route":"/users/:id"}},)"
              R"({"change":"field_renamed","path":"/items/*/sku","new_path":"/items/*/code","on":{"method":"GET","route":"/orders"}}]}]})");
    EXPECT_EQ(changes_markdown(f.group, f.changes),
              "# API changes\n\n## v3\n\nChanges since v2:\n\n"
              "- `/tier` added; requests of older versions get `\"free\"`\n"
              "- `/legacy` removed; answers to older versions still get `true` (on `GET /users/:id`)\n"
              "- `/items/*/sku` renamed to `/items/*/code` (on `GET /orders`)\n"
              "\n## v2\n\nDeprecated since 1970-01-01T00:16:40Z.\nRetired on 1970-01-01T00:33:20Z.\n\n"
              "Changes since v1:\n\n- `/name` renamed to `/full_name`\n- `/status`: `\"active\"` is now `\"enabled\"`\n"
              "\n## v1\n\nThe first version.\n");
}
