// libFuzzer: the OpenID provider's token request (oidc_provider.hpp), the form body and the
// Authorization header anyone can POST to /oauth2/token (and /oauth2/revoke, read the same way).
// The input is "HEADER\nBODY". Besides
// never crashing, reading out of bounds or leaking: a client is authenticated only by its own
// secret (a confidential one) or by nothing (a public one), and a code is spent only with its
// client, its redirect URI and the verifier of its challenge.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "signin/oidc_provider.hpp"

namespace {

const std::string kSecret = "0123456789abcdef0123456789abcdef";
const std::string kVerifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";

const signin::op::Clients &clients() {
    static const signin::op::Clients all = [] {
        signin::op::Clients c;
        auto wiki = signin::op::parse_client({"wiki", "redirect_uri=https://wiki.example/cb", "secret_file=/s"});
        auto cli = signin::op::parse_client({"cli", "redirect_uri=http://127.0.0.1:8400/cb", "public"});
        if (!wiki || !cli || !signin::op::set_secret(wiki.value(), kSecret) || !c.add(wiki.value()) || !c.add(cli.value())) {
            __builtin_trap();
        }
        return c;
    }();
    return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    namespace op = signin::op;
    std::string_view in(reinterpret_cast<const char *>(data), size);
    const auto nl = in.find('\n');
    const std::string_view header = nl == std::string_view::npos ? std::string_view() : in.substr(0, nl);
    const std::string_view body = nl == std::string_view::npos ? in : in.substr(nl + 1);
    auto revoke = op::parse_revoke_request(body, header);
    if (const auto *r = std::get_if<op::RevokeRequest>(&revoke)) {
        if (r->token.empty() || r->client_id.empty() || (!r->hint.empty() && r->hint != "access_token" && r->hint != "refresh_token")) {
            __builtin_trap();
        }
    }
    auto parsed = op::parse_token_request(body, header);
    if (const auto *e = std::get_if<op::TokenError>(&parsed)) {
        if (e->error.empty() || (e->status != 400 && e->status != 401)) __builtin_trap();
        (void)op::token_error_json(*e);
        return 0;
    }
    const auto &t = std::get<op::TokenRequest>(parsed);
    if (t.client_id.empty()) __builtin_trap();
    auto who = op::authenticate(t, clients());
    const op::Client *const *c = std::get_if<const op::Client *>(&who);
    if (c == nullptr) return 0;
    if ((*c)->is_public ? t.auth != op::ClientAuth::None : !op::secret_matches(**c, t.client_secret.reveal())) {
        __builtin_trap();
    }
    op::CodeRecord code;
    code.client_id = "cli";
    code.redirect_uri = "http://127.0.0.1:8400/cb";
    code.code_challenge = op::pkce_challenge(kVerifier);
    code.expires_at = 2'000'000'000'000;
    auto check = op::check_code(&code, t, **c, 1'800'000'000'000);
    if (check.outcome == op::CodeOutcome::Ok &&
        ((*c)->id != "cli" || t.redirect_uri != code.redirect_uri || t.code_verifier.reveal() != kVerifier)) {
        __builtin_trap();
    }
    op::RefreshFamily family;
    family.id = "f";
    family.client_id = "wiki";
    family.scopes = {"openid", "offline_access"};
    family.generation = 2;
    family.expires_at = 2'000'000'000'000;
    op::RefreshTokenRecord token{"k", "f", 1, 2'000'000'000'000};
    auto r = op::use_refresh(&token, &family, t, **c, 1'800'000'000'000);
    if (r.outcome == op::RefreshOutcome::Rotate) __builtin_trap();  // an old generation never rotates
    return 0;
}
