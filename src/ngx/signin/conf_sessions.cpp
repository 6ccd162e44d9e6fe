// Sessions and tokens: how long a code, a session and a bearer token live, how often a code is sent
// again, the audit log, the session cache of a store read over the network, and the accounts one
// browser holds. The lifetimes land in the engine's Policy; the core checks them.
#include "signin_conf.h"
#include "signin_directives.h"

namespace signin_ngx {

static ngx_conf_num_bounds_t tokens_bounds = {ngx_conf_check_num_bounds, 1, 16};
static ngx_conf_num_bounds_t browser_accounts_bounds = {ngx_conf_check_num_bounds, 1, 100};

Directives session_directives() {
    using P = signin::Policy;
    static ngx_command_t table[] = {
        {ngx_string("signin_token_ttl"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, policy_msec<&P::token_ttl>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_token_resend"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, policy_msec<&P::token_resend>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_tokens_per_address"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
         policy_num<&P::tokens_per_address>, NGX_HTTP_MAIN_CONF_OFFSET, 0, &tokens_bounds},
        {ngx_string("signin_session_ttl"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, policy_msec<&P::session_ttl>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_session_idle"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, policy_msec<&P::session_idle>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_bearer_ttl"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, policy_msec<&P::bearer_ttl>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_audit_keep"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, policy_msec<&P::audit_keep>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_audit_max"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_conf_set_num_slot,
         NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, audit_max), nullptr},
        {ngx_string("signin_session_cache"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, noted<ngx_conf_set_msec_slot>,
         NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, session_cache), nullptr},
        {ngx_string("signin_browser_accounts"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
         policy_num<&P::browser_accounts>, NGX_HTTP_MAIN_CONF_OFFSET, 0, &browser_accounts_bounds},
    };
    return table;
}

char *check_sessions(ngx_conf_t *cf, MainConf *m) {
    return report(cf, m, signin::conf::check_sessions(*m->policy)) ? NGX_CONF_OK : static_cast<char *>(NGX_CONF_ERROR);
}

}  // namespace signin_ngx
