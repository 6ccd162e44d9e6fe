// $signin_assertion (assertion.hpp): a compact JWS whose signature verifies with the JWKS key of
// its kid, and the JWKS across a rotation. (t/signin_assertion.t has an independent library check
// it over HTTP.)
#include <gtest/gtest.h>
#include <sodium.h>

#include <filesystem>

#include "core/encoding.hpp"
#include "signin/assertion.hpp"
#include "signin/secret_key.hpp"

using namespace signin;

namespace {

std::vector<std::string> split(const std::string &s) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (;;) {
        auto dot = s.find('.', start);
        out.push_back(s.substr(start, dot - start));
        if (dot == std::string::npos) return out;
        start = dot + 1;
    }
}

// The public key ("x") of kid in a JWKS text.
std::string key_of(const std::string &jwks, const std::string &kid) {
    auto at = jwks.find("\"kid\":\"" + kid + "\"");
    if (at == std::string::npos) return {};
    auto x = jwks.rfind("\"x\":\"", at);
    auto end = jwks.find('"', x + 5);
    return *enc::base64url_decode(jwks.substr(x + 5, end - x - 5));
}

bool verifies(const std::string &jws, const std::string &public_key) {
    auto parts = split(jws);
    if (parts.size() != 3 || public_key.size() != 32) return false;
    auto sig = enc::base64url_decode(parts[2]);
    std::string input = parts[0] + "." + parts[1];
    return sig && sig->size() == 64 &&
           crypto_sign_verify_detached(reinterpret_cast<const unsigned char *>(sig->data()),
                                       reinterpret_cast<const unsigned char *>(input.data()), input.size(),
                                       reinterpret_cast<const unsigned char *>(public_key.data())) == 0;
}

User alice() {
    User u;
    u.id = "0192-alice";
    u.email = "alice@acme.com";
    u.roles = {"staff"};
    return u;
}

TEST(Assertion, SignedWithTheKeyTheJwksPublishes) {
    SecretKey master{};
    master[0] = 7;
    AssertionKeys keys(master, 1);
    std::string jws = keys.sign(alice(), "https://app.example", "app.example", 1795000000123, false);
    auto parts = split(jws);
    ASSERT_EQ(parts.size(), 3u);
    EXPECT_EQ(*enc::base64url_decode(parts[0]), "{\"alg\":\"EdDSA\",\"typ\":\"JWT\",\"kid\":\"" + keys.kid() + "\"}");
    EXPECT_EQ(*enc::base64url_decode(parts[1]),
              "{\"iss\":\"https://app.example\",\"aud\":\"app.example\",\"sub\":\"0192-alice\",\"email\":"
              "\"alice@acme.com\",\"roles\":[\"staff\"],\"mfa\":false,\"iat\":1795000000,\"exp\":1795000060}");
    EXPECT_TRUE(verifies(jws, key_of(keys.jwks(), keys.kid())));
    std::string tampered = jws;
    tampered[parts[0].size() + 5] ^= 1;
    EXPECT_FALSE(verifies(tampered, key_of(keys.jwks(), keys.kid())));
}

TEST(Assertion, ARotationKeepsThePreviousKeyPublished) {
    char tmpl[] = "/tmp/signin-assert-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    std::string path = std::string(tmpl) + "/signin.key";
    auto f1 = load_key_file(path, true);
    ASSERT_TRUE(f1);
    EXPECT_EQ(f1->assertion_generation, 1u);
    AssertionKeys before(f1->key, f1->assertion_generation);
    std::string old_jws = before.sign(alice(), "https://a.example", "a.example", 1795000000000, true);

    auto g = rotate_assertion_key(path);
    ASSERT_TRUE(g) << g.error().message;
    EXPECT_EQ(g.value(), 2u);
    auto f2 = load_key_file(path, false);
    ASSERT_TRUE(f2);
    EXPECT_EQ(f2->key, f1->key) << "the secret key itself is kept (the outbox still opens)";
    EXPECT_EQ(f2->assertion_generation, 2u);
    AssertionKeys after(f2->key, f2->assertion_generation);
    EXPECT_NE(after.kid(), before.kid());
    std::string jwks = after.jwks();
    EXPECT_TRUE(verifies(old_jws, key_of(jwks, before.kid()))) << "an assertion signed before still verifies";
    EXPECT_TRUE(verifies(after.sign(alice(), "x", "y", 1795000000000, false), key_of(jwks, after.kid())));
    std::filesystem::remove_all(tmpl);
}

}  // namespace
