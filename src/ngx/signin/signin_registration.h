// signin_registration_check: the application says whether an address may get an account, before
// anything is written or sent. A POST subrequest {"email", "group", "method", "client"} to the
// operator's internal location, made from the visitor's request and read in memory: a 2xx allows
// (its optional {"roles": [...]} goes to the new account), a 403 refuses (403
// registration_refused: nothing written, no email), anything else, a timeout of the location's
// proxy included, fails closed (503 registration_check_failed).
#pragma once

#include "ngx_signin_nginx.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "signin_api.h"

namespace signin_ngx {

struct MainConf;

// What the check is asked: the address and group as the visitor sent them (normalized before
// they are sent), the way in ("email", "password", "provider", "invitation"), and the client.
// any_address: the way in may make an account without an address (a provider's), so an empty or
// unusable one is asked about as "" instead of being left to the job to refuse. even_if_closed:
// asked with self-registration off too (an administrator's invitation makes accounts then).
struct RegistrationAsk {
    std::string email, group;
    const char *method;
    std::string client;
    bool any_address = false;
    bool even_if_closed = false;
};

// Starts `job` at once when no check is configured, or when the address or group is not valid
// (the job refuses it as it always has); else once the check allowed it, after give_roles (the
// roles it gave, for the job to use). A refusal or a failed check ends the job as a failure of its
// own (its failed() gives back what it counted, its answer_failure() answers). Returns the
// handler's rc (NGX_DONE while the request waits).
ngx_int_t check_registration(ngx_http_request_t *r, RegistrationAsk ask, std::unique_ptr<Job> job,
                             std::function<void(std::vector<std::string>)> give_roles);
inline ngx_int_t check_registration(ngx_http_request_t *r, RegistrationAsk ask, std::unique_ptr<TokenRequestJob> job) {
    TokenRequestJob *j = job.get();
    return check_registration(r, std::move(ask), std::move(job),
                              [j](std::vector<std::string> roles) { j->set_roles(std::move(roles)); });
}
// Whether signin_registration_check is on (a provider sign-in then makes no account before it).
bool registration_checked(ngx_http_request_t *r);

// postconfiguration: the check's location exists in some server and is internal. NGX_ERROR (logged) otherwise.
ngx_int_t find_registration_check(ngx_conf_t *cf, MainConf *m);

}  // namespace signin_ngx
