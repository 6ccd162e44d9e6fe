// The header filter of the version group (Vary, Deprecation, Sunset and, with api_versions_report,
// api-supported-versions and api-deprecated-versions)
// and the variables $api_version and $api_controller_version.
#include "ngx_signin_nginx.h"

#include <string>

#include "api_versions_glue.h"

using signin_ngx::sv;

namespace apiv {

namespace {

using MainConf = ngx_http_api_versions_main_conf_t;
using Ctx = ngx_http_api_versions_ctx_t;

ngx_http_output_header_filter_pt next_header_filter;

bool iequal(std::string_view a, std::string_view b) {
    return a.size() == b.size() &&
           ngx_strncasecmp(reinterpret_cast<u_char *>(const_cast<char *>(a.data())),
                           reinterpret_cast<u_char *>(const_cast<char *>(b.data())), a.size()) == 0;
}

ngx_table_elt_t *find_header(ngx_http_request_t *r, std::string_view name) {
    for (ngx_list_part_t *part = &r->headers_out.headers.part; part; part = part->next) {
        auto *h = static_cast<ngx_table_elt_t *>(part->elts);
        for (ngx_uint_t i = 0; i < part->nelts; ++i) {
            if (h[i].hash != 0 && iequal(sv(h[i].key), name)) {
                return &h[i];
            }
        }
    }
    return nullptr;
}

// Sets a response header the group owns (replacing what an upstream sent under that name).
bool set_header(ngx_http_request_t *r, std::string_view name, std::string_view value) {
    ngx_table_elt_t *h = find_header(r, name);
    if (!h) {
        h = static_cast<ngx_table_elt_t *>(ngx_list_push(&r->headers_out.headers));
        if (!h) {
            return false;
        }
        h->hash = 1;
        h->key = signin_ngx::ngx_view(name);
        h->lowcase_key = nullptr;
    }
    h->value = signin_ngx::ngx_view(value);  // configuration memory
    return true;
}

// Sets a header to a copy of `value` in the request's pool; nothing when `value` is empty.
bool set_copied_header(ngx_http_request_t *r, std::string_view name, std::string_view value) {
    if (value.empty()) {
        return true;
    }
    ngx_str_t copy = signin_ngx::pool_copy(r->pool, value);
    return copy.data && set_header(r, name, sv(copy));
}

// Does a Vary field value already name `token` (or "*")?
bool vary_has(std::string_view value, std::string_view token) {
    while (!value.empty()) {
        std::size_t comma = value.find(',');
        std::string_view item = value.substr(0, comma);
        value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
        while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
        while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
        if (item == "*" || iequal(item, token)) {
            return true;
        }
    }
    return false;
}

// Adds the token to the response's Vary, appended to what is there, never twice.
bool add_vary(ngx_http_request_t *r, std::string_view token) {
    ngx_table_elt_t *first = nullptr;
    for (ngx_list_part_t *part = &r->headers_out.headers.part; part; part = part->next) {
        auto *h = static_cast<ngx_table_elt_t *>(part->elts);
        for (ngx_uint_t i = 0; i < part->nelts; ++i) {
            if (h[i].hash == 0 || !iequal(sv(h[i].key), "vary")) {
                continue;
            }
            if (vary_has(sv(h[i].value), token)) {
                return true;
            }
            if (!first) {
                first = &h[i];
            }
        }
    }
    if (!first || first->value.len == 0) {
        return set_header(r, "Vary", token);
    }
    std::string joined(sv(first->value));
    joined += ", ";
    joined += token;
    ngx_str_t v = signin_ngx::pool_copy(r->pool, joined);
    if (!v.data) {
        return false;
    }
    first->value = v;
    return true;
}

// The group's report at this moment, computed again only once one of its dates has passed.
const signin::version::Report &current_report(State &s) {
    const auto now = static_cast<std::int64_t>(ngx_time());
    if (!s.report_ready || now >= s.report.until) {
        s.report = s.group.report(now);
        s.report_ready = true;
    }
    return s.report;
}

ngx_int_t header_filter(ngx_http_request_t *r) {
    auto *mcf = static_cast<MainConf *>(ngx_http_get_module_main_conf(r, ngx_http_api_versions_module));
    if (!mcf->state || r != r->main) {
        return next_header_filter(r);
    }
    Ctx *ctx = find_ctx(r);
    if (!ctx) {
        return next_header_filter(r);
    }
    const bool headers_set = signin_ngx::guard(
        [&] {
            State &s = *mcf->state;
            bool ok = true;
            if (mcf->vary.len) {
                ok = add_vary(r, sv(mcf->vary));
            }
            if (ctx->pin_vary) {  // the caller's credentials chose the version: one header when none is there
                ok = ok && (find_header(r, "Vary") == nullptr ? set_header(r, "Vary", "Cookie, Authorization")
                                                              : add_vary(r, "Cookie") && add_vary(r, "Authorization"));
            }
            if (ctx->report) {
                // copied: a held header (the body filter's) may go out after the report changed
                const signin::version::Report &report = current_report(s);
                ok = ok && set_copied_header(r, "api-supported-versions", report.supported);
                ok = ok && set_copied_header(r, "api-deprecated-versions", report.deprecated);
            }
            if (ctx->version_index != signin::version::npos) {
                const std::string &dep = s.deprecation[ctx->version_index];
                const std::string &sunset = s.sunset[ctx->version_index];
                ok = ok && (dep.empty() || set_header(r, "Deprecation", dep));
                ok = ok && (sunset.empty() || set_header(r, "Sunset", sunset));
            }
            return ok;
        },
        [r](const std::exception *e) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "api_versions header filter: %s",
                          e ? e->what() : "unexpected error");
            return false;
        });
    if (!headers_set) {
        return NGX_ERROR;
    }
    return next_header_filter(r);
}

// $api_body_invalid: which body to migrate was not JSON (and passed unchanged).
ngx_str_t invalid_bodies(const Ctx &ctx) {
    if (ctx.invalid_request && ctx.invalid_response) return signin_ngx::ngx_view("request,response");
    if (ctx.invalid_request) return signin_ngx::ngx_view("request");
    if (ctx.invalid_response) return signin_ngx::ngx_view("response");
    return ngx_str_t{0, nullptr};
}

// $api_version (data 0), $api_controller_version (data 1) and $api_body_invalid (data 2).
// Subrequests see their main request's values, so auth_request and SSI locations can use them too.
ngx_int_t variable(ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data) {
    Ctx *ctx = find_ctx(r);
    if (!ctx && r != r->main) {
        ctx = find_ctx(r->main);
    }
    ngx_str_t value = ngx_null_string;
    if (ctx) {
        value = data == 0 ? ctx->version : data == 1 ? ctx->controller_version : invalid_bodies(*ctx);
    }
    v->len = static_cast<unsigned>(value.len) & 0x0fffffffu;  // len is a 28-bit field
    v->data = value.len ? value.data : reinterpret_cast<u_char *>(const_cast<char *>(""));
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    return NGX_OK;
}

}  // namespace

ngx_int_t install_filter(ngx_conf_t *) {
    next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = header_filter;
    return NGX_OK;
}

ngx_int_t add_variables(ngx_conf_t *cf) {
    static ngx_str_t names[] = {ngx_string("api_version"), ngx_string("api_controller_version"),
                                ngx_string("api_body_invalid")};
    for (uintptr_t i = 0; i < 3; ++i) {
        ngx_http_variable_t *var = ngx_http_add_variable(cf, &names[i], NGX_HTTP_VAR_NOCACHEABLE);
        if (!var) {
            return NGX_ERROR;
        }
        var->get_handler = variable;
        var->data = i;
    }
    return NGX_OK;
}

}  // namespace apiv
