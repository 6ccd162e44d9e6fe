// Delivery of emails (signin_delivery.h).
#include "signin_delivery.h"

#include <new>

#include "signin/json.hpp"
#include "signin_conf.h"
#include "signin_jobs.h"
#include "signin_request.h"

namespace signin_ngx {
namespace {

class CancelJob final : public BackgroundJob {
public:
    CancelJob(signin::Secret token, std::string client)
        : BackgroundJob(Stage::Write), token_(std::move(token)), client_(std::move(client)) {}

private:
    signin::Status write() override { return identity()->tokens().cancel_token(token_, client_); }

    signin::Secret token_;
    std::string client_;
};

struct DeliveryState {
    signin::Secret token;
    std::string client;
    bool handled = false;
};

ngx_int_t delivery_done(ngx_http_request_t *sr, void *data, ngx_int_t rc) {
    auto *st = static_cast<DeliveryState *>(data);
    if (st->handled) return rc;
    st->handled = true;
    if (st->token.empty()) return rc;  // a notice (PasswordChanged): no token to cancel
    ngx_uint_t status = sr->headers_out.status;
    bool ok = rc != NGX_ERROR && rc < NGX_HTTP_SPECIAL_RESPONSE && status >= 200 && status < 300;
    if (ok) return rc;
    ngx_log_error(NGX_LOG_WARN, sr->connection->log, 0,
                  "signin: delivery subrequest \"%V\" failed (rc %i, status %ui); the token is cancelled", &sr->uri,
                  rc, status);
    try {
        cancel_token(std::move(st->token), st->client);
    } catch (...) {
        ngx_log_error(NGX_LOG_ERR, sr->connection->log, 0, "signin: could not cancel the undelivered token");
    }
    return rc;
}

// The delivery JSON becomes the subrequest's own request body (application/json), so that a
// plain `proxy_pass` sends it to the mailer. No nginx variable carries it: nginx's script engine
// writes the value of every variable it evaluates to a debug-level error.log, token included.
// The JSON lives in the subrequest's ctx until the request's pool goes.
ngx_int_t give_body(ngx_http_request_t *sr, const std::string &json) {
    auto *rb = static_cast<ngx_http_request_body_t *>(ngx_pcalloc(sr->pool, sizeof(ngx_http_request_body_t)));
    auto *b = static_cast<ngx_buf_t *>(ngx_calloc_buf(sr->pool));
    ngx_chain_t *cl = ngx_alloc_chain_link(sr->pool);
    auto *type = static_cast<ngx_table_elt_t *>(ngx_list_push(&sr->headers_in.headers));
    if (rb == nullptr || b == nullptr || cl == nullptr || type == nullptr) return NGX_ERROR;
    b->pos = b->start = reinterpret_cast<u_char *>(const_cast<char *>(json.data()));
    b->last = b->end = b->pos + json.size();
    b->memory = 1;
    b->last_buf = 1;
    cl->buf = b;
    cl->next = nullptr;
    rb->bufs = cl;
    rb->rest = 0;
    sr->request_body = rb;
    sr->headers_in.content_length_n = static_cast<off_t>(json.size());
    sr->headers_in.content_length = nullptr;
    sr->headers_in.chunked = 0;
    type->hash = 1;
#if defined(nginx_version) && nginx_version >= 1023000
    type->next = nullptr;
#endif
    ngx_str_set(&type->key, "Content-Type");
    ngx_str_set(&type->value, "application/json");
    type->lowcase_key = reinterpret_cast<u_char *>(const_cast<char *>("content-type"));
    sr->headers_in.content_type = type;
    return NGX_OK;
}

ngx_int_t subrequest(ngx_http_request_t *r, signin::Delivery &d, const std::string &client) {
    MainConf *m = main_conf(r);
    ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(r->pool, sizeof(DeliveryState));
    if (cln == nullptr) return NGX_ERROR;
    auto *st = new (cln->data) DeliveryState();
    cln->handler = [](void *p) { static_cast<DeliveryState *>(p)->~DeliveryState(); };
    st->client = client;
    auto *ps = static_cast<ngx_http_post_subrequest_t *>(ngx_palloc(r->pool, sizeof(ngx_http_post_subrequest_t)));
    if (ps == nullptr) return NGX_ERROR;
    ps->handler = delivery_done;
    ps->data = st;
    ngx_http_request_t *sr = nullptr;
    if (ngx_http_subrequest(r, &m->delivery_uri, nullptr, &sr, ps, NGX_HTTP_SUBREQUEST_BACKGROUND) != NGX_OK) {
        return NGX_ERROR;
    }
    sr->header_only = 1;  // the mailer's answer body is not needed, only its status
    sr->method = NGX_HTTP_POST;
    ngx_str_set(&sr->method_name, "POST");
    // the mailer must not see the visitor's cookies or authorization
    if (ngx_list_init(&sr->headers_in.headers, sr->pool, 2, sizeof(ngx_table_elt_t)) != NGX_OK) return NGX_ERROR;
    sr->headers_in.authorization = nullptr;
#if defined(nginx_version) && nginx_version >= 1023000
    sr->headers_in.cookie = nullptr;
#else
    sr->headers_in.cookies.nelts = 0;
#endif
    RequestCtx *sctx = get_ctx(sr, true);
    if (sctx == nullptr) return NGX_ERROR;
    sctx->delivery_json = signin::json::delivery(d, m->emails->render(d, identity()->origin().text));
    if (give_body(sr, sctx->delivery_json) != NGX_OK) return NGX_ERROR;
    st->token = std::move(d.token);
    return NGX_OK;
}

}  // namespace

void cancel_token(signin::Secret token, const std::string &client) {
    if (start_background_job(std::make_unique<CancelJob>(std::move(token), client)) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0, "signin: could not cancel an undelivered token");
    }
}

ngx_int_t start_delivery(ngx_http_request_t *r, signin::Delivery &d, const std::string &client) {
    if (subrequest(r, d, client) == NGX_OK) return NGX_OK;
    ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "signin: could not start the delivery subrequest");
    if (!d.token.empty()) cancel_token(std::move(d.token), client);
    return NGX_ERROR;
}

}  // namespace signin_ngx
