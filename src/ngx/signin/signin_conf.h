// The sign-in module's configuration (its directives are by feature in conf_*.cpp, see
// signin_directives.h) and the per-worker engine. Every glue file reads its settings through these
// two structs, and the engine's settings through MainConf::policy.
#pragma once

#include "ngx_signin_nginx.h"

#include <map>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "signin/access.hpp"
#include "signin/assertion.hpp"
#include "signin/auth.hpp"
#include "signin/conf_check.hpp"
#include "signin/outbox.hpp"
#include "signin/password.hpp"
#include "signin/emails.hpp"
#include "signin/i18n.hpp"
#include "signin/pages.hpp"
#include "signin/oidc.hpp"
#include "signin/oidc_provider.hpp"

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

// http level. What configures the engine is written straight into its own settings (`policy`,
// `outbox`) by the directives' slots (setting<...>); the rest is the glue's own.
struct MainConf {
    // the store and the site
    ngx_str_t store_path;     // signin_store: a directory, or a database's URI (signin::store_traits says which)
    size_t store_size;        // ... size=: a store in a directory, the most its file may grow to
    size_t store_connections; // ... connections=: a database, the most connections a worker holds
    size_t store_nodes;       // ... nodes=: a database, the nginx nodes sharing it (nginx -t's arithmetic)
    signin::Origin *origin;  // parsed at configuration time (pool cleanup destroys it)
    signin::Policy *policy;  // every engine setting: the defaults, then the directives written
    ngx_str_t site_name;     // signin_site_name ("": the origin without its scheme)
    ngx_str_t secret_key_path;          // signin_secret_key (default: the store's path + ".key")
    signin::SecretKey *secret_key;      // read (or made) by the master in init_module
    signin::AssertionKeys *assertions;  // $signin_assertion's keys, from the same file

    // requests
    ngx_http_complex_value_t *client;
    size_t body_max;
    ngx_msec_t session_cache;  // signin_session_cache: 0 = off (a store whose reads may block only)
    ngx_uint_t audit_max;      // signin_audit_max: the most audit entries the store keeps (0: the store's own bound)

    // thread pools: durable writes, and Argon2id (the write pool unless named)
    ngx_str_t thread_pool_name;
    ngx_thread_pool_t *thread_pool;
    ngx_str_t password_pool_name;
    ngx_thread_pool_t *password_pool;

    // passwords: the breached-password list (signin_password_blocklist), mapped by the master
    std::shared_ptr<const signin::password::Blocklist> *blocklist;

    // providers
    std::vector<signin::oidc::ProviderConfig> *providers;  // signin_provider, in order
    ngx_str_t provider_fetch_uri;  // signin_provider_fetch: the internal location of provider calls

    // the module as an OpenID provider
    signin::op::Clients *oidc_clients;  // signin_oidc_client (nullptr: none)
    signin::op::KeyRing *oidc_keys;     // signin_oidc_signing_key_file (nullptr: none)
    ngx_msec_t oidc_code_ttl;           // signin_oidc_code_ttl: how long a code may wait for its exchange

    // emails and their delivery
    signin::OutboxSettings *outbox;     // signin_delivery_timeout, signin_delivery_retries (the key comes later)
    ngx_str_t delivery_uri;
    ngx_http_conf_ctx_t *delivery_ctx;  // the server whose locations serve delivery_uri
    signin::Emails *emails;  // the ready-made emails, with every signin_email_template applied
    struct Texts *texts;     // signin_languages and signin_messages, and the pages in those languages
    ngx_flag_t previews;     // some location uses signin_email_previews
    ngx_str_t link_location;   // {{link}} lands here: the first signin_api location with signin_pages,
    ngx_flag_t link_to_pages;  // or else the first signin_api location

    // events for the application (signin_events.h)
    ngx_str_t events_uri;               // signin_events: the internal location events are posted to
    ngx_http_conf_ctx_t *events_ctx;    // the server whose locations serve it
    ngx_str_t events_secret_path;       // signin_events_secret_file
    signin::Secret *events_key;         // its key, read when the configuration is
    ngx_uint_t events_retries;          // signin_events_retries
    ngx_array_t *events_types;          // signin_events_types (ngx_str_t; nullptr: every type)
    ngx_str_t registration_check_uri;   // signin_registration_check: the internal location asked first

    // the dev mailbox
    ngx_shm_zone_t *mailbox;      // its zone, when signin_dev_mailbox is used
    ngx_flag_t mailbox_insecure;  // "signin_dev_mailbox insecure": allowed with a non-loopback origin
    ngx_uint_t mailbox_line;      // where it was first used, for the nginx -t message
    ngx_str_t mailbox_file;

    ngx_shm_zone_t *metrics_zone;  // signin_metrics' counters, when some location has signin_metrics

    ngx_array_t *written;  // DirectiveAt of the directives written through noted, setting and a few handlers

    ngx_flag_t admin;       // signin_admin on at some level (for nginx -t's check; the location's own is LocConf's)
    ngx_str_t admin_role;   // signin_admin_role (default "admin"), checked as a role is

    ngx_flag_t used;     // some location uses signin_api or signin_require
    ngx_flag_t has_api;  // some location uses signin_api
};

// The languages of pages and emails (configuration memory, a pool_object).
struct Texts {
    std::vector<std::string> tags;                // signin_languages as written (empty: English only)
    std::map<std::string, std::string> messages;  // signin_messages: tag -> the PO file's text
    std::shared_ptr<const signin::i18n::Languages> languages;  // made by check_languages
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
    ngx_flag_t admin;     // signin_admin (inherited): the administrators' API under this signin_api's admin/api/
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

// Whether the directive `name` was written in this http block through a slot that notes its line
// (noted, setting).
bool written(const MainConf *m, std::string_view name);

// A directive whose value is checked once the http block is parsed: nginx's own slot, and the line
// remembered for the check's message (log_at).
template <char *(*Slot)(ngx_conf_t *, ngx_command_t *, void *)>
char *noted(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    char *rv = Slot(cf, cmd, conf);
    if (rv == NGX_CONF_OK && !note_line(cf, static_cast<MainConf *>(conf), cmd)) return static_cast<char *>(NGX_CONF_ERROR);
    return rv;
}

namespace detail {

// nginx's slots refuse a field that is already set: each starts from its own "unset"
template <class Raw>
Raw unset() {
    if constexpr (std::is_same_v<Raw, ngx_str_t>) {
        return ngx_str_t{0, nullptr};
    } else {
        return static_cast<Raw>(NGX_CONF_UNSET);
    }
}

template <class Field, class Raw>
void assign(Field &field, const Raw &raw) {
    if constexpr (std::is_same_v<Raw, ngx_str_t>) {
        field = Field(sv(raw));
    } else if constexpr (std::is_same_v<Field, bool>) {
        field = raw != 0;
    } else {
        field = static_cast<Field>(raw);
    }
}

}  // namespace detail

// A directive that configures the engine: nginx's Slot parses the value into a Raw (the same
// messages and the same post handler, such as bounds, as a plain slot), and the value lands in the
// engine's settings object that MainConf's member `Where` points to, at the chain of members
// `Path` (&Policy::attempts, &AttemptLimits::backoff). Written twice is "is duplicate", as with
// nginx's slots; the line is kept for the checks made after parsing.
template <auto Slot, class Raw, auto Where, auto... Path>
char *setting(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    if (written(m, sv(cmd->name))) return const_cast<char *>("is duplicate");
    Raw raw = detail::unset<Raw>();
    ngx_command_t at_raw = *cmd;
    at_raw.offset = 0;
    char *rv = Slot(cf, &at_raw, &raw);
    if (rv != NGX_CONF_OK) return rv;
    detail::assign((*(m->*Where) .* ... .* Path), raw);
    return note_line(cf, m, cmd) ? NGX_CONF_OK : static_cast<char *>(NGX_CONF_ERROR);
}

// The settings of the engine's Policy by the value's form.
template <auto... Path>
char *policy_msec(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    return setting<ngx_conf_set_msec_slot, ngx_msec_t, &MainConf::policy, Path...>(cf, cmd, conf);
}
template <auto... Path>
char *policy_num(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    return setting<ngx_conf_set_num_slot, ngx_int_t, &MainConf::policy, Path...>(cf, cmd, conf);
}
template <auto... Path>
char *policy_flag(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    return setting<ngx_conf_set_flag_slot, ngx_flag_t, &MainConf::policy, Path...>(cf, cmd, conf);
}
template <auto... Path>
char *policy_str(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    return setting<ngx_conf_set_str_slot, ngx_str_t, &MainConf::policy, Path...>(cf, cmd, conf);
}

// Logs each problem of a core check (signin/conf_check.hpp) at its directive's line; false when
// one of them is an error (nginx -t fails).
bool report(ngx_conf_t *cf, const MainConf *m, const signin::conf::Problems &problems);

// A file a directive names, read whole at configuration time (relative to nginx's prefix), its full
// path in `path`; nullopt when it cannot be read (nginx -t says so, naming the directive).
std::optional<std::string> read_conf_file(ngx_conf_t *cf, ngx_command_t *cmd, ngx_str_t name, std::string &path);

// The http main conf of a cycle (process hooks have no request); nullptr without an http block.
MainConf *cycle_main_conf(ngx_cycle_t *cycle);

// The exact or prefix location that serves uri in the first server (in configuration order) that
// has one, as nginx's location search finds it, and that server's conf in `server` when given;
// nullptr when no server has one (nginx -t's checks of signin_delivery and signin_provider_fetch;
// conf_delivery.cpp).
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

// The http-level configuration (signin_main_conf.cpp): made with the engine's defaults, and once
// its block is read, the defaults of the glue's own settings and every feature's checks.
MainConf *create_main_conf(ngx_conf_t *cf);
char *finish_main_conf(ngx_conf_t *cf, MainConf *m);

// The module's variables (signin_variables.cpp), added at preconfiguration.
ngx_int_t add_variables(ngx_conf_t *cf);

// The per-worker engine (signin_worker.cpp), opened in init_process; nullptr when the store
// could not be opened (requests then answer 503).
signin::Identity *identity();

}  // namespace signin_ngx
