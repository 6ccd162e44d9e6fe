// ngx_http_api_versions_module: the `api_versions { }` group, api_versions_route and
// api_versions_openapi; configuration parsing, checks and merge. Requests: api_versions_handler.cpp,
// headers and variables: api_versions_filter.cpp.
#include "ngx_signin_nginx.h"

#include <new>
#include <string>
#include <vector>

#include "api_versions_glue.h"
#include "signin/version/dates.hpp"

using signin::version::ConfigError;
using signin::version::Strategy;
using signin_ngx::sv;

namespace {

using MainConf = ngx_http_api_versions_main_conf_t;
using LocConf = ngx_http_api_versions_loc_conf_t;

apiv::Where here(ngx_conf_t *cf) {
    return {std::string(sv(cf->conf_file->file.name)), cf->conf_file->line};
}

char *conf_error(ngx_conf_t *cf, const char *what) {
    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s", what);
    return static_cast<char *>(NGX_CONF_ERROR);
}

// An error found after parsing, reported at the line that caused it.
char *late_error(ngx_conf_t *cf, const std::string &what, const apiv::Where &at) {
    ngx_log_error(NGX_LOG_EMERG, cf->log, 0, "%s in %s:%ui", what.c_str(), at.file.c_str(), at.line);
    return static_cast<char *>(NGX_CONF_ERROR);
}

// Runs a directive body; configuration errors and allocation failures fail `nginx -t`.
template <class F>
char *guarded(ngx_conf_t *cf, F &&body) {
    try {
        return body();
    } catch (const ConfigError &e) {
        return conf_error(cf, e.what());
    } catch (const std::exception &e) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "api_versions: %s", e.what());
    } catch (...) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "api_versions: unexpected error");
    }
    return static_cast<char *>(NGX_CONF_ERROR);
}

void destroy_state(void *data) {
    static_cast<apiv::State *>(data)->~State();
}

// Lines of a controller block: "METHOD /path;".
char *route_line(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *mcf = static_cast<MainConf *>(conf);
    return guarded(cf, [&]() -> char * {
        auto *args = static_cast<ngx_str_t *>(cf->args->elts);
        if (cf->args->nelts != 2) {
            return conf_error(cf, "invalid route: expected \"METHOD /path;\" (quote a path that has \"{\")");
        }
        apiv::State &s = *mcf->state;
        s.group.add_route(s.current_version, s.current_controller, sv(args[0]), sv(args[1]));
        ++s.current_routes;
        return static_cast<char *>(NGX_CONF_OK);
    });
}

char *controller_block(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *mcf = static_cast<MainConf *>(conf);
    return guarded(cf, [&]() -> char * {
        auto *args = static_cast<ngx_str_t *>(cf->args->elts);
        apiv::State &s = *mcf->state;
        std::string name(sv(args[1]));
        if (name.size() < 2 || name[0] != '@') {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "controller \"%V\" must name a named location (\"@name\")", &args[1]);
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        s.controllers.push_back({name, s.group.versions()[s.current_version].name, here(cf)});
        s.current_controller = name;
        s.current_routes = 0;
        ngx_conf_t save = *cf;
        cf->handler = route_line;
        cf->handler_conf = static_cast<char *>(conf);
        char *rv = ngx_conf_parse(cf, nullptr);
        *cf = save;
        if (rv != NGX_CONF_OK) {
            return rv;
        }
        if (s.current_routes == 0) {
            return late_error(cf, "controller \"" + name + "\" declares no route", s.controllers.back().where);
        }
        return static_cast<char *>(NGX_CONF_OK);
    });
}

char *version_block(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *mcf = static_cast<MainConf *>(conf);
    return guarded(cf, [&]() -> char * {
        auto *args = static_cast<ngx_str_t *>(cf->args->elts);
        std::optional<std::int64_t> dates[2];
        static const std::string_view keys[2] = {"deprecated=", "sunset="};
        for (ngx_uint_t i = 2; i < cf->args->nelts; ++i) {
            std::string_view a = sv(args[i]);
            bool known = false;
            for (int k = 0; k < 2; ++k) {
                if (a.substr(0, keys[k].size()) != keys[k]) {
                    continue;
                }
                known = true;
                if (dates[k]) {
                    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "duplicate \"%V\"", &args[i]);
                    return static_cast<char *>(NGX_CONF_ERROR);
                }
                dates[k] = signin::version::parse_date(a.substr(keys[k].size()));
                if (!dates[k]) {
                    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                       "invalid date in \"%V\" (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ)", &args[i]);
                    return static_cast<char *>(NGX_CONF_ERROR);
                }
            }
            if (!known) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid parameter \"%V\" (deprecated=DATE or sunset=DATE)", &args[i]);
                return static_cast<char *>(NGX_CONF_ERROR);
            }
        }
        apiv::State &s = *mcf->state;
        s.current_version = s.group.add_version(std::string(sv(args[1])), dates[0], dates[1]);
        ngx_conf_t save = *cf;
        cf->cmd_type = apiv::kVersionConf;
        char *rv = ngx_conf_parse(cf, nullptr);
        *cf = save;
        return rv;
    });
}

char *strategy_directive(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *mcf = static_cast<MainConf *>(conf);
    return guarded(cf, [&]() -> char * {
        auto *args = static_cast<ngx_str_t *>(cf->args->elts);
        apiv::State &s = *mcf->state;
        if (s.has_strategy) {
            return conf_error(cf, "\"strategy\" directive is duplicate");
        }
        s.has_strategy = true;
        std::string_view kind = sv(args[1]);
        ngx_uint_t n = cf->args->nelts;
        if (kind == "path" && n == 2) {
            s.group.set_strategy(Strategy::Path);
            mcf->strategy = apiv::StrategyKind::Path;
        } else if (kind == "header" && n == 3) {
            s.group.set_strategy(Strategy::Header, std::string(sv(args[2])));
            mcf->strategy = apiv::StrategyKind::Header;
        } else if (kind == "accept" && n == 3) {
            s.group.set_strategy(Strategy::Accept, std::string(sv(args[2])));
            mcf->strategy = apiv::StrategyKind::Accept;
            mcf->vendor = signin_ngx::pool_copy(cf->pool, s.group.strategy_argument());
            if (!mcf->vendor.data) {
                return static_cast<char *>(NGX_CONF_ERROR);
            }
        } else if (kind == "custom" && n == 3) {
            s.group.set_strategy(Strategy::Custom, std::string(sv(args[2])));
            mcf->strategy = apiv::StrategyKind::Custom;
            mcf->custom = static_cast<ngx_http_complex_value_t *>(
                ngx_pcalloc(cf->pool, sizeof(ngx_http_complex_value_t)));
            if (!mcf->custom) {
                return static_cast<char *>(NGX_CONF_ERROR);
            }
            ngx_http_compile_complex_value_t ccv;
            ngx_memzero(&ccv, sizeof ccv);
            ccv.cf = cf;
            ccv.value = &args[2];
            ccv.complex_value = mcf->custom;
            if (ngx_http_compile_complex_value(&ccv) != NGX_OK) {
                return static_cast<char *>(NGX_CONF_ERROR);
            }
        } else {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid strategy \"%V\" (path, header NAME, accept VENDOR or custom VALUE)",
                               &args[1]);
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        return static_cast<char *>(NGX_CONF_OK);
    });
}

char *default_directive(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *mcf = static_cast<MainConf *>(conf);
    return guarded(cf, [&]() -> char * {
        auto *args = static_cast<ngx_str_t *>(cf->args->elts);
        apiv::State &s = *mcf->state;
        if (!s.default_name.empty()) {
            return conf_error(cf, "\"default\" directive is duplicate");
        }
        if (args[1].len == 0) {
            return conf_error(cf, "empty default version name");
        }
        s.default_name = std::string(sv(args[1]));
        s.default_at = here(cf);
        return static_cast<char *>(NGX_CONF_OK);
    });
}

// Everything derived once the block is complete.
char *finish_group(ngx_conf_t *cf, MainConf *mcf) {
    apiv::State &s = *mcf->state;
    if (!s.default_name.empty()) {
        bool declared = false;
        for (const auto &v : s.group.versions()) {
            declared = declared || v.name == s.default_name;
        }
        if (!declared) {
            return late_error(cf, "default version \"" + s.default_name + "\" is never declared", s.default_at);
        }
        s.group.set_default(s.default_name);
    }
    s.group.set_fallback(mcf->fallback != 0);
    s.group.finish();
    if (mcf->strategy == apiv::StrategyKind::Header) {
        mcf->header = signin_ngx::pool_copy(cf->pool, s.group.strategy_argument());
        mcf->vary = mcf->header;
    } else if (mcf->strategy == apiv::StrategyKind::Accept) {
        mcf->vary = signin_ngx::ngx_view("accept");
    }
    if ((mcf->header.len && !mcf->header.data)) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    for (const auto &v : s.group.versions()) {
        s.supported += (s.supported.empty() ? "" : ", ") + v.name;
        s.deprecation.push_back(v.deprecated ? signin::version::deprecation_value(*v.deprecated) : "");
        s.sunset.push_back(v.sunset ? signin::version::http_date(*v.sunset) : "");
    }
    return static_cast<char *>(NGX_CONF_OK);
}

char *api_versions_block(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *mcf = static_cast<MainConf *>(conf);
    return guarded(cf, [&]() -> char * {
        if (mcf->state) {
            return conf_error(cf, "a second \"api_versions\" block: a configuration has one version group");
        }
        ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(cf->pool, sizeof(apiv::State));
        if (!cln) {
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        mcf->state = new (cln->data) apiv::State();
        cln->handler = destroy_state;
        ngx_conf_t save = *cf;
        cf->cmd_type = apiv::kGroupConf;
        char *rv = ngx_conf_parse(cf, nullptr);
        *cf = save;
        if (rv != NGX_CONF_OK) {
            return rv;
        }
        if (mcf->fallback == NGX_CONF_UNSET) {
            mcf->fallback = 1;
        }
        return finish_group(cf, mcf);
    });
}

char *route_directive(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *lcf = static_cast<LocConf *>(conf);
    return guarded(cf, [&]() -> char * {
        if (lcf->route != NGX_CONF_UNSET) {
            return conf_error(cf, "\"api_versions_route\" directive is duplicate");
        }
        auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(
            ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
        auto *args = static_cast<ngx_str_t *>(cf->args->elts);
        std::string_view mount;
        if (cf->args->nelts == 2) {
            mount = sv(args[1]);
            if (mount.empty() || mount.front() != '/') {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid mount \"%V\": it must start with \"/\"", &args[1]);
                return static_cast<char *>(NGX_CONF_ERROR);
            }
        } else {
            bool prefix = !clcf->named && !clcf->noname
#if (NGX_PCRE)
                          && !clcf->regex
#endif
                ;
            if (!prefix) {
                return conf_error(cf, "\"api_versions_route\" outside a prefix location needs the mount path "
                                      "as its argument");
            }
            mount = sv(clcf->name);
        }
        while (!mount.empty() && mount.back() == '/') {
            mount.remove_suffix(1);
        }
        lcf->route = 1;
        lcf->route_written = 1;
        clcf->handler = apiv::route_content_handler;  // the jump, after this location's access phase
        lcf->mount = signin_ngx::pool_copy(cf->pool, mount);
        lcf->route_file = cf->conf_file->file.name.data;
        lcf->route_line = cf->conf_file->line;
        if (!lcf->mount.data) {
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        auto *mcf = static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_api_versions_module));
        mcf->routing = 1;
        if (!mcf->mounted) {  // the OpenAPI documents' default mount
            mcf->first_mount = lcf->mount;
            mcf->mounted = 1;
        }
        return static_cast<char *>(NGX_CONF_OK);
    });
}

char *openapi_directive(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *lcf = static_cast<LocConf *>(conf);
    if (lcf->openapi != NGX_CONF_UNSET) {
        return conf_error(cf, "\"api_versions_openapi\" directive is duplicate");
    }
    auto *args = static_cast<ngx_str_t *>(cf->args->elts);
    lcf->openapi = 1;
    lcf->title = signin_ngx::ngx_view("API");
    // api_versions_openapi [TITLE] [mount=PATH] [controllers=on|off]
    for (ngx_uint_t i = 1; i < cf->args->nelts; i++) {
        std::string_view a = sv(args[i]);
        if (a.substr(0, 6) == "mount=") {
            std::string_view m = a.substr(6);
            if (!m.empty() && m.front() != '/') {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid mount \"%V\": it must start with \"/\"", &args[i]);
                return static_cast<char *>(NGX_CONF_ERROR);
            }
            while (!m.empty() && m.back() == '/') m.remove_suffix(1);
            lcf->openapi_mount = signin_ngx::pool_copy(cf->pool, m);
            lcf->openapi_mounted = 1;
        } else if (a == "controllers=on" || a == "controllers=off") {
            lcf->openapi_controllers = a == "controllers=on";
        } else if (i == 1 && a.find('=') == std::string_view::npos) {
            lcf->title = args[i];
        } else {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\"", &args[i]);
            return static_cast<char *>(NGX_CONF_ERROR);
        }
    }
    lcf->openapi_file = cf->conf_file->file.name.data;
    lcf->openapi_line = cf->conf_file->line;
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
    clcf->handler = apiv::openapi_handler;
    return static_cast<char *>(NGX_CONF_OK);
}

ngx_command_t commands[] = {
    {ngx_string("api_versions"), NGX_HTTP_MAIN_CONF | NGX_CONF_BLOCK | NGX_CONF_NOARGS, api_versions_block,
     NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
    {ngx_string("strategy"), apiv::kGroupConf | NGX_CONF_TAKE12, strategy_directive, NGX_HTTP_MAIN_CONF_OFFSET, 0,
     nullptr},
    {ngx_string("default"), apiv::kGroupConf | NGX_CONF_TAKE1, default_directive, NGX_HTTP_MAIN_CONF_OFFSET, 0,
     nullptr},
    {ngx_string("fallback"), apiv::kGroupConf | NGX_CONF_FLAG, ngx_conf_set_flag_slot, NGX_HTTP_MAIN_CONF_OFFSET,
     offsetof(ngx_http_api_versions_main_conf_t, fallback), nullptr},
    {ngx_string("version"), apiv::kGroupConf | NGX_CONF_BLOCK | NGX_CONF_TAKE123, version_block,
     NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
    {ngx_string("controller"), apiv::kVersionConf | NGX_CONF_BLOCK | NGX_CONF_TAKE1, controller_block,
     NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
    {ngx_string("api_versions_route"), NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS | NGX_CONF_TAKE1, route_directive,
     NGX_HTTP_LOC_CONF_OFFSET, 0, nullptr},
    {ngx_string("api_versions_openapi"), NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS | NGX_CONF_TAKE123, openapi_directive,
     NGX_HTTP_LOC_CONF_OFFSET, 0, nullptr},
    ngx_null_command};

void *create_main_conf(ngx_conf_t *cf) {
    auto *mcf = static_cast<MainConf *>(ngx_pcalloc(cf->pool, sizeof(MainConf)));
    if (!mcf) {
        return nullptr;
    }
    mcf->fallback = NGX_CONF_UNSET;
    mcf->strategy = apiv::StrategyKind::Path;
    return mcf;
}

void *create_loc_conf(ngx_conf_t *cf) {
    auto *lcf = static_cast<LocConf *>(ngx_pcalloc(cf->pool, sizeof(LocConf)));
    if (!lcf) {
        return nullptr;
    }
    lcf->route = NGX_CONF_UNSET;
    lcf->openapi = NGX_CONF_UNSET;
    return lcf;
}

char *merge_loc_conf(ngx_conf_t *cf, void *parent, void *child) {
    auto *prev = static_cast<LocConf *>(parent);
    auto *conf = static_cast<LocConf *>(child);
    if (conf->route == NGX_CONF_UNSET) {
        conf->route = prev->route == NGX_CONF_UNSET ? 0 : prev->route;
        conf->mount = prev->mount;
        conf->route_file = prev->route_file;
        conf->route_line = prev->route_line;
    }
    if (conf->openapi == NGX_CONF_UNSET) {
        conf->openapi = 0;
    }
    if (!conf->route && !conf->openapi) {
        return static_cast<char *>(NGX_CONF_OK);
    }
    auto *mcf = static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_api_versions_module));
    return guarded(cf, [&]() -> char * {
        if (conf->openapi && !mcf->state) {
            return late_error(cf, "\"api_versions_openapi\" needs an \"api_versions\" block",
                              {reinterpret_cast<const char *>(conf->openapi_file), conf->openapi_line});
        }
        if (!conf->route) {
            return static_cast<char *>(NGX_CONF_OK);
        }
        apiv::Where at{reinterpret_cast<const char *>(conf->route_file), conf->route_line};
        if (!mcf->state) {
            return late_error(cf, "\"api_versions_route\" needs an \"api_versions\" block", at);
        }
        // remember the server: its named locations are checked once they are known
        auto *cscf = static_cast<ngx_http_core_srv_conf_t *>(
            ngx_http_conf_get_module_srv_conf(cf, ngx_http_core_module));
        for (const auto &use : mcf->state->routes) {
            if (use.server == cscf) {
                return static_cast<char *>(NGX_CONF_OK);
            }
        }
        mcf->state->routes.push_back({cscf, at});
        return static_cast<char *>(NGX_CONF_OK);
    });
}

ngx_int_t preconfiguration(ngx_conf_t *cf) {
    return apiv::add_variables(cf);
}

// Every controller must be a named location of every server that routes through the group.
bool controllers_exist(ngx_conf_t *cf, const apiv::State &s) {
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

ngx_int_t postconfiguration(ngx_conf_t *cf) {
    auto *mcf = static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_api_versions_module));
    if (!mcf->state) {
        return NGX_OK;
    }
    try {
        if (!controllers_exist(cf, *mcf->state)) {
            return NGX_ERROR;
        }
        warn_shadowed_locations(cf, mcf);
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0, "api_versions: %s", e.what());
        return NGX_ERROR;
    }
    if (mcf->routing) {
        auto *cmcf = static_cast<ngx_http_core_main_conf_t *>(
            ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module));
        auto *h = static_cast<ngx_http_handler_pt *>(ngx_array_push(&cmcf->phases[NGX_HTTP_REWRITE_PHASE].handlers));
        if (!h) {
            return NGX_ERROR;
        }
        *h = apiv::rewrite_handler;
    }
    return apiv::install_filter(cf);
}

ngx_http_module_t module_ctx = {
    preconfiguration, postconfiguration, create_main_conf, nullptr, nullptr, nullptr, create_loc_conf,
    merge_loc_conf};

}  // namespace

extern "C" {
ngx_module_t ngx_http_api_versions_module = {
    NGX_MODULE_V1,
    &module_ctx,
    commands,
    NGX_HTTP_MODULE,
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
    NGX_MODULE_V1_PADDING};
}
