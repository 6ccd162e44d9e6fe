// The module as an OpenID provider: the discovery document, the keys its ID tokens are signed
// with, and the code flow (authorize with its sign-in and consent pages, token, userinfo,
// revoke). The protocol is the core's (signin/oidc_provider.hpp, signin/oidc_issuer.hpp); this
// file only translates. Every endpoint answers 404 unless some signin_oidc_client is configured.
#include "signin_api.h"
#include "signin_conf.h"
#include "signin_reply.h"
#include "signin_request.h"

#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "signin/oidc_issuer.hpp"
#include "signin/pages.hpp"
#include "signin_jobs.h"
#include "signin_metrics.h"

namespace signin_ngx {

namespace {

// The issuer: the origin and the path of the signin_api location ("https://example.com/auth"),
// under which the discovery document names every endpoint.
std::string issuer(ngx_http_request_t *r) {
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_get_module_loc_conf(r, ngx_http_core_module));
    std::string_view path = sv(clcf->name);
    while (!path.empty() && path.back() == '/') path.remove_suffix(1);
    return main_conf(r)->origin->text + std::string(path);
}

bool provider_on(ngx_http_request_t *r) {
    const MainConf *m = main_conf(r);
    return m->oidc_clients != nullptr && m->oidc_clients->size() != 0 && m->oidc_keys != nullptr;
}

}  // namespace

ngx_int_t get_oidc_discovery(ApiCall &call) {
    if (!provider_on(call.r)) return send_error(call.r, signin::Code::NotFound, "not found");
    return send_json(call.r, 200, signin::op::discovery(issuer(call.r), *main_conf(call.r)->oidc_keys));
}

ngx_int_t get_oidc_jwks(ApiCall &call) {
    if (!provider_on(call.r)) return send_error(call.r, signin::Code::NotFound, "not found");
    return send_json(call.r, 200, main_conf(call.r)->oidc_keys->jwks());
}


// ---------------------------------------------------------------- the code flow

namespace {

signin::Identity &id() { return *identity(); }

signin::OpSite site_of(ngx_http_request_t *r) {
    const MainConf *m = main_conf(r);
    signin::OpSite s;
    s.clients = m->oidc_clients;
    s.keys = m->oidc_keys;
    s.issuer = issuer(r);
    s.code_ttl = static_cast<signin::Millis>(m->oidc_code_ttl);
    return s;
}

// The OAuth answers (token, userinfo, revoke): JSON with no-store (send_json), and the
// WWW-Authenticate header an error asks for.
ngx_int_t send_op(ngx_http_request_t *r, const signin::OpAnswer &a) {
    switch (a.outcome) {
    case signin::OpOutcome::Granted: count_oidc(OidcCount::Granted); break;
    case signin::OpOutcome::Refused: count_oidc(OidcCount::Refused); break;
    case signin::OpOutcome::Reused: count_oidc(OidcCount::Reused); break;
    case signin::OpOutcome::Revoked: count_oidc(OidcCount::Revoked); break;
    case signin::OpOutcome::None: break;
    }
    if (!a.www_authenticate.empty() && !add_header(r, "WWW-Authenticate", a.www_authenticate)) return NGX_ERROR;
    if (!add_header(r, "Pragma", "no-cache")) return NGX_ERROR;
    return send_json(r, static_cast<ngx_uint_t>(a.status), a.body);
}

// An HTML page of the provider (consent, refusal, logout): nothing else may frame, script or load
// it. Its referrer policy is same-origin, not the other pages' no-referrer: under no-referrer a
// browser sends "Origin: null" with a form's POST, which the Origin check then refuses.
// The page's language, as the sign-in pages pick it (svc_lang, Accept-Language, the first of
// signin_languages); English without signin_languages.
signin::PageLanguage page_language(ngx_http_request_t *r) {
    const Texts *t = main_conf(r)->texts;
    if (t == nullptr || !t->languages) return {};
    return {t->languages.get(), request_language(r)};
}

ngx_int_t send_op_page(ngx_http_request_t *r, ngx_uint_t status, const std::string &html) {
    const signin::PageLanguage lang = page_language(r);
    if (lang.languages != nullptr &&
        (!add_header(r, "Content-Language", lang.languages->tag(lang.index)) ||
         (lang.languages->size() > 1 && !add_header(r, "Vary", "Accept-Language, Cookie")))) {
        return NGX_ERROR;
    }
    if (!add_header(r, "Content-Security-Policy", "default-src 'none'; style-src 'self'; frame-ancestors 'none'") ||
        !add_header(r, "X-Frame-Options", "DENY") || !add_header(r, "Referrer-Policy", "same-origin") ||
        !add_header(r, "X-Content-Type-Options", "nosniff") || !add_header(r, "Cache-Control", "no-store")) {
        return NGX_ERROR;
    }
    if (status == NGX_HTTP_OK) return send_html(r, html);
    r->headers_out.status = status;
    r->headers_out.content_length_n = static_cast<off_t>(html.size());
    ngx_str_set(&r->headers_out.content_type, "text/html; charset=utf-8");
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    ngx_int_t rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) return rc;
    ngx_buf_t *b = ngx_create_temp_buf(r->pool, html.size());
    if (b == nullptr) return NGX_ERROR;
    b->last = ngx_cpymem(b->pos, html.data(), html.size());
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;
    ngx_chain_t out = {b, nullptr};
    return ngx_http_output_filter(r, &out);
}

std::string page_site_name(ngx_http_request_t *r) {
    const MainConf *m = main_conf(r);
    if (m->site_name.len) return std::string(sv(m->site_name));
    std::string_view o = m->origin->text;
    const auto scheme = o.find("://");
    return std::string(scheme == std::string_view::npos ? o : o.substr(scheme + 3));
}

// 302 to an absolute URL (the client's redirect URI) or a path of this site.
ngx_int_t op_redirect(ngx_http_request_t *r, const std::string &url) {
    if (!add_header(r, "Referrer-Policy", "no-referrer")) return NGX_ERROR;
    return redirect_to(r, pool_copy(r->pool, url.substr(0, 1) == "/" ? id().origin().text + url : url));
}

// The path of the API location, ending in '/'.
std::string base_path(ngx_http_request_t *r) {
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_get_module_loc_conf(r, ngx_http_core_module));
    std::string base(sv(clcf->name));
    if (base.empty() || base.back() != '/') base += '/';
    return base;
}

// The sign-in pages' own stylesheet where this location serves them (signin_pages on), so that
// the provider's pages look like them; "" elsewhere.
std::string module_css(ngx_http_request_t *r) {
    if (!loc_conf(r)->pages) return {};
    const signin::pages::Asset *a = signin::pages::asset("pages.css");
    return a == nullptr ? std::string() : base_path(r) + "assets/pages.css?v=" + std::string(a->hash);
}

// The authorization request's query without the sign-in marker (kLoginAfter), and the marker's time (0: none).
std::pair<std::string, signin::Millis> split_marker(std::string_view query) {
    std::string kept;
    signin::Millis after = 0;
    while (!query.empty()) {
        const auto amp = query.find('&');
        const std::string_view one = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
        if (one.substr(0, signin::kLoginAfter.size() + 1) == std::string(signin::kLoginAfter) + "=") {
            after = std::atoll(std::string(one.substr(signin::kLoginAfter.size() + 1)).c_str());
            continue;
        }
        if (!kept.empty()) kept += '&';
        kept.append(one);
    }
    return {kept, after};
}

// What an authorization request led to, answered on the event loop.
struct AuthorizeOutcome {
    signin::op::Decision decision;
    std::string redirect;  // Issue: the code's redirect
};

// decide, and a code when it says Issue (after keeping the consent the page just gave), in the
// write batch: the consent and the code are durable before the browser goes on.
class AuthorizeJob final : public Job {
public:
    AuthorizeJob(signin::op::AuthorizeRequest req, std::optional<signin::Principal> p, std::string query,
                 std::string raw_query, bool login_done, bool consented_now, signin::OpSite site, std::string client)
        : Job(Stage::Write), req_(std::move(req)), principal_(std::move(p)), query_(std::move(query)),
          raw_query_(std::move(raw_query)), login_done_(login_done), consented_now_(consented_now), site_(std::move(site)), client_(std::move(client)) {}

private:
    signin::Status write() override {
        auto &op = id().oidc_issuer();
        out_ = AuthorizeOutcome{};
        const signin::Principal *p = principal_ ? &*principal_ : nullptr;
        if (consented_now_ && p != nullptr) {
            if (auto s = op.consent(req_, *p, client_); !s) return s;
        }
        auto d = op.decide(site_, req_, p, login_done_, consented_now_, client_);
        if (!d) return d.error();
        out_.decision = d.value();
        if (out_.decision.next == signin::op::Next::SecondFactor && login_done_) {
            // a new sign-in was just made and still has no second factor: this account cannot pass
            out_.decision.next = signin::op::Next::Refuse;
            out_.decision.refusal.error = "access_denied";
            out_.decision.refusal.description = "This application needs a sign-in with a second factor.";
            out_.decision.refusal.redirect_uri = req_.redirect_uri;
            out_.decision.refusal.state = req_.state;
        }
        if (out_.decision.next == signin::op::Next::Issue) {
            auto url = op.issue_code(site_, req_, *p, client_);
            if (!url) return url.error();
            out_.redirect = std::move(url.value());
        }
        return signin::ok_status();
    }
    ngx_int_t answer(ngx_http_request_t *r) override {
        using signin::op::Next;
        switch (out_.decision.next) {
        case Next::Issue:
            count_oidc(OidcCount::Code);
            return op_redirect(r, out_.redirect);
        case Next::Refuse:
            count_oidc(OidcCount::Refused);
            return op_redirect(r, signin::op::error_redirect(out_.decision.refusal, site_.issuer));
        case Next::SignIn:
        case Next::SecondFactor: {
            // the sign-in page, then this request again, marked with the time it asked
            std::string back = base_path(r) + "oauth2/authorize?" + query_ + "&" + std::string(signin::kLoginAfter) +
                               "=" + std::to_string(id().now());
            ngx_str_t arg = escaped_arg(r, back);
            if (arg.data == nullptr) return NGX_ERROR;
            return op_redirect(r, base_path(r) + "?" + (principal_ ? "add=1&" : "") + "return_to=" + std::string(sv(arg)));
        }
        case Next::Consent:
            // the form carries the marker too: a sign-in just made still counts once consent is given
            return send_op_page(r, NGX_HTTP_OK,
                                signin::consent_page(req_, principal_->user, page_site_name(r),
                                                     base_path(r) + "oauth2/authorize", raw_query_,
                                                     std::string(sv(loc_conf(r)->pages_css)), page_language(r),
                                                     module_css(r)));
        }
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    signin::op::AuthorizeRequest req_;
    std::optional<signin::Principal> principal_;
    std::string query_, raw_query_;
    bool login_done_, consented_now_;
    signin::OpSite site_;
    std::string client_;
    AuthorizeOutcome out_;
};

// A refusal shown on a page, audited in the background.
class RefusalAudit final : public BackgroundJob {
public:
    RefusalAudit(std::string client_id, std::string why, std::string client)
        : BackgroundJob(Stage::Write), client_id_(std::move(client_id)), why_(std::move(why)), client_(std::move(client)) {}

private:
    signin::Status write() override {
        id().oidc_issuer().refused(client_id_, why_, client_);
        return signin::ok_status();
    }
    std::string client_id_, why_, client_;
};

ngx_int_t refuse_on_page(ngx_http_request_t *r, const signin::op::AuthorizeError &e, std::string_view client_id) {
    count_oidc(OidcCount::Refused);
    (void)start_background_job(std::make_unique<RefusalAudit>(std::string(client_id.substr(0, 64)), e.error, client_of(r)));
    return send_op_page(r, NGX_HTTP_BAD_REQUEST, signin::refusal_page(e, page_site_name(r), std::string(sv(loc_conf(r)->pages_css)),
                                                                    page_language(r), module_css(r)));
}

// The authorization request in `query` (the marker taken out), for the signed-in person if any.
ngx_int_t authorize(ngx_http_request_t *r, std::string_view raw_query, bool consented_now) {
    auto [query, login_after] = split_marker(raw_query);
    if (query.size() > signin::op::kMaxQuery) {
        signin::op::AuthorizeError e;
        e.page = true;
        e.error = "invalid_request";
        e.description = std::string(signin::op::kRefusalTooLong);
        return refuse_on_page(r, e, {});
    }
    const signin::OpSite site = site_of(r);
    auto parsed = signin::op::parse_authorize(query, *site.clients);
    if (auto *e = std::get_if<signin::op::AuthorizeError>(&parsed)) {
        if (e->page) return refuse_on_page(r, *e, {});
        count_oidc(OidcCount::Refused);
        (void)start_background_job(std::make_unique<RefusalAudit>("", e->error, client_of(r)));
        return op_redirect(r, signin::op::error_redirect(*e, site.issuer));
    }
    auto &req = std::get<signin::op::AuthorizeRequest>(parsed);
    std::optional<signin::Principal> p;
    Credentials c = read_credentials(r, id().cookie_name());
    if (c.state == Credentials::Cookie) {
        if (auto a = authenticate(r, c)) p = *a.value();
    }
    if (consented_now && !p) return reject(r, signin::Code::Unauthenticated, "not signed in");
    const signin::Millis now = id().now();
    const bool login_done = p && login_after > 0 && login_after > now - 15 * 60 * 1000 &&
                            p->session.created_at >= login_after;
    // a GET holds its own reference while the job runs; the consent form's body reading holds one
    const bool own = !consented_now;
    if (own) r->main->count++;
    ngx_int_t rc = start_job(r, std::make_unique<AuthorizeJob>(std::move(req), std::move(p), query, std::string(raw_query),
                                                               login_done, consented_now, site, client_of(r)));
    if (own && rc != NGX_DONE) r->main->count--;
    return rc;
}

// A form POST's body, once read: `then` with it.
using FormStep = ngx_int_t (*)(ngx_http_request_t *r, std::string_view body);

ngx_int_t consent_posted(ngx_http_request_t *r, std::string_view body) {
    auto f = signin::parse_consent_form(body);
    if (!f) return send_error(r, signin::Code::InvalidRequest, "the consent form is not valid");
    if (f->allow) return authorize(r, f->query, true);
    auto [query, after] = split_marker(f->query);
    (void)after;
    auto parsed = signin::op::parse_authorize(query, *main_conf(r)->oidc_clients);
    auto *req = std::get_if<signin::op::AuthorizeRequest>(&parsed);
    if (req == nullptr) return send_error(r, signin::Code::InvalidRequest, "the consent form is not valid");
    signin::op::AuthorizeError e;
    e.error = "access_denied";
    e.description = "The person did not allow it.";
    e.redirect_uri = req->redirect_uri;
    e.state = req->state;
    (void)start_background_job(std::make_unique<RefusalAudit>(req->client_id, "consent denied", client_of(r)));
    return op_redirect(r, signin::op::error_redirect(e, issuer(r)));
}

// The cookie's signed-in person, if any.
std::optional<signin::Principal> cookie_person(ngx_http_request_t *r) {
    Credentials c = read_credentials(r, id().cookie_name());
    if (c.state != Credentials::Cookie) return std::nullopt;
    auto a = authenticate(r, c);
    if (!a) return std::nullopt;
    return *a.value();
}

// Signs the person out (their session of this browser), then back to the application or the
// signed-out page.
class EndSessionJob final : public Job {
public:
    EndSessionJob(signin::Principal p, std::string back, std::string client)
        : Job(Stage::Write), principal_(std::move(p)), back_(std::move(back)), client_(std::move(client)) {}

private:
    signin::Status write() override { return id().sessions().logout(principal_, client_); }
    ngx_int_t answer(ngx_http_request_t *r) override {
        if (!add_header(r, "Set-Cookie", cookie_header(id().cookie_name(), "", 0))) return NGX_ERROR;
        if (!back_.empty()) return op_redirect(r, back_);
        return send_op_page(r, NGX_HTTP_OK, signin::signed_out_page(page_site_name(r), std::string(sv(loc_conf(r)->pages_css)),
                                                                   page_language(r), module_css(r)));
    }
    signin::Principal principal_;
    std::string back_, client_;
};

// GET {auth_path}/oauth2/end_session (RP-initiated logout), or its confirmation form posted
// (`confirmed`). The browser goes back only to a post_logout_redirect_uri its client registered;
// the person is signed out at once only when a verified id_token_hint names them, else asked.
ngx_int_t end_session(ngx_http_request_t *r, std::string_view query, bool confirmed) {
    if (query.size() > signin::op::kMaxQuery) return reject(r, signin::Code::InvalidRequest, "the request is too long");
    const MainConf *m = main_conf(r);
    const signin::op::EndSession e = signin::op::parse_end_session(query, *m->oidc_clients, *m->oidc_keys, issuer(r));
    const std::string back = e.redirect_uri.empty() ? std::string() : signin::op::end_session_redirect(e);
    const std::string css(sv(loc_conf(r)->pages_css));
    std::optional<signin::Principal> p = cookie_person(r);
    if (!p) {
        if (!back.empty()) return op_redirect(r, back);
        return send_op_page(r, NGX_HTTP_OK, signin::signed_out_page(page_site_name(r), css, page_language(r), module_css(r)));
    }
    const bool named = !e.bad_hint && !e.subject.empty() && e.subject == p->user.id;
    if (!confirmed && !named) {
        return send_op_page(r, NGX_HTTP_OK, signin::end_session_page(page_site_name(r), base_path(r) + "oauth2/end_session",
                                                                     query, css, page_language(r), module_css(r)));
    }
    const bool own = !confirmed;  // a GET holds its own reference; the form's body reading holds one
    if (own) r->main->count++;
    ngx_int_t rc = start_job(r, std::make_unique<EndSessionJob>(std::move(*p), back, client_of(r)));
    if (own && rc != NGX_DONE) r->main->count--;
    return rc;
}

ngx_int_t end_session_posted(ngx_http_request_t *r, std::string_view body) {
    auto f = signin::parse_consent_form(body);
    if (!f) return send_error(r, signin::Code::InvalidRequest, "the form is not valid");
    if (f->allow) return end_session(r, f->query, true);
    return op_redirect(r, base_path(r) + "account");  // stays signed in
}

class OpJob final : public Job {
public:
    using Fn = std::function<signin::OpAnswer()>;
    explicit OpJob(Fn fn) : Job(Stage::Write), fn_(std::move(fn)) {}

private:
    signin::Status write() override {
        answer_ = fn_();
        return signin::ok_status();
    }
    ngx_int_t answer(ngx_http_request_t *r) override { return send_op(r, answer_); }
    Fn fn_;
    signin::OpAnswer answer_;
};

std::string authorization_header(ngx_http_request_t *r) {
    auto h = header_value(r, "Authorization");
    return h ? std::string(*h) : std::string();
}

// The token endpoint: the grant written in the write batch, its ID token signed after the commit
// in the hashing pool, so that the batch (one thread) spends no RSA time on it.
class TokenJob final : public Job {
public:
    TokenJob(signin::OpSite site, std::string body, std::string auth, std::string client)
        : Job(Stage::Write), site_(std::move(site)), body_(std::move(body)), auth_(std::move(auth)), client_(std::move(client)) {}

private:
    signin::Status write() override {
        grant_ = id().oidc_issuer().token_write(site_, body_, auth_, client_);
        return signin::ok_status();
    }
    bool after_commit_wanted() const override { return grant_.answer.outcome == signin::OpOutcome::Granted; }
    signin::Status after_commit() override {
        grant_.answer = signin::OidcIssuer::token_answer(std::move(grant_));
        return signin::ok_status();
    }
    ngx_int_t answer(ngx_http_request_t *r) override { return send_op(r, grant_.answer); }
    signin::OpSite site_;
    std::string body_, auth_, client_;
    signin::TokenGrant grant_;
};

ngx_int_t token_posted(ngx_http_request_t *r, std::string_view body) {
    return start_job(r, std::make_unique<TokenJob>(site_of(r), std::string(body), authorization_header(r), client_of(r)));
}

ngx_int_t revoke_posted(ngx_http_request_t *r, std::string_view body) {
    return start_job(r, std::make_unique<OpJob>([site = site_of(r), body = std::string(body),
                                                 auth = authorization_header(r), client = client_of(r)]() {
        return id().oidc_issuer().revoke(site, body, auth, client);
    }));
}

ngx_int_t userinfo(ngx_http_request_t *r) {
    const bool post = r->method == NGX_HTTP_POST;
    if (post) r->main->count++;  // with_read takes its own reference for a GET only
    ngx_int_t rc = with_read<signin::OpAnswer>(
        r, [auth = authorization_header(r)]() -> signin::Result<signin::OpAnswer> { return id().oidc_issuer().userinfo(auth); },
        [](ngx_http_request_t *req, signin::OpAnswer &a) { return send_op(req, a); });
    if (post && rc != NGX_DONE) r->main->count--;
    return rc;
}

template <FormStep Step>
void form_ready(ngx_http_request_t *r) {
    ngx_int_t rc = guard_request(r, "signin: an OAuth request", [r]() -> ngx_int_t {
        RequestBody body(r);
        if (body.too_large()) return send_error(r, kPayloadTooLarge, "the request body is too large");
        return Step(r, body.text());
    });
    if (rc != NGX_DONE) ngx_http_finalize_request(r, rc);
}

bool form_content_type(ngx_http_request_t *r) {
    auto ct = header_value(r, "Content-Type");
    if (!ct) return false;
    std::string_view v = *ct;
    const auto semi = v.find(';');
    v = v.substr(0, semi);
    while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
    return v.size() == 33 && ngx_strncasecmp(reinterpret_cast<u_char *>(const_cast<char *>(v.data())),
                                             reinterpret_cast<u_char *>(const_cast<char *>("application/x-www-form-urlencoded")), 33) == 0;
}

template <FormStep Step>
ngx_int_t read_form(ngx_http_request_t *r) {
    if (!form_content_type(r)) return reject(r, kUnsupportedMediaType, "the request body must be application/x-www-form-urlencoded");
    if (r->headers_in.content_length_n > static_cast<off_t>(main_conf(r)->body_max)) {
        return reject(r, kPayloadTooLarge, "the request body is too large");
    }
    r->request_body_in_single_buf = 1;
    ngx_int_t rc = ngx_http_read_client_request_body(r, form_ready<Step>);
    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) return rc;
    return NGX_DONE;
}

ngx_int_t allow_only(ngx_http_request_t *r, const char *allow) {
    add_header(r, "Allow", allow);
    return reject(r, kMethodNotAllowed, "method not allowed");
}

// A page of the provider (authorize with its consent form, end_session with its confirmation):
// GET shows it from the query; its form comes back as a POST, a cookie write, so it passes the
// site's Origin check first (no cross-site form may consent or sign out).
template <ngx_int_t (*Show)(ngx_http_request_t *, std::string_view, bool), FormStep Posted>
ngx_int_t page_step(ngx_http_request_t *r, bool get, bool post) {
    if (get) {
        if (ngx_http_discard_request_body(r) != NGX_OK) return NGX_HTTP_INTERNAL_SERVER_ERROR;
        return Show(r, sv(r->args), false);
    }
    if (!post) return allow_only(r, "GET, HEAD, POST");
    auto ok = id().check_origin(header_value(r, "Origin"), true);
    if (!ok) {
        log_origin_refusal(r, id().origin().text);
        return reject(r, ok.error().code, ok.error().message);
    }
    return read_form<Posted>(r);
}

}  // namespace

bool is_oauth2_step(std::string_view path) {
    return path == "oauth2/authorize" || path == "oauth2/token" || path == "oauth2/userinfo" || path == "oauth2/revoke" ||
           path == "oauth2/end_session";
}

ngx_int_t oauth2_step(ngx_http_request_t *r, std::string_view path) {
    if (!provider_on(r)) return reject(r, signin::Code::NotFound, "not found");
    const bool get = r->method == NGX_HTTP_GET || r->method == NGX_HTTP_HEAD, post = r->method == NGX_HTTP_POST;
    if (path == "oauth2/authorize") return page_step<authorize, consent_posted>(r, get, post);
    if (path == "oauth2/end_session") return page_step<end_session, end_session_posted>(r, get, post);
    if (path == "oauth2/userinfo") {
        if (!get && !post) return allow_only(r, "GET, HEAD, POST");
        if (ngx_http_discard_request_body(r) != NGX_OK) return NGX_HTTP_INTERNAL_SERVER_ERROR;
        return userinfo(r);
    }
    if (!post) return allow_only(r, "POST");
    return path == "oauth2/token" ? read_form<token_posted>(r) : read_form<revoke_posted>(r);
}

}  // namespace signin_ngx
