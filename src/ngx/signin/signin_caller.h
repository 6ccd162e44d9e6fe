// What the sign-in module tells ngx_http_api_versions_module about a request's caller, before the
// access phase (api_versions_pin signin): the API version pinned to the account its session
// cookie or bearer token belongs to. Both modules are in the same .so; this is their one meeting
// point. Nothing here lets a request in: the access phase (signin_require) checks the credentials
// as it always does.
#pragma once

#include "ngx_signin_nginx.h"

#include <string_view>

namespace signin_ngx {

// nginx -t: whether the http block has a signin_store (api_versions_pin signin needs one).
bool store_configured(ngx_conf_t *cf);

// The caller's account and its pin, as the rewrite phase learns them.
struct CallerPin {
    enum State {
        Stranger,  // no live session cookie or bearer token (or the store cannot be read now)
        Pinned,    // `version` is the account's pin
        Unpinned,  // signed in, no pin yet
        Reading,   // the store is read in the thread pool: return NGX_DONE; the phase handlers
                   // run again once it is read, and the next call gives the outcome
    } state = Stranger;
    std::string_view version;  // Pinned: valid as long as the request
};
// The credentials are read as signin_require reads them (one session cookie or a bearer token,
// never both); a store whose reads may block is read in signin_thread_pool, once per request.
CallerPin caller_api_version(ngx_http_request_t *r);

// Pins the caller's account (as caller_api_version found it Unpinned) to `version`, in the
// write batch, in the background: the request does not wait. An account pinned meanwhile keeps
// its pin. Nothing happens for a version name the store does not take.
void pin_caller_api_version(ngx_http_request_t *r, std::string_view version);

}  // namespace signin_ngx
