// ngx_http_signin_module: directives, configuration and process hooks of the sign-in half.
#include "ngx/ngx_signin_nginx.h"

static ngx_command_t ngx_http_signin_commands[] = {
    ngx_null_command
};

static ngx_http_module_t ngx_http_signin_module_ctx = {
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr
};

extern "C" {
ngx_module_t ngx_http_signin_module = {
    NGX_MODULE_V1,
    &ngx_http_signin_module_ctx,
    ngx_http_signin_commands,
    NGX_HTTP_MODULE,
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
    NGX_MODULE_V1_PADDING
};
}
