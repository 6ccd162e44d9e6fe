// OpenID Connect providers: GET /providers, /providers/NAME/start and
// /providers/NAME/callback, GET /providers/linked and POST /providers/unlink.
//
// Every call to a provider (its discovery document, its keys, the token request) is a subrequest
// to the operator's signin_provider_fetch location (`proxy_pass $signin_provider_url;`), kept in
// memory and read when it is over: nginx's own upstream machinery, its timeouts, TLS settings
// and resolver, never a socket of the module's. A request that needs one waits for it (its
// write_event_handler is resume(), called when nginx wakes the parent), then for the next, then
// for the write job that signs in. The discovery document and the keys are kept per worker for
// an hour; an ID token signed by a key the worker does not know fetches the keys again (at most
// every ten seconds per provider), which is how a provider's key rotation is followed.
//
// The flow's secrets (state, nonce, PKCE verifier) travel sealed in the __Host-svc_oidc cookie
// (signin::oidc::seal_flow); the store writes nothing until the callback's sign-in.
#include "signin_providers.h"

#include <map>
#include <memory>

#include "signin/json.hpp"
#include "signin/oidc.hpp"
#include "signin_api.h"
#include "signin_jobs.h"
#include "signin_conf.h"
#include "signin_metrics.h"
#include "signin_registration.h"
#include "signin_reply.h"

namespace signin_ngx {

namespace oidc = signin::oidc;
using signin::Code;

// A request waiting for a provider (RequestCtx::provider_call).
struct ProviderCall {
    enum class Fetch { None, Discovery, Token, Keys };
    const oidc::ProviderConfig *provider = nullptr;
    bool callback = false;     // else the start
    oidc::Flow flow;
    signin::Secret code;       // the callback's authorization code
    std::string base;          // the signin_api location, with its trailing slash
    std::string client;
    // the subrequest in flight, and what it brought
    Fetch fetching = Fetch::None;
    bool answered = false;
    bool fetched_ok = false;
    ngx_uint_t status = 0;
    signin::Secret answer;     // the provider's answer (a token answer holds tokens)
    signin::Secret id_token;
    bool keys_again = false;   // the keys were fetched again for this token
};

namespace {

constexpr ngx_msec_t kDiscoveryFor = 3600 * 1000;  // a discovery document is kept this long
constexpr ngx_msec_t kKeysFor = 3600 * 1000;       // ... and a key set
constexpr ngx_msec_t kKeysAgainAfter = 10 * 1000;  // an unknown key fetches them again, at most this often

signin::Identity &id() { return *identity(); }

// This worker's copies of the providers' documents.
struct Known {
    std::optional<oidc::Discovery> discovery;
    ngx_msec_t discovery_at = 0;
    std::shared_ptr<const oidc::KeySet> keys;
    ngx_msec_t keys_at = 0;
    ngx_msec_t keys_again_at = 0;
    bool keys_again_ever = false;
};
std::map<std::string, Known> g_known;

bool fresh(ngx_msec_t at, ngx_msec_t for_ms) {
    return static_cast<ngx_msec_int_t>(ngx_current_msec - at) < static_cast<ngx_msec_int_t>(for_ms);
}

// The principal of the request's session cookie (a bearer token does not link providers).
signin::Result<const signin::Principal *> cookie_principal(ngx_http_request_t *r) {
    Credentials c = read_credentials(r, id().cookie_name());
    if (c.state != Credentials::Cookie) return signin::Error{Code::Unauthenticated, "not signed in"};
    return authenticate(r, c);
}

const oidc::ProviderConfig *find_provider(ngx_http_request_t *r, std::string_view name) {
    MainConf *m = main_conf(r);
    if (m->providers == nullptr) return nullptr;
    for (const auto &p : *m->providers) {
        if (p.name == name) return &p;
    }
    return nullptr;
}

std::string_view flow_cookie_name() { return id().origin().https ? "__Host-svc_oidc" : "svc_dev_oidc"; }

// The signin_api location of the request, ending in '/'.
std::string api_base(ngx_http_request_t *r) {
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(ngx_http_get_module_loc_conf(r, ngx_http_core_module));
    std::string base(sv(clcf->name));
    if (base.empty() || base.back() != '/') base += '/';
    return base;
}

std::string redirect_uri(const ProviderCall &call) {
    return id().origin().text + call.base + "providers/" + call.provider->name + "/callback";
}

// 302 to url; a path of this site becomes an absolute URL of signin_origin (not of whatever Host
// the request named). No referrer leaves with it (the provider's URL carries the state).
ngx_int_t redirect(ngx_http_request_t *r, std::string_view url) {
    if (!add_header(r, "Referrer-Policy", "no-referrer")) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    return redirect_to(r, pool_copy(r->pool, url.substr(0, 1) == "/" ? id().origin().text + std::string(url)
                                                                       : std::string(url)));
}

// "&return_to=PATH" (or "?..." first), escaped as the gate escapes it (signin_require.cpp).
std::string return_to_arg(ngx_http_request_t *r, const oidc::Flow &flow, char sep) {
    if (flow.return_to.empty()) return {};
    ngx_str_t v = escaped_arg(r, flow.return_to);
    return std::string(1, sep) + "return_to=" + std::string(sv(v));
}

// The flow cookie is spent (or useless) once its callback came.
void clear_flow_cookie(ngx_http_request_t *r) { add_header(r, "Set-Cookie", cookie_header(flow_cookie_name(), "", 0)); }

// The end of a flow that did not sign in: with signin_pages, back to the sign-in page (or the
// account page, for a link) with the reason's code for it to explain; else the JSON error.
ngx_int_t end_flow(ngx_http_request_t *r, const ProviderCall *call, Code code, std::string_view page_code,
                   const std::string &message) {
    clear_flow_cookie(r);
    count_failure(code);
    if (!loc_conf(r)->pages || call == nullptr) return send_error(r, code, message);
    std::string url = call->base;
    if (!call->flow.link_user.empty()) url += "account";
    url += "?provider_error=" + std::string(page_code) + return_to_arg(r, call->flow, '&');
    if (call->flow.add) url += "&add=1";
    return redirect(r, url);
}

ngx_int_t provider_failed(ngx_http_request_t *r, ProviderCall &call, const std::string &why);

// ---------------------------------------------------------------- subrequests

ngx_int_t resume_step(ngx_http_request_t *r);

void resume(ngx_http_request_t *r) {
    ngx_int_t rc = guard_request(r, "signin: a provider sign-in", [r] { return resume_step(r); });
    if (rc != NGX_DONE) ngx_http_finalize_request(r, rc);
}

// The subrequest's end (maybe twice: once more after an error page): its first answer counts.
ngx_int_t fetched(ngx_http_request_t *sr, void *data, ngx_int_t rc) {
    auto *r = static_cast<ngx_http_request_t *>(data);
    RequestCtx *ctx = get_ctx(r, false);
    if (ctx == nullptr || !ctx->provider_call || ctx->provider_call->answered) return rc;
    ProviderCall &call = *ctx->provider_call;
    call.answered = true;
    call.status = sr->headers_out.status;
    call.fetched_ok = rc == NGX_OK && call.status == NGX_HTTP_OK;
    if (sr->out != nullptr && sr->out->buf != nullptr) {
        ngx_buf_t *b = sr->out->buf;
        const size_t len = static_cast<size_t>(b->last - b->pos);
        call.answer = signin::Secret(std::string(reinterpret_cast<const char *>(b->pos), len));
        ngx_explicit_memzero(b->pos, len);  // a token answer holds the provider's tokens
    }
    if (rc != NGX_OK || call.status != NGX_HTTP_OK) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "signin: provider \"%s\": the fetch through \"%V\" failed (rc %i, status %ui)",
                      call.provider->name.c_str(), &sr->uri, rc, call.status);
    }
    r->write_event_handler = resume;
    return rc;
}

// A subrequest to the fetch location for url: a GET, or the token request's POST.
ngx_int_t fetch(ngx_http_request_t *r, ProviderCall &call, ProviderCall::Fetch what, const std::string &url,
                const oidc::TokenRequest *token = nullptr) {
    MainConf *m = main_conf(r);
    auto *ps = static_cast<ngx_http_post_subrequest_t *>(ngx_palloc(r->pool, sizeof(ngx_http_post_subrequest_t)));
    if (ps == nullptr) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    ps->handler = fetched;
    ps->data = r;
    ngx_http_request_t *sr = nullptr;
    if (ngx_http_subrequest(r, &m->provider_fetch_uri, nullptr, &sr, ps,
                            NGX_HTTP_SUBREQUEST_IN_MEMORY | NGX_HTTP_SUBREQUEST_WAITED) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    call.fetching = what;
    call.answered = false;
    call.fetched_ok = false;
    call.status = 0;
    call.answer = signin::Secret();
    r->write_event_handler = resume;
    // none of the visitor's headers (cookies, credentials, encodings) go to the provider
    RequestCtx *sctx = ngx_list_init(&sr->headers_in.headers, sr->pool, 4, sizeof(ngx_table_elt_t)) == NGX_OK
                           ? get_ctx(sr, true)
                           : nullptr;
    if (sctx == nullptr) return NGX_DONE;  // it runs without its URL and fails: the request ends then
    sctx->provider_url = url;
    sr->headers_in.content_type = nullptr;
    sr->headers_in.content_length = nullptr;
    sr->headers_in.content_length_n = -1;
    sr->headers_in.chunked = 0;
    sr->request_body = nullptr;
    sr->header_only = 0;
    bool ok = add_subrequest_header(sr, "Accept", "application/json") != nullptr;
    if (token != nullptr) {
        sr->method = NGX_HTTP_POST;
        ngx_str_set(&sr->method_name, "POST");
        sctx->provider_body = token->body;
        ok = ok && give_subrequest_body(sr, sctx->provider_body.reveal(), "application/x-www-form-urlencoded") == NGX_OK;
        if (!token->authorization.empty()) {
            ok = ok && add_subrequest_header(sr, "Authorization", token->authorization.reveal()) != nullptr;
        }
    } else {
        sr->method = NGX_HTTP_GET;
        ngx_str_set(&sr->method_name, "GET");
    }
    if (!ok) sctx->provider_url.clear();  // nowhere to go: it fails
    return NGX_DONE;
}

// ---------------------------------------------------------------- the steps

// Where the flow stands: the next fetch, or its end.
ngx_int_t advance(ngx_http_request_t *r, ProviderCall &call);

ngx_int_t resume_step(ngx_http_request_t *r) {
    RequestCtx *ctx = get_ctx(r, false);
    if (ctx == nullptr || !ctx->provider_call) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    ProviderCall &call = *ctx->provider_call;
    if (call.fetching == ProviderCall::Fetch::None || !call.answered) return NGX_DONE;  // not ours to wake
    Known &known = g_known[call.provider->name];
    const ProviderCall::Fetch what = call.fetching;
    call.fetching = ProviderCall::Fetch::None;
    switch (what) {
    case ProviderCall::Fetch::Discovery: {
        if (!call.fetched_ok) return provider_failed(r, call, "discovery: status " + std::to_string(call.status));
        auto d = oidc::parse_discovery(call.answer.reveal(), call.provider->issuer);
        if (!d) return provider_failed(r, call, "discovery: " + d.error().message);
        known.discovery = std::move(d.value());
        known.discovery_at = ngx_current_msec;
        break;
    }
    case ProviderCall::Fetch::Keys: {
        if (!call.fetched_ok) return provider_failed(r, call, "keys: status " + std::to_string(call.status));
        auto k = oidc::KeySet::parse(call.answer.reveal());
        if (!k) return provider_failed(r, call, "keys: " + k.error().message);
        known.keys = std::make_shared<const oidc::KeySet>(std::move(k.value()));
        known.keys_at = ngx_current_msec;
        break;
    }
    case ProviderCall::Fetch::Token: {
        auto t = oidc::id_token_of(call.answer.reveal());
        if (!t) return provider_failed(r, call, "token: " + t.error().message);
        call.id_token = std::move(t.value());
        break;
    }
    case ProviderCall::Fetch::None: break;
    }
    call.answer = signin::Secret();
    return advance(r, call);
}

// The page code of a refusal of the sign-in's write.
std::string_view page_code(Code c) {
    switch (c) {
    case Code::AccountExists: return "account_exists";
    case Code::RegistrationDisabled:
    case Code::RegistrationRefused: return "no_account";  // the site's rules keep this sign-in out
    case Code::Suspended: return "suspended";
    default: return "provider_failed";
    }
}

// The write of a verified callback; a refusal ends the flow like any other (end_flow).
class FlowJob : public Job {
protected:
    FlowJob(std::shared_ptr<ProviderCall> call, oidc::IdClaims claims)
        : Job(Stage::Write), call_(std::move(call)), claims_(std::move(claims)) {}
    ngx_int_t answer_failure(ngx_http_request_t *r, const signin::Error &e) override {
        return end_flow(r, call_.get(), e.code, page_code(e.code), e.message);
    }

    std::shared_ptr<ProviderCall> call_;
    oidc::IdClaims claims_;
};

// The callback's write: the account, then a session (or the second step).
class ProviderSignInJob final : public FlowJob {
public:
    ProviderSignInJob(std::shared_ptr<ProviderCall> call, oidc::IdClaims claims, std::string user_agent,
                      signin::BrowserCookies browser, signin::RegistrationGate gate)
        : FlowJob(std::move(call), std::move(claims)),
          user_agent_(std::move(user_agent)),
          browser_(std::move(browser)),
          gate_(std::move(gate)) {}

private:
    signin::Status write() override {
        gate_.needed = false;
        auto step = id().providers().sign_in(*call_->provider, claims_, call_->flow, call_->client,
                                             signin::SessionKind::Cookie, user_agent_, &browser_, &gate_);
        if (!step) return step.error();
        step_ = std::move(step.value());
        return signin::ok_status();
    }
    // A sign-in that would make an account while signin_registration_check is on: the application
    // is asked, then the same sign-in runs again with its verdict (nothing was written meanwhile).
    ngx_int_t answer_failure(ngx_http_request_t *r, const signin::Error &e) override {
        if (!gate_.needed) return FlowJob::answer_failure(r, e);
        signin::RegistrationGate allowed;
        allowed.ask = true;
        allowed.allowed = true;
        auto again = std::make_unique<ProviderSignInJob>(call_, std::move(claims_), std::move(user_agent_),
                                                         std::move(browser_), std::move(allowed));
        ProviderSignInJob *j = again.get();
        RegistrationAsk ask{gate_.email, "", "provider", call_->client, true};
        // the caller finalizes this answer: NGX_DONE then lets go of a reference, this one; the
        // flow's own stays for the answer that follows the check
        r->main->count++;
        ngx_int_t rc = check_registration(r, std::move(ask), std::move(again),
                                          [j](std::vector<std::string> roles) { j->gate_.roles = std::move(roles); });
        if (rc != NGX_DONE) r->main->count--;
        return rc;
    }
    ngx_int_t answer(ngx_http_request_t *r) override {
        clear_flow_cookie(r);
        const bool pages = loc_conf(r)->pages;
        if (step_->signed_in() && step_->session) {
            count_signin(signin::SignInMethod::Provider);
            set_session_cookies(r, *step_->session);
            if (!call_->flow.return_to.empty()) return redirect(r, call_->flow.return_to);
            return redirect(r, pages ? call_->base : std::string("/"));
        }
        if (!pages) return send_step(r, *step_);
        // the second step on the sign-in page: its token in the fragment, which no server sees
        return redirect(r, call_->base + return_to_arg(r, call_->flow, '?') + "#mfa=" +
                               std::string(step_->mfa_token.reveal()));
    }

    std::string user_agent_;
    signin::BrowserCookies browser_;
    signin::RegistrationGate gate_;
    std::optional<signin::SignInStep> step_;
};

// The callback of a flow started from the account page: the identity joins the signed-in account.
class LinkJob final : public FlowJob {
public:
    LinkJob(std::shared_ptr<ProviderCall> call, oidc::IdClaims claims, signin::Principal p)
        : FlowJob(std::move(call), std::move(claims)), principal_(std::move(p)) {}

private:
    signin::Status write() override {
        return id().providers().link(principal_, *call_->provider, claims_, call_->flow, call_->client);
    }
    ngx_int_t answer(ngx_http_request_t *r) override {
        clear_flow_cookie(r);
        if (!loc_conf(r)->pages) return send_empty(r, NGX_HTTP_NO_CONTENT);
        return redirect(r, call_->base + "account?provider_linked=" + call_->provider->name);
    }

    signin::Principal principal_;
};

// A refusal's audit entry, in the background (nothing waits for it).
class RefusedJob final : public BackgroundJob {
public:
    RefusedJob(std::string provider, std::string why, std::string client)
        : BackgroundJob(Stage::Write), provider_(std::move(provider)), why_(std::move(why)), client_(std::move(client)) {}

private:
    signin::Status write() override {
        id().providers().refused(provider_, why_, client_);
        return signin::ok_status();
    }
    std::string provider_, why_, client_;
};

// A flow that failed at the provider or in its answers (not the person's doing): logged, audited,
// and the sign-in page says so.
ngx_int_t provider_failed(ngx_http_request_t *r, ProviderCall &call, const std::string &why) {
    std::string shown = why.substr(0, 200);
    for (char &c : shown) {
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
    }
    ngx_log_error(NGX_LOG_WARN, r->connection->log, 0, "signin: provider \"%s\" sign-in refused: %s",
                  call.provider->name.c_str(), shown.c_str());
    if (call.callback) (void)start_background_job(std::make_unique<RefusedJob>(call.provider->name, shown, call.client));
    return end_flow(r, &call, Code::ProviderRefused, "provider_failed", "the provider sign-in did not pass: " + shown);
}

ngx_int_t advance(ngx_http_request_t *r, ProviderCall &call) {
    Known &known = g_known[call.provider->name];
    if (!known.discovery || !fresh(known.discovery_at, kDiscoveryFor)) {
        return fetch(r, call, ProviderCall::Fetch::Discovery, oidc::discovery_url(call.provider->issuer));
    }
    const oidc::Discovery &d = *known.discovery;
    if (!call.callback) {  // the start: the cookie, and off to the provider
        std::string cookie = oidc::seal_flow(*main_conf(r)->secret_key, call.flow);
        add_header(r, "Set-Cookie", cookie_header(flow_cookie_name(), cookie, oidc::kFlowTtl / 1000));
        return redirect(r, oidc::authorization_url(d, *call.provider, call.flow, redirect_uri(call)));
    }
    if (call.id_token.empty()) {
        oidc::TokenRequest t = oidc::token_request(d, *call.provider, call.flow, call.code.reveal(), redirect_uri(call));
        call.code = signin::Secret();
        return fetch(r, call, ProviderCall::Fetch::Token, d.token_endpoint, &t);
    }
    if (!known.keys || !fresh(known.keys_at, kKeysFor)) return fetch(r, call, ProviderCall::Fetch::Keys, d.jwks_uri);
    oidc::Expected expect;
    expect.issuer = d.issuer;
    expect.client_id = call.provider->client_id;
    expect.nonce = std::string(call.flow.nonce.reveal());
    expect.now = id().now();
    oidc::Verified v = oidc::verify_id_token(call.id_token.reveal(), *known.keys, expect);
    if (v.refusal == oidc::Refusal::UnknownKey && !call.keys_again &&
        (!known.keys_again_ever || !fresh(known.keys_again_at, kKeysAgainAfter))) {
        call.keys_again = true;  // rotated keys: fetch them again, once for this token
        known.keys_again_ever = true;
        known.keys_again_at = ngx_current_msec;
        return fetch(r, call, ProviderCall::Fetch::Keys, d.jwks_uri);
    }
    call.id_token = signin::Secret();
    if (v.refusal != oidc::Refusal::None) {
        return provider_failed(r, call, std::string("id token: ") + oidc::refusal_name(v.refusal));
    }
    auto shared = get_ctx(r, false)->provider_call;
    if (!call.flow.link_user.empty()) {
        auto p = cookie_principal(r);
        if (!p) return end_flow(r, &call, Code::Unauthenticated, "signed_out", "sign in to link a provider");
        return start_job(r, std::make_unique<LinkJob>(shared, std::move(v.claims), *p.value()));
    }
    signin::RegistrationGate gate;
    gate.ask = registration_checked(r);
    return start_job(r, std::make_unique<ProviderSignInJob>(shared, std::move(v.claims), user_agent(r),
                                                            browser_of(r, signin::SessionKind::Cookie), std::move(gate)));
}

// Starts a flow's work; the request waits (our reference) when it must fetch.
ngx_int_t run(ngx_http_request_t *r, std::shared_ptr<ProviderCall> call) {
    RequestCtx *ctx = get_ctx(r, true);
    if (ctx == nullptr) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    ctx->provider_call = std::move(call);
    r->main->count++;  // the request's own reference while it waits (released by the final finalize)
    ngx_int_t rc = advance(r, *ctx->provider_call);
    if (rc == NGX_DONE) return NGX_DONE;
    r->main->count--;  // answered at once: nothing waits
    return rc;
}

}  // namespace

ngx_int_t get_providers(ApiCall &call) {
    MainConf *m = main_conf(call.r);
    signin::json::Writer w;
    w.begin_object().key("providers").begin_array();
    if (m->providers != nullptr) {
        for (const auto &p : *m->providers) {
            w.begin_object().key("name").value(p.name).key("label").value(p.label.empty() ? p.name : p.label).end_object();
        }
    }
    w.end_array().end_object();
    return send_json(call.r, 200, w.take());
}

ngx_int_t get_providers_linked(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    auto p = signed_in(call, rc);
    if (!p) return rc;
    return with_read<std::vector<signin::ProviderLinkInfo>>(
        call.r, [p] { return id().providers().list(*p); },
        [](ngx_http_request_t *r, auto &list) { return send_json(r, 200, signin::json::provider_links(list)); });
}

namespace {
class UnlinkJob final : public Job {
public:
    UnlinkJob(signin::Principal p, std::string link, std::string client)
        : Job(Stage::Write), principal_(std::move(p)), link_(std::move(link)), client_(std::move(client)) {}

private:
    signin::Status write() override { return id().providers().unlink(principal_, link_, client_); }
    ngx_int_t answer(ngx_http_request_t *r) override { return send_empty(r, NGX_HTTP_NO_CONTENT); }
    signin::Principal principal_;
    std::string link_, client_;
};
}  // namespace

ngx_int_t post_providers_unlink(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    auto p = signed_in(call, rc);
    if (!p) return rc;
    auto f = signin::json::parse_object(call.body, {{"id", true}});
    if (!f) return send_failure(call.r, f.error());
    return start_job(call.r, std::make_unique<UnlinkJob>(std::move(*p), f.value()["id"], call.client()));
}

ngx_int_t provider_flow(ngx_http_request_t *r, std::string_view name, std::string_view step) {
    const oidc::ProviderConfig *provider = find_provider(r, name);
    if (provider == nullptr || (step != "start" && step != "callback")) return reject(r, Code::NotFound, "not found");
    if (r->method != NGX_HTTP_GET && r->method != NGX_HTTP_HEAD) {
        add_header(r, "Allow", "GET, HEAD");
        return reject(r, kMethodNotAllowed, "method not allowed");
    }
    if (ngx_http_discard_request_body(r) != NGX_OK) return NGX_HTTP_INTERNAL_SERVER_ERROR;
    auto call = std::make_shared<ProviderCall>();
    call->provider = provider;
    call->base = api_base(r);
    call->client = client_of(r);
    const signin::Millis now = id().now();
    if (step == "start") {
        std::string return_to = query_arg(r, "return_to").value_or("");
        if (return_to.size() > 1024 || !signin::is_same_origin_path(return_to)) return_to.clear();
        const bool add = query_arg(r, "add") == std::optional<std::string>("1");
        std::string link_user;
        if (query_arg(r, "link") == std::optional<std::string>("1")) {
            auto p = cookie_principal(r);
            if (!p) return reject(r, Code::Unauthenticated, "sign in to link a provider");
            link_user = p.value()->user.id;
        }
        call->flow = oidc::new_flow(provider->name, std::move(return_to), add, std::move(link_user), now);
        return run(r, std::move(call));
    }
    // the callback: only the browser that started the flow holds its cookie
    auto flow = oidc::open_flow(*main_conf(r)->secret_key, read_cookie(r, flow_cookie_name()).reveal(), now);
    auto state = query_arg(r, "state");
    if (!flow || flow->provider != provider->name || !state || !oidc::same_state(*flow, *state)) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "signin: provider \"%s\" callback without its flow (no cookie, expired, or another state)",
                      provider->name.c_str());
        call->flow.return_to.clear();
        return end_flow(r, call.get(), Code::ProviderRefused, "expired", "this sign-in expired or was started elsewhere");
    }
    call->flow = std::move(*flow);
    call->callback = true;
    if (auto error = query_arg(r, "error")) {  // the person said no, or the provider could not
        std::string shown = error->substr(0, 64);
        for (char &c : shown) {
            if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) > 0x7e) c = '?';
        }
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0, "signin: provider \"%s\" answered \"%s\"",
                      provider->name.c_str(), shown.c_str());
        return end_flow(r, call.get(), Code::ProviderRefused, *error == "access_denied" ? "cancelled" : "provider_error",
                    oidc::error_message(*error));
    }
    // RFC 9207: a provider that names itself must name the configured issuer (mix-up attacks)
    auto iss = query_arg(r, "iss");
    if (iss && *iss != provider->issuer) return provider_failed(r, *call, "callback: another issuer");
    auto code = query_arg(r, "code");
    if (!code || code->empty() || code->size() > 2048) return provider_failed(r, *call, "callback: no code");
    call->code = signin::Secret(std::move(*code));
    return run(r, std::move(call));
}

}  // namespace signin_ngx
