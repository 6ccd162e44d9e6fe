// What the limits module's configuration (ngx_http_signin_limits_module.cpp) shares with its
// zone (signin_limits.cpp): the directives' values, and the zone's creation.
#pragma once

#include "ngx_signin_nginx.h"

namespace signin_ngx {

struct LimitRule {
    ngx_uint_t limit;  // NGX_CONF_UNSET_UINT until set; 0 = off
    ngx_msec_t window;
};

struct LimitsConf {
    ngx_shm_zone_t *zone;
    ngx_flag_t off;  // signin_limits off
    LimitRule sensitive;
    LimitRule signed_in;
    LimitRule address;
    LimitRule exchange_failures;
};

// The shared zone of `signin_limits zone=NAME:SIZE`; nullptr (nginx -t says why) when it cannot be.
ngx_shm_zone_t *add_limits_zone(ngx_conf_t *cf, ngx_str_t *name, size_t size);

}  // namespace signin_ngx
