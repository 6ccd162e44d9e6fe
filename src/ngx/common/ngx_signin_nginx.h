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
// 200 text/csv; charset=utf-8 (an export), cache-control: no-store.
ngx_int_t send_csv(ngx_http_request_t *r, const std::string &text);
// 200 text/html; charset=utf-8, cache-control: no-store.
ngx_int_t send_html(ngx_http_request_t *r, const std::string &page);

// ---------------------------------------------------------------- catching at nginx's door
// nginx is C: an exception that left a function nginx called would unwind through its frames. So
// every entry point of the glue (handlers, filters, variables, directive and init_* callbacks,
// event and thread-task handlers) runs its body through guard(), which turns an exception into
// the entry point's failure value; the wrappers below say how each kind of entry point fails.
//
// `fail(e)` logs and returns what the caller gets; `e` is the exception, nullptr for one that is
// not a std::exception.
template <class Body, class Fail>
auto guard(Body &&body, Fail &&fail) noexcept -> decltype(body()) {
    try {
        return body();
    } catch (const std::exception &e) {
        return fail(&e);
    } catch (...) {
        return fail(static_cast<const std::exception *>(nullptr));
    }
}

// Logs "<what> failed[: <reason>]" at `level` on `log`.
inline void log_failure(ngx_log_t *log, ngx_uint_t level, const char *what, const std::exception *e) noexcept {
    if (e) {
        ngx_log_error(level, log, 0, "%s failed: %s", what, e->what());
    } else {
        ngx_log_error(level, log, 0, "%s failed", what);
    }
}

// A request handler, body filter step or request callback: the request gets 500.
template <class F>
ngx_int_t guard_request(ngx_http_request_t *r, const char *what, F &&body) noexcept {
    return guard(body, [r, what](const std::exception *e) -> ngx_int_t {
        log_failure(r->connection->log, NGX_LOG_ERR, what, e);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    });
}

// A directive handler, create/merge/init of a conf: nginx -t says why, naming the file and line.
template <class F>
char *guard_conf(ngx_conf_t *cf, const char *what, F &&body) noexcept {
    return guard(body, [cf, what](const std::exception *e) -> char * {
        if (e) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s failed: %s", what, e->what());
        } else {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s failed", what);
        }
        return static_cast<char *>(NGX_CONF_ERROR);
    });
}

// A directive's handler in a command table: guarded_directive<set_x> in place of set_x, so that
// an exception fails nginx -t with the directive's name, file and line.
template <char *(*Set)(ngx_conf_t *, ngx_command_t *, void *)>
char *guarded_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) noexcept {
    return guard([&] { return Set(cf, cmd, conf); },
                 [&](const std::exception *e) -> char * {
                     if (e) {
                         ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%V failed: %s", &cmd->name, e->what());
                     } else {
                         ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%V failed", &cmd->name);
                     }
                     return static_cast<char *>(NGX_CONF_ERROR);
                 });
}

// Anything else (init_module, init_process, postconfiguration, a variable, an event or a thread
// task's completion): logged at `level`, and the caller gets `failed` (nothing for a void body).
template <class F>
void guard_log(ngx_log_t *log, ngx_uint_t level, const char *what, F &&body) noexcept {
    guard(body, [log, level, what](const std::exception *e) { log_failure(log, level, what, e); });
}
template <class F, class R>
R guard_log(ngx_log_t *log, ngx_uint_t level, const char *what, R failed, F &&body) noexcept {
    return guard(body, [log, level, what, failed](const std::exception *e) -> R {
        log_failure(log, level, what, e);
        return failed;
    });
}

}  // namespace signin_ngx
