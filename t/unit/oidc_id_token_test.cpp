// The OpenID provider's ID tokens (oidc_provider.hpp), checked by verifiers that share no code
// with the signer: the relying party's verifier of oidc.cpp (RS256, ES256), libsodium (EdDSA),
// OpenSSL's digest for the key ids, and jose from npm; the signing keys from PEM, the JWKS and
// the discovery document; end_session; and a whole code flow through the core.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sodium.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "oidc_op_fixtures.hpp"
#include "signin/encoding.hpp"
#include "signin/engine.hpp"
#include "signin/oidc.hpp"
#include "signin/oidc_provider.hpp"

using namespace signin;
using namespace signin::testing::oidc_op;

namespace {

const std::string kIssuer = "https://id.example/auth";

std::shared_ptr<const op::SigningKey> make_key(op::Alg alg) {
    auto k = op::SigningKey::generate(alg);
    EXPECT_TRUE(k) << k.error().message;
    return std::make_shared<const op::SigningKey>(std::move(k.value()));
}

struct Ring {
    std::shared_ptr<const op::SigningKey> rsa = make_key(op::Alg::RS256);
    std::shared_ptr<const op::SigningKey> ec = make_key(op::Alg::ES256);
    std::shared_ptr<const op::SigningKey> ed = make_key(op::Alg::EdDSA);
    op::KeyRing ring;
    Ring() {
        ring.add(rsa);
        ring.add(ec);
        ring.add(ed);
    }
};
const Ring &keys() {
    static Ring r;
    return r;
}

op::IdToken id_token(const User &u) {
    op::IdToken t;
    t.issuer = kIssuer;
    t.client_id = "wiki";
    t.user = &u;
    t.email = true;
    t.amr = op::amr(SignInMethod::Password, true);
    t.auth_time = 1'800'000'000'000 - 60'000;
    t.nonce = "N-1";
    t.now = 1'800'000'000'000;
    return t;
}

oidc::Expected expected() {
    oidc::Expected e;
    e.issuer = kIssuer;
    e.client_id = "wiki";
    e.nonce = "N-1";
    e.now = 1'800'000'000'000;
    return e;
}

std::string part(const std::string &jwt, int i) {
    std::size_t start = 0;
    for (int k = 0; k < i; ++k) start = jwt.find('.', start) + 1;
    const auto end = jwt.find('.', start);
    return jwt.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

std::string unb64(const std::string &s) {
    auto d = enc::base64url_decode(s);
    EXPECT_TRUE(d);
    return d.value_or("");
}

}  // namespace

TEST(OidcIdToken, IdTokensVerifyWithTheRelyingPartysVerifier) {
    User alice;
    alice.id = "0192d7c4-0000-7000-8000-00000000a11c";
    alice.email = "alice@acme.com";
    alice.roles = {"ops", "admin"};
    auto jwks = oidc::KeySet::parse(keys().ring.jwks());
    ASSERT_TRUE(jwks) << jwks.error().message;
    EXPECT_EQ(jwks->size(), 2u);  // the relying party's side reads RSA and P-256 keys; Ed25519 is checked below
    for (const auto &key : {keys().rsa, keys().ec}) {
        const std::string jwt = op::sign_id_token(*key, id_token(alice));
        auto v = oidc::verify_id_token(jwt, jwks.value(), expected());
        ASSERT_EQ(v.refusal, oidc::Refusal::None) << op::alg_name(key->alg()) << ": " << oidc::refusal_name(v.refusal);
        EXPECT_EQ(v.claims.sub, alice.id);
        EXPECT_EQ(v.claims.email, "alice@acme.com");
        EXPECT_TRUE(v.claims.email_verified);
        // the same token with one changed byte of its claims is refused
        std::string claims = unb64(part(jwt, 1));
        claims.replace(claims.find("alice@acme.com"), 5, "mallo");
        const std::string forged = part(jwt, 0) + "." + enc::base64url(reinterpret_cast<const unsigned char *>(claims.data()),
                                                                        claims.size()) + "." + part(jwt, 2);
        EXPECT_EQ(oidc::verify_id_token(forged, jwks.value(), expected()).refusal, oidc::Refusal::Signature);
        // another audience or nonce
        auto other = expected();
        other.client_id = "ops";
        EXPECT_EQ(oidc::verify_id_token(jwt, jwks.value(), other).refusal, oidc::Refusal::Audience);
    }
}

TEST(OidcIdToken, IdTokenClaims) {
    User alice;
    alice.id = "u-1";
    alice.email = "alice@acme.com";
    alice.roles = {"ops", "admin"};
    EXPECT_EQ(op::id_token_claims(id_token(alice)),
              R"({"iss":"https://id.example/auth","sub":"u-1","aud":"wiki","azp":"wiki","exp":1800000300,)"
              R"("iat":1800000000,"auth_time":1799999940,"nonce":"N-1","amr":["pwd","otp","mfa"],)"
              R"("email":"alice@acme.com","email_verified":true,"roles":["admin","ops"]})");
    auto t = id_token(alice);
    t.email = false;
    t.nonce.clear();
    t.amr.clear();
    alice.roles.clear();
    alice.pending = true;
    EXPECT_EQ(op::id_token_claims(t),
              R"({"iss":"https://id.example/auth","sub":"u-1","aud":"wiki","azp":"wiki","exp":1800000300,)"
              R"("iat":1800000000,"auth_time":1799999940,"roles":[]})");
    EXPECT_EQ(op::userinfo(alice, {"openid", "email"}), R"({"sub":"u-1","email":"alice@acme.com","email_verified":false,"roles":[]})");
    EXPECT_EQ(op::userinfo(alice, {"openid"}), R"({"sub":"u-1","roles":[]})");
    EXPECT_EQ(op::subject(alice), "u-1");  // the account's id: it stays when the address changes
}

TEST(OidcIdToken, EdDsaTokensVerifyWithLibsodium) {
    User alice;
    alice.id = "u-1";
    alice.email = "alice@acme.com";
    const std::string jwt = op::sign_id_token(*keys().ed, id_token(alice));
    const std::string header = unb64(part(jwt, 0));
    EXPECT_NE(header.find(R"("alg":"EdDSA")"), std::string::npos);
    EXPECT_NE(header.find(keys().ed->kid()), std::string::npos);
    // the public key from the JWKS as a relying party would read it
    const std::string jwk = keys().ed->jwk();
    const auto x_at = jwk.find(R"("x":")") + 5;
    const std::string x = unb64(jwk.substr(x_at, jwk.find('"', x_at) - x_at));
    ASSERT_EQ(x.size(), crypto_sign_PUBLICKEYBYTES);
    const std::string sig = unb64(part(jwt, 2));
    ASSERT_EQ(sig.size(), crypto_sign_BYTES);
    const std::string input = jwt.substr(0, jwt.rfind('.'));
    auto verify = [&](const std::string &in) {
        return crypto_sign_verify_detached(reinterpret_cast<const unsigned char *>(sig.data()),
                                           reinterpret_cast<const unsigned char *>(in.data()), in.size(),
                                           reinterpret_cast<const unsigned char *>(x.data())) == 0;
    };
    EXPECT_TRUE(verify(input));
    EXPECT_FALSE(verify(input + "x"));
}

TEST(OidcIdToken, KeysComeFromPemFilesAndAreNamedByThumbprint) {
    for (const auto &key : {keys().rsa, keys().ec, keys().ed}) {
        const Secret pem = key->pem();
        EXPECT_EQ(pem.reveal().rfind("-----BEGIN PRIVATE KEY-----", 0), 0u);
        auto again = op::SigningKey::from_pem(pem.reveal());
        ASSERT_TRUE(again) << again.error().message;
        EXPECT_EQ(again->alg(), key->alg());
        EXPECT_EQ(again->kid(), key->kid());
        EXPECT_EQ(again->jwk(), key->jwk());
        // RFC 7638: the SHA-256 of the required members in lexicographic order, computed here with
        // OpenSSL's digest from the JWK's text
        std::string jwk = key->jwk();
        const std::string canonical = jwk.substr(0, jwk.find(",\"kid\"")) + "}";
        unsigned char digest[32];
        unsigned int len = 0;
        EVP_Digest(canonical.data(), canonical.size(), digest, &len, EVP_sha256(), nullptr);
        EXPECT_EQ(key->kid(), enc::base64url(digest, len)) << canonical;
    }
    EXPECT_NE(keys().rsa->jwk().find(R"("kty":"RSA")"), std::string::npos);
    EXPECT_NE(keys().ec->jwk().find(R"("crv":"P-256")"), std::string::npos);
    EXPECT_NE(keys().ed->jwk().find(R"("crv":"Ed25519","kty":"OKP")"), std::string::npos);
    // keys of other kinds are refused, and so is anything but a PEM private key
    EVP_PKEY *small = EVP_RSA_gen(1024);
    EVP_PKEY *p384 = EVP_EC_gen("P-384");
    for (EVP_PKEY *p : {small, p384}) {
        BIO *bio = BIO_new(BIO_s_mem());
        PEM_write_bio_PrivateKey(bio, p, nullptr, nullptr, 0, nullptr, nullptr);
        char *data = nullptr;
        const long len = BIO_get_mem_data(bio, &data);
        EXPECT_FALSE(op::SigningKey::from_pem(std::string(data, static_cast<std::size_t>(len))));
        BIO_free(bio);
        EVP_PKEY_free(p);
    }
    EXPECT_FALSE(op::SigningKey::from_pem(""));
    EXPECT_FALSE(op::SigningKey::from_pem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"));
    const std::string pub = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n";
    EXPECT_FALSE(op::SigningKey::from_pem(pub));
}

TEST(OidcIdToken, TheRingSignsWithTheFirstKeyOfEachKindAndPublishesAll) {
    op::KeyRing ring;
    auto old_rsa = make_key(op::Alg::RS256);
    ring.add(keys().rsa);
    ring.add(old_rsa);
    EXPECT_EQ(ring.signer(op::Alg::RS256), keys().rsa.get());
    EXPECT_EQ(ring.signer(op::Alg::ES256), nullptr);
    const std::string jwks = ring.jwks();
    EXPECT_NE(jwks.find(keys().rsa->kid()), std::string::npos);
    EXPECT_NE(jwks.find(old_rsa->kid()), std::string::npos);
    auto parsed = oidc::KeySet::parse(jwks);
    ASSERT_TRUE(parsed);
    EXPECT_EQ(parsed->size(), 2u);
    EXPECT_TRUE(parsed->has(old_rsa->kid()));
    // every client's algorithm needs a key
    auto clients = registry();
    EXPECT_EQ(op::check_keys(clients, ring), "");
    auto es = op::parse_client({"es", "redirect_uri=https://es.example/cb", "public", "id_token_alg=ES256"});
    ASSERT_TRUE(es);
    ASSERT_TRUE(clients.add(std::move(es.value())));
    EXPECT_NE(op::check_keys(clients, ring).find("\"es\""), std::string::npos);
    ring.add(keys().ec);
    EXPECT_EQ(op::check_keys(clients, ring), "");
}

TEST(OidcIdToken, TheDiscoveryDocumentNamesTheEndpoints) {
    op::KeyRing ring;
    ring.add(keys().rsa);
    ring.add(keys().ed);
    const std::string d = op::discovery(kIssuer, ring);
    // the relying party's side of this module reads it as any client would
    auto parsed = oidc::parse_discovery(d, kIssuer);
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(parsed->authorization_endpoint, kIssuer + "/oauth2/authorize");
    EXPECT_EQ(parsed->token_endpoint, kIssuer + "/oauth2/token");
    EXPECT_EQ(parsed->jwks_uri, kIssuer + "/oauth2/jwks");
    EXPECT_TRUE(parsed->secret_in_body);
    for (const char *want : {R"("userinfo_endpoint":"https://id.example/auth/oauth2/userinfo")",
                             R"("revocation_endpoint":"https://id.example/auth/oauth2/revoke")",
                             R"("end_session_endpoint":"https://id.example/auth/oauth2/end_session")",
                             R"("id_token_signing_alg_values_supported":["RS256","EdDSA"])",
                             R"("code_challenge_methods_supported":["S256"])",
                             R"("response_types_supported":["code"])",
                             R"("authorization_response_iss_parameter_supported":true)"}) {
        EXPECT_NE(d.find(want), std::string::npos) << want;
    }
}

// jose (npm), a JOSE library that shares nothing with this module, checks tokens of every
// algorithm, and refuses a forged one. Needs node and t/node_modules (`cd t && npm ci`): skipped
// when they are not there, as on a machine that builds only the core.
TEST(OidcIdToken, IdTokensVerifyWithJose) {
    const std::string here = __FILE__;
    const std::string t_dir = here.substr(0, here.rfind("/unit/"));
    const std::string script = t_dir + "/tools/jose_verify.mjs";
    if (std::system("command -v node >/dev/null 2>&1") != 0 ||
        std::system(("test -d '" + t_dir + "/node_modules/jose'").c_str()) != 0) {
        GTEST_SKIP() << "node or t/node_modules/jose missing (cd t && npm ci)";
    }
    User alice;
    alice.id = "u-jose";
    alice.email = "alice@acme.com";
    std::vector<std::string> tokens;
    for (const auto &key : {keys().rsa, keys().ec, keys().ed}) tokens.push_back(op::sign_id_token(*key, id_token(alice)));
    std::string forged = tokens[0];
    forged[forged.rfind('.') + 5] = forged[forged.rfind('.') + 5] == 'A' ? 'B' : 'A';
    tokens.push_back(forged);
    auto other = id_token(alice);
    other.client_id = "ops";
    tokens.push_back(op::sign_id_token(*keys().rsa, other));

    std::string input = R"({"jwks":)" + keys().ring.jwks() + R"(,"issuer":")" + kIssuer + R"(","audience":"wiki","tokens":[)";
    for (std::size_t i = 0; i < tokens.size(); ++i) input += (i ? ",\"" : "\"") + tokens[i] + "\"";
    input += "]}";
    char path[] = "/tmp/signin_jose_XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, input.data(), input.size()), static_cast<ssize_t>(input.size()));
    close(fd);
    FILE *p = popen(("node '" + script + "' " + path).c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string out;
    char buf[4096];
    while (std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    const int status = pclose(p);
    unlink(path);
    ASSERT_EQ(status, 0) << out;
    auto entry = [&](std::size_t i) {
        std::size_t at = 0;
        for (std::size_t k = 0; k <= i; ++k) at = out.find("{\"ok\"", at + 1);
        return out.substr(at, out.find('}', at) - at + 1);
    };
    for (std::size_t i = 0; i < 3; ++i) {
        const std::string e = entry(i);
        EXPECT_NE(e.find(R"("ok":true)"), std::string::npos) << e;
        EXPECT_NE(e.find(R"("sub":"u-jose","nonce":"N-1")"), std::string::npos) << e;
    }
    EXPECT_NE(entry(0).find(R"("alg":"RS256")"), std::string::npos);
    EXPECT_NE(entry(1).find(R"("alg":"ES256")"), std::string::npos);
    EXPECT_NE(entry(2).find(R"("alg":"EdDSA")"), std::string::npos);
    EXPECT_NE(entry(3).find(R"("code":"ERR_JWS_SIGNATURE_VERIFICATION_FAILED")"), std::string::npos) << entry(3);
    EXPECT_NE(entry(4).find(R"("code":"ERR_JWT_CLAIM_VALIDATION_FAILED")"), std::string::npos) << entry(4);
}

TEST(OidcIdToken, AnIdTokenHintIsReadOnlyWithAValidSignature) {
    User alice;
    alice.id = "u-hint";
    alice.email = "alice@acme.com";
    for (const auto &key : {keys().rsa, keys().ec, keys().ed}) {
        auto t = id_token(alice);
        t.now = 1'000'000'000'000;  // long expired: a hint may be old
        const std::string jwt = op::sign_id_token(*key, t);
        auto hint = op::read_id_token_hint(jwt, keys().ring, kIssuer);
        ASSERT_TRUE(hint) << op::alg_name(key->alg());
        EXPECT_EQ(hint->client_id, "wiki");
        EXPECT_EQ(hint->subject, "u-hint");
        EXPECT_FALSE(op::read_id_token_hint(jwt, keys().ring, "https://other.example"));
        std::string forged = jwt;
        forged[forged.rfind('.') + 3] = forged[forged.rfind('.') + 3] == 'A' ? 'B' : 'A';
        EXPECT_FALSE(op::read_id_token_hint(forged, keys().ring, kIssuer));
        op::KeyRing without;
        without.add(make_key(key->alg()));
        EXPECT_FALSE(op::read_id_token_hint(jwt, without, kIssuer));  // a key not in the ring
    }
    // a header that names another algorithm than its key's is refused, whatever the signature
    const std::string claims = op::id_token_claims(id_token(alice));
    const std::string header = R"({"alg":"HS256","kid":")" + keys().rsa->kid() + "\"}";
    const std::string input = enc::base64url(reinterpret_cast<const unsigned char *>(header.data()), header.size()) + "." +
                              enc::base64url(reinterpret_cast<const unsigned char *>(claims.data()), claims.size());
    EXPECT_FALSE(op::read_id_token_hint(input + ".c2ln", keys().ring, kIssuer));
    EXPECT_FALSE(op::read_id_token_hint("a.b", keys().ring, kIssuer));
    EXPECT_FALSE(op::read_id_token_hint("", keys().ring, kIssuer));
}

TEST(OidcIdToken, EndSessionRedirectsOnlyToARegisteredUri) {
    op::Clients clients;
    ASSERT_TRUE(clients.add(client({"wiki", "redirect_uri=https://wiki.example/cb", "public",
                                    "post_logout_redirect_uri=https://wiki.example/bye"})));
    ASSERT_TRUE(clients.add(client({"ops", "redirect_uri=https://ops.example/cb", "public",
                                    "post_logout_redirect_uri=https://ops.example/bye"})));
    User alice;
    alice.id = "u-1";
    const std::string hint = op::sign_id_token(*keys().rsa, id_token(alice));  // aud: wiki
    auto end = [&](const std::string &q) { return op::parse_end_session(q, clients, keys().ring, kIssuer); };
    const std::string bye = "post_logout_redirect_uri=https%3A%2F%2Fwiki.example%2Fbye&state=s1";

    auto e = end("id_token_hint=" + hint + "&" + bye);
    EXPECT_EQ(e.client_id, "wiki");
    EXPECT_EQ(e.subject, "u-1");
    EXPECT_EQ(e.redirect_uri, "https://wiki.example/bye");
    EXPECT_FALSE(e.bad_hint);
    EXPECT_EQ(op::end_session_redirect(e), "https://wiki.example/bye?state=s1");
    EXPECT_EQ(end("client_id=wiki&" + bye).redirect_uri, "https://wiki.example/bye");
    // never an open redirect: unregistered, another client's, no client, the hint and client_id disagreeing
    EXPECT_EQ(end("client_id=wiki&post_logout_redirect_uri=https%3A%2F%2Fevil.example%2F").redirect_uri, "");
    EXPECT_EQ(end("client_id=wiki&post_logout_redirect_uri=https%3A%2F%2Fops.example%2Fbye").redirect_uri, "");
    EXPECT_EQ(end(bye).redirect_uri, "");
    EXPECT_EQ(end("client_id=ops&id_token_hint=" + hint + "&" + bye).redirect_uri, "");
    EXPECT_EQ(end("client_id=ops&id_token_hint=" + hint + "&post_logout_redirect_uri=https%3A%2F%2Fops.example%2Fbye").redirect_uri, "");
    EXPECT_EQ(end("client_id=wiki&client_id=ops&" + bye).redirect_uri, "");
    // a hint that does not verify is marked, so that the person is asked before being signed out
    auto bad = end("id_token_hint=x.y.z&" + bye);
    EXPECT_TRUE(bad.bad_hint);
    EXPECT_EQ(bad.redirect_uri, "");
    EXPECT_EQ(bad.subject, "");
}

// The pieces in the order the endpoints will use them, for a public client with PKCE: the
// authorization request, the decision, the code, the token request and its client, the code
// spent, the ID token checked by the relying party's verifier, then a refresh, a reuse of the
// old refresh token that ends the family, and the code's reuse.
TEST(OidcFlow, ACodeFlowThroughTheCore) {
    const Millis t0 = 1'800'000'000'000;
    op::Clients clients;
    ASSERT_TRUE(clients.add(client({"cli", "redirect_uri=http://127.0.0.1:8400/cb", "public", "consent=off"})));
    User alice;
    alice.id = "u-flow";
    alice.email = "alice@acme.com";

    const auto a = op::parse_authorize("response_type=code&client_id=cli&redirect_uri=http%3A%2F%2F127.0.0.1%3A8400%2Fcb"
                                       "&scope=openid+email+offline_access&state=st&nonce=N-1&code_challenge=" + kChallenge +
                                       "&code_challenge_method=S256", clients);
    ASSERT_TRUE(std::holds_alternative<op::AuthorizeRequest>(a));
    const auto &req = std::get<op::AuthorizeRequest>(a);
    const op::Client &cli = *clients.find(req.client_id);
    op::SignedIn s;
    s.user = &alice;
    s.auth_time = t0 - 5000;
    ASSERT_EQ(op::decide(req, cli, s, t0).next, op::Next::Issue);
    const std::string code = "the-code";
    const op::CodeRecord stored = op::new_code(req, alice.id, s.auth_time, SignInMethod::EmailToken, false, record_key(code), t0);
    EXPECT_EQ(op::code_redirect(req, code, kIssuer),
              "http://127.0.0.1:8400/cb?code=the-code&state=st&iss=https%3A%2F%2Fid.example%2Fauth");

    auto parsed = op::parse_token_request("grant_type=authorization_code&code=" + code +
                                              "&redirect_uri=http%3A%2F%2F127.0.0.1%3A8400%2Fcb&client_id=cli&code_verifier=" + kVerifier,
                                          "");
    ASSERT_TRUE(std::holds_alternative<op::TokenRequest>(parsed));
    const auto &t = std::get<op::TokenRequest>(parsed);
    auto who = op::authenticate(t, clients);
    ASSERT_TRUE(std::holds_alternative<const op::Client *>(who));
    EXPECT_EQ(record_key(t.code.reveal()), stored.key);  // the store finds the code by the key of what was sent
    const Millis t1 = t0 + 2000;
    ASSERT_EQ(op::check_code(&stored, t, cli, t1).outcome, op::CodeOutcome::Ok);
    op::CodeRecord spent = stored;
    spent.spent = true;
    auto family = op::new_family(stored, "fam", t1);
    ASSERT_TRUE(family);
    spent.family_id = family->id;
    op::RefreshTokenRecord refresh1 = op::refresh_token_record(*family, record_key("R1"), t1);

    op::IdToken it;
    it.issuer = kIssuer;
    it.client_id = cli.id;
    it.user = &alice;
    it.email = true;
    it.amr = stored.amr;
    it.auth_time = stored.auth_time;
    it.nonce = stored.nonce;
    it.now = t1;
    const std::string jwt = op::sign_id_token(*keys().rsa, it);
    auto jwks = oidc::KeySet::parse(keys().ring.jwks());
    ASSERT_TRUE(jwks);
    oidc::Expected e;
    e.issuer = kIssuer;
    e.client_id = "cli";
    e.nonce = "N-1";
    e.now = t1;
    auto v = oidc::verify_id_token(jwt, jwks.value(), e);
    ASSERT_EQ(v.refusal, oidc::Refusal::None) << oidc::refusal_name(v.refusal);
    EXPECT_EQ(v.claims.sub, "u-flow");
    EXPECT_NE(op::token_response("A1", op::kAccessTokenTtl, jwt, "R1", stored.scopes)
                  .find(R"("refresh_token":"R1","scope":"openid email offline_access")"),
              std::string::npos);

    // a refresh rotates; the first token coming back afterwards ends the family
    auto rt = op::parse_token_request("grant_type=refresh_token&refresh_token=R1&client_id=cli", "");
    const auto &refresh_req = std::get<op::TokenRequest>(rt);
    ASSERT_EQ(op::use_refresh(&refresh1, &*family, refresh_req, cli, t1 + 1000).outcome, op::RefreshOutcome::Rotate);
    const op::RefreshTokenRecord refresh2 = op::refresh_token_record(*family, record_key("R2"), t1 + 1000);
    EXPECT_EQ(op::use_refresh(&refresh1, &*family, refresh_req, cli, t1 + 2000).outcome, op::RefreshOutcome::Reused);
    EXPECT_TRUE(family->revoked);
    EXPECT_EQ(op::use_refresh(&refresh2, &*family, refresh_req, cli, t1 + 3000).outcome, op::RefreshOutcome::Invalid);
    // and the code once more: reused, pointing at what to revoke
    auto again = op::check_code(&spent, t, cli, t1 + 4000);
    EXPECT_EQ(again.outcome, op::CodeOutcome::Reused);
    EXPECT_EQ(spent.family_id, "fam");
}
