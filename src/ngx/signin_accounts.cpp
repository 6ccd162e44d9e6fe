// Account changes (DESIGN §9.6): GET /account (what is held), POST /account/delete.
#include "signin/json.hpp"
#include "signin_api.h"
#include "signin_conf.h"
#include "signin_reply.h"

namespace signin_ngx {
namespace {

signin::Identity &id() { return *identity(); }

class DeleteJob final : public Job {
public:
    DeleteJob(signin::Principal p, std::string client, bool by_cookie)
        : Job(Stage::Write), principal_(std::move(p)), client_(std::move(client)), by_cookie_(by_cookie) {}

private:
    signin::Status write() override { return id().accounts().delete_account(principal_, client_); }
    ngx_int_t answer(ngx_http_request_t *r) override {
        if (by_cookie_) {  // nothing of the account stays in this browser
            add_header(r, "Set-Cookie", cookie_header(id().cookie_name(), "", 0));
            add_header(r, "Set-Cookie", cookie_header(id().device_cookie_name(), "", 0));
        }
        return send_empty(r, NGX_HTTP_NO_CONTENT);
    }

    signin::Principal principal_;
    std::string client_;
    bool by_cookie_;
};

}  // namespace

ngx_int_t get_account(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    auto p = signed_in(call, rc);
    if (!p) return rc;
    auto a = id().accounts().account(*p);
    if (!a) return send_failure(call.r, a.error());
    return send_json(call.r, 200, signin::json::account(a.value()));
}

ngx_int_t post_account_delete(ApiCall &call) {
    ngx_int_t rc = NGX_ERROR;
    bool by_cookie = false;
    auto p = signed_in(call, rc, &by_cookie);
    if (!p) return rc;
    auto f = signin::json::parse_object(call.body.empty() ? std::string_view("{}") : call.body, {});
    if (!f) return send_failure(call.r, f.error());
    return start_job(call.r, std::make_unique<DeleteJob>(std::move(*p), call.client, by_cookie));
}

}  // namespace signin_ngx
