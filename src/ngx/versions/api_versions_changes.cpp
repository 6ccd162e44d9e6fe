// The version changes at work: a JSON request body of an older version is migrated forward to the
// upstream's version before the jump to the controller, and a JSON answer (errors too) is
// migrated back to the client's version by a body filter that holds it until it is complete.
// Nothing is read, parsed or held for a route and version no change lies between.
#include "ngx_signin_nginx.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <new>
#include <string>

#include "api_versions_glue.h"

using signin::version::Migrator;
using signin_ngx::sv;

namespace apiv {

namespace {

using MainConf = ngx_http_api_versions_main_conf_t;
using LocConf = ngx_http_api_versions_loc_conf_t;
using Ctx = ngx_http_api_versions_ctx_t;

ngx_http_output_header_filter_pt next_header_filter;
ngx_http_output_body_filter_pt next_body_filter;

// application/json or any +json type, parameters aside, in any case.
bool is_json(std::string_view type) {
    type = type.substr(0, type.find(';'));
    while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
    auto ends_with = [&](std::string_view tail) {
        return type.size() >= tail.size() &&
               ngx_strncasecmp(reinterpret_cast<u_char *>(const_cast<char *>(type.data() + type.size() - tail.size())),
                               reinterpret_cast<u_char *>(const_cast<char *>(tail.data())), tail.size()) == 0;
    };
    return (type.size() == 16 && ends_with("application/json")) || (type.find('/') != std::string_view::npos && ends_with("+json"));
}

// A body that is not JSON passes as it came; a flood of them must not flood the log, so the
// count is written at most once a second. The request is marked for $api_body_invalid.
void note_invalid(ngx_http_request_t *r, bool request) {
    const char *which = request ? "a request" : "a response";
    if (Ctx *ctx = find_ctx(r)) {
        if (request) {
            ctx->invalid_request = 1;
        } else {
            ctx->invalid_response = 1;
        }
    }
    static ngx_uint_t count = 0;
    static time_t logged = 0;
    ++count;
    time_t now = ngx_time();
    if (now == logged) {
        return;
    }
    logged = now;
    ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                  "api_versions: %s body is not JSON and passed unchanged (%ui such bodies since the last "
                  "message)", which, count);
    count = 0;
}

const State &state(ngx_http_request_t *r) {
    return *static_cast<MainConf *>(ngx_http_get_module_main_conf(r, ngx_http_api_versions_module))->state;
}

size_t body_max(ngx_http_request_t *r) {
    return static_cast<LocConf *>(ngx_http_get_module_loc_conf(r, ngx_http_api_versions_module))->body_max;
}

// Appends a buffer's bytes (memory or temporary file) to `out`; false on a read error.
bool append_buf(ngx_buf_t *b, std::string &out) {
    if (ngx_buf_in_memory(b)) {
        out.append(reinterpret_cast<const char *>(b->pos), static_cast<std::size_t>(b->last - b->pos));
        return true;
    }
    if (!b->in_file) {
        return true;
    }
    std::size_t at = out.size();
    auto len = static_cast<std::size_t>(b->file_last - b->file_pos);
    out.resize(at + len);
    ssize_t n = ngx_read_file(b->file, reinterpret_cast<u_char *>(&out[at]), len, b->file_pos);
    return n == static_cast<ssize_t>(len);
}

// ---------------------------------------------------------------- requests

// Replaces the read request body by its migrated form; Content-Length follows.
void migrate_request(ngx_http_request_t *r, Ctx *ctx) {
    ngx_http_request_body_t *rb = r->request_body;
    if (rb == nullptr || rb->bufs == nullptr) {
        return;
    }
    const std::size_t max = body_max(r);
    std::string body;
    for (ngx_chain_t *cl = rb->bufs; cl; cl = cl->next) {
        if (!append_buf(cl->buf, body)) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "api_versions: the request body could not be read back");
            return;
        }
        if (body.size() > max) {
            return;  // over api_versions_body_max: untouched
        }
    }
    const State &s = state(r);
    std::string out;
    switch (s.migrator->migrate(body, ctx->version_index, s.upstream_version, sv(r->method_name),
                                s.shapes.at(ctx->changed_route), out)) {
    case Migrator::Result::Unchanged:
        return;
    case Migrator::Result::Invalid:
        note_invalid(r, true);
        return;
    case Migrator::Result::Rewritten:
        break;
    }
    ngx_buf_t *b = ngx_create_temp_buf(r->pool, out.size() ? out.size() : 1);
    auto *cl = ngx_alloc_chain_link(r->pool);
    std::string length = std::to_string(out.size());
    ngx_str_t value = signin_ngx::pool_copy(r->pool, length);
    if (!b || !cl || !value.data) {
        throw std::bad_alloc();
    }
    b->last = ngx_cpymem(b->pos, out.data(), out.size());
    b->last_buf = 1;
    b->last_in_chain = 1;
    cl->buf = b;
    cl->next = nullptr;
    rb->bufs = cl;
    r->headers_in.content_length_n = static_cast<off_t>(out.size());
    if (r->headers_in.content_length) {
        r->headers_in.content_length->value = value;
    }
}

ngx_int_t jump(ngx_http_request_t *r, Ctx *ctx) {
    ngx_str_t controller = ctx->controller;
    return ngx_http_named_location(r, &controller);
}

void body_read(ngx_http_request_t *r) {
    ngx_int_t rc = signin_ngx::guard(
        [r]() -> ngx_int_t {
            Ctx *ctx = find_ctx(r);
            if (ctx == nullptr || ctx->controller.len == 0) {
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }
            migrate_request(r, ctx);
            return jump(r, ctx);
        },
        [r](const std::exception *e) -> ngx_int_t {
            signin_ngx::log_failure(r->connection->log, NGX_LOG_ERR, "api_versions request body", e);
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        });
    ngx_http_finalize_request(r, rc);
}

bool has_json_body(ngx_http_request_t *r) {
    if (r->headers_in.content_length_n <= 0 && !r->headers_in.chunked) {
        return false;
    }
    return r->headers_in.content_type && is_json(sv(r->headers_in.content_type->value));
}

// ---------------------------------------------------------------- responses

// Appends a buffer of the answer to what is held: memory straight into the held bytes (one copy
// of each, none through a std::string), a temporary file's part read into them.
bool hold(ngx_http_request_t *r, Ctx *ctx, ngx_buf_t *b) {
    auto size = static_cast<std::size_t>(ngx_buf_size(b));
    std::size_t need = ctx->held_len + size;
    if (need > ctx->held_cap) {
        // a Content-Length gives the size at once (within api_versions_body_max: header_filter)
        off_t length = r->headers_out.content_length_n;
        std::size_t cap = ctx->held_cap ? ctx->held_cap * 2 : length > 0 ? static_cast<std::size_t>(length) : 4096;
        while (cap < need) cap *= 2;
        auto *grown = static_cast<u_char *>(ngx_pnalloc(r->pool, cap));
        if (!grown) {
            return false;
        }
        if (ctx->held_len) {
            ngx_memcpy(grown, ctx->held, ctx->held_len);
        }
        ctx->held = grown;
        ctx->held_cap = cap;
    }
    if (size == 0) {
        // a buffer that only ends the answer
    } else if (ngx_buf_in_memory(b)) {
        ngx_memcpy(ctx->held + ctx->held_len, b->pos, size);
    } else if (b->in_file && ngx_read_file(b->file, ctx->held + ctx->held_len, size, b->file_pos) != static_cast<ssize_t>(size)) {
        return false;
    }
    ctx->held_len = need;
    // taken: the upstream may reuse its buffer
    if (ngx_buf_in_memory(b)) {
        b->pos = b->last;
    }
    if (b->in_file) {
        b->file_pos = b->file_last;
    }
    return true;
}

ngx_buf_t *memory_buf(ngx_http_request_t *r, u_char *data, std::size_t len) {
    auto *b = static_cast<ngx_buf_t *>(ngx_calloc_buf(r->pool));
    if (b) {
        b->pos = data;
        b->last = data + len;
        b->memory = len ? 1 : 0;
    }
    return b;
}

ngx_int_t header_filter(ngx_http_request_t *r) {
    if (r != r->main) {
        return next_header_filter(r);
    }
    Ctx *ctx = find_ctx(r);
    if (ctx == nullptr || ctx->changed_route == nullptr || r->header_only ||
        r->headers_out.status == NGX_HTTP_NO_CONTENT || r->headers_out.status == NGX_HTTP_NOT_MODIFIED ||
        r->headers_out.status < NGX_HTTP_OK || !is_json(sv(r->headers_out.content_type)) ||
        (r->headers_out.content_encoding && r->headers_out.content_encoding->value.len) ||
        (r->headers_out.content_length_n >= 0 && static_cast<size_t>(r->headers_out.content_length_n) > body_max(r))) {
        return next_header_filter(r);
    }
    // the header waits for the whole body: its Content-Length is the migrated body's
    ctx->holding = 1;
    ctx->held_len = 0;
    r->allow_ranges = 0;
    return NGX_OK;
}

// Sends the waiting header, then `out`.
ngx_int_t release(ngx_http_request_t *r, ngx_chain_t *out) {
    ngx_int_t rc = next_header_filter(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc == NGX_ERROR ? NGX_ERROR : NGX_OK;
    }
    return next_body_filter(r, out);
}

ngx_int_t body_filter(ngx_http_request_t *r, ngx_chain_t *in) {
    Ctx *ctx = r == r->main && in ? find_ctx(r) : nullptr;
    if (ctx == nullptr || !ctx->holding) {
        return next_body_filter(r, in);
    }
    const std::size_t max = body_max(r);
    bool last = false;
    for (ngx_chain_t *cl = in; cl; cl = cl->next) {
        if (ctx->held_len + static_cast<std::size_t>(ngx_buf_size(cl->buf)) > max) {
            // over api_versions_body_max: what is held, then the rest as it comes, all untouched
            ctx->holding = 0;
            ngx_chain_t *out = cl;
            ngx_chain_t first{nullptr, cl};
            if (ctx->held_len) {
                first.buf = memory_buf(r, ctx->held, ctx->held_len);
                if (!first.buf) {
                    return NGX_ERROR;
                }
                out = &first;
            }
            return release(r, out);
        }
        if (!hold(r, ctx, cl->buf)) {
            return NGX_ERROR;
        }
        last = last || cl->buf->last_buf;
    }
    if (!last) {
        return NGX_OK;
    }
    ctx->holding = 0;
    const State &s = state(r);
    std::string_view migrated;  // the engine's own buffer, copied at once into the request's memory
    Migrator::Result result = signin_ngx::guard(
        [&] {
            return s.migrator->migrate({reinterpret_cast<const char *>(ctx->held), ctx->held_len}, s.upstream_version,
                                       ctx->version_index, sv(r->method_name), s.shapes.at(ctx->changed_route),
                                       migrated);
        },
        [r](const std::exception *e) {
            signin_ngx::log_failure(r->connection->log, NGX_LOG_ERR, "api_versions response body", e);
            return Migrator::Result::Unchanged;
        });
    ngx_buf_t *b = nullptr;
    if (result == Migrator::Result::Rewritten) {
        auto *data = static_cast<u_char *>(ngx_pnalloc(r->pool, migrated.size() ? migrated.size() : 1));
        if (!data) {
            return NGX_ERROR;
        }
        ngx_memcpy(data, migrated.data(), migrated.size());
        b = memory_buf(r, data, migrated.size());
        r->headers_out.content_length_n = static_cast<off_t>(migrated.size());
        if (r->headers_out.content_length) {
            r->headers_out.content_length->hash = 0;
            r->headers_out.content_length = nullptr;
        }
        ngx_http_weak_etag(r);
    } else {
        if (result == Migrator::Result::Invalid) {
            note_invalid(r, false);
        }
        b = memory_buf(r, ctx->held, ctx->held_len);
    }
    if (!b) {
        return NGX_ERROR;
    }
    b->last_buf = 1;
    b->last_in_chain = 1;
    ngx_chain_t out{b, nullptr};
    return release(r, &out);
}

}  // namespace

bool drop_accept_encoding(ngx_http_request_t *r) {
    if (r->headers_in.accept_encoding == nullptr) {
        return true;
    }
    // A new list without it: r->headers_in.accept_encoding still points to the old entry, so
    // nginx's gzip filter still compresses for the client what the upstream sends plain.
    ngx_list_t headers;
    if (ngx_list_init(&headers, r->pool, 20, sizeof(ngx_table_elt_t)) != NGX_OK) {
        return false;
    }
    for (ngx_list_part_t *part = &r->headers_in.headers.part; part; part = part->next) {
        auto *h = static_cast<ngx_table_elt_t *>(part->elts);
        for (ngx_uint_t i = 0; i < part->nelts; ++i) {
            if (h[i].key.len == 15 && ngx_strncasecmp(h[i].key.data, reinterpret_cast<u_char *>(const_cast<char *>("accept-encoding")), 15) == 0) {
                continue;
            }
            auto *copy = static_cast<ngx_table_elt_t *>(ngx_list_push(&headers));
            if (!copy) {
                return false;
            }
            *copy = h[i];
        }
    }
    r->headers_in.headers = headers;
    if (headers.last == &headers.part) {  // the list's tail pointed into the local copy
        r->headers_in.headers.last = &r->headers_in.headers.part;
    }
    return true;
}

ngx_int_t jump_after_body(ngx_http_request_t *r, Ctx *ctx) {
    if (!has_json_body(r)) {
        return jump(r, ctx);
    }
    ngx_int_t rc = ngx_http_read_client_request_body(r, body_read);
    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }
    return NGX_DONE;
}

ngx_int_t install_body_filter(ngx_conf_t *) {
    next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = header_filter;
    next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = body_filter;
    return NGX_OK;
}

// A worker that migrates bodies (version changes) keeps the heap it freed. Each migrated answer
// allocates and frees blocks as large as itself (the held answer, the migrated one; the engine's
// tree is kept from one body to the next); glibc gives the freed top of the heap back to the
// system once it exceeds 128 KiB, so every such answer faulted the same pages in again (a quarter
// of the worker's time with the engine that built a tree of small blocks per body, perf,
// 2026-11-29), and a block of 128 KiB or more (api_versions_body_max is 1 MiB by default) was an
// mmap and munmap of its own. Up to 4 MiB a block now comes from the heap, and up to 16 MiB of
// freed heap stays with the worker.
ngx_int_t init_process(ngx_cycle_t *cycle) {
#ifdef __GLIBC__
    auto *mcf = static_cast<ngx_http_api_versions_main_conf_t *>(
        ngx_http_cycle_get_module_main_conf(cycle, ngx_http_api_versions_module));
    if (mcf != nullptr && mcf->state && mcf->state->migrator) {
        if (mallopt(M_MMAP_THRESHOLD, 4 * 1024 * 1024) != 1 || mallopt(M_TRIM_THRESHOLD, 16 * 1024 * 1024) != 1) {
            ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0, "api_versions: could not keep the heap the version changes free");
        }
    }
#else
    (void)cycle;
#endif
    return NGX_OK;
}

}  // namespace apiv
