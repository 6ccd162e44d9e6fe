// The module as an OpenID provider: each signin_oidc_client, read and checked as it is written (a
// confidential client's secret read by the master and kept only as its digest), and each
// signin_oidc_signing_key_file, the private keys its ID tokens are signed with; what nginx -t
// checks of them once the http block is read.
#include "signin_conf.h"
#include "signin_directives.h"

#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "signin/oidc_provider.hpp"

namespace signin_ngx {

namespace op = signin::op;

// A file's whole text (nullopt: it cannot be read). The caller wipes it once used.
static std::optional<std::string> read_whole(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    if (in) text << in.rdbuf();
    if (!in) return std::nullopt;
    return text.str();
}

// `path` made absolute as nginx makes a relative path of its configuration ("" on failure).
static std::string full_path(ngx_conf_t *cf, std::string_view path) {
    ngx_str_t name;
    name.len = path.size();
    name.data = static_cast<u_char *>(ngx_pnalloc(cf->pool, path.size()));
    if (name.data == nullptr) return {};
    ngx_memcpy(name.data, path.data(), path.size());
    if (ngx_conf_full_name(cf->cycle, &name, 1) != NGX_OK) return {};
    return std::string(sv(name));
}

// signin_oidc_client NAME redirect_uri=URL ... (secret_file=PATH | public) [consent=on|off] ...
static char *set_oidc_client_checked(ngx_conf_t *cf, MainConf *m) {
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    std::vector<std::string> words;
    for (ngx_uint_t i = 1; i < cf->args->nelts; i++) words.emplace_back(sv(value[i]));
    auto client = op::parse_client(words);
    if (!client) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_oidc_client \"%V\": %s", &value[1],
                           client.error().message.c_str());
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (!client->is_public) {
        const std::string path = full_path(cf, client->secret_file);
        if (path.empty()) return static_cast<char *>(NGX_CONF_ERROR);
        auto text = read_whole(path);
        if (!text) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno, "signin_oidc_client \"%V\": cannot read \"%s\"", &value[1],
                               path.c_str());
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        auto set = op::set_secret(*client, *text);
        ngx_explicit_memzero(text->data(), text->size());
        if (!set) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_oidc_client \"%V\": %s", &value[1],
                               set.error().message.c_str());
            return static_cast<char *>(NGX_CONF_ERROR);
        }
    }
    if (m->oidc_clients == nullptr) {
        m->oidc_clients = pool_object<op::Clients>(cf->pool);
        if (m->oidc_clients == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (!m->oidc_clients->add(std::move(*client))) return const_cast<char *>("is duplicate");
    return NGX_CONF_OK;
}

static char *set_oidc_client(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    return guard_conf(cf, "signin_oidc_client", [&]() -> char * {
        return set_oidc_client_checked(cf, static_cast<MainConf *>(conf));
    });
}

// signin_oidc_signing_key_file PATH: a PEM private key, read by the master. The first file of an
// algorithm signs; the others are only published, until tokens they signed have expired.
static char *set_signing_key_checked(ngx_conf_t *cf, MainConf *m) {
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    const std::string path = full_path(cf, sv(value[1]));
    if (path.empty()) return static_cast<char *>(NGX_CONF_ERROR);
    auto text = read_whole(path);
    if (!text) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno, "signin_oidc_signing_key_file: cannot read \"%s\"",
                           path.c_str());
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    auto key = op::SigningKey::from_pem(*text);
    ngx_explicit_memzero(text->data(), text->size());
    if (!key) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_oidc_signing_key_file \"%s\": %s", path.c_str(),
                           key.error().message.c_str());
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (m->oidc_keys == nullptr) {
        m->oidc_keys = pool_object<op::KeyRing>(cf->pool);
        if (m->oidc_keys == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (m->oidc_keys->find(key->kid()) != nullptr) return const_cast<char *>("is duplicate");
    m->oidc_keys->add(std::make_shared<const op::SigningKey>(std::move(key).value()));
    return NGX_CONF_OK;
}

static char *set_signing_key(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    return guard_conf(cf, "signin_oidc_signing_key_file", [&]() -> char * {
        return set_signing_key_checked(cf, static_cast<MainConf *>(conf));
    });
}

Directives oidc_directives() {
    static ngx_command_t table[] = {
        {ngx_string("signin_oidc_client"), NGX_HTTP_MAIN_CONF | NGX_CONF_2MORE, set_oidc_client,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_oidc_signing_key_file"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, set_signing_key,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_oidc_code_ttl"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_conf_set_msec_slot,
         NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, oidc_code_ttl), nullptr},
    };
    return table;
}

// Every client's algorithm has a key to sign with; a code lives between a second and ten minutes.
char *check_oidc(ngx_conf_t *cf, MainConf *m) {
    if (m->oidc_code_ttl != NGX_CONF_UNSET_MSEC && (m->oidc_code_ttl < 1000 || m->oidc_code_ttl > 600000)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "signin_oidc_code_ttl must be between 1s and 10m (RFC 6749: a code lives ten minutes at most)");
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (m->oidc_clients == nullptr) return NGX_CONF_OK;
    if (m->oidc_keys == nullptr) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "signin_oidc_client needs a key to sign ID tokens with: add signin_oidc_signing_key_file "
                           "(a PEM private key, e.g. made by \"openssl genpkey -algorithm RSA -out FILE\")");
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    const std::string why = op::check_keys(*m->oidc_clients, *m->oidc_keys);
    if (!why.empty()) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s", why.c_str());
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    return NGX_CONF_OK;
}

}  // namespace signin_ngx
