// ngx_http_api_versions_module: the `api_versions { }` group, api_versions_route and
// api_versions_openapi; configuration parsing, checks and merge. Requests: api_versions_handler.cpp,
// headers and variables: api_versions_filter.cpp.
#include "ngx_signin_nginx.h"

#include <memory>
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

using apiv::check_changes;
using apiv::schema_directive;
using apiv::late_error;

// Runs a directive body; configuration errors and allocation failures fail `nginx -t`. A
// ConfigError is the message nginx -t shows as it stands; anything else is named as this module's.
template <class F>
char *guarded(ngx_conf_t *cf, F &&body) noexcept {
    return signin_ngx::guard(body, [cf](const std::exception *e) -> char * {
        if (const auto *config = dynamic_cast<const ConfigError *>(e)) return conf_error(cf, config->what());
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "api_versions: %s", e ? e->what() : "unexpected error");
        return static_cast<char *>(NGX_CONF_ERROR);
    });
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
        bool gone = false;
        for (ngx_uint_t i = 2; i < cf->args->nelts; ++i) {
            std::string_view a = sv(args[i]);
            if (a == "gone") {
                if (gone) {
                    return conf_error(cf, "duplicate \"gone\"");
                }
                gone = true;
                continue;
            }
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
                                   "invalid parameter \"%V\" (deprecated=DATE, sunset=DATE or gone)", &args[i]);
                return static_cast<char *>(NGX_CONF_ERROR);
            }
        }
        apiv::State &s = *mcf->state;
        s.current_version = s.group.add_version(std::string(sv(args[1])), dates[0], dates[1], gone);
        s.changes.resize(s.current_version + 1);
        s.change_at.resize(s.current_version + 1);
        ngx_conf_t save = *cf;
        cf->cmd_type = apiv::kVersionConf;
        char *rv = ngx_conf_parse(cf, nullptr);
        *cf = save;
        return rv;
    });
}

// field_added, field_removed, field_renamed and value_mapped inside `version NAME { }`: how
// this version's JSON bodies differ from the version before it.
char *change_directive(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *mcf = static_cast<MainConf *>(conf);
    return guarded(cf, [&]() -> char * {
        auto *args = static_cast<ngx_str_t *>(cf->args->elts);
        std::vector<std::string> words;
        for (ngx_uint_t i = 0; i < cf->args->nelts; ++i) {
            words.emplace_back(sv(args[i]));
        }
        signin::version::Change change;
        std::string err = signin::version::parse_change(words, change);
        if (!err.empty()) {
            return conf_error(cf, err.c_str());
        }
        apiv::State &s = *mcf->state;
        s.changes[s.current_version].push_back(std::move(change));
        s.change_at[s.current_version].push_back(here(cf));
        return static_cast<char *>(NGX_CONF_OK);
    });
}

char *upstream_version_directive(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *mcf = static_cast<MainConf *>(conf);
    if (mcf->upstream_version.data) {
        return conf_error(cf, "\"api_versions_upstream_version\" directive is duplicate");
    }
    auto *args = static_cast<ngx_str_t *>(cf->args->elts);
    if (args[1].len == 0) {
        return conf_error(cf, "empty upstream version name");
    }
    mcf->upstream_version = args[1];
    mcf->upstream_file = cf->conf_file->file.name.data;
    mcf->upstream_line = cf->conf_file->line;
    return static_cast<char *>(NGX_CONF_OK);
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
        s.deprecation.push_back(v.deprecated ? signin::version::deprecation_value(*v.deprecated) : "");
        s.sunset.push_back(v.sunset ? signin::version::http_date(*v.sunset) : "");
    }
    s.changes.resize(s.group.versions().size());
    s.change_at.resize(s.group.versions().size());
    return check_changes(cf, s);
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

// api_versions_report on|off, remembering where it was written for the check that a group exists.
char *report_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    char *rv = ngx_conf_set_flag_slot(cf, cmd, conf);
    if (rv == NGX_CONF_OK) {
        auto *lcf = static_cast<LocConf *>(conf);
        lcf->report_file = cf->conf_file->file.name.data;
        lcf->report_line = cf->conf_file->line;
    }
    return rv;
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
    {ngx_string("version"), apiv::kGroupConf | NGX_CONF_BLOCK | NGX_CONF_TAKE1234, version_block,
     NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
    {ngx_string("controller"), apiv::kVersionConf | NGX_CONF_BLOCK | NGX_CONF_TAKE1, controller_block,
     NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
    {ngx_string("field_added"), apiv::kVersionConf | NGX_CONF_1MORE, change_directive, NGX_HTTP_MAIN_CONF_OFFSET, 0,
     nullptr},
    {ngx_string("field_removed"), apiv::kVersionConf | NGX_CONF_1MORE, change_directive, NGX_HTTP_MAIN_CONF_OFFSET, 0,
     nullptr},
    {ngx_string("field_renamed"), apiv::kVersionConf | NGX_CONF_1MORE, change_directive, NGX_HTTP_MAIN_CONF_OFFSET, 0,
     nullptr},
    {ngx_string("value_mapped"), apiv::kVersionConf | NGX_CONF_1MORE, change_directive, NGX_HTTP_MAIN_CONF_OFFSET, 0,
     nullptr},
    {ngx_string("api_versions_upstream_version"), NGX_HTTP_MAIN_CONF | apiv::kGroupConf | NGX_CONF_TAKE1,
     upstream_version_directive, NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
    {ngx_string("api_versions_schema"), NGX_HTTP_MAIN_CONF | apiv::kGroupConf | NGX_CONF_TAKE1, schema_directive,
     NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
    {ngx_string("api_versions_body_max"), NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE1,
     ngx_conf_set_size_slot, NGX_HTTP_LOC_CONF_OFFSET, offsetof(ngx_http_api_versions_loc_conf_t, body_max), nullptr},
    {ngx_string("api_versions_report"), NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_FLAG,
     report_directive, NGX_HTTP_LOC_CONF_OFFSET, offsetof(ngx_http_api_versions_loc_conf_t, report), nullptr},
    {ngx_string("api_versions_pin"), NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE1,
     apiv::pin_directive, NGX_HTTP_LOC_CONF_OFFSET, 0, nullptr},
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
    lcf->body_max = NGX_CONF_UNSET_SIZE;
    lcf->report = NGX_CONF_UNSET;
    lcf->pin = NGX_CONF_UNSET;
    return lcf;
}

char *merge_loc_conf(ngx_conf_t *cf, void *parent, void *child) {
    auto *prev = static_cast<LocConf *>(parent);
    auto *conf = static_cast<LocConf *>(child);
    ngx_conf_merge_size_value(conf->body_max, prev->body_max, 1024 * 1024);
    if (conf->report == NGX_CONF_UNSET) {
        conf->report_file = prev->report_file;
        conf->report_line = prev->report_line;
    }
    ngx_conf_merge_value(conf->report, prev->report, 0);
    apiv::merge_pin(prev, conf);
    if (conf->route == NGX_CONF_UNSET) {
        conf->route = prev->route == NGX_CONF_UNSET ? 0 : prev->route;
        conf->mount = prev->mount;
        conf->route_file = prev->route_file;
        conf->route_line = prev->route_line;
    }
    if (conf->openapi == NGX_CONF_UNSET) {
        conf->openapi = 0;
    }
    auto *mcf = static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_api_versions_module));
    if (!conf->route && !conf->openapi && !(conf->report && !mcf->state) && !conf->pin) {
        return static_cast<char *>(NGX_CONF_OK);
    }
    return guarded(cf, [&]() -> char * {
        if (conf->pin && !apiv::pin_allowed(cf, conf, mcf)) {
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        if (conf->report && !mcf->state) {
            return late_error(cf, "\"api_versions_report\" needs an \"api_versions\" block",
                              {reinterpret_cast<const char *>(conf->report_file), conf->report_line});
        }
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

ngx_int_t postconfiguration(ngx_conf_t *cf) {
    auto *mcf = static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_api_versions_module));
    if (!mcf->state) {
        if (mcf->schema_file.data) {
            late_error(cf, "\"api_versions_schema\" needs an \"api_versions\" block",
                       {reinterpret_cast<const char *>(mcf->schema_conf_file), mcf->schema_line});
            return NGX_ERROR;
        }
        if (mcf->upstream_version.data) {
            late_error(cf, "\"api_versions_upstream_version\" needs an \"api_versions\" block",
                       {reinterpret_cast<const char *>(mcf->upstream_file), mcf->upstream_line});
            return NGX_ERROR;
        }
        return NGX_OK;
    }
    const bool checked = signin_ngx::guard(
        [&] {
            apiv::State &s = *mcf->state;
            s.upstream_version = s.group.versions().empty() ? signin::version::npos : s.group.versions().size() - 1;
            if (mcf->upstream_version.data) {
                s.upstream_version = s.group.find(sv(mcf->upstream_version));
                if (s.upstream_version == signin::version::npos) {
                    late_error(cf, "upstream version \"" + std::string(sv(mcf->upstream_version)) + "\" is never declared",
                               {reinterpret_cast<const char *>(mcf->upstream_file), mcf->upstream_line});
                    return false;
                }
            }
            if (mcf->schema_file.data && !apiv::load_schema(cf, mcf)) {
                return false;
            }
            if (!apiv::controllers_exist(cf, *mcf->state)) {
                return false;
            }
            apiv::warn_shadowed_locations(cf, mcf);
            return true;
        },
        [cf](const std::exception *e) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0, "api_versions: %s", e ? e->what() : "unexpected error");
            return false;
        });
    if (!checked) {
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
    if (apiv::install_filter(cf) != NGX_OK) {
        return NGX_ERROR;
    }
    return mcf->state->migrator ? apiv::install_body_filter(cf) : NGX_OK;
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
    nullptr, nullptr, apiv::init_process, nullptr, nullptr, nullptr, nullptr,
    NGX_MODULE_V1_PADDING};
}
