// The sign-in module's variables: $signin_user_id, $signin_user_email, $signin_session_id,
// $signin_user_roles, $signin_assertion, $signin_delivery_json, $signin_mfa, $signin_provider_url.
#include "signin_conf.h"
#include "signin_request.h"

#include <string>

namespace signin_ngx {

enum VarField : uintptr_t {
    VarUserId,
    VarUserEmail,
    VarSessionId,
    VarDeliveryJson,
    VarUserRoles,
    VarAssertion,
    VarMfa,
    VarProviderUrl
};

// $signin_assertion: made once per request, for the audience of the location: its
// signin_assertion_audience, else the host of signin_origin. Never the request's Host header:
// that is the client's word, and an assertion made for the host a client names would be
// accepted by whichever upstream that host is.
static const std::string *assertion_of(ngx_http_request_t *r, RequestCtx *ctx) {
    if (!ctx->principal) return nullptr;
    if (!ctx->assertion.empty()) return &ctx->assertion;
    MainConf *m = main_conf(r);
    signin::Identity *engine = identity();
    if (m->assertions == nullptr || engine == nullptr) return nullptr;
    std::string aud;
    LocConf *l = loc_conf(r);
    if (l->assertion_audience) {
        ngx_str_t v;
        if (ngx_http_complex_value(r, l->assertion_audience, &v) != NGX_OK) return nullptr;
        aud.assign(reinterpret_cast<const char *>(v.data), v.len);
    } else {
        aud = signin::origin_host(engine->origin().text);
    }
    ctx->assertion = m->assertions->sign(ctx->principal->user, engine->origin().text, aud, engine->now(),
                                         ctx->principal->session.mfa);
    return &ctx->assertion;
}

// $signin_user_roles: the roles, sorted, comma-separated (in the request's pool).
static ngx_int_t roles_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v, const signin::User &u) {
    size_t len = 0;
    for (const auto &role : u.roles) len += role.size() + 1;
    auto *p = static_cast<u_char *>(ngx_pnalloc(r->pool, len ? len : 1));
    if (p == nullptr) return NGX_ERROR;
    u_char *q = p;
    for (const auto &role : u.roles) {
        if (q != p) *q++ = ',';
        q = ngx_cpymem(q, role.data(), role.size());
    }
    v->data = p;
    v->len = static_cast<unsigned>(q - p) & 0x0fffffffu;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    return NGX_OK;
}

static ngx_int_t variable_value(ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data) {
    v->not_found = 1;
    RequestCtx *ctx = get_ctx(r, false);
    if (ctx == nullptr) return NGX_OK;
    const std::string *s = nullptr;
    switch (data) {
    case VarUserId: s = ctx->principal ? &ctx->principal->user.id : nullptr; break;
    case VarUserEmail: s = ctx->principal ? &ctx->principal->user.email : nullptr; break;
    case VarSessionId: s = ctx->principal ? &ctx->principal->session.id : nullptr; break;
    case VarDeliveryJson: s = ctx->delivery_json.empty() ? nullptr : &ctx->delivery_json; break;
    case VarProviderUrl: s = ctx->provider_url.empty() ? nullptr : &ctx->provider_url; break;
    case VarUserRoles: return ctx->principal ? roles_variable(r, v, ctx->principal->user) : NGX_OK;
    case VarMfa: {  // "1": the session passed a second factor; "0": signed in without one
        if (!ctx->principal) return NGX_OK;
        static const std::string one("1"), zero("0");
        s = ctx->principal->session.mfa ? &one : &zero;
        break;
    }
    case VarAssertion: s = assertion_of(r, ctx); break;
    default: break;
    }
    if (s == nullptr) return NGX_OK;
    v->data = reinterpret_cast<u_char *>(const_cast<char *>(s->data()));
    v->len = static_cast<unsigned>(s->size()) & 0x0fffffffu;  // len is a 28-bit field
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    return NGX_OK;
}

static ngx_int_t get_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data) {
    return guard_log(r->connection->log, NGX_LOG_ERR, "signin: a variable", ngx_int_t{NGX_ERROR},
                     [&] { return variable_value(r, v, data); });
}

static ngx_http_variable_t variables[] = {
    {ngx_string("signin_user_id"), nullptr, get_variable, VarUserId, NGX_HTTP_VAR_NOCACHEABLE, 0},
    {ngx_string("signin_user_email"), nullptr, get_variable, VarUserEmail, NGX_HTTP_VAR_NOCACHEABLE, 0},
    {ngx_string("signin_session_id"), nullptr, get_variable, VarSessionId, NGX_HTTP_VAR_NOCACHEABLE, 0},
    {ngx_string("signin_user_roles"), nullptr, get_variable, VarUserRoles, NGX_HTTP_VAR_NOCACHEABLE, 0},
    {ngx_string("signin_assertion"), nullptr, get_variable, VarAssertion, NGX_HTTP_VAR_NOCACHEABLE, 0},
    {ngx_string("signin_delivery_json"), nullptr, get_variable, VarDeliveryJson, NGX_HTTP_VAR_NOCACHEABLE, 0},
    {ngx_string("signin_mfa"), nullptr, get_variable, VarMfa, NGX_HTTP_VAR_NOCACHEABLE, 0},
    {ngx_string("signin_provider_url"), nullptr, get_variable, VarProviderUrl, NGX_HTTP_VAR_NOCACHEABLE, 0},
    {ngx_null_string, nullptr, nullptr, 0, 0, 0}};

ngx_int_t add_variables(ngx_conf_t *cf) {
    for (ngx_http_variable_t *v = variables; v->name.len; v++) {
        ngx_http_variable_t *var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == nullptr) return NGX_ERROR;
        var->get_handler = v->get_handler;
        var->data = v->data;
    }
    return NGX_OK;
}

}  // namespace signin_ngx
