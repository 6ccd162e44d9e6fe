// Passwords: NFC, length, the policy, Argon2id parameters, rehash, the blocklist, the attempt
// rules, and every engine rule of passwords over a real LMDB store with a fake clock.
#include <gtest/gtest.h>

#include "signin/json.hpp"
#include <sodium.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "core/encoding.hpp"
#include "signin/auth.hpp"
#include "signin/password.hpp"
#include "signin/store.hpp"
#include "engine_fixtures.hpp"

using namespace signin;
using signin::testing::FakeClock;
using signin::testing::kStart;
using signin::testing::Mailer;
namespace pw = signin::password;

namespace {

constexpr Millis kSecond = 1000;
constexpr Millis kMinute = 60 * kSecond;

const char *kGood = "violet tractor hums quietly";        // passes the policy
const char *kGood2 = "seven orange kettles whistle";
const char *kGood3 = "marble heron folds the quiet map";

std::string weak_message(std::string_view password, unsigned min = 15) {
    auto nfc = pw::normalize_nfc(password);
    if (!nfc) return "not utf-8";
    Status s = pw::check_policy(*nfc, min);
    if (s) return "";
    EXPECT_EQ(s.error().code, Code::WeakPassword);
    return s.error().message;
}

// ================================================================ NFC, length

TEST(PasswordNfc, ComposesAndNeverTrims) {
    // "é" as e + combining acute (U+0301) becomes U+00E9
    auto n = pw::normalize_nfc("caf\x65\xCC\x81");
    ASSERT_TRUE(n);
    EXPECT_EQ(*n, "caf\xC3\xA9");
    EXPECT_EQ(pw::code_points(*n), 4u);
    auto spaced = pw::normalize_nfc("  padded  ");
    ASSERT_TRUE(spaced);
    EXPECT_EQ(*spaced, "  padded  ");
    EXPECT_FALSE(pw::normalize_nfc("bad \xFF byte"));
    EXPECT_EQ(*pw::normalize_nfc(""), "");
}

TEST(PasswordPolicy, LengthCountsCodePointsAfterNfc) {
    // 14 x "é" decomposed is 28 code points before NFC and 14 after: too short at 15
    std::string decomposed;
    for (int i = 0; i < 14; ++i) decomposed += "\x65\xCC\x81";
    std::string msg = weak_message(decomposed + "q");  // 15 code points after NFC, 2 distinct
    EXPECT_NE(msg.find("different characters"), std::string::npos) << msg;
    msg = weak_message("\xC3\xA9tude quiet bus");  // 15 code points, 16 bytes
    EXPECT_EQ(msg, "");
    msg = weak_message("short one here");  // 14
    EXPECT_NE(msg.find("at least 15 characters"), std::string::npos) << msg;
    EXPECT_NE(msg.find("has 14"), std::string::npos) << msg;
    EXPECT_EQ(weak_message("short one here", 8), "");
}

TEST(PasswordPolicy, AtMost1024Bytes) {
    std::string mixed;
    for (int i = 0; mixed.size() < 1025; ++i) mixed += std::to_string(i * 7919) + "qz";
    EXPECT_NE(weak_message(mixed).find("at most 1024 bytes"), std::string::npos);
    mixed.resize(1024);
    EXPECT_EQ(weak_message(mixed).find("at most"), std::string::npos);
}

TEST(PasswordPolicy, CommonListIsBuiltIn) {
    EXPECT_GT(pw::common_list_size(), 50000u);
    EXPECT_TRUE(pw::is_common("password"));
    EXPECT_TRUE(pw::is_common("qwerty"));
    EXPECT_TRUE(pw::is_common("sunshine"));
    EXPECT_FALSE(pw::is_common("zqxvwkjh"));
    EXPECT_NE(weak_message("password", 8).find("common passwords"), std::string::npos);
    EXPECT_NE(weak_message("Characteristically").find("common passwords"), std::string::npos);
}

TEST(PasswordPolicy, DecoratedCommonWords) {
    for (const char *p : {"Password12345678", "P@ssw0rd!!2024!!", "!!!Sunshine!!!!!", "monkey1234567890",
                          "D3c3mb3r20242025", "passwordpassword1"}) {
        std::string m = weak_message(p);
        EXPECT_FALSE(m.empty()) << p;
    }
    EXPECT_NE(weak_message("P@ssw0rd!!2024!!").find("common word"), std::string::npos);
}

TEST(PasswordPolicy, RepeatsKeyboardRunsAndFewCharacters) {
    EXPECT_NE(weak_message("abcdeabcdeabcde").find("repeats"), std::string::npos);
    EXPECT_NE(weak_message("xk9#qxk9#qxk9#q").find("repeats"), std::string::npos);
    EXPECT_NE(weak_message("qwertyuiopasdfg").find("keyboard"), std::string::npos);
    EXPECT_NE(weak_message("1234567890qwerty").find("keyboard"), std::string::npos);
    EXPECT_NE(weak_message("abcdefghijklmnop").find("keyboard"), std::string::npos);
    EXPECT_NE(weak_message("aaaaaaaaaaaaaaaa").find("only 1 different"), std::string::npos);
    EXPECT_NE(weak_message("abababababbbaaab").find("different characters"), std::string::npos);
}

TEST(PasswordPolicy, GoodPasswordsPass) {
    for (const char *p : {kGood, kGood2, "correct horse battery staple", "Tr4ns-Pacific?Gull", "mlkjGYT%42nbvcxzq",
                          "\xD0\xBF\xD0\xB0\xD1\x80\xD0\xBE\xD0\xBB\xD1\x8C \xD0\xBA\xD0\xBE\xD1\x82 "
                          "\xD1\x81\xD0\xBB\xD0\xBE\xD0\xBD"}) {
        EXPECT_EQ(weak_message(p), "") << p;
    }
}

// ================================================================ hashing

TEST(PasswordHash, Argon2idWithTheSpecParameters) {
    auto h = pw::hash(kGood);
    ASSERT_TRUE(h);
    const std::string &s = h.value();
    EXPECT_EQ(s.rfind("$argon2id$v=19$m=19456,t=2,p=1$", 0), 0u) << s;
    // salt: 16 bytes = 22 base64 characters without padding
    auto salt_begin = s.find('$', 29) + 1;
    auto salt_end = s.find('$', salt_begin);
    EXPECT_EQ(salt_end - salt_begin, 22u) << s;
    EXPECT_TRUE(pw::verify(s, kGood));
    EXPECT_FALSE(pw::verify(s, kGood2));
    EXPECT_FALSE(pw::verify(s, std::string(kGood) + " "));  // never trimmed
    EXPECT_FALSE(pw::verify("not a hash", kGood));
    EXPECT_FALSE(pw::verify("", ""));
    auto again = pw::hash(kGood);
    ASSERT_TRUE(again);
    EXPECT_NE(again.value(), s);  // a fresh salt every time
    EXPECT_FALSE(pw::needs_rehash(s));
}

TEST(PasswordHash, WeakerSettingsNeedARehash) {
    pw::HashParams weak;
    weak.opslimit = 1;
    weak.memlimit = 8 * 1024 * 1024;
    auto h = pw::hash(kGood, weak);
    ASSERT_TRUE(h);
    EXPECT_NE(h.value().find("m=8192,t=1"), std::string::npos);
    EXPECT_TRUE(pw::needs_rehash(h.value()));
    EXPECT_FALSE(pw::needs_rehash(h.value(), weak));
    EXPECT_TRUE(pw::needs_rehash("$argon2i$v=19$m=19456,t=2,p=1$c29tZXNhbHQ$aGFzaA"));
    EXPECT_TRUE(pw::verify(h.value(), kGood));
}

TEST(PasswordHash, DummyHashIsARealHashWithTheSameSettings) {
    const std::string &d = pw::dummy_hash();
    EXPECT_EQ(d.rfind("$argon2id$v=19$m=19456,t=2,p=1$", 0), 0u);
    EXPECT_EQ(&d, &pw::dummy_hash());  // made once
    EXPECT_FALSE(pw::verify(d, ""));
}

// ================================================================ blocklist

class BlocklistTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/signin-blocklist-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    std::string write(const std::vector<std::string> &passwords, bool sorted = true) {
        std::vector<std::string> digests;
        for (const auto &p : passwords) {
            unsigned char d[32];
            crypto_hash_sha256(d, reinterpret_cast<const unsigned char *>(p.data()), p.size());
            digests.emplace_back(reinterpret_cast<char *>(d), 32);
        }
        if (sorted) std::sort(digests.begin(), digests.end());
        std::string path = dir_ + "/list.bin";
        std::ofstream out(path, std::ios::binary);
        for (const auto &d : digests) out << d;
        return path;
    }
    std::string dir_;
};

TEST_F(BlocklistTest, FindsDigestsByBinarySearch) {
    std::vector<std::string> list;
    for (int i = 0; i < 1000; ++i) list.push_back("breached-" + std::to_string(i));
    list.push_back("violet tractor hums quietly");
    auto b = pw::Blocklist::open(write(list));
    ASSERT_TRUE(b) << b.error().message;
    EXPECT_EQ(b.value()->size(), 1001u);
    EXPECT_TRUE(b.value()->contains("breached-0"));
    EXPECT_TRUE(b.value()->contains("breached-999"));
    EXPECT_TRUE(b.value()->contains(kGood));
    EXPECT_FALSE(b.value()->contains("breached-1000"));
    EXPECT_FALSE(b.value()->contains(""));
    auto check = pw::blocklist_checker(b.value());
    Status s = check(kGood);
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("data breach"), std::string::npos);
    EXPECT_TRUE(check(kGood2));
}

TEST_F(BlocklistTest, RefusesMalformedFiles) {
    EXPECT_FALSE(pw::Blocklist::open(dir_ + "/missing"));
    std::string path = dir_ + "/odd.bin";
    std::ofstream(path, std::ios::binary) << "0123456789";
    auto odd = pw::Blocklist::open(path);
    ASSERT_FALSE(odd);
    EXPECT_NE(odd.error().message.find("multiple of 32"), std::string::npos);
    std::vector<std::string> list = {"a", "b", "c", "d", "e"};
    auto ok = pw::Blocklist::open(write(list, true));
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok.value()->size(), 5u);
    auto empty_path = dir_ + "/empty.bin";
    std::ofstream(empty_path, std::ios::binary).close();
    auto empty = pw::Blocklist::open(empty_path);
    ASSERT_TRUE(empty);
    EXPECT_FALSE(empty.value()->contains(kGood));
}

TEST_F(BlocklistTest, RefusesAnUnsortedFile) {
    std::string path = dir_ + "/unsorted.bin";
    std::string a(32, '\x02'), b(32, '\x01');
    std::ofstream(path, std::ios::binary) << a << b;
    auto r = pw::Blocklist::open(path);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("not sorted"), std::string::npos);
}

// ================================================================ attempt rules

TEST(AttemptRules, FiveFreeThenDoublingToAnHour) {
    AttemptLimits l;
    MemoryAttemptLimiter m(l);
    Millis now = kStart;
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(m.login_attempt("a", "c1", now), 0);
        m.login_failed("a", "c1", now);
    }
    EXPECT_EQ(m.login_attempt("a", "c1", now), 60 * kSecond);  // 6th must wait 60 s
    EXPECT_EQ(m.login_attempt("a", "c2", now), 0);             // another client is not held back
    std::vector<Millis> waits;
    for (int i = 0; i < 8; ++i) {
        now += m.login_attempt("a", "c1", now);
        EXPECT_EQ(m.login_attempt("a", "c1", now), 0);
        m.login_failed("a", "c1", now);
        waits.push_back(m.login_attempt("a", "c1", now));
    }
    EXPECT_EQ(waits[0], 120 * kSecond);
    EXPECT_EQ(waits[1], 240 * kSecond);
    EXPECT_EQ(waits[4], 1920 * kSecond);
    EXPECT_EQ(waits[5], 3600 * kSecond);  // capped at one hour
    EXPECT_EQ(waits[7], 3600 * kSecond);
}

TEST(AttemptRules, SuccessClearsThePairOnlyAndResetClearsTheAddress) {
    MemoryAttemptLimiter m(AttemptLimits{});
    for (int i = 0; i < 6; ++i) {
        m.login_failed("a", "c1", kStart);
        m.login_failed("a", "c2", kStart);
    }
    EXPECT_GT(m.login_attempt("a", "c1", kStart), 0);
    m.login_succeeded("a", "c1");
    EXPECT_EQ(m.login_attempt("a", "c1", kStart), 0);
    EXPECT_GT(m.login_attempt("a", "c2", kStart), 0);  // the other pair keeps its history
    m.reset_address("a");
    EXPECT_EQ(m.login_attempt("a", "c2", kStart), 0);
}

TEST(AttemptRules, HundredPerAddressPerMinuteFromAnyClient) {
    MemoryAttemptLimiter m(AttemptLimits{});
    for (int i = 0; i < 100; ++i) {
        EXPECT_EQ(m.login_attempt("a", "client-" + std::to_string(i), kStart + i), 0) << i;
    }
    // the 101st within the minute waits: a sliding window, counted as the shared zone counts it
    const Millis wait = m.login_attempt("a", "client-new", kStart + 100);
    EXPECT_GE(wait, kMinute - 100);
    EXPECT_LE(wait, kMinute + kSecond);
    EXPECT_EQ(wait % kSecond, 0) << "whole seconds, as Retry-After says them";
    EXPECT_EQ(m.login_attempt("b", "client-new", kStart + 100), 0);  // per address
    EXPECT_GT(m.login_attempt("a", "client-new", kStart + kMinute - 1), 0) << "a minute holds 100";
    EXPECT_EQ(m.login_attempt("a", "client-new", kStart + 100 + wait), 0) << "never early: allowed when it said";
}

TEST(AttemptRules, RegistrationBackoffDoublesToAnHour) {
    MemoryAttemptLimiter m(AttemptLimits{});
    Millis now = kStart;
    EXPECT_EQ(m.register_attempt("a", now), 0);
    EXPECT_EQ(m.register_attempt("a", now), 60 * kSecond);
    now += 60 * kSecond;
    EXPECT_EQ(m.register_attempt("a", now), 0);
    EXPECT_EQ(m.register_attempt("a", now), 120 * kSecond);
    for (int i = 0; i < 10; ++i) now += m.register_attempt("a", now), (void)m.register_attempt("a", now);
    EXPECT_EQ(m.register_attempt("a", now), 3600 * kSecond);
    EXPECT_EQ(m.register_attempt("b", now), 0);
}

// ================================================================ engine

class PasswordEngine : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/signin-password-test-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        root_ = tmpl;
        LmdbOptions o;
        o.path = root_ + "/db";
        o.map_size = 1ull << 26;
        store_ = std::shared_ptr<Store>(open_lmdb_store(o));
        clock_ = std::make_shared<FakeClock>();
        policy_.allow_registration = true;
        policy_.with_passwords = true;
        make_identity();
    }
    void TearDown() override {
        id_.reset();
        store_.reset();
        std::filesystem::remove_all(root_);
    }
    void make_identity() {
        std::string why;
        auto o = parse_origin("http://127.0.0.1:8080", &why);
        id_ = std::make_unique<Identity>(store_, *o, policy_, outbox_.fn(), clock_);
    }
    Tokens &tokens() { return id_->tokens(); }
    Sessions &sessions() { return id_->sessions(); }
    Passwords &passwords() { return id_->passwords(); }
    std::optional<User> user(std::string_view email) { return store_->read()->user_by_email("default", email); }

    // registers with a password and exchanges the Registration token: the account exists
    Session register_with(std::string_view email, const char *password) {
        Status s = passwords().register_password_from(email, Secret(password), "198.51.100.7");
        EXPECT_TRUE(s) << s.error().message;
        EXPECT_EQ(outbox_.last().purpose, Purpose::Registration);
        auto sess = tokens().exchange_from(outbox_.last().token, "198.51.100.7");
        EXPECT_TRUE(sess) << sess.error().message;
        return sess ? sess.value() : Session{};
    }
    Session email_sign_in(std::string_view email) {
        clock_->advance(policy_.token_resend);
        EXPECT_TRUE(tokens().request_token_from(Intent::Login, email, "", "198.51.100.7"));
        auto s = tokens().exchange_from(outbox_.last().token, "198.51.100.7");
        EXPECT_TRUE(s);
        return s.value();
    }
    Principal principal(const Session &s) {
        auto p = sessions().authenticate_from(s.token, "", s.kind);
        EXPECT_TRUE(p) << p.error().message;
        return p.value();
    }
    User add_user(std::string email, bool suspended = false, std::string hash = {}) {
        User u;
        u.id = enc::uuid7(clock_->now());
        u.email = std::move(email);
        u.group_id = "default";
        u.created_at = u.updated_at = clock_->now();
        u.suspended = suspended;
        u.password_hash = std::move(hash);
        auto txn = store_->write();
        txn->put_user(u);
        txn->commit();
        return u;
    }
    std::vector<AuditEntry> audit(std::size_t n = 20) { return store_->read()->audit(n); }

    std::string root_;
    std::shared_ptr<Store> store_;
    std::shared_ptr<FakeClock> clock_;
    Policy policy_;
    Mailer outbox_;
    std::unique_ptr<Identity> id_;
};

TEST_F(PasswordEngine, DisabledByDefault) {
    policy_.with_passwords = false;
    make_identity();
    EXPECT_EQ(passwords().register_password_from("a@example.com", Secret(kGood), "c").error().code,
              Code::PasswordsDisabled);
    EXPECT_EQ(passwords().login_password_from("a@example.com", Secret(kGood), "c").error().code,
              Code::PasswordsDisabled);
    EXPECT_EQ(passwords().set_password(Principal{}, Secret(kGood)).error().code, Code::PasswordsDisabled);
    EXPECT_EQ(passwords().change_password_from(Principal{}, Secret(kGood), Secret(kGood2), "c").error().code,
              Code::PasswordsDisabled);
}

TEST_F(PasswordEngine, RegistrationKeepsOnlyTheHashUntilTheExchange) {
    ASSERT_TRUE(passwords().register_password_from("new@example.com", Secret(kGood), "c"));
    EXPECT_FALSE(user("new@example.com"));  // pending: no account yet
    Delivery d = outbox_.last();
    EXPECT_EQ(d.purpose, Purpose::Registration);
    auto rec = store_->read()->token(record_key(d.token.reveal()));
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->password_hash.rfind("$argon2id$v=19$m=19456,t=2,p=1$", 0), 0u);
    EXPECT_EQ(rec->password_hash.find(kGood), std::string::npos);
    ASSERT_TRUE(tokens().exchange_from(d.token, "c"));
    auto u = user("new@example.com");
    ASSERT_TRUE(u);
    EXPECT_TRUE(pw::verify(u->password_hash, kGood));
    auto s = passwords().login_password_from("new@example.com", Secret(kGood), "c");
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(principal(s.value()).session.method, SignInMethod::Password);
}

TEST_F(PasswordEngine, APasswordRegistrationDoesNotStandInForTheOwnersOwnRegistration) {
    // Someone registers victim@ with a password they chose: the email says so, and the owner's
    // own /register within the resend window still sends them a fresh, password-less token.
    ASSERT_TRUE(passwords().register_password_from("victim@example.com", Secret(kGood), "attacker"));
    Delivery theirs = outbox_.last();
    EXPECT_TRUE(theirs.with_password);
    EXPECT_NE(json::delivery(theirs, Emails().render(theirs, "http://127.0.0.1:8080")).find("\"password\":true"), std::string::npos);
    EXPECT_NE(json::delivery(theirs, Emails().render(theirs, "http://127.0.0.1:8080")).find("A password was chosen"), std::string::npos);
    const std::size_t before = outbox_.count();
    ASSERT_TRUE(tokens().request_token_from(Intent::Register, "victim@example.com", "", "owner"));
    ASSERT_EQ(outbox_.count(), before + 1) << "the owner's registration was swallowed by the waiting token";
    Delivery mine = outbox_.last();
    EXPECT_FALSE(mine.with_password);
    ASSERT_TRUE(tokens().exchange_from(mine.token, "owner"));
    auto u = user("victim@example.com");
    ASSERT_TRUE(u);
    EXPECT_TRUE(u->password_hash.empty()) << "the account got the password someone else chose";
    // and a plain registration still waits for a plain one
    ASSERT_TRUE(tokens().request_token_from(Intent::Register, "other@example.com", "", "c"));
    const std::size_t n = outbox_.count();
    ASSERT_TRUE(tokens().request_token_from(Intent::Register, "other@example.com", "", "c"));
    EXPECT_EQ(outbox_.count(), n);
}

TEST_F(PasswordEngine, RegistrationNeedsRegistrationEnabledAndThePolicy) {
    policy_.allow_registration = false;
    make_identity();
    EXPECT_EQ(passwords().register_password_from("a@example.com", Secret(kGood), "c").error().code,
              Code::RegistrationDisabled);
    policy_.allow_registration = true;
    make_identity();
    auto weak = passwords().register_password_from("a@example.com", Secret("password123"), "c");
    ASSERT_FALSE(weak);
    EXPECT_EQ(weak.error().code, Code::WeakPassword);
    EXPECT_EQ(outbox_.count(), 0u);
}

// With email sign-in off a password registration is refused before its password is hashed: an
// Argon2id hash for a request that can only fail would be work given away to anyone.
TEST_F(PasswordEngine, RegistrationWithEmailOffIsRefusedBeforeTheHash) {
    policy_.with_email = false;
    make_identity();
    const auto started = std::chrono::steady_clock::now();
    auto r = passwords().prepare_password_registration("a@example.com", Secret(kGood), "");
    const auto took = std::chrono::steady_clock::now() - started;
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Code::EmailDisabled);
    EXPECT_LT(took, std::chrono::milliseconds(5)) << "no hash was computed";
}

TEST_F(PasswordEngine, RegisteringAnExistingAccountNeverReplacesOrAttachesAPassword) {
    register_with("has@example.com", kGood);
    const std::string before = user("has@example.com")->password_hash;
    clock_->advance(2 * kMinute);
    ASSERT_TRUE(passwords().register_password_from("has@example.com", Secret(kGood2), "c"));
    Delivery d = outbox_.last();
    EXPECT_EQ(d.purpose, Purpose::AlreadyRegistered);
    EXPECT_TRUE(store_->read()->token(record_key(d.token.reveal()))->password_hash.empty());
    ASSERT_TRUE(tokens().exchange_from(d.token, "c"));  // it signs the owner in
    EXPECT_EQ(user("has@example.com")->password_hash, before);

    add_user("emailonly@example.com");
    ASSERT_TRUE(passwords().register_password_from("emailonly@example.com", Secret(kGood2), "c"));
    EXPECT_EQ(outbox_.last().purpose, Purpose::AlreadyRegistered);
    ASSERT_TRUE(tokens().exchange_from(outbox_.last().token, "c"));
    EXPECT_TRUE(user("emailonly@example.com")->password_hash.empty());
}

TEST_F(PasswordEngine, RepeatedRegistrationBacksOff) {
    ASSERT_TRUE(passwords().register_password_from("r@example.com", Secret(kGood), "c1"));
    auto again = passwords().register_password_from("r@example.com", Secret(kGood), "c2");
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().code, Code::RateLimited);
    EXPECT_EQ(again.error().retry_after, kMinute);
    clock_->advance(kMinute);
    EXPECT_TRUE(passwords().register_password_from("r@example.com", Secret(kGood), "c1"));
    EXPECT_EQ(passwords().register_password_from("r@example.com", Secret(kGood), "c1").error().retry_after,
              2 * kMinute);
}

TEST_F(PasswordEngine, SignInIsNfcAndUntrimmed) {
    register_with("n@example.com", "caf\x65\xCC\x81 violet tractor");  // decomposed é
    EXPECT_TRUE(passwords().login_password_from("n@example.com", Secret("caf\xC3\xA9 violet tractor"), "c"));
    EXPECT_TRUE(passwords().login_password_from("n@example.com", Secret("caf\x65\xCC\x81 violet tractor"), "c"));
    EXPECT_EQ(passwords().login_password_from("n@example.com", Secret("caf\xC3\xA9 violet tractor "), "c").error().code,
              Code::InvalidCredentials);
}

TEST_F(PasswordEngine, TheStepTypeSaysSignedIn) {
    register_with("s@example.com", kGood);
    auto step = passwords().login_password_step("s@example.com", Secret(kGood), "c", SessionKind::Bearer);
    ASSERT_TRUE(step) << step.error().message;
    EXPECT_TRUE(step->signed_in());
    EXPECT_EQ(step->state, SignInStep::State::SignedIn);
    ASSERT_TRUE(step->session);
    EXPECT_EQ(step->session->kind, SessionKind::Bearer);
    EXPECT_TRUE(step->pending_user_id.empty());
    SignInStep pending;
    pending.state = SignInStep::State::SecondFactorPending;
    EXPECT_FALSE(pending.signed_in());
}

TEST_F(PasswordEngine, FourFailureCausesGiveOneAnswerAndTheSameWork) {
    register_with("real@example.com", kGood);
    add_user("nopass@example.com");
    add_user("suspended@example.com", true, pw::hash(kGood).value());
    struct Case {
        const char *email;
        const char *password;
    } cases[] = {{"real@example.com", kGood2},
                 {"unknown@example.com", kGood},
                 {"nopass@example.com", kGood},
                 {"suspended@example.com", kGood}};
    std::vector<double> ms;
    std::string body;
    for (const auto &c : cases) {
        auto t0 = std::chrono::steady_clock::now();
        auto r = passwords().login_password_from(c.email, Secret(c.password), "c-" + std::string(c.email));
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        ASSERT_FALSE(r) << c.email;
        EXPECT_EQ(r.error().code, Code::InvalidCredentials) << c.email;
        if (body.empty()) body = r.error().message;
        EXPECT_EQ(r.error().message, body);
    }
    // every cause runs a full Argon2id verification (several ms each)
    for (double m : ms) EXPECT_GT(m, 3.0);
    // login.failed on real accounts only
    int failed = 0, unknown = 0;
    for (const auto &e : audit()) {
        if (e.kind == "login.failed") ++failed;
        if (e.kind == "login.unknown_address") ++unknown;
    }
    EXPECT_EQ(failed, 3);
    EXPECT_EQ(unknown, 1);
}

TEST_F(PasswordEngine, AttemptLimitsOnSignIn) {
    register_with("lim@example.com", kGood);
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(passwords().login_password_from("lim@example.com", Secret(kGood2), "c1").error().code,
                  Code::InvalidCredentials);
    }
    auto limited = passwords().login_password_from("lim@example.com", Secret(kGood), "c1");
    ASSERT_FALSE(limited);  // even the right password waits
    EXPECT_EQ(limited.error().code, Code::RateLimited);
    EXPECT_EQ(limited.error().retry_after, kMinute);
    EXPECT_TRUE(passwords().login_password_from("lim@example.com", Secret(kGood), "c2"));  // another client
    clock_->advance(kMinute);
    EXPECT_TRUE(passwords().login_password_from("lim@example.com", Secret(kGood), "c1"));  // success clears the pair
    for (int i = 0; i < 5; ++i) (void)passwords().login_password_from("lim@example.com", Secret(kGood2), "c1");
    EXPECT_EQ(passwords().login_password_from("lim@example.com", Secret(kGood2), "c1").error().code, Code::RateLimited);
}

TEST_F(PasswordEngine, AnotherLimiterCanBeInstalled) {
    struct Deny final : AttemptLimiter {
        Millis login_attempt(std::string_view, std::string_view, Millis) override { return 5000; }
        void login_failed(std::string_view, std::string_view, Millis) override {}
        void login_succeeded(std::string_view, std::string_view) override {}
        void reset_address(std::string_view) override {}
        Millis register_attempt(std::string_view, Millis) override { return 7000; }
    };
    passwords().with_attempt_limiter(std::make_shared<Deny>());
    EXPECT_EQ(passwords().login_password_from("x@example.com", Secret(kGood), "c").error().retry_after, 5000);
    EXPECT_EQ(passwords().register_password_from("x@example.com", Secret(kGood), "c").error().retry_after, 7000);
}

TEST_F(PasswordEngine, SuccessfulSignInUpgradesAWeakerHash) {
    pw::HashParams weak;
    weak.opslimit = 1;
    weak.memlimit = 8 * 1024 * 1024;
    add_user("old@example.com", false, pw::hash(kGood, weak).value());
    EXPECT_FALSE(passwords().login_password_from("old@example.com", Secret(kGood2), "c"));
    EXPECT_NE(user("old@example.com")->password_hash.find("m=8192,t=1"), std::string::npos);  // not on failure
    ASSERT_TRUE(passwords().login_password_from("old@example.com", Secret(kGood), "c"));
    const std::string now_hash = user("old@example.com")->password_hash;
    EXPECT_EQ(now_hash.rfind("$argon2id$v=19$m=19456,t=2,p=1$", 0), 0u) << now_hash;
    EXPECT_TRUE(pw::verify(now_hash, kGood));
}

TEST_F(PasswordEngine, SetPasswordNeedsAFreshEmailTokenSession) {
    add_user("f@example.com");
    Session s = email_sign_in("f@example.com");
    Session other = email_sign_in("f@example.com");
    Principal p = principal(s);
    ASSERT_TRUE(passwords().set_password(p, Secret(kGood), "c")) << "fresh email session";
    EXPECT_TRUE(pw::verify(user("f@example.com")->password_hash, kGood));
    EXPECT_FALSE(sessions().authenticate_from(other.token, "", SessionKind::Cookie));  // every other session ended
    EXPECT_TRUE(sessions().authenticate_from(s.token, "", SessionKind::Cookie));      // this one stays

    // a password-made session is not fresh, whatever its age
    auto by_pw = passwords().login_password_from("f@example.com", Secret(kGood), "c");
    ASSERT_TRUE(by_pw);
    EXPECT_EQ(passwords().set_password(principal(by_pw.value()), Secret(kGood2)).error().code,
              Code::FreshSessionRequired);
    // an email-token session older than ten minutes is not either
    clock_->advance(10 * kMinute);
    EXPECT_EQ(passwords().set_password(principal(s), Secret(kGood2)).error().code, Code::FreshSessionRequired);
    // the policy applies
    Session fresh = email_sign_in("f@example.com");
    auto weak = passwords().set_password(principal(fresh), Secret("qwertyuiopasdfgh"));
    EXPECT_EQ(weak.error().code, Code::WeakPassword);
    // a checker applies, and an error refuses
    passwords().with_password_check([](std::string_view candidate) -> Status {
        if (candidate.find("orange") != std::string_view::npos) return Error{Code::InvalidRequest, "no fruit, please"};
        return ok_status();
    });
    auto refused = passwords().set_password(principal(fresh), Secret(kGood2));
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, Code::WeakPassword);
    EXPECT_EQ(refused.error().message, "no fruit, please");
}

TEST_F(PasswordEngine, ResetClearsTheAddressAttemptHistory) {
    register_with("reset@example.com", kGood);
    for (int i = 0; i < 6; ++i) (void)passwords().login_password_from("reset@example.com", Secret(kGood2), "c1");
    for (int i = 0; i < 6; ++i) (void)passwords().login_password_from("reset@example.com", Secret(kGood2), "c2");
    EXPECT_EQ(passwords().login_password_from("reset@example.com", Secret(kGood), "c1").error().code,
              Code::RateLimited);
    Session fresh = email_sign_in("reset@example.com");
    ASSERT_TRUE(passwords().set_password(principal(fresh), Secret(kGood2)));
    EXPECT_TRUE(passwords().login_password_from("reset@example.com", Secret(kGood2), "c1"));
    EXPECT_TRUE(passwords().login_password_from("reset@example.com", Secret(kGood2), "c2"));
}

TEST_F(PasswordEngine, ChangePasswordRules) {
    add_user("nopw@example.com");
    Session np = email_sign_in("nopw@example.com");
    EXPECT_EQ(passwords().change_password_from(principal(np), Secret(kGood), Secret(kGood2), "c").error().code,
              Code::NoPassword);

    register_with("ch@example.com", kGood);
    auto a = passwords().login_password_from("ch@example.com", Secret(kGood), "c");
    auto b = passwords().login_password_from("ch@example.com", Secret(kGood), "c", SessionKind::Bearer);
    ASSERT_TRUE(a && b);
    const std::size_t sent = outbox_.count();
    auto wrong = passwords().change_password_from(principal(a.value()), Secret(kGood2), Secret(kGood2), "c");
    ASSERT_FALSE(wrong);
    EXPECT_EQ(wrong.error().code, Code::WrongPassword);
    auto entries = audit(100);  // entries of one millisecond have no order among themselves
    EXPECT_TRUE(std::any_of(entries.begin(), entries.end(), [](const AuditEntry &e) {
        return e.kind == "login.failed" && e.detail == "password_change";
    }));
    auto weak = passwords().change_password_from(principal(a.value()), Secret(kGood), Secret("Password12345678"), "c");
    EXPECT_EQ(weak.error().code, Code::WeakPassword);
    ASSERT_TRUE(passwords().change_password_from(principal(a.value()), Secret(kGood), Secret(kGood2), "c"));
    EXPECT_TRUE(pw::verify(user("ch@example.com")->password_hash, kGood2));
    EXPECT_TRUE(sessions().authenticate_from(a->token, "", SessionKind::Cookie));   // this session stays
    EXPECT_FALSE(sessions().authenticate_from(b->token, "", SessionKind::Bearer));  // every other ends
    ASSERT_EQ(outbox_.count(), sent + 1);
    EXPECT_EQ(outbox_.last().purpose, Purpose::PasswordChanged);
    EXPECT_TRUE(outbox_.last().token.empty());
    EXPECT_EQ(outbox_.last().email, "ch@example.com");
}

// The halves run apart in the module (Argon2id in a hashing thread, the write in a write batch):
// whatever happens to the account between them wins over the verified password.
TEST_F(PasswordEngine, SignInHalvesRecheckTheAccountBeforeWriting) {
    register_with("half@example.com", kGood);
    const std::size_t before = store_->read()->sessions_of(user("half@example.com")->id).size();

    auto check = passwords().check_password_login("half@example.com", Secret(kGood), "c");
    ASSERT_TRUE(check) << check.error().message;
    EXPECT_TRUE(check->matched());
    EXPECT_EQ(store_->read()->sessions_of(user("half@example.com")->id).size(), before) << "the verify half writes nothing";
    Session fresh = email_sign_in("half@example.com");  // the password is reset meanwhile
    ASSERT_TRUE(passwords().set_password(principal(fresh), Secret(kGood2)));
    auto late = passwords().finish_password_login(check.value());
    ASSERT_FALSE(late);
    EXPECT_EQ(late.error().code, Code::InvalidCredentials);

    auto again = passwords().check_password_login("half@example.com", Secret(kGood2), "c");
    ASSERT_TRUE(again && again->matched());
    ASSERT_TRUE(id_->set_suspended("default", "half@example.com", true));  // suspended meanwhile
    EXPECT_EQ(passwords().finish_password_login(again.value()).error().code, Code::InvalidCredentials);
    ASSERT_TRUE(id_->set_suspended("default", "half@example.com", false));

    auto wrong = passwords().check_password_login("half@example.com", Secret(kGood), "c");
    ASSERT_TRUE(wrong);
    EXPECT_FALSE(wrong->matched());
    const std::size_t audited = audit(1000).size();
    EXPECT_EQ(passwords().finish_password_login(wrong.value()).error().code, Code::InvalidCredentials);
    auto entries = audit(1000);
    EXPECT_EQ(entries.size(), audited + 1) << "the write half records the failure";
    EXPECT_TRUE(std::any_of(entries.begin(), entries.end(), [](const AuditEntry &e) {
        return e.kind == "login.failed" && e.detail == "wrong_password";
    }));
}

TEST_F(PasswordEngine, ChangeHalvesRefuseAPasswordThatMovedMeanwhile) {
    register_with("mv@example.com", kGood);
    auto a = passwords().login_password_from("mv@example.com", Secret(kGood), "c");
    ASSERT_TRUE(a);
    const Principal p = principal(a.value());
    auto update = passwords().check_password_change(p, Secret(kGood), Secret(kGood2), "c");
    ASSERT_TRUE(update) << update.error().message;
    EXPECT_TRUE(pw::verify(user("mv@example.com")->password_hash, kGood)) << "the hash half writes nothing";

    ASSERT_TRUE(passwords().change_password_from(p, Secret(kGood), Secret(kGood3), "c"));  // another change wins
    auto late = passwords().store_password_change(p, update.value(), "c");
    ASSERT_FALSE(late);
    EXPECT_EQ(late.error().code, Code::WrongPassword);
    EXPECT_TRUE(pw::verify(user("mv@example.com")->password_hash, kGood3));

    // set: the session that asked must still exist when the write runs
    Session fresh = email_sign_in("mv@example.com");
    const Principal fp = principal(fresh);
    auto set = passwords().prepare_set_password(fp, Secret(kGood2));
    ASSERT_TRUE(set) << set.error().message;
    ASSERT_TRUE(sessions().logout(fp, "c"));
    EXPECT_EQ(passwords().store_set_password(fp, set.value(), "c").error().code, Code::Unauthenticated);
    EXPECT_TRUE(pw::verify(user("mv@example.com")->password_hash, kGood3));
}

}  // namespace

TEST(AttemptRules, IPv6ClientsAreCountedByTheirPrefix) {
    EXPECT_EQ(client_key("2001:db8:1:2:aaaa:bbbb:cccc:dddd", 64), "2001:db8:1:2::/64");
    EXPECT_EQ(client_key("2001:db8:1:2:aaaa:bbbb:cccc:dddd", 48), "2001:db8:1::/48");
    EXPECT_EQ(client_key("2001:db8:1:2:aaaa:bbbb:cccc:dddd", 60), "2001:db8:1::/60");
    EXPECT_EQ(client_key("2001:db8:1:2:aaaa:bbbb:cccc:dddd", 128), "2001:db8:1:2:aaaa:bbbb:cccc:dddd/128");
    EXPECT_EQ(client_key("10.0.0.1", 64), "10.0.0.1") << "IPv4 is itself";
    EXPECT_EQ(client_key("not:an:address:::", 64), "not:an:address:::") << "not an address: itself";
    EXPECT_EQ(client_key("", 64), "");
    // one host holds a whole /64: its addresses share one pair backoff
    MemoryAttemptLimiter m(AttemptLimits{});
    for (int i = 0; i < 5; ++i) m.login_failed("a", "2001:db8::" + std::to_string(i + 1), kStart);
    EXPECT_GT(m.login_attempt("a", "2001:db8::99", kStart), 0);
    EXPECT_EQ(m.login_attempt("a", "2001:db8:0:1::1", kStart), 0) << "another /64 is another client";
}
