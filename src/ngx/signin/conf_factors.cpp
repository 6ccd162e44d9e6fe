// Second factors (TOTP, recovery codes) and passkeys: on or off, how long a device is remembered,
// the limits on wrong codes, the passkeys' relying party. The values land in the engine's Policy.
#include "signin_conf.h"
#include "signin_directives.h"

#include <string>

#include "signin/passkeys.hpp"

namespace signin_ngx {

Directives factor_directives() {
    using P = signin::Policy;
    static ngx_command_t table[] = {
        {ngx_string("signin_mfa"), NGX_HTTP_MAIN_CONF | NGX_CONF_FLAG, policy_flag<&P::with_mfa>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_mfa_remember"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, policy_msec<&P::mfa_remember>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_mfa_free_failures"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
         policy_num<&P::mfa_free_failures>, NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_mfa_backoff"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, policy_msec<&P::mfa_backoff>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_mfa_lock"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, policy_num<&P::mfa_lock_failures>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
    };
    return table;
}

Directives passkey_directives() {
    using P = signin::Policy;
    static ngx_command_t table[] = {
        {ngx_string("signin_passkeys"), NGX_HTTP_MAIN_CONF | NGX_CONF_FLAG, policy_flag<&P::with_passkeys>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_passkey_rp_id"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, policy_str<&P::passkey_rp_id>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
    };
    return table;
}

// The relying party's id must be the origin's host or a domain it belongs to (the core decides;
// a browser would refuse every passkey otherwise).
char *check_passkeys(ngx_conf_t *cf, MainConf *m) {
    if (!m->policy->with_passkeys || m->origin == nullptr) return NGX_CONF_OK;
    std::string warning;
    const std::string why = signin::check_rp_id(*m->origin, m->policy->passkey_rp_id, &warning);
    if (!why.empty()) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s", why.c_str());
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (!warning.empty()) ngx_conf_log_error(NGX_LOG_WARN, cf, 0, "%s", warning.c_str());
    return NGX_CONF_OK;
}

}  // namespace signin_ngx
