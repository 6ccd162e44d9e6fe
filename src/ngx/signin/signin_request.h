// What the sign-in glue reads from a request: its context, headers, credentials (cookie or bearer), the
// client (signin_client), and its JSON body.
#pragma once

#include "ngx_signin_nginx.h"

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "signin_jobs.h"
#include "signin/auth.hpp"

namespace signin_ngx {

struct Route;

// Per-request state: owns C++ members, so it lives in a pool cleanup that runs its destructor.
struct RequestCtx {
    ngx_http_request_t *owner = nullptr;          // the request (subrequests share their parent's pool)
    // who is signed in, for $signin_user_*: a store that reads in place may hand the same
    // principal to later requests of the same session
    std::shared_ptr<const signin::Principal> principal;
    std::string delivery_json;                    // the body of a delivery subrequest (holds a token)
    std::optional<std::string> client;            // the evaluated signin_client value
    std::optional<std::string> client_key;        // ... as the per-client counters key it
    std::unique_ptr<Job> job;                     // the job the request waits for (signin_jobs.cpp)
    bool job_answered = false;                    // ... and it reached its Answer stage
    const Route *route = nullptr;                 // the API endpoint whose body is being read
    std::string assertion;                        // $signin_assertion, once made for this request
    std::string provider_url;                     // a provider subrequest: $signin_provider_url
    signin::Secret provider_body;                 // ... and its request body (a code, maybe the client secret)
    std::shared_ptr<struct ProviderCall> provider_call;  // a request waiting for a provider (signin_providers.cpp)
    std::shared_ptr<struct RegistrationCall> registration_call;  // ... for the registration check (signin_registration.cpp)
    // A store whose reads may block: who the credentials belong to, read in the thread
    // pool (start_auth_read) for authenticate() to take, and whether that read is under way.
    std::optional<signin::Result<std::shared_ptr<const signin::Principal>>> pre_auth;
    bool auth_reading = false;
    // api_versions_pin: who the credentials belong to as the rewrite phase read them (never
    // `principal`, which says the gate let the request in; nor `pre_auth`, which the gate takes as
    // its own read); `pin_read` holds the outcome of the thread pool's read until it is taken.
    std::shared_ptr<const signin::Principal> pin_caller;
    std::optional<signin::Result<std::shared_ptr<const signin::Principal>>> pin_read;
    bool pin_known = false;  // pin_caller is the answer (nullptr: a stranger)
    signin::Millis shared_wait = 0;  // the store-kept request limit refused: wait this long (ms)
};
RequestCtx *get_ctx(ngx_http_request_t *r, bool create);

std::optional<std::string_view> header_value(ngx_http_request_t *r, std::string_view name);
// A browser navigation: a GET or HEAD of the main request that accepts text/html (a fetch() or
// an API client asks for JSON).
bool browser_navigation(ngx_http_request_t *r);
std::string user_agent(ngx_http_request_t *r);
// signin_client (default $remote_addr), at most 64 bytes; evaluated once per request.
std::string client_of(ngx_http_request_t *r);
// The client as the per-client counters know it: an IPv6 client is its signin_client_ipv6_prefix.
std::string client_key(ngx_http_request_t *r);

// The language of the request's page or email: an index of the configured languages (svc_lang,
// else Accept-Language, else the first); and its tag, or "" without signin_languages (nothing is
// then kept on the account).
std::size_t request_language(ngx_http_request_t *r);
std::string request_language_tag(ngx_http_request_t *r);

// Credentials of a request: a session cookie or a bearer token, never both, and never two
// session cookies (cookie tossing).
struct Credentials {
    enum State { None, Cookie, Bearer, Ambiguous, Malformed } state = None;
    signin::Secret secret;
    // The kind of session they name (for Cookie and Bearer).
    signin::SessionKind kind() const { return state == Bearer ? signin::SessionKind::Bearer : signin::SessionKind::Cookie; }
};
Credentials read_credentials(ngx_http_request_t *r, std::string_view cookie_name);
// The value of the one cookie of this name (empty when there is none, or more than one).
signin::Secret read_cookie(ngx_http_request_t *r, std::string_view name);

// Takes the module's credentials out of what the request passes on (with
// signin_pass_credentials off, the default): the session, remembered-device and browser cookies (cookie_names)
// from every Cookie line (a line left empty is dropped) and a bearer Authorization. Other
// headers, and their pointers in headers_in, stay.
bool hide_credentials(ngx_http_request_t *r, std::initializer_list<std::string_view> cookie_names);

// The path below the location: "/auth/" + "register" → "register".
std::optional<std::string_view> sub_path(ngx_http_request_t *r);
// A query argument, percent-decoded ('+' is a space); nullopt when absent or not decodable.
std::optional<std::string> query_arg(ngx_http_request_t *r, std::string_view name);
bool is_json_content_type(ngx_http_request_t *r);

// A header of a subrequest's own (its headers_in list made anew, not the parent's): value is
// copied into the subrequest's pool. nullptr when memory runs out.
ngx_table_elt_t *add_subrequest_header(ngx_http_request_t *sr, std::string_view name, std::string_view value);
// The subrequest's request body: `body` (not copied: it must live as long as the subrequest) with
// its Content-Type and Content-Length, so that a plain proxy_pass sends it.
ngx_int_t give_subrequest_body(ngx_http_request_t *sr, std::string_view body, std::string_view content_type);

// The request body read by ngx_http_read_client_request_body, copied out (at most signin_body_max
// bytes). Bodies carry passwords and tokens: the destructor wipes the copy and nginx's writable
// body buffers.
class RequestBody {
public:
    explicit RequestBody(ngx_http_request_t *r);
    ~RequestBody();
    RequestBody(const RequestBody &) = delete;
    RequestBody &operator=(const RequestBody &) = delete;

    bool too_large() const { return too_large_; }
    std::string_view text() const { return text_; }

private:
    ngx_http_request_t *r_;
    std::string text_;
    bool too_large_ = false;
};

}  // namespace signin_ngx
