// The sign-in module's configuration (directives of ngx_http_signin_module.cpp) and the
// per-worker engine. Every glue file reads its settings through these two structs.
#pragma once

#include "ngx_signin_nginx.h"

#include <map>
#include <memory>
#include <optional>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "signin/access.hpp"
#include "signin/assertion.hpp"
#include "signin/auth.hpp"
#include "signin/emails.hpp"
#include "signin/i18n.hpp"
#include "signin/pages.hpp"
#include "signin/oidc.hpp"

extern "C" {
extern ngx_module_t ngx_http_signin_module;
}

namespace signin_ngx {

// Where a directive of the http block was written. Checks made once the block is parsed name
// this line: ngx_conf_log_error would name the end of the block.
struct DirectiveAt {
    ngx_str_t name;  // the directive's name
    u_char *file;    // the configuration file's name (zero-terminated, the cycle's memory)
    ngx_uint_t line;
};

// http level. Settings that are the engine's (limits, lifetimes) are gathered into
// `policy` by init_main_conf; the glue reads them there, never from the raw fields.
struct MainConf {
    // the store and the site
    ngx_str_t store_path;     // signin_store: a directory, or a database's URI (signin::store_traits says which)
    size_t store_size;        // ... size=: a store in a directory, the most its file may grow to
    signin::Origin *origin;  // parsed at configuration time (pool cleanup destroys it)
    signin::Policy *policy;  // every engine setting, built by init_main_conf

    // ways in
    ngx_flag_t registration;
    signin::People *join;  // signin_registration on domain=... file=...: who may join (nullptr: anyone)
    ngx_flag_t passwords;
    ngx_flag_t email;
    ngx_flag_t mfa;            // signin_mfa: second factors
    ngx_msec_t mfa_remember;   // signin_mfa_remember: how long a device is remembered (0: never)
    ngx_uint_t mfa_free_failures;  // signin_mfa_free_failures: an account's wrong codes in a row before waits
    ngx_msec_t mfa_backoff;        // signin_mfa_backoff: the first wait, doubling
    ngx_uint_t mfa_lock;           // signin_mfa_lock: wrong codes in a row that lock the factor (0: never)
    ngx_uint_t browser_accounts;  // signin_browser_accounts: accounts per browser
    ngx_flag_t passkeys;          // signin_passkeys
    ngx_str_t passkey_rp_id;      // signin_passkey_rp_id ("" = the origin's host)
    ngx_shm_zone_t *metrics_zone;  // signin_metrics' counters, when some location has signin_metrics
    std::vector<signin::oidc::ProviderConfig> *providers;  // signin_provider, in order
    ngx_str_t provider_fetch_uri;  // signin_provider_fetch: the internal location of provider calls

    // requests
    ngx_http_complex_value_t *client;
    ngx_uint_t client_ipv6_prefix;  // IPv6 clients are counted by this prefix
    size_t body_max;

    // thread pools: durable writes, and Argon2id (the write pool unless named)
    ngx_str_t thread_pool_name;
    ngx_thread_pool_t *thread_pool;
    ngx_str_t password_pool_name;
    ngx_thread_pool_t *password_pool;

    // tokens and sessions (raw directive values; see policy)
    ngx_msec_t token_ttl;
    ngx_msec_t token_resend;
    ngx_uint_t tokens_per_address;
    ngx_msec_t session_ttl;
    ngx_msec_t session_idle;
    ngx_msec_t bearer_ttl;
    ngx_msec_t audit_keep;
    ngx_uint_t audit_max;  // signin_audit_max: the most audit entries the store keeps (0: the store's own bound)

    // passwords (raw directive values; see policy)
    ngx_uint_t password_min_length;
    ngx_uint_t password_attempts;
    ngx_msec_t password_backoff;
    ngx_msec_t password_backoff_max;
    ngx_uint_t password_address_limit;
    ngx_msec_t password_address_window;
    ngx_msec_t password_register_backoff;
    ngx_msec_t password_register_backoff_max;
    ngx_msec_t password_fresh;
    ngx_uint_t password_hash_t;
    size_t password_hash_m;
    std::shared_ptr<const signin::password::Blocklist> *blocklist;  // signin_password_blocklist

    // emails and their delivery
    ngx_str_t delivery_uri;
    ngx_http_conf_ctx_t *delivery_ctx;  // the server whose locations serve delivery_uri
    ngx_uint_t delivery_retries;        // signin_delivery_retries
    ngx_msec_t delivery_timeout;        // signin_delivery_timeout: how long a send holds its email
    ngx_msec_t session_cache;           // signin_session_cache: 0 = off (a store whose reads may block only)
    ngx_str_t secret_key_path;          // signin_secret_key (default: the store's path + ".key")
    signin::SecretKey *secret_key;      // read (or made) by the master in init_module
    signin::AssertionKeys *assertions;  // $signin_assertion's keys, from the same file
    signin::Emails *emails;  // the ready-made emails, with every signin_email_template applied
    ngx_flag_t previews;     // some location uses signin_email_previews
    ngx_str_t site_name;     // signin_site_name ("": the origin without its scheme)
    struct Texts *texts;     // signin_languages and signin_messages, and the pages in those languages
    ngx_str_t link_location;   // {{link}} lands here: the first signin_api location with signin_pages,
    ngx_flag_t link_to_pages;  // or else the first signin_api location

    // the dev mailbox
    ngx_shm_zone_t *mailbox;      // its zone, when signin_dev_mailbox is used
    ngx_flag_t mailbox_insecure;  // "signin_dev_mailbox insecure": allowed with a non-loopback origin
    ngx_uint_t mailbox_line;      // where it was first used, for the nginx -t message
    ngx_str_t mailbox_file;

    ngx_array_t *written;  // DirectiveAt of the directives checked after parsing (note_line)

    ngx_flag_t used;     // some location uses signin_api or signin_require
    ngx_flag_t has_api;  // some location uses signin_api
};

// The languages of pages and emails (configuration memory, a pool_object).
struct Texts {
    std::vector<std::string> tags;                // signin_languages as written (empty: English only)
    std::map<std::string, std::string> messages;  // signin_messages: tag -> the PO file's text
    std::shared_ptr<const signin::i18n::Languages> languages;  // made by finish_main_conf
    std::optional<signin::pages::Localized> pages;             // ... and the pages in them
};

// location level
struct LocConf {
    ngx_flag_t api;       // signin_api
    ngx_uint_t require;   // signin_require (inherited): 0 off, 1 on, 2 mfa (a session that passed a second factor)
    ngx_flag_t mailbox;   // signin_dev_mailbox
    ngx_flag_t previews;  // signin_email_previews
    ngx_flag_t pass_credentials;  // signin_pass_credentials (inherited): the credential reaches the upstream
    signin::AccessRules *rules;   // signin_allow / signin_deny of this level, or the inherited list
    ngx_http_complex_value_t *assertion_audience;  // signin_assertion_audience (default: signin_origin's host)
    ngx_str_t login_url;  // signin_login_url (inherited): where a signed-out browser navigation goes
    ngx_flag_t pages;     // signin_pages: the sign-in and account pages, beside signin_api
    ngx_str_t pages_css;  // signin_pages_css (inherited): the site's stylesheet for the pages
};

inline MainConf *main_conf(ngx_http_request_t *r) {
    return static_cast<MainConf *>(ngx_http_get_module_main_conf(r, ngx_http_signin_module));
}
inline LocConf *loc_conf(ngx_http_request_t *r) {
    return static_cast<LocConf *>(ngx_http_get_module_loc_conf(r, ngx_http_signin_module));
}

// Remembers where `cmd` is written, for log_at; false when memory runs out.
bool note_line(ngx_conf_t *cf, MainConf *m, const ngx_command_t *cmd);
// Logs a message of a check made after the http block was parsed, ending "in FILE:LINE" of
// `directive` (the last one written), or at the block's end when it was not written (its default
// is at fault).
void log_at(ngx_conf_t *cf, ngx_uint_t level, const MainConf *m, std::string_view directive, const std::string &message);

// The http main conf of a cycle (process hooks have no request); nullptr without an http block.
MainConf *cycle_main_conf(ngx_cycle_t *cycle);

// The exact or prefix location that serves uri in the first server (in configuration order) that
// has one, as nginx's location search finds it, and that server's conf in `server` when given;
// nullptr when no server has one (nginx -t's checks of signin_delivery and signin_provider_fetch;
// signin_delivery.cpp).
ngx_http_core_loc_conf_t *find_location(ngx_conf_t *cf, const ngx_str_t &uri, ngx_http_conf_ctx_t **server = nullptr);

// A C++ object in configuration memory: constructed in a pool cleanup that runs its destructor
// (nginx-otel's habit). nullptr when memory runs out.
template <class T>
T *pool_object(ngx_pool_t *pool) noexcept {
    ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(pool, sizeof(T));
    if (cln == nullptr) return nullptr;
    return guard(
        [cln] {
            T *obj = new (cln->data) T();
            cln->handler = [](void *p) { static_cast<T *>(p)->~T(); };
            return obj;
        },
        [](const std::exception *) -> T * { return nullptr; });
}

// The http-level configuration once its block is read (signin_main_conf.cpp): defaults, the
// engine's Policy, and the checks nginx -t makes on the whole block.
char *finish_main_conf(ngx_conf_t *cf, MainConf *m);

// The module's variables (signin_variables.cpp), added at preconfiguration.
ngx_int_t add_variables(ngx_conf_t *cf);

// The per-worker engine (signin_worker.cpp), opened in init_process; nullptr when the store
// could not be opened (requests then answer 503).
signin::Identity *identity();

}  // namespace signin_ngx
