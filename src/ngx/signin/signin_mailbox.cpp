// signin_dev_mailbox: a development mail sink. As the signin_delivery location it keeps each
// delivery; as a normal location it accepts a delivery POST (from a proxy), lists the last
// emails (GET: JSON for scripts, a page for browsers) and forgets them (DELETE). Loopback
// clients only. The emails live in a shared-memory ring so every worker sees the same mailbox.
#include "signin_conf.h"
#include "signin_handlers.h"
#include "signin_reply.h"
#include "signin_request.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <cjson/cJSON.h>

#include "signin/json.hpp"
#include "signin/pages.hpp"

namespace signin_ngx {
namespace {

constexpr ngx_uint_t kSlots = 64;
constexpr size_t kSlotBytes = 16384;  // an email with a custom HTML template fits

struct Mailbox {
    ngx_uint_t next;   // total emails ever stored; slot = next % kSlots
    ngx_uint_t count;  // emails kept (≤ kSlots)
    struct {
        size_t len;
        int64_t received_ms;  // when it was stored (Unix time, ms)
        u_char data[kSlotBytes];
    } slot[kSlots];
};

// One kept email: its number (the ring's count when it was stored: it names the email in
// `?body=N` for as long as the mailbox keeps it), when it came, and its delivery JSON as posted.
struct Stored {
    ngx_uint_t seq;
    int64_t received_ms;
    std::string json;
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
// are answered.
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
    ngx_time_t *now = ngx_timeofday();
    ngx_shmtx_lock(&pool->mutex);
    auto &s = mb->slot[mb->next % kSlots];
    s.len = json.size();
    s.received_ms = static_cast<int64_t>(now->sec) * 1000 + static_cast<int64_t>(now->msec);
    ngx_memcpy(s.data, json.data(), json.size());
    mb->next++;
    if (mb->count < kSlots) mb->count++;
    ngx_shmtx_unlock(&pool->mutex);
    return true;
}

// The emails kept, oldest first; only email `only` when given (nothing if it is gone).
std::vector<Stored> list_emails(ngx_http_request_t *r, std::optional<ngx_uint_t> only = std::nullopt) {
    std::vector<Stored> out;
    ngx_slab_pool_t *pool = nullptr;
    Mailbox *mb = mailbox_of(r, &pool);
    if (mb == nullptr) return out;
    out.reserve(kSlots);
    ngx_shmtx_lock(&pool->mutex);
    // a copy that throws (no memory) must not leave the mailbox locked for every worker
    struct Unlock {
        ngx_shmtx_t *mutex;
        ~Unlock() { ngx_shmtx_unlock(mutex); }
    } unlock{&pool->mutex};
    for (ngx_uint_t i = mb->next - mb->count; i < mb->next; i++) {
        if (only && *only != i) continue;
        auto &s = mb->slot[i % kSlots];
        out.push_back({i, s.received_ms, std::string(reinterpret_cast<const char *>(s.data), s.len)});
    }
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

// A delivery POSTed by hand (or by a proxy): a JSON object with a string "email", kept as it is.
ngx_int_t store_posted(ngx_http_request_t *r) {
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
    cJSON *root = cJSON_ParseWithLength(body.data(), body.size());
    const cJSON *email = root ? cJSON_GetObjectItemCaseSensitive(root, "email") : nullptr;
    const bool parsed = cJSON_IsObject(root) && cJSON_IsString(email);
    cJSON_Delete(root);
    if (!ok || !parsed || !signin::json::valid_utf8(body) || body.size() > kSlotBytes || !store_email(r, body)) {
        return send_error(r, signin::Code::InvalidRequest, "a delivery is a JSON object with an email");
    }
    return send_empty(r, NGX_HTTP_NO_CONTENT);
}

// The request body's handler: nginx calls it once the body is read.
void posted_email(ngx_http_request_t *r) {
    ngx_http_finalize_request(r, guard_request(r, "signin_dev_mailbox", [r] { return store_posted(r); }));
}

// ---------------------------------------------------------------- the page
// A browser gets the page of src/pages/mailbox.html (signin::pages::render_mailbox); an HTML body
// is served on its own, from `?body=N`, rather than in a srcdoc attribute: a srcdoc document
// inherits the policy of the page that holds it (Chromium and Firefox both do), and under the
// page's policy every style="" of an email would be dropped; 'unsafe-inline' beside the style's
// hash would not help, browsers ignore it once a hash is given.

// Whether the query names `name` (`?html`, `?json`, `?body=3`); its value, "" when it has none.
std::optional<std::string_view> query_arg(ngx_http_request_t *r, std::string_view name) {
    std::string_view args = sv(r->args);
    while (!args.empty()) {
        std::size_t amp = args.find('&');
        std::string_view part = args.substr(0, amp);
        args = amp == std::string_view::npos ? std::string_view() : args.substr(amp + 1);
        std::size_t eq = part.find('=');
        if (part.substr(0, eq) == name) return eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1);
    }
    return std::nullopt;
}

// A browser asks for the page: a navigation accepts text/html (fetch() and scripts send */* or
// application/json, or no Accept at all), unless it asks for `?json`; `?html` asks for it anyway.
bool wants_page(ngx_http_request_t *r) {
    if (query_arg(r, "json")) return false;
    if (query_arg(r, "html")) return true;
    auto accept = header_value(r, "Accept");
    if (!accept) return false;
    std::string lower(*accept);  // media types are case-insensitive
    for (char &c : lower) c = static_cast<char>(ngx_tolower(c));
    return lower.find("text/html") != std::string::npos;
}

using Json = std::unique_ptr<cJSON, decltype(&cJSON_Delete)>;
Json parse(const std::string &text) { return Json(cJSON_ParseWithLength(text.data(), text.size()), &cJSON_Delete); }

// A string field of a delivery; "" when it has none (a POSTed delivery need only have an email).
std::string_view field(const Json &root, const char *name) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root.get(), name);
    return cJSON_IsString(item) && item->valuestring ? std::string_view(item->valuestring) : std::string_view();
}

// What the page shows of each kept email.
std::vector<signin::pages::MailboxEmail> page_emails(const std::vector<Stored> &emails) {
    std::vector<signin::pages::MailboxEmail> out;
    out.reserve(emails.size());
    for (const Stored &s : emails) {
        Json root = parse(s.json);
        signin::pages::MailboxEmail e;
        e.seq = s.seq;
        e.received_ms = s.received_ms;
        e.email = field(root, "email");
        e.subject = field(root, "subject");
        e.purpose = field(root, "purpose");
        e.code = field(root, "code");
        e.link = field(root, "link");
        e.text = field(root, "text");
        e.html = !field(root, "html").empty();
        out.push_back(std::move(e));
    }
    return out;
}

bool add_page_headers(ngx_http_request_t *r, std::string_view policy) {
    return add_header(r, "Content-Security-Policy", policy) && add_header(r, "Referrer-Policy", "no-referrer") &&
           add_header(r, "X-Content-Type-Options", "nosniff");
}

// `?body=N`: email N's HTML body, for the page's iframe.
ngx_int_t html_body(ngx_http_request_t *r, std::string_view n) {
    ngx_int_t seq = ngx_atoi(reinterpret_cast<u_char *>(const_cast<char *>(n.data())), n.size());
    std::vector<Stored> one;
    if (seq != NGX_ERROR) one = list_emails(r, static_cast<ngx_uint_t>(seq));
    Json root = one.empty() ? Json(nullptr, &cJSON_Delete) : parse(one.front().json);
    std::string_view html = root ? field(root, "html") : std::string_view();
    if (html.empty()) return send_error(r, signin::Code::NotFound, "no such email in the mailbox (any more)");
    if (!add_page_headers(r, signin::pages::mailbox_body_policy())) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    return send_html(r, std::string(html));
}

// The JSON list: the deliveries as they were posted, each with "received_at" added (ISO 8601,
// UTC) unless it came with one.
std::string mailbox_json(const std::vector<Stored> &emails) {
    std::string body = "{\"emails\":[";
    for (size_t i = 0; i < emails.size(); i++) {
        if (i) body += ",";
        const std::string &json = emails[i].json;
        std::size_t close = json.find_last_of('}');  // a stored delivery is an object with an email
        Json root = parse(json);
        if (close == std::string::npos || cJSON_GetObjectItemCaseSensitive(root.get(), "received_at")) {
            body += json;
            continue;
        }
        body.append(json, 0, close);
        body += ",\"received_at\":\"" + signin::pages::mailbox_time(emails[i].received_ms) + "\"";
        body.append(json, close, std::string::npos);
    }
    body += "]}";
    return body;
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
    if (auto n = query_arg(r, "body")) return html_body(r, *n);
    // the answer depends on Accept: a cache between must not give a script the page
    if (!add_header(r, "Vary", "Accept")) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    std::vector<Stored> emails = list_emails(r);
    if (wants_page(r)) {
        if (!add_page_headers(r, signin::pages::mailbox_policy())) return NGX_HTTP_INTERNAL_SERVER_ERROR;
        return send_html(r, signin::pages::render_mailbox(page_emails(emails)));
    }
    return send_json(r, 200, mailbox_json(emails));
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
