// The administrators' API: on or off (per location, inherited like nginx's own flags), and the
// role that makes an administrator. Reading needs the role; every change needs, as well, a fresh
// session that passed a second factor, so nginx -t refuses signin_admin on anywhere without
// signin_mfa (the core's check).
#include "signin_conf.h"
#include "signin_directives.h"

#include <string>

#include "signin/access.hpp"
#include "signin/conf_check.hpp"

namespace signin_ngx {
namespace {

// signin_admin_role NAME: written as a role is everywhere else (lower case, 1 to 32 of a-z, 0-9,
// _ and -), so that the role nginx compares is the one signin-admin grants.
char *set_admin_role(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    if (m->admin_role.len != 0) return const_cast<char *>("is duplicate");
    const auto *args = static_cast<ngx_str_t *>(cf->args->elts);
    auto role = signin::normalize_role(sv(args[1]));
    if (!role) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_admin_role \"%V\" is not a role (1 to 32 of a-z, 0-9, _ and -)",
                           &args[1]);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    m->admin_role.len = role->size();
    m->admin_role.data = static_cast<u_char *>(ngx_pnalloc(cf->pool, role->size()));
    if (m->admin_role.data == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
    ngx_memcpy(m->admin_role.data, role->data(), role->size());
    return NGX_CONF_OK;
}

// signin_admin on|off: the location's flag, and in the http block's conf whether any level turned
// it on, for the check against signin_mfa once the http block is parsed.
char *set_admin(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    char *rv = ngx_conf_set_flag_slot(cf, cmd, conf);
    if (rv != NGX_CONF_OK) return rv;
    auto *m = static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_signin_module));
    if (static_cast<LocConf *>(conf)->admin == 1) {
        m->admin = 1;
        if (!note_line(cf, m, cmd)) return static_cast<char *>(NGX_CONF_ERROR);
    }
    return NGX_CONF_OK;
}

}  // namespace

Directives admin_directives() {
    static ngx_command_t table[] = {
        {ngx_string("signin_admin"), NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_FLAG,
         set_admin, NGX_HTTP_LOC_CONF_OFFSET, offsetof(LocConf, admin), nullptr},
        {ngx_string("signin_admin_role"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, set_admin_role, NGX_HTTP_MAIN_CONF_OFFSET,
         0, nullptr},
    };
    return table;
}

char *check_admin(ngx_conf_t *cf, MainConf *m) {
    return report(cf, m, signin::conf::check_admin(m->admin == 1, m->policy->with_mfa)) ? NGX_CONF_OK
                                                                                       : static_cast<char *>(NGX_CONF_ERROR);
}

}  // namespace signin_ngx
