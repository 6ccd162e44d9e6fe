// Identity providers (OpenID Connect): each signin_provider, read and checked as it is written (its
// secret read by the master), and the internal location their calls go through; what nginx -t
// checks of them once the http block is read, and once the servers are known.
#include "signin_conf.h"
#include "signin_directives.h"
#include "signin_providers.h"

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace signin_ngx {

// ---------------------------------------------------------------- directives

// signin_provider NAME issuer=URL client_id=ID client_secret_file=PATH [scope=...] [label=...]
// [trust_email=on] [client_auth=post|basic]: the secret is read now (a file only root may read is fine: the master reads
// it); nginx -t says what is wrong, naming file and line.
static char *set_provider_checked(ngx_conf_t *cf, MainConf *m) {
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    signin::oidc::ProviderConfig p;
    p.name = std::string(sv(value[1]));
    std::string secret_file;
    for (ngx_uint_t i = 2; i < cf->args->nelts; i++) {
        std::string_view arg = sv(value[i]);
        const auto eq = arg.find('=');
        std::string_view key = arg.substr(0, eq), val = eq == std::string_view::npos ? std::string_view() : arg.substr(eq + 1);
        if (eq == std::string_view::npos) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\"", &value[i]);
            return static_cast<char *>(NGX_CONF_ERROR);
        } else if (key == "issuer") {
            p.issuer = std::string(val);
        } else if (key == "client_id") {
            p.client_id = std::string(val);
        } else if (key == "client_secret_file") {
            ngx_str_t path = {val.size(), value[i].data + (eq + 1)};
            if (ngx_conf_full_name(cf->cycle, &path, 1) != NGX_OK) return static_cast<char *>(NGX_CONF_ERROR);
            secret_file = std::string(sv(path));
        } else if (key == "scope") {
            p.scope = std::string(val);
        } else if (key == "label") {
            p.label = std::string(val);
        } else if (key == "client_auth" && (val == "post" || val == "basic")) {
            p.client_auth = val == "post" ? signin::oidc::ProviderConfig::ClientAuth::Post
                                          : signin::oidc::ProviderConfig::ClientAuth::Basic;
        } else if (key == "trust_email" && (val == "on" || val == "off")) {
            p.trust_email = val == "on";
        } else {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\"", &value[i]);
            return static_cast<char *>(NGX_CONF_ERROR);
        }
    }
    if (secret_file.empty()) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_provider \"%V\" needs client_secret_file=", &value[1]);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    std::ifstream in(secret_file, std::ios::binary);
    std::stringstream text;
    if (in) text << in.rdbuf();
    if (!in) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno, "signin_provider \"%V\": cannot read \"%s\"", &value[1],
                           secret_file.c_str());
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    std::string all = text.str();
    if (auto s = signin::oidc::parse_client_secret(all)) p.client_secret = std::move(*s);
    ngx_explicit_memzero(all.data(), all.size());
    std::string why = signin::oidc::check_provider(p);
    if (!why.empty()) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_provider \"%V\": %s", &value[1], why.c_str());
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (m->providers == nullptr) {
        m->providers = pool_object<std::vector<signin::oidc::ProviderConfig>>(cf->pool);
        if (m->providers == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
    }
    for (const auto &other : *m->providers) {
        if (other.name == p.name) return const_cast<char *>("is duplicate");
    }
    m->providers->push_back(std::move(p));
    return NGX_CONF_OK;
}

static char *set_provider(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    return guard_conf(cf, "signin_provider", [&]() -> char * {
        return set_provider_checked(cf, static_cast<MainConf *>(conf));
    });
}

Directives provider_directives() {
    static ngx_command_t table[] = {
        {ngx_string("signin_provider"), NGX_HTTP_MAIN_CONF | NGX_CONF_2MORE, set_provider, NGX_HTTP_MAIN_CONF_OFFSET,
         0, nullptr},
        {ngx_string("signin_provider_fetch"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, noted<ngx_conf_set_str_slot>,
         NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, provider_fetch_uri), nullptr},
    };
    return table;
}

// ---------------------------------------------------------------- checks

char *check_providers(ngx_conf_t *cf, MainConf *m) {
    const std::size_t providers = m->providers != nullptr ? m->providers->size() : 0;
    const bool ok = report(cf, m, signin::conf::check_providers(providers, m->provider_fetch_uri.len != 0));
    return ok ? NGX_CONF_OK : static_cast<char *>(NGX_CONF_ERROR);
}

ngx_int_t check_provider_fetch(ngx_conf_t *cf, MainConf *m) {
    if (m->providers == nullptr || m->provider_fetch_uri.len == 0) return NGX_OK;
    if (ngx_http_core_loc_conf_t *loc = find_location(cf, m->provider_fetch_uri)) {
        if (!loc->internal) {
            ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                               "the signin_provider_fetch location \"%V\" is not \"internal\": add \"internal;\" to it",
                               &loc->name);
        }
        if (loc->subrequest_output_buffer_size < 64 * 1024) {
            ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                               "the signin_provider_fetch location \"%V\" keeps at most %uz bytes of an answer "
                               "(subrequest_output_buffer_size): a provider's discovery document or keys can be "
                               "larger; set \"subrequest_output_buffer_size 64k;\" in it",
                               &loc->name, loc->subrequest_output_buffer_size);
        }
        return NGX_OK;
    }
    std::string uri(sv(m->provider_fetch_uri));
    log_at(cf, NGX_LOG_EMERG, m, "signin_provider_fetch",
           "signin_provider_fetch \"" + uri + "\" matches no exact or prefix location in any server: add \"location = " +
               uri + " { internal; proxy_pass $signin_provider_url; }\" beside signin_api");
    return NGX_ERROR;
}

}  // namespace signin_ngx
