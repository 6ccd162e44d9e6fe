// The module as an OpenID provider, its endpoints that need no sign-in page: the discovery
// document and the keys its ID tokens are signed with. The protocol itself is the core's
// (signin/oidc_provider.hpp). Both answer 404 unless some signin_oidc_client is configured.
#include "signin_api.h"
#include "signin_conf.h"
#include "signin_reply.h"
#include "signin_request.h"

#include <string>
#include <string_view>

namespace signin_ngx {

namespace {

// The issuer: the origin and the path of the signin_api location ("https://example.com/auth"),
// under which the discovery document names every endpoint.
std::string issuer(ngx_http_request_t *r) {
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_get_module_loc_conf(r, ngx_http_core_module));
    std::string_view path = sv(clcf->name);
    while (!path.empty() && path.back() == '/') path.remove_suffix(1);
    return main_conf(r)->origin->text + std::string(path);
}

bool provider_on(ngx_http_request_t *r) {
    const MainConf *m = main_conf(r);
    return m->oidc_clients != nullptr && m->oidc_clients->size() != 0 && m->oidc_keys != nullptr;
}

}  // namespace

ngx_int_t get_oidc_discovery(ApiCall &call) {
    if (!provider_on(call.r)) return send_error(call.r, signin::Code::NotFound, "not found");
    return send_json(call.r, 200, signin::op::discovery(issuer(call.r), *main_conf(call.r)->oidc_keys));
}

ngx_int_t get_oidc_jwks(ApiCall &call) {
    if (!provider_on(call.r)) return send_error(call.r, signin::Code::NotFound, "not found");
    return send_json(call.r, 200, main_conf(call.r)->oidc_keys->jwks());
}

}  // namespace signin_ngx
