// The sign-in module's directive handlers (signin_directives.h): each checks its value as it is
// read, so nginx -t names the file and line of a mistake.
#include "signin_directives.h"
#include "signin_conf.h"
#include "signin_handlers.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "signin/password.hpp"

namespace signin_ngx {

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

char *set_provider(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    return guard_conf(cf, "signin_provider", [&]() -> char * {
        return set_provider_checked(cf, static_cast<MainConf *>(conf));
    });
}

char *set_store(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
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

char *set_secret_key(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    if (m->secret_key_path.len) return const_cast<char *>("is duplicate");
    m->secret_key_path = static_cast<ngx_str_t *>(cf->args->elts)[1];
    if (ngx_conf_full_name(cf->cycle, &m->secret_key_path, 0) != NGX_OK) return static_cast<char *>(NGX_CONF_ERROR);
    return NGX_CONF_OK;
}

char *set_origin(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    if (m->origin) return const_cast<char *>("is duplicate");
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    return guard_conf(cf, "signin_origin", [&]() -> char * {
        std::string why;
        std::optional<signin::Origin> o = signin::parse_origin(sv(value[1]), &why);
        if (!o) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid signin_origin \"%V\": %s", &value[1], why.c_str());
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        m->origin = pool_object<signin::Origin>(cf->pool);
        if (m->origin == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
        *m->origin = std::move(*o);
        return NGX_CONF_OK;
    });
}

char *set_min_length(ngx_conf_t *cf, ngx_command_t *, void *conf) {
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
char *set_blocklist(ngx_conf_t *cf, ngx_command_t *, void *conf) {
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
char *set_hash(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    if (m->password_hash_t != NGX_CONF_UNSET_UINT) return const_cast<char *>("is duplicate");
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    const signin::password::HashParams spec;  // the engine's: Argon2id, 19 MiB, 2 iterations
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

char *set_api(ngx_conf_t *cf, ngx_command_t *, void *conf) {
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

char *set_require(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    char *rv = ngx_conf_set_enum_slot(cf, cmd, conf);
    if (rv != NGX_CONF_OK) return rv;
    if (static_cast<LocConf *>(conf)->require) {
        auto *m = static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_signin_module));
        m->used = 1;
    }
    return NGX_CONF_OK;
}

static ngx_str_t mailbox_zone_name = ngx_string("signin_dev_mailbox");

char *set_mailbox(ngx_conf_t *cf, ngx_command_t *, void *conf) {
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

// Reads a file of `directive` at configuration time (at most `max` bytes).
static bool read_conf_file(ngx_conf_t *cf, const char *directive, ngx_str_t name, std::string &out,
                           std::size_t max) {
    if (ngx_conf_full_name(cf->cycle, &name, 1) != NGX_OK) return false;
    std::ifstream in(std::string(sv(name)), std::ios::binary);
    if (!in) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno, "%s: cannot read \"%V\"", directive, &name);
        return false;
    }
    std::ostringstream text;
    text << in.rdbuf();
    out = text.str();
    if (out.size() > max) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s: \"%V\" is over %uzk", directive, &name, max / 1024);
        return false;
    }
    return true;
}

// Reads a template file at configuration time (at most 64 KiB).
static bool read_template_file(ngx_conf_t *cf, ngx_str_t name, std::string &out) {
    return read_conf_file(cf, "signin_email_template", name, out, 64 * 1024);
}

// signin_email_template PURPOSE FILE [HTML_FILE] [lang=TAG]: replaces one purpose's ready-made
// email, in every language or in one. The files are read and checked now, so nginx -t refuses a
// template that would make a bad email.
char *set_email_template(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    std::string lang;
    ngx_uint_t files = cf->args->nelts - 2;  // FILE [HTML_FILE]
    if (std::string_view last = sv(value[cf->args->nelts - 1]); last.substr(0, 5) == "lang=") {
        lang = std::string(last.substr(5));
        if (!signin::i18n::valid_tag(lang)) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_email_template: \"%V\" is not a language tag",
                               &value[cf->args->nelts - 1]);
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        files--;
    }
    if (files < 1 || files > 2) return const_cast<char *>("takes PURPOSE FILE [HTML_FILE] [lang=TAG]");
    auto purpose = signin::purpose_from_text(sv(value[1]));
    if (!purpose) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "signin_email_template: unknown purpose \"%V\" (SignIn, Registration, AlreadyRegistered, "
                           "EmailChange, EmailChangeApproval, EmailChanged, PasswordChanged, Invitation, MfaLocked, or their tags)",
                           &value[1]);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (m->emails->is_custom(*purpose, lang)) return const_cast<char *>("is duplicate for this purpose");
    return guard_conf(cf, "signin_email_template", [&]() -> char * {
        std::string text, html;
        if (!read_template_file(cf, value[2], text)) return static_cast<char *>(NGX_CONF_ERROR);
        if (files == 2 && !read_template_file(cf, value[3], html)) return static_cast<char *>(NGX_CONF_ERROR);
        auto t = signin::Emails::parse(*purpose, text, html);
        signin::Status st = t ? m->emails->replace(*purpose, t.value(), lang) : signin::Status(t.error());
        if (!st) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid signin_email_template: %s",
                               st.error().message.c_str());
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        return NGX_CONF_OK;
    });
}

// signin_languages TAG...: the languages of the pages and emails, the first the default. Each
// needs a catalog (shipped, or given by signin_messages); that is checked once the block is read.
char *set_languages(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    if (!m->texts->tags.empty()) return const_cast<char *>("is duplicate");
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    for (ngx_uint_t i = 1; i < cf->args->nelts; i++) {
        const std::string tag(sv(value[i]));
        if (!signin::i18n::valid_tag(tag)) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_languages: \"%V\" is not a language tag (en, de, pt-BR)",
                               &value[i]);
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        m->texts->tags.push_back(tag);
    }
    return note_line(cf, m, cmd) ? NGX_CONF_OK : static_cast<char *>(NGX_CONF_ERROR);
}

// signin_messages TAG FILE.po: the operator's own wording of any string of a language, laid over
// the shipped catalog (or the whole catalog of a language the module does not ship). Read and
// parsed now: nginx -t names a bad entry's line.
char *set_messages(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    const std::string tag(sv(value[1]));
    if (!signin::i18n::valid_tag(tag)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_messages: \"%V\" is not a language tag", &value[1]);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (m->texts->messages.count(tag)) return const_cast<char *>("is duplicate for this language");
    return guard_conf(cf, "signin_messages", [&]() -> char * {
        std::string text;
        if (!read_conf_file(cf, "signin_messages", value[2], text, 4u << 20)) return static_cast<char *>(NGX_CONF_ERROR);
        auto parsed = signin::i18n::parse_po(text);
        if (!parsed) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_messages: \"%V\", %s", &value[2],
                               parsed.error().message.c_str());
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        m->texts->messages[tag] = std::move(text);
        return NGX_CONF_OK;
    });
}

// signin_thread_pool NAME / signin_password_thread_pool NAME: the pool is added here, so that
// nginx's "unknown thread pool" names this line when no `thread_pool NAME ...;` declares it.
// nginx says so only once the whole file is read, and not what to write; a declaration may still
// follow the http block, so a pool not declared above this line is a warning that gives the line
// to add, and nginx's own check decides.
char *set_thread_pool(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
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
char *set_site_name(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    return guard_conf(cf, "signin_site_name", [&]() -> char * {
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
    });
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
char *set_registration(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    return guard_conf(cf, "signin_registration", [&]() -> char * {
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
    });
}

// signin_allow FORM [VALUE] / signin_deny FORM [VALUE] (cmd->offset: 1 = allow). A file is read
// now: a reload reads it again.
char *set_access_rule(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    return guard_conf(cf, "signin_allow/signin_deny", [&]() -> char * {
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
    });
}

char *set_email_previews(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *l = static_cast<LocConf *>(conf);
    if (l->previews != NGX_CONF_UNSET) return const_cast<char *>("is duplicate");
    l->previews = 1;
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
    clcf->handler = email_previews_handler;
    static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_signin_module))->previews = 1;
    return NGX_CONF_OK;
}

}  // namespace signin_ngx
