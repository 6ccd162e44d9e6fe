// Answers of the sign-in glue: JSON bodies with cache-control: no-store (nothing of the API may be cached), the error
// shape {"error", "code"} (a message a person can read, and a stable code), and the session cookie.
#pragma once

#include "ngx_signin_nginx.h"

#include <string>
#include <string_view>

#include "signin/types.hpp"

namespace signin_ngx {

// What an error answer is made of: its HTTP status and its stable code.
struct HttpError {
    ngx_uint_t status;
    std::string_view code;
};
// The engine's errors as HTTP answers.
HttpError http_error(signin::Code code);
// Errors that only the HTTP transport makes.
inline constexpr HttpError kAmbiguousCredentials{400, "ambiguous_credentials"};  // cookie and bearer, or two cookies
inline constexpr HttpError kMethodNotAllowed{405, "method_not_allowed"};
inline constexpr HttpError kPayloadTooLarge{413, "payload_too_large"};
inline constexpr HttpError kUnsupportedMediaType{415, "unsupported_media_type"};
inline constexpr HttpError kBusy{503, "busy"};  // the thread pools' queues are full (with Retry-After)

// {"error": message, "code": ...} with the error's status; a 5xx is logged and its message hidden.
ngx_int_t send_error(ngx_http_request_t *r, HttpError e, const std::string &message);
ngx_int_t send_error(ngx_http_request_t *r, signin::Code code, const std::string &message);
// An engine error: 429 adds Retry-After and "retry_after" (seconds) to the body.
ngx_int_t send_failure(ngx_http_request_t *r, const signin::Error &e);
// 401 unauthenticated; a request that did not come with a cookie is told `WWW-Authenticate: Bearer`.
ngx_int_t send_unauthenticated(ngx_http_request_t *r, const signin::Error &e, bool cookie_request);
// An error answered before the request body was read: the body is discarded first, or its bytes
// would be read as the next request on a keep-alive connection (request smuggling).
ngx_int_t reject(ngx_http_request_t *r, HttpError e, const std::string &message);
ngx_int_t reject(ngx_http_request_t *r, signin::Code code, const std::string &message);

// 302 to `location` (stored as given: a pool string), with Cache-Control: no-store; the rc for
// ngx_http_finalize_request (nginx's special response writes the answer).
ngx_int_t redirect_to(ngx_http_request_t *r, ngx_str_t location);
// `s` escaped as a query argument's value the way nginx escapes arguments (NGX_ESCAPE_ARGS), in
// the request's pool; its data is nullptr when memory runs out.
ngx_str_t escaped_arg(ngx_http_request_t *r, std::string_view s);
// The Set-Cookie value of the session cookie (__Host- on HTTPS, HttpOnly, SameSite=Lax); max_age 0 clears it.
std::string cookie_header(std::string_view name, std::string_view value, long long max_age);

}  // namespace signin_ngx
