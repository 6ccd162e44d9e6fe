// The rewrite-phase handler of api_versions_route (resolve the version, find the route, rewrite
// $uri, jump to the controller's named location), JSON errors, and the OpenAPI content handler.
#include "ngx_signin_nginx.h"

#include <string>

#include "api_versions_glue.h"
#include "../signin/signin_caller.h"
#include "signin/version/openapi.hpp"

using signin::version::Decision;
using signin::version::npos;
using signin_ngx::sv;

namespace apiv {

namespace {

using MainConf = ngx_http_api_versions_main_conf_t;
using LocConf = ngx_http_api_versions_loc_conf_t;
using Ctx = ngx_http_api_versions_ctx_t;

// Marks the cleanup that holds a request's ctx; a finished request's ctx is never matched again.
void ctx_cleanup(void *data) {
    static_cast<Ctx *>(data)->request = nullptr;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// Calls f(value) for each request header named `lowercase`, until f returns true.
template <class F>
void each_header(ngx_http_request_t *r, ngx_str_t lowercase, F &&f) {
    for (ngx_list_part_t *part = &r->headers_in.headers.part; part; part = part->next) {
        auto *h = static_cast<ngx_table_elt_t *>(part->elts);
        for (ngx_uint_t i = 0; i < part->nelts; ++i) {
            if (h[i].key.len == lowercase.len &&
                ngx_strncasecmp(h[i].key.data, lowercase.data, lowercase.len) == 0 && f(sv(h[i].value))) {
                return;
            }
        }
    }
}

// api_versions_pin signin, for a request that named no version: its caller's pinned version
// answers instead of the default (a pin that names no version of the group any more: the
// default, said in the log at info). NGX_DONE while the store is read (the phase handlers run
// again then), else NGX_OK; `first` when the caller is signed in without a pin.
ngx_int_t apply_pin(ngx_http_request_t *r, const signin::version::Group &group, std::string_view method, Decision &d,
                    bool &first) {
    signin_ngx::CallerPin pin = signin_ngx::caller_api_version(r);
    switch (pin.state) {
    case signin_ngx::CallerPin::Reading:
        return NGX_DONE;
    case signin_ngx::CallerPin::Stranger:
        break;
    case signin_ngx::CallerPin::Unpinned:
        first = true;
        break;
    case signin_ngx::CallerPin::Pinned: {
        std::size_t v = group.find(pin.version);
        if (v == npos) {
            ngx_str_t name = signin_ngx::ngx_view(pin.version);
            ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                          "api_versions_pin: the account's version \"%V\" is not declared any more: answered in "
                          "the default version",
                          &name);
            break;
        }
        d = group.decide_as(method, d, v);
        break;
    }
    }
    return NGX_OK;
}

// The rewrite-phase routing: which version the request asked for (by the group's strategy), the
// route that answers it, and the rewrite or named-location jump to its controller. Kept in one
// piece (about 100 lines) because each step's answer decides the error of the next one.
ngx_int_t route(ngx_http_request_t *r) {
    auto *lcf = static_cast<LocConf *>(ngx_http_get_module_loc_conf(r, ngx_http_api_versions_module));
    if (!lcf->route) {
        return NGX_DECLINED;
    }
    auto *mcf = static_cast<MainConf *>(ngx_http_get_module_main_conf(r, ngx_http_api_versions_module));
    if (!mcf->state) {
        return NGX_DECLINED;
    }
    const auto &group = mcf->state->group;
    Ctx *ctx = find_ctx(r);
    if (!ctx) {
        ctx = create_ctx(r);
        if (!ctx) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }
    ctx->version_index = npos;
    ctx->version.len = 0;
    ctx->controller_version.len = 0;
    ctx->controller.len = 0;
    ctx->changed_route = nullptr;
    ctx->report = lcf->report ? 1 : 0;
    ctx->pin_vary = 0;
    ctx->invalid_request = 0;
    ctx->invalid_response = 0;

    std::string_view uri = sv(r->uri);
    std::string_view mount = sv(lcf->mount);
    if (uri.substr(0, mount.size()) != mount || (uri.size() > mount.size() && uri[mount.size()] != '/')) {
        return send_error(r, NGX_HTTP_NOT_FOUND, "not found", "not_found");
    }
    std::string_view path = uri.substr(mount.size());
    std::string_view method = sv(r->method_name);

    Decision d;
    switch (mcf->strategy) {
    case StrategyKind::Path:
        d = group.decide_path(method, path);
        break;
    case StrategyKind::Header: {
        std::string_view value;
        each_header(r, mcf->header, [&](std::string_view v) {
            value = trim(v);
            return true;
        });
        d = group.decide(method, path, value);
        break;
    }
    case StrategyKind::Accept: {
        std::string_view value;
        each_header(r, signin_ngx::ngx_view("accept"), [&](std::string_view v) {
            value = signin::version::accept_version(v, sv(mcf->vendor));
            return !value.empty();
        });
        d = group.decide(method, path, value);
        break;
    }
    case StrategyKind::Custom: {
        ngx_str_t value;
        if (ngx_http_complex_value(r, mcf->custom, &value) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        d = group.decide(method, path, trim(sv(value)));
        break;
    }
    }

    bool pin_first = false;
    if (lcf->pin && d.unnamed) {
        if (apply_pin(r, group, method, d, pin_first) == NGX_DONE) {
            return NGX_DONE;
        }
        ctx->pin_vary = 1;
    }

    if (d.version != npos) {
        ctx->version_index = d.version;
        ctx->version = signin_ngx::ngx_view(group.versions()[d.version].name);
        if (group.retired(d.version, static_cast<std::int64_t>(ngx_time()))) {
            return send_error(r, 410 /* Gone */, group.retired_message(d.version), "version_retired");
        }
    }

    switch (d.kind) {
    case Decision::Kind::Route:
        break;
    case Decision::Kind::MethodNotAllowed:
        return send_error(r, NGX_HTTP_NOT_ALLOWED, "method not allowed", "method_not_allowed", d.allow);
    case Decision::Kind::NotFound:
        return send_error(r, NGX_HTTP_NOT_FOUND, "not found", "not_found");
    case Decision::Kind::MissingVersion:
        return send_error(r, NGX_HTTP_BAD_REQUEST, "missing API version", "missing_api_version");
    case Decision::Kind::UnknownVersion:
        return send_error(r, NGX_HTTP_BAD_REQUEST, "unknown API version " + std::string(d.requested),
                          "unknown_api_version");
    }

    ctx->controller_version = signin_ngx::ngx_view(group.versions()[d.endpoint->answered_by].name);

    if (d.strip_len) {
        // the controller sees the path without the version segment; $request_uri keeps it
        ngx_str_t u;
        u.len = mount.size() + d.route_path.size();
        u.data = static_cast<u_char *>(ngx_pnalloc(r->pool, u.len));
        if (!u.data) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        ngx_memcpy(ngx_cpymem(u.data, mount.data(), mount.size()), d.route_path.data(), d.route_path.size());
        r->uri = u;
        r->valid_unparsed_uri = 0;
        ngx_http_set_exten(r);
    }

    // Bodies are migrated only when a change lies between the client's version and the upstream's
    // for this route; then the upstream is asked for a plain body, one this module can read.
    const State &s = *mcf->state;
    if (s.migrator && s.upstream_version != npos && d.version != npos &&
        s.migrator->applies(d.version, s.upstream_version, method, s.shapes.at(d.endpoint->route))) {
        ctx->changed_route = d.endpoint->route;
        if (!drop_accept_encoding(r)) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    if (pin_first && d.version != npos) {  // a signed-in caller's first versioned request
        signin_ngx::pin_caller_api_version(r, group.versions()[d.version].name);
    }

    // The version is resolved here, in the rewrite phase; the jump to the controller waits for
    // this location's content phase, so that its access phase (allow/deny, auth_basic,
    // auth_request, signin_require) and its limit_req run first, as for any location.
    ctx->controller = signin_ngx::ngx_view(d.endpoint->route->controller);
    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0, "api_versions: %V answered by %V at %V",
                   &ctx->version, &ctx->controller_version, &ctx->controller);
    return NGX_DECLINED;
}

// The content handler of an api_versions_route location: the jump to the decided controller.
ngx_int_t route_content(ngx_http_request_t *r) {
    ngx_http_api_versions_ctx_t *ctx = find_ctx(r);
    if (ctx == nullptr || ctx->controller.len == 0) {
        if (ngx_http_discard_request_body(r) != NGX_OK) return NGX_HTTP_INTERNAL_SERVER_ERROR;
        return send_error(r, NGX_HTTP_NOT_FOUND, "not found", "not_found");
    }
    if (ctx->changed_route) {
        return jump_after_body(r, ctx);
    }
    ngx_str_t controller = ctx->controller;
    // ngx_http_named_location() takes a reference on the request (r->main->count++) and runs the
    // controller's phases; its NGX_DONE, finalized by the content phase, gives that reference back
    return ngx_http_named_location(r, &controller);
}

// Sends a document the configuration owns (it outlives the request).
ngx_int_t send_document(ngx_http_request_t *r, std::string_view type, const std::string &doc) {
    ngx_int_t rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }
    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_type = signin_ngx::ngx_view(type);
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = nullptr;
    r->headers_out.content_length_n = static_cast<off_t>(doc.size());
    rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }
    ngx_buf_t *b = static_cast<ngx_buf_t *>(ngx_calloc_buf(r->pool));
    if (!b) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    b->pos = reinterpret_cast<u_char *>(const_cast<char *>(doc.data()));
    b->last = b->pos + doc.size();
    b->memory = 1;
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;
    ngx_chain_t out{b, nullptr};
    return ngx_http_output_filter(r, &out);
}

// GET .../changes: the version changes as JSON, or as Markdown with ?format=markdown.
ngx_int_t changes_listing(ngx_http_request_t *r, State &s) {
    ngx_str_t arg;
    bool markdown = ngx_http_arg(r, const_cast<u_char *>(reinterpret_cast<const u_char *>("format")), 6, &arg) ==
                        NGX_OK &&
                    sv(arg) == "markdown";
    std::string &doc = markdown ? s.changes_markdown : s.changes_json;
    if (doc.empty()) {
        doc = markdown ? signin::version::changes_markdown(s.group, s.changes)
                       : signin::version::changes_json(s.group, s.changes);
    }
    return send_document(r, markdown ? "text/markdown; charset=utf-8" : "application/json", doc);
}

ngx_int_t openapi(ngx_http_request_t *r) {
    if (!(r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD))) {
        return send_error(r, NGX_HTTP_NOT_ALLOWED, "method not allowed", "method_not_allowed", "GET, HEAD");
    }
    auto *mcf = static_cast<MainConf *>(ngx_http_get_module_main_conf(r, ngx_http_api_versions_module));
    auto *lcf = static_cast<LocConf *>(ngx_http_get_module_loc_conf(r, ngx_http_api_versions_module));
    State &s = *mcf->state;
    constexpr std::string_view changes = "/changes";
    std::string_view uri = sv(r->uri);
    if (uri.size() >= changes.size() && uri.substr(uri.size() - changes.size()) == changes) {
        return changes_listing(r, s);
    }
    std::size_t v = s.group.default_version();
    ngx_str_t arg;
    if (ngx_http_arg(r, const_cast<u_char *>(reinterpret_cast<const u_char *>("version")), 7, &arg) == NGX_OK) {
        auto *buf = static_cast<u_char *>(ngx_pnalloc(r->pool, arg.len + 1));
        if (!buf) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        u_char *src = arg.data, *dst = buf;
        ngx_unescape_uri(&dst, &src, arg.len, NGX_UNESCAPE_URI);
        std::string_view name(reinterpret_cast<const char *>(buf), static_cast<std::size_t>(dst - buf));
        v = s.group.find(name);
        if (v == npos) {
            return send_error(r, NGX_HTTP_NOT_FOUND, "unknown API version " + std::string(name),
                              "unknown_api_version");
        }
    } else if (v == npos) {
        return send_error(r, NGX_HTTP_BAD_REQUEST, "missing API version", "missing_api_version");
    }
    std::string &doc = s.openapi[{lcf, v}];
    if (doc.empty()) {
        signin::version::OpenApiOptions o;
        o.mount = std::string(sv(lcf->openapi_mounted ? lcf->openapi_mount : mcf->first_mount));
        o.controllers = lcf->openapi_controllers == 1;
        doc = signin::version::openapi_document(s.group, v, sv(lcf->title), o);
        if (s.schema) {  // the upstream's bodies, in this version's own shape
            doc = s.schema->document(doc, s.group, v, s.upstream_version, s.changes, o.mount);
        }
    }
    return send_document(r, "application/json", doc);
}

}  // namespace

Ctx *find_ctx(ngx_http_request_t *r) {
    auto *ctx = static_cast<Ctx *>(ngx_http_get_module_ctx(r, ngx_http_api_versions_module));
    if (ctx) {
        return ctx;
    }
    // ngx_http_named_location() and error finalization clear r->ctx; the cleanup keeps it
    for (ngx_pool_cleanup_t *cln = r->pool->cleanup; cln; cln = cln->next) {
        if (cln->handler == ctx_cleanup && static_cast<Ctx *>(cln->data)->request == r) {
            ctx = static_cast<Ctx *>(cln->data);
            ngx_http_set_ctx(r, ctx, ngx_http_api_versions_module);
            return ctx;
        }
    }
    return nullptr;
}

Ctx *create_ctx(ngx_http_request_t *r) {
    ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(r->pool, sizeof(Ctx));
    if (!cln) {
        return nullptr;
    }
    auto *ctx = static_cast<Ctx *>(cln->data);
    ngx_memzero(ctx, sizeof(Ctx));
    ctx->request = r;
    ctx->version_index = npos;
    cln->handler = ctx_cleanup;
    ngx_http_set_ctx(r, ctx, ngx_http_api_versions_module);
    return ctx;
}

ngx_int_t send_error(ngx_http_request_t *r, ngx_uint_t status, std::string_view error, std::string_view code,
                     std::string_view allow) {
    ngx_int_t rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }
    if (!allow.empty() && !signin_ngx::add_header(r, "Allow", allow)) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    // JSON with cache-control: no-store, as every answer of the sign-in API
    return signin_ngx::send_json(r, status,
                                 "{\"error\":" + signin::version::json_quote(error) + ",\"code\":\"" +
                                     std::string(code) + "\"}");
}

ngx_int_t route_content_handler(ngx_http_request_t *r) {
    return signin_ngx::guard_request(r, "api_versions_route", [r] { return route_content(r); });
}

ngx_int_t rewrite_handler(ngx_http_request_t *r) {
    return signin_ngx::guard_request(r, "api_versions_route", [r] { return route(r); });
}

ngx_int_t openapi_handler(ngx_http_request_t *r) {
    return signin_ngx::guard_request(r, "api_versions_openapi", [r] { return openapi(r); });
}

}  // namespace apiv
