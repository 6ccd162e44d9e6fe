// Shared by the files of ngx_http_api_versions_module: configuration, per-request state.
#pragma once

#include "ngx_signin_nginx.h"

#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "signin/version/changes.hpp"
#include "signin/version/group.hpp"
#include "signin/version/schema.hpp"

extern "C" {
extern ngx_module_t ngx_http_api_versions_module;
}

namespace apiv {

// Contexts of the directives inside `api_versions { }` and `version NAME { }` (bits no nginx
// context uses; the route lines inside `controller @name { }` go to a custom handler).
constexpr ngx_uint_t kGroupConf = 0x00100000;
constexpr ngx_uint_t kVersionConf = 0x00200000;

struct Where {
    std::string file;
    ngx_uint_t line = 0;
};

struct ControllerUse {
    std::string name;      // "@legacy_v1"
    std::string version;   // the version block it is declared in
    Where where;
};

struct RouteUse {
    ngx_http_core_srv_conf_t *server;
    Where where;  // of api_versions_route
};

// The group and everything derived from it; lives in the configuration pool (cleanup runs the
// destructor) and is read-only once the configuration is loaded, except the per-worker OpenAPI
// cache, which only its own worker's single thread touches.
struct State {
    signin::version::Group group;
    std::vector<ControllerUse> controllers;
    std::vector<RouteUse> routes;
    Where default_at;
    std::string default_name;
    bool has_strategy = false;
    std::size_t current_version = signin::version::npos;
    std::string current_controller;
    std::size_t current_routes = 0;

    // What api_versions_report sends, recomputed (per worker) when one of the group's dates passes.
    signin::version::Report report;
    bool report_ready = false;
    std::vector<std::string> deprecation;  // per version, "" when not deprecated
    std::vector<std::string> sunset;       // per version, "" when no sunset
    // per api_versions_openapi location and version, built on first request
    std::map<std::pair<const void *, std::size_t>, std::string> openapi;
    std::string changes_json, changes_markdown;  // .../changes, built on first request

    // The version changes, per version (oldest first), and where each was written.
    std::vector<std::vector<signin::version::Change>> changes;
    std::vector<std::vector<Where>> change_at;
    // The changes compiled once the group is complete; nullptr when no version declares one.
    std::unique_ptr<signin::version::Migrator> migrator;
    // The version the upstream speaks (api_versions_upstream_version, else the newest).
    std::size_t upstream_version = signin::version::npos;
    // The upstream's OpenAPI document (api_versions_schema), nullptr when not given.
    std::unique_ptr<signin::version::UpstreamSchema> schema;
    // Each route's shape, as the changes' `on METHOD ROUTE` name it.
    std::map<const signin::version::RouteDecl *, std::string> shapes;
};

enum class StrategyKind : ngx_uint_t { Path, Header, Accept, Custom };

}  // namespace apiv

struct ngx_http_api_versions_main_conf_t {
    apiv::State *state;                // nullptr when the configuration has no group
    ngx_flag_t fallback;
    ngx_http_complex_value_t *custom;  // strategy custom
    ngx_str_t header;                  // strategy header: the name, lower case
    ngx_str_t vendor;                  // strategy accept
    ngx_str_t vary;                    // the Vary token, empty for path and custom
    apiv::StrategyKind strategy;
    ngx_flag_t routing;                // some location has api_versions_route
    ngx_str_t first_mount;             // the first api_versions_route's mount (the documents' default)
    ngx_flag_t mounted;                // ... is set
    ngx_str_t upstream_version;        // api_versions_upstream_version, empty when not given
    ngx_str_t schema_file;             // api_versions_schema, the full path; empty when not given
    u_char *schema_conf_file;
    ngx_uint_t schema_line;
    u_char *upstream_file;
    ngx_uint_t upstream_line;
};

struct ngx_http_api_versions_loc_conf_t {
    ngx_flag_t route;      // api_versions_route here
    ngx_flag_t route_written;  // ... written in this very location, not inherited (never merged)
    ngx_str_t mount;       // the prefix routes are relative to, "/api"
    u_char *route_file;
    ngx_uint_t route_line;
    ngx_flag_t openapi;    // api_versions_openapi here
    ngx_str_t title;
    ngx_str_t openapi_mount;      // mount=: where the documented routes are served
    ngx_flag_t openapi_mounted;   // ... was given
    ngx_flag_t openapi_controllers;  // controllers=on: x-controller (internal location names)
    u_char *openapi_file;
    ngx_uint_t openapi_line;
    size_t body_max;       // api_versions_body_max: the largest JSON body the changes rewrite
    ngx_flag_t report;     // api_versions_report: api-supported-versions, api-deprecated-versions
    u_char *report_file;
    ngx_uint_t report_line;
    ngx_flag_t pin;        // api_versions_pin signin: a signed-in caller's version is its account's
    u_char *pin_file;
    ngx_uint_t pin_line;
};

// Per-request state. It lives in a request pool cleanup so that it can be found again after
// ngx_http_named_location() clears the module contexts (as nginx's realip module does).
struct ngx_http_api_versions_ctx_t {
    ngx_http_request_t *request;
    ngx_str_t version;             // $api_version: requested or default, "" when none
    ngx_str_t controller_version;  // $api_controller_version
    ngx_uint_t version_index;      // signin::version::npos when none
    ngx_str_t controller;          // the named location that answers, "" until decided
    // The answering route when some change lies between the client's version and the upstream's
    // (bodies are then migrated), else nullptr: no body is read, parsed or held.
    const signin::version::RouteDecl *changed_route;
    // The response body held by the body filter until it is complete (pool memory).
    u_char *held;
    size_t held_len;
    size_t held_cap;
    unsigned holding : 1;   // the header waits for the migrated body
    unsigned report : 1;    // api_versions_report of the routing location
    unsigned pin_vary : 1;  // api_versions_pin decided a request without a version: the caller's
                            // credentials choose the answer (Vary: Cookie, Authorization)
    unsigned invalid_request : 1;   // a JSON request body to migrate was not JSON ($api_body_invalid)
    unsigned invalid_response : 1;  // ... an answer's
};
static_assert(std::is_trivially_destructible<ngx_http_api_versions_ctx_t>::value,
              "the request ctx lives in pool memory");

namespace apiv {

// The request's ctx (found again after a named-location jump), or nullptr.
ngx_http_api_versions_ctx_t *find_ctx(ngx_http_request_t *r);
ngx_http_api_versions_ctx_t *create_ctx(ngx_http_request_t *r);

// Phase handler, content handler, header filter and variables (api_versions_*.cpp).
ngx_int_t rewrite_handler(ngx_http_request_t *r);
ngx_int_t route_content_handler(ngx_http_request_t *r);
ngx_int_t openapi_handler(ngx_http_request_t *r);
ngx_int_t install_filter(ngx_conf_t *cf);
// Migrates a JSON request body forward, then jumps to the controller (api_versions_changes.cpp).
ngx_int_t jump_after_body(ngx_http_request_t *r, ngx_http_api_versions_ctx_t *ctx);
// Takes Accept-Encoding off the headers the upstream gets, so that its body comes plain.
bool drop_accept_encoding(ngx_http_request_t *r);
// The body filter that migrates JSON answers back to the client's version.
ngx_int_t install_body_filter(ngx_conf_t *cf);
// A worker's start: one that migrates bodies keeps the heap it frees (api_versions_changes.cpp).
ngx_int_t init_process(ngx_cycle_t *cycle);
ngx_int_t add_variables(ngx_conf_t *cf);

// nginx -t's checks once the configuration is read (api_versions_checks.cpp): an error found
// after parsing is reported at the line that caused it; every controller names a named location
// of each routing server; a location whose access rules the path strategy would skip is named.
char *late_error(ngx_conf_t *cf, const std::string &what, const Where &at);
bool controllers_exist(ngx_conf_t *cf, const State &s);
void warn_shadowed_locations(ngx_conf_t *cf, const ngx_http_api_versions_main_conf_t *mcf);
// The version changes: a route no version declares, a chain that cannot be undone; then compiles
// them (State::migrator).
char *check_changes(ngx_conf_t *cf, State &s);
// Reads and checks api_versions_schema's document into State::schema; false after logging why.
bool load_schema(ngx_conf_t *cf, ngx_http_api_versions_main_conf_t *mcf);
// api_versions_pin signin|off, and nginx -t's check of a location where it is on: an
// api_versions block and a signin_store (where the pins are kept); false after logging why.
char *pin_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
bool pin_allowed(ngx_conf_t *cf, const ngx_http_api_versions_loc_conf_t *conf,
                 const ngx_http_api_versions_main_conf_t *mcf);
// Inherits api_versions_pin (and where it was written) from the enclosing level.
void merge_pin(const ngx_http_api_versions_loc_conf_t *prev, ngx_http_api_versions_loc_conf_t *conf);
// The directive api_versions_schema PATH (kept beside what reads it).
char *schema_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);

// Sends {"error": ..., "code": ...} with content-type application/json and cache-control no-store.
ngx_int_t send_error(ngx_http_request_t *r, ngx_uint_t status, std::string_view error, std::string_view code,
                     std::string_view allow = {});

}  // namespace apiv
