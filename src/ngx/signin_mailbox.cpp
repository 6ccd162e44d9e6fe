// signin_dev_mailbox: a development mail sink. As the signin_delivery location it keeps each
// delivery; as a normal location it accepts a delivery POST (from a proxy), lists the last
// emails as JSON (GET; `?html` for a page) and forgets them (DELETE). Loopback clients only.
// The emails live in a shared-memory ring so every worker sees the same mailbox.
#include "signin_conf.h"
#include "signin_handlers.h"
#include "signin_reply.h"
#include "signin_request.h"

#include <string>

#include <cjson/cJSON.h>

#include "signin/json.hpp"

namespace signin_ngx {
namespace {

constexpr ngx_uint_t kSlots = 64;
constexpr size_t kSlotBytes = 16384;  // an email with a custom HTML template fits

struct Mailbox {
    ngx_uint_t next;   // total emails ever stored; slot = next % kSlots
    ngx_uint_t count;  // emails kept (≤ kSlots)
    struct {
        size_t len;
        u_char data[kSlotBytes];
    } slot[kSlots];
};

Mailbox *mailbox_of(ngx_http_request_t *r, ngx_slab_pool_t **pool) {
    MainConf *m = main_conf(r);
    if (m->mailbox == nullptr || m->mailbox->data == nullptr) return nullptr;
    *pool = reinterpret_cast<ngx_slab_pool_t *>(m->mailbox->shm.addr);
    return static_cast<Mailbox *>((*pool)->data);
}

bool loopback_client(ngx_http_request_t *r) {
    sockaddr *sa = r->connection->sockaddr;
    if (sa->sa_family == AF_INET) {
        auto *sin = reinterpret_cast<sockaddr_in *>(sa);
        return (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
    }
#if (NGX_HAVE_INET6)
    if (sa->sa_family == AF_INET6) {
        auto *sin6 = reinterpret_cast<sockaddr_in6 *>(sa);
        return IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr);
    }
#endif
#if (NGX_HAVE_UNIX_DOMAIN)
    if (sa->sa_family == AF_UNIX) return true;
#endif
    return false;
}

// "127.0.0.1", "localhost" or "[::1]", with or without a port: a name only this machine has.
bool loopback_authority(std::string_view a) {
    if (a.empty()) return false;
    std::string_view host = a.substr(0, a.front() == '[' ? a.find(']') + 1 : a.find(':'));
    std::string lower(host);
    for (char &c : lower) c = static_cast<char>(ngx_tolower(c));
    return signin::is_loopback_host(lower);
}

// DNS rebinding: a page of another site whose name resolves to 127.0.0.1 reaches the mailbox
// with its own Host, and a cross-site form or fetch carries its own Origin. Only loopback names
// are answered (issue #19 item 11).
bool loopback_request(ngx_http_request_t *r) {
    if (r->headers_in.host == nullptr || r->headers_in.host->value.len == 0) return false;
    if (!loopback_authority(sv(r->headers_in.host->value))) return false;
    auto origin = header_value(r, "Origin");
    if (!origin) return true;
    for (std::string_view scheme : {"http://", "https://"}) {
        if (origin->substr(0, scheme.size()) == scheme && origin->size() > scheme.size()) {
            return loopback_authority(origin->substr(scheme.size()));
        }
    }
    return false;
}

bool store_email(ngx_http_request_t *r, const std::string &json) {
    ngx_slab_pool_t *pool = nullptr;
    Mailbox *mb = mailbox_of(r, &pool);
    if (mb == nullptr || json.size() > kSlotBytes) return false;
    ngx_shmtx_lock(&pool->mutex);
    auto &s = mb->slot[mb->next % kSlots];
    s.len = json.size();
    ngx_memcpy(s.data, json.data(), json.size());
    mb->next++;
    if (mb->count < kSlots) mb->count++;
    ngx_shmtx_unlock(&pool->mutex);
    return true;
}

std::vector<std::string> list_emails(ngx_http_request_t *r) {
    std::vector<std::string> out;
    ngx_slab_pool_t *pool = nullptr;
    Mailbox *mb = mailbox_of(r, &pool);
    if (mb == nullptr) return out;
    ngx_shmtx_lock(&pool->mutex);
    for (ngx_uint_t i = mb->next - mb->count; i < mb->next; i++) {
        auto &s = mb->slot[i % kSlots];
        out.emplace_back(reinterpret_cast<const char *>(s.data), s.len);
    }
    ngx_shmtx_unlock(&pool->mutex);
    return out;
}

void clear_emails(ngx_http_request_t *r) {
    ngx_slab_pool_t *pool = nullptr;
    Mailbox *mb = mailbox_of(r, &pool);
    if (mb == nullptr) return;
    ngx_shmtx_lock(&pool->mutex);
    mb->count = 0;
    ngx_shmtx_unlock(&pool->mutex);
}

void posted_email(ngx_http_request_t *r) {
    std::string body;
    bool ok = r->request_body && !r->request_body->temp_file;
    for (ngx_chain_t *cl = ok ? r->request_body->bufs : nullptr; cl; cl = cl->next) {
        if (ngx_buf_special(cl->buf)) continue;
        if (!ngx_buf_in_memory(cl->buf)) {
            ok = false;
            break;
        }
        body.append(reinterpret_cast<const char *>(cl->buf->pos), static_cast<size_t>(cl->buf->last - cl->buf->pos));
    }
    ngx_int_t rc;
    try {
        // a delivery: a JSON object with a string "email" (other fields are kept as they are)
        cJSON *root = cJSON_ParseWithLength(body.data(), body.size());
        const cJSON *email = root ? cJSON_GetObjectItemCaseSensitive(root, "email") : nullptr;
        const bool parsed = cJSON_IsObject(root) && cJSON_IsString(email) && signin::json::valid_utf8(body) &&
                            body.size() <= kSlotBytes;
        cJSON_Delete(root);
        if (!ok || !parsed || !store_email(r, body)) {
            rc = send_error(r, signin::Code::InvalidRequest, "a delivery is a JSON object with an email");
        } else {
            rc = send_empty(r, NGX_HTTP_NO_CONTENT);
        }
    } catch (...) {
        rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    ngx_http_finalize_request(r, rc);
}

ngx_int_t mailbox(ngx_http_request_t *r) {
    if (r != r->main) {  // the signin_delivery subrequest itself
        RequestCtx *ctx = get_ctx(r, false);
        if (ctx == nullptr || ctx->delivery_json.empty() || !store_email(r, ctx->delivery_json)) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        return send_empty(r, NGX_HTTP_NO_CONTENT);
    }
    if (!loopback_client(r) || !loopback_request(r)) {
        return reject(r, signin::Code::OriginMismatch, "the dev mailbox answers loopback clients and names only");
    }
    if (r->method == NGX_HTTP_POST) {
        // a cross-site form can POST text/plain without a preflight; a delivery is JSON
        if (!is_json_content_type(r)) return reject(r, kUnsupportedMediaType, "a delivery is application/json");
        r->request_body_in_single_buf = 1;
        ngx_int_t rc = ngx_http_read_client_request_body(r, posted_email);
        if (rc >= NGX_HTTP_SPECIAL_RESPONSE) return rc;
        return NGX_DONE;
    }
    if (ngx_http_discard_request_body(r) != NGX_OK) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    if (r->method == NGX_HTTP_DELETE) {
        clear_emails(r);
        return send_empty(r, NGX_HTTP_NO_CONTENT);
    }
    if (!(r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD))) {
        add_header(r, "Allow", "GET, HEAD, POST, DELETE");
        return send_error(r, kMethodNotAllowed, "method not allowed");
    }
    std::vector<std::string> emails = list_emails(r);
    if (sv(r->args) == "html") {
        std::string page =
            "<!doctype html><meta charset=utf-8><title>dev mailbox</title>"
            "<style>body{font:15px system-ui;margin:2em}pre{background:#f4f4f4;padding:1em}</style>"
            "<h1>Dev mailbox</h1><p>The last emails ngx_signin delivered, newest first.</p>";
        for (auto it = emails.rbegin(); it != emails.rend(); ++it) {
            page += "<pre>";
            signin::append_html_escaped(page, *it);
            page += "</pre>";
        }
        return send_html(r, page);
    }
    std::string body = "{\"emails\":[";
    for (size_t i = 0; i < emails.size(); i++) {
        if (i) body += ",";
        body += emails[i];
    }
    body += "]}";
    return send_json(r, 200, body);
}

}  // namespace

ngx_int_t mailbox_handler(ngx_http_request_t *r) {
    return guard_request(r, "signin_dev_mailbox", [r] { return mailbox(r); });
}

ngx_int_t mailbox_init_zone(ngx_shm_zone_t *zone, void *data) {
    auto *pool = reinterpret_cast<ngx_slab_pool_t *>(zone->shm.addr);
    if (data) {  // reload: keep the old zone's mailbox
        return NGX_OK;
    }
    if (zone->shm.exists) return NGX_OK;
    void *mb = ngx_slab_calloc(pool, sizeof(Mailbox));
    if (mb == nullptr) return NGX_ERROR;
    pool->data = mb;
    return NGX_OK;
}

}  // namespace signin_ngx
