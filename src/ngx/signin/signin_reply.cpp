// Answers of the sign-in glue (signin_reply.h).
#include "signin_reply.h"
#include "signin_conf.h"
#include "signin_handlers.h"
#include "signin_metrics.h"
#include "signin_request.h"

#include "signin/json.hpp"

namespace signin_ngx {

HttpError http_error(signin::Code code) {
    using signin::Code;
    ngx_uint_t status = NGX_HTTP_INTERNAL_SERVER_ERROR;
    switch (code) {
    case Code::InvalidRequest:
    case Code::InvalidEmail:
    case Code::WeakPassword:
    case Code::WrongPassword: status = NGX_HTTP_BAD_REQUEST; break;
    case Code::InvalidToken:
    case Code::Unauthenticated:
    case Code::InvalidCredentials: status = NGX_HTTP_UNAUTHORIZED; break;
    case Code::Suspended:
    case Code::RegistrationDisabled:
    case Code::EmailDisabled:
    case Code::OriginMismatch:
    case Code::PasswordsDisabled:
    case Code::FreshSessionRequired:
    case Code::NoPassword:
    case Code::Forbidden:
    case Code::MfaRequired:
    case Code::MfaLocked:
    case Code::MfaDisabled:
    case Code::RegistrationRefused: status = NGX_HTTP_FORBIDDEN; break;
    case Code::RegistrationCheckFailed: status = NGX_HTTP_SERVICE_UNAVAILABLE; break;
    case Code::InvalidCode: status = NGX_HTTP_UNAUTHORIZED; break;
    case Code::NotFound: status = NGX_HTTP_NOT_FOUND; break;
    case Code::EmailTaken: status = NGX_HTTP_CONFLICT; break;
    case Code::PasskeysDisabled: status = NGX_HTTP_FORBIDDEN; break;
    case Code::PasskeyRefused: status = NGX_HTTP_UNAUTHORIZED; break;
    case Code::ProviderRefused: status = NGX_HTTP_UNAUTHORIZED; break;
    case Code::AccountExists: status = NGX_HTTP_CONFLICT; break;
    case Code::LastWayIn: status = NGX_HTTP_CONFLICT; break;
    case Code::RateLimited: status = 429; break;
    case Code::StorageFull: status = 507; break;
    case Code::StorageError: status = NGX_HTTP_SERVICE_UNAVAILABLE; break;
    case Code::DeliveryFailed:
    case Code::Internal: status = NGX_HTTP_INTERNAL_SERVER_ERROR; break;
    }
    return HttpError{status, signin::code_name(code)};
}

// A browser navigation in a location that shows browsers pages (signin_pages) or sends them to
// one (signin_login_url). Elsewhere the caller is a script or an API client, which reads the JSON.
static bool browser_page(ngx_http_request_t *r) {
    const LocConf *l = loc_conf(r);
    return (l->pages || l->login_url.len != 0) && browser_navigation(r);
}

ngx_int_t send_error(ngx_http_request_t *r, HttpError e, const std::string &message) {
    // a server error's reason is for the log, not the client; being busy is neither (its caller
    // logs it at most once a second, and the client is told to come back)
    const bool busy = e.code == kBusy.code;
    if (e.status >= 500 && !busy) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "signin: %s", message.c_str());
    }
    // a store that cannot be used is shown to a browser as a page: raw JSON is no answer to a person
    if (e.code == signin::code_name(signin::Code::StorageError) && browser_page(r)) return send_unavailable_page(r);
    std::string shown = e.status < 500 || busy ? message
                        : e.status == 507      ? std::string("the sign-in store is full")
                                               : std::string("the sign-in service is unavailable");
    return send_json(r, e.status, signin::json::error(e.code, shown));
}

ngx_int_t send_error(ngx_http_request_t *r, signin::Code code, const std::string &message) {
    count_failure(code);
    return send_error(r, http_error(code), message);
}

ngx_int_t send_failure(ngx_http_request_t *r, const signin::Error &e) {
    if (e.code != signin::Code::RateLimited) return send_error(r, e.code, e.message);
    const long long seconds = e.retry_after > 0 ? (e.retry_after + 999) / 1000 : 1;
    if (!add_header(r, "Retry-After", std::to_string(seconds))) return NGX_ERROR;
    signin::json::Writer w;
    w.begin_object()
        .key("error").value(e.message)
        .key("code").value(signin::code_name(e.code))
        .key("retry_after").value(static_cast<std::int64_t>(seconds))
        .end_object();
    return send_json(r, 429, w.str());
}

ngx_int_t send_unauthenticated(ngx_http_request_t *r, const signin::Error &e, bool cookie_request) {
    if (!cookie_request) add_header(r, "WWW-Authenticate", "Bearer");
    return send_error(r, e.code, e.message);
}

ngx_int_t reject(ngx_http_request_t *r, HttpError e, const std::string &message) {
    if (ngx_http_discard_request_body(r) != NGX_OK) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    return send_error(r, e, message);
}

ngx_int_t reject(ngx_http_request_t *r, signin::Code code, const std::string &message) {
    count_failure(code);
    return reject(r, http_error(code), message);
}

std::string cookie_header(std::string_view name, std::string_view value, long long max_age) {
    std::string h(name);
    h += "=";
    h += value;
    h += "; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=" + std::to_string(max_age);
    return h;
}

ngx_int_t redirect_to(ngx_http_request_t *r, ngx_str_t location) {
    auto *h = static_cast<ngx_table_elt_t *>(ngx_list_push(&r->headers_out.headers));
    if (h == nullptr || location.data == nullptr) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    h->hash = 1;
#if defined(nginx_version) && nginx_version >= 1023000
    h->next = nullptr;
#endif
    ngx_str_set(&h->key, "Location");
    h->value = location;
    r->headers_out.location = h;
    if (!add_header(r, "Cache-Control", "no-store")) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    return NGX_HTTP_MOVED_TEMPORARILY;
}

ngx_str_t escaped_arg(ngx_http_request_t *r, std::string_view s) {
    auto *src = reinterpret_cast<u_char *>(const_cast<char *>(s.data()));
    const uintptr_t extra = ngx_escape_uri(nullptr, src, s.size(), NGX_ESCAPE_ARGS);
    ngx_str_t out{0, static_cast<u_char *>(ngx_pnalloc(r->pool, s.size() + 2 * extra))};
    if (out.data == nullptr) return out;
    out.len = static_cast<size_t>(reinterpret_cast<u_char *>(ngx_escape_uri(out.data, src, s.size(), NGX_ESCAPE_ARGS)) - out.data);
    return out;
}

}  // namespace signin_ngx
