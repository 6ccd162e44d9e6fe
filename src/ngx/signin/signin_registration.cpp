// signin_registration_check (signin_registration.h).
//
// The request waits for the check as a provider sign-in waits for its provider: the subrequest's
// answer is kept in memory, its post handler notes it, and nginx wakes the request, whose
// write_event_handler then decides. The check's own location bounds its time (proxy_*_timeout):
// a hung application answers 504 there, and the registration fails closed.
#include "signin_registration.h"

#include "signin/engine.hpp"
#include "signin/events.hpp"
#include "signin_conf.h"
#include "signin_reply.h"
#include "signin_request.h"

namespace signin_ngx {

// A request waiting for the registration check (RequestCtx::registration_call).
struct RegistrationCall {
    std::unique_ptr<Job> job;               // started once the check allows
    std::function<void(std::vector<std::string>)> give_roles;
    std::string email;                      // for the log
    bool answered = false;
    bool ok = false;                        // a 2xx
    ngx_uint_t status = 0;                  // the answer's status (0: none)
    std::string answer;                     // its body
    bool unasked = false;                   // the subrequest went without its question
};

namespace {

using signin::Code;

ngx_int_t decide(ngx_http_request_t *r, RegistrationCall &call) {
    if (call.ok) {
        std::string why;
        auto roles = signin::registration_check_roles(call.answer, &why);
        if (roles) {
            call.give_roles(std::move(*roles));
            return start_job(r, std::move(call.job));
        }
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "signin: the registration check answered %ui with an answer that cannot be used: %s",
                      call.status, why.c_str());
    } else if (call.status == NGX_HTTP_FORBIDDEN) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0, "signin: the registration check refused \"%s\"",
                      call.email.c_str());
        call.job->fail(signin::Error{Code::RegistrationRefused, "this address may not register here"});
        return call.job->finish(r);
    } else {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "signin: the registration check failed (status %ui): the registration is refused for now",
                      call.status);
    }
    call.job->fail(signin::Error{Code::RegistrationCheckFailed, "registration is not possible right now; try again later"});
    return call.job->finish(r);
}

void resume(ngx_http_request_t *r) {
    RequestCtx *ctx = get_ctx(r, false);
    if (ctx == nullptr || !ctx->registration_call || !ctx->registration_call->answered) return;  // not ours
    std::shared_ptr<RegistrationCall> call = std::move(ctx->registration_call);
    r->write_event_handler = ngx_http_request_empty_handler;
    ngx_int_t rc = guard_request(r, "signin: a registration check", [&] { return decide(r, *call); });
    // the body reading's reference goes with the answer; a job that started holds it (NGX_DONE)
    if (rc != NGX_DONE) ngx_http_finalize_request(r, rc);
}

// The subrequest's end (maybe twice: once more after an error page): its first answer counts.
ngx_int_t checked(ngx_http_request_t *sr, void *data, ngx_int_t rc) {
    auto *r = static_cast<ngx_http_request_t *>(data);
    RequestCtx *ctx = get_ctx(r, false);
    if (ctx == nullptr || !ctx->registration_call || ctx->registration_call->answered) return rc;
    RegistrationCall &call = *ctx->registration_call;
    call.answered = true;
    call.status = sr->headers_out.status;
    if (rc >= NGX_HTTP_SPECIAL_RESPONSE && (call.status == 0 || call.status < NGX_HTTP_SPECIAL_RESPONSE)) {
        call.status = static_cast<ngx_uint_t>(rc);  // an error of the location's own (a timeout: 504)
    }
    call.ok = !call.unasked && rc == NGX_OK && call.status >= 200 && call.status < 300;
    if (call.ok && sr->out != nullptr && sr->out->buf != nullptr) {
        ngx_buf_t *b = sr->out->buf;
        call.answer.assign(reinterpret_cast<const char *>(b->pos), static_cast<std::size_t>(b->last - b->pos));
    }
    r->write_event_handler = resume;
    return rc;
}

}  // namespace

bool registration_checked(ngx_http_request_t *r) { return main_conf(r)->registration_check_uri.len != 0; }

ngx_int_t check_registration(ngx_http_request_t *r, RegistrationAsk ask, std::unique_ptr<Job> job,
                             std::function<void(std::vector<std::string>)> give_roles) {
    MainConf *m = main_conf(r);
    if (m->registration_check_uri.len == 0 || (!ask.even_if_closed && !identity()->policy().allow_registration)) {
        return start_job(r, std::move(job));
    }
    auto email = signin::normalize_email(ask.email);
    auto group = signin::normalize_group(ask.group);
    if (ask.any_address && !email) email = std::string();
    if (!email || !group) return start_job(r, std::move(job));  // refused by the job, as without a check
    RequestCtx *ctx = get_ctx(r, true);
    auto *ps = static_cast<ngx_http_post_subrequest_t *>(ngx_palloc(r->pool, sizeof(ngx_http_post_subrequest_t)));
    if (ctx == nullptr || ps == nullptr) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    ps->handler = checked;
    ps->data = r;
    auto call = std::make_shared<RegistrationCall>();
    call->job = std::move(job);
    call->give_roles = std::move(give_roles);
    call->email = *email;
    ngx_http_request_t *sr = nullptr;
    if (ngx_http_subrequest(r, &m->registration_check_uri, nullptr, &sr, ps,
                            NGX_HTTP_SUBREQUEST_IN_MEMORY | NGX_HTTP_SUBREQUEST_WAITED) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    ctx->registration_call = std::move(call);
    r->write_event_handler = resume;
    // none of the visitor's headers (cookies, credentials) go to the application: only the question
    RequestCtx *sctx = ngx_list_init(&sr->headers_in.headers, sr->pool, 4, sizeof(ngx_table_elt_t)) == NGX_OK
                           ? get_ctx(sr, true)
                           : nullptr;
    sr->headers_in.content_type = nullptr;
    sr->headers_in.content_length = nullptr;
    sr->headers_in.content_length_n = -1;
    sr->headers_in.chunked = 0;
    sr->request_body = nullptr;
    sr->header_only = 0;
    sr->method = NGX_HTTP_POST;
    ngx_str_set(&sr->method_name, "POST");
    bool ok = sctx != nullptr;
    if (ok) {
        sctx->delivery_json = signin::registration_check_body(*email, *group, ask.method, ask.client);
        ok = add_subrequest_header(sr, "Accept", "application/json") != nullptr &&
             give_subrequest_body(sr, sctx->delivery_json, "application/json") == NGX_OK;
    }
    if (!ok) {
        // the subrequest goes without its question: whatever it answers, this request fails closed
        ctx->registration_call->unasked = true;
    }
    return NGX_DONE;
}

ngx_int_t find_registration_check(ngx_conf_t *cf, MainConf *m) {
    if (m->registration_check_uri.len == 0) return NGX_OK;
    const std::string uri(sv(m->registration_check_uri));
    if (uri[0] != '/') {
        log_at(cf, NGX_LOG_EMERG, m, "signin_registration_check",
               "signin_registration_check must name a location (a URI starting with \"/\")");
        return NGX_ERROR;
    }
    ngx_http_core_loc_conf_t *loc = find_location(cf, m->registration_check_uri);
    if (loc == nullptr) {
        log_at(cf, NGX_LOG_EMERG, m, "signin_registration_check",
               "signin_registration_check \"" + uri + "\" matches no exact or prefix location in any server: add \"location = " +
                   uri + " { internal; proxy_pass ...; }\" beside signin_api");
        return NGX_ERROR;
    }
    if (loc->internal != 1) {
        // anyone could ask the application's verdict on any address through it
        log_at(cf, NGX_LOG_EMERG, m, "signin_registration_check",
               "the signin_registration_check location \"" + uri + "\" is not \"internal\": add \"internal;\" to it");
        return NGX_ERROR;
    }
    return NGX_OK;
}

}  // namespace signin_ngx
