// The locations: signin_api and its pages, signin_require and who may pass (signin_allow,
// signin_deny, signin_login_url, signin_pass_credentials, signin_assertion_audience), and
// signin_metrics; the location level's conf and what nginx -t checks as it merges it.
#include "signin_conf.h"
#include "signin_directives.h"
#include "signin_handlers.h"
#include "signin_metrics.h"

#include <string>
#include <string_view>

namespace signin_ngx {

// ---------------------------------------------------------------- directives

static char *set_api(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *l = static_cast<LocConf *>(conf);
    if (l->api != NGX_CONF_UNSET) return const_cast<char *>("is duplicate");
    l->api = 1;
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
    clcf->handler = api_handler;
    auto *m = static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_signin_module));
    m->used = 1;
    m->has_api = 1;
    return NGX_CONF_OK;
}

static char *set_require(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    char *rv = ngx_conf_set_enum_slot(cf, cmd, conf);
    if (rv != NGX_CONF_OK) return rv;
    if (static_cast<LocConf *>(conf)->require) {
        auto *m = static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_signin_module));
        m->used = 1;
    }
    return NGX_CONF_OK;
}

// signin_allow FORM [VALUE] / signin_deny FORM [VALUE] (cmd->offset: 1 = allow). A file is read
// now: a reload reads it again.
static char *set_access_rule(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    return guard_conf(cf, "signin_allow/signin_deny", [&]() -> char * {
        auto *l = static_cast<LocConf *>(conf);
        auto *value = static_cast<ngx_str_t *>(cf->args->elts);
        const bool allow = cmd->offset == 1;
        std::string_view form = sv(value[1]);
        std::string_view arg = cf->args->nelts > 2 ? sv(value[2]) : std::string_view();
        std::string text;
        std::string path;
        if (form == "file" && !arg.empty()) {
            auto file = read_conf_file(cf, cmd, value[2], path);
            if (!file) return static_cast<char *>(NGX_CONF_ERROR);
            text = std::move(*file);
            arg = path;
        }
        auto rule = signin::AccessRules::rule(allow, form, arg, text);
        if (!rule) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%V: %s", &cmd->name, rule.error().message.c_str());
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        if (l->rules == nullptr) {
            l->rules = pool_object<signin::AccessRules>(cf->pool);
            if (l->rules == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
        }
        l->rules->add(std::move(rule.value()));
        return NGX_CONF_OK;
    });
}

// signin_require on | off | mfa
static ngx_conf_enum_t require_modes[] = {
    {ngx_string("off"), 0}, {ngx_string("on"), 1}, {ngx_string("mfa"), 2}, {ngx_null_string, 0}};

Directives location_directives() {
    static ngx_command_t table[] = {
        {ngx_string("signin_api"), NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS, guarded_directive<set_api>,
         NGX_HTTP_LOC_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_pages"), NGX_HTTP_LOC_CONF | NGX_CONF_FLAG, ngx_conf_set_flag_slot,
         NGX_HTTP_LOC_CONF_OFFSET, offsetof(LocConf, pages), nullptr},
        {ngx_string("signin_pages_css"), NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE1,
         ngx_conf_set_str_slot, NGX_HTTP_LOC_CONF_OFFSET, offsetof(LocConf, pages_css), nullptr},
        {ngx_string("signin_require"), NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE1,
         guarded_directive<set_require>, NGX_HTTP_LOC_CONF_OFFSET, offsetof(LocConf, require), require_modes},
        {ngx_string("signin_allow"), NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE12,
         set_access_rule, NGX_HTTP_LOC_CONF_OFFSET, 1, nullptr},
        {ngx_string("signin_deny"), NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE12,
         set_access_rule, NGX_HTTP_LOC_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_login_url"), NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE1,
         ngx_conf_set_str_slot, NGX_HTTP_LOC_CONF_OFFSET, offsetof(LocConf, login_url), nullptr},
        {ngx_string("signin_pass_credentials"),
         NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_FLAG, ngx_conf_set_flag_slot,
         NGX_HTTP_LOC_CONF_OFFSET, offsetof(LocConf, pass_credentials), nullptr},
        {ngx_string("signin_assertion_audience"),
         NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE1, ngx_http_set_complex_value_slot,
         NGX_HTTP_LOC_CONF_OFFSET, offsetof(LocConf, assertion_audience), nullptr},
        {ngx_string("signin_metrics"), NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS, guarded_directive<set_metrics>,
         NGX_HTTP_LOC_CONF_OFFSET, 0, nullptr},
    };
    return table;
}

// ---------------------------------------------------------------- the location level

void *create_loc_conf(ngx_conf_t *cf) {
    auto *l = static_cast<LocConf *>(ngx_pcalloc(cf->pool, sizeof(LocConf)));
    if (l == nullptr) return nullptr;
    l->api = NGX_CONF_UNSET;
    l->require = NGX_CONF_UNSET_UINT;
    l->mailbox = NGX_CONF_UNSET;
    l->previews = NGX_CONF_UNSET;
    l->pass_credentials = NGX_CONF_UNSET;
    l->pages = NGX_CONF_UNSET;
    l->admin = NGX_CONF_UNSET;
    return l;
}

char *merge_loc_conf(ngx_conf_t *cf, void *parent, void *child) {
    auto *prev = static_cast<LocConf *>(parent);
    auto *conf = static_cast<LocConf *>(child);
    ngx_conf_merge_uint_value(conf->require, prev->require, 0);
    ngx_conf_init_value(conf->api, 0);
    ngx_conf_init_value(conf->mailbox, 0);
    ngx_conf_init_value(conf->previews, 0);
    ngx_conf_merge_value(conf->pass_credentials, prev->pass_credentials, 0);
    ngx_conf_init_value(conf->pages, 0);
    if (conf->pages && !conf->api) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "\"signin_pages\" needs \"signin_api\" in the same location");
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    ngx_conf_merge_str_value(conf->pages_css, prev->pages_css, "");
    ngx_conf_merge_value(conf->admin, prev->admin, 0);
    if (conf->api == 1) {
        auto *mc = static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_signin_module));
        auto *lc = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
        if (mc->link_location.len == 0 || (conf->pages && !mc->link_to_pages)) {
            mc->link_location = lc->name;
            mc->link_to_pages = conf->pages;
        }
    }
    // the pages' CSP loads styles from this origin only ('self'): a path of this site
    if (conf->pages_css.len && !signin::is_same_origin_path(sv(conf->pages_css))) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_pages_css \"%V\" must be a path of this site, like /static/site.css",
                           &conf->pages_css);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (conf->rules == nullptr) conf->rules = prev->rules;  // a level with rules replaces the outer list
    if (conf->assertion_audience == nullptr) conf->assertion_audience = prev->assertion_audience;
    ngx_conf_merge_str_value(conf->login_url, prev->login_url, "");
    if (conf->login_url.len && conf->login_url.data[0] != '/' &&
        ngx_strncmp(conf->login_url.data, "https://", 8) != 0 && ngx_strncmp(conf->login_url.data, "http://", 7) != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_login_url \"%V\" must be a path or an http(s) URL",
                           &conf->login_url);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    // The delivery location sends email to any address it is given: reachable from outside, it
    // is an open relay (cf->ctx is this location's while nginx merges it).
    auto *m = static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_signin_module));
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
    if (m->used && m->delivery_uri.len && clcf->internal != 1 && clcf->name.len == m->delivery_uri.len &&
        ngx_strncmp(clcf->name.data, m->delivery_uri.data, m->delivery_uri.len) == 0) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "the signin_delivery location \"%V\" is not \"internal\": anyone can make it send "
                           "email; add \"internal;\" to it",
                           &clcf->name);
    }
    return NGX_CONF_OK;
}

}  // namespace signin_ngx
