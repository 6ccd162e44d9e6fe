// The sign-in module's http-level configuration once the block is read (finish_main_conf): the
// defaults of what was not written, the engine's Policy, and the checks that need the whole block.
#include "signin_conf.h"
#include "signin_delivery.h"
#include "signin_providers.h"
#include "signin_smtp.h"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

namespace signin_ngx {

// The user the workers will run as, decided as ngx_core_module decides it: the `user` line read so
// far, or nginx's default user for a master started as root. nullopt when the workers will be this
// process's own user (not root: no check needed) or when the user does not exist (nginx says so).
struct WorkerUser {
    std::string name;
    uid_t uid;
    gid_t gid;
};

static std::optional<WorkerUser> worker_user(ngx_conf_t *cf) {
    if (geteuid() != 0) return std::nullopt;
    auto *ccf = reinterpret_cast<ngx_core_conf_t *>(ngx_get_conf(cf->cycle->conf_ctx, ngx_core_module));
    if (ccf != nullptr && ccf->user != static_cast<ngx_uid_t>(NGX_CONF_UNSET_UINT)) {
        return WorkerUser{ccf->username ? ccf->username : "", ccf->user, ccf->group};
    }
    // no `user` line above the http block: nginx will use its built-in user and group
    const passwd *pw = getpwnam(NGX_USER);
    const group *gr = getgrnam(NGX_GROUP);
    if (pw == nullptr || gr == nullptr) return std::nullopt;
    return WorkerUser{NGX_USER, pw->pw_uid, gr->gr_gid};
}

// The first existing directory on the way to `path` that `u` may not search (nothing below it can
// be opened by that user), or "". The kernel answers, in a child that takes the user's identity as
// a worker does (groups included, ACLs too), so no rule of permissions is guessed here. Directories
// that do not exist yet are made by the master, searchable (init_module). "" as well when the
// question cannot be asked (fork fails): the store's own open then says what is wrong.
static std::string unsearchable_parent(const std::string &path, const WorkerUser &u) {
    std::vector<std::string> dirs{"/"};
    std::string_view p = path;
    while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
    for (std::size_t i = 1; i < p.size(); i++) {
        if (p[i] != '/') continue;
        struct stat st;
        std::string dir(p.substr(0, i));
        if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) break;
        dirs.push_back(std::move(dir));
    }
    if (dirs.size() > 250) dirs.resize(250);  // an exit status counts them
    const pid_t pid = fork();
    if (pid < 0) return {};
    if (pid == 0) {
        if (setgid(u.gid) != 0 || initgroups(u.name.c_str(), u.gid) != 0 || setuid(u.uid) != 0) _exit(255);
        for (std::size_t i = 0; i < dirs.size(); i++) {
            if (access(dirs[i].c_str(), X_OK) != 0) _exit(static_cast<int>(i + 1));
        }
        _exit(0);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return {};
    }
    if (!WIFEXITED(status)) return {};
    const int n = WEXITSTATUS(status);
    return n >= 1 && static_cast<std::size_t>(n) <= dirs.size() ? dirs[static_cast<std::size_t>(n - 1)] : std::string();
}

// The defaults of what was not written. The engine's own values are written once, in its Policy
// and OutboxSettings; the glue takes them from there.
static void init_defaults(MainConf *m) {
    ngx_conf_init_size_value(m->store_size, 1024 * 1024 * 1024);
    ngx_conf_init_value(m->registration, 0);
    ngx_conf_init_value(m->passwords, 0);
    ngx_conf_init_value(m->email, 1);
    ngx_conf_init_value(m->mfa, 0);
    ngx_conf_init_value(m->passkeys, 0);
    const signin::Policy spec;
    const signin::AttemptLimits &attempts = spec.attempts;
    auto msec = [](signin::Millis v) { return static_cast<ngx_msec_t>(v); };
    ngx_conf_init_msec_value(m->token_ttl, msec(spec.token_ttl));
    ngx_conf_init_msec_value(m->mfa_remember, msec(spec.mfa_remember));
    ngx_conf_init_uint_value(m->mfa_free_failures, spec.mfa_free_failures);
    ngx_conf_init_msec_value(m->mfa_backoff, msec(spec.mfa_backoff));
    ngx_conf_init_uint_value(m->mfa_lock, spec.mfa_lock_failures);
    ngx_conf_init_uint_value(m->browser_accounts, spec.browser_accounts);
    ngx_conf_init_msec_value(m->token_resend, msec(spec.token_resend));
    ngx_conf_init_uint_value(m->tokens_per_address, spec.tokens_per_address);
    ngx_conf_init_msec_value(m->session_ttl, msec(spec.session_ttl));
    ngx_conf_init_msec_value(m->session_idle, msec(spec.session_idle));
    ngx_conf_init_msec_value(m->bearer_ttl, msec(spec.bearer_ttl));
    ngx_conf_init_msec_value(m->audit_keep, msec(spec.audit_keep));
    ngx_conf_init_uint_value(m->audit_max, 0);  // 0: the store's own bound, by its size
    ngx_conf_init_size_value(m->body_max, 4096);
    const signin::OutboxSettings outbox;  // the outbox's defaults are the engine's too
    ngx_conf_init_uint_value(m->delivery_retries, outbox.retries);
    ngx_conf_init_msec_value(m->delivery_timeout, msec(outbox.hold));
    ngx_conf_init_msec_value(m->session_cache, 0);
    ngx_conf_init_uint_value(m->client_ipv6_prefix, attempts.client_ipv6_prefix);
    ngx_conf_init_uint_value(m->password_min_length, spec.password_min_length);
    ngx_conf_init_uint_value(m->password_attempts, attempts.free_attempts);
    ngx_conf_init_msec_value(m->password_backoff, msec(attempts.backoff));
    ngx_conf_init_msec_value(m->password_backoff_max, msec(attempts.backoff_max));
    ngx_conf_init_uint_value(m->password_address_limit, attempts.address_limit);
    ngx_conf_init_msec_value(m->password_address_window, msec(attempts.address_window));
    ngx_conf_init_msec_value(m->password_register_backoff, msec(attempts.register_backoff));
    ngx_conf_init_msec_value(m->password_register_backoff_max, msec(attempts.register_backoff_max));
    ngx_conf_init_msec_value(m->password_fresh, msec(spec.fresh_window));
    ngx_conf_init_uint_value(m->password_hash_t, static_cast<ngx_uint_t>(spec.password_hash.opslimit));
    ngx_conf_init_size_value(m->password_hash_m, spec.password_hash.memlimit);
    if (m->thread_pool_name.len == 0) {
        ngx_str_set(&m->thread_pool_name, "default");
    }
}

// What signin_api and signin_require cannot work without: a store the workers can reach, an
// origin, a way to call providers and to send emails, lifetimes that are not zero.
static char *check_required(ngx_conf_t *cf, MainConf *m) {
    if (m->store_path.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_api and signin_require need \"signin_store\"");
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (m->origin == nullptr) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_api and signin_require need \"signin_origin\"");
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    const signin::StoreTraits store = signin::store_traits(sv(m->store_path));
    // A store the workers cannot reach answers every sign-in and gated request 503: refused now,
    // before the master makes its directory (init_module).
    if (store.in_directory) {
        if (auto u = worker_user(cf)) {
            const std::string path(sv(m->store_path));
            const std::string dir = unsearchable_parent(path, *u);
            if (!dir.empty()) {
                log_at(cf, NGX_LOG_EMERG, m, "signin_store",
                       "signin_store \"" + path + "\" cannot be reached by the worker user \"" + u->name +
                           "\": that user may not search \"" + dir +
                           "\", so every sign-in and gated request would answer 503; put the store where \"" +
                           u->name + "\" can reach it (e.g. under /var/lib/nginx), or let it search \"" + dir +
                           "\" (chmod o+x, or a group of that user)");
                return static_cast<char *>(NGX_CONF_ERROR);
            }
        }
    }
    if (m->providers != nullptr && m->provider_fetch_uri.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "signin_provider needs \"signin_provider_fetch\": the internal location its calls to the "
                           "provider go through (proxy_pass $signin_provider_url;)");
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (m->delivery_uri.len == 0 && m->email && !smtp_written(cf)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "email sign-in needs \"signin_smtp\" (a mail relay) or \"signin_delivery\" (an HTTP mail "
                           "API), or \"signin_email off\"");
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    // a zero here is written by hand (no default is 0): its own line is named
    bool zero = false;
    for (auto [name, value] : {std::pair<const char *, ngx_msec_t>{"signin_token_ttl", m->token_ttl},
                               {"signin_session_ttl", m->session_ttl},
                               {"signin_session_idle", m->session_idle},
                               {"signin_bearer_ttl", m->bearer_ttl}}) {
        if (value != 0) continue;
        log_at(cf, NGX_LOG_EMERG, m, name,
               std::string("\"") + name + "\" must be longer than 0 (every code or session would be dead on arrival)");
        zero = true;
    }
    if (zero) return static_cast<char *>(NGX_CONF_ERROR);
    return NGX_CONF_OK;
}

// The rest of the block's checks, and the secret key's default path (beside the store).
static char *check_settings(ngx_conf_t *cf, MainConf *m) {
    if (!m->has_api) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "signin_require is used but no location has \"signin_api\": nobody can sign in");
    }
    const signin::StoreTraits store = signin::store_traits(sv(m->store_path));
    if (m->session_cache != 0 && !store.reads_may_block) {
        log_at(cf, NGX_LOG_WARN, m, "signin_session_cache",
               "\"signin_session_cache\" is for a store whose reads go over the network (this one is read in "
               "memory): ignored");
    }
    if (m->delivery_timeout == 0) {
        log_at(cf, NGX_LOG_EMERG, m, "signin_delivery_timeout", "\"signin_delivery_timeout\" must be longer than 0");
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (m->secret_key_path.len == 0 && store.shared_by_nodes) {
        // the nodes that share a store share the key (it seals what the store keeps): a file
        // each node would make for itself by default would differ
        log_at(cf, NGX_LOG_EMERG, m, "signin_store",
               "a signin_store that several nodes share needs \"signin_secret_key FILE\", the same file on every "
               "node");
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (m->secret_key_path.len == 0) {  // beside the store, never in it: "<store>.key"
        ngx_str_t dir = m->store_path;
        while (dir.len > 1 && dir.data[dir.len - 1] == '/') dir.len--;
        m->secret_key_path.len = dir.len + 4;
        m->secret_key_path.data = static_cast<u_char *>(ngx_pnalloc(cf->pool, dir.len + 5));
        if (m->secret_key_path.data == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
        *ngx_cpymem(ngx_cpymem(m->secret_key_path.data, dir.data, dir.len), ".key", 4) = '\0';
    }
    if (m->audit_keep == 0) {
        log_at(cf, NGX_LOG_EMERG, m, "signin_audit_keep", "\"signin_audit_keep\" must be longer than 0");
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (m->body_max > 64 * 1024) {
        log_at(cf, NGX_LOG_EMERG, m, "signin_body_max", "\"signin_body_max\" must not exceed 64k");
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    return NGX_CONF_OK;
}

// The engine's Policy, from the directives' values (ngx_msec_t and ngx_uint_t become the engine's
// Millis and unsigned), with the checks that compare several of them.
static char *build_policy(ngx_conf_t *cf, MainConf *m) {
    m->policy = pool_object<signin::Policy>(cf->pool);
    if (m->policy == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
    m->policy->token_ttl = static_cast<signin::Millis>(m->token_ttl);
    m->policy->token_resend = static_cast<signin::Millis>(m->token_resend);
    m->policy->tokens_per_address = static_cast<unsigned>(m->tokens_per_address);
    m->policy->session_ttl = static_cast<signin::Millis>(m->session_ttl);
    m->policy->session_idle = static_cast<signin::Millis>(m->session_idle);
    m->policy->bearer_ttl = static_cast<signin::Millis>(m->bearer_ttl);
    m->policy->audit_keep = static_cast<signin::Millis>(m->audit_keep);
    m->policy->allow_registration = m->registration != 0;
    if (m->join) m->policy->may_join = std::make_shared<const signin::People>(*m->join);
    m->policy->with_email = m->email != 0;
    m->policy->with_passwords = m->passwords != 0;
    m->policy->with_mfa = m->mfa != 0;
    m->policy->mfa_remember = static_cast<signin::Millis>(m->mfa_remember);
    m->policy->mfa_free_failures = static_cast<unsigned>(m->mfa_free_failures);
    m->policy->mfa_backoff = static_cast<signin::Millis>(m->mfa_backoff);
    m->policy->mfa_lock_failures = static_cast<unsigned>(m->mfa_lock);
    m->policy->browser_accounts = static_cast<unsigned>(m->browser_accounts);
    m->policy->with_passkeys = m->passkeys != 0;
    m->policy->passkey_rp_id = std::string(sv(m->passkey_rp_id));
    if (m->policy->with_passkeys && m->origin != nullptr) {
        std::string warning;
        std::string why = signin::check_rp_id(*m->origin, m->policy->passkey_rp_id, &warning);
        if (!why.empty()) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s", why.c_str());
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        if (!warning.empty()) ngx_conf_log_error(NGX_LOG_WARN, cf, 0, "%s", warning.c_str());
    }
    m->policy->mfa_issuer = std::string(sv(m->site_name));
    m->policy->fresh_window = static_cast<signin::Millis>(m->password_fresh);
    m->policy->password_min_length = static_cast<unsigned>(m->password_min_length);
    m->policy->password_hash.opslimit = m->password_hash_t;
    m->policy->password_hash.memlimit = m->password_hash_m;
    if (m->password_backoff > m->password_backoff_max ||
        m->password_register_backoff > m->password_register_backoff_max) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "a signin_password_*backoff must not exceed its _max");
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    for (auto [name, value] : {std::pair<const char *, ngx_msec_t>{"signin_password_address_window", m->password_address_window},
                               {"signin_password_backoff", m->password_backoff},
                               {"signin_password_register_backoff", m->password_register_backoff}}) {
        if (value != 0) continue;
        log_at(cf, NGX_LOG_EMERG, m, name, std::string("\"") + name + "\" must be longer than 0 (a time window)");
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    signin::AttemptLimits &a = m->policy->attempts;
    a.free_attempts = static_cast<unsigned>(m->password_attempts);
    a.backoff = static_cast<signin::Millis>(m->password_backoff);
    a.backoff_max = static_cast<signin::Millis>(m->password_backoff_max);
    a.address_limit = static_cast<unsigned>(m->password_address_limit);
    a.address_window = static_cast<signin::Millis>(m->password_address_window);
    a.register_backoff = static_cast<signin::Millis>(m->password_register_backoff);
    a.register_backoff_max = static_cast<signin::Millis>(m->password_register_backoff_max);
    a.client_ipv6_prefix = static_cast<unsigned>(m->client_ipv6_prefix);
    return NGX_CONF_OK;
}

// The languages (signin_languages, signin_messages): their catalogs checked, the emails and pages
// written in each once, here, so that a request only picks one.
static char *finish_languages(ngx_conf_t *cf, MainConf *m) {
    Texts &t = *m->texts;
    if (t.tags.empty() && !t.messages.empty()) {
        log_at(cf, NGX_LOG_EMERG, m, "signin_languages", "signin_messages needs \"signin_languages\" naming its language");
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (t.tags.empty()) {
        t.languages = signin::i18n::Languages::english();
    } else {
        auto made = signin::i18n::Languages::make(t.tags, t.messages);
        if (!made) {
            log_at(cf, NGX_LOG_EMERG, m, "signin_languages", "signin_languages: " + made.error().message);
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        t.languages = made.value();
    }
    m->emails->set_languages(t.languages);
    signin::pages::Settings fixed;
    fixed.remember_days = static_cast<long long>(m->mfa_remember / (24 * 3600 * 1000));
    fixed.token_minutes = static_cast<long long>((m->token_ttl + 59999) / 60000);
    fixed.fresh_minutes = static_cast<long long>((m->password_fresh + 59999) / 60000);
    t.pages.emplace(t.languages, fixed);
    return NGX_CONF_OK;
}

char *finish_main_conf(ngx_conf_t *cf, MainConf *m) {
    init_defaults(m);
    m->emails->set_token_ttl(static_cast<signin::Millis>(m->token_ttl));
    if (char *rv = finish_languages(cf, m); rv != NGX_CONF_OK) return rv;
    if (m->previews && m->origin == nullptr) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_email_previews needs \"signin_origin\"");
        return static_cast<char *>(NGX_CONF_ERROR);
    }

    // The dev mailbox shows every sign-in code to loopback clients: with a site's real origin,
    // a local TLS terminator or tunnel makes every visitor loopback. Only on purpose.
    if (m->mailbox && !m->mailbox_insecure && (m->origin == nullptr || !m->origin->loopback)) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "signin_dev_mailbox (in %V:%ui) shows every sign-in code to loopback clients and is for "
                      "development with a loopback signin_origin; with another origin write "
                      "\"signin_dev_mailbox insecure;\" if you mean it",
                      &m->mailbox_file, m->mailbox_line);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (!m->used) return NGX_CONF_OK;

    if (char *rv = check_required(cf, m); rv != NGX_CONF_OK) return rv;
    if (char *rv = check_settings(cf, m); rv != NGX_CONF_OK) return rv;
    m->thread_pool = ngx_thread_pool_add(cf, &m->thread_pool_name);
    if (m->thread_pool == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
    // Argon2id jobs: signin_thread_pool unless a pool of their own is named
    m->password_pool = m->thread_pool;
    if (m->password_pool_name.len != 0) {
        m->password_pool = ngx_thread_pool_add(cf, &m->password_pool_name);
        if (m->password_pool == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
    }
    return build_policy(cf, m);
}

}  // namespace signin_ngx
