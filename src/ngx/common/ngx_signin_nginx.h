// The only place the glue includes nginx's headers: C linkage, before anything else.
#pragma once

extern "C" {
#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>
#if (NGX_THREADS)
#include <ngx_thread_pool.h>
#endif
}

#include <exception>
#include <string>
#include <string_view>

namespace signin_ngx {

inline std::string_view sv(const ngx_str_t &s) {
    return {reinterpret_cast<const char *>(s.data), s.len};
}

// A view into memory that outlives the call (a literal or a pool copy).
inline ngx_str_t ngx_view(std::string_view s) {
    ngx_str_t r;
    r.len = s.size();
    r.data = reinterpret_cast<u_char *>(const_cast<char *>(s.data()));
    return r;
}

// Copies s into pool memory; data == nullptr on allocation failure.
inline ngx_str_t pool_copy(ngx_pool_t *pool, std::string_view s) {
    ngx_str_t r;
    r.len = s.size();
    r.data = static_cast<u_char *>(ngx_pnalloc(pool, s.size() ? s.size() : 1));
    if (r.data && s.size()) {
        ngx_memcpy(r.data, s.data(), s.size());
    }
    return r;
}

// Adds a response header (both strings copied into the request's pool); false when memory runs out.
bool add_header(ngx_http_request_t *r, std::string_view name, std::string_view value);

// Answers with a body, every one with Cache-Control: no-store (nothing the modules answer may be
// cached). Each send_* returns the output filter's rc, for ngx_http_finalize_request.
ngx_int_t send_json(ngx_http_request_t *r, ngx_uint_t status, const std::string &body);
// 200 with Prometheus' text exposition format (the metrics endpoint).
ngx_int_t send_prometheus(ngx_http_request_t *r, const std::string &text);
ngx_int_t send_empty(ngx_http_request_t *r, ngx_uint_t status);
// 200 text/html; charset=utf-8, cache-control: no-store.
ngx_int_t send_html(ngx_http_request_t *r, const std::string &page);

// The body of a request handler: no exception reaches nginx. One is logged as "<what> failed:
// <reason>" and the request gets 500 (every callback of the glue catches, DESIGN §3 rule 4).
template <class F>
ngx_int_t guard_request(ngx_http_request_t *r, const char *what, F &&body) noexcept {
    try {
        return body();
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "%s failed: %s", what, e.what());
    } catch (...) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "%s failed", what);
    }
    return NGX_HTTP_INTERNAL_SERVER_ERROR;
}

}  // namespace signin_ngx
