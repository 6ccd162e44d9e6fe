// OpenID Connect providers: the flow's two navigations (signin_providers.cpp), and the check of
// signin_provider_fetch once the servers are known (conf_providers.cpp).
#pragma once

#include "ngx_signin_nginx.h"

#include <string_view>

#include "signin_conf.h"

namespace signin_ngx {

// GET {signin_api}/providers/NAME/start and /providers/NAME/callback (step "start" or "callback").
ngx_int_t provider_flow(ngx_http_request_t *r, std::string_view name, std::string_view step);

// postconfiguration: signin_provider_fetch names a location of some server (and warns when its
// subrequest_output_buffer_size is too small for a provider's documents).
ngx_int_t check_provider_fetch(ngx_conf_t *cf, MainConf *m);

}  // namespace signin_ngx
