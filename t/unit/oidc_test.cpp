// OpenID Connect in the core (oidc.hpp, providers.hpp): discovery and key sets,
// ID tokens signed here with OpenSSL (RS256, ES256) and each of their defects, the sealed flow,
// and the accounts an identity reaches, with a fake clock. The suite's t/signin_providers.t signs
// in through a real provider (the npm oidc-provider) and its tokens.
#include <gtest/gtest.h>
#include <liboath/oath.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <sodium.h>

#include <cstring>
#include <memory>
#include <string>

#include "engine_fixtures.hpp"
#include "signin/auth.hpp"
#include "signin/oidc.hpp"

using namespace signin;

namespace {

const char *kIssuer = "https://id.example";
constexpr Millis kNow = 1'800'000'000'000;

using signin::testing::b64;

std::string bn_bytes(const BIGNUM *bn, int pad = 0) {
    int n = pad > 0 ? pad : BN_num_bytes(bn);
    std::string out(static_cast<std::size_t>(n), '\0');
    BN_bn2binpad(bn, reinterpret_cast<unsigned char *>(out.data()), n);
    return out;
}

// A signing key of the test provider and its JWK.
struct TestKey {
    std::shared_ptr<EVP_PKEY> pkey;
    bool rsa = true;
    std::string kid;

    static TestKey make(bool rsa, std::string kid) {
        TestKey k;
        k.rsa = rsa;
        k.kid = std::move(kid);
        EVP_PKEY *p = rsa ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256");
        k.pkey.reset(p, EVP_PKEY_free);
        return k;
    }
    std::string jwk() const {
        if (rsa) {
            BIGNUM *n = nullptr, *e = nullptr;
            EVP_PKEY_get_bn_param(pkey.get(), OSSL_PKEY_PARAM_RSA_N, &n);
            EVP_PKEY_get_bn_param(pkey.get(), OSSL_PKEY_PARAM_RSA_E, &e);
            std::string out = R"({"kty":"RSA","use":"sig","alg":"RS256","kid":")" + kid + R"(","n":")" +
                              b64(bn_bytes(n)) + R"(","e":")" + b64(bn_bytes(e)) + "\"}";
            BN_free(n);
            BN_free(e);
            return out;
        }
        unsigned char point[65];
        size_t len = 0;
        EVP_PKEY_get_octet_string_param(pkey.get(), OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, point, sizeof point, &len);
        std::string pt(reinterpret_cast<char *>(point), len);
        return R"({"kty":"EC","crv":"P-256","kid":")" + kid + R"(","x":")" + b64(pt.substr(1, 32)) + R"(","y":")" +
               b64(pt.substr(33, 32)) + "\"}";
    }
    std::string sign(std::string_view input) const {
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        size_t len = 0;
        EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, pkey.get());
        EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char *>(input.data()), input.size());
        std::string sig(len, '\0');
        EVP_DigestSign(ctx, reinterpret_cast<unsigned char *>(sig.data()), &len,
                       reinterpret_cast<const unsigned char *>(input.data()), input.size());
        sig.resize(len);
        EVP_MD_CTX_free(ctx);
        if (rsa) return sig;
        // DER to r || s
        const unsigned char *p = reinterpret_cast<const unsigned char *>(sig.data());
        ECDSA_SIG *es = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
        std::string out = bn_bytes(ECDSA_SIG_get0_r(es), 32) + bn_bytes(ECDSA_SIG_get0_s(es), 32);
        ECDSA_SIG_free(es);
        return out;
    }
    std::string token(const std::string &claims, std::string header = {}) const {
        if (header.empty()) header = std::string(R"({"alg":")") + (rsa ? "RS256" : "ES256") + R"(","kid":")" + kid + "\"}";
        std::string input = b64(header) + "." + b64(claims);
        return input + "." + b64(sign(input));
    }
};

std::string jwks(std::initializer_list<const TestKey *> keys) {
    std::string out = R"({"keys":[)";
    bool first = true;
    for (const TestKey *k : keys) {
        out += (first ? "" : ",") + k->jwk();
        first = false;
    }
    return out + "]}";
}

std::string claims(std::string extra = {}, long long iat = kNow / 1000, long long exp = kNow / 1000 + 300,
                   std::string aud = "\"client-1\"", std::string nonce = "n-123") {
    return R"({"iss":")" + std::string(kIssuer) + R"(","sub":"alice-sub","aud":)" + aud + R"(,"iat":)" +
           std::to_string(iat) + R"(,"exp":)" + std::to_string(exp) + R"(,"nonce":")" + nonce +
           R"(","email":"Alice@Example.COM","email_verified":true)" + extra + "}";
}

oidc::Expected expected() {
    oidc::Expected e;
    e.issuer = kIssuer;
    e.client_id = "client-1";
    e.nonce = "n-123";
    e.now = kNow;
    return e;
}

struct Keys {
    TestKey rsa = TestKey::make(true, "r1");
    TestKey ec = TestKey::make(false, "e1");
};
const Keys &keys() {
    static Keys k;
    return k;
}

oidc::Refusal verify(const std::string &jwt, const std::string &set = jwks({&keys().rsa, &keys().ec}),
                     oidc::Expected e = expected()) {
    auto ks = oidc::KeySet::parse(set);
    EXPECT_TRUE(ks) << ks.error().message;
    return oidc::verify_id_token(jwt, ks.value(), e).refusal;
}

}  // namespace

TEST(Oidc, DiscoveryIsCheckedAgainstTheIssuer) {
    const std::string good = R"({"issuer":"https://id.example","authorization_endpoint":"https://id.example/auth",
        "token_endpoint":"https://id.example/token","jwks_uri":"https://id.example/jwks",
        "response_types_supported":["code","id_token"],"id_token_signing_alg_values_supported":["RS256"],
        "token_endpoint_auth_methods_supported":["client_secret_basic","client_secret_post"]})";
    auto d = oidc::parse_discovery(good, kIssuer);
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_EQ(d->token_endpoint, "https://id.example/token");
    EXPECT_TRUE(d->secret_in_body);
    EXPECT_FALSE(oidc::parse_discovery(good, "https://id.example/"));  // exactly the configured issuer
    std::string http = good;
    http.replace(http.find("https://id.example/token"), 8, "http://");
    EXPECT_FALSE(oidc::parse_discovery(http, kIssuer));  // no plain http off loopback
    std::string hs = good;
    hs.replace(hs.find("[\"RS256\"]"), 9, "[\"HS256\"]");
    EXPECT_FALSE(oidc::parse_discovery(hs, kIssuer));
    std::string basic = good;
    basic.replace(basic.find(",\"client_secret_post\""), 21, "");
    auto b = oidc::parse_discovery(basic, kIssuer);
    ASSERT_TRUE(b);
    EXPECT_FALSE(b->secret_in_body);
    EXPECT_FALSE(oidc::parse_discovery("[]", kIssuer));
    EXPECT_FALSE(oidc::parse_discovery("{\"issuer\":", kIssuer));
    auto local = oidc::parse_discovery(
        R"({"issuer":"http://127.0.0.1:9","authorization_endpoint":"http://127.0.0.1:9/a","token_endpoint":"http://127.0.0.1:9/t","jwks_uri":"http://127.0.0.1:9/j"})",
        "http://127.0.0.1:9");
    EXPECT_TRUE(local);
    EXPECT_EQ(oidc::discovery_url("https://x.example/"), "https://x.example/.well-known/openid-configuration");
}

TEST(Oidc, ProviderConfigurationIsChecked) {
    oidc::ProviderConfig p;
    p.name = "google";
    p.issuer = "https://accounts.google.com";
    p.client_id = "c";
    p.client_secret = Secret("s");
    EXPECT_EQ(oidc::check_provider(p), "");
    auto bad = p;
    bad.name = "Google";
    EXPECT_NE(oidc::check_provider(bad), "");
    bad = p;
    bad.issuer = "http://accounts.google.com";
    EXPECT_NE(oidc::check_provider(bad), "");
    bad = p;
    bad.scope = "email profile";
    EXPECT_NE(oidc::check_provider(bad), "");
    bad = p;
    bad.client_secret = Secret();
    EXPECT_NE(oidc::check_provider(bad), "");
    EXPECT_EQ(oidc::parse_client_secret("  s3cret \r\nnext")->reveal(), "s3cret");
    EXPECT_FALSE(oidc::parse_client_secret("\n"));
}

TEST(Oidc, IdTokensOfBothAlgorithmsVerify) {
    auto ks = oidc::KeySet::parse(jwks({&keys().rsa, &keys().ec}));
    ASSERT_TRUE(ks);
    EXPECT_EQ(ks->size(), 2u);
    for (const TestKey *k : {&keys().rsa, &keys().ec}) {
        auto v = oidc::verify_id_token(k->token(claims()), ks.value(), expected());
        ASSERT_EQ(v.refusal, oidc::Refusal::None) << oidc::refusal_name(v.refusal);
        EXPECT_EQ(v.claims.sub, "alice-sub");
        EXPECT_EQ(v.claims.email, "alice@example.com");
        EXPECT_TRUE(v.claims.email_verified);
    }
}

TEST(Oidc, EachDefectOfAnIdTokenIsRefused) {
    using R = oidc::Refusal;
    const TestKey &k = keys().rsa;
    std::string good = k.token(claims());
    std::string flipped = good;
    flipped[flipped.size() - 5] = flipped[flipped.size() - 5] == 'A' ? 'B' : 'A';
    EXPECT_EQ(verify(flipped), R::Signature);
    EXPECT_EQ(verify(k.token(claims(",\"x\":1"))), R::None);
    // another key with the same kid
    TestKey other = TestKey::make(true, "r1");
    EXPECT_EQ(verify(other.token(claims())), R::Signature);
    // a kid the set lacks: ask again
    TestKey fresh = TestKey::make(true, "r2");
    EXPECT_EQ(verify(fresh.token(claims())), R::UnknownKey);
    EXPECT_EQ(verify(fresh.token(claims()), jwks({&keys().rsa, &fresh})), R::None);
    // no kid, no key that verifies it: ask again too
    EXPECT_EQ(verify(fresh.token(claims(), R"({"alg":"RS256"})")), R::UnknownKey);
    EXPECT_EQ(verify(k.token(claims(), R"({"alg":"RS256"})")), R::None);
    // algorithms: none, HMAC with anything as its key, a header that claims the other type
    std::string payload = b64(claims());
    EXPECT_EQ(verify(b64(R"({"alg":"none"})") + "." + payload + "."), R::Algorithm);
    EXPECT_EQ(verify(b64(R"({"alg":"HS256","kid":"r1"})") + "." + payload + "." + b64(std::string(32, 'x'))), R::Algorithm);
    EXPECT_EQ(verify(k.token(claims(), R"({"alg":"ES256","kid":"r1"})")), R::Signature);
    EXPECT_EQ(verify(k.token(claims(), R"({"alg":"RS256","kid":"r1","crit":["exp"]})")), R::Malformed);
    // claims
    EXPECT_EQ(verify(k.token(claims({}, kNow / 1000, kNow / 1000 + 300, "\"client-2\""))), R::Audience);
    EXPECT_EQ(verify(k.token(claims({}, kNow / 1000, kNow / 1000 + 300, R"(["client-1","client-2"])"))), R::Audience);
    EXPECT_EQ(verify(k.token(claims(",\"azp\":\"client-1\"", kNow / 1000, kNow / 1000 + 300, R"(["client-1","client-2"])"))),
              R::None);
    EXPECT_EQ(verify(k.token(claims(",\"azp\":\"client-2\""))), R::Audience);
    EXPECT_EQ(verify(k.token(claims({}, kNow / 1000 - 1200, kNow / 1000 - 600))), R::Expired);
    EXPECT_EQ(verify(k.token(claims({}, kNow / 1000 - 1200, kNow / 1000 - 200))), R::None);  // within the skew
    EXPECT_EQ(verify(k.token(claims({}, kNow / 1000 + 3600, kNow / 1000 + 7200))), R::IssuedAt);
    EXPECT_EQ(verify(k.token(claims({}, kNow / 1000, kNow / 1000 + 300, "\"client-1\"", "n-999"))), R::Nonce);
    std::string no_nonce = claims();
    no_nonce.replace(no_nonce.find(",\"nonce\":\"n-123\""), 16, "");
    EXPECT_EQ(verify(k.token(no_nonce)), R::Nonce);
    std::string iss = claims();
    iss.replace(iss.find(kIssuer), std::strlen(kIssuer), "https://evil.example");
    EXPECT_EQ(verify(k.token(iss)), R::Issuer);
    std::string no_sub = claims();
    no_sub.replace(no_sub.find("\"sub\":\"alice-sub\","), 18, "");
    EXPECT_EQ(verify(k.token(no_sub)), R::Subject);
    // shapes
    EXPECT_EQ(verify("a.b"), R::Malformed);
    EXPECT_EQ(verify(good + ".x"), R::Malformed);
    EXPECT_EQ(verify("!!!." + payload + ".x"), R::Malformed);
    // a string "true" is not a verified address
    std::string loose = claims();
    loose.replace(loose.find("\"email_verified\":true"), 21, "\"email_verified\":\"true\"");
    auto ks = oidc::KeySet::parse(jwks({&k}));
    EXPECT_FALSE(oidc::verify_id_token(k.token(loose), ks.value(), expected()).claims.email_verified);
}

TEST(Oidc, KeySetsSkipWhatTheyCannotUse) {
    auto ks = oidc::KeySet::parse(R"({"keys":[{"kty":"oct","k":"AAAA"},{"kty":"RSA","use":"enc","n":"AQAB","e":"AQAB"},
        {"kty":"RSA","n":"AQAB","e":"AQAB"},{"kty":"EC","crv":"P-384","x":"AA","y":"AA"},)" + keys().ec.jwk() + "]}");
    ASSERT_TRUE(ks);
    EXPECT_EQ(ks->size(), 1u);
    EXPECT_TRUE(ks->has("e1"));
    EXPECT_FALSE(oidc::KeySet::parse("{\"keys\":{}}"));
    EXPECT_FALSE(oidc::KeySet::parse("not json"));
}

TEST(Oidc, TheFlowIsSealedAndExpires) {
    SecretKey key{};
    key.fill(3);
    oidc::Flow f = oidc::new_flow("google", "/app?x=1", true, "", kNow);
    std::string cookie = oidc::seal_flow(key, f);
    EXPECT_EQ(cookie.find(f.state), std::string::npos);
    auto back = oidc::open_flow(key, cookie, kNow + 1000);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->provider, "google");
    EXPECT_EQ(back->return_to, "/app?x=1");
    EXPECT_TRUE(back->add);
    EXPECT_EQ(back->verifier.reveal(), f.verifier.reveal());
    EXPECT_TRUE(oidc::same_state(*back, f.state));
    EXPECT_FALSE(oidc::same_state(*back, f.state.substr(1)));
    EXPECT_FALSE(oidc::same_state(*back, ""));
    EXPECT_FALSE(oidc::open_flow(key, cookie, kNow + oidc::kFlowTtl));
    SecretKey other{};
    other.fill(4);
    EXPECT_FALSE(oidc::open_flow(other, cookie, kNow));
    std::string bent = cookie;
    bent[10] = bent[10] == 'A' ? 'B' : 'A';
    EXPECT_FALSE(oidc::open_flow(key, bent, kNow));
    EXPECT_FALSE(oidc::open_flow(key, "", kNow));
}

TEST(Oidc, RequestsCarryPkceAndTheSecretWhereTheProviderWantsIt) {
    oidc::ProviderConfig p;
    p.name = "x";
    p.issuer = kIssuer;
    p.client_id = "client 1";
    p.client_secret = Secret("s:3&");
    oidc::Discovery d;
    d.authorization_endpoint = "https://id.example/auth?tenant=a";
    d.token_endpoint = "https://id.example/token";
    oidc::Flow f = oidc::new_flow("x", "", false, "", kNow);
    std::string url = oidc::authorization_url(d, p, f, "https://app.example/auth/providers/x/callback");
    EXPECT_EQ(url.rfind("https://id.example/auth?tenant=a&response_type=code&client_id=client%201&", 0), 0u) << url;
    unsigned char digest[32];
    crypto_hash_sha256(digest, reinterpret_cast<const unsigned char *>(f.verifier.reveal().data()), f.verifier.reveal().size());
    EXPECT_NE(url.find("code_challenge=" + b64(std::string(reinterpret_cast<char *>(digest), 32)) +
                       "&code_challenge_method=S256"),
              std::string::npos);
    EXPECT_NE(url.find("state=" + f.state), std::string::npos);
    EXPECT_EQ(url.find(std::string(f.verifier.reveal())), std::string::npos);
    d.secret_in_body = true;
    auto post = oidc::token_request(d, p, f, "the code", "https://app.example/cb");
    EXPECT_TRUE(post.authorization.empty());
    EXPECT_NE(post.body.reveal().find("client_secret=s%3A3%26"), std::string::npos);
    EXPECT_NE(post.body.reveal().find("code=the%20code"), std::string::npos);
    EXPECT_NE(post.body.reveal().find("code_verifier=" + std::string(f.verifier.reveal())), std::string::npos);
    d.secret_in_body = false;
    auto basic = oidc::token_request(d, p, f, "c", "https://app.example/cb");
    EXPECT_EQ(basic.body.reveal().find("client_secret"), std::string::npos);
    // base64("client%201:s%3A3%26")
    EXPECT_EQ(basic.authorization.reveal(), "Basic Y2xpZW50JTIwMTpzJTNBMyUyNg==");
    p.client_auth = oidc::ProviderConfig::ClientAuth::Basic;  // what the client was registered with
    d.secret_in_body = true;
    EXPECT_FALSE(oidc::token_request(d, p, f, "c", "https://app.example/cb").authorization.empty());
    p.client_auth = oidc::ProviderConfig::ClientAuth::Post;
    d.secret_in_body = false;
    EXPECT_TRUE(oidc::token_request(d, p, f, "c", "https://app.example/cb").authorization.empty());
    EXPECT_EQ(oidc::id_token_of(R"({"access_token":"a","id_token":"x.y.z"})").value().reveal(), "x.y.z");
    EXPECT_FALSE(oidc::id_token_of(R"({"error":"invalid_grant"})"));
    EXPECT_FALSE(oidc::id_token_of(R"({"access_token":"a"})"));
}

// ---------------------------------------------------------------- accounts

namespace {

class ProvidersTest : public signin::testing::EngineTest {
protected:
    void SetUp() override {
        EngineTest::SetUp();
        clock_->set(kNow);
    }
    oidc::ProviderConfig provider(bool trust = false) {
        oidc::ProviderConfig p;
        p.name = "idp";
        p.issuer = kIssuer;
        p.client_id = "client-1";
        p.client_secret = Secret("s");
        p.trust_email = trust;
        return p;
    }
    static oidc::IdClaims who(std::string sub, std::string email, bool verified) {
        oidc::IdClaims c;
        c.iss = kIssuer;
        c.sub = std::move(sub);
        c.email = std::move(email);
        c.email_verified = verified;
        return c;
    }
    Result<SignInStep> enter(const oidc::IdClaims &c, bool trust = false) {
        oidc::Flow f = oidc::new_flow("idp", "", false, "", clock_->now());
        return id_->providers().sign_in(provider(trust), c, f, "198.51.100.7", SessionKind::Cookie, "ua", nullptr);
    }
};

}  // namespace

TEST_F(ProvidersTest, AVerifiedAddressOfATrustedProviderEntersItsAccount) {
    make(open_policy());
    Session mine = sign_in("alice@example.com");
    auto s = enter(who("alice-sub", "alice@example.com", true), true);
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(s->session->user.id, mine.user.id);
    // linked: the next time the address does not matter
    auto again = enter(who("alice-sub", "changed@example.com", false));
    ASSERT_TRUE(again);
    EXPECT_EQ(again->session->user.id, mine.user.id);
    auto links = id_->providers().list(principal(mine));
    ASSERT_TRUE(links);
    ASSERT_EQ(links->size(), 1u);
    EXPECT_EQ((*links)[0].provider, "idp");
}

TEST_F(ProvidersTest, AnAddressWithAnAccountIsNotEnteredOnAProvidersWordAlone) {
    make(open_policy());
    Session mine = sign_in("alice@example.com");
    auto unverified = enter(who("mallory-sub", "alice@example.com", false), true);
    ASSERT_FALSE(unverified);
    EXPECT_EQ(unverified.error().code, Code::AccountExists);
    auto untrusted = enter(who("mallory-sub", "alice@example.com", true), false);
    ASSERT_FALSE(untrusted);
    EXPECT_EQ(untrusted.error().code, Code::AccountExists);
    EXPECT_TRUE(id_->providers().list(principal(mine))->empty());
    auto txn = store_->read();
    EXPECT_EQ(txn->user_count(), 1u);
    int refused = 0;  // (entries of the same millisecond come in any order)
    for (const auto &e : txn->audit(20)) refused += e.kind == "provider.refused" ? 1 : 0;
    EXPECT_EQ(refused, 2);
}

TEST_F(ProvidersTest, ANewIdentityMakesAnAccountOnlyWhenRegistrationIsOn) {
    Policy closed = open_policy();
    closed.allow_registration = false;
    make(closed);
    auto s = enter(who("bob-sub", "bob@example.com", true));
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, Code::RegistrationDisabled);
    EXPECT_EQ(store_->read()->user_count(), 0u);
}

TEST_F(ProvidersTest, AnUnverifiedAddressIsNotTheNewAccounts) {
    make(open_policy());
    auto s = enter(who("bob-sub", "bob@example.com", false));
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(s->session->user.email, "");
    auto none = enter(who("carol-sub", "", false));
    ASSERT_TRUE(none);
    EXPECT_NE(none->session->user.id, s->session->user.id);
    // the address can still register by email, as its own account
    Session bob = sign_in("bob@example.com");
    EXPECT_NE(bob.user.id, s->session->user.id);
    EXPECT_TRUE(store_->check_integrity().empty());
}

TEST_F(ProvidersTest, AnUntrustedProviderNeverGivesANewAccountItsAddress) {
    make(open_policy());
    // "verified" by a provider without trust_email: the account is made, without the address
    auto s = enter(who("mallory-sub", "prey@example.com", true), false);
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(s->session->user.email, "");
    {
        auto txn = store_->read();
        EXPECT_FALSE(txn->user_by_email("default", "prey@example.com"));
    }
    // the address's owner signs in by email into an account of their own, which the provider
    // identity does not enter afterwards
    Session prey = sign_in("prey@example.com");
    EXPECT_NE(prey.user.id, s->session->user.id);
    auto again = enter(who("mallory-sub", "prey@example.com", true), false);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->session->user.id, s->session->user.id);
    EXPECT_TRUE(id_->providers().list(principal(prey))->empty());
    // a trusted provider's verified address is the new account's
    auto trusted = enter(who("dave-sub", "dave@example.com", true), true);
    ASSERT_TRUE(trusted);
    EXPECT_EQ(trusted->session->user.email, "dave@example.com");
}

TEST_F(ProvidersTest, AJoinListIsNotPassedOnAnUntrustedProvidersWord) {
    Policy p = open_policy();
    auto acme = std::make_shared<People>();
    acme->add_domain("acme.com");
    p.may_join = acme;
    make(p);
    auto s = enter(who("mallory-sub", "boss@acme.com", true), false);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, Code::RegistrationDisabled);
    auto t = enter(who("boss-sub", "boss@acme.com", true), true);
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->session->user.email, "boss@acme.com");
}

TEST_F(ProvidersTest, AStateIsSpentOnce) {
    make(open_policy());
    oidc::Flow f = oidc::new_flow("idp", "", false, "", clock_->now());
    auto c = who("bob-sub", "bob@example.com", true);
    ASSERT_TRUE(id_->providers().sign_in(provider(), c, f, "c", SessionKind::Cookie, "", nullptr));
    auto replay = id_->providers().sign_in(provider(), c, f, "c", SessionKind::Cookie, "", nullptr);
    ASSERT_FALSE(replay);
    EXPECT_EQ(replay.error().code, Code::ProviderRefused);
}

TEST_F(ProvidersTest, SecondFactorsApplyAfterAProvider) {
    Policy p = open_policy();
    p.with_mfa = true;
    make(p);
    Session mine = sign_in("alice@example.com");
    auto setup = id_->mfa().setup_totp(principal(mine), "c");
    ASSERT_TRUE(setup) << setup.error().message;
    std::string secret(setup->secret.reveal());
    char *raw = nullptr;
    size_t len = 0;
    ASSERT_EQ(oath_base32_decode(secret.data(), secret.size(), &raw, &len), OATH_OK);
    char code[16] = {};
    ASSERT_EQ(oath_totp_generate(raw, len, static_cast<time_t>(clock_->now() / 1000), 30, 0, 6, code), OATH_OK);
    std::free(raw);
    ASSERT_TRUE(id_->mfa().confirm_totp(principal(mine), code, "c"));
    auto s = enter(who("alice-sub", "alice@example.com", true), true);
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_FALSE(s->signed_in());
    EXPECT_FALSE(s->mfa_token.empty());
}

TEST_F(ProvidersTest, LinkingFromTheAccountAndUnlinkingKeepAWayIn) {
    Policy p = open_policy();
    p.with_email = false;  // providers only: the address is no way in
    make(p);
    auto first = enter(who("bob-sub", "bob@example.com", true));
    ASSERT_TRUE(first);
    Principal bob = principal(*first->session);
    oidc::Flow f = oidc::new_flow("idp", "", false, bob.user.id, clock_->now());
    ASSERT_TRUE(id_->providers().link(bob, provider(), who("bob-other", "", false), f, "c"));
    auto links = id_->providers().list(bob).value();
    ASSERT_EQ(links.size(), 2u);
    ASSERT_TRUE(id_->providers().unlink(bob, links[0].id, "c"));
    auto last = id_->providers().unlink(bob, id_->providers().list(bob).value()[0].id, "c");
    ASSERT_FALSE(last);
    EXPECT_EQ(last.error().code, Code::LastWayIn);
    EXPECT_EQ(id_->providers().unlink(bob, "AAAA", "c").error().code, Code::NotFound);
    // another account's flow does not link to this one
    auto carol = enter(who("carol-sub", "", false));
    ASSERT_TRUE(carol);
    oidc::Flow g = oidc::new_flow("idp", "", false, bob.user.id, clock_->now());
    EXPECT_EQ(id_->providers().link(principal(*carol->session), provider(), who("x", "", false), g, "c").error().code,
              Code::Unauthenticated);
    // an identity of one account is not linked to another
    oidc::Flow h = oidc::new_flow("idp", "", false, carol->session->user.id, clock_->now());
    EXPECT_EQ(id_->providers().link(principal(*carol->session), provider(), who("bob-sub", "", false), h, "c").error().code,
              Code::AccountExists);
}

TEST_F(ProvidersTest, DeletingTheAccountTakesItsLinks) {
    make(open_policy());
    Session mine = sign_in("alice@example.com");
    ASSERT_TRUE(enter(who("alice-sub", "alice@example.com", true), true));
    ASSERT_TRUE(id_->accounts().delete_account(principal(mine), "c"));
    EXPECT_FALSE(store_->read()->provider_link(Providers::link_key(kIssuer, "alice-sub")));
    EXPECT_TRUE(store_->check_integrity().empty());
}

// signin_registration_check: a first sign-in writes nothing (its state not spent either) until the
// check allowed, then makes the account with the check's roles; a linked identity never asks.
TEST_F(ProvidersTest, ARegistrationCheckIsAskedBeforeTheAccountIsMade) {
    make(open_policy());
    const oidc::IdClaims c = who("erin-sub", "erin@example.com", true);
    oidc::Flow f = oidc::new_flow("idp", "", false, "", clock_->now());
    RegistrationGate gate;
    gate.ask = true;
    auto first = id_->providers().sign_in(provider(true), c, f, "c", SessionKind::Cookie, "", nullptr, &gate);
    ASSERT_FALSE(first);
    EXPECT_EQ(first.error().code, Code::RegistrationCheckFailed);
    EXPECT_TRUE(gate.needed);
    EXPECT_EQ(gate.email, "erin@example.com");
    EXPECT_EQ(store_->read()->user_count(), 0u) << "nothing is made before the check allowed";

    RegistrationGate allowed;
    allowed.ask = allowed.allowed = true;
    allowed.roles = {"beta"};
    auto second = id_->providers().sign_in(provider(true), c, f, "c", SessionKind::Cookie, "", nullptr, &allowed);
    ASSERT_TRUE(second) << second.error().message << " (the first call must not have spent the state)";
    EXPECT_FALSE(allowed.needed);
    EXPECT_EQ(second->session->user.roles, (std::vector<std::string>{"beta"}));

    RegistrationGate again;
    again.ask = true;
    oidc::Flow g = oidc::new_flow("idp", "", false, "", clock_->now());
    ASSERT_TRUE(id_->providers().sign_in(provider(true), c, g, "c", SessionKind::Cookie, "", nullptr, &again));
    EXPECT_FALSE(again.needed) << "an identity with an account is not asked about";

    // an untrusted provider's address is not the account's: the check hears none
    RegistrationGate anon;
    anon.ask = true;
    oidc::Flow h = oidc::new_flow("idp", "", false, "", clock_->now());
    ASSERT_FALSE(id_->providers().sign_in(provider(false), who("frank-sub", "frank@example.com", true), h, "c",
                                          SessionKind::Cookie, "", nullptr, &anon));
    EXPECT_TRUE(anon.needed);
    EXPECT_EQ(anon.email, "");
}
