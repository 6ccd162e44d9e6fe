// Languages of the pages and emails: signin_languages (which, the first the default) and
// signin_messages (an operator's PO file over a language's catalog). Both are read and parsed with
// the configuration, and once the http block is read every page and email is written in each
// language, so that a request only picks one (the choice itself is the core's, signin/i18n.hpp).
#include "signin_conf.h"
#include "signin_directives.h"

#include <string>

namespace signin_ngx {

// signin_languages TAG...: the languages of the pages and emails, the first the default. Each
// needs a catalog (shipped, or given by signin_messages); that is checked once the block is read.
static char *set_languages(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
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
// the shipped catalog (or the whole catalog of a language the module does not ship). Parsed now:
// nginx -t names a bad entry's line.
static char *set_messages(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    const std::string tag(sv(value[1]));
    if (!signin::i18n::valid_tag(tag)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_messages: \"%V\" is not a language tag", &value[1]);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (m->texts->messages.count(tag)) return const_cast<char *>("is duplicate for this language");
    std::string path;
    auto text = read_conf_file(cf, cmd, value[2], path);
    if (!text) return static_cast<char *>(NGX_CONF_ERROR);
    if (text->size() > 4u << 20) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_messages: \"%s\" is over 4m", path.c_str());
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    auto parsed = signin::i18n::parse_po(*text);
    if (!parsed) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_messages: \"%s\", %s", path.c_str(),
                           parsed.error().message.c_str());
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    m->texts->messages[tag] = std::move(*text);
    return NGX_CONF_OK;
}

Directives language_directives() {
    static ngx_command_t table[] = {
        {ngx_string("signin_languages"), NGX_HTTP_MAIN_CONF | NGX_CONF_1MORE, guarded_directive<set_languages>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_messages"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE2, guarded_directive<set_messages>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
    };
    return table;
}

char *check_languages(ngx_conf_t *cf, MainConf *m) {
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
    constexpr signin::Millis day = 24LL * 3600 * 1000, minute = 60 * 1000;
    signin::pages::Settings fixed;
    fixed.remember_days = static_cast<long long>(m->policy->mfa_remember / day);
    fixed.token_minutes = static_cast<long long>((m->policy->token_ttl + minute - 1) / minute);
    fixed.fresh_minutes = static_cast<long long>((m->policy->fresh_window + minute - 1) / minute);
    t.pages.emplace(t.languages, fixed);
    return NGX_CONF_OK;
}

}  // namespace signin_ngx
