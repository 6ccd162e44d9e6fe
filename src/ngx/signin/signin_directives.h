// The sign-in module's directives, by feature. Each conf_*.cpp holds one feature's directives
// (its table), the handlers that read their values, and the checks nginx -t makes once the http
// block is read; the checks that need no nginx are the core's (signin/conf_check.hpp) and the
// glue only reports them. ngx_http_signin_module.cpp joins the tables into the module's one;
// finish_main_conf (signin_main_conf.cpp) runs the checks, feature by feature.
#pragma once

#include "ngx_signin_nginx.h"

#include <span>

namespace signin_ngx {

struct MainConf;
using Directives = std::span<ngx_command_t>;

// The store and the site (conf_site.cpp): signin_store, signin_origin, signin_secret_key,
// signin_site_name, signin_registration, signin_client*, signin_body_max, the thread pools.
Directives site_directives();
// What signin_api and signin_require cannot work without (a store the workers reach, an origin),
// the store's and the requests' settings, the secret key's default path, the thread pools.
char *check_site(ngx_conf_t *cf, MainConf *m);

// Emails and their delivery (conf_delivery.cpp): signin_email, signin_delivery*, the templates,
// the previews and the dev mailbox. signin_smtp* are ngx_http_signin_smtp_module's.
Directives delivery_directives();
// Before anything needs a store: the previews' and the dev mailbox's conditions.
char *check_mail_pages(ngx_conf_t *cf, MainConf *m);
// A way to send the emails, and a hold above zero.
char *check_delivery(ngx_conf_t *cf, MainConf *m);

// The languages of the pages and emails (conf_languages.cpp): signin_languages, signin_messages.
Directives language_directives();
// Every language's catalog there (shipped or an operator's), and the pages and emails written in each.
char *check_languages(ngx_conf_t *cf, MainConf *m);

// Sessions and tokens (conf_sessions.cpp): lifetimes, resends, the audit log, the session cache,
// accounts per browser.
Directives session_directives();
char *check_sessions(ngx_conf_t *cf, MainConf *m);

// Passwords (conf_passwords.cpp): on or off, the policy, the hash, the attempt limits.
Directives password_directives();
char *check_passwords(ngx_conf_t *cf, MainConf *m);

// Second factors and passkeys (conf_factors.cpp).
Directives factor_directives();
Directives passkey_directives();
char *check_passkeys(ngx_conf_t *cf, MainConf *m);

// The administrators' API (conf_admin.cpp): signin_admin, signin_admin_role.
Directives admin_directives();
// signin_admin needs second factors (signin_mfa on).
char *check_admin(ngx_conf_t *cf, MainConf *m);

// Identity providers (conf_providers.cpp): signin_provider, signin_provider_fetch.
Directives provider_directives();
char *check_providers(ngx_conf_t *cf, MainConf *m);

// The module as an OpenID provider (conf_oidc.cpp): signin_oidc_client,
// signin_oidc_signing_key_file; every client's algorithm has a key.
Directives oidc_directives();
char *check_oidc(ngx_conf_t *cf, MainConf *m);

// The locations (conf_locations.cpp): signin_api, signin_pages*, signin_require and who may pass
// (signin_allow, signin_deny, signin_login_url, signin_pass_credentials, signin_assertion_audience),
// signin_metrics; and the location level's conf.
Directives location_directives();
// Events for the application (signin_events.cpp): signin_events, signin_events_secret_file,
// signin_events_types, signin_events_retries; their checks are check_events_conf's. And
// signin_registration_check, checked by find_registration_check (signin_registration.h).
Directives event_directives();
void *create_loc_conf(ngx_conf_t *cf);
char *merge_loc_conf(ngx_conf_t *cf, void *parent, void *child);

}  // namespace signin_ngx
