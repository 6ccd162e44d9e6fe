// The OpenID provider's grants (oidc_provider.hpp): PKCE, the token request and its client
// authentication, codes bound to their client, redirect URI and verifier, refresh token families
// that rotate and end when an old token comes back, and the token answer.
#include <gtest/gtest.h>
#include <sodium.h>

#include <cstring>
#include <string>
#include <vector>

#include "oidc_op_fixtures.hpp"
#include "signin/engine.hpp"
#include "signin/oidc_provider.hpp"

using namespace signin;
using namespace signin::testing::oidc_op;

namespace {

std::string basic(const std::string &id, const std::string &secret) {
    const std::string pair = id + ":" + secret;
    std::string out(sodium_base64_ENCODED_LEN(pair.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
    sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char *>(pair.data()), pair.size(),
                      sodium_base64_VARIANT_ORIGINAL);
    out.resize(std::strlen(out.c_str()));
    return "Basic " + out;
}

op::TokenRequest token_ok(const std::string &body, const std::string &authorization = {}) {
    auto t = op::parse_token_request(body, authorization);
    if (auto *e = std::get_if<op::TokenError>(&t)) {
        ADD_FAILURE() << e->error << ": " << e->description;
        return {};
    }
    return std::move(std::get<op::TokenRequest>(t));
}

op::TokenError token_refused(const std::string &body, const std::string &authorization = {}) {
    auto t = op::parse_token_request(body, authorization);
    if (std::holds_alternative<op::TokenRequest>(t)) {
        ADD_FAILURE() << "accepted: " << body;
        return {};
    }
    return std::get<op::TokenError>(t);
}

const std::string kCodeBody = "grant_type=authorization_code&code=C0DE&redirect_uri=https%3A%2F%2Fwiki.example%2Fcb";

}  // namespace

TEST(OidcGrants, PkceIsS256Only) {
    EXPECT_EQ(op::pkce_challenge(kVerifier), kChallenge);  // RFC 7636 appendix B
    EXPECT_TRUE(op::pkce_matches(kVerifier, kChallenge));
    EXPECT_FALSE(op::pkce_matches(kVerifier, kVerifier));         // 'plain' never matches
    EXPECT_FALSE(op::pkce_matches(kChallenge, kChallenge));
    EXPECT_FALSE(op::pkce_matches(kVerifier.substr(1), op::pkce_challenge(kVerifier.substr(1))));  // 42 characters
    EXPECT_FALSE(op::pkce_matches(std::string(129, 'a'), op::pkce_challenge(std::string(129, 'a'))));
    const std::string odd = kVerifier + "+";
    EXPECT_FALSE(op::pkce_matches(odd, op::pkce_challenge(odd)));  // outside the unreserved set
    EXPECT_FALSE(op::pkce_matches(kVerifier, ""));
}

TEST(OidcGrants, TokenRequestsAreParsed) {
    auto t = token_ok(kCodeBody + "&code_verifier=" + kVerifier + "&client_id=wiki&client_secret=" + kSecret);
    EXPECT_EQ(t.grant, op::Grant::AuthorizationCode);
    EXPECT_EQ(t.auth, op::ClientAuth::Post);
    EXPECT_EQ(t.client_id, "wiki");
    EXPECT_EQ(t.client_secret.reveal(), kSecret);
    EXPECT_EQ(t.code.reveal(), "C0DE");
    EXPECT_EQ(t.redirect_uri, "https://wiki.example/cb");
    EXPECT_EQ(t.code_verifier.reveal(), kVerifier);
    // Basic: each part form-encoded first (RFC 6749 §2.3.1)
    auto b = token_ok(kCodeBody, basic("wiki", "a%3Ab+c"));
    EXPECT_EQ(b.auth, op::ClientAuth::Basic);
    EXPECT_EQ(b.client_secret.reveal(), "a:b c");
    auto p = token_ok("grant_type=refresh_token&refresh_token=R1&client_id=cli&scope=openid");
    EXPECT_EQ(p.grant, op::Grant::RefreshToken);
    EXPECT_EQ(p.auth, op::ClientAuth::None);
    EXPECT_EQ(p.refresh_token.reveal(), "R1");
    EXPECT_EQ(p.scope, "openid");

    EXPECT_EQ(token_refused("code=C&client_id=wiki").error, "invalid_request");
    EXPECT_EQ(token_refused("grant_type=password&client_id=wiki").error, "unsupported_grant_type");
    EXPECT_EQ(token_refused("grant_type=client_credentials&client_id=wiki").error, "unsupported_grant_type");
    EXPECT_EQ(token_refused(kCodeBody + "&client_id=wiki&code=D").error, "invalid_request");   // twice
    EXPECT_EQ(token_refused("grant_type=authorization_code&code=C&client_id=wiki").error, "invalid_request");
    EXPECT_EQ(token_refused("grant_type=refresh_token&client_id=wiki").error, "invalid_request");
    EXPECT_EQ(token_refused(kCodeBody + "&client_id=wiki&state=%G0").error, "invalid_request");
    EXPECT_EQ(token_refused(kCodeBody + std::string(op::kMaxTokenBody, 'x')).error, "invalid_request");
    auto none = token_refused(kCodeBody);  // no client at all
    EXPECT_EQ(none.error, "invalid_client");
    EXPECT_EQ(none.status, 401);
    // two ways of authenticating at once, or two names
    EXPECT_EQ(token_refused(kCodeBody + "&client_secret=x", basic("wiki", kSecret)).error, "invalid_request");
    EXPECT_EQ(token_refused(kCodeBody + "&client_id=ops", basic("wiki", kSecret)).error, "invalid_request");
    EXPECT_EQ(token_refused(kCodeBody + "&client_secret=x").error, "invalid_request");
    auto bearer = token_refused(kCodeBody, "Bearer abc");
    EXPECT_EQ(bearer.error, "invalid_client");
    EXPECT_TRUE(bearer.basic_challenge);
    EXPECT_EQ(token_refused(kCodeBody, "Basic !!!").error, "invalid_client");
    EXPECT_EQ(token_refused(kCodeBody, basic("wiki", "%zz")).error, "invalid_client");
    EXPECT_EQ(op::token_error_json(none), R"({"error":"invalid_client","error_description":"The request names no client."})");
}

TEST(OidcGrants, ClientsAuthenticateByTheirSecretOrNotAtAll) {
    const auto clients = registry();
    auto who = [&](const std::string &body, const std::string &authorization = {}) -> std::string {
        auto t = op::parse_token_request(body, authorization);
        if (auto *e = std::get_if<op::TokenError>(&t)) return "parse:" + e->error;
        auto c = op::authenticate(std::get<op::TokenRequest>(t), clients);
        if (auto *e = std::get_if<op::TokenError>(&c)) return e->error + (e->basic_challenge ? "+basic" : "");
        return std::get<const op::Client *>(c)->id;
    };
    EXPECT_EQ(who(kCodeBody, basic("wiki", kSecret)), "wiki");
    EXPECT_EQ(who(kCodeBody + "&client_id=wiki&client_secret=" + kSecret), "wiki");
    EXPECT_EQ(who(kCodeBody, basic("wiki", kSecret + "x")), "invalid_client+basic");
    EXPECT_EQ(who(kCodeBody + "&client_id=wiki&client_secret=nope"), "invalid_client");
    EXPECT_EQ(who(kCodeBody + "&client_id=wiki"), "invalid_client");  // a confidential client must authenticate
    EXPECT_EQ(who(kCodeBody + "&client_id=cli"), "cli");              // a public one cannot
    EXPECT_EQ(who(kCodeBody + "&client_id=cli&client_secret=" + kSecret), "invalid_client");
    EXPECT_EQ(who(kCodeBody, basic("nobody", kSecret)), "invalid_client+basic");
    EXPECT_EQ(who(kCodeBody + "&client_id=ops&client_secret=" + kSecret), "invalid_client");  // no secret was read
}

namespace {

struct Flow {
    op::Clients clients = registry();
    User alice;
    Millis now = 1'800'000'000'000;
    Flow() {
        alice.id = "0192d7c4-0000-7000-8000-00000000a11c";
        alice.email = "alice@acme.com";
        alice.roles = {"ops", "admin"};
    }
    op::AuthorizeRequest request(const std::string &extra) {
        auto a = op::parse_authorize(kWiki + "&response_type=code&scope=openid+email+offline_access&nonce=N" + extra, clients);
        return std::get<op::AuthorizeRequest>(a);
    }
    op::CodeRecord code(const std::string &extra = "&code_challenge=" + kChallenge + "&code_challenge_method=S256") {
        return op::new_code(request(extra), alice.id, now - 1000, SignInMethod::Password, true, record_key("C0DE"), now);
    }
    op::CodeCheck spend(const op::CodeRecord *c, const std::string &body, const std::string &client = "wiki") {
        return op::check_code(c, token_ok(body + "&client_id=" + client), *clients.find(client), now);
    }
};

}  // namespace

TEST(OidcGrants, ACodeIsBoundToItsClientRedirectAndVerifier) {
    Flow f;
    const op::CodeRecord c = f.code();
    EXPECT_EQ(c.key, record_key("C0DE"));
    EXPECT_EQ(c.client_id, "wiki");
    EXPECT_EQ(c.amr, (std::vector<std::string>{"pwd", "otp", "mfa"}));
    EXPECT_EQ(c.expires_at, f.now + op::kCodeTtl);
    const std::string good = kCodeBody + "&code_verifier=" + kVerifier;
    EXPECT_EQ(f.spend(&c, good).outcome, op::CodeOutcome::Ok);
    EXPECT_EQ(f.spend(nullptr, good).outcome, op::CodeOutcome::Invalid);
    // another client, another redirect URI, a wrong or missing verifier
    EXPECT_EQ(f.spend(&c, good, "ops").error.error, "invalid_grant");
    EXPECT_EQ(f.spend(&c, "grant_type=authorization_code&code=C0DE&redirect_uri=https%3A%2F%2Fwiki.example%2Fcb2%3Fx%3D1"
                          "&code_verifier=" + kVerifier).outcome,
              op::CodeOutcome::Invalid);
    EXPECT_EQ(f.spend(&c, kCodeBody).outcome, op::CodeOutcome::Invalid);
    EXPECT_EQ(f.spend(&c, kCodeBody + "&code_verifier=" + std::string(43, 'A')).outcome, op::CodeOutcome::Invalid);
    // expired
    op::CodeRecord old = c;
    old.expires_at = f.now;
    EXPECT_EQ(f.spend(&old, good).outcome, op::CodeOutcome::Invalid);
    // spent: its reuse is told apart, so that what it gave can be revoked
    op::CodeRecord spent = c;
    spent.spent = true;
    auto reuse = f.spend(&spent, good);
    EXPECT_EQ(reuse.outcome, op::CodeOutcome::Reused);
    EXPECT_EQ(reuse.error.error, "invalid_grant");
    // a code asked for without PKCE refuses a verifier (a downgrade)
    const op::CodeRecord plain = f.code("");
    EXPECT_EQ(f.spend(&plain, kCodeBody).outcome, op::CodeOutcome::Ok);
    EXPECT_EQ(f.spend(&plain, good).outcome, op::CodeOutcome::Invalid);
}

TEST(OidcGrants, RefreshTokensRotateAndTheirReuseEndsTheFamily) {
    Flow f;
    const op::CodeRecord c = f.code();
    auto no_offline = c;
    no_offline.scopes = {"openid", "email"};
    EXPECT_FALSE(op::new_family(no_offline, "fam", f.now));
    auto fam = op::new_family(c, "fam-1", f.now);
    ASSERT_TRUE(fam);
    EXPECT_EQ(fam->generation, 1u);
    EXPECT_EQ(fam->user_id, f.alice.id);
    const op::RefreshTokenRecord first = op::refresh_token_record(*fam, record_key("R1"), f.now);
    EXPECT_EQ(first.generation, 1u);
    EXPECT_EQ(first.expires_at, f.now + op::kRefreshIdle);

    const op::Client &wiki = *f.clients.find("wiki");
    auto use = [&](const op::RefreshTokenRecord &t, const std::string &extra = {}, const op::Client *cl = nullptr) {
        return op::use_refresh(&t, &*fam, token_ok("grant_type=refresh_token&refresh_token=R&client_id=wiki" + extra),
                               cl ? *cl : wiki, f.now);
    };
    f.now += 1000;
    auto r = use(first);
    ASSERT_EQ(r.outcome, op::RefreshOutcome::Rotate);
    EXPECT_EQ(r.scopes, (std::vector<std::string>{"openid", "email", "offline_access"}));
    EXPECT_EQ(fam->generation, 2u);
    const op::RefreshTokenRecord second = op::refresh_token_record(*fam, record_key("R2"), f.now);
    // a narrower scope may be asked for, not a wider one
    auto narrow = use(second, "&scope=openid+offline_access");
    ASSERT_EQ(narrow.outcome, op::RefreshOutcome::Rotate);
    EXPECT_EQ(narrow.scopes, (std::vector<std::string>{"openid", "offline_access"}));
    const op::RefreshTokenRecord third = op::refresh_token_record(*fam, record_key("R3"), f.now);
    auto wide = use(third, "&scope=openid+admin");
    EXPECT_EQ(wide.outcome, op::RefreshOutcome::Invalid);
    EXPECT_EQ(wide.error.error, "invalid_scope");
    EXPECT_FALSE(fam->revoked);
    // another client holding it is refused, and the family lives on
    EXPECT_EQ(use(third, {}, f.clients.find("ops")).outcome, op::RefreshOutcome::Invalid);
    EXPECT_FALSE(fam->revoked);
    // the second token comes back after the third was handed out: the family ends
    auto reuse = use(second);
    EXPECT_EQ(reuse.outcome, op::RefreshOutcome::Reused);
    EXPECT_TRUE(fam->revoked);
    EXPECT_EQ(use(third).outcome, op::RefreshOutcome::Invalid);  // even the newest one
    // expiry: idle and absolute
    auto fam2 = op::new_family(c, "fam-2", f.now);
    const op::RefreshTokenRecord t2 = op::refresh_token_record(*fam2, record_key("S1"), f.now);
    auto req = token_ok("grant_type=refresh_token&refresh_token=S1&client_id=wiki");
    EXPECT_EQ(op::use_refresh(&t2, &*fam2, req, wiki, f.now + op::kRefreshIdle).outcome, op::RefreshOutcome::Invalid);
    EXPECT_EQ(op::use_refresh(&t2, nullptr, req, wiki, f.now).outcome, op::RefreshOutcome::Invalid);
    EXPECT_EQ(op::use_refresh(&t2, &*fam, req, wiki, f.now).outcome, op::RefreshOutcome::Invalid);  // not its family
}

TEST(OidcGrants, TheTokenAnswer) {
    Flow f;
    auto a = op::new_access_token(record_key("A1"), "wiki", f.alice.id, {"openid", "email"}, "fam-1", f.now);
    EXPECT_EQ(a.expires_at, f.now + op::kAccessTokenTtl);
    EXPECT_EQ(op::token_response("A1", op::kAccessTokenTtl, "h.p.s", "", {"openid", "email"}),
              R"({"access_token":"A1","token_type":"Bearer","expires_in":3600,"id_token":"h.p.s","scope":"openid email"})");
    EXPECT_EQ(op::token_response("A1", 60000, "h.p.s", "R1", {"openid"}),
              R"({"access_token":"A1","token_type":"Bearer","expires_in":60,"id_token":"h.p.s","refresh_token":"R1","scope":"openid"})");
}

TEST(OidcGrants, RevocationRequestsAreParsed) {
    auto parse = [](const std::string &body, const std::string &authorization = {}) { return op::parse_revoke_request(body, authorization); };
    auto r = parse("token=T1&token_type_hint=refresh_token&client_id=cli");
    ASSERT_TRUE(std::holds_alternative<op::RevokeRequest>(r));
    const auto &rr = std::get<op::RevokeRequest>(r);
    EXPECT_EQ(rr.token.reveal(), "T1");
    EXPECT_EQ(rr.hint, "refresh_token");
    EXPECT_EQ(rr.client_id, "cli");
    EXPECT_EQ(rr.auth, op::ClientAuth::None);
    auto other = parse("token=T1&token_type_hint=id_token", basic("wiki", kSecret));
    ASSERT_TRUE(std::holds_alternative<op::RevokeRequest>(other));
    EXPECT_EQ(std::get<op::RevokeRequest>(other).hint, "");  // an unknown hint is dropped
    EXPECT_EQ(std::get<op::RevokeRequest>(other).auth, op::ClientAuth::Basic);
    const auto clients = registry();
    auto who = op::authenticate(std::get<op::RevokeRequest>(other), clients);
    ASSERT_TRUE(std::holds_alternative<const op::Client *>(who));
    EXPECT_EQ(std::get<const op::Client *>(who)->id, "wiki");

    auto error = [&](const std::string &body, const std::string &authorization = {}) {
        auto e = parse(body, authorization);
        return std::holds_alternative<op::TokenError>(e) ? std::get<op::TokenError>(e).error : std::string("accepted");
    };
    EXPECT_EQ(error("client_id=cli"), "invalid_request");                 // no token
    EXPECT_EQ(error("token=T1"), "invalid_client");                       // no client
    EXPECT_EQ(error("token=T1&token=T2&client_id=cli"), "invalid_request");
    EXPECT_EQ(error("token=T1&client_secret=x", basic("wiki", kSecret)), "invalid_request");
    EXPECT_EQ(error("token=%", basic("wiki", kSecret)), "invalid_request");
}
