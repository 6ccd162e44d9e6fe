// signin_pages: the ready-made sign-in and account pages, served by the signin_api
// location itself: GET {auth_path}/, {auth_path}/account and (signin_admin) {auth_path}/admin/,
// and their assets under {auth_path}/assets/. The pages and assets are the core's (signin/pages.hpp); this file only
// adds what HTTP needs: the security headers, and conditional GETs of the assets.
#include "signin_handlers.h"

#include "signin_conf.h"
#include "signin_reply.h"
#include "signin_request.h"
#include "signin/pages.hpp"

namespace signin_ngx {
namespace {

// Headers of every page and asset: nothing on them runs in a frame, leaks a referrer or is
// sniffed into another type.
bool add_page_headers(ngx_http_request_t *r, std::string_view csp = signin::pages::content_security_policy()) {
    return add_header(r, "Content-Security-Policy", csp) &&
           add_header(r, "Referrer-Policy", "no-referrer") && add_header(r, "X-Content-Type-Options", "nosniff") &&
           add_header(r, "X-Frame-Options", "DENY") && add_header(r, "Cross-Origin-Opener-Policy", "same-origin");
}

// The site's name on the pages: signin_site_name, or the origin without its scheme.
std::string site_name(const MainConf *m) {
    if (m->site_name.len) return std::string(sv(m->site_name));
    if (m->origin == nullptr) return "this site";
    std::string_view o = m->origin->text;
    const auto scheme = o.find("://");
    return std::string(scheme == std::string_view::npos ? o : o.substr(scheme + 3));
}

ngx_int_t send_body(ngx_http_request_t *r, std::string_view content_type, std::string_view body, bool copy,
                    ngx_uint_t status = NGX_HTTP_OK) {
    r->headers_out.status = status;
    r->headers_out.content_type = pool_copy(r->pool, content_type);
    if (r->headers_out.content_type.data == nullptr) return NGX_ERROR;
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_length_n = static_cast<off_t>(body.size());
    if (r->method == NGX_HTTP_HEAD) r->header_only = 1;
    ngx_int_t rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) return rc;
    auto *b = static_cast<ngx_buf_t *>(ngx_calloc_buf(r->pool));
    if (b == nullptr) return NGX_ERROR;
    if (copy) {  // a rendered page lives in a std::string that is gone when this returns
        ngx_str_t kept = pool_copy(r->pool, body);
        if (kept.data == nullptr) return NGX_ERROR;
        b->pos = kept.data;
        b->last = kept.data + kept.len;
    } else {     // an asset is static data of the module
        b->pos = reinterpret_cast<u_char *>(const_cast<char *>(body.data()));
        b->last = b->pos + body.size();
    }
    b->memory = 1;
    b->last_buf = 1;
    b->last_in_chain = 1;
    ngx_chain_t out = {b, nullptr};
    return ngx_http_output_filter(r, &out);
}

signin::pages::Settings page_settings(ngx_http_request_t *r) {
    const MainConf *m = main_conf(r);
    const LocConf *l = loc_conf(r);
    signin::pages::Settings s;
    s.site_name = site_name(m);
    const signin::Policy &p = *m->policy;
    s.passwords = p.with_passwords;
    s.registration = p.allow_registration;
    s.mfa = p.with_mfa;
    s.passkeys = p.with_passkeys;
    s.email = p.with_email;
    s.remember_days = static_cast<long long>(p.mfa_remember / (24 * 3600 * 1000));
    s.resend_seconds = static_cast<long long>((p.token_resend + 999) / 1000);
    s.token_minutes = static_cast<long long>((p.token_ttl + 59999) / 60000);
    s.fresh_minutes = static_cast<long long>((p.fresh_window + 59999) / 60000);
    s.stylesheet = std::string(sv(l->pages_css));
    return s;
}

// The page in the request's language, with the headers that say which: Content-Language, and a
// Vary for any cache that would keep it despite no-store.
std::string localized(ngx_http_request_t *r, signin::pages::Page page, const signin::pages::Settings &s) {
    const Texts *t = main_conf(r)->texts;
    if (t == nullptr || !t->pages) return signin::pages::render(page, s);
    const std::size_t lang = request_language(r);
    if (!add_header(r, "Content-Language", t->languages->tag(lang)) ||
        (t->languages->size() > 1 && !add_header(r, "Vary", "Accept-Language, Cookie"))) {
        return {};
    }
    return t->pages->render(page, lang, s);
}

ngx_int_t send_page(ngx_http_request_t *r, signin::pages::Page page) {
    const std::string html = localized(r, page, page_settings(r));
    if (html.empty()) return NGX_ERROR;
    if (!add_page_headers(r) || !add_header(r, "Cache-Control", "no-store")) return NGX_ERROR;
    return send_body(r, "text/html; charset=utf-8", html, true);
}

// Assets are revalidated (no-cache) with their content hash as the ETag: an upgraded module never
// meets a stale script, and an unchanged one costs a 304.
ngx_int_t send_asset(ngx_http_request_t *r, const signin::pages::Asset &a) {
    const std::string etag = "\"" + std::string(a.hash) + "\"";
    if (!add_page_headers(r) || !add_header(r, "Cache-Control", "no-cache") || !add_header(r, "ETag", etag)) {
        return NGX_ERROR;
    }
    auto inm = header_value(r, "If-None-Match");
    if (inm && inm->find(etag) != std::string_view::npos) {
        r->headers_out.status = NGX_HTTP_NOT_MODIFIED;
        r->header_only = 1;
        return ngx_http_send_header(r);
    }
    return send_body(r, a.content_type, a.body, false);
}

}  // namespace

ngx_int_t send_forbidden_page(ngx_http_request_t *r, std::string_view account, std::string_view login_url) {
    const LocConf *l = loc_conf(r);
    signin::pages::Settings s = page_settings(r);
    s.account = std::string(account);
    s.login_url = std::string(login_url.empty() ? sv(l->login_url) : login_url);
    s.return_to = std::string(sv(r->unparsed_uri));
    const std::string html = localized(r, signin::pages::Page::Forbidden, s);
    if (html.empty()) return NGX_ERROR;
    if (!add_page_headers(r, signin::pages::content_security_policy(s.login_url)) ||
        !add_header(r, "Cache-Control", "no-store")) {
        return NGX_ERROR;
    }
    return send_body(r, "text/html; charset=utf-8", html, true, NGX_HTTP_FORBIDDEN);
}

ngx_int_t send_unavailable_page(ngx_http_request_t *r) {
    const LocConf *l = loc_conf(r);
    signin::pages::Settings s = page_settings(r);
    s.login_url = std::string(sv(l->login_url));  // a gated location's assets are the sign-in page's
    const std::string html = localized(r, signin::pages::Page::Unavailable, s);
    if (html.empty()) return NGX_ERROR;
    if (!add_page_headers(r, signin::pages::content_security_policy(s.login_url)) ||
        !add_header(r, "Cache-Control", "no-store")) {
        return NGX_ERROR;
    }
    return send_body(r, "text/html; charset=utf-8", html, true, NGX_HTTP_SERVICE_UNAVAILABLE);
}

ngx_int_t send_admin_shell(ngx_http_request_t *r) { return send_page(r, signin::pages::Page::Admin); }

bool serves_pages(ngx_http_request_t *r, std::string_view path) {
    const LocConf *l = loc_conf(r);
    if (!l->pages || !(r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD))) return false;
    if (path == "account") {
        // GET {auth_path}/account is two things: the account page for a
        // browser's navigation, what is held about the account (JSON) for a script
        auto accept = header_value(r, "Accept");
        return accept && accept->find("text/html") != std::string_view::npos;
    }
    // signin_admin: the administrators' page, a shell that holds nothing of the store (what it
    // shows comes from admin/api/, which checks the role and the second factor on each call)
    if (path == "admin/") return l->admin == 1;
    return path.empty() || path.substr(0, 7) == "assets/";
}

ngx_int_t pages_handler(ngx_http_request_t *r, std::string_view path) {
    if (ngx_http_discard_request_body(r) != NGX_OK) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    if (path.empty()) return send_page(r, signin::pages::Page::SignIn);
    if (path == "account") return send_page(r, signin::pages::Page::Account);
    if (path == "admin/") return admin_page(r);
    const std::string_view name = path.substr(7);
    if (const signin::pages::Asset *a = signin::pages::asset(name)) return send_asset(r, *a);
    const Texts *t = main_conf(r)->texts;
    const auto catalog = t != nullptr && t->pages ? t->pages->catalog(name) : std::nullopt;
    if (!catalog) return send_error(r, signin::Code::NotFound, "not found");
    return send_asset(r, *catalog);
}

}  // namespace signin_ngx
