// The nginx helpers every module of the glue shares (ngx_signin_nginx.h).
#include "ngx_signin_nginx.h"

namespace signin_ngx {

bool add_header(ngx_http_request_t *r, std::string_view name, std::string_view value) {
    auto *h = static_cast<ngx_table_elt_t *>(ngx_list_push(&r->headers_out.headers));
    if (h == nullptr) return false;
    h->hash = 1;
#if defined(nginx_version) && nginx_version >= 1023000
    h->next = nullptr;
#endif
    h->key = pool_copy(r->pool, name);
    h->value = pool_copy(r->pool, value);
    return h->key.data && h->value.data;
}

// content_type: a string literal (nginx keeps pointing at it, as with ngx_str_set)
template <std::size_t N = sizeof("application/json")>
static ngx_int_t send_common(ngx_http_request_t *r, ngx_uint_t status, const std::string *body,
                             const char (&content_type)[N] = "application/json") {
    r->headers_out.status = status;
    if (!add_header(r, "Cache-Control", "no-store")) return NGX_ERROR;
    if (body == nullptr) {
        r->header_only = 1;
        r->headers_out.content_length_n = 0;
        return ngx_http_send_header(r);
    }
    r->headers_out.content_type.len = N - 1;
    r->headers_out.content_type.data = reinterpret_cast<u_char *>(const_cast<char *>(content_type));
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_length_n = static_cast<off_t>(body->size());
    if (r->method == NGX_HTTP_HEAD) r->header_only = 1;
    ngx_int_t rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) return rc;
    ngx_buf_t *b = ngx_create_temp_buf(r->pool, body->size() ? body->size() : 1);
    if (b == nullptr) return NGX_ERROR;
    b->last = ngx_cpymem(b->last, body->data(), body->size());
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;
    ngx_chain_t out = {b, nullptr};
    return ngx_http_output_filter(r, &out);
}

ngx_int_t send_json(ngx_http_request_t *r, ngx_uint_t status, const std::string &body) {
    return send_common(r, status, &body);
}

ngx_int_t send_empty(ngx_http_request_t *r, ngx_uint_t status) { return send_common(r, status, nullptr); }

ngx_int_t send_html(ngx_http_request_t *r, const std::string &page) {
    return send_common(r, NGX_HTTP_OK, &page, "text/html; charset=utf-8");
}

ngx_int_t send_csv(ngx_http_request_t *r, const std::string &text) {
    return send_common(r, NGX_HTTP_OK, &text, "text/csv; charset=utf-8");
}

ngx_int_t send_prometheus(ngx_http_request_t *r, const std::string &text) {
    return send_common(r, NGX_HTTP_OK, &text, "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace signin_ngx
