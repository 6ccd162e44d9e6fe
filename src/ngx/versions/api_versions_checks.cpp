// The checks nginx -t makes once the whole configuration is read: every controller exists, no
// access rule of a location is skipped by the path strategy's routing, the version changes hold.
#include "ngx_signin_nginx.h"

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "api_versions_glue.h"
#include "../signin/signin_caller.h"

using signin_ngx::sv;

namespace {

using MainConf = ngx_http_api_versions_main_conf_t;
using LocConf = ngx_http_api_versions_loc_conf_t;

// Whether a path that pattern `p` matches is `rest` (exact) or begins with it (prefix), the way
// nginx compares a location's name with a URI: byte by byte, so "/admin" also begins
// "/administrators". A parameter matches any non-empty segment.
bool pattern_reaches(const signin::version::Pattern &p, std::string_view rest, bool exact) {
    std::vector<std::string_view> parts;
    if (rest != "/") {
        signin::version::for_each_segment(rest, [&](std::string_view s) {
            parts.push_back(s);
            return true;
        });
    } else if (!exact) {
        return true;  // every path begins with "/"
    }
    if (exact ? parts.size() != p.segments.size() : parts.size() > p.segments.size()) {
        return false;
    }
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const auto &seg = p.segments[i];
        const bool last = i + 1 == parts.size();
        if (!exact && last) {  // a partial segment: the route's may go on
            return seg.param || std::string_view(seg.text).substr(0, parts[i].size()) == parts[i];
        }
        if (parts[i].empty() || (!seg.param && seg.text != parts[i])) {
            return false;
        }
    }
    return true;
}

// Every exact and prefix location of a server's tree, nested ones too.
void static_locations(ngx_http_location_tree_node_t *node, std::vector<ngx_http_core_loc_conf_t *> &out) {
    if (node == nullptr) {
        return;
    }
    for (ngx_http_core_loc_conf_t *clcf : {node->exact, node->inclusive}) {
        if (clcf != nullptr) {
            out.push_back(clcf);
            static_locations(clcf->static_locations, out);
        }
    }
    static_locations(node->left, out);
    static_locations(node->right, out);
    static_locations(node->tree, out);
}

}  // namespace

namespace apiv {

// An error found after parsing, reported at the line that caused it.
char *late_error(ngx_conf_t *cf, const std::string &what, const Where &at) {
    ngx_log_error(NGX_LOG_EMERG, cf->log, 0, "%s in %s:%ui", what.c_str(), at.file.c_str(), at.line);
    return static_cast<char *>(NGX_CONF_ERROR);
}

// Every controller must be a named location of every server that routes through the group.
bool controllers_exist(ngx_conf_t *cf, const State &s) {
    for (const auto &use : s.routes) {
        for (const auto &c : s.controllers) {
            bool found = false;
            if (use.server->named_locations) {
                for (ngx_http_core_loc_conf_t **l = use.server->named_locations; *l; ++l) {
                    found = found || sv((*l)->name) == c.name;
                }
            }
            if (!found) {
                late_error(cf,
                           "controller \"" + c.name + "\" of version \"" + c.version +
                               "\" names no named location of the server of \"api_versions_route\" at " +
                               use.where.file + ":" + std::to_string(use.where.line),
                           c.where);
                return false;
            }
        }
    }
    return true;
}

// With the path strategy, /api/v1/admin is found by nginx's location search as a URI of
// "location /api/" (it does not begin with "/api/admin"), and goes from there to a controller:
// the allow/deny, auth_basic or signin_require of "location /api/admin" never run for it. nginx
// cannot tell which locations hold access rules, so every exact or prefix location under a
// routing location is checked, and named when some route of some version reaches below it.
void warn_shadowed_locations(ngx_conf_t *cf, const MainConf *mcf) {
    if (mcf->strategy != apiv::StrategyKind::Path) {
        return;  // the other strategies leave the URI alone: /api/admin stays /api/admin
    }
    const auto &group = mcf->state->group;
    auto *cmcf = static_cast<ngx_http_core_main_conf_t *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module));
    auto **servers = static_cast<ngx_http_core_srv_conf_t **>(cmcf->servers.elts);
    for (ngx_uint_t s = 0; s < cmcf->servers.nelts; ++s) {
        auto *top = static_cast<ngx_http_core_loc_conf_t *>(servers[s]->ctx->loc_conf[ngx_http_core_module.ctx_index]);
        std::vector<ngx_http_core_loc_conf_t *> locations;
        static_locations(top->static_locations, locations);
        for (ngx_http_core_loc_conf_t *routing : locations) {
            auto *lcf = static_cast<LocConf *>(routing->loc_conf[ngx_http_api_versions_module.ctx_index]);
            if (!lcf->route_written || routing->exact_match) {
                continue;
            }
            std::string_view mount = sv(lcf->mount);
            for (ngx_http_core_loc_conf_t *other : locations) {
                std::string_view name = sv(other->name);
                if (other == routing || name.size() <= routing->name.len || name.substr(0, routing->name.len) != sv(routing->name) ||
                    name.size() <= mount.size() || name.substr(0, mount.size()) != mount || name[mount.size()] != '/') {
                    continue;
                }
                std::string_view rest = name.substr(mount.size());
                const bool exact = other->exact_match != 0;
                for (std::size_t v = 0; v < group.versions().size(); ++v) {
                    const signin::version::Endpoint *hit = nullptr;
                    for (const auto &e : group.endpoints(v)) {
                        if (pattern_reaches(e.route->pattern, rest, exact)) {
                            hit = &e;
                            break;
                        }
                    }
                    if (hit == nullptr) {
                        continue;
                    }
                    std::string example = std::string(mount) + "/" + group.versions()[v].name + std::string(rest);
                    ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                                  "location \"%V\" is bypassed by versioned paths: \"%s\"%s is routed by "
                                  "\"location %V\" to \"%s\", so the access rules of \"%V\" (allow/deny, "
                                  "auth_basic, auth_request, signin_require) do not apply there; put them in "
                                  "\"%s\" too, or in \"location %V\", whose api_versions_route is in %s:%ui",
                                  &other->name, example.c_str(), exact ? "" : " (and below)", &routing->name,
                                  hit->route->controller.c_str(), &other->name, hit->route->controller.c_str(),
                                  &routing->name, lcf->route_file, lcf->route_line);
                    break;
                }
            }
        }
    }
}

// The changes' checks, each failure reported at the line of the change that causes it: a route
// no version declares, then the chain in the order it is written, so the first change the
// chain cannot take is the one named.
char *check_changes(ngx_conf_t *cf, State &s) {
    using signin::version::Change;
    bool any = false;
    for (std::size_t v = 0; v < s.changes.size(); ++v) {
        for (std::size_t i = 0; i < s.changes[v].size(); ++i) {
            any = true;
            std::vector<std::vector<Change>> one(1);
            one[0].push_back(s.changes[v][i]);
            std::string err = signin::version::check_routes(one, s.group);
            if (!err.empty()) {
                return late_error(cf, err, s.change_at[v][i]);
            }
        }
    }
    if (!any) {
        return static_cast<char *>(NGX_CONF_OK);
    }
    if (!signin::version::check_chain(s.changes).empty()) {
        std::vector<std::vector<Change>> prefix(s.changes.size());
        for (std::size_t v = 0; v < s.changes.size(); ++v) {
            for (std::size_t i = 0; i < s.changes[v].size(); ++i) {
                prefix[v].push_back(s.changes[v][i]);
                std::string err = signin::version::check_chain(prefix);
                if (!err.empty()) {
                    return late_error(cf, err, s.change_at[v][i]);
                }
            }
        }
    }
    s.migrator = std::make_unique<signin::version::Migrator>(s.changes);
    for (std::size_t v = 0; v < s.group.versions().size(); ++v) {
        for (const auto &e : s.group.endpoints(v)) {
            s.shapes.emplace(e.route, e.route->pattern.shape());
        }
    }
    return static_cast<char *>(NGX_CONF_OK);
}

// api_versions_schema PATH: the upstream's OpenAPI document, read and checked once the group is
// complete (postconfiguration), relative to the configuration's prefix.
char *schema_directive(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *mcf = static_cast<ngx_http_api_versions_main_conf_t *>(conf);
    if (mcf->schema_file.data) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "\"api_versions_schema\" directive is duplicate");
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    auto *args = static_cast<ngx_str_t *>(cf->args->elts);
    mcf->schema_file = args[1];
    if (mcf->schema_file.len == 0 || ngx_conf_full_name(cf->cycle, &mcf->schema_file, 1) != NGX_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid schema path");
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    mcf->schema_conf_file = cf->conf_file->file.name.data;
    mcf->schema_line = cf->conf_file->line;
    return static_cast<char *>(NGX_CONF_OK);
}

bool load_schema(ngx_conf_t *cf, ngx_http_api_versions_main_conf_t *mcf) {
    Where at{reinterpret_cast<const char *>(mcf->schema_conf_file), mcf->schema_line};
    std::string path(sv(mcf->schema_file));
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) {
        late_error(cf, "cannot read the OpenAPI document \"" + path + "\"", at);
        return false;
    }
    try {
        mcf->state->schema = std::make_unique<signin::version::UpstreamSchema>(text.str());
    } catch (const signin::version::ConfigError &e) {
        late_error(cf, std::string(e.what()) + " (\"" + path + "\")", at);
        return false;
    }
    return true;
}

// api_versions_pin signin|off: whose pin a signed-in caller's version is (only the sign-in
// module's accounts so far), remembering where it was written for the checks of merge_loc_conf.
char *pin_directive(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *lcf = static_cast<ngx_http_api_versions_loc_conf_t *>(conf);
    if (lcf->pin != NGX_CONF_UNSET) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "\"api_versions_pin\" directive is duplicate");
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    auto *args = static_cast<ngx_str_t *>(cf->args->elts);
    if (sv(args[1]) == "signin") {
        lcf->pin = 1;
    } else if (sv(args[1]) == "off") {
        lcf->pin = 0;
    } else {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid value \"%V\" (signin or off)", &args[1]);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    lcf->pin_file = cf->conf_file->file.name.data;
    lcf->pin_line = cf->conf_file->line;
    return static_cast<char *>(NGX_CONF_OK);
}

void merge_pin(const ngx_http_api_versions_loc_conf_t *prev, ngx_http_api_versions_loc_conf_t *conf) {
    if (conf->pin == NGX_CONF_UNSET) {
        conf->pin = prev->pin == NGX_CONF_UNSET ? 0 : prev->pin;
        conf->pin_file = prev->pin_file;
        conf->pin_line = prev->pin_line;
    }
}

bool pin_allowed(ngx_conf_t *cf, const ngx_http_api_versions_loc_conf_t *conf,
                 const ngx_http_api_versions_main_conf_t *mcf) {
    Where at{reinterpret_cast<const char *>(conf->pin_file), conf->pin_line};
    if (!mcf->state) {
        late_error(cf, "\"api_versions_pin\" needs an \"api_versions\" block", at);
        return false;
    }
    if (!signin_ngx::store_configured(cf)) {
        late_error(cf, "\"api_versions_pin signin\" needs \"signin_store\": the pins are kept on the accounts", at);
        return false;
    }
    return true;
}

}  // namespace apiv
