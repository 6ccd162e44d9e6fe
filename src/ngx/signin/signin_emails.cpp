// signin_email_previews: every ready-made email (signin_email_template applied), rendered with a
// sample code and address, for an admin area. GET lists them as JSON; ?purpose=NAME (SignIn, or
// its tag sign_in) answers that one's HTML. It shows no secret, but it is an admin page: protect
// its location like one (allow/deny, auth_basic, signin_require).
#include "signin_conf.h"
#include "signin_handlers.h"
#include "signin_reply.h"

#include "signin/json.hpp"

namespace signin_ngx {

namespace {

ngx_int_t email_previews(ngx_http_request_t *r) {
    if (!(r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD))) return NGX_HTTP_NOT_ALLOWED;
    ngx_int_t rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) return rc;
    MainConf *m = main_conf(r);
    {
        const std::string &origin = m->origin->text;
        ngx_str_t arg;
        if (ngx_http_arg(r, reinterpret_cast<u_char *>(const_cast<char *>("purpose")), 7, &arg) != NGX_OK) {
            return send_json(r, 200, signin::json::email_previews(*m->emails, origin));
        }
        auto purpose = signin::purpose_from_text(sv(arg));
        if (!purpose) return send_error(r, signin::Code::NotFound, "no such email purpose");
        // a template's HTML runs no script here, and the page is never sniffed as anything else
        if (!add_header(r, "Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src https: data:") ||
            !add_header(r, "X-Content-Type-Options", "nosniff")) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        return send_html(r, m->emails->preview(*purpose, origin).html);
    }
}

}  // namespace

ngx_int_t email_previews_handler(ngx_http_request_t *r) {
    return guard_request(r, "signin: rendering the email previews", [r] { return email_previews(r); });
}

}  // namespace signin_ngx
