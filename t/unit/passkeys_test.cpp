// Passkeys (webauthn.hpp, passkeys.hpp) in the core, with a fake clock: the parsers
// on malformed and truncated input, and both ceremonies against a software authenticator made
// here with OpenSSL and libcbor (the browser tests use Chromium's virtual authenticator and a
// second implementation, @simplewebauthn/server).
#include <cbor.h>
#include <cjson/cJSON.h>
#include <gtest/gtest.h>
#include <liboath/oath.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <sodium.h>

#include <cstring>
#include <memory>
#include <string>

#include "engine_fixtures.hpp"
#include "signin/auth.hpp"
#include "signin/webauthn.hpp"

using namespace signin;

namespace {

const char *kOrigin = "https://acme.example";

using signin::testing::b64;
std::string serialize(cbor_item_t *item) {
    unsigned char *buf = nullptr;
    size_t size = 0;
    size_t len = cbor_serialize_alloc(item, &buf, &size);
    std::string out(reinterpret_cast<char *>(buf), len);
    free(buf);
    cbor_decref(&item);
    return out;
}
void put(cbor_item_t *map, cbor_item_t *k, cbor_item_t *v) {
    ASSERT_TRUE(cbor_map_add(map, cbor_pair{cbor_move(k), cbor_move(v)}));
}
cbor_item_t *bytes(std::string_view s) { return cbor_build_bytestring(reinterpret_cast<cbor_data>(s.data()), s.size()); }
std::string json_field(const std::string &json, const char *name) {
    cJSON *j = cJSON_Parse(json.c_str());
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    std::string out = cJSON_IsString(v) ? v->valuestring : "";
    cJSON_Delete(j);
    return out;
}

// A passkey authenticator in software: one P-256 key, a counter.
struct SoftKey {
    EVP_PKEY *key = EVP_EC_gen("P-256");
    std::string id = std::string("cred-") + std::to_string(randombytes_random());
    std::uint32_t count = 0;
    ~SoftKey() { EVP_PKEY_free(key); }

    std::string cose() const {
        unsigned char pub[65];
        size_t len = 0;
        EXPECT_EQ(EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof pub, &len), 1);
        cbor_item_t *m = cbor_new_definite_map(5);
        put(m, cbor_build_uint8(1), cbor_build_uint8(2));     // kty: EC2
        put(m, cbor_build_uint8(3), cbor_build_negint8(6));   // alg: -7 ES256
        put(m, cbor_build_negint8(0), cbor_build_uint8(1));   // crv: P-256
        put(m, cbor_build_negint8(1), bytes(std::string_view(reinterpret_cast<char *>(pub) + 1, 32)));
        put(m, cbor_build_negint8(2), bytes(std::string_view(reinterpret_cast<char *>(pub) + 33, 32)));
        return serialize(m);
    }
    std::string auth_data(std::string_view rp_id, std::uint8_t flags, bool attested) const {
        std::string out = webauthn::sha256(rp_id);
        out += static_cast<char>(flags | (attested ? 0x40 : 0));
        for (int i = 3; i >= 0; --i) out += static_cast<char>((count >> (8 * i)) & 0xff);
        if (attested) {
            out += std::string(16, '\0');
            out += static_cast<char>(id.size() >> 8);
            out += static_cast<char>(id.size() & 0xff);
            out += id + cose();
        }
        return out;
    }
    std::string sign(std::string_view data) const {
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        size_t len = 0;
        EXPECT_EQ(EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key), 1);
        EXPECT_EQ(EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char *>(data.data()), data.size()), 1);
        std::string sig(len, '\0');
        EXPECT_EQ(EVP_DigestSign(ctx, reinterpret_cast<unsigned char *>(sig.data()), &len,
                                 reinterpret_cast<const unsigned char *>(data.data()), data.size()),
                  1);
        sig.resize(len);
        EVP_MD_CTX_free(ctx);
        return sig;
    }
};

std::string client_data(std::string_view type, std::string_view challenge_b64, std::string_view origin = kOrigin) {
    return std::string("{\"type\":\"") + std::string(type) + "\",\"challenge\":\"" + std::string(challenge_b64) +
           "\",\"origin\":\"" + std::string(origin) + "\",\"crossOrigin\":false}";
}
std::string attestation(std::string_view auth_data) {
    cbor_item_t *m = cbor_new_definite_map(3);
    put(m, cbor_build_string("fmt"), cbor_build_string("none"));
    put(m, cbor_build_string("attStmt"), cbor_new_definite_map(0));
    put(m, cbor_build_string("authData"), bytes(auth_data));
    return serialize(m);
}
std::string registration_body(const std::string &id, const std::string &cd, const std::string &att) {
    return "{\"credential\":{\"id\":\"" + b64(id) + "\",\"rawId\":\"" + b64(id) +
           "\",\"type\":\"public-key\",\"response\":{\"clientDataJSON\":\"" + b64(cd) + "\",\"attestationObject\":\"" +
           b64(att) + "\"}},\"name\":\"Laptop\"}";
}
std::string assertion_body(const std::string &id, const std::string &cd, const std::string &data, const std::string &sig,
                           const std::string &handle) {
    return "{\"credential\":{\"id\":\"" + b64(id) + "\",\"rawId\":\"" + b64(id) +
           "\",\"type\":\"public-key\",\"response\":{\"clientDataJSON\":\"" + b64(cd) + "\",\"authenticatorData\":\"" +
           b64(data) + "\",\"signature\":\"" + b64(sig) + "\",\"userHandle\":\"" + b64(handle) + "\"}}}";
}

TEST(WebauthnParse, TruncatedAndDamagedInputsAreErrorsNotCrashes) {
    SoftKey k;
    const std::string data = k.auth_data("acme.example", 0x05, true);
    const std::string att = attestation(data);
    ASSERT_TRUE(webauthn::parse_attestation_object(att)) << webauthn::parse_attestation_object(att).error().message;
    auto parsed = webauthn::parse_attestation_object(att);
    EXPECT_EQ(parsed->auth_data.credential_id, k.id);
    EXPECT_EQ(webauthn::check_public_key(parsed->auth_data.public_key).value(), webauthn::kES256);
    for (std::size_t n = 0; n < att.size(); ++n) {
        auto r = webauthn::parse_attestation_object(std::string_view(att).substr(0, n));
        ASSERT_FALSE(r) << "a prefix of " << n << " bytes";
        EXPECT_EQ(r.error().code, Code::InvalidRequest);
        EXPECT_FALSE(r.error().message.empty());
    }
    for (std::size_t n = 0; n < data.size(); ++n) {
        EXPECT_FALSE(webauthn::parse_authenticator_data(std::string_view(data).substr(0, n))) << n;
    }
    EXPECT_FALSE(webauthn::parse_authenticator_data(data + "x")) << "trailing bytes";
    for (std::size_t i = 0; i < att.size(); ++i) {  // every byte flipped: an error or a value, never a crash
        std::string bad = att;
        bad[i] = static_cast<char>(bad[i] ^ 0xff);
        (void)webauthn::parse_attestation_object(bad);
    }
    EXPECT_FALSE(webauthn::check_public_key("\xa0")) << "an empty map";
    EXPECT_FALSE(webauthn::check_public_key("")) << "nothing";
    EXPECT_FALSE(webauthn::parse_client_data("{\"type\":\"webauthn.get\"}"));
    EXPECT_FALSE(webauthn::parse_client_data("{\"type\":1,\"challenge\":\"AA\",\"origin\":\"x\"}"));
    EXPECT_FALSE(webauthn::parse_client_data("[]"));
    EXPECT_FALSE(webauthn::parse_credential_body("{\"credential\":{}}", false));
    EXPECT_FALSE(webauthn::parse_credential_body("{\"credential\":{\"type\":\"public-key\",\"id\":\"AA\"},\"x\":1}", false));
}

TEST(WebauthnParse, KeysOfOtherCurvesOrAlgorithmsAreRefused) {
    SoftKey k;
    // the same key labelled EdDSA: refused (an OKP key is needed)
    std::string cose = k.cose();
    auto wrong = cose;
    const auto at = wrong.find(static_cast<char>(0x26));  // -7 encoded as 0x26
    ASSERT_NE(at, std::string::npos);
    wrong[at] = 0x27;  // -8
    EXPECT_FALSE(webauthn::check_public_key(wrong));
    EXPECT_TRUE(webauthn::check_public_key(cose));
    const std::string sig = k.sign("hello");
    EXPECT_TRUE(webauthn::verify_signature(cose, "hello", sig));
    EXPECT_FALSE(webauthn::verify_signature(cose, "hellO", sig));
    std::string flipped = sig;
    flipped[flipped.size() - 1] = static_cast<char>(flipped.back() ^ 1);
    EXPECT_FALSE(webauthn::verify_signature(cose, "hello", flipped));
}

class PasskeysTest : public signin::testing::EngineTest {
protected:
    void SetUp() override {
        EngineTest::SetUp();
        Policy policy = open_policy();
        policy.with_passkeys = true;
        policy.with_mfa = true;
        make(policy, true, kOrigin);
    }
    // Registers k for the session's user; the answer.
    Result<PasskeyInfo> enroll(const Session &s, SoftKey &k, std::uint8_t flags = 0x05,
                               std::string_view origin = kOrigin, std::string_view rp = "acme.example") {
        auto options = id_->passkeys().registration_options(principal(s));
        EXPECT_TRUE(options) << options.error().message;
        const std::string cd = client_data("webauthn.create", json_field(options.value(), "challenge"), origin);
        return id_->passkeys().add(principal(s), registration_body(k.id, cd, attestation(k.auth_data(rp, flags, true))),
                                   "c");
    }
    std::string assertion(SoftKey &k, const std::string &user_id, std::uint8_t flags = 0x05, bool bump = true,
                          std::string_view origin = kOrigin) {
        auto options = id_->passkeys().login_options();
        EXPECT_TRUE(options);
        if (bump) ++k.count;
        const std::string cd = client_data("webauthn.get", json_field(options.value(), "challenge"), origin);
        const std::string data = k.auth_data("acme.example", flags, false);
        return assertion_body(k.id, cd, data, k.sign(data + webauthn::sha256(cd)), user_id);
    }
    bool refused_with(std::string_view why) {
        for (const auto &e : store_->read()->audit(50)) {
            if (e.kind == "passkey.refused" && e.detail.find(why) != std::string::npos) return true;
        }
        return false;
    }
};

TEST_F(PasskeysTest, RegisterThenSignInWithUserVerificationCountsAsTwoFactors) {
    Session s = sign_in("pk@example.com");
    SoftKey k;
    auto added = enroll(s, k);
    ASSERT_TRUE(added) << added.error().message;
    EXPECT_EQ(added->name, "Laptop");
    EXPECT_EQ(id_->passkeys().list(principal(s))->size(), 1u);
    auto step = id_->passkeys().sign_in(assertion(k, s.user.id), "c");
    ASSERT_TRUE(step) << step.error().message;
    ASSERT_TRUE(step->signed_in());
    auto p = id_->sessions().authenticate_from(step->session->token, "c");
    ASSERT_TRUE(p);
    EXPECT_TRUE(p->session.mfa) << "UV: two factors";
    EXPECT_EQ(p->session.method, SignInMethod::Passkey);
    EXPECT_GT(id_->passkeys().list(principal(s))->front().last_used_at, 0);
}

TEST_F(PasskeysTest, RegistrationNeedsAFreshSessionTheRightOriginRpIdAndPresence) {
    Session s = sign_in("reg@example.com");
    SoftKey a, b, c, d;
    EXPECT_EQ(enroll(s, a, 0x05, "https://evil.example").error().code, Code::InvalidRequest);
    EXPECT_TRUE(refused_with("register:origin"));
    EXPECT_FALSE(enroll(s, b, 0x05, kOrigin, "evil.example"));
    EXPECT_TRUE(refused_with("register:rp_id"));
    EXPECT_FALSE(enroll(s, c, 0x04));
    EXPECT_TRUE(refused_with("register:user_presence"));
    ASSERT_TRUE(enroll(s, d));
    EXPECT_FALSE(enroll(s, d)) << "the same credential twice";
    EXPECT_TRUE(refused_with("register:duplicate"));
    clock_->advance(id_->policy().fresh_window + 1);
    EXPECT_EQ(id_->passkeys().registration_options(principal(s)).error().code, Code::FreshSessionRequired);
}

TEST_F(PasskeysTest, AChallengeIsSpentOnceAndExpires) {
    Session s = sign_in("ch@example.com");
    SoftKey k;
    ASSERT_TRUE(enroll(s, k));
    const std::string body = assertion(k, s.user.id);
    ASSERT_TRUE(id_->passkeys().sign_in(body, "c"));
    auto again = id_->passkeys().sign_in(body, "c");
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().code, Code::PasskeyRefused);
    EXPECT_TRUE(refused_with("challenge spent"));
    const std::string late = assertion(k, s.user.id);
    clock_->advance(Passkeys::kChallengeTtl + 1);
    EXPECT_FALSE(id_->passkeys().sign_in(late, "c"));
    EXPECT_TRUE(refused_with("challenge expired"));
}

TEST_F(PasskeysTest, SignatureCounterHandleAndOriginAreChecked) {
    Session s = sign_in("sig@example.com");
    SoftKey k;
    ASSERT_TRUE(enroll(s, k));
    ASSERT_TRUE(id_->passkeys().sign_in(assertion(k, s.user.id), "c"));  // count 1
    // a counter that does not move forward: a cloned authenticator
    EXPECT_FALSE(id_->passkeys().sign_in(assertion(k, s.user.id, 0x05, false), "c"));
    EXPECT_TRUE(refused_with("counter 1 <= 1"));
    EXPECT_FALSE(id_->passkeys().sign_in(assertion(k, "another-user-id"), "c"));
    EXPECT_TRUE(refused_with("user handle"));
    EXPECT_FALSE(id_->passkeys().sign_in(assertion(k, s.user.id, 0x05, true, "https://evil.example"), "c"));
    EXPECT_TRUE(refused_with("sign_in:origin"));
    EXPECT_FALSE(id_->passkeys().sign_in(assertion(k, s.user.id, 0x04), "c"));
    EXPECT_TRUE(refused_with("sign_in:user_presence"));
    SoftKey stranger;
    stranger.id = k.id;  // the same id, another key: the signature does not verify
    EXPECT_FALSE(id_->passkeys().sign_in(assertion(stranger, s.user.id), "c"));
    EXPECT_TRUE(refused_with("signature"));
    SoftKey unknown;
    EXPECT_FALSE(id_->passkeys().sign_in(assertion(unknown, s.user.id), "c"));
    EXPECT_TRUE(refused_with("unknown credential"));
}

TEST_F(PasskeysTest, WithoutUserVerificationASecondFactorIsStillAsked) {
    Session s = sign_in("mfa@example.com");
    SoftKey k;
    ASSERT_TRUE(enroll(s, k, 0x01));
    auto setup = id_->mfa().setup_totp(principal(s), "c");
    ASSERT_TRUE(setup);
    char *raw = nullptr;
    size_t len = 0;
    const std::string b32(setup->secret.reveal());
    ASSERT_EQ(oath_base32_decode(b32.data(), b32.size(), &raw, &len), OATH_OK);
    char code[16] = {};
    ASSERT_EQ(oath_totp_generate(raw, len, static_cast<time_t>(clock_->now() / 1000), 30, 0, 6, code), OATH_OK);
    std::free(raw);
    ASSERT_TRUE(id_->mfa().confirm_totp(principal(s), code, "c"));
    auto step = id_->passkeys().sign_in(assertion(k, s.user.id, 0x01), "c");
    ASSERT_TRUE(step) << step.error().message;
    EXPECT_FALSE(step->signed_in()) << "presence alone is one factor";
    auto uv = id_->passkeys().sign_in(assertion(k, s.user.id, 0x05), "c");
    ASSERT_TRUE(uv && uv->signed_in()) << "with user verification: two factors, no second step";
}

TEST_F(PasskeysTest, ASuspendedOrDeletedAccountsPasskeyNeverSignsIn) {
    Session s = sign_in("gone@example.com");
    SoftKey k;
    ASSERT_TRUE(enroll(s, k));
    ASSERT_TRUE(id_->set_suspended("default", "gone@example.com", true));
    EXPECT_FALSE(id_->passkeys().sign_in(assertion(k, s.user.id), "c"));
    EXPECT_TRUE(refused_with("suspended"));
    ASSERT_TRUE(id_->set_suspended("default", "gone@example.com", false));
    ASSERT_TRUE(id_->accounts().delete_account(principal(s), "c"));
    EXPECT_TRUE(store_->read()->passkeys_of(s.user.id).empty()) << "deleted with the account";
    EXPECT_FALSE(id_->passkeys().sign_in(assertion(k, s.user.id), "c"));
    EXPECT_TRUE(refused_with("unknown credential"));
}

TEST_F(PasskeysTest, RemoveOnlyOnesOwn) {
    Session s = sign_in("own@example.com");
    Session other = sign_in("other@example.com");
    SoftKey k;
    auto added = enroll(s, k);
    ASSERT_TRUE(added);
    EXPECT_EQ(id_->passkeys().remove(principal(other), added->id, "c").error().code, Code::NotFound);
    ASSERT_TRUE(id_->passkeys().remove(principal(s), added->id, "c"));
    EXPECT_TRUE(id_->passkeys().list(principal(s))->empty());
    EXPECT_FALSE(id_->passkeys().sign_in(assertion(k, s.user.id), "c"));
}

}  // namespace
