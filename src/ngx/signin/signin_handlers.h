// The handlers that ngx_http_signin_module.cpp installs for its directives, one file each.
#pragma once

#include "ngx_signin_nginx.h"

#include <string>
#include <string_view>

namespace signin_ngx {

// signin_api (signin_api.cpp): the content handler of the JSON API.
ngx_int_t api_handler(ngx_http_request_t *r);

// signin_pages (signin_pages.cpp), inside the signin_api location: whether the request (its
// path below the location) is a page or an asset, and its answer.
bool serves_pages(ngx_http_request_t *r, std::string_view path);
ngx_int_t pages_handler(ngx_http_request_t *r, std::string_view path);
// The 403 page of a gated location for a signed-in browser its rules refuse (signin_login_url
// set): names the account, offers to sign out and use another one.
// `login_url`: where "use another account" goes, signin_login_url when empty.
ngx_int_t send_forbidden_page(ngx_http_request_t *r, std::string_view account, std::string_view login_url = {});
// signin_admin (signin_admin.cpp): GET {auth_path}/admin/, the administrators' page for an
// administrator or a stranger (who is sent to sign in by the page), the 403 page for a signed-in
// account without the role. send_admin_shell (signin_pages.cpp) is the page itself.
ngx_int_t admin_page(ngx_http_request_t *r);
ngx_int_t send_admin_shell(ngx_http_request_t *r);
// The 503 page for a browser when the store cannot be used (signin_reply.cpp decides when).
ngx_int_t send_unavailable_page(ngx_http_request_t *r);

// signin_require (signin_require.cpp): the access-phase gate, and the same check in the
// precontent phase for subrequests (nginx skips the access phase for them).
ngx_int_t require_handler(ngx_http_request_t *r);
ngx_int_t require_subrequest_handler(ngx_http_request_t *r);

// signin_dev_mailbox (signin_mailbox.cpp): the content handler and its shared zone.
ngx_int_t mailbox_handler(ngx_http_request_t *r);
ngx_int_t mailbox_init_zone(ngx_shm_zone_t *zone, void *data);

// signin_email_previews (signin_emails.cpp).
ngx_int_t email_previews_handler(ngx_http_request_t *r);

// The per-worker engine (signin_worker.cpp): init_process and exit_process of the module.
ngx_int_t init_worker(ngx_cycle_t *cycle);
void exit_worker(ngx_cycle_t *cycle);

}  // namespace signin_ngx
