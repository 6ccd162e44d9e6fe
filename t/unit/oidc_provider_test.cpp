// The OpenID provider's core (oidc_provider.hpp), its first half: clients from their directive's
// words, the authorization request and its two kinds of refusal (a page, or back to the client),
// who may use a client and what a sign-in still lacks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "oidc_op_fixtures.hpp"
#include "signin/oidc_provider.hpp"

using namespace signin;
using namespace signin::testing::oidc_op;

namespace {

std::string error_of(const std::vector<std::string> &words) {
    auto c = op::parse_client(words);
    return c ? "" : c.error().message;
}

}  // namespace

TEST(OidcProvider, ClientsAreParsedFromTheirWords) {
    auto c = client({"grafana", "redirect_uri=https://grafana.example/login/generic_oauth", "secret_file=/etc/g",
                     "consent=off", "require=mfa", "allow=email:Alice@Acme.com", "allow=role:admin",
                     "id_token_alg=ES256"});
    EXPECT_EQ(c.id, "grafana");
    EXPECT_EQ(c.redirect_uris, std::vector<std::string>{"https://grafana.example/login/generic_oauth"});
    EXPECT_FALSE(c.is_public);
    EXPECT_EQ(c.secret_file, "/etc/g");
    EXPECT_FALSE(c.consent);
    EXPECT_TRUE(c.require_mfa);
    EXPECT_EQ(c.alg, op::Alg::ES256);
    ASSERT_EQ(c.allow.size(), 2u);
    EXPECT_EQ(c.allow[0].value, "alice@acme.com");
    auto p = client({"app", "redirect_uri=http://localhost:3000/cb", "redirect_uri=http://[::1]/cb", "public"});
    EXPECT_TRUE(p.is_public);
    EXPECT_TRUE(p.consent);           // asked unless the operator says the client is first-party
    EXPECT_EQ(p.alg, op::Alg::RS256);  // what most applications take
}

TEST(OidcProvider, BadClientsAreRefusedWithAReason) {
    EXPECT_NE(error_of({}), "");
    EXPECT_NE(error_of({"bad name", "redirect_uri=https://a.example/cb", "public"}), "");
    EXPECT_NE(error_of({"a", "public"}), "");                                  // no redirect URI
    EXPECT_NE(error_of({"a", "redirect_uri=https://a.example/cb"}), "");       // neither secret nor public
    EXPECT_NE(error_of({"a", "redirect_uri=https://a.example/cb", "public", "secret_file=/s"}), "");
    EXPECT_NE(error_of({"a", "redirect_uri=https://a.example/cb", "public", "colour=red"}), "");
    EXPECT_NE(error_of({"a", "redirect_uri=https://a.example/cb", "public", "verbose"}), "");
    EXPECT_NE(error_of({"a", "redirect_uri=https://a.example/cb", "public", "consent=maybe"}), "");
    EXPECT_NE(error_of({"a", "redirect_uri=https://a.example/cb", "public", "require=password"}), "");
    EXPECT_NE(error_of({"a", "redirect_uri=https://a.example/cb", "public", "allow=everyone"}), "");
    EXPECT_NE(error_of({"a", "redirect_uri=https://a.example/cb", "public", "allow=email:nobody"}), "");
    EXPECT_NE(error_of({"a", "redirect_uri=https://a.example/cb", "public", "id_token_alg=HS256"}), "");
    EXPECT_NE(error_of({"a", "redirect_uri=https://a.example/cb", "public", "id_token_alg=none"}), "");
    EXPECT_NE(error_of({"a", "redirect_uri=https://a.example/cb", "redirect_uri=https://a.example/cb", "public"}), "");
    EXPECT_NE(error_of({"a", "redirect_uri=https://a.example/cb", "public", "consent=on", "consent=off"}), "");
    EXPECT_EQ(error_of({"a", "redirect_uri=https://a.example/cb", "public"}), "");

    EXPECT_EQ(op::check_redirect_uri("https://app.example/cb?tenant=1"), "");
    EXPECT_EQ(op::check_redirect_uri("http://127.0.0.1:8400/"), "");
    EXPECT_NE(op::check_redirect_uri("http://app.example/cb"), "");   // plain http off loopback
    EXPECT_NE(op::check_redirect_uri("https://app.example/cb#x"), "");
    EXPECT_NE(op::check_redirect_uri("https://user@app.example/cb"), "");
    EXPECT_NE(op::check_redirect_uri("https://app.example/c b"), "");
    EXPECT_NE(op::check_redirect_uri("javascript:alert(1)"), "");
    EXPECT_NE(op::check_redirect_uri("com.example.app:/cb"), "");
    EXPECT_NE(op::check_redirect_uri("https:///cb"), "");
    EXPECT_NE(op::check_redirect_uri("http://127.0.0.1.evil.example/cb"), "");
}

TEST(OidcProvider, SecretsAreKeptOnlyAsADigest) {
    auto c = client({"a", "redirect_uri=https://a.example/cb", "secret_file=/s"});
    EXPECT_FALSE(op::set_secret(c, "short\n"));
    EXPECT_FALSE(op::set_secret(c, "\n"));
    ASSERT_TRUE(op::set_secret(c, "  " + kSecret + " \r\nsecond line"));
    EXPECT_EQ(c.secret_digest.size(), 32u);
    EXPECT_EQ(c.secret_digest.find(kSecret), std::string::npos);
    EXPECT_TRUE(op::secret_matches(c, kSecret));
    EXPECT_FALSE(op::secret_matches(c, kSecret + "x"));
    EXPECT_FALSE(op::secret_matches(c, ""));
    auto p = client({"p", "redirect_uri=https://a.example/cb", "public"});
    EXPECT_FALSE(op::set_secret(p, kSecret));
    EXPECT_FALSE(op::secret_matches(p, ""));
    op::Clients all;
    EXPECT_TRUE(all.add(c));
    EXPECT_FALSE(all.add(c));  // the same name twice
}

namespace {

const op::AuthorizeRequest *ok(const op::Authorize &a) {
    if (const auto *e = std::get_if<op::AuthorizeError>(&a)) {
        ADD_FAILURE() << e->error << ": " << e->description;
        return nullptr;
    }
    return &std::get<op::AuthorizeRequest>(a);
}

op::AuthorizeError refused(const op::Authorize &a) {
    if (std::holds_alternative<op::AuthorizeRequest>(a)) {
        ADD_FAILURE() << "accepted";
        return {};
    }
    return std::get<op::AuthorizeError>(a);
}

}  // namespace

TEST(OidcProvider, AuthorizeRequestsAreParsed) {
    const auto clients = registry();
    auto a = op::parse_authorize(kWiki + "&response_type=code&scope=openid+email+unknown+offline_access&state=s%20t&nonce=n1"
                                         "&code_challenge=" + kChallenge + "&code_challenge_method=S256&prompt=login"
                                         "&max_age=300&login_hint=Bob%40Acme.com&ui_locales=de&foo=bar",
                                 clients);
    const auto *r = ok(a);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->client_id, "wiki");
    EXPECT_EQ(r->redirect_uri, "https://wiki.example/cb");
    EXPECT_EQ(r->scope(), "openid email offline_access");  // unknown scopes ignored
    EXPECT_TRUE(r->offline_access());
    EXPECT_EQ(r->state, "s t");
    EXPECT_EQ(r->nonce, "n1");
    EXPECT_EQ(r->code_challenge, kChallenge);
    EXPECT_TRUE(r->prompt_login);
    EXPECT_FALSE(r->prompt_none);
    EXPECT_FALSE(r->prompt_consent);
    EXPECT_EQ(r->max_age, 300);
    EXPECT_EQ(r->login_hint, "bob@acme.com");
    // a confidential client may go without PKCE; the redirect URI with a query matches exactly
    auto b = op::parse_authorize(
        "client_id=wiki&response_type=code&scope=openid&redirect_uri=https://wiki.example/cb2?x=1", clients);
    ASSERT_NE(ok(b), nullptr);
    EXPECT_EQ(ok(b)->code_challenge, "");
    EXPECT_FALSE(ok(b)->offline_access());
}

TEST(OidcProvider, AnUntrustedClientOrRedirectIsShownNeverRedirected) {
    const auto clients = registry();
    for (const std::string &q : {
             std::string("response_type=code&redirect_uri=https%3A%2F%2Fwiki.example%2Fcb&scope=openid"),  // no client
             std::string("client_id=nope&response_type=code&redirect_uri=https%3A%2F%2Fwiki.example%2Fcb"),
             std::string("client_id=wiki&response_type=code&scope=openid"),                                  // no redirect
             std::string("client_id=wiki&response_type=code&redirect_uri=https%3A%2F%2Fevil.example%2Fcb"),
             std::string("client_id=wiki&redirect_uri=https%3A%2F%2Fwiki.example%2Fcb%2F"),                  // not exact
             std::string("client_id=wiki&redirect_uri=https%3A%2F%2FWIKI.example%2Fcb"),
             std::string("client_id=wiki&redirect_uri=https%3A%2F%2Fwiki.example%2Fcb2"),                    // query dropped
             std::string("client_id=wiki&redirect_uri=https%3A%2F%2Fops.example%2Fcb"),                      // another client's
             kWiki + "&redirect_uri=https%3A%2F%2Fevil.example%2Fcb",                                        // given twice
             kWiki + "&client_id=cli",
             "state=a&state=b&" + kWiki + "&client_id=cli",                                                  // after another
             kWiki + "&state=%zz",                                                                           // bad encoding
             kWiki + "&state=" + std::string(op::kMaxQuery, 'x'),
         }) {
        auto e = refused(op::parse_authorize(q, clients));
        EXPECT_TRUE(e.page) << q;
        EXPECT_EQ(e.redirect_uri, "") << q;
    }
}

TEST(OidcProvider, OtherRefusalsGoBackToTheClient) {
    const auto clients = registry();
    struct Case {
        std::string query;
        std::string error;
    };
    const std::string cli = "client_id=cli&redirect_uri=http%3A%2F%2F127.0.0.1%3A8400%2Fcb&state=xyz";
    for (const Case &c : std::vector<Case>{
             {kWiki + "&scope=openid&state=xyz", "invalid_request"},                      // no response_type
             {kWiki + "&response_type=token&scope=openid&state=xyz", "unsupported_response_type"},
             {kWiki + "&response_type=code+id_token&scope=openid&state=xyz", "unsupported_response_type"},
             {kWiki + "&response_type=code&scope=email&state=xyz", "invalid_scope"},
             {kWiki + "&response_type=code&state=xyz", "invalid_scope"},
             {kWiki + "&response_type=code&scope=openid&state=xyz&nonce=a&nonce=b", "invalid_request"},
             {kWiki + "&response_type=code&scope=openid&state=xyz&prompt=select_account", "invalid_request"},
             {kWiki + "&response_type=code&scope=openid&state=xyz&prompt=none+login", "invalid_request"},
             {kWiki + "&response_type=code&scope=openid&state=xyz&prompt=login+bogus", "invalid_request"},
             {kWiki + "&response_type=code&scope=openid&state=xyz&max_age=-1", "invalid_request"},
             {kWiki + "&response_type=code&scope=openid&state=xyz&max_age=1e3", "invalid_request"},
             {kWiki + "&response_type=code&scope=openid&state=xyz&response_mode=fragment", "invalid_request"},
             {kWiki + "&response_type=code&scope=openid&state=xyz&request=eyJ", "request_not_supported"},
             {kWiki + "&response_type=code&scope=openid&state=xyz&request_uri=https://x", "request_uri_not_supported"},
             // PKCE: 'plain' (named, or by leaving the method out) and malformed challenges refused
             {kWiki + "&response_type=code&scope=openid&state=xyz&code_challenge=" + kChallenge, "invalid_request"},
             {kWiki + "&response_type=code&scope=openid&state=xyz&code_challenge=" + kChallenge +
                  "&code_challenge_method=plain", "invalid_request"},
             {kWiki + "&response_type=code&scope=openid&state=xyz&code_challenge=short&code_challenge_method=S256",
              "invalid_request"},
             {kWiki + "&response_type=code&scope=openid&state=xyz&code_challenge_method=S256", "invalid_request"},
             // a public client without PKCE
             {cli + "&response_type=code&scope=openid", "invalid_request"},
         }) {
        auto e = refused(op::parse_authorize(c.query, clients));
        EXPECT_FALSE(e.page) << c.query;
        EXPECT_EQ(e.error, c.error) << c.query;
        EXPECT_EQ(e.state, "xyz") << c.query;
        EXPECT_NE(e.redirect_uri, "") << c.query;
    }
    auto pub = op::parse_authorize(cli + "&response_type=code&scope=openid&code_challenge=" + kChallenge +
                                       "&code_challenge_method=S256",
                                   clients);
    EXPECT_NE(ok(pub), nullptr);
    // a state that cannot be echoed safely is not echoed
    auto e = refused(op::parse_authorize(kWiki + "&scope=openid&state=a%0Ab", clients));
    EXPECT_EQ(e.state, "");
    EXPECT_FALSE(e.page);
}

TEST(OidcProvider, RedirectsCarryTheAnswerAndTheIssuer) {
    const auto clients = registry();
    const auto a = op::parse_authorize(kWiki + "&response_type=code&scope=openid&state=a%26b%3D", clients);
    const auto *r = ok(a);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(op::code_redirect(*r, "C0DE", "https://id.example/auth"),
              "https://wiki.example/cb?code=C0DE&state=a%26b%3D&iss=https%3A%2F%2Fid.example%2Fauth");
    const auto b = op::parse_authorize(
        "client_id=wiki&response_type=code&scope=openid&redirect_uri=https%3A%2F%2Fwiki.example%2Fcb2%3Fx%3D1", clients);
    const auto *with_query = ok(b);
    ASSERT_NE(with_query, nullptr);
    EXPECT_EQ(op::code_redirect(*with_query, "C", "https://i"), "https://wiki.example/cb2?x=1&code=C&iss=https%3A%2F%2Fi");
    auto e = refused(op::parse_authorize(kWiki + "&response_type=token&scope=openid&state=s", clients));
    EXPECT_EQ(op::error_redirect(e, "https://i"),
              "https://wiki.example/cb?error=unsupported_response_type&error_description=Only%20response_type%3Dcode%20is%20supported.&state=s&iss=https%3A%2F%2Fi");
}

TEST(OidcProvider, WhoMayUseAClientAndWhatASignInLacks) {
    const auto clients = registry();
    const op::Client &wiki = *clients.find("wiki");
    const op::Client &ops = *clients.find("ops");
    User alice;
    alice.id = "u-alice";
    alice.email = "alice@acme.com";
    User bob;
    bob.id = "u-bob";
    bob.email = "bob@other.org";
    const Millis now = 1'800'000'000'000;
    auto req = [&](std::string extra, const std::string &base = kWiki) {
        auto a = op::parse_authorize(base + "&response_type=code&scope=openid" + extra, clients);
        return std::get<op::AuthorizeRequest>(a);
    };
    op::SignedIn nobody;
    EXPECT_EQ(op::decide(req(""), wiki, nobody, now).next, op::Next::SignIn);
    auto none = op::decide(req("&prompt=none"), wiki, nobody, now);
    EXPECT_EQ(none.next, op::Next::Refuse);
    EXPECT_EQ(none.refusal.error, "login_required");

    op::SignedIn s;
    s.user = &alice;
    s.auth_time = now - 600'000;
    EXPECT_EQ(op::decide(req(""), wiki, s, now).next, op::Next::Consent);  // consent on by default
    EXPECT_EQ(op::decide(req("&prompt=none"), wiki, s, now).refusal.error, "consent_required");
    s.consented = true;
    EXPECT_EQ(op::decide(req(""), wiki, s, now).next, op::Next::Issue);
    EXPECT_EQ(op::decide(req("&prompt=consent"), wiki, s, now).next, op::Next::Consent);
    EXPECT_EQ(op::decide(req("&prompt=login"), wiki, s, now).next, op::Next::SignIn);
    EXPECT_EQ(op::decide(req("&prompt=login%20consent"), wiki, s, now).next, op::Next::SignIn);
    EXPECT_EQ(op::decide(req("&max_age=300"), wiki, s, now).next, op::Next::SignIn);   // signed in 600 s ago
    EXPECT_EQ(op::decide(req("&max_age=900"), wiki, s, now).next, op::Next::Issue);
    EXPECT_EQ(op::decide(req("&max_age=300&prompt=none"), wiki, s, now).refusal.error, "login_required");
    s.login_done = true;
    EXPECT_EQ(op::decide(req("&prompt=login"), wiki, s, now).next, op::Next::Issue);

    // ops: domain acme.com or role ops, with a second factor
    const std::string ops_base = "client_id=ops&redirect_uri=https%3A%2F%2Fops.example%2Fcb&state=st";
    op::SignedIn b;
    b.user = &bob;
    auto denied = op::decide(req("", ops_base), ops, b, now);
    EXPECT_EQ(denied.next, op::Next::Refuse);
    EXPECT_EQ(denied.refusal.error, "access_denied");
    EXPECT_EQ(denied.refusal.state, "st");
    EXPECT_EQ(denied.refusal.redirect_uri, "https://ops.example/cb");
    bob.roles = {"ops"};
    EXPECT_EQ(op::decide(req("", ops_base), ops, b, now).next, op::Next::SecondFactor);
    EXPECT_EQ(op::decide(req("&prompt=none", ops_base), ops, b, now).refusal.error, "interaction_required");
    b.mfa = true;
    EXPECT_EQ(op::decide(req("", ops_base), ops, b, now).next, op::Next::Issue);  // consent=off
    bob.suspended = true;
    EXPECT_EQ(op::decide(req("", ops_base), ops, b, now).refusal.error, "access_denied");
}

TEST(OidcProvider, AmrNamesHowThePersonSignedIn) {
    using V = std::vector<std::string>;
    EXPECT_EQ(op::amr(SignInMethod::EmailToken, false), V{"otp"});
    EXPECT_EQ(op::amr(SignInMethod::EmailToken, true), (V{"otp", "mfa"}));
    EXPECT_EQ(op::amr(SignInMethod::Password, false), V{"pwd"});
    EXPECT_EQ(op::amr(SignInMethod::Password, true), (V{"pwd", "otp", "mfa"}));
    EXPECT_EQ(op::amr(SignInMethod::Passkey, true), (V{"hwk", "mfa"}));
    EXPECT_EQ(op::amr(SignInMethod::Provider, false), V{});
}

TEST(OidcProvider, AConsentCoversTheScopesAgreedTo) {
    const auto clients = registry();
    const auto a = op::parse_authorize(kWiki + "&response_type=code&scope=openid+email", clients);
    const auto &r = std::get<op::AuthorizeRequest>(a);
    EXPECT_FALSE(op::covers(nullptr, r));
    const op::ConsentRecord first = op::grant_consent(nullptr, r, "u-1", 1000);
    EXPECT_EQ(first.scopes, (std::vector<std::string>{"openid", "email"}));
    EXPECT_EQ(first.client_id, "wiki");
    EXPECT_TRUE(op::covers(&first, r));
    // more scopes ask again; the new consent keeps the old ones
    const auto b = op::parse_authorize(kWiki + "&response_type=code&scope=openid+offline_access", clients);
    const auto &wider = std::get<op::AuthorizeRequest>(b);
    EXPECT_FALSE(op::covers(&first, wider));
    const op::ConsentRecord second = op::grant_consent(&first, wider, "u-1", 2000);
    EXPECT_EQ(second.scopes, (std::vector<std::string>{"openid", "email", "offline_access"}));
    EXPECT_TRUE(op::covers(&second, r));
    // a consent to one client is not one to another
    const auto c = op::parse_authorize("client_id=ops&redirect_uri=https%3A%2F%2Fops.example%2Fcb&response_type=code&scope=openid", clients);
    EXPECT_FALSE(op::covers(&second, std::get<op::AuthorizeRequest>(c)));
}

TEST(OidcProvider, PostLogoutRedirectUrisAreRegisteredLikeRedirectUris) {
    auto c = client({"a", "redirect_uri=https://a.example/cb", "public", "post_logout_redirect_uri=https://a.example/bye",
                     "post_logout_redirect_uri=http://localhost:3000/"});
    EXPECT_EQ(c.post_logout_redirect_uris, (std::vector<std::string>{"https://a.example/bye", "http://localhost:3000/"}));
    EXPECT_NE(error_of({"a", "redirect_uri=https://a.example/cb", "public", "post_logout_redirect_uri=http://a.example/"}), "");
    EXPECT_NE(error_of({"a", "redirect_uri=https://a.example/cb", "public", "post_logout_redirect_uri=https://a.example/#x"}), "");
    EXPECT_NE(error_of({"a", "redirect_uri=https://a.example/cb", "public", "post_logout_redirect_uri=https://a/b",
                        "post_logout_redirect_uri=https://a/b"}), "");
}
