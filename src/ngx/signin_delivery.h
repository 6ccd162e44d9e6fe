// Delivery of emails (SPEC §2 auth.Delivery): a background subrequest to the signin_delivery
// location, whose body is $signin_delivery_json. A delivery that fails cancels its token.
#pragma once

#include "ngx_signin_nginx.h"

#include <string>

#include "signin/types.hpp"

namespace signin_ngx {

// Starts the delivery of d in the background: the visitor's answer does not wait for it. The
// token moves out of d. On NGX_ERROR the token has been given to cancel_token already.
ngx_int_t start_delivery(ngx_http_request_t *r, signin::Delivery &d, const std::string &client);

// Cancels an undelivered token in the background (a write batch).
void cancel_token(signin::Secret token, const std::string &client);

}  // namespace signin_ngx
