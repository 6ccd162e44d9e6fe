// Second factors (mfa.hpp, totp.hpp), every rule with a fake clock. The TOTP codes
// are made by liboath's generator from the base32 secret the setup returned (another code path
// than the module's checks); the nginx tests use Debian's oathtool.
#include <gtest/gtest.h>
#include <liboath/oath.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "engine_fixtures.hpp"
#include "signin/auth.hpp"
#include "signin/totp.hpp"

using namespace signin;

namespace {

// A 6-digit code of `secret_b32` at unix time `at_ms` (liboath's generator).
std::string code_at(const std::string &secret_b32, Millis at_ms) {
    char *raw = nullptr;
    size_t len = 0;
    EXPECT_EQ(oath_base32_decode(secret_b32.data(), secret_b32.size(), &raw, &len), OATH_OK);
    char out[16] = {};
    EXPECT_EQ(oath_totp_generate(raw, len, static_cast<time_t>(at_ms / 1000), 30, 0, 6, out), OATH_OK);
    std::free(raw);
    return out;
}

std::string raw_secret(const std::string &secret_b32) {
    char *raw = nullptr;
    size_t len = 0;
    EXPECT_EQ(oath_base32_decode(secret_b32.data(), secret_b32.size(), &raw, &len), OATH_OK);
    std::string out(raw, len);
    std::free(raw);
    return out;
}

class MfaTest : public signin::testing::EngineTest {
protected:
    void SetUp() override {
        EngineTest::SetUp();
        make(true);
    }
    void make(bool with_mfa, bool with_key = true, unsigned lock_failures = 100) {
        Policy policy;
        policy.mfa_lock_failures = lock_failures;
        policy.allow_registration = true;
        policy.token_resend = 0;
        policy.with_mfa = with_mfa;
        policy.with_passwords = true;
        policy.mfa_issuer = "Acme Tools";
        EngineTest::make(policy, with_key);
    }
    Delivery request(std::string_view email) {
        EXPECT_TRUE(id_->tokens().request_token(Intent::Register, email, ""));
        return mailer_.last();
    }
    // Turns TOTP on for the user of s; returns the base32 secret and the recovery codes.
    std::pair<std::string, std::vector<std::string>> enroll(const Session &s) {
        auto setup = id_->mfa().setup_totp(principal(s), "c");
        EXPECT_TRUE(setup) << setup.error().message;
        std::string secret(setup->secret.reveal());
        auto codes = id_->mfa().confirm_totp(principal(s), code_at(secret, clock_->now()), "c");
        EXPECT_TRUE(codes) << codes.error().message;
        return {secret, codes.value()};
    }
    // An email sign-in of a user with a factor: the pending step.
    SignInStep step(std::string_view email, const Secret *device = nullptr) {
        BrowserCookies browser;
        if (device != nullptr) browser.device = *device;
        auto st = id_->tokens().exchange_step_from(request(email).token, "198.51.100.2", SessionKind::Cookie, "ua",
                                                   &browser);
        EXPECT_TRUE(st) << st.error().message;
        return st.value();
    }
    std::size_t sessions_of(const std::string &user_id) { return store_->read()->sessions_of(user_id).size(); }
};

TEST(Totp, MatchesTheStepsOfTheWindowOnly) {
    const std::string secret = totp::new_secret();
    ASSERT_EQ(secret.size(), 20u);
    const std::string b32 = totp::base32(secret);
    EXPECT_EQ(b32.size(), 32u);
    EXPECT_EQ(b32.find('='), std::string::npos);
    const Millis now = signin::testing::kStart;
    const std::int64_t step = now / 1000 / 30;
    EXPECT_EQ(totp::match(secret, code_at(b32, now), now / 1000), step);
    EXPECT_EQ(totp::match(secret, code_at(b32, now - 30000), now / 1000), step - 1);
    EXPECT_EQ(totp::match(secret, code_at(b32, now + 30000), now / 1000), step + 1);
    EXPECT_FALSE(totp::match(secret, code_at(b32, now - 60000), now / 1000)) << "two steps back";
    EXPECT_FALSE(totp::match(secret, code_at(b32, now + 60000), now / 1000)) << "two steps ahead";
    const std::string c = code_at(b32, now);
    EXPECT_EQ(totp::match(secret, c.substr(0, 3) + " " + c.substr(3), now / 1000), step) << "a space is ignored";
    EXPECT_FALSE(totp::match(secret, "12345", now / 1000));
    EXPECT_FALSE(totp::match(secret, "1234567", now / 1000));
    EXPECT_FALSE(totp::match(secret, "12345a", now / 1000));
    EXPECT_FALSE(totp::match(secret, "", now / 1000));
}

TEST(Totp, EnrollmentUriAndQrCode) {
    const std::string secret(20, '\x01');
    const std::string uri = totp::otpauth_uri("Acme Tools", "ann@example.com", secret);
    EXPECT_EQ(uri, "otpauth://totp/Acme%20Tools%3Aann%40example.com?secret=" + totp::base32(secret) +
                       "&issuer=Acme%20Tools&algorithm=SHA1&digits=6&period=30");
    const std::string svg = totp::qr_svg(uri);
    EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
    EXPECT_NE(svg.find("h1v1h-1z"), std::string::npos) << "it has modules";
    EXPECT_EQ(svg.find("<script"), std::string::npos);
    EXPECT_THROW(totp::qr_svg(std::string(8000, 'x')), std::runtime_error) << "too long for a QR code";
}

TEST_F(MfaTest, OffMeansOff) {
    Session s = sign_in("off@example.com");
    make(false);
    EXPECT_EQ(id_->mfa().status(principal(s)).error().code, Code::MfaDisabled);
    EXPECT_EQ(id_->mfa().setup_totp(principal(s), "c").error().code, Code::MfaDisabled);
    EXPECT_EQ(id_->mfa().verify(Secret(std::string(43, 'a')), "123456", "", false, "c").error().code,
              Code::MfaDisabled);
}

TEST_F(MfaTest, SetupNeedsAFreshSessionAndTheKey) {
    Session s = sign_in("fresh@example.com");
    clock_->advance(id_->policy().fresh_window);
    auto late = id_->mfa().setup_totp(principal(s), "c");
    ASSERT_FALSE(late);
    EXPECT_EQ(late.error().code, Code::FreshSessionRequired);
    Session again = sign_in("fresh@example.com");
    make(true, false);
    EXPECT_EQ(id_->mfa().setup_totp(principal(again), "c").error().code, Code::Internal) << "no secret key";
}

TEST_F(MfaTest, SetupGivesWhatAnAppNeeds) {
    Session s = sign_in("app@example.com");
    auto setup = id_->mfa().setup_totp(principal(s), "c");
    ASSERT_TRUE(setup) << setup.error().message;
    const std::string secret(setup->secret.reveal());
    EXPECT_EQ(secret.size(), 32u);
    EXPECT_NE(setup->otpauth_uri.find("otpauth://totp/Acme%20Tools%3Aapp%40example.com?secret=" + secret),
              std::string::npos);
    EXPECT_EQ(setup->qr_svg.rfind("<svg", 0), 0u);
    auto status = id_->mfa().status(principal(s));
    ASSERT_TRUE(status);
    EXPECT_FALSE(status->totp) << "pending until confirmed";
    // still one factor until then: email alone signs in
    EXPECT_TRUE(id_->tokens().exchange_from(request("app@example.com").token, "c"));
}

TEST_F(MfaTest, TheSecretIsNotInTheStoreInClear) {
    Session s = sign_in("sealed@example.com");
    auto [secret, codes] = enroll(s);
    const std::string raw = raw_secret(secret);
    const std::string bytes = stored_bytes();
    ASSERT_FALSE(bytes.empty());
    EXPECT_EQ(bytes.find(raw), std::string::npos) << "the raw secret";
    EXPECT_EQ(bytes.find(secret), std::string::npos) << "its base32";
    for (const auto &c : codes) EXPECT_EQ(bytes.find(c), std::string::npos) << "a recovery code";
    for (const auto &e : store_->read()->audit(100)) {
        EXPECT_EQ(e.detail.find(secret), std::string::npos);
    }
}

TEST_F(MfaTest, ConfirmTurnsItOnAndEndsOtherSessions) {
    Session other = sign_in("on@example.com");
    Session s = sign_in("on@example.com");
    auto setup = id_->mfa().setup_totp(principal(s), "c");
    ASSERT_TRUE(setup);
    const std::string secret(setup->secret.reveal());
    auto wrong = id_->mfa().confirm_totp(principal(s), "000000" == code_at(secret, clock_->now()) ? "111111" : "000000",
                                         "c");
    ASSERT_FALSE(wrong);
    EXPECT_EQ(wrong.error().code, Code::InvalidCode);
    auto codes = id_->mfa().confirm_totp(principal(s), code_at(secret, clock_->now()), "c");
    ASSERT_TRUE(codes) << codes.error().message;
    EXPECT_EQ(codes->size(), Mfa::kRecoveryCodes);
    EXPECT_FALSE(id_->sessions().authenticate_from(other.token, "c")) << "every other session ended";
    auto mine = id_->sessions().authenticate_from(s.token, "c");
    ASSERT_TRUE(mine);
    EXPECT_TRUE(mine->session.mfa) << "this session showed the factor";
    auto status = id_->mfa().status(principal(s));
    EXPECT_TRUE(status->totp);
    EXPECT_EQ(status->recovery_codes_left, 10u);
}

TEST_F(MfaTest, EmailAloneNeverSignsInAUserWithAFactor) {
    Session s = sign_in("two@example.com");
    enroll(s);
    const std::string user_id = s.user.id;
    const std::size_t before = sessions_of(user_id);
    auto direct = id_->tokens().exchange_from(request("two@example.com").token, "c");
    ASSERT_FALSE(direct);
    EXPECT_EQ(direct.error().code, Code::MfaRequired);
    Delivery d = request("two@example.com");
    auto by_code = id_->tokens().exchange_code_from("two@example.com", d.code, "", "c");
    ASSERT_FALSE(by_code);
    EXPECT_EQ(by_code.error().code, Code::MfaRequired);
    EXPECT_FALSE(id_->tokens().exchange_from(d.token, "c")) << "the code spent the token";
    SignInStep st = step("two@example.com");
    EXPECT_EQ(st.state, SignInStep::State::SecondFactorPending);
    EXPECT_FALSE(st.session);
    EXPECT_EQ(st.mfa_token.reveal().size(), 43u);
    EXPECT_EQ(st.mfa_expires_at, clock_->now() + 5 * 60 * 1000);
    EXPECT_EQ(st.methods, (std::vector<std::string>{"totp", "recovery_code"}));
    EXPECT_EQ(sessions_of(user_id), before) << "no session was made";
}

TEST_F(MfaTest, PasswordSignInStopsAtTheFactorToo) {
    Session s = sign_in("pw@example.com");
    ASSERT_TRUE(id_->passwords().set_password(principal(s), Secret(std::string("correct horse battery"))));
    const std::string secret = enroll(s).first;
    clock_->advance(30000);
    auto st = id_->passwords().login_password_step("pw@example.com", Secret(std::string("correct horse battery")), "c");
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_EQ(st->state, SignInStep::State::SecondFactorPending);
    auto direct = id_->passwords().login_password_from("pw@example.com", Secret(std::string("correct horse battery")), "c");
    ASSERT_FALSE(direct);
    EXPECT_EQ(direct.error().code, Code::MfaRequired);
    auto done = id_->mfa().verify(st->mfa_token, code_at(secret, clock_->now()), "", false, "c");
    ASSERT_TRUE(done) << done.error().message;
    auto p = id_->sessions().authenticate_from(done->session.token, "c");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->session.method, SignInMethod::Password) << "the way in is kept";
    EXPECT_TRUE(p->session.mfa);
}

TEST_F(MfaTest, ACodeIsAcceptedOnceAndOnlyInItsWindow) {
    Session s = sign_in("step@example.com");
    auto [secret, codes] = enroll(s);
    // the step used to confirm is spent: its code does not finish a sign-in
    SignInStep a = step("step@example.com");
    auto replay = id_->mfa().verify(a.mfa_token, code_at(secret, clock_->now()), "", false, "c");
    ASSERT_FALSE(replay);
    EXPECT_EQ(replay.error().code, Code::InvalidCode);
    clock_->advance(30000);
    auto ok = id_->mfa().verify(a.mfa_token, code_at(secret, clock_->now()), "", false, "c");
    ASSERT_TRUE(ok) << ok.error().message;
    EXPECT_TRUE(ok->session.token.reveal().size() > 0);
    auto p = id_->sessions().authenticate_from(ok->session.token, "c");
    ASSERT_TRUE(p);
    EXPECT_TRUE(p->session.mfa);
    EXPECT_EQ(p->session.method, SignInMethod::EmailToken);
    EXPECT_FALSE(id_->mfa().verify(a.mfa_token, code_at(secret, clock_->now() + 30000), "", false, "c"))
        << "a finished sign-in cannot be finished again";
    // the same code for another sign-in: refused (a step once accepted is never accepted again)
    SignInStep b = step("step@example.com");
    EXPECT_FALSE(id_->mfa().verify(b.mfa_token, code_at(secret, clock_->now()), "", false, "c"));
    // the next step's code (one step ahead: within the window)
    EXPECT_TRUE(id_->mfa().verify(b.mfa_token, code_at(secret, clock_->now() + 30000), "", false, "c"));
    // two steps ahead is outside the window; then the previous step is behind the last accepted
    SignInStep c = step("step@example.com");
    EXPECT_FALSE(id_->mfa().verify(c.mfa_token, code_at(secret, clock_->now() + 90000), "", false, "c"));
    clock_->advance(4 * 30000);  // within the pending sign-in's five minutes
    EXPECT_FALSE(id_->mfa().verify(c.mfa_token, code_at(secret, clock_->now() - 60000), "", false, "c"))
        << "two steps back";
    EXPECT_TRUE(id_->mfa().verify(c.mfa_token, code_at(secret, clock_->now() - 30000), "", false, "c"))
        << "one step back";
}

TEST_F(MfaTest, FiveWrongCodesEndThePendingSignIn) {
    Session s = sign_in("five@example.com");
    auto [secret, codes] = enroll(s);
    clock_->advance(30000);
    SignInStep st = step("five@example.com");
    const std::string right = code_at(secret, clock_->now());
    const std::string wrong = right == "000000" ? "111111" : "000000";
    for (int i = 0; i < 4; i++) {
        EXPECT_EQ(id_->mfa().verify(st.mfa_token, wrong, "", false, "c").error().code, Code::InvalidCode);
    }
    EXPECT_EQ(id_->mfa().verify(st.mfa_token, wrong, "", false, "c").error().code, Code::InvalidCode);
    auto after = id_->mfa().verify(st.mfa_token, right, "", false, "c");
    ASSERT_FALSE(after);
    EXPECT_EQ(after.error().code, Code::InvalidToken) << "dead after five";
    bool locked = false;
    for (const auto &e : store_->read()->audit(20)) locked = locked || e.kind == "mfa.locked";
    EXPECT_TRUE(locked);
}

// Wrong codes count for the account, whatever pending sign-in or client sends them: many pending
// sign-ins (a password or an email token each) give no more guesses than one.
TEST_F(MfaTest, TenWrongCodesInARowMakeEveryFurtherTryWaitDoubling) {
    Session s = sign_in("guess@example.com");
    auto [secret, codes] = enroll(s);
    clock_->advance(30000);
    const std::string right = code_at(secret, clock_->now());
    const std::string wrong = right == "000000" ? "111111" : "000000";
    for (int i = 0; i < 10; i++) {  // 4 pending sign-ins, at most 3 wrong codes each
        SignInStep st = step("guess@example.com");
        for (int j = 0; j < 3 && i < 10; j++, i++) {
            EXPECT_EQ(id_->mfa().verify(st.mfa_token, wrong, "", false, "c" + std::to_string(i)).error().code,
                      Code::InvalidCode);
        }
        i--;
    }
    SignInStep next = step("guess@example.com");
    auto waits = id_->mfa().verify(next.mfa_token, right, "", false, "another-client");
    ASSERT_FALSE(waits);
    EXPECT_EQ(waits.error().code, Code::RateLimited) << "the eleventh try waits, even with the right code";
    EXPECT_EQ(waits.error().retry_after, 60000);
    clock_->advance(60000);
    next = step("guess@example.com");
    EXPECT_EQ(id_->mfa().verify(next.mfa_token, wrong, "", false, "c").error().code, Code::InvalidCode);
    auto doubled = id_->mfa().verify(next.mfa_token, wrong, "", false, "c");
    EXPECT_EQ(doubled.error().code, Code::RateLimited);
    EXPECT_EQ(doubled.error().retry_after, 120000) << "the wait doubles";
    clock_->advance(120000);
    next = step("guess@example.com");
    auto ok = id_->mfa().verify(next.mfa_token, code_at(secret, clock_->now()), "", false, "c");
    ASSERT_TRUE(ok) << ok.error().message;
    auto m = store_->read()->mfa(s.user.id);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->failures, 0u) << "a right code clears the count";
    EXPECT_EQ(m->wait_until, 0);
    bool backoff = false;
    for (const auto &e : store_->read()->audit(200)) backoff = backoff || e.kind == "mfa.backoff";
    EXPECT_TRUE(backoff);
}

TEST_F(MfaTest, AtTheLockLimitTheFactorLocksUntilAnEmailSignInOrAReset) {
    make(true, true, 12);
    Session s = sign_in("lock@example.com");
    auto [secret, codes] = enroll(s);
    const Secret password("a long passphrase nobody guesses");
    auto pw = id_->passwords().set_password(principal(s), password);
    ASSERT_TRUE(pw) << pw.error().message;
    clock_->advance(30000);
    const std::string wrong = code_at(secret, clock_->now()) == "000000" ? "111111" : "000000";
    Code last = Code::Internal;
    for (int i = 0; i < 12; i++) {
        SignInStep st = step("lock@example.com");  // an email sign-in of an unlocked factor: no reset
        last = id_->mfa().verify(st.mfa_token, wrong, "", false, "c").error().code;
        clock_->advance(3600 * 1000);  // past any wait
    }
    EXPECT_EQ(last, Code::MfaLocked) << "the hundredth (here twelfth) wrong code locks";
    {
        auto m = store_->read()->mfa(s.user.id);
        ASSERT_TRUE(m);
        EXPECT_EQ(m->failures, 12u);
    }
    // a recovery code does not pass a locked factor either (a pending sign-in made by a password)
    auto pending = id_->passwords().login_password_step("lock@example.com", password, "c");
    ASSERT_TRUE(pending) << pending.error().message;
    ASSERT_EQ(pending->state, SignInStep::State::SecondFactorPending);
    EXPECT_EQ(id_->mfa().verify(pending->mfa_token, "", codes[0], false, "c").error().code, Code::MfaLocked);
    // an email sign-in opens it again; the next wrong code still waits
    SignInStep st = step("lock@example.com");
    bool unlocked = false, locked_entry = false;
    for (const auto &e : store_->read()->audit(500)) {
        unlocked = unlocked || e.kind == "mfa.unlocked";
        locked_entry = locked_entry || e.kind == "mfa.account_locked";
    }
    EXPECT_TRUE(unlocked && locked_entry);
    EXPECT_EQ(id_->mfa().verify(st.mfa_token, wrong, "", false, "c").error().code, Code::InvalidCode);
    EXPECT_EQ(id_->mfa().verify(st.mfa_token, "", codes[0], false, "c").error().code, Code::RateLimited);
    clock_->advance(3600 * 1000);
    st = step("lock@example.com");
    auto ok = id_->mfa().verify(st.mfa_token, "", codes[0], false, "c");
    ASSERT_TRUE(ok) << ok.error().message;
}

// The owner is told of the lock: one MfaLocked notice (no token, no code) to the account's
// address, from the wrong code that locked it and not from the tries refused afterwards.
TEST_F(MfaTest, TheLockEmailsTheOwnerOnce) {
    make(true, true, 3);
    Session s = sign_in("told@example.com");
    auto [secret, codes] = enroll(s);
    const Secret password("a long passphrase nobody guesses");
    ASSERT_TRUE(id_->passwords().set_password(principal(s), password));
    auto notices = [this] {
        std::lock_guard<std::mutex> lock(mailer_.mu);
        std::vector<Delivery> out;
        for (const Delivery &d : mailer_.sent) {
            if (d.purpose == Purpose::MfaLocked) out.push_back(d);
        }
        return out;
    };
    clock_->advance(30000);
    const std::string wrong = code_at(secret, clock_->now()) == "000000" ? "111111" : "000000";
    for (int i = 0; i < 3; i++) {
        EXPECT_TRUE(notices().empty()) << "nothing before the lock (wrong code " << i << ")";
        SignInStep st = step("told@example.com");
        EXPECT_EQ(id_->mfa().verify(st.mfa_token, wrong, "", false, "c").error().code,
                  i < 2 ? Code::InvalidCode : Code::MfaLocked);
        clock_->advance(3600 * 1000);
    }
    auto sent = notices();
    ASSERT_EQ(sent.size(), 1u) << "the third wrong code locks, and says so";
    EXPECT_EQ(sent[0].email, "told@example.com");
    EXPECT_EQ(sent[0].group_id, s.user.group_id);
    EXPECT_TRUE(sent[0].token.empty());
    EXPECT_TRUE(sent[0].code.empty());
    // a try on the locked factor (a pending sign-in made by the password) tells nobody again
    auto pending = id_->passwords().login_password_step("told@example.com", password, "c");
    ASSERT_TRUE(pending) << pending.error().message;
    ASSERT_EQ(pending->state, SignInStep::State::SecondFactorPending);
    EXPECT_EQ(id_->mfa().verify(pending->mfa_token, wrong, "", false, "c").error().code, Code::MfaLocked);
    EXPECT_EQ(notices().size(), 1u);
}

// With an outbox (the module's way), the notice is in the outbox from the locking transaction
// on, and handed to the caller to send at once; whoever does not send it leaves it to the sweep.
TEST_F(MfaTest, WithAnOutboxTheLockNoticeIsWrittenWithTheLock) {
    make(true, true, 2);
    OutboxSettings outbox;
    outbox.key.fill(9);
    outbox.hold = 60000;
    id_->use_outbox(outbox);
    Session s = sign_in("box@example.com");
    auto [secret, codes] = enroll(s);
    clock_->advance(30000);
    const std::string wrong = code_at(secret, clock_->now()) == "000000" ? "111111" : "000000";
    const std::size_t waiting = id_->outbox().pending().value();
    TokenIssue notice;
    SignInStep st = step("box@example.com");
    EXPECT_EQ(id_->mfa().verify(st.mfa_token, wrong, "", false, "c", SessionKind::Cookie, nullptr, &notice)
                  .error()
                  .code,
              Code::InvalidCode);
    EXPECT_FALSE(notice.delivery) << "a wrong code that does not lock tells nobody";
    st = step("box@example.com");
    EXPECT_EQ(id_->mfa().verify(st.mfa_token, wrong, "", false, "c", SessionKind::Cookie, nullptr, &notice)
                  .error()
                  .code,
              Code::MfaLocked);
    ASSERT_TRUE(notice.delivery);
    EXPECT_EQ(notice.delivery->purpose, Purpose::MfaLocked);
    EXPECT_EQ(notice.delivery->email, "box@example.com");
    EXPECT_TRUE(notice.delivery->token.empty());
    EXPECT_FALSE(notice.outbox_key.empty());
    EXPECT_EQ(id_->outbox().pending().value(), waiting + 1);
    {
        std::lock_guard<std::mutex> lock(mailer_.mu);
        for (const Delivery &d : mailer_.sent) EXPECT_NE(d.purpose, Purpose::MfaLocked) << "the caller sends it";
    }
    // nobody sent it: once the hold has passed, the sweep finds it
    clock_->advance(outbox.hold + 1);
    auto due = id_->outbox().claim_due(16);
    ASSERT_TRUE(due) << due.error().message;
    std::size_t found = 0;
    for (const OutboxItem &item : due.value()) {
        if (item.delivery.purpose == Purpose::MfaLocked && item.delivery.email == "box@example.com") found++;
    }
    EXPECT_EQ(found, 1u);
}

TEST_F(MfaTest, APendingSignInLivesFiveMinutes) {
    Session s = sign_in("late@example.com");
    auto [secret, codes] = enroll(s);
    SignInStep st = step("late@example.com");
    clock_->advance(5 * 60 * 1000);
    auto late = id_->mfa().verify(st.mfa_token, code_at(secret, clock_->now()), "", false, "c");
    ASSERT_FALSE(late);
    EXPECT_EQ(late.error().code, Code::InvalidToken);
}

TEST_F(MfaTest, RecoveryCodesAreSingleUseAndCounted) {
    Session s = sign_in("rc@example.com");
    auto [secret, codes] = enroll(s);
    ASSERT_EQ(codes.size(), 10u);
    EXPECT_EQ(codes[0].size(), 19u);  // XXXX-XXXX-XXXX-XXXX
    SignInStep a = step("rc@example.com");
    std::string typed = codes[3];
    for (auto &c : typed) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto ok = id_->mfa().verify(a.mfa_token, "", typed, false, "c");
    ASSERT_TRUE(ok) << ok.error().message;
    SignInStep b = step("rc@example.com");
    EXPECT_EQ(id_->mfa().verify(b.mfa_token, "", codes[3], false, "c").error().code, Code::InvalidCode)
        << "used once";
    EXPECT_EQ(id_->mfa().status(principal(ok->session)).value().recovery_codes_left, 9u);
    bool audited = false;
    for (const auto &e : store_->read()->audit(30)) audited = audited || e.kind == "mfa.recovery_used";
    EXPECT_TRUE(audited);
    // a new set voids the old one (fresh session needed)
    auto fresh = id_->mfa().new_recovery_codes(principal(ok->session), "c");
    ASSERT_TRUE(fresh) << fresh.error().message;
    SignInStep c = step("rc@example.com");
    EXPECT_FALSE(id_->mfa().verify(c.mfa_token, "", codes[4], false, "c")) << "the old set is void";
    EXPECT_TRUE(id_->mfa().verify(c.mfa_token, "", fresh->at(0), false, "c"));
    EXPECT_EQ(id_->mfa().verify(c.mfa_token, "123456", codes[5], false, "c").error().code, Code::InvalidRequest)
        << "one of code and recovery_code";
}

TEST_F(MfaTest, ARememberedDeviceSkipsTheFactorForItsUserOnly) {
    Session s = sign_in("dev@example.com");
    auto [secret, codes] = enroll(s);
    Session eve = sign_in("eve@example.com");
    auto eve_secret = enroll(eve).first;
    clock_->advance(30000);
    SignInStep st = step("dev@example.com");
    auto v = id_->mfa().verify(st.mfa_token, code_at(secret, clock_->now()), "", true, "c");
    ASSERT_TRUE(v) << v.error().message;
    ASSERT_FALSE(v->device.empty());
    EXPECT_EQ(v->device_expires_at, clock_->now() + 30LL * 24 * 3600 * 1000);
    SignInStep again = step("dev@example.com", &v->device);
    ASSERT_TRUE(again.signed_in()) << "the remembered device skips the factor";
    EXPECT_TRUE(principal(*again.session).session.mfa);
    EXPECT_EQ(step("eve@example.com", &v->device).state, SignInStep::State::SecondFactorPending)
        << "not for another user";
    Secret forged(std::string(43, 'x'));
    EXPECT_EQ(step("dev@example.com", &forged).state, SignInStep::State::SecondFactorPending);
    EXPECT_EQ(id_->mfa().status(principal(s)).value().remembered_devices, 1u);
    // a password change ends every remembered device
    ASSERT_TRUE(id_->passwords().set_password(principal(*again.session), Secret(std::string("a new long password"))));
    EXPECT_EQ(step("dev@example.com", &v->device).state, SignInStep::State::SecondFactorPending);
    (void)eve_secret;
}

TEST_F(MfaTest, ForgetDevicesAndExpiry) {
    Session s = sign_in("forget@example.com");
    auto [secret, codes] = enroll(s);
    clock_->advance(30000);
    auto v = id_->mfa().verify(step("forget@example.com").mfa_token, code_at(secret, clock_->now()), "", true, "c");
    ASSERT_TRUE(v);
    ASSERT_TRUE(id_->mfa().forget_devices(principal(v->session), "c"));
    EXPECT_EQ(step("forget@example.com", &v->device).state, SignInStep::State::SecondFactorPending);
    clock_->advance(30000);
    auto w = id_->mfa().verify(step("forget@example.com").mfa_token, code_at(secret, clock_->now()), "", true, "c");
    ASSERT_TRUE(w);
    clock_->advance(30LL * 24 * 3600 * 1000);
    EXPECT_EQ(step("forget@example.com", &w->device).state, SignInStep::State::SecondFactorPending)
        << "remembered for signin_mfa_remember only";
}

TEST_F(MfaTest, DisableNeedsAFreshSessionAndACode) {
    Session s = sign_in("dis@example.com");
    auto [secret, codes] = enroll(s);
    clock_->advance(30000);
    auto v = id_->mfa().verify(step("dis@example.com").mfa_token, code_at(secret, clock_->now()), "", true, "c");
    ASSERT_TRUE(v);
    Principal p = principal(v->session);
    EXPECT_EQ(id_->mfa().disable(p, "000000" == code_at(secret, clock_->now() + 30000) ? "111111" : "000000", "",
                                 "c").error().code,
              Code::InvalidCode);
    ASSERT_TRUE(id_->mfa().disable(p, "", codes[0], "c"));
    EXPECT_FALSE(id_->mfa().status(p).value().totp);
    auto direct = id_->tokens().exchange_from(request("dis@example.com").token, "c");
    EXPECT_TRUE(direct) << "one factor again";
    EXPECT_FALSE(id_->sessions().authenticate_from(s.token, "c")) << "other sessions ended";
    clock_->advance(id_->policy().fresh_window);
    EXPECT_EQ(id_->mfa().disable(principal(direct.value()), "123456", "", "c").error().code,
              Code::FreshSessionRequired);
}

}  // namespace

namespace {

TEST_F(MfaTest, AnAdminResetRemovesTheFactorAndEndsSessions) {
    Session s = sign_in("lost@example.com");
    auto [secret, codes] = enroll(s);
    EXPECT_EQ(id_->mfa().reset("", "nobody@example.com").error().code, Code::NotFound);
    ASSERT_TRUE(id_->mfa().reset("", "LOST@example.com"));
    EXPECT_FALSE(id_->sessions().authenticate_from(s.token, "c")) << "its sessions ended";
    auto again = id_->tokens().exchange_from(request("lost@example.com").token, "c");
    ASSERT_TRUE(again) << "email alone signs in again";
    EXPECT_FALSE(id_->mfa().status(principal(again.value())).value().totp);
}

}  // namespace
