// ngx_http_signin_module: directives, configuration, process hooks and variables of the sign-in
// half. The engine is the core (include/signin); this file only translates.
#include "signin_conf.h"
#include "signin_metrics.h"
#include "signin_delivery.h"
#include "signin_handlers.h"
#include "signin_providers.h"
#include "signin_request.h"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <new>
#include <sstream>

using namespace signin_ngx;

static void *create_main_conf(ngx_conf_t *cf);
static char *init_main_conf(ngx_conf_t *cf, void *conf);
static void *create_loc_conf(ngx_conf_t *cf);
static char *merge_loc_conf(ngx_conf_t *cf, void *parent, void *child);
static ngx_int_t preconfiguration(ngx_conf_t *cf);
static ngx_int_t postconfiguration(ngx_conf_t *cf);
static ngx_int_t init_module(ngx_cycle_t *cycle);
static char *set_store(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *set_secret_key(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *set_origin(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *set_min_length(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *set_blocklist(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *set_hash(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *set_api(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *set_require(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *set_mailbox(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *set_email_template(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *set_email_previews(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *set_access_rule(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *set_registration(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *set_site_name(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *set_thread_pool(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *set_provider(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);

// A directive whose value is checked once the http block is parsed: nginx's own slot, and the line
// remembered for the check's message (log_at).
template <char *(*Slot)(ngx_conf_t *, ngx_command_t *, void *)>
static char *noted(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    char *rv = Slot(cf, cmd, conf);
    if (rv == NGX_CONF_OK && !note_line(cf, static_cast<MainConf *>(conf), cmd)) return static_cast<char *>(NGX_CONF_ERROR);
    return rv;
}

static ngx_conf_num_bounds_t tokens_bounds = {ngx_conf_check_num_bounds, 1, 16};
static ngx_conf_num_bounds_t ipv6_prefix_bounds = {ngx_conf_check_num_bounds, 1, 128};
static ngx_conf_num_bounds_t retries_bounds = {ngx_conf_check_num_bounds, 0, 10};
static ngx_conf_num_bounds_t browser_accounts_bounds = {ngx_conf_check_num_bounds, 1, 100};

// signin_require on | off | mfa
static ngx_conf_enum_t require_modes[] = {
    {ngx_string("off"), 0}, {ngx_string("on"), 1}, {ngx_string("mfa"), 2}, {ngx_null_string, 0}};

static ngx_command_t commands[] = {
    {ngx_string("signin_store"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE12, set_store, NGX_HTTP_MAIN_CONF_OFFSET, 0,
     nullptr},
    {ngx_string("signin_origin"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, set_origin, NGX_HTTP_MAIN_CONF_OFFSET, 0,
     nullptr},
    {ngx_string("signin_registration"), NGX_HTTP_MAIN_CONF | NGX_CONF_1MORE, set_registration,
     NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
    {ngx_string("signin_passwords"), NGX_HTTP_MAIN_CONF | NGX_CONF_FLAG, ngx_conf_set_flag_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, passwords), nullptr},
    {ngx_string("signin_password_min_length"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, set_min_length,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, password_min_length), nullptr},
    {ngx_string("signin_password_blocklist"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, set_blocklist,
     NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
    {ngx_string("signin_password_hash"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE12, set_hash, NGX_HTTP_MAIN_CONF_OFFSET, 0,
     nullptr},
    {ngx_string("signin_password_attempts"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_conf_set_num_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, password_attempts), nullptr},
    {ngx_string("signin_password_backoff"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, noted<ngx_conf_set_msec_slot>,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, password_backoff), nullptr},
    {ngx_string("signin_password_backoff_max"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_conf_set_msec_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, password_backoff_max), nullptr},
    {ngx_string("signin_password_address_limit"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_conf_set_num_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, password_address_limit), nullptr},
    {ngx_string("signin_password_address_window"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, noted<ngx_conf_set_msec_slot>,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, password_address_window), nullptr},
    {ngx_string("signin_password_register_backoff"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, noted<ngx_conf_set_msec_slot>,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, password_register_backoff), nullptr},
    {ngx_string("signin_password_register_backoff_max"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_conf_set_msec_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, password_register_backoff_max), nullptr},
    {ngx_string("signin_password_fresh"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_conf_set_msec_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, password_fresh), nullptr},
    {ngx_string("signin_email"), NGX_HTTP_MAIN_CONF | NGX_CONF_FLAG, ngx_conf_set_flag_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, email), nullptr},
    {ngx_string("signin_delivery"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, noted<ngx_conf_set_str_slot>,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, delivery_uri), nullptr},
    {ngx_string("signin_delivery_retries"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_conf_set_num_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, delivery_retries), &retries_bounds},
    {ngx_string("signin_delivery_timeout"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, noted<ngx_conf_set_msec_slot>,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, delivery_timeout), nullptr},
    {ngx_string("signin_session_cache"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, noted<ngx_conf_set_msec_slot>,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, session_cache), nullptr},
    {ngx_string("signin_secret_key"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, set_secret_key, NGX_HTTP_MAIN_CONF_OFFSET,
     0, nullptr},
    {ngx_string("signin_client"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_http_set_complex_value_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, client), nullptr},
    {ngx_string("signin_client_ipv6_prefix"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_conf_set_num_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, client_ipv6_prefix), &ipv6_prefix_bounds},
    {ngx_string("signin_thread_pool"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, set_thread_pool,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, thread_pool_name), nullptr},
    {ngx_string("signin_password_thread_pool"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, set_thread_pool,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, password_pool_name), nullptr},
    {ngx_string("signin_token_ttl"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, noted<ngx_conf_set_msec_slot>,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, token_ttl), nullptr},
    {ngx_string("signin_token_resend"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_conf_set_msec_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, token_resend), nullptr},
    {ngx_string("signin_tokens_per_address"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_conf_set_num_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, tokens_per_address), &tokens_bounds},
    {ngx_string("signin_session_ttl"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, noted<ngx_conf_set_msec_slot>,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, session_ttl), nullptr},
    {ngx_string("signin_session_idle"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, noted<ngx_conf_set_msec_slot>,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, session_idle), nullptr},
    {ngx_string("signin_bearer_ttl"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, noted<ngx_conf_set_msec_slot>,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, bearer_ttl), nullptr},
    {ngx_string("signin_audit_keep"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, noted<ngx_conf_set_msec_slot>,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, audit_keep), nullptr},
    {ngx_string("signin_audit_max"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_conf_set_num_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, audit_max), nullptr},
    {ngx_string("signin_body_max"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, noted<ngx_conf_set_size_slot>,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, body_max), nullptr},
    {ngx_string("signin_api"), NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS, set_api, NGX_HTTP_LOC_CONF_OFFSET, 0, nullptr},
    {ngx_string("signin_require"), NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE1,
     set_require, NGX_HTTP_LOC_CONF_OFFSET, offsetof(LocConf, require), require_modes},
    {ngx_string("signin_mfa"), NGX_HTTP_MAIN_CONF | NGX_CONF_FLAG, ngx_conf_set_flag_slot, NGX_HTTP_MAIN_CONF_OFFSET,
     offsetof(MainConf, mfa), nullptr},
    {ngx_string("signin_mfa_remember"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_conf_set_msec_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, mfa_remember), nullptr},
    {ngx_string("signin_mfa_free_failures"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_conf_set_num_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, mfa_free_failures), nullptr},
    {ngx_string("signin_mfa_backoff"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_conf_set_msec_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, mfa_backoff), nullptr},
    {ngx_string("signin_mfa_lock"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_conf_set_num_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, mfa_lock), nullptr},
    {ngx_string("signin_browser_accounts"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_conf_set_num_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, browser_accounts), &browser_accounts_bounds},
    {ngx_string("signin_passkeys"), NGX_HTTP_MAIN_CONF | NGX_CONF_FLAG, ngx_conf_set_flag_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, passkeys), nullptr},
    {ngx_string("signin_provider"), NGX_HTTP_MAIN_CONF | NGX_CONF_2MORE, set_provider, NGX_HTTP_MAIN_CONF_OFFSET, 0,
     nullptr},
    {ngx_string("signin_provider_fetch"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, noted<ngx_conf_set_str_slot>,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, provider_fetch_uri), nullptr},
    {ngx_string("signin_passkey_rp_id"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_conf_set_str_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, passkey_rp_id), nullptr},
    {ngx_string("signin_metrics"), NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS, set_metrics, NGX_HTTP_LOC_CONF_OFFSET, 0,
     nullptr},
    {ngx_string("signin_dev_mailbox"), NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS | NGX_CONF_TAKE1, set_mailbox, NGX_HTTP_LOC_CONF_OFFSET, 0,
     nullptr},
    {ngx_string("signin_site_name"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, set_site_name, NGX_HTTP_MAIN_CONF_OFFSET, 0,
     nullptr},
    {ngx_string("signin_email_template"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE23, set_email_template,
     NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
    {ngx_string("signin_pass_credentials"), NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_FLAG,
     ngx_conf_set_flag_slot, NGX_HTTP_LOC_CONF_OFFSET, offsetof(LocConf, pass_credentials), nullptr},
    {ngx_string("signin_email_previews"), NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS, set_email_previews,
     NGX_HTTP_LOC_CONF_OFFSET, 0, nullptr},
    {ngx_string("signin_login_url"), NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE1,
     ngx_conf_set_str_slot, NGX_HTTP_LOC_CONF_OFFSET, offsetof(LocConf, login_url), nullptr},
    {ngx_string("signin_pages"), NGX_HTTP_LOC_CONF | NGX_CONF_FLAG, ngx_conf_set_flag_slot, NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(LocConf, pages), nullptr},
    {ngx_string("signin_pages_css"), NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE1,
     ngx_conf_set_str_slot, NGX_HTTP_LOC_CONF_OFFSET, offsetof(LocConf, pages_css), nullptr},
    {ngx_string("signin_assertion_audience"), NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE1,
     ngx_http_set_complex_value_slot, NGX_HTTP_LOC_CONF_OFFSET, offsetof(LocConf, assertion_audience), nullptr},
    {ngx_string("signin_allow"), NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE12,
     set_access_rule, NGX_HTTP_LOC_CONF_OFFSET, 1, nullptr},
    {ngx_string("signin_deny"), NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE12,
     set_access_rule, NGX_HTTP_LOC_CONF_OFFSET, 0, nullptr},
    ngx_null_command};

static ngx_http_module_t module_ctx = {
    preconfiguration, postconfiguration, create_main_conf, init_main_conf, nullptr, nullptr, create_loc_conf,
    merge_loc_conf};

extern "C" {
ngx_module_t ngx_http_signin_module = {NGX_MODULE_V1,
                                       &module_ctx,
                                       commands,
                                       NGX_HTTP_MODULE,
                                       nullptr,
                                       init_module,
                                       init_worker,
                                       nullptr,
                                       nullptr,
                                       exit_worker,
                                       nullptr,
                                       NGX_MODULE_V1_PADDING};
}

// ---------------------------------------------------------------- configuration

// A C++ object in configuration memory: constructed in a pool cleanup that runs its destructor
// (nginx-otel's habit). nullptr when memory runs out.
template <class T>
static T *pool_object(ngx_pool_t *pool) noexcept {
    ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(pool, sizeof(T));
    if (cln == nullptr) return nullptr;
    try {
        T *obj = new (cln->data) T();
        cln->handler = [](void *p) { static_cast<T *>(p)->~T(); };
        return obj;
    } catch (...) {
        return nullptr;
    }
}

// The directive handlers' catch: nginx -t says why, naming the file and line.
static char *conf_exception(ngx_conf_t *cf, const char *what) noexcept {
    try {
        throw;
    } catch (const std::exception &e) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s failed: %s", what, e.what());
    } catch (...) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s failed", what);
    }
    return static_cast<char *>(NGX_CONF_ERROR);
}

bool signin_ngx::note_line(ngx_conf_t *cf, MainConf *m, const ngx_command_t *cmd) {
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

void signin_ngx::log_at(ngx_conf_t *cf, ngx_uint_t level, const MainConf *m, std::string_view directive,
                        const std::string &message) {
    const DirectiveAt *found = nullptr;
    auto *at = m->written ? static_cast<const DirectiveAt *>(m->written->elts) : nullptr;
    for (ngx_uint_t i = 0; at && i < m->written->nelts; i++) {
        if (sv(at[i].name) == directive) found = &at[i];
    }
    if (found == nullptr) {
        ngx_conf_log_error(level, cf, 0, "%s", message.c_str());
        return;
    }
    ngx_log_error(level, cf->log, 0, "%s in %s:%ui", message.c_str(), found->file, found->line);
}

static void *create_main_conf(ngx_conf_t *cf) {
    auto *m = static_cast<MainConf *>(ngx_pcalloc(cf->pool, sizeof(MainConf)));
    if (m == nullptr) return nullptr;
    m->store_size = NGX_CONF_UNSET_SIZE;
    m->registration = NGX_CONF_UNSET;
    m->passwords = NGX_CONF_UNSET;
    m->email = NGX_CONF_UNSET;
    m->mfa = NGX_CONF_UNSET;
    m->mfa_remember = NGX_CONF_UNSET_MSEC;
    m->mfa_free_failures = NGX_CONF_UNSET_UINT;
    m->mfa_backoff = NGX_CONF_UNSET_MSEC;
    m->mfa_lock = NGX_CONF_UNSET_UINT;
    m->browser_accounts = NGX_CONF_UNSET_UINT;
    m->passkeys = NGX_CONF_UNSET;
    m->token_ttl = NGX_CONF_UNSET_MSEC;
    m->token_resend = NGX_CONF_UNSET_MSEC;
    m->tokens_per_address = NGX_CONF_UNSET_UINT;
    m->session_ttl = NGX_CONF_UNSET_MSEC;
    m->session_idle = NGX_CONF_UNSET_MSEC;
    m->bearer_ttl = NGX_CONF_UNSET_MSEC;
    m->audit_keep = NGX_CONF_UNSET_MSEC;
    m->audit_max = NGX_CONF_UNSET_UINT;
    m->body_max = NGX_CONF_UNSET_SIZE;
    m->delivery_retries = NGX_CONF_UNSET_UINT;
    m->delivery_timeout = NGX_CONF_UNSET_MSEC;
    m->session_cache = NGX_CONF_UNSET_MSEC;
    m->client_ipv6_prefix = NGX_CONF_UNSET_UINT;
    m->password_min_length = NGX_CONF_UNSET_UINT;
    m->password_attempts = NGX_CONF_UNSET_UINT;
    m->password_backoff = NGX_CONF_UNSET_MSEC;
    m->password_backoff_max = NGX_CONF_UNSET_MSEC;
    m->password_address_limit = NGX_CONF_UNSET_UINT;
    m->password_address_window = NGX_CONF_UNSET_MSEC;
    m->password_register_backoff = NGX_CONF_UNSET_MSEC;
    m->password_register_backoff_max = NGX_CONF_UNSET_MSEC;
    m->password_fresh = NGX_CONF_UNSET_MSEC;
    m->password_hash_t = NGX_CONF_UNSET_UINT;
    m->password_hash_m = NGX_CONF_UNSET_SIZE;
    m->emails = pool_object<signin::Emails>(cf->pool);
    if (m->emails == nullptr) return nullptr;
    return m;
}

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

static char *init_main_conf_checked(ngx_conf_t *cf, MainConf *m) {
    ngx_conf_init_size_value(m->store_size, 1024 * 1024 * 1024);
    ngx_conf_init_value(m->registration, 0);
    ngx_conf_init_value(m->passwords, 0);
    ngx_conf_init_value(m->email, 1);
    ngx_conf_init_value(m->mfa, 0);
    ngx_conf_init_value(m->passkeys, 0);
    // SPEC §8's values are written once, in the engine's Policy (DESIGN §3 rule 8)
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
    m->emails->set_token_ttl(static_cast<signin::Millis>(m->token_ttl));
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
    if (m->delivery_uri.len == 0 && m->email) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "email sign-in needs \"signin_delivery\" (or \"signin_email off\")");
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
    if (!m->has_api) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "signin_require is used but no location has \"signin_api\": nobody can sign in");
    }
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
    m->thread_pool = ngx_thread_pool_add(cf, &m->thread_pool_name);
    if (m->thread_pool == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
    // Argon2id jobs: signin_thread_pool unless a pool of their own is named
    m->password_pool = m->thread_pool;
    if (m->password_pool_name.len != 0) {
        m->password_pool = ngx_thread_pool_add(cf, &m->password_pool_name);
        if (m->password_pool == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
    }

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

static char *init_main_conf(ngx_conf_t *cf, void *conf) {
    try {
        return init_main_conf_checked(cf, static_cast<MainConf *>(conf));
    } catch (...) {
        return conf_exception(cf, "the signin configuration");
    }
}

static void *create_loc_conf(ngx_conf_t *cf) {
    auto *l = static_cast<LocConf *>(ngx_pcalloc(cf->pool, sizeof(LocConf)));
    if (l == nullptr) return nullptr;
    l->api = NGX_CONF_UNSET;
    l->require = NGX_CONF_UNSET_UINT;
    l->mailbox = NGX_CONF_UNSET;
    l->previews = NGX_CONF_UNSET;
    l->pass_credentials = NGX_CONF_UNSET;
    l->pages = NGX_CONF_UNSET;
    return l;
}

static char *merge_loc_conf(ngx_conf_t *cf, void *parent, void *child) {
    auto *prev = static_cast<LocConf *>(parent);
    auto *conf = static_cast<LocConf *>(child);
    ngx_conf_merge_uint_value(conf->require, prev->require, 0);
    ngx_conf_init_value(conf->api, 0);
    ngx_conf_init_value(conf->mailbox, 0);
    ngx_conf_init_value(conf->previews, 0);
    ngx_conf_merge_value(conf->pass_credentials, prev->pass_credentials, 0);
    ngx_conf_init_value(conf->pages, 0);
    if (conf->pages && !conf->api) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "\"signin_pages\" needs \"signin_api\" in the same location");
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    ngx_conf_merge_str_value(conf->pages_css, prev->pages_css, "");
    if (conf->api == 1) {
        auto *mc = static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_signin_module));
        auto *lc = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
        if (mc->link_location.len == 0 || (conf->pages && !mc->link_to_pages)) {
            mc->link_location = lc->name;
            mc->link_to_pages = conf->pages;
        }
    }
    // the pages' CSP loads styles from this origin only ('self'): a path of this site
    if (conf->pages_css.len && !signin::is_same_origin_path(sv(conf->pages_css))) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_pages_css \"%V\" must be a path of this site, like /static/site.css",
                           &conf->pages_css);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (conf->rules == nullptr) conf->rules = prev->rules;  // a level with rules replaces the outer list
    if (conf->assertion_audience == nullptr) conf->assertion_audience = prev->assertion_audience;
    ngx_conf_merge_str_value(conf->login_url, prev->login_url, "");
    if (conf->login_url.len && conf->login_url.data[0] != '/' &&
        ngx_strncmp(conf->login_url.data, "https://", 8) != 0 && ngx_strncmp(conf->login_url.data, "http://", 7) != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_login_url \"%V\" must be a path or an http(s) URL",
                           &conf->login_url);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    // The delivery location sends email to any address it is given: reachable from outside, it
    // is an open relay (cf->ctx is this location's while nginx merges it).
    auto *m = static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_signin_module));
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
    if (m->used && m->delivery_uri.len && clcf->internal != 1 && clcf->name.len == m->delivery_uri.len &&
        ngx_strncmp(clcf->name.data, m->delivery_uri.data, m->delivery_uri.len) == 0) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "the signin_delivery location \"%V\" is not \"internal\": anyone can make it send "
                           "email; add \"internal;\" to it",
                           &clcf->name);
    }
    return NGX_CONF_OK;
}

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
    try {
        return set_provider_checked(cf, static_cast<MainConf *>(conf));
    } catch (...) {
        return conf_exception(cf, "signin_provider");
    }
}

static char *set_store(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    if (m->store_path.len) return const_cast<char *>("is duplicate");
    if (!note_line(cf, m, cmd)) return static_cast<char *>(NGX_CONF_ERROR);
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    m->store_path = value[1];
    // a database's URI: taken as written, without a size
    if (!signin::store_traits(sv(value[1])).in_directory) {
        if (cf->args->nelts > 2) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "\"%V\": size= is for a store in a directory, not a database",
                               &value[2]);
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        return NGX_CONF_OK;
    }
    if (ngx_conf_full_name(cf->cycle, &m->store_path, 0) != NGX_OK) return static_cast<char *>(NGX_CONF_ERROR);
    for (ngx_uint_t i = 2; i < cf->args->nelts; i++) {
        if (ngx_strncmp(value[i].data, "size=", 5) == 0) {
            ngx_str_t s = {value[i].len - 5, value[i].data + 5};
            off_t size = ngx_parse_offset(&s);  // accepts k, m and g
            if (size == NGX_ERROR || size < 1024 * 1024) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid store size \"%V\" (at least 1m)", &value[i]);
                return static_cast<char *>(NGX_CONF_ERROR);
            }
            m->store_size = static_cast<size_t>(size);
            continue;
        }
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\"", &value[i]);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    return NGX_CONF_OK;
}

static char *set_secret_key(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    if (m->secret_key_path.len) return const_cast<char *>("is duplicate");
    m->secret_key_path = static_cast<ngx_str_t *>(cf->args->elts)[1];
    if (ngx_conf_full_name(cf->cycle, &m->secret_key_path, 0) != NGX_OK) return static_cast<char *>(NGX_CONF_ERROR);
    return NGX_CONF_OK;
}

static char *set_origin(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    if (m->origin) return const_cast<char *>("is duplicate");
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    std::string why;
    std::optional<signin::Origin> o;
    try {
        o = signin::parse_origin(sv(value[1]), &why);
    } catch (...) {
        return conf_exception(cf, "signin_origin");
    }
    if (!o) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid signin_origin \"%V\": %s", &value[1], why.c_str());
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    m->origin = pool_object<signin::Origin>(cf->pool);
    if (m->origin == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
    *m->origin = std::move(*o);
    return NGX_CONF_OK;
}

static char *set_min_length(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    if (m->password_min_length != NGX_CONF_UNSET_UINT) return const_cast<char *>("is duplicate");
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    ngx_int_t n = ngx_atoi(value[1].data, value[1].len);
    if (n == NGX_ERROR || n < static_cast<ngx_int_t>(signin::password::kLowestMinLength) || n > 1024) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid signin_password_min_length \"%V\": it must be a number from %d to 1024 "
                           "(the password policy cannot go below 8)",
                           &value[1], static_cast<int>(signin::password::kLowestMinLength));
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    m->password_min_length = static_cast<ngx_uint_t>(n);
    return NGX_CONF_OK;
}

// Maps the breached-password digests now: the mapping is shared by every worker after fork.
static char *set_blocklist(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    if (m->blocklist) return const_cast<char *>("is duplicate");
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    ngx_str_t path = value[1];
    if (ngx_conf_full_name(cf->cycle, &path, 1) != NGX_OK) return static_cast<char *>(NGX_CONF_ERROR);
    try {
        auto list = signin::password::Blocklist::open(std::string(sv(path)));
        if (!list) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid signin_password_blocklist: %s",
                               list.error().message.c_str());
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        m->blocklist = pool_object<std::shared_ptr<const signin::password::Blocklist>>(cf->pool);
        if (m->blocklist == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
        *m->blocklist = list.value();
    } catch (...) {
        return conf_exception(cf, "signin_password_blocklist");
    }
    return NGX_CONF_OK;
}

// signin_password_hash [t=N] [m=SIZE]: Argon2id settings (default t=2 m=19456k, SPEC §8). Lower
// values exist for tests of the rehash on sign-in; nginx -t warns about them.
static char *set_hash(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    if (m->password_hash_t != NGX_CONF_UNSET_UINT) return const_cast<char *>("is duplicate");
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    const signin::password::HashParams spec;  // SPEC §8: Argon2id, 19 MiB, 2 iterations
    m->password_hash_t = static_cast<ngx_uint_t>(spec.opslimit);
    m->password_hash_m = spec.memlimit;
    for (ngx_uint_t i = 1; i < cf->args->nelts; i++) {
        bool ok = false;
        if (value[i].len > 2 && ngx_strncmp(value[i].data, "t=", 2) == 0) {
            ngx_int_t n = ngx_atoi(value[i].data + 2, value[i].len - 2);
            ok = n != NGX_ERROR && n >= 1 && n <= 16;
            if (ok) m->password_hash_t = static_cast<ngx_uint_t>(n);
        } else if (value[i].len > 2 && ngx_strncmp(value[i].data, "m=", 2) == 0) {
            ngx_str_t v = {value[i].len - 2, value[i].data + 2};
            ssize_t size = ngx_parse_size(&v);
            ok = size != NGX_ERROR && size >= 8 * 1024 && size <= 1024 * 1024 * 1024;
            if (ok) m->password_hash_m = static_cast<size_t>(size) / 1024 * 1024;
        }
        if (!ok) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid signin_password_hash parameter \"%V\"", &value[i]);
            return static_cast<char *>(NGX_CONF_ERROR);
        }
    }
    if (m->password_hash_t < spec.opslimit || m->password_hash_m < spec.memlimit) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "signin_password_hash is weaker than Argon2id t=2 m=19456k (the least OWASP advises); use it only in tests");
    }
    return NGX_CONF_OK;
}

static char *set_api(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *l = static_cast<LocConf *>(conf);
    if (l->api != NGX_CONF_UNSET) return const_cast<char *>("is duplicate");
    l->api = 1;
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
    clcf->handler = api_handler;
    auto *m = static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_signin_module));
    m->used = 1;
    m->has_api = 1;
    return NGX_CONF_OK;
}

static char *set_require(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    char *rv = ngx_conf_set_enum_slot(cf, cmd, conf);
    if (rv != NGX_CONF_OK) return rv;
    if (static_cast<LocConf *>(conf)->require) {
        auto *m = static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_signin_module));
        m->used = 1;
    }
    return NGX_CONF_OK;
}

static ngx_str_t mailbox_zone_name = ngx_string("signin_dev_mailbox");

static char *set_mailbox(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *l = static_cast<LocConf *>(conf);
    if (l->mailbox != NGX_CONF_UNSET) return const_cast<char *>("is duplicate");
    l->mailbox = 1;
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
    clcf->handler = mailbox_handler;
    auto *m = static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_signin_module));
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    if (cf->args->nelts == 2) {
        if (sv(value[1]) != "insecure") {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\"", &value[1]);
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        m->mailbox_insecure = 1;
    }
    if (m->mailbox_line == 0) {
        m->mailbox_line = cf->conf_file->line;
        m->mailbox_file = cf->conf_file->file.name;
    }
    if (m->mailbox == nullptr) {
        m->mailbox = ngx_shared_memory_add(cf, &mailbox_zone_name, 1280 * 1024, &ngx_http_signin_module);
        if (m->mailbox == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
        m->mailbox->init = mailbox_init_zone;
        m->mailbox->data = m;
    }
    return NGX_CONF_OK;
}

// Reads a template file at configuration time (at most 64 KiB).
static bool read_template_file(ngx_conf_t *cf, ngx_str_t name, std::string &out) {
    if (ngx_conf_full_name(cf->cycle, &name, 1) != NGX_OK) return false;
    std::ifstream in(std::string(sv(name)), std::ios::binary);
    if (!in) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno, "signin_email_template: cannot read \"%V\"", &name);
        return false;
    }
    std::ostringstream text;
    text << in.rdbuf();
    out = text.str();
    if (out.size() > 64 * 1024) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_email_template: \"%V\" is over 64k", &name);
        return false;
    }
    return true;
}

// signin_email_template PURPOSE FILE [HTML_FILE]: replaces one purpose's ready-made email. The
// files are read and checked now, so nginx -t refuses a template that would make a bad email.
static char *set_email_template(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    auto purpose = signin::purpose_from_text(sv(value[1]));
    if (!purpose) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "signin_email_template: unknown purpose \"%V\" (SignIn, Registration, AlreadyRegistered, "
                           "EmailChange, EmailChangeApproval, EmailChanged, PasswordChanged, Invitation, MfaLocked, or their tags)",
                           &value[1]);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (m->emails->is_custom(*purpose)) return const_cast<char *>("is duplicate for this purpose");
    try {
        std::string text, html;
        if (!read_template_file(cf, value[2], text)) return static_cast<char *>(NGX_CONF_ERROR);
        if (cf->args->nelts == 4 && !read_template_file(cf, value[3], html)) {
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        auto t = signin::Emails::parse(*purpose, text, html);
        signin::Status st = t ? m->emails->replace(*purpose, t.value()) : signin::Status(t.error());
        if (!st) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid signin_email_template: %s",
                               st.error().message.c_str());
            return static_cast<char *>(NGX_CONF_ERROR);
        }
    } catch (...) {
        return conf_exception(cf, "signin_email_template");
    }
    return NGX_CONF_OK;
}

// signin_thread_pool NAME / signin_password_thread_pool NAME: the pool is added here, so that
// nginx's "unknown thread pool" names this line when no `thread_pool NAME ...;` declares it.
// nginx says so only once the whole file is read, and not what to write; a declaration may still
// follow the http block, so a pool not declared above this line is a warning that gives the line
// to add, and nginx's own check decides.
static char *set_thread_pool(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    char *rv = ngx_conf_set_str_slot(cf, cmd, conf);
    if (rv != NGX_CONF_OK) return rv;
    ngx_str_t name = static_cast<ngx_str_t *>(cf->args->elts)[1];
    // "default" needs no line: nginx makes that pool (32 threads) when it is used
    if (sv(name) != "default" && ngx_thread_pool_get(cf->cycle, &name) == nullptr) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "no \"thread_pool %V\" is declared above \"%V\": unless one follows, nginx refuses "
                           "this line; add \"thread_pool %V threads=4;\" to the main context (outside http { })",
                           &name, &cmd->name, &name);
    }
    return ngx_thread_pool_add(cf, &name) == nullptr ? static_cast<char *>(NGX_CONF_ERROR) : NGX_CONF_OK;
}

// signin_site_name NAME: {{site_name}} in the emails (default: the origin without its scheme).
static char *set_site_name(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    try {
        auto *m = static_cast<MainConf *>(conf);
        ngx_str_t name = static_cast<ngx_str_t *>(cf->args->elts)[1];
        std::string_view v = sv(name);
        if (v.empty() || v.size() > 100 || v.find_first_of("\r\n") != std::string_view::npos) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_site_name must be one line of 1 to 100 bytes");
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        m->emails->set_site_name(std::string(v));
        m->site_name = name;
        return NGX_CONF_OK;
    } catch (...) {
        return conf_exception(cf, "signin_site_name");
    }
}

// A file's whole text, or nullopt (nginx -t says why).
static std::optional<std::string> read_conf_file(ngx_conf_t *cf, ngx_command_t *cmd, ngx_str_t name, std::string &path) {
    if (ngx_conf_full_name(cf->cycle, &name, 1) != NGX_OK) return std::nullopt;
    path.assign(sv(name));
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno, "%V \"%s\" cannot be read", &cmd->name, path.c_str());
        return std::nullopt;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// signin_registration on|off [domain=DOMAIN ...] [file=PATH]: who may join, read now (and at
// every reload).
static char *set_registration(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    try {
        auto *m = static_cast<MainConf *>(conf);
        if (m->registration != NGX_CONF_UNSET) return const_cast<char *>("is duplicate");
        auto *value = static_cast<ngx_str_t *>(cf->args->elts);
        std::string_view flag = sv(value[1]);
        if (flag != "on" && flag != "off") {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_registration takes \"on\" or \"off\", not \"%V\"", &value[1]);
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        m->registration = flag == "on";
        if (cf->args->nelts == 2) return NGX_CONF_OK;
        if (!m->registration) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_registration off takes no domain= or file=");
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        m->join = pool_object<signin::People>(cf->pool);
        if (m->join == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
        for (ngx_uint_t i = 2; i < cf->args->nelts; i++) {
            std::string_view a = sv(value[i]);
            std::string text, what(a), why;
            if (a.rfind("domain=", 0) == 0) {
                text = "@" + std::string(a.substr(7));
            } else if (a.rfind("file=", 0) == 0) {
                auto file = read_conf_file(cf, cmd, ngx_str_t{value[i].len - 5, value[i].data + 5}, what);
                if (!file) return static_cast<char *>(NGX_CONF_ERROR);
                text = std::move(*file);
            } else {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\" (domain=DOMAIN or file=PATH)", &value[i]);
                return static_cast<char *>(NGX_CONF_ERROR);
            }
            auto people = signin::People::parse(text, &why);
            if (!people) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_registration \"%s\": %s", what.c_str(), why.c_str());
                return static_cast<char *>(NGX_CONF_ERROR);
            }
            m->join->add(*people);
        }
        return NGX_CONF_OK;
    } catch (...) {
        return conf_exception(cf, "signin_registration");
    }
}

// signin_allow FORM [VALUE] / signin_deny FORM [VALUE] (cmd->offset: 1 = allow). A file is read
// now: a reload reads it again.
static char *set_access_rule(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    try {
        auto *l = static_cast<LocConf *>(conf);
        auto *value = static_cast<ngx_str_t *>(cf->args->elts);
        const bool allow = cmd->offset == 1;
        std::string_view form = sv(value[1]);
        std::string_view arg = cf->args->nelts > 2 ? sv(value[2]) : std::string_view();
        std::string text;
        std::string path;
        if (form == "file" && !arg.empty()) {
            auto file = read_conf_file(cf, cmd, value[2], path);
            if (!file) return static_cast<char *>(NGX_CONF_ERROR);
            text = std::move(*file);
            arg = path;
        }
        auto rule = signin::AccessRules::rule(allow, form, arg, text);
        if (!rule) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%V: %s", &cmd->name, rule.error().message.c_str());
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        if (l->rules == nullptr) {
            l->rules = pool_object<signin::AccessRules>(cf->pool);
            if (l->rules == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
        }
        l->rules->add(std::move(rule.value()));
        return NGX_CONF_OK;
    } catch (...) {
        return conf_exception(cf, "signin_allow/signin_deny");
    }
}

static char *set_email_previews(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *l = static_cast<LocConf *>(conf);
    if (l->previews != NGX_CONF_UNSET) return const_cast<char *>("is duplicate");
    l->previews = 1;
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
    clcf->handler = email_previews_handler;
    static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_signin_module))->previews = 1;
    return NGX_CONF_OK;
}

// ---------------------------------------------------------------- variables

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

static ngx_int_t get_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data) {
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
    case VarAssertion:
        try {
            s = assertion_of(r, ctx);
        } catch (...) {
            return NGX_ERROR;
        }
        break;
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

static ngx_int_t preconfiguration(ngx_conf_t *cf) {
    for (ngx_http_variable_t *v = variables; v->name.len; v++) {
        ngx_http_variable_t *var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == nullptr) return NGX_ERROR;
        var->get_handler = v->get_handler;
        var->data = v->data;
    }
    return NGX_OK;
}

static ngx_int_t postconfiguration(ngx_conf_t *cf) {
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
        try {
            std::string base = m->origin->text + std::string(sv(m->link_location));
            if (base.back() != '/') base += '/';
            m->emails->set_link_base(std::move(base));
        } catch (...) {
            return NGX_ERROR;
        }
    }
    try {
        if (check_provider_fetch(cf, m) != NGX_OK) return NGX_ERROR;
        if (m->email) return find_delivery_server(cf, m);
    } catch (...) {  // the messages are built in std::string
        return NGX_ERROR;
    }
    return NGX_OK;
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
    try {
        signin::prepare_store(sv(m->store_path), root ? std::optional<unsigned>(ccf->user) : std::nullopt);
    } catch (const signin::StoreError &e) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0, "signin_store: %s", e.what());
        return NGX_ERROR;
    }
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
    try {
        return init_module_checked(cycle);
    } catch (const std::exception &e) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0, "signin_store could not be prepared: %s", e.what());
    } catch (...) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0, "signin_store could not be prepared");
    }
    return NGX_ERROR;
}
