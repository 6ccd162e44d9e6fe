// The sign-in module's directive handlers that do more than nginx's own slots: they parse a value
// into the engine's types, read a file, or set a location's handler (signin_directives.cpp).
#pragma once

#include "ngx_signin_nginx.h"

namespace signin_ngx {

char *set_store(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *set_secret_key(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *set_origin(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *set_min_length(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *set_blocklist(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *set_hash(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *set_api(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *set_require(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *set_mailbox(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *set_email_template(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *set_email_previews(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *set_access_rule(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *set_registration(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *set_site_name(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *set_languages(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *set_messages(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *set_thread_pool(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *set_provider(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);

}  // namespace signin_ngx
