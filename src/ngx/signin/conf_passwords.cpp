// Passwords: on or off, the password policy (length, breached list), the Argon2id hash, and the
// attempt limits. The values land in the engine's Policy; the core checks how they fit together.
#include "signin_conf.h"
#include "signin_directives.h"

#include <memory>
#include <string>

#include "signin/password.hpp"

namespace signin_ngx {

// ---------------------------------------------------------------- directives

static char *set_min_length(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    if (written(m, sv(cmd->name))) return const_cast<char *>("is duplicate");
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    ngx_int_t n = ngx_atoi(value[1].data, value[1].len);
    if (n == NGX_ERROR || n < static_cast<ngx_int_t>(signin::password::kLowestMinLength) || n > 1024) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid signin_password_min_length \"%V\": it must be a number from %d to 1024 "
                           "(the password policy cannot go below 8)",
                           &value[1], static_cast<int>(signin::password::kLowestMinLength));
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    m->policy->password_min_length = static_cast<unsigned>(n);
    return note_line(cf, m, cmd) ? NGX_CONF_OK : static_cast<char *>(NGX_CONF_ERROR);
}


// Maps the breached-password digests now: the mapping is shared by every worker after fork.
static char *set_blocklist(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    if (m->blocklist) return const_cast<char *>("is duplicate");
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    ngx_str_t path = value[1];
    if (ngx_conf_full_name(cf->cycle, &path, 1) != NGX_OK) return static_cast<char *>(NGX_CONF_ERROR);
    return guard_conf(cf, "signin_password_blocklist", [&]() -> char * {
        auto list = signin::password::Blocklist::open(std::string(sv(path)));
        if (!list) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid signin_password_blocklist: %s",
                               list.error().message.c_str());
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        m->blocklist = pool_object<std::shared_ptr<const signin::password::Blocklist>>(cf->pool);
        if (m->blocklist == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
        *m->blocklist = list.value();
        return NGX_CONF_OK;
    });
}


// signin_password_hash [t=N] [m=SIZE]: Argon2id settings (default t=2 m=19456k, the engine's). Lower
// values exist for tests of the rehash on sign-in; nginx -t warns about them.
static char *set_hash(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    if (written(m, sv(cmd->name))) return const_cast<char *>("is duplicate");
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    const signin::password::HashParams spec;  // the engine's: Argon2id, 19 MiB, 2 iterations
    signin::password::HashParams &hash = m->policy->password_hash;
    for (ngx_uint_t i = 1; i < cf->args->nelts; i++) {
        bool ok = false;
        if (value[i].len > 2 && ngx_strncmp(value[i].data, "t=", 2) == 0) {
            ngx_int_t n = ngx_atoi(value[i].data + 2, value[i].len - 2);
            ok = n != NGX_ERROR && n >= 1 && n <= 16;
            if (ok) hash.opslimit = static_cast<unsigned long long>(n);
        } else if (value[i].len > 2 && ngx_strncmp(value[i].data, "m=", 2) == 0) {
            ngx_str_t v = {value[i].len - 2, value[i].data + 2};
            ssize_t size = ngx_parse_size(&v);
            ok = size != NGX_ERROR && size >= 8 * 1024 && size <= 1024 * 1024 * 1024;
            if (ok) hash.memlimit = static_cast<size_t>(size) / 1024 * 1024;
        }
        if (!ok) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid signin_password_hash parameter \"%V\"", &value[i]);
            return static_cast<char *>(NGX_CONF_ERROR);
        }
    }
    if (hash.opslimit < spec.opslimit || hash.memlimit < spec.memlimit) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "signin_password_hash is weaker than Argon2id t=2 m=19456k (the least OWASP advises); use it only in tests");
    }
    return note_line(cf, m, cmd) ? NGX_CONF_OK : static_cast<char *>(NGX_CONF_ERROR);
}

Directives password_directives() {
    using P = signin::Policy;
    using A = signin::AttemptLimits;
    static ngx_command_t table[] = {
        {ngx_string("signin_passwords"), NGX_HTTP_MAIN_CONF | NGX_CONF_FLAG, policy_flag<&P::with_passwords>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_password_min_length"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
         guarded_directive<set_min_length>, NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_password_blocklist"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, set_blocklist,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_password_hash"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE12, guarded_directive<set_hash>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_password_attempts"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
         policy_num<&P::attempts, &A::free_attempts>, NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_password_backoff"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
         policy_msec<&P::attempts, &A::backoff>, NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_password_backoff_max"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
         policy_msec<&P::attempts, &A::backoff_max>, NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_password_address_limit"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
         policy_num<&P::attempts, &A::address_limit>, NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_password_address_window"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
         policy_msec<&P::attempts, &A::address_window>, NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_password_register_backoff"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
         policy_msec<&P::attempts, &A::register_backoff>, NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_password_register_backoff_max"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
         policy_msec<&P::attempts, &A::register_backoff_max>, NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_password_fresh"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, policy_msec<&P::fresh_window>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
    };
    return table;
}

// ---------------------------------------------------------------- checks

char *check_passwords(ngx_conf_t *cf, MainConf *m) {
    return report(cf, m, signin::conf::check_passwords(*m->policy)) ? NGX_CONF_OK : static_cast<char *>(NGX_CONF_ERROR);
}

}  // namespace signin_ngx
