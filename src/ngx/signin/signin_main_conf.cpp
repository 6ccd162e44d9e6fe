// The sign-in module's http-level configuration: made with the engine's own defaults (the
// directives then write into the engine's settings), and once the block is read, the defaults of the
// glue's own settings and every feature's checks (conf_*.cpp), in the order a newcomer meets them.
#include "signin_conf.h"
#include "signin_directives.h"
#include "signin_events.h"

#include <string>

namespace signin_ngx {

MainConf *create_main_conf(ngx_conf_t *cf) {
    auto *m = static_cast<MainConf *>(ngx_pcalloc(cf->pool, sizeof(MainConf)));
    if (m == nullptr) return nullptr;
    m->store_size = NGX_CONF_UNSET_SIZE;
    m->store_connections = NGX_CONF_UNSET_SIZE;
    m->store_nodes = NGX_CONF_UNSET_SIZE;
    m->body_max = NGX_CONF_UNSET_SIZE;
    m->session_cache = NGX_CONF_UNSET_MSEC;
    m->oidc_code_ttl = NGX_CONF_UNSET_MSEC;
    m->audit_max = NGX_CONF_UNSET_UINT;
    m->events_retries = NGX_CONF_UNSET_UINT;
    m->admin = NGX_CONF_UNSET;
    m->events_types = static_cast<ngx_array_t *>(NGX_CONF_UNSET_PTR);
    m->policy = pool_object<signin::Policy>(cf->pool);
    m->outbox = pool_object<signin::OutboxSettings>(cf->pool);
    m->emails = pool_object<signin::Emails>(cf->pool);
    m->texts = pool_object<Texts>(cf->pool);
    if (m->policy == nullptr || m->outbox == nullptr || m->emails == nullptr || m->texts == nullptr) return nullptr;
    return m;
}

bool note_line(ngx_conf_t *cf, MainConf *m, const ngx_command_t *cmd) {
    if (m->written == nullptr) {
        m->written = ngx_array_create(cf->pool, 8, sizeof(DirectiveAt));
        if (m->written == nullptr) return false;
    }
    auto *at = static_cast<DirectiveAt *>(ngx_array_push(m->written));
    if (at == nullptr) return false;
    at->name = cmd->name;
    at->file = cf->conf_file->file.name.data;
    at->line = cf->conf_file->line;
    return true;
}

// The last place `directive` was written, or nullptr.
static const DirectiveAt *written_at(const MainConf *m, std::string_view directive) {
    const DirectiveAt *found = nullptr;
    auto *at = m->written ? static_cast<const DirectiveAt *>(m->written->elts) : nullptr;
    for (ngx_uint_t i = 0; at && i < m->written->nelts; i++) {
        if (sv(at[i].name) == directive) found = &at[i];
    }
    return found;
}

bool written(const MainConf *m, std::string_view name) { return written_at(m, name) != nullptr; }

void log_at(ngx_conf_t *cf, ngx_uint_t level, const MainConf *m, std::string_view directive,
            const std::string &message) {
    const DirectiveAt *found = written_at(m, directive);
    if (found == nullptr) {
        ngx_conf_log_error(level, cf, 0, "%s", message.c_str());
        return;
    }
    ngx_log_error(level, cf->log, 0, "%s in %s:%ui", message.c_str(), found->file, found->line);
}

bool report(ngx_conf_t *cf, const MainConf *m, const signin::conf::Problems &problems) {
    for (const signin::conf::Problem &p : problems) {
        log_at(cf, p.warning ? NGX_LOG_WARN : NGX_LOG_EMERG, m, p.directive, p.message);
    }
    return !signin::conf::has_error(problems);
}

char *finish_main_conf(ngx_conf_t *cf, MainConf *m) {
    ngx_conf_init_size_value(m->store_size, 1024 * 1024 * 1024);
    ngx_conf_init_size_value(m->store_connections, signin::kDefaultPgConnections);  // a database's
    ngx_conf_init_size_value(m->store_nodes, 1);
    ngx_conf_init_size_value(m->body_max, 4096);
    ngx_conf_init_msec_value(m->session_cache, 0);
    ngx_conf_init_msec_value(m->oidc_code_ttl, static_cast<ngx_msec_t>(signin::op::kCodeTtl));
    ngx_conf_init_uint_value(m->audit_max, 0);  // 0: the store's own bound, by its size
    ngx_conf_init_value(m->admin, 0);
    if (m->admin_role.len == 0) {
        ngx_str_set(&m->admin_role, "admin");
    }
    if (m->thread_pool_name.len == 0) {
        ngx_str_set(&m->thread_pool_name, "default");
    }
    m->emails->set_token_ttl(m->policy->token_ttl);
    if (char *rv = check_languages(cf, m); rv != NGX_CONF_OK) return rv;
    if (char *rv = check_mail_pages(cf, m); rv != NGX_CONF_OK) return rv;
    if (!m->used) return NGX_CONF_OK;
    for (auto check : {check_site, check_providers, check_oidc, check_delivery, check_sessions, check_passwords,
                       check_passkeys, check_admin}) {
        if (char *rv = check(cf, m); rv != NGX_CONF_OK) return rv;
    }
    if (check_events_conf(cf, m) != NGX_OK) return static_cast<char *>(NGX_CONF_ERROR);
    return NGX_CONF_OK;
}

}  // namespace signin_ngx
