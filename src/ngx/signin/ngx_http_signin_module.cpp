// ngx_http_signin_module: the module's definition, its configuration's hooks and its process hooks.
// The directives are by feature in conf_*.cpp (signin_directives.h); the engine is the core
// (include/signin); this file only joins and translates.
#include "signin_conf.h"
#include "signin_directives.h"
#include "signin_metrics.h"
#include "signin_delivery.h"
#include "signin_events.h"
#include "signin_handlers.h"
#include "signin_providers.h"
#include "signin_registration.h"
#include "signin_request.h"

#include <unistd.h>

#include <new>
#include <vector>

using namespace signin_ngx;

static void *make_main_conf(ngx_conf_t *cf);
static char *init_main_conf(ngx_conf_t *cf, void *conf);
static ngx_int_t postconfiguration(ngx_conf_t *cf);
static ngx_int_t init_module(ngx_cycle_t *cycle);

// The module's directives: every feature's table (signin_directives.h), in one array that ends as
// nginx expects. Made once, when the module is loaded, before nginx reads any directive.
static ngx_command_t *all_directives() {
    static std::vector<ngx_command_t> *all = [] {
        auto *v = new std::vector<ngx_command_t>();
        for (Directives feature : {site_directives(), delivery_directives(), language_directives(), session_directives(),
                                   password_directives(), factor_directives(), passkey_directives(),
                                   admin_directives(), provider_directives(), oidc_directives(), location_directives(),
                                   event_directives()}) {
            v->insert(v->end(), feature.begin(), feature.end());
        }
        v->push_back(ngx_null_command);
        return v;  // never freed: nginx reads it for as long as the module is loaded
    }();
    return all->data();
}

static ngx_http_module_t module_ctx = {
    add_variables, postconfiguration, make_main_conf, init_main_conf, nullptr, nullptr, create_loc_conf,
    merge_loc_conf};

// A worker's start and end (signin_worker.cpp), behind the glue's one catch.
static ngx_int_t init_process(ngx_cycle_t *cycle) {
    return guard_log(cycle->log, NGX_LOG_EMERG, "signin: starting a worker", ngx_int_t{NGX_ERROR},
                     [cycle] { return init_worker(cycle); });
}

static void exit_process(ngx_cycle_t *cycle) {
    guard_log(cycle->log, NGX_LOG_ALERT, "signin: stopping a worker", [cycle] { exit_worker(cycle); });
}

extern "C" {
ngx_module_t ngx_http_signin_module = {NGX_MODULE_V1,
                                       &module_ctx,
                                       nullptr,  // all_directives(), set below
                                       NGX_HTTP_MODULE,
                                       nullptr,
                                       init_module,
                                       init_process,
                                       nullptr,
                                       nullptr,
                                       exit_process,
                                       nullptr,
                                       NGX_MODULE_V1_PADDING};
}

[[maybe_unused]] static const bool directives_set = (ngx_http_signin_module.commands = all_directives(), true);

// ---------------------------------------------------------------- configuration

static void *make_main_conf(ngx_conf_t *cf) {
    return guard([cf]() -> void * { return create_main_conf(cf); }, [](const std::exception *) -> void * { return nullptr; });
}

static char *init_main_conf(ngx_conf_t *cf, void *conf) {
    return guard_conf(cf, "the signin configuration", [&]() -> char * {
        return finish_main_conf(cf, static_cast<MainConf *>(conf));
    });
}

static ngx_int_t postconfiguration_checked(ngx_conf_t *cf) {
    auto *m = static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_signin_module));
    if (!m->used) return NGX_OK;
    auto *cmcf =
        static_cast<ngx_http_core_main_conf_t *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module));
    auto *h = static_cast<ngx_http_handler_pt *>(ngx_array_push(&cmcf->phases[NGX_HTTP_ACCESS_PHASE].handlers));
    if (h == nullptr) return NGX_ERROR;
    *h = require_handler;
    h = static_cast<ngx_http_handler_pt *>(ngx_array_push(&cmcf->phases[NGX_HTTP_PRECONTENT_PHASE].handlers));
    if (h == nullptr) return NGX_ERROR;
    *h = require_subrequest_handler;
    // {{link}}: {origin}{the signin_api location}/#token=..., the sign-in page when it has one
    if (m->origin && m->link_location.len) {
        std::string base = m->origin->text + std::string(sv(m->link_location));
        if (base.back() != '/') base += '/';
        m->emails->set_link_base(std::move(base));
    }
    if (check_provider_fetch(cf, m) != NGX_OK) return NGX_ERROR;
    if (find_events_server(cf, m) != NGX_OK) return NGX_ERROR;
    if (find_registration_check(cf, m) != NGX_OK) return NGX_ERROR;
    if (m->policy->with_email) return find_delivery_server(cf, m);
    return NGX_OK;
}

static ngx_int_t postconfiguration(ngx_conf_t *cf) {
    return guard_log(cf->log, NGX_LOG_EMERG, "signin: the configuration", ngx_int_t{NGX_ERROR},
                     [&] { return postconfiguration_checked(cf); });
}

// ---------------------------------------------------------------- processes

MainConf *signin_ngx::cycle_main_conf(ngx_cycle_t *cycle) {
    auto *hc = reinterpret_cast<ngx_http_conf_ctx_t *>(cycle->conf_ctx[ngx_http_module.index]);
    if (hc == nullptr) return nullptr;
    return static_cast<MainConf *>(hc->main_conf[ngx_http_signin_module.ctx_index]);
}

// In the master: the store readied for the workers (as nginx does for its temp paths, so that
// workers, not root, can open it: a store in a directory has it made and given to the worker
// user), and the secret key read or made.
static ngx_int_t init_module_checked(ngx_cycle_t *cycle) {
    MainConf *m = cycle_main_conf(cycle);
    if (m == nullptr || !m->used || m->store_path.len == 0) return NGX_OK;
    auto *ccf = reinterpret_cast<ngx_core_conf_t *>(ngx_get_conf(cycle->conf_ctx, ngx_core_module));
    const bool root = geteuid() == 0 && ccf && ccf->user != static_cast<ngx_uid_t>(NGX_CONF_UNSET_UINT);
    const bool prepared = guard(
        [&] {
            signin::prepare_store(sv(m->store_path), root ? std::optional<unsigned>(ccf->user) : std::nullopt);
            return true;
        },
        [&](const std::exception *e) {
            if (dynamic_cast<const signin::StoreError *>(e)) {
                ngx_log_error(NGX_LOG_EMERG, cycle->log, 0, "signin_store: %s", e->what());
            } else {
                ngx_log_error(NGX_LOG_EMERG, cycle->log, 0, "signin_store could not be prepared%s%s", e ? ": " : "",
                              e ? e->what() : "");
            }
            return false;
        });
    if (!prepared) return NGX_ERROR;
    // The secret key (never in the store): read, or made at the first start. Workers inherit it.
    std::string key_path(sv(m->secret_key_path));
    auto key = signin::load_key_file(key_path, true);
    if (!key) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0, "%s", key.error().message.c_str());
        return NGX_ERROR;
    }
    ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(cycle->pool, sizeof(signin::SecretKey));
    if (cln == nullptr) return NGX_ERROR;
    m->secret_key = new (cln->data) signin::SecretKey(key.value().key);
    cln->handler = [](void *p) { ngx_explicit_memzero(p, sizeof(signin::SecretKey)); };
    cln = ngx_pool_cleanup_add(cycle->pool, sizeof(signin::AssertionKeys));
    if (cln == nullptr) return NGX_ERROR;
    m->assertions = new (cln->data) signin::AssertionKeys(key.value().key, key.value().assertion_generation);
    cln->handler = [](void *p) { static_cast<signin::AssertionKeys *>(p)->~AssertionKeys(); };
    key.value().key.fill(0);

    if (root) {
        // the key too, so that signin-admin run as the worker user can seal an invitation
        if (chown(key_path.c_str(), ccf->user, static_cast<gid_t>(-1)) != 0) {
            ngx_log_error(NGX_LOG_EMERG, cycle->log, ngx_errno, "signin_secret_key: chown \"%s\" failed",
                          key_path.c_str());
            return NGX_ERROR;
        }
    }
    return NGX_OK;
}

static ngx_int_t init_module(ngx_cycle_t *cycle) {
    return guard(
        [&] { return init_module_checked(cycle); },
        [&](const std::exception *e) -> ngx_int_t {
            if (e) {
                ngx_log_error(NGX_LOG_EMERG, cycle->log, 0, "signin_store could not be prepared: %s", e->what());
            } else {
                ngx_log_error(NGX_LOG_EMERG, cycle->log, 0, "signin_store could not be prepared");
            }
            return NGX_ERROR;
        });
}
