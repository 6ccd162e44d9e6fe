// Emails and their delivery: email sign-in on or off, the HTTP mail API (signin_delivery) and the
// outbox's settings, the emails' templates and previews, the dev mailbox; and what nginx -t checks
// of them. The mail relay's directives (signin_smtp*) are ngx_http_signin_smtp_module's.
#include "signin_conf.h"
#include "signin_delivery.h"
#include "signin_directives.h"
#include "signin_handlers.h"
#include "signin_smtp.h"

#include <fstream>
#include <sstream>
#include <string>

namespace signin_ngx {

// ---------------------------------------------------------------- directives

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

// signin_email_template PURPOSE FILE [HTML_FILE] [lang=TAG]: replaces one purpose's ready-made
// email, in every language or in one. The files are read and checked now, so nginx -t refuses a
// template that would make a bad email.
static char *set_email_template(ngx_conf_t *cf, ngx_command_t *, void *conf) {
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
                           "EmailChange, EmailChangeApproval, EmailChanged, PasswordChanged, Invitation, MfaLocked, "
                           "NewSignIn, or their tags)",
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

static char *set_email_previews(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *l = static_cast<LocConf *>(conf);
    if (l->previews != NGX_CONF_UNSET) return const_cast<char *>("is duplicate");
    l->previews = 1;
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module));
    clcf->handler = email_previews_handler;
    static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_signin_module))->previews = 1;
    return NGX_CONF_OK;
}

static ngx_conf_num_bounds_t retries_bounds = {ngx_conf_check_num_bounds, 0, 10};

Directives delivery_directives() {
    static ngx_command_t table[] = {
        {ngx_string("signin_email"), NGX_HTTP_MAIN_CONF | NGX_CONF_FLAG, policy_flag<&signin::Policy::with_email>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_delivery"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, noted<ngx_conf_set_str_slot>,
         NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, delivery_uri), nullptr},
        {ngx_string("signin_delivery_retries"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
         setting<ngx_conf_set_num_slot, ngx_int_t, &MainConf::outbox, &signin::OutboxSettings::retries>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, &retries_bounds},
        {ngx_string("signin_delivery_timeout"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
         setting<ngx_conf_set_msec_slot, ngx_msec_t, &MainConf::outbox, &signin::OutboxSettings::hold>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_email_template"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE2 | NGX_CONF_TAKE3 | NGX_CONF_TAKE4, set_email_template,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_email_previews"), NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS,
         guarded_directive<set_email_previews>, NGX_HTTP_LOC_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_dev_mailbox"), NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS | NGX_CONF_TAKE1,
         guarded_directive<set_mailbox>, NGX_HTTP_LOC_CONF_OFFSET, 0, nullptr},
    };
    return table;
}

// ---------------------------------------------------------------- checks

char *check_mail_pages(ngx_conf_t *cf, MainConf *m) {
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
    return NGX_CONF_OK;
}

char *check_delivery(ngx_conf_t *cf, MainConf *m) {
    signin::conf::Delivery d;
    d.email = m->policy->with_email;
    d.http_api = m->delivery_uri.len != 0;
    d.smtp = smtp_written(cf);
    d.hold = m->outbox->hold;
    return report(cf, m, signin::conf::check_delivery(d)) ? NGX_CONF_OK : static_cast<char *>(NGX_CONF_ERROR);
}

// ---------------------------------------------------------------- where deliveries are made

// The exact or prefix location of a static location tree that serves uri, as nginx's search
// finds it; nullptr when none does.
namespace {

ngx_http_core_loc_conf_t *static_location(ngx_http_location_tree_node_t *node, const u_char *uri, size_t len) {
    ngx_http_core_loc_conf_t *found = nullptr;
    while (node != nullptr) {
        size_t n = len <= node->len ? len : node->len;
        ngx_int_t rc = ngx_filename_cmp(const_cast<u_char *>(uri), node->name, n);
        if (rc != 0) {
            node = rc < 0 ? node->left : node->right;
            continue;
        }
        if (len > node->len) {
            if (node->inclusive) {  // a prefix location: a longer one may follow inside it
                found = node->inclusive;
                node = node->tree;
                uri += n;
                len -= n;
                continue;
            }
            node = node->right;
            continue;
        }
        if (len == node->len) return node->exact != nullptr ? node->exact : node->inclusive;
        node = node->left;
    }
    return found;
}

}  // namespace

ngx_http_core_loc_conf_t *find_location(ngx_conf_t *cf, const ngx_str_t &uri, ngx_http_conf_ctx_t **server) {
    auto *cmcf =
        static_cast<ngx_http_core_main_conf_t *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module));
    auto **servers = static_cast<ngx_http_core_srv_conf_t **>(cmcf->servers.elts);
    for (ngx_uint_t i = 0; i < cmcf->servers.nelts; i++) {
        ngx_http_conf_ctx_t *ctx = servers[i]->ctx;
        auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ctx->loc_conf[ngx_http_core_module.ctx_index]);
        if (ngx_http_core_loc_conf_t *loc = static_location(clcf->static_locations, uri.data, uri.len)) {
            if (server != nullptr) *server = ctx;
            return loc;
        }
    }
    return nullptr;
}

ngx_int_t find_delivery_server(ngx_conf_t *cf, MainConf *m) {
    if (m->delivery_uri.len == 0) return NGX_OK;
    if (find_location(cf, m->delivery_uri, &m->delivery_ctx) != nullptr) return NGX_OK;
    std::string uri(sv(m->delivery_uri));
    log_at(cf, NGX_LOG_EMERG, m, "signin_delivery",
           "signin_delivery \"" + uri + "\" matches no exact or prefix location in any server: add \"location = " + uri +
               " { internal; proxy_pass ...; }\"");
    return NGX_ERROR;
}

}  // namespace signin_ngx
