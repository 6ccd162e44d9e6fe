// ngx_http_signin_module: directives, configuration, process hooks and variables of the sign-in
// half. The engine is the core (include/signin); this file only translates.
#include "signin_conf.h"
#include "signin_directives.h"
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
static ngx_int_t postconfiguration(ngx_conf_t *cf);
static ngx_int_t init_module(ngx_cycle_t *cycle);

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
    {ngx_string("signin_store"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE12,
     guarded_directive<set_store>, NGX_HTTP_MAIN_CONF_OFFSET, 0,
     nullptr},
    {ngx_string("signin_origin"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, set_origin, NGX_HTTP_MAIN_CONF_OFFSET, 0,
     nullptr},
    {ngx_string("signin_registration"), NGX_HTTP_MAIN_CONF | NGX_CONF_1MORE, set_registration,
     NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
    {ngx_string("signin_passwords"), NGX_HTTP_MAIN_CONF | NGX_CONF_FLAG, ngx_conf_set_flag_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, passwords), nullptr},
    {ngx_string("signin_password_min_length"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
     guarded_directive<set_min_length>,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, password_min_length), nullptr},
    {ngx_string("signin_password_blocklist"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, set_blocklist,
     NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
    {ngx_string("signin_password_hash"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE12,
     guarded_directive<set_hash>, NGX_HTTP_MAIN_CONF_OFFSET, 0,
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
    {ngx_string("signin_secret_key"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
     guarded_directive<set_secret_key>, NGX_HTTP_MAIN_CONF_OFFSET,
     0, nullptr},
    {ngx_string("signin_client"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_http_set_complex_value_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, client), nullptr},
    {ngx_string("signin_client_ipv6_prefix"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_conf_set_num_slot,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, client_ipv6_prefix), &ipv6_prefix_bounds},
    {ngx_string("signin_thread_pool"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, guarded_directive<set_thread_pool>,
     NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, thread_pool_name), nullptr},
    {ngx_string("signin_password_thread_pool"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
     guarded_directive<set_thread_pool>,
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
    {ngx_string("signin_api"), NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS,
     guarded_directive<set_api>, NGX_HTTP_LOC_CONF_OFFSET, 0, nullptr},
    {ngx_string("signin_require"), NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE1,
     guarded_directive<set_require>, NGX_HTTP_LOC_CONF_OFFSET, offsetof(LocConf, require), require_modes},
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
    {ngx_string("signin_metrics"), NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS,
     guarded_directive<set_metrics>, NGX_HTTP_LOC_CONF_OFFSET, 0,
     nullptr},
    {ngx_string("signin_dev_mailbox"), NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS | NGX_CONF_TAKE1,
     guarded_directive<set_mailbox>, NGX_HTTP_LOC_CONF_OFFSET, 0,
     nullptr},
    {ngx_string("signin_site_name"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, set_site_name, NGX_HTTP_MAIN_CONF_OFFSET, 0,
     nullptr},
    {ngx_string("signin_email_template"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE2 | NGX_CONF_TAKE3 | NGX_CONF_TAKE4,
     set_email_template, NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
    {ngx_string("signin_languages"), NGX_HTTP_MAIN_CONF | NGX_CONF_1MORE, set_languages, NGX_HTTP_MAIN_CONF_OFFSET, 0,
     nullptr},
    {ngx_string("signin_messages"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE2, set_messages, NGX_HTTP_MAIN_CONF_OFFSET, 0,
     nullptr},
    {ngx_string("signin_pass_credentials"), NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_FLAG,
     ngx_conf_set_flag_slot, NGX_HTTP_LOC_CONF_OFFSET, offsetof(LocConf, pass_credentials), nullptr},
    {ngx_string("signin_email_previews"), NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS,
     guarded_directive<set_email_previews>,
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
    add_variables, postconfiguration, create_main_conf, init_main_conf, nullptr, nullptr, create_loc_conf,
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
                                       commands,
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

// ---------------------------------------------------------------- configuration

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
    m->texts = pool_object<Texts>(cf->pool);
    if (m->texts == nullptr) return nullptr;
    return m;
}

static char *init_main_conf(ngx_conf_t *cf, void *conf) {
    return guard_conf(cf, "the signin configuration", [&]() -> char * {
        return finish_main_conf(cf, static_cast<MainConf *>(conf));
    });
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
    if (m->email) return find_delivery_server(cf, m);
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
