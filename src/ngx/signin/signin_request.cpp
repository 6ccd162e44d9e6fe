// What the sign-in glue reads from a request (signin_request.h).
#include "signin_request.h"

#include <new>

#include "signin/credentials.hpp"
#include "signin/password.hpp"
#include "signin_conf.h"

namespace signin_ngx {

static void destroy_ctx(void *data) {
    auto *ctx = static_cast<RequestCtx *>(data);
    if (!ctx->delivery_json.empty()) {  // holds a token
        ngx_explicit_memzero(ctx->delivery_json.data(), ctx->delivery_json.size());
    }
    ctx->~RequestCtx();
}

// An internal redirect (try_files, error_page, a jump to a named location) zeroes every module's
// ctx, but the request is the same and so is who signed it in: the ctx is found again in the
// pool's cleanups, where it lives. Subrequests share their parent's pool: `owner` tells them apart.
static RequestCtx *find_ctx(ngx_http_request_t *r) {
    for (ngx_pool_cleanup_t *cln = r->pool->cleanup; cln; cln = cln->next) {
        if (cln->handler == destroy_ctx && static_cast<RequestCtx *>(cln->data)->owner == r) {
            return static_cast<RequestCtx *>(cln->data);
        }
    }
    return nullptr;
}

RequestCtx *get_ctx(ngx_http_request_t *r, bool create) {
    auto *ctx = static_cast<RequestCtx *>(ngx_http_get_module_ctx(r, ngx_http_signin_module));
    if (ctx) return ctx;
    if (r->internal && (ctx = find_ctx(r)) != nullptr) {
        ngx_http_set_ctx(r, ctx, ngx_http_signin_module);
        return ctx;
    }
    if (!create) return nullptr;
    ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(r->pool, sizeof(RequestCtx));
    if (cln == nullptr) return nullptr;
    ctx = new (cln->data) RequestCtx();
    ctx->owner = r;
    cln->handler = destroy_ctx;
    ngx_http_set_ctx(r, ctx, ngx_http_signin_module);
    return ctx;
}

static bool equals_nocase(std::string_view a, std::string_view b) {
    return a.size() == b.size() &&
           ngx_strncasecmp(reinterpret_cast<u_char *>(const_cast<char *>(a.data())),
                           reinterpret_cast<u_char *>(const_cast<char *>(b.data())), a.size()) == 0;
}

std::optional<std::string_view> header_value(ngx_http_request_t *r, std::string_view name) {
    for (ngx_list_part_t *part = &r->headers_in.headers.part; part; part = part->next) {
        auto *h = static_cast<ngx_table_elt_t *>(part->elts);
        for (ngx_uint_t i = 0; i < part->nelts; i++) {
            if (equals_nocase(sv(h[i].key), name)) return sv(h[i].value);
        }
    }
    return std::nullopt;
}

std::string user_agent(ngx_http_request_t *r) {
    return r->headers_in.user_agent ? std::string(sv(r->headers_in.user_agent->value)) : std::string();
}

std::string client_of(ngx_http_request_t *r) {
    RequestCtx *ctx = get_ctx(r, true);
    if (ctx && ctx->client) return *ctx->client;
    std::string client;
    MainConf *m = main_conf(r);
    ngx_str_t v = ngx_null_string;
    if (m->client && ngx_http_complex_value(r, m->client, &v) == NGX_OK) {
        client.assign(sv(v));
    } else {
        client.assign(sv(r->connection->addr_text));
    }
    if (client.size() > 64) client.resize(64);
    if (ctx) ctx->client = client;
    return client;
}

std::string client_key(ngx_http_request_t *r) {
    RequestCtx *ctx = get_ctx(r, true);
    if (ctx && ctx->client_key) return *ctx->client_key;
    std::string key = signin::client_key(client_of(r), main_conf(r)->policy->attempts.client_ipv6_prefix);
    if (ctx) ctx->client_key = key;
    return key;
}

Credentials read_credentials(ngx_http_request_t *r, std::string_view cookie_name) {
    Credentials c;
    signin::CookieScan cookies;
#if defined(nginx_version) && nginx_version >= 1023000
    for (ngx_table_elt_t *h = r->headers_in.cookie; h; h = h->next) {
        signin::scan_cookie_line(sv(h->value), cookie_name, cookies);
    }
#else
    auto **lines = static_cast<ngx_table_elt_t **>(r->headers_in.cookies.elts);
    for (ngx_uint_t i = 0; i < r->headers_in.cookies.nelts; i++) {
        signin::scan_cookie_line(sv(lines[i]->value), cookie_name, cookies);
    }
#endif
    std::optional<std::string_view> bearer;
    if (r->headers_in.authorization) bearer = signin::bearer_token(sv(r->headers_in.authorization->value));
    if (cookies.count > 1 || (cookies.count && bearer)) {
        c.state = Credentials::Ambiguous;
    } else if (bearer) {
        c.state = bearer->empty() ? Credentials::Malformed : Credentials::Bearer;
        c.secret = signin::Secret(std::string(*bearer));
    } else if (cookies.count) {
        c.state = cookies.value.empty() ? Credentials::Malformed : Credentials::Cookie;
        c.secret = signin::Secret(std::string(cookies.value));
    }
    return c;
}

std::size_t request_language(ngx_http_request_t *r) {
    const Texts *t = main_conf(r)->texts;
    if (t == nullptr || !t->languages || t->languages->size() < 2) return 0;
    const signin::Secret cookie = read_cookie(r, "svc_lang");
    const auto accept = header_value(r, "Accept-Language");
    return t->languages->choose(cookie.reveal(), accept ? *accept : std::string_view());
}

std::string request_language_tag(ngx_http_request_t *r) {
    const Texts *t = main_conf(r)->texts;
    if (t == nullptr || t->tags.empty() || !t->languages) return {};
    return t->languages->tag(request_language(r));
}

signin::Secret read_cookie(ngx_http_request_t *r, std::string_view name) {
    signin::CookieScan cookies;
#if defined(nginx_version) && nginx_version >= 1023000
    for (ngx_table_elt_t *h = r->headers_in.cookie; h; h = h->next) signin::scan_cookie_line(sv(h->value), name, cookies);
#else
    auto **lines = static_cast<ngx_table_elt_t **>(r->headers_in.cookies.elts);
    for (ngx_uint_t i = 0; i < r->headers_in.cookies.nelts; i++) signin::scan_cookie_line(sv(lines[i]->value), name, cookies);
#endif
    if (cookies.count != 1) return signin::Secret();
    return signin::Secret(std::string(cookies.value));
}

bool hide_credentials(ngx_http_request_t *r, std::initializer_list<std::string_view> cookie_names) {
    ngx_uint_t n = 0;
    for (ngx_list_part_t *part = &r->headers_in.headers.part; part; part = part->next) n += part->nelts;
    // a new list: the old elements stay where headers_in's pointers expect them
    ngx_list_t kept;
    if (ngx_list_init(&kept, r->pool, n ? n : 1, sizeof(ngx_table_elt_t)) != NGX_OK) return false;
    ngx_table_elt_t *first_cookie = nullptr, *last_cookie = nullptr;
    ngx_uint_t cookies = 0;
    for (ngx_list_part_t *part = &r->headers_in.headers.part; part; part = part->next) {
        auto *h = static_cast<ngx_table_elt_t *>(part->elts);
        for (ngx_uint_t i = 0; i < part->nelts; i++) {
            const bool is_cookie = equals_nocase(sv(h[i].key), "cookie");
            ngx_str_t line = ngx_null_string;
            if (is_cookie) {  // the line without them, written straight into the request's pool
                line.data = static_cast<u_char *>(ngx_pnalloc(r->pool, 2 * h[i].value.len + 1));
                if (line.data == nullptr) return false;
                line.len = signin::without_cookies_to(sv(h[i].value), cookie_names, reinterpret_cast<char *>(line.data));
                if (line.len == 0) continue;
                line.data[line.len] = '\0';
            } else if (equals_nocase(sv(h[i].key), "authorization") && signin::bearer_token(sv(h[i].value))) {
                continue;
            }
            auto *e = static_cast<ngx_table_elt_t *>(ngx_list_push(&kept));
            if (e == nullptr) return false;
            *e = h[i];
            if (!is_cookie) continue;
            e->value = line;
#if defined(nginx_version) && nginx_version >= 1023000
            e->next = nullptr;
            if (last_cookie) last_cookie->next = e;
#endif
            if (first_cookie == nullptr) first_cookie = e;
            last_cookie = e;
            ++cookies;
        }
    }
#if defined(nginx_version) && nginx_version >= 1023000
    r->headers_in.cookie = first_cookie;
#else
    if (ngx_array_init(&r->headers_in.cookies, r->pool, cookies ? cookies : 1, sizeof(ngx_table_elt_t *)) != NGX_OK) {
        return false;
    }
    for (ngx_list_part_t *part = &kept.part; part; part = part->next) {
        auto *h = static_cast<ngx_table_elt_t *>(part->elts);
        for (ngx_uint_t i = 0; i < part->nelts; i++) {
            if (!equals_nocase(sv(h[i].key), "cookie")) continue;
            auto **slot = static_cast<ngx_table_elt_t **>(ngx_array_push(&r->headers_in.cookies));
            if (slot == nullptr) return false;
            *slot = &h[i];
        }
    }
    (void)first_cookie;
    (void)last_cookie;
    (void)cookies;
#endif
    if (r->headers_in.authorization && signin::bearer_token(sv(r->headers_in.authorization->value))) {
        r->headers_in.authorization = nullptr;
    }
    r->headers_in.headers = kept;
    return true;
}

std::optional<std::string_view> sub_path(ngx_http_request_t *r) {
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_get_module_loc_conf(r, ngx_http_core_module));
    std::string_view uri = sv(r->uri), name = sv(clcf->name);
    if (uri.substr(0, name.size()) != name) return std::nullopt;
    std::string_view rest = uri.substr(name.size());
    while (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
    return rest;
}

std::optional<std::string> query_arg(ngx_http_request_t *r, std::string_view name) {
    ngx_str_t raw;
    if (ngx_http_arg(r, reinterpret_cast<u_char *>(const_cast<char *>(name.data())), name.size(), &raw) != NGX_OK) {
        return std::nullopt;
    }
    std::string out;
    out.reserve(raw.len);
    for (size_t i = 0; i < raw.len; i++) {
        const u_char c = raw.data[i];
        if (c == '+') {
            out += ' ';
        } else if (c == '%') {
            if (i + 2 >= raw.len) return std::nullopt;
            auto hex = [](u_char h) -> int {
                if (h >= '0' && h <= '9') return h - '0';
                h = static_cast<u_char>(h | 0x20);
                return h >= 'a' && h <= 'f' ? h - 'a' + 10 : -1;
            };
            const int hi = hex(raw.data[i + 1]), lo = hex(raw.data[i + 2]);
            if (hi < 0 || lo < 0) return std::nullopt;
            out += static_cast<char>(hi * 16 + lo);
            i += 2;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

bool is_json_content_type(ngx_http_request_t *r) {
    if (r->headers_in.content_type == nullptr) return false;
    std::string_view v = sv(r->headers_in.content_type->value);
    std::string_view base = v.substr(0, v.find(';'));
    while (!base.empty() && base.back() == ' ') base.remove_suffix(1);
    return equals_nocase(base, "application/json");
}

RequestBody::RequestBody(ngx_http_request_t *r) : r_(r) {
    if (r->request_body == nullptr) return;
    if (r->request_body->temp_file) {
        too_large_ = true;
        return;
    }
    const size_t max = main_conf(r)->body_max;
    for (ngx_chain_t *cl = r->request_body->bufs; cl; cl = cl->next) {
        ngx_buf_t *b = cl->buf;
        if (ngx_buf_special(b)) continue;  // the empty end-of-body marker
        if (b->in_file || !ngx_buf_in_memory(b)) {
            too_large_ = true;
            return;
        }
        text_.append(reinterpret_cast<const char *>(b->pos), static_cast<size_t>(b->last - b->pos));
        if (text_.size() > max) {
            too_large_ = true;
            return;
        }
    }
}

RequestBody::~RequestBody() {
    ngx_explicit_memzero(text_.data(), text_.size());
    if (r_->request_body == nullptr) return;
    for (ngx_chain_t *cl = r_->request_body->bufs; cl; cl = cl->next) {
        ngx_buf_t *b = cl->buf;
        if (b->temporary && !b->in_file && b->pos && b->last > b->pos) {  // our writable copies only
            ngx_explicit_memzero(b->pos, static_cast<size_t>(b->last - b->pos));
        }
    }
}

ngx_table_elt_t *add_subrequest_header(ngx_http_request_t *sr, std::string_view name, std::string_view value) {
    auto *h = static_cast<ngx_table_elt_t *>(ngx_list_push(&sr->headers_in.headers));
    if (h == nullptr) return nullptr;
    h->key = pool_copy(sr->pool, name);
    h->value = pool_copy(sr->pool, value);
    h->lowcase_key = static_cast<u_char *>(ngx_pnalloc(sr->pool, name.size()));
    if (h->key.data == nullptr || h->value.data == nullptr || h->lowcase_key == nullptr) return nullptr;
    ngx_strlow(h->lowcase_key, h->key.data, h->key.len);
    h->hash = ngx_hash_key(h->lowcase_key, h->key.len);
#if defined(nginx_version) && nginx_version >= 1023000
    h->next = nullptr;
#endif
    return h;
}

ngx_int_t give_subrequest_body(ngx_http_request_t *sr, std::string_view body, std::string_view content_type) {
    auto *rb = static_cast<ngx_http_request_body_t *>(ngx_pcalloc(sr->pool, sizeof(ngx_http_request_body_t)));
    auto *b = static_cast<ngx_buf_t *>(ngx_calloc_buf(sr->pool));
    ngx_chain_t *cl = ngx_alloc_chain_link(sr->pool);
    ngx_table_elt_t *type = add_subrequest_header(sr, "Content-Type", content_type);
    if (rb == nullptr || b == nullptr || cl == nullptr || type == nullptr) return NGX_ERROR;
    b->pos = b->start = reinterpret_cast<u_char *>(const_cast<char *>(body.data()));
    b->last = b->end = b->pos + body.size();
    b->memory = 1;
    b->last_buf = 1;
    cl->buf = b;
    cl->next = nullptr;
    rb->bufs = cl;
    rb->rest = 0;
    sr->request_body = rb;
    sr->headers_in.content_length_n = static_cast<off_t>(body.size());
    sr->headers_in.content_length = nullptr;
    sr->headers_in.chunked = 0;
    sr->headers_in.content_type = type;
    return NGX_OK;
}

bool browser_navigation(ngx_http_request_t *r) {
    if (r != r->main || !(r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD))) return false;
    auto accept = header_value(r, "Accept");
    return accept && accept->find("text/html") != std::string_view::npos;
}

}  // namespace signin_ngx
