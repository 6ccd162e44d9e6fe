// The OpenID provider's operations over a real store (oidc_issuer.hpp): a person signed in by an
// email code goes through authorize, consent, the code and the token endpoint, and each refusal
// the OAuth security BCP names is checked against the records it must leave: a reused code ends
// the access token it gave, a reused refresh token ends its family, a code is bound to its client,
// redirect URI and PKCE verifier. On LMDB, and on PostgreSQL where SIGNIN_TEST_PG names one.
#include <cjson/cJSON.h>
#include <gtest/gtest.h>
#include <sodium.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <variant>

#include "core/encoding.hpp"
#include "core/form.hpp"
#include "engine_fixtures.hpp"
#include "oidc_op_fixtures.hpp"
#include "signin/oidc.hpp"
#include "signin/oidc_issuer.hpp"

using namespace signin;
using namespace signin::testing;
using namespace signin::testing::oidc_op;

namespace {

constexpr const char *kIssuer = "https://acme.example/auth";
const std::string kCli = "response_type=code&client_id=cli&redirect_uri=http%3A%2F%2F127.0.0.1%3A8400%2Fcb";
const std::string kCliRedirect = "redirect_uri=http%3A%2F%2F127.0.0.1%3A8400%2Fcb";

// A parameter of a redirect's query ("" when not there).
std::string param(const std::string &url, const std::string &name) {
    const auto q = url.find('?');
    if (q == std::string::npos) return {};
    auto p = form::Params::parse(std::string_view(url).substr(q + 1));
    return p.value(name);
}

// A member of a JSON object answer ("" when not a string there).
std::string member(const std::string &json, const char *name) {
    cJSON *doc = cJSON_ParseWithLength(json.data(), json.size());
    if (doc == nullptr) return {};
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, name);
    std::string out = cJSON_IsString(v) ? std::string(v->valuestring) : std::string();
    cJSON_Delete(doc);
    return out;
}

std::string basic(const std::string &id, const std::string &secret) {
    const std::string pair = id + ":" + secret;
    std::string out(sodium_base64_ENCODED_LEN(pair.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
    sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char *>(pair.data()), pair.size(),
                      sodium_base64_VARIANT_ORIGINAL);
    out.resize(std::strlen(out.c_str()));
    return "Basic " + out;
}

class OidcIssuerTest : public EngineTest {
protected:
    void SetUp() override {
        EngineTest::SetUp();
        if (HasFatalFailure() || IsSkipped()) return;
        make(open_policy());
        clients_ = registry();
        auto key = op::SigningKey::generate(op::Alg::RS256);
        ASSERT_TRUE(key);
        keys_.add(std::make_shared<const op::SigningKey>(std::move(key).value()));
        site_.clients = &clients_;
        site_.keys = &keys_;
        site_.issuer = kIssuer;
        alice_ = principal(sign_in("alice@acme.com"));
    }
    OidcIssuer &issuer() { return id_->oidc_issuer(); }

    op::AuthorizeRequest authorize(const std::string &query) {
        auto a = op::parse_authorize(query, clients_);
        EXPECT_TRUE(std::holds_alternative<op::AuthorizeRequest>(a)) << std::get<op::AuthorizeError>(a).description;
        return std::holds_alternative<op::AuthorizeRequest>(a) ? std::get<op::AuthorizeRequest>(a) : op::AuthorizeRequest{};
    }
    // The code of an authorization request of the public client, with PKCE and `scope`.
    std::string cli_code(const std::string &scope = "openid+email") {
        auto r = authorize(kCli + "&scope=" + scope + "&state=st&nonce=N-1&code_challenge=" + kChallenge +
                           "&code_challenge_method=S256");
        auto d = issuer().decide(site_, r, &alice_, false, false, "c");
        EXPECT_TRUE(d);
        EXPECT_EQ(d->next, op::Next::Issue);
        auto url = issuer().issue_code(site_, r, alice_, "c");
        EXPECT_TRUE(url) << url.error().message;
        EXPECT_EQ(param(*url, "state"), "st");
        EXPECT_EQ(param(*url, "iss"), kIssuer);
        return param(*url, "code");
    }
    OpAnswer exchange_cli(const std::string &code, const std::string &verifier = kVerifier) {
        return issuer().token(site_, "grant_type=authorization_code&client_id=cli&" + kCliRedirect + "&code=" + code +
                                         (verifier.empty() ? "" : "&code_verifier=" + verifier), "", "c");
    }
    OpAnswer userinfo(const std::string &access) { return issuer().userinfo("Bearer " + access); }

    op::Clients clients_;
    op::KeyRing keys_;
    OpSite site_;
    Principal alice_;
};

TEST_F(OidcIssuerTest, ACodeGivesTokensOnceAndItsReuseEndsThem) {
    const std::string code = cli_code();
    ASSERT_FALSE(code.empty());
    OpAnswer a = exchange_cli(code);
    ASSERT_EQ(a.status, 200) << a.body;
    const std::string access = member(a.body, "access_token");
    const std::string jwt = member(a.body, "id_token");
    EXPECT_EQ(member(a.body, "refresh_token"), "");  // no offline_access, no refresh token

    // the ID token verifies with the relying party's verifier against the published keys
    auto jwks = oidc::KeySet::parse(keys_.jwks());
    ASSERT_TRUE(jwks);
    oidc::Expected e;
    e.issuer = kIssuer;
    e.client_id = "cli";
    e.nonce = "N-1";
    e.now = clock_->now();
    auto v = oidc::verify_id_token(jwt, jwks.value(), e);
    ASSERT_EQ(v.refusal, oidc::Refusal::None) << oidc::refusal_name(v.refusal);
    EXPECT_EQ(v.claims.sub, alice_.user.id);
    EXPECT_EQ(v.claims.email, "alice@acme.com");

    OpAnswer info = userinfo(access);
    ASSERT_EQ(info.status, 200) << info.body;
    EXPECT_EQ(member(info.body, "sub"), alice_.user.id);
    EXPECT_EQ(member(info.body, "email"), "alice@acme.com");

    // the code again: refused, and the access token it gave stops working
    EXPECT_EQ(a.outcome, OpOutcome::Granted);
    OpAnswer again = exchange_cli(code);
    EXPECT_EQ(again.status, 400);
    EXPECT_EQ(again.outcome, OpOutcome::Reused);
    EXPECT_EQ(member(again.body, "error"), "invalid_grant");
    EXPECT_EQ(userinfo(access).status, 401);
    EXPECT_EQ(issuer().userinfo("").status, 401);
    // nothing handed out is stored in clear
    const std::string bytes = stored_bytes();
    EXPECT_EQ(bytes.find(code), std::string::npos);
    EXPECT_EQ(bytes.find(access), std::string::npos);
}

// The write and the signature apart, as the transport runs them (the write in its batch, the
// signature after the commit): the grant is durable before any signature, with no ID token in
// it; the answer signs it. A refusal is whole at once and asks for no signature.
TEST_F(OidcIssuerTest, TheGrantIsWrittenBeforeItsIdTokenIsSigned) {
    const std::string code = cli_code();
    const std::string body = "grant_type=authorization_code&client_id=cli&" + kCliRedirect + "&code=" + code +
                             "&code_verifier=" + kVerifier;
    TokenGrant g = issuer().token_write(site_, body, "", "c");
    ASSERT_EQ(g.answer.outcome, OpOutcome::Granted);
    EXPECT_TRUE(g.answer.body.empty());
    ASSERT_NE(g.key, nullptr);
    EXPECT_NE(g.id_claims.find("\"nonce\":\"N-1\""), std::string::npos) << g.id_claims;
    const std::string access(g.access.reveal());
    EXPECT_EQ(userinfo(access).status, 200) << "the access token works before the ID token is signed";
    OpAnswer a = OidcIssuer::token_answer(std::move(g));
    ASSERT_EQ(a.status, 200);
    EXPECT_EQ(member(a.body, "access_token"), access);
    const std::string jwt = member(a.body, "id_token");
    EXPECT_EQ(std::count(jwt.begin(), jwt.end(), '.'), 2) << a.body;

    TokenGrant again = issuer().token_write(site_, body, "", "c");
    EXPECT_EQ(again.answer.outcome, OpOutcome::Reused);
    EXPECT_EQ(member(again.answer.body, "error"), "invalid_grant");
    EXPECT_EQ(userinfo(access).status, 401) << "the reused code took back what it gave";
    EXPECT_EQ(OidcIssuer::token_answer(std::move(again)).status, 400);

    // a wrong verifier spends the code too: the right one after it finds it used
    const std::string other = cli_code();
    EXPECT_EQ(exchange_cli(other, std::string(43, 'x')).status, 400);
    EXPECT_EQ(exchange_cli(other).outcome, OpOutcome::Reused);
}

TEST_F(OidcIssuerTest, ACodeIsBoundToItsVerifierRedirectUriAndClient) {
    // a wrong verifier, and no verifier at all (a downgrade): refused, and the code is spent
    std::string code = cli_code();
    EXPECT_EQ(member(exchange_cli(code, std::string(43, 'a')).body, "error"), "invalid_grant");
    EXPECT_EQ(exchange_cli(code).status, 400);
    code = cli_code();
    EXPECT_EQ(member(exchange_cli(code, "").body, "error"), "invalid_grant");

    // another redirect URI than the code's
    code = cli_code();
    OpAnswer a = issuer().token(site_, "grant_type=authorization_code&client_id=cli&redirect_uri=http%3A%2F%2F127.0.0.1%3A8400%2Fother&code=" +
                                           code + "&code_verifier=" + kVerifier, "", "c");
    EXPECT_EQ(member(a.body, "error"), "invalid_grant");

    // the public client's code taken to the confidential client (authenticated by its secret)
    code = cli_code();
    a = issuer().token(site_, "grant_type=authorization_code&client_id=wiki&client_secret=" + kSecret + "&" + kCliRedirect +
                                  "&code=" + code + "&code_verifier=" + kVerifier, "", "c");
    EXPECT_EQ(a.status, 400);
    EXPECT_EQ(member(a.body, "error"), "invalid_grant");
}

TEST_F(OidcIssuerTest, AConfidentialClientAsksConsentOnceAndAuthenticatesWithItsSecret) {
    auto r = authorize(kWiki + "&response_type=code&scope=openid+email+offline_access&state=s2");
    auto d = issuer().decide(site_, r, &alice_, false, false, "c");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->next, op::Next::Consent);
    ASSERT_TRUE(issuer().consent(r, alice_, "c"));
    d = issuer().decide(site_, r, &alice_, false, false, "c");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->next, op::Next::Issue);  // the consent is kept

    auto url = issuer().issue_code(site_, r, alice_, "c");
    ASSERT_TRUE(url);
    const std::string code = param(*url, "code");
    const std::string body = "grant_type=authorization_code&redirect_uri=https%3A%2F%2Fwiki.example%2Fcb&code=" + code;
    OpAnswer bad = issuer().token(site_, body, basic("wiki", "wrong"), "c");
    EXPECT_EQ(bad.status, 401);
    EXPECT_EQ(member(bad.body, "error"), "invalid_client");
    EXPECT_FALSE(bad.www_authenticate.empty());

    OpAnswer a = issuer().token(site_, body, basic("wiki", kSecret), "c");
    ASSERT_EQ(a.status, 200) << a.body;
    const std::string refresh1 = member(a.body, "refresh_token");
    ASSERT_FALSE(refresh1.empty());

    // rotation: a new refresh token; the old one coming back ends the family
    const std::string rbody = "grant_type=refresh_token&client_id=wiki&client_secret=" + kSecret + "&refresh_token=";
    OpAnswer r2 = issuer().token(site_, rbody + refresh1, "", "c");
    ASSERT_EQ(r2.status, 200) << r2.body;
    const std::string refresh2 = member(r2.body, "refresh_token");
    const std::string access2 = member(r2.body, "access_token");
    ASSERT_FALSE(refresh2.empty());
    EXPECT_EQ(userinfo(access2).status, 200);
    EXPECT_EQ(member(issuer().token(site_, rbody + refresh1, "", "c").body, "error"), "invalid_grant");
    EXPECT_EQ(member(issuer().token(site_, rbody + refresh2, "", "c").body, "error"), "invalid_grant");
    EXPECT_EQ(userinfo(access2).status, 401);
}

TEST_F(OidcIssuerTest, ACodeLivesAsLongAsTheSiteSays) {
    site_.code_ttl = 5000;  // signin_oidc_code_ttl 5s
    std::string code = cli_code();
    clock_->advance(4000);
    EXPECT_EQ(exchange_cli(code).status, 200);
    code = cli_code();
    clock_->advance(5000);
    OpAnswer late = exchange_cli(code);
    EXPECT_EQ(member(late.body, "error"), "invalid_grant");
    EXPECT_NE(late.body.find("expired"), std::string::npos);
}

TEST_F(OidcIssuerTest, RevocationEndsAToken) {
    OpAnswer a = exchange_cli(cli_code("openid+offline_access"));
    ASSERT_EQ(a.status, 200);
    const std::string access = member(a.body, "access_token");
    const std::string refresh = member(a.body, "refresh_token");
    OpAnswer rv = issuer().revoke(site_, "client_id=cli&token=" + access, "", "c");
    EXPECT_EQ(rv.status, 200);
    EXPECT_EQ(rv.outcome, OpOutcome::Revoked);
    EXPECT_EQ(userinfo(access).status, 401);
    EXPECT_EQ(issuer().revoke(site_, "client_id=cli&token=" + refresh, "", "c").status, 200);
    EXPECT_EQ(member(issuer().token(site_, "grant_type=refresh_token&client_id=cli&refresh_token=" + refresh, "", "c").body,
                     "error"),
              "invalid_grant");
    rv = issuer().revoke(site_, "client_id=cli&token=unknown", "", "c");
    EXPECT_EQ(rv.status, 200);
    EXPECT_EQ(rv.outcome, OpOutcome::None);
}

TEST_F(OidcIssuerTest, PromptNoneWithoutASessionIsRefusedToTheClient) {
    auto r = authorize(kCli + "&scope=openid&prompt=none&code_challenge=" + kChallenge + "&code_challenge_method=S256&state=x");
    auto d = issuer().decide(site_, r, nullptr, false, false, "c");
    ASSERT_TRUE(d);
    ASSERT_EQ(d->next, op::Next::Refuse);
    EXPECT_EQ(d->refusal.error, "login_required");
    const std::string url = op::error_redirect(d->refusal, kIssuer);
    EXPECT_EQ(param(url, "error"), "login_required");
    EXPECT_EQ(param(url, "state"), "x");
    r.prompt_none = false;
    d = issuer().decide(site_, r, nullptr, false, false, "c");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->next, op::Next::SignIn);
}

}  // namespace

namespace {

TEST(OidcConsentPage, TheFormCarriesTheQueryEscapedAndIsReadBack) {
    op::AuthorizeRequest r;
    r.client_id = "wiki";
    r.scopes = {"openid", "email", "offline_access"};
    User u;
    u.email = "a@b.example";
    const std::string query = "client_id=wiki&state=\"><script>x</script>";
    const std::string page = consent_page(r, u, "acme", "/auth/oauth2/authorize", query, "/style.css");
    EXPECT_EQ(page.find("<script>"), std::string::npos);
    EXPECT_NE(page.find("value=\"client_id=wiki&amp;state=&quot;&gt;&lt;script&gt;"), std::string::npos);
    EXPECT_NE(page.find("your email address"), std::string::npos);
    EXPECT_NE(page.find("keep access while you are away"), std::string::npos);
    EXPECT_NE(page.find("href=\"/style.css\""), std::string::npos);
    EXPECT_EQ(page.find("pages.css"), std::string::npos) << "no module stylesheet unless given";
    // with the sign-in pages' stylesheet: linked first, the site's after it (the site's wins)
    const std::string styled = consent_page(r, u, "acme", "/auth/oauth2/authorize", query, "/style.css", {},
                                            "/auth/assets/pages.css?v=1a&b");
    const auto module = styled.find("<link rel=\"stylesheet\" href=\"/auth/assets/pages.css?v=1a&amp;b\">");
    ASSERT_NE(module, std::string::npos);
    EXPECT_LT(module, styled.find("href=\"/style.css\""));
    EXPECT_NE(styled.find("class=\"secondary\" name=\"decision\" value=\"deny\""), std::string::npos)
        << "deny is the quieter button";
    EXPECT_NE(signed_out_page("acme", "", {}, "/m.css").find("href=\"/m.css\""), std::string::npos);

    auto f = parse_consent_form("decision=allow&query=" + std::string("client_id%3Dwiki%26state%3Dx"));
    ASSERT_TRUE(f);
    EXPECT_TRUE(f->allow);
    EXPECT_EQ(f->query, "client_id=wiki&state=x");
    f = parse_consent_form("decision=deny&query=a");
    ASSERT_TRUE(f);
    EXPECT_FALSE(f->allow);
    EXPECT_FALSE(parse_consent_form("decision=maybe&query=a"));
    EXPECT_FALSE(parse_consent_form("decision=allow"));
    EXPECT_FALSE(parse_consent_form("decision=allow&query=a&query=b"));
    EXPECT_FALSE(parse_consent_form("decision=allow&query=" + std::string(op::kMaxQuery + 1, 'a')));

    const std::string bye = end_session_page("<acme>", "/auth/oauth2/end_session", query, "");
    EXPECT_EQ(bye.find("<script>"), std::string::npos);
    EXPECT_EQ(bye.find("<acme>"), std::string::npos);
    EXPECT_NE(bye.find("name=\"decision\" value=\"allow\""), std::string::npos);
    EXPECT_EQ(signed_out_page("<acme>", "").find("<acme>"), std::string::npos);
}

}  // namespace

namespace {

// The provider's pages speak the visitor's language (the catalogs'), say it in lang, and turn
// right to left for Arabic; a value in a text is escaped wherever the translation puts it.
TEST(OidcPages, InTheChosenLanguage) {
    auto langs = i18n::Languages::make({"en", "de", "ar"});
    ASSERT_TRUE(langs) << langs.error().message;
    op::AuthorizeRequest r;
    r.client_id = "<wiki>";
    r.scopes = {"openid", "email"};
    User u;
    u.email = "a@b.example";
    const PageLanguage de{langs->get(), 1};
    const std::string page = consent_page(r, u, "acme", "/auth/oauth2/authorize", "client_id=wiki", "", de);
    EXPECT_NE(page.find("<html lang=\"de\" dir=\"ltr\">"), std::string::npos);
    EXPECT_NE(page.find("&lt;wiki&gt; möchte Sie anmelden"), std::string::npos) << page;
    EXPECT_NE(page.find("Als <strong>a@b.example</strong> bei acme"), std::string::npos) << page;
    EXPECT_NE(page.find("Ihre E-Mail-Adresse"), std::string::npos);
    EXPECT_NE(page.find(">Erlauben</button>"), std::string::npos);
    EXPECT_EQ(page.find("<wiki>"), std::string::npos);

    const PageLanguage ar{langs->get(), 2};
    EXPECT_NE(signed_out_page("acme", "", ar).find("<html lang=\"ar\" dir=\"rtl\">"), std::string::npos);
    op::AuthorizeError e;
    e.page = true;
    e.error = "unauthorized_client";
    e.description = std::string(op::kRefusalUnknownClient);
    const std::string refused = refusal_page(e, "acme", "", de);
    EXPECT_NE(refused.find("Diese Anwendung ist hier nicht bekannt."), std::string::npos) << refused;
    EXPECT_NE(refused.find("(<code>unauthorized_client</code>)"), std::string::npos) << refused;
    EXPECT_NE(end_session_page("acme", "/a", "q", "", de).find(">Angemeldet bleiben</button>"), std::string::npos);

    // English without languages, and for an index out of range
    EXPECT_NE(signed_out_page("acme", "").find("<html lang=\"en\" dir=\"ltr\">"), std::string::npos);
    EXPECT_NE(signed_out_page("acme", "", PageLanguage{langs->get(), 9}).find("You are no longer signed in to acme."),
              std::string::npos);
}

}  // namespace
