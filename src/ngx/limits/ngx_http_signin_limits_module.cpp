// ngx_http_signin_limits_module: the request limits of the sign-in API and their shared zone
// (signin_limits.cpp).
//
//   signin_limits zone=NAME:SIZE | off;        (http) the shared zone; without it no limit applies
//                                              (nginx -t warns when signin_api/require is used)
//   signin_limit_sensitive          30r/m;     per client: /register /login /session /token /password*
//   signin_limit_signed_in         300r/m;     per client: /me /sessions /sessions/revoke /logout, signin_require
//   signin_limit_address             5r/h;     per address: token sends (over it: 202, nothing sent)
//   signin_limit_exchange_failures  off;       per client: failed token exchanges (then 429), e.g. 10r/10m
#include "limits_conf.h"
#include "signin_limits.h"
#include "../signin/signin_conf.h"

#include <string>
#include <string_view>

using namespace signin_ngx;

// ---------------------------------------------------------------- configuration

namespace {

void *create_main_conf(ngx_conf_t *cf) {
    auto *c = static_cast<LimitsConf *>(ngx_pcalloc(cf->pool, sizeof(LimitsConf)));
    if (c == nullptr) return nullptr;
    c->off = NGX_CONF_UNSET;
    for (LimitRule *r : {&c->sensitive, &c->signed_in, &c->address, &c->exchange_failures}) {
        r->limit = NGX_CONF_UNSET_UINT;
        r->window = NGX_CONF_UNSET_MSEC;
    }
    return c;
}

void init_rule(LimitRule &r, ngx_uint_t limit, ngx_msec_t window) {
    if (r.limit == NGX_CONF_UNSET_UINT) {
        r.limit = limit;
        r.window = window;
    }
}

char *init_main_conf(ngx_conf_t *cf, void *conf) {
    auto *c = static_cast<LimitsConf *>(conf);
    init_rule(c->sensitive, 30, 60 * 1000);
    init_rule(c->signed_in, 300, 60 * 1000);
    init_rule(c->address, 5, 3600 * 1000);
    // off unless configured: a 256-bit token cannot be guessed, and this limit refused even a valid
    // token for everyone behind one address (a NAT, an office) for ten minutes, stricter than
    // the 30 exchanges a minute per client of signin_limit_sensitive, which always applies
    init_rule(c->exchange_failures, 0, 10 * 60 * 1000);
    ngx_conf_init_value(c->off, 0);
    if (c->off || c->zone) return NGX_CONF_OK;
    // Like limit_req_zone, the zone is a memory reservation the operator sizes, so it is not
    // made behind their back; but a sign-in service without limits is an open relay, so say so.
    auto *m = static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_signin_module));
    if (m && m->used) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "signin_api or signin_require without \"signin_limits\": no request limit applies; "
                           "add \"signin_limits zone=signin:10m;\" (or \"signin_limits off;\" to mean it)");
    }
    return NGX_CONF_OK;
}

char *set_limits(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *c = static_cast<LimitsConf *>(conf);
    if (c->zone || c->off != NGX_CONF_UNSET) return const_cast<char *>("is duplicate");
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    if (value[1].len == 3 && ngx_strncmp(value[1].data, "off", 3) == 0) {
        c->off = 1;
        return NGX_CONF_OK;
    }
    if (value[1].len <= 5 || ngx_strncmp(value[1].data, "zone=", 5) != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\" (zone=NAME:SIZE or off)", &value[1]);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    ngx_str_t name = {value[1].len - 5, value[1].data + 5};
    u_char *colon = static_cast<u_char *>(ngx_strlchr(name.data, name.data + name.len, ':'));
    if (colon == nullptr || colon == name.data) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid zone \"%V\" (zone=NAME:SIZE)", &value[1]);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    ngx_str_t s = {static_cast<size_t>(name.data + name.len - colon - 1), colon + 1};
    name.len = static_cast<size_t>(colon - name.data);
    ssize_t size = ngx_parse_size(&s);
    if (size == NGX_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid zone size \"%V\"", &value[1]);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (size < static_cast<ssize_t>(8 * ngx_pagesize)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "zone \"%V\" is too small (at least %uzk)", &name,
                           static_cast<size_t>(8 * ngx_pagesize / 1024));
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    c->zone = add_limits_zone(cf, &name, static_cast<size_t>(size));
    return c->zone ? NGX_CONF_OK : static_cast<char *>(NGX_CONF_ERROR);
}

// "30r/m", "5r/h", "3r/2s", "10r/10m", "off".
char *set_rule(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    auto *r = reinterpret_cast<LimitRule *>(static_cast<char *>(conf) + cmd->offset);
    if (r->limit != NGX_CONF_UNSET_UINT) return const_cast<char *>("is duplicate");
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    std::string_view v = sv(value[1]);
    if (v == "off") {
        r->limit = 0;
        r->window = 60 * 1000;
        return NGX_CONF_OK;
    }
    auto bad = [&]() {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid rate \"%V\" (N r/s, r/m, r/h, r/d or r/TIME such as 3r/2s, 10r/10m; or off)",
                           &value[1]);
        return static_cast<char *>(NGX_CONF_ERROR);
    };
    std::size_t slash = v.find("r/");
    if (slash == 0 || slash == std::string_view::npos) return bad();
    ngx_int_t n = ngx_atoi(value[1].data, slash);
    if (n == NGX_ERROR || n < 1 || n > 1000000) return bad();
    std::string unit(v.substr(slash + 2));
    if (unit.empty()) return bad();
    if (unit == "s" || unit == "m" || unit == "h" || unit == "d") unit = "1" + unit;
    ngx_str_t t = {unit.size(), reinterpret_cast<u_char *>(unit.data())};
    ngx_int_t ms = ngx_parse_time(&t, 0);
    if (ms == NGX_ERROR || ms < 1000 || ms > 30LL * 24 * 3600 * 1000) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid rate \"%V\" (the window must be 1s to 30d)", &value[1]);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    r->limit = static_cast<ngx_uint_t>(n);
    r->window = static_cast<ngx_msec_t>(ms);
    return NGX_CONF_OK;
}

ngx_command_t commands[] = {
    {ngx_string("signin_limits"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
     guarded_directive<set_limits>, NGX_HTTP_MAIN_CONF_OFFSET, 0,
     nullptr},
    {ngx_string("signin_limit_sensitive"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
     guarded_directive<set_rule>, NGX_HTTP_MAIN_CONF_OFFSET,
     offsetof(LimitsConf, sensitive), nullptr},
    {ngx_string("signin_limit_signed_in"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
     guarded_directive<set_rule>, NGX_HTTP_MAIN_CONF_OFFSET,
     offsetof(LimitsConf, signed_in), nullptr},
    {ngx_string("signin_limit_address"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
     guarded_directive<set_rule>, NGX_HTTP_MAIN_CONF_OFFSET,
     offsetof(LimitsConf, address), nullptr},
    {ngx_string("signin_limit_exchange_failures"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
     guarded_directive<set_rule>,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(LimitsConf, exchange_failures), nullptr},
    ngx_null_command};

ngx_http_module_t module_ctx = {
    nullptr, nullptr, create_main_conf,
    [](ngx_conf_t *cf, void *conf) { return guard_conf(cf, "signin_limits", [&] { return init_main_conf(cf, conf); }); },
    nullptr, nullptr, nullptr, nullptr};

}  // namespace

namespace signin_ngx {
LimitsMode limits_mode(ngx_cycle_t *cycle) {
    auto *hc = reinterpret_cast<ngx_http_conf_ctx_t *>(cycle->conf_ctx[ngx_http_module.index]);
    if (hc == nullptr) return LimitsMode::None;
    auto *c = static_cast<LimitsConf *>(hc->main_conf[ngx_http_signin_limits_module.ctx_index]);
    if (c == nullptr) return LimitsMode::None;
    if (c->zone) return LimitsMode::Zone;
    return c->off ? LimitsMode::Off : LimitsMode::None;
}
}  // namespace signin_ngx

extern "C" {
ngx_module_t ngx_http_signin_limits_module = {NGX_MODULE_V1,
                                              &module_ctx,
                                              commands,
                                              NGX_HTTP_MODULE,
                                              nullptr,
                                              nullptr,
                                              nullptr,
                                              nullptr,
                                              nullptr,
                                              nullptr,
                                              nullptr,
                                              NGX_MODULE_V1_PADDING};
}
