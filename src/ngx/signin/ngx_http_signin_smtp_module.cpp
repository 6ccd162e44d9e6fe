// ngx_http_signin_smtp_module: the directives of email over SMTP and their checks (signin_smtp.h).
//
//   signin_smtp smtp://HOST[:PORT] | smtps://HOST[:PORT];   (http) the relay, instead of signin_delivery
//   signin_smtp_from "Name <addr>";                         (http) the sender, required with signin_smtp
//   signin_smtp_reply_to ADDR;                              (http)
//   signin_smtp_auth_file PATH;                             (http) one line user:password, read by the master
//   signin_smtp_trusted_certificate PATH;                   (http) CAs for the relay's certificate
//   signin_smtp_timeout TIME;                               (http) default 30s
//
// The settings are checked by the core (smtp::check) once the http block is read, each problem on
// a line of its own naming the directive's file and line.
#include "signin_smtp.h"
#include "signin_conf.h"

#include <string>
#include <string_view>

using namespace signin_ngx;

namespace {

// The directives, in the order of `commands` (their index is where a directive's line is kept).
enum Directive : std::size_t { Url, From, ReplyTo, AuthFile, TrustedCertificate, Timeout, kDirectives };

struct SmtpConf {
    ngx_str_t value[kDirectives];  // as written (Timeout's is unused)
    ngx_msec_t timeout;
    DirectiveAt at[kDirectives];   // where each was written (file nullptr: not written)
    signin::smtp::Settings *settings;  // checked settings, when signin_smtp is set
};

char *set_value(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);

ngx_command_t commands[] = {
    {ngx_string("signin_smtp"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, set_value, NGX_HTTP_MAIN_CONF_OFFSET, Url,
     nullptr},
    {ngx_string("signin_smtp_from"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, set_value, NGX_HTTP_MAIN_CONF_OFFSET, From,
     nullptr},
    {ngx_string("signin_smtp_reply_to"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, set_value, NGX_HTTP_MAIN_CONF_OFFSET,
     ReplyTo, nullptr},
    {ngx_string("signin_smtp_auth_file"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, set_value, NGX_HTTP_MAIN_CONF_OFFSET,
     AuthFile, nullptr},
    {ngx_string("signin_smtp_trusted_certificate"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, set_value,
     NGX_HTTP_MAIN_CONF_OFFSET, TrustedCertificate, nullptr},
    {ngx_string("signin_smtp_timeout"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, set_value, NGX_HTTP_MAIN_CONF_OFFSET,
     Timeout, nullptr},
    ngx_null_command};

char *set_value(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    auto *c = static_cast<SmtpConf *>(conf);
    const std::size_t i = cmd->offset;
    if (c->at[i].file != nullptr) return const_cast<char *>("is duplicate");
    auto *args = static_cast<ngx_str_t *>(cf->args->elts);
    if (i == Timeout) {
        c->timeout = ngx_parse_time(&args[1], 0);
        if (c->timeout == static_cast<ngx_msec_t>(NGX_ERROR)) return const_cast<char *>("invalid value");
    } else {
        if (args[1].len == 0) return const_cast<char *>("is empty");
        c->value[i] = args[1];
    }
    c->at[i] = {cmd->name, cf->conf_file->file.name.data, cf->conf_file->line};
    return NGX_CONF_OK;
}

void *create_main_conf(ngx_conf_t *cf) {
    auto *c = static_cast<SmtpConf *>(ngx_pcalloc(cf->pool, sizeof(SmtpConf)));
    if (c == nullptr) return nullptr;
    c->timeout = NGX_CONF_UNSET_MSEC;
    return c;
}

// Logs a problem at the line of the directive it names (the longest name it starts with), or at
// the block's end when that directive was not written.
void log_problem(ngx_conf_t *cf, const SmtpConf *c, const std::string &problem) {
    const DirectiveAt *at = nullptr;
    std::size_t best = 0;
    for (std::size_t i = 0; i < kDirectives; i++) {
        std::string_view name = sv(commands[i].name);
        if (name.size() <= best || problem.compare(0, name.size(), name) != 0) continue;
        if (problem.size() > name.size()) {
            const char next = problem[name.size()];
            if (next == '_' || (next >= 'a' && next <= 'z')) continue;
        }
        best = name.size();
        at = c->at[i].file != nullptr ? &c->at[i] : nullptr;
    }
    if (at == nullptr && c->at[Url].file != nullptr) at = &c->at[Url];
    if (at == nullptr) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s", problem.c_str());
        return;
    }
    ngx_log_error(NGX_LOG_EMERG, cf->log, 0, "%s in %s:%ui", problem.c_str(), at->file, at->line);
}

char *check_conf(ngx_conf_t *cf, SmtpConf *c) {
    ngx_conf_init_msec_value(c->timeout, 30000);
    if (c->value[Url].len == 0) {
        for (std::size_t i = From; i < kDirectives; i++) {
            if (c->at[i].file == nullptr) continue;
            ngx_log_error(NGX_LOG_WARN, cf->log, 0, "\"%V\" without \"signin_smtp\" is ignored in %s:%ui", &c->at[i].name,
                          c->at[i].file, c->at[i].line);
        }
        return NGX_CONF_OK;
    }
    auto *m = static_cast<MainConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_signin_module));
    signin::conf::Delivery ways;
    ways.http_api = m != nullptr && m->delivery_uri.len != 0;
    ways.smtp = true;
    const signin::conf::Problems contradictions = signin::conf::check_delivery_ways(ways);
    for (const signin::conf::Problem &problem : contradictions) log_problem(cf, c, problem.message);
    const bool failed = signin::conf::has_error(contradictions);
    signin::smtp::Config config;
    config.url = std::string(sv(c->value[Url]));
    config.from = std::string(sv(c->value[From]));
    config.reply_to = std::string(sv(c->value[ReplyTo]));
    config.auth_file = std::string(sv(c->value[AuthFile]));
    config.trusted_certificate = std::string(sv(c->value[TrustedCertificate]));
    config.timeout = static_cast<signin::Millis>(c->timeout);
    signin::smtp::Checked checked = signin::smtp::check(config);
    for (const std::string &problem : checked.problems) log_problem(cf, c, problem);
    if (failed || !checked.ok()) return static_cast<char *>(NGX_CONF_ERROR);
    c->settings = pool_object<signin::smtp::Settings>(cf->pool);
    if (c->settings == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
    *c->settings = std::move(checked.settings);
    return NGX_CONF_OK;
}

char *init_main_conf(ngx_conf_t *cf, void *conf) {
    return guard_conf(cf, "the signin_smtp configuration", [&] { return check_conf(cf, static_cast<SmtpConf *>(conf)); });
}

// In the master, before the workers fork: libcurl's global state is not made safely by threads.
ngx_int_t init_module(ngx_cycle_t *cycle) {
    static bool started = false;  // once per process, whatever the reloads
    if (started || smtp_settings(cycle) == nullptr) return NGX_OK;
    return guard_log(cycle->log, NGX_LOG_EMERG, "signin_smtp: starting libcurl", ngx_int_t{NGX_ERROR}, [&] {
        signin::Status s = signin::smtp::global_init();
        if (!s) {
            ngx_log_error(NGX_LOG_EMERG, cycle->log, 0, "signin_smtp: %s", s.error().message.c_str());
            return ngx_int_t{NGX_ERROR};
        }
        started = true;
        return ngx_int_t{NGX_OK};
    });
}

void exit_process(ngx_cycle_t *) { stop_smtp(); }

ngx_http_module_t module_ctx = {nullptr, nullptr, create_main_conf, init_main_conf, nullptr, nullptr, nullptr, nullptr};

}  // namespace

extern "C" {
ngx_module_t ngx_http_signin_smtp_module = {NGX_MODULE_V1,
                                            &module_ctx,
                                            commands,
                                            NGX_HTTP_MODULE,
                                            nullptr,
                                            init_module,
                                            nullptr,
                                            nullptr,
                                            nullptr,
                                            exit_process,
                                            nullptr,
                                            NGX_MODULE_V1_PADDING};
}

bool signin_ngx::smtp_written(ngx_conf_t *cf) {
    auto *c = static_cast<SmtpConf *>(ngx_http_conf_get_module_main_conf(cf, ngx_http_signin_smtp_module));
    return c != nullptr && c->value[Url].len != 0;
}

const signin::smtp::Settings *signin_ngx::smtp_settings(ngx_cycle_t *cycle) {
    auto *hc = reinterpret_cast<ngx_http_conf_ctx_t *>(cycle->conf_ctx[ngx_http_module.index]);
    if (hc == nullptr) return nullptr;
    auto *c = static_cast<SmtpConf *>(hc->main_conf[ngx_http_signin_smtp_module.ctx_index]);
    return c != nullptr ? c->settings : nullptr;
}
