// The sign-in engine over a real LMDB store, with a
// settable clock and a recording delivery function.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/encoding.hpp"
#include "signin/auth.hpp"
#include "signin/store.hpp"
#include "store/principal_memo.hpp"
#include "engine_fixtures.hpp"

using namespace signin;
using signin::testing::FakeClock;
using signin::testing::kStart;
using signin::testing::Mailer;

namespace {

constexpr Millis kSecond = 1000;
constexpr Millis kMinute = 60 * kSecond;
constexpr Millis kDay = 24 * 60 * kMinute;

bool is_base64url(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
               c == '_';
    });
}

class AuthTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/signin-auth-test-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        root_ = tmpl;
        dir_ = root_ + "/db";
        LmdbOptions o;
        o.path = dir_;
        o.map_size = 1ull << 26;
        o.max_readers = 32;
        store_ = std::shared_ptr<Store>(open_lmdb_store(o));
        clock_ = std::make_shared<FakeClock>();
        policy_.allow_registration = true;
        make_identity();
    }
    void TearDown() override {
        id_.reset();
        store_.reset();
        std::filesystem::remove_all(root_);
    }

    void make_identity(std::string_view origin = "http://127.0.0.1:8080") {
        std::string why;
        auto o = parse_origin(origin, &why);
        ASSERT_TRUE(o) << why;
        id_ = std::make_unique<Identity>(store_, *o, policy_, outbox_.fn(), clock_);
    }
    Tokens &tokens() { return id_->tokens(); }
    Sessions &sessions() { return id_->sessions(); }

    // An account made directly in the store (for tests that do not exercise registration).
    User add_user(std::string email, std::string group = "default", bool suspended = false) {
        User u;
        u.id = enc::uuid7(clock_->now());
        u.email = std::move(email);
        u.group_id = std::move(group);
        u.created_at = clock_->now();
        u.updated_at = u.created_at;
        u.suspended = suspended;
        auto txn = store_->write();
        txn->put_user(u);
        txn->commit();
        return u;
    }

    // Requests a token and returns what was delivered (fails the test if nothing was).
    Secret request(Intent intent, std::string_view email, std::string_view group = {},
                   std::string_view client = "198.51.100.7") {
        const std::size_t before = outbox_.count();
        Status s = tokens().request_token_from(intent, email, group, client);
        EXPECT_TRUE(s) << s.error().message;
        EXPECT_EQ(outbox_.count(), before + 1) << "no delivery for " << email;
        if (outbox_.count() != before + 1) return Secret();
        return outbox_.last().token;
    }
    Secret login_token(std::string_view email) { return request(Intent::Login, email); }

    Session sign_in(std::string_view email, SessionKind kind = SessionKind::Cookie) {
        Secret t = login_token(email);
        auto s = tokens().exchange_from(t, "198.51.100.7", kind, "test-agent/1");
        EXPECT_TRUE(s) << s.error().message;
        return s ? s.value() : Session{};
    }

    Principal principal(const Session &s) {
        auto p = sessions().authenticate_from(s.token, "198.51.100.7", s.kind);
        EXPECT_TRUE(p) << p.error().message;
        return p ? p.value() : Principal{};
    }

    std::size_t user_count() { return store_->read()->user_count(); }

    std::string data_file() {
        std::ifstream in(dir_ + "/data.mdb", std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
    }

    std::string root_, dir_;
    std::shared_ptr<Store> store_;
    std::shared_ptr<FakeClock> clock_;
    Policy policy_;
    Mailer outbox_;
    std::unique_ptr<Identity> id_;
};

// ================================================================ Email token: (none) → issued

TEST_F(AuthTest, LoginIssuesATokenAndCallsTheDelivery) {
    add_user("alice@example.com");
    Status s = tokens().request_token_from(Intent::Login, "alice@example.com", "", "198.51.100.7");
    ASSERT_TRUE(s) << s.error().message;
    ASSERT_EQ(outbox_.count(), 1u);
    Delivery d = outbox_.last();
    EXPECT_EQ(d.email, "alice@example.com");
    EXPECT_EQ(d.purpose, Purpose::SignIn);
    EXPECT_EQ(d.group_id, "default");
    EXPECT_EQ(d.token.reveal().size(), 43u);
    EXPECT_TRUE(is_base64url(d.token.reveal())) << d.token.reveal();
    EXPECT_TRUE(plausible_secret(d.token.reveal()));
    // the store knows the token only by its hash
    auto rec = store_->read()->token(record_key(d.token.reveal()));
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->email, "alice@example.com");
    EXPECT_EQ(rec->purpose, Purpose::SignIn);
    EXPECT_EQ(rec->expires_at, kStart + 10 * kMinute);
}

TEST_F(AuthTest, TokensAreRandom) {
    add_user("alice@example.com");
    Secret a = login_token("alice@example.com");
    clock_->advance(policy_.token_resend);
    Secret b = login_token("alice@example.com");
    EXPECT_NE(a.reveal(), b.reveal());
}

TEST_F(AuthTest, SecretIsNeverPrinted) {
    add_user("alice@example.com");
    Secret t = login_token("alice@example.com");
    std::ostringstream os;
    os << t;
    EXPECT_EQ(os.str(), "[redacted]");
}

TEST_F(AuthTest, LoginForAnUnknownAddressSendsNothingAndSucceeds) {
    Status s = tokens().request_token_from(Intent::Login, "nobody@example.com", "", "198.51.100.7");
    EXPECT_TRUE(s);
    EXPECT_EQ(outbox_.count(), 0u);
    EXPECT_TRUE(store_->read()->tokens_for("default", "nobody@example.com").empty());
    EXPECT_EQ(user_count(), 0u);
}

// Anyone can ask for addresses nobody owns: such a request leaves no record behind (the token it
// makes for the same work as a real one goes at once, with its address's index entry), so a
// flood of them cannot fill the store. Its audit entry is bounded apart (store_test).
TEST_F(AuthTest, RequestsForAddressesNobodyOwnsLeaveNoRecordBehind) {
    const auto before = store_->read()->counts();
    for (int i = 0; i < 20; ++i) {
        const std::string email = "nobody" + std::to_string(i) + "@example.com";
        EXPECT_TRUE(tokens().request_token_from(Intent::Login, email, "", "198.51.100.7"));
        EXPECT_FALSE(tokens().exchange_code_from(email, "ABCD-EFGH", "", "198.51.100.7"));
    }
    const auto after = store_->read()->counts();
    EXPECT_EQ(after.tokens, before.tokens);
    EXPECT_EQ(after.token_index, before.token_index);
    EXPECT_EQ(after.outbox, before.outbox);
}

// ================================================================ usable token already waiting

TEST_F(AuthTest, UsableTokenWaitingSendsNothingAndSucceeds) {
    add_user("alice@example.com");
    Secret first = login_token("alice@example.com");
    clock_->advance(policy_.token_resend - 1);
    Status s = tokens().request_token_from(Intent::Login, "alice@example.com", "", "203.0.113.1");
    EXPECT_TRUE(s);
    EXPECT_EQ(outbox_.count(), 1u);  // the limit belongs to the address, not the asker
    EXPECT_EQ(store_->read()->tokens_for("default", "alice@example.com").size(), 1u);
    EXPECT_TRUE(tokens().exchange(first));
}

TEST_F(AuthTest, UsableTokenWaitingAlsoHoldsForRegister) {
    Secret first = request(Intent::Register, "new@example.com");
    clock_->advance(30 * kSecond);
    EXPECT_TRUE(tokens().request_token(Intent::Register, "new@example.com", ""));
    EXPECT_EQ(outbox_.count(), 1u);
    EXPECT_TRUE(tokens().exchange(first));
}

TEST_F(AuthTest, SpentTokenIsNotWaiting) {
    add_user("alice@example.com");
    Secret first = login_token("alice@example.com");
    ASSERT_TRUE(tokens().exchange(first));
    clock_->advance(kSecond);
    Secret second = login_token("alice@example.com");  // sent again at once
    EXPECT_TRUE(tokens().exchange(second));
}

TEST_F(AuthTest, AfterTokenResendANewTokenIsIssuedAndTheOlderStaysValid) {
    add_user("alice@example.com");
    Secret first = login_token("alice@example.com");
    clock_->advance(policy_.token_resend);
    Secret second = login_token("alice@example.com");
    EXPECT_NE(first.reveal(), second.reveal());
    EXPECT_TRUE(tokens().exchange(first));
    EXPECT_TRUE(tokens().exchange(second));
}

TEST_F(AuthTest, OnlyTheThreeMostRecentTokensStayValid) {
    add_user("alice@example.com");
    std::vector<Secret> issued;
    for (int i = 0; i < 4; ++i) {
        issued.push_back(login_token("alice@example.com"));
        clock_->advance(policy_.token_resend);
    }
    ASSERT_EQ(outbox_.count(), 4u);
    EXPECT_EQ(store_->read()->tokens_for("default", "alice@example.com").size(), 3u);
    auto r = tokens().exchange(issued[0]);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Code::InvalidToken);
    for (int i = 1; i < 4; ++i) EXPECT_TRUE(tokens().exchange(issued[i])) << "token " << i;
}

// ================================================================ issued → cancelled

TEST_F(AuthTest, DeliveryErrorCancelsTheToken) {
    add_user("alice@example.com");
    outbox_.fail = true;
    Status s = tokens().request_token_from(Intent::Login, "alice@example.com", "", "198.51.100.7");
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, Code::DeliveryFailed);
    ASSERT_EQ(outbox_.count(), 1u);
    Secret cancelled = outbox_.last().token;
    EXPECT_FALSE(store_->read()->token(record_key(cancelled.reveal())));
    auto r = tokens().exchange(cancelled);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Code::InvalidToken);
    // a cancelled token is not "waiting": the next request sends a new one at once
    outbox_.fail = false;
    Secret next = login_token("alice@example.com");
    EXPECT_TRUE(tokens().exchange(next));
    // the failure is audited, without the token
    bool audited = false;
    for (const auto &e : store_->read()->audit(50)) {
        if (e.kind == "delivery.failed") audited = true;
        EXPECT_EQ(e.detail.find(cancelled.reveal()), std::string::npos);
    }
    EXPECT_TRUE(audited);
}

TEST_F(AuthTest, NoDeliveryFunctionIsADeliveryFailure) {
    add_user("alice@example.com");
    std::string why;
    Identity bare(store_, *parse_origin("http://127.0.0.1:8080", &why), policy_, {}, clock_);
    Status s = bare.tokens().request_token(Intent::Login, "alice@example.com", "");
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, Code::DeliveryFailed);
    EXPECT_TRUE(store_->read()->tokens_for("default", "alice@example.com").empty());
}

// ================================================================ issued → expired

TEST_F(AuthTest, TokenExpiresAfterTenMinutes) {
    add_user("alice@example.com");
    Secret early = login_token("alice@example.com");
    clock_->advance(policy_.token_ttl);
    auto r = tokens().exchange(early);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Code::InvalidToken);

    Secret late = login_token("alice@example.com");
    clock_->advance(policy_.token_ttl - 1);
    EXPECT_TRUE(tokens().exchange(late));
}

// ================================================================ issued → spent

TEST_F(AuthTest, TokenIsSingleUse) {
    add_user("alice@example.com");
    Secret t = login_token("alice@example.com");
    ASSERT_TRUE(tokens().exchange(t));
    auto again = tokens().exchange(t);
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().code, Code::InvalidToken);
}

TEST_F(AuthTest, TokenIsSpentEvenWhenTheExchangeFails) {
    add_user("alice@example.com");
    Secret t = login_token("alice@example.com");
    ASSERT_TRUE(id_->set_suspended("", "alice@example.com", true));
    auto r = tokens().exchange(t);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Code::Suspended);
    ASSERT_TRUE(id_->set_suspended("", "Alice@Example.com", false));
    auto again = tokens().exchange(t);
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().code, Code::InvalidToken);
    EXPECT_TRUE(store_->read()->sessions_of(store_->read()->user_by_email("default", "alice@example.com")->id).empty());
}

TEST_F(AuthTest, GarbageTokensAreInvalid) {
    for (const std::string &t : {std::string(), std::string("short"), std::string(43, '*'),
                                 std::string(43, 'A'), std::string(44, 'A')}) {
        auto r = tokens().exchange(Secret(t));
        ASSERT_FALSE(r) << t;
        EXPECT_EQ(r.error().code, Code::InvalidToken);
    }
}

// ================================================================ request refusals

TEST_F(AuthTest, RegistrationDisabled) {
    policy_.allow_registration = false;
    make_identity();
    Status s = tokens().request_token(Intent::Register, "new@example.com", "");
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, Code::RegistrationDisabled);
    EXPECT_EQ(outbox_.count(), 0u);
    // also for an address that has an account: the answer must not reveal it
    add_user("alice@example.com");
    s = tokens().request_token(Intent::Register, "alice@example.com", "");
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, Code::RegistrationDisabled);
    EXPECT_EQ(outbox_.count(), 0u);
}

TEST_F(AuthTest, InvalidEmail) {
    for (const char *e : {"", "no-at-sign", "a@b@c.com", "a b@c.com", "a..b@x.com"}) {
        for (Intent i : {Intent::Login, Intent::Register}) {
            Status s = tokens().request_token(i, e, "");
            ASSERT_FALSE(s) << e;
            EXPECT_EQ(s.error().code, Code::InvalidEmail) << e;
        }
    }
    EXPECT_EQ(outbox_.count(), 0u);
}

TEST_F(AuthTest, InvalidGroup) {
    Status s = tokens().request_token(Intent::Register, "a@example.com", "-bad group");
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, Code::InvalidRequest);
    EXPECT_EQ(outbox_.count(), 0u);
}

TEST_F(AuthTest, EmailDisabled) {
    policy_.with_email = false;
    make_identity();
    add_user("alice@example.com");
    for (Intent i : {Intent::Login, Intent::Register}) {
        Status s = tokens().request_token(i, "alice@example.com", "");
        ASSERT_FALSE(s);
        EXPECT_EQ(s.error().code, Code::EmailDisabled);
    }
    EXPECT_EQ(outbox_.count(), 0u);
}

// ================================================================ Registration table

TEST_F(AuthTest, RegisterCreatesTheAccountOnlyAtExchange) {
    Status s = tokens().request_token_from(Intent::Register, "New@Example.com", "", "198.51.100.7");
    ASSERT_TRUE(s) << s.error().message;
    ASSERT_EQ(outbox_.count(), 1u);
    Delivery d = outbox_.last();
    EXPECT_EQ(d.purpose, Purpose::Registration);
    EXPECT_EQ(d.email, "new@example.com");
    EXPECT_EQ(user_count(), 0u);  // pending: no account yet
    EXPECT_FALSE(store_->read()->user_by_email("default", "new@example.com"));

    clock_->advance(2 * kMinute);
    auto sess = tokens().exchange(d.token);
    ASSERT_TRUE(sess) << sess.error().message;
    EXPECT_EQ(user_count(), 1u);
    EXPECT_EQ(sess->user.email, "new@example.com");
    EXPECT_EQ(sess->user.group_id, "default");
    EXPECT_EQ(sess->user.created_at, kStart + 2 * kMinute);
    EXPECT_FALSE(sess->user.id.empty());
    auto stored = store_->read()->user_by_email("default", "new@example.com");
    ASSERT_TRUE(stored);
    EXPECT_EQ(stored->id, sess->user.id);
    EXPECT_TRUE(stored->password_hash.empty());
    EXPECT_TRUE(sessions().authenticate_from(sess->token, "x"));
}

TEST_F(AuthTest, RegisterForAnExistingAddressSendsAlreadyRegisteredAndChangesNothing) {
    Secret reg = request(Intent::Register, "alice@example.com");
    auto first = tokens().exchange(reg);
    ASSERT_TRUE(first);
    const User before = *store_->read()->user_by_email("default", "alice@example.com");

    clock_->advance(kDay);
    Status s = tokens().request_token(Intent::Register, "ALICE@example.com", "");
    ASSERT_TRUE(s) << s.error().message;
    ASSERT_EQ(outbox_.count(), 2u);
    Delivery d = outbox_.last();
    EXPECT_EQ(d.purpose, Purpose::AlreadyRegistered);
    EXPECT_EQ(d.email, "alice@example.com");

    auto sess = tokens().exchange(d.token);  // its token signs the recipient in
    ASSERT_TRUE(sess) << sess.error().message;
    EXPECT_EQ(sess->user.id, before.id);
    EXPECT_EQ(user_count(), 1u);
    const User after = *store_->read()->user_by_email("default", "alice@example.com");
    EXPECT_EQ(after.id, before.id);
    EXPECT_EQ(after.created_at, before.created_at);
    EXPECT_EQ(after.updated_at, before.updated_at);
    EXPECT_EQ(after.password_hash, before.password_hash);
}

TEST_F(AuthTest, RegisterNeverReplacesAnExistingPassword) {
    User u = add_user("alice@example.com");
    u.password_hash = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA";
    {
        auto txn = store_->write();
        txn->put_user(u);
        txn->commit();
    }
    Secret t = request(Intent::Register, "alice@example.com");
    EXPECT_EQ(outbox_.last().purpose, Purpose::AlreadyRegistered);
    ASSERT_TRUE(tokens().exchange(t));
    EXPECT_EQ(store_->read()->user_by_email("default", "alice@example.com")->password_hash, u.password_hash);
}

TEST_F(AuthTest, AddressesDifferingOnlyByCaseAreOneAccount) {
    Secret reg = request(Intent::Register, "Bob.Smith@Example.COM");
    auto s1 = tokens().exchange(reg);
    ASSERT_TRUE(s1);
    Secret login = login_token("bob.smith@example.com");
    EXPECT_EQ(outbox_.last().purpose, Purpose::SignIn);
    auto s2 = tokens().exchange(login);
    ASSERT_TRUE(s2);
    EXPECT_EQ(s1->user.id, s2->user.id);
    EXPECT_EQ(s2->user.email, "bob.smith@example.com");
    EXPECT_EQ(user_count(), 1u);
}

TEST_F(AuthTest, GroupSeparatesAccounts) {
    Secret a = request(Intent::Register, "same@example.com", "team1");
    Secret b = request(Intent::Register, "same@example.com", "Team2");  // not "waiting": another group
    auto sa = tokens().exchange(a);
    auto sb = tokens().exchange(b);
    ASSERT_TRUE(sa);
    ASSERT_TRUE(sb);
    EXPECT_NE(sa->user.id, sb->user.id);
    EXPECT_EQ(sa->user.group_id, "team1");
    EXPECT_EQ(sb->user.group_id, "team2");
    EXPECT_EQ(user_count(), 2u);
    // the default group has no account for that address: login sends nothing
    EXPECT_TRUE(tokens().request_token(Intent::Login, "same@example.com", ""));
    EXPECT_EQ(outbox_.count(), 2u);
    // and a login in team1 signs in the team1 account only
    Secret l = request(Intent::Login, "same@example.com", "team1");
    auto sl = tokens().exchange(l);
    ASSERT_TRUE(sl);
    EXPECT_EQ(sl->user.id, sa->user.id);
}

// ================================================================ Exchange

TEST_F(AuthTest, SessionExpiryByKind) {
    add_user("alice@example.com");
    Secret c = login_token("alice@example.com");
    clock_->advance(policy_.token_resend);
    Secret b = login_token("alice@example.com");
    clock_->advance(kSecond);
    const Millis now = clock_->now();
    auto cookie = tokens().exchange(c, SessionKind::Cookie);
    auto bearer = tokens().exchange(b, SessionKind::Bearer);
    ASSERT_TRUE(cookie);
    ASSERT_TRUE(bearer);
    EXPECT_EQ(cookie->kind, SessionKind::Cookie);
    EXPECT_EQ(bearer->kind, SessionKind::Bearer);
    EXPECT_EQ(cookie->expires_at, now + 30 * kDay);
    EXPECT_EQ(bearer->expires_at, now + 60 * kMinute);
    EXPECT_EQ(cookie->token.reveal().size(), 43u);
    EXPECT_TRUE(plausible_secret(bearer->token.reveal()));
}

TEST_F(AuthTest, EverySignInMakesANewSessionIdAndSecret) {
    add_user("alice@example.com");
    Session a = sign_in("alice@example.com");
    clock_->advance(policy_.token_resend);
    Session b = sign_in("alice@example.com");
    EXPECT_NE(a.id, b.id);
    EXPECT_NE(a.token.reveal(), b.token.reveal());
    EXPECT_FALSE(a.id.empty());
    EXPECT_EQ(a.id.size(), 36u);  // UUIDv7 text form
    EXPECT_NE(a.id, std::string(a.token.reveal()));
    EXPECT_NE(store_->read()->session(record_key(a.token.reveal()))->id, b.id);
}

TEST_F(AuthTest, StoreHoldsNoTokenOrSessionSecret) {
    add_user("alice@example.com");
    Secret t = login_token("alice@example.com");
    {
        auto r = store_->read();
        ASSERT_TRUE(r->token(record_key(t.reveal())));
        EXPECT_FALSE(r->token(std::string(t.reveal())));
    }
    std::string bytes = data_file();
    ASSERT_FALSE(bytes.empty());
    EXPECT_EQ(bytes.find(t.reveal()), std::string::npos) << "token text found in data.mdb";
    EXPECT_NE(bytes.find(secret_hash(t.reveal())), std::string::npos) << "token hash not in data.mdb";

    auto s = tokens().exchange_from(t, "198.51.100.7", SessionKind::Cookie, "agent");
    ASSERT_TRUE(s);
    ASSERT_TRUE(store_->read()->session(record_key(s->token.reveal())));
    bytes = data_file();
    EXPECT_EQ(bytes.find(t.reveal()), std::string::npos) << "token text found in data.mdb";
    EXPECT_EQ(bytes.find(s->token.reveal()), std::string::npos) << "session secret found in data.mdb";
    EXPECT_NE(bytes.find(secret_hash(s->token.reveal())), std::string::npos);
}

// Issue #20: token and session keys start with their secret's creation time, so new records join
// the right edge of their B-trees; the secret is still 32 bytes, 26 of them random.
TEST(OrderedSecret, StartsWithItsTimeAndKeysSortByIt) {
    const std::int64_t t0 = 1795604740123;
    std::string a = enc::ordered_secret(t0), b = enc::ordered_secret(t0), c = enc::ordered_secret(t0 + 1);
    ASSERT_TRUE(plausible_secret(a));
    EXPECT_NE(a, b) << "the same millisecond, different secrets";
    auto raw = enc::base64url_decode(a);
    ASSERT_TRUE(raw && raw->size() == 32);
    std::int64_t at = 0;
    for (int i = 0; i < 6; ++i) at = (at << 8) | static_cast<unsigned char>((*raw)[static_cast<std::size_t>(i)]);
    EXPECT_EQ(at, t0);
    const std::string ka = record_key(a), kc = record_key(c);
    ASSERT_EQ(ka.size(), 38u);
    EXPECT_EQ(ka.substr(0, 6), raw->substr(0, 6));
    EXPECT_EQ(ka.substr(6), secret_hash(a));
    EXPECT_LT(ka, kc) << "a later secret's key sorts after";
    EXPECT_TRUE(same_record_key(ka, ka));
    EXPECT_TRUE(same_record_key(secret_hash(a), ka)) << "a record of an earlier build";
    EXPECT_FALSE(same_record_key(secret_hash(c), ka));
    EXPECT_FALSE(same_record_key(ka.substr(6, 31), ka));
    EXPECT_FALSE(same_record_key("", ""));
}

// record_key decodes the 8-character head with a table (issue #20: it runs for every signed-in
// request): the same bytes as the library's base64url decoder for every head, and no head at all
// when one of those 8 characters is outside the alphabet or the text is shorter.
TEST(OrderedSecret, RecordKeyHeadIsTheBase64urlOfTheFirstEightCharacters) {
    const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (int i = 0; i < 2000; ++i) {
        std::string text = i % 2 ? enc::ordered_secret(1795604740123 + i * 7919) : enc::random_secret(32);
        if (i % 5 == 0) text[static_cast<std::size_t>(i % 8)] = alphabet[static_cast<std::size_t>(i % 64)];
        auto head = enc::base64url_decode(text.substr(0, 8));
        ASSERT_TRUE(head && head->size() == 6);
        EXPECT_EQ(record_key(text), *head + secret_hash(text)) << text;
    }
    for (std::string bad : {"AAAA*AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "AAAAAAA=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                            "A\xff" "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "AAAAAAA", ""}) {
        EXPECT_EQ(record_key(bad), secret_hash(bad)) << bad;
    }
}

// plausible_secret runs before every lookup: 43 base64url characters, one character outside the
// alphabet anywhere (including the bytes whose table entry is -1 next to valid ones) refuses it.
TEST(OrderedSecret, PlausibleSecretRefusesAnyCharacterOutsideTheAlphabetAnywhere) {
    const std::string good = enc::ordered_secret(1795604740123);
    ASSERT_TRUE(plausible_secret(good));
    for (std::size_t i = 0; i < good.size(); ++i) {
        for (char bad : {'=', '+', '/', '.', ' ', '\0', '\x7f', '\x80', '\xff', '@', '[', '`', '{'}) {
            std::string text = good;
            text[i] = bad;
            EXPECT_FALSE(plausible_secret(text)) << "position " << i << " char " << static_cast<int>(bad);
        }
    }
    EXPECT_FALSE(plausible_secret(good.substr(0, 42)));
    EXPECT_FALSE(plausible_secret(good + "A"));
    EXPECT_EQ(RecordKey(good).view(), record_key(good));
}

// Records written by earlier builds of 0.1.0 are keyed by the secret's digest alone: their tokens
// and sessions still work, and are deleted where they are.
TEST_F(AuthTest, RecordsKeyedByTheDigestAloneStillWork) {
    add_user("alice@example.com");
    Session s = sign_in("alice@example.com");
    Secret t = login_token("alice@example.com");
    {
        auto w = store_->write();
        auto rec = w->session(record_key(s.token.reveal()));
        ASSERT_TRUE(rec);
        w->del_session(rec->hash);
        rec->hash = secret_hash(s.token.reveal());
        w->put_session(*rec);
        auto tok = w->token(record_key(t.reveal()));
        ASSERT_TRUE(tok);
        w->del_token(tok->hash);
        tok->hash = secret_hash(t.reveal());
        w->put_token(*tok);
        w->commit();
    }
    auto p = sessions().authenticate_from(s.token, "x");
    ASSERT_TRUE(p) << "the old session";
    EXPECT_EQ(p->session.hash, secret_hash(s.token.reveal()));
    ASSERT_TRUE(sessions().logout(p.value(), "x"));
    EXPECT_FALSE(sessions().authenticate_from(s.token, "x")) << "logged out";
    EXPECT_FALSE(store_->read()->session(secret_hash(s.token.reveal())));

    auto s2 = tokens().exchange_from(t, "x", SessionKind::Cookie, "agent");
    ASSERT_TRUE(s2) << "the old token";
    EXPECT_FALSE(store_->read()->token(secret_hash(t.reveal()))) << "spent where it was";
    EXPECT_FALSE(tokens().exchange_from(t, "x", SessionKind::Cookie, "agent")) << "once";
    EXPECT_EQ(store_->read()->session(record_key(s2->token.reveal()))->hash.size(), 38u) << "new sessions: the new key";
}

TEST_F(AuthTest, ConcurrentExchangeOfOneTokenHasExactlyOneWinner) {
    add_user("alice@example.com");
    Secret t = login_token("alice@example.com");
    std::atomic<int> ok{0}, invalid{0}, other{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i) {
        threads.emplace_back([&] {
            while (!go.load()) std::this_thread::yield();
            auto r = tokens().exchange(t);
            if (r) {
                ++ok;
            } else if (r.error().code == Code::InvalidToken) {
                ++invalid;
            } else {
                ++other;
            }
        });
    }
    go = true;
    for (auto &th : threads) th.join();
    EXPECT_EQ(ok.load(), 1);
    EXPECT_EQ(invalid.load(), 7);
    EXPECT_EQ(other.load(), 0);
    auto u = store_->read()->user_by_email("default", "alice@example.com");
    EXPECT_EQ(store_->read()->sessions_of(u->id).size(), 1u);
}

TEST_F(AuthTest, ConcurrentRegistrationExchangeCreatesOneAccount) {
    Secret a = request(Intent::Register, "race@example.com");
    clock_->advance(policy_.token_resend);
    Secret b = request(Intent::Register, "race@example.com");
    EXPECT_EQ(outbox_.last().purpose, Purpose::Registration);  // still pending
    std::thread ta([&] { EXPECT_TRUE(tokens().exchange(a)); });
    std::thread tb([&] { EXPECT_TRUE(tokens().exchange(b)); });
    ta.join();
    tb.join();
    EXPECT_EQ(user_count(), 1u);
}

// ================================================================ authenticate_from

TEST_F(AuthTest, AuthenticateLiveSession) {
    User u = add_user("alice@example.com");
    Session s = sign_in("alice@example.com");
    auto p = sessions().authenticate_from(s.token, "198.51.100.7");
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_EQ(p->user.id, u.id);
    EXPECT_EQ(p->user.email, "alice@example.com");
    EXPECT_EQ(p->session.id, s.id);
    EXPECT_EQ(p->session.client, "198.51.100.7");
    EXPECT_EQ(p->session.user_agent, "test-agent/1");
    EXPECT_TRUE(auth::authenticate_from(*id_, s.token, "x"));
}

TEST_F(AuthTest, AuthenticateWrongKind) {
    add_user("alice@example.com");
    Session c = sign_in("alice@example.com", SessionKind::Cookie);
    clock_->advance(policy_.token_resend);
    Session b = sign_in("alice@example.com", SessionKind::Bearer);
    auto r = sessions().authenticate_from(c.token, "x", SessionKind::Bearer);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Code::Unauthenticated);
    r = sessions().authenticate_from(b.token, "x", SessionKind::Cookie);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Code::Unauthenticated);
    EXPECT_TRUE(sessions().authenticate_from(b.token, "x", SessionKind::Bearer));
}

TEST_F(AuthTest, CookieSessionEndsAfterSessionTtlEvenWhenTouched) {
    add_user("alice@example.com");
    Session s = sign_in("alice@example.com");
    // kept active: touched every 6 days, so idleness never ends it
    while (clock_->now() + 6 * kDay < kStart + policy_.session_ttl) {
        clock_->advance(6 * kDay);
        auto p = sessions().authenticate_from(s.token, "x");
        ASSERT_TRUE(p) << "at +" << (clock_->now() - kStart) / kDay << " days";
        ASSERT_TRUE(sessions().touch(p.value()));
    }
    clock_->set(kStart + policy_.session_ttl - 1);
    EXPECT_TRUE(sessions().authenticate_from(s.token, "x"));
    clock_->set(kStart + policy_.session_ttl);
    auto r = sessions().authenticate_from(s.token, "x");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Code::Unauthenticated);
}

TEST_F(AuthTest, BearerEndsAfterBearerTtl) {
    add_user("alice@example.com");
    Session s = sign_in("alice@example.com", SessionKind::Bearer);
    clock_->advance(policy_.bearer_ttl - 1);
    EXPECT_TRUE(sessions().authenticate_from(s.token, "x", SessionKind::Bearer));
    clock_->advance(1);
    auto r = sessions().authenticate_from(s.token, "x", SessionKind::Bearer);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Code::Unauthenticated);
}

TEST_F(AuthTest, IdleSessionEndsWithoutTouch) {
    add_user("alice@example.com");
    Session s = sign_in("alice@example.com");
    clock_->advance(policy_.session_idle - 1);
    EXPECT_TRUE(sessions().authenticate_from(s.token, "x"));  // read-only: does not renew
    clock_->advance(1);
    auto r = sessions().authenticate_from(s.token, "x");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Code::Unauthenticated);
}

TEST_F(AuthTest, TouchInsideTheIdleWindowKeepsTheSessionLive) {
    add_user("alice@example.com");
    Session s = sign_in("alice@example.com");
    clock_->advance(policy_.session_idle - kMinute);
    auto p = sessions().authenticate_from(s.token, "x");
    ASSERT_TRUE(p);
    ASSERT_TRUE(sessions().needs_touch(p.value()));
    ASSERT_TRUE(sessions().touch(p.value()));
    const Millis touched = clock_->now();
    EXPECT_EQ(store_->read()->session(record_key(s.token.reveal()))->last_seen_at, touched);
    clock_->advance(2 * kMinute);  // past the idle limit counted from sign-in
    EXPECT_TRUE(sessions().authenticate_from(s.token, "x"));
    clock_->set(touched + policy_.session_idle);
    EXPECT_FALSE(sessions().authenticate_from(s.token, "x"));
}

TEST_F(AuthTest, NeedsTouchRespectsSessionTouch) {
    add_user("alice@example.com");
    Session s = sign_in("alice@example.com");
    auto p = sessions().authenticate_from(s.token, "x");
    ASSERT_TRUE(p);
    EXPECT_FALSE(sessions().needs_touch(p.value()));
    clock_->advance(policy_.session_touch - 1);
    p = sessions().authenticate_from(s.token, "x");
    ASSERT_TRUE(p);
    EXPECT_FALSE(sessions().needs_touch(p.value()));
    clock_->advance(1);
    p = sessions().authenticate_from(s.token, "x");
    ASSERT_TRUE(p);
    EXPECT_TRUE(sessions().needs_touch(p.value()));
    ASSERT_TRUE(sessions().touch(p.value()));
    p = sessions().authenticate_from(s.token, "x");
    ASSERT_TRUE(p);
    EXPECT_FALSE(sessions().needs_touch(p.value()));
}

TEST_F(AuthTest, SuspendedUserIsUnauthenticated) {
    add_user("alice@example.com");
    Session c = sign_in("alice@example.com");
    clock_->advance(policy_.token_resend);
    Session b = sign_in("alice@example.com", SessionKind::Bearer);
    ASSERT_TRUE(id_->set_suspended("", "alice@example.com", true));
    auto r = sessions().authenticate_from(c.token, "x");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Code::Unauthenticated);
    EXPECT_FALSE(sessions().authenticate_from(b.token, "x", SessionKind::Bearer));
    ASSERT_TRUE(id_->set_suspended("", "alice@example.com", false));
    EXPECT_TRUE(sessions().authenticate_from(c.token, "x"));
}

// The LMDB store's memo of decoded principals (store/principal_memo.hpp), one per thread: the same
// principal while the session's and the user's stored bytes stay the same, and every change the
// store holds seen at the next request, as without it.
TEST_F(AuthTest, PrincipalMemoHandsBackOnlyWhatTheStoreStillSays) {
    add_user("alice@example.com");
    Session c = sign_in("alice@example.com");
    clock_->advance(policy_.token_resend);
    Session b = sign_in("alice@example.com", SessionKind::Bearer);
    auto first = sessions().authenticate_shared(c.token, SessionKind::Cookie);
    ASSERT_TRUE(first);
    auto again = sessions().authenticate_shared(c.token, SessionKind::Cookie);
    ASSERT_TRUE(again);
    EXPECT_EQ(first.value().get(), again.value().get()) << "unchanged records: the memo's principal";
    EXPECT_EQ(again.value()->user.email, "alice@example.com");
    EXPECT_EQ(again.value()->session.hash, record_key(c.token.reveal()));
    // another thread has a memo of its own: decoded there once, then handed back there
    std::shared_ptr<const Principal> other1, other2;
    std::thread([&] {
        auto r1 = sessions().authenticate_shared(c.token, SessionKind::Cookie);
        auto r2 = sessions().authenticate_shared(c.token, SessionKind::Cookie);
        if (r1 && r2) other1 = r1.value(), other2 = r2.value();
    }).join();
    ASSERT_TRUE(other1 && other2);
    EXPECT_NE(other1.get(), first.value().get()) << "not this thread's memo";
    EXPECT_EQ(other1.get(), other2.get()) << "its own memo";
    EXPECT_EQ(first.value().get(), sessions().authenticate_shared(c.token, SessionKind::Cookie).value().get())
        << "this thread's memo kept its entry";

    // the kind and the clock are checked on a hit too
    EXPECT_FALSE(sessions().authenticate_shared(c.token, SessionKind::Bearer));
    ASSERT_TRUE(sessions().authenticate_shared(b.token, SessionKind::Bearer));

    // a touch rewrites the session: decoded again, with the new last_seen_at
    clock_->advance(policy_.session_touch);
    ASSERT_TRUE(sessions().touch(*again.value()));
    auto touched = sessions().authenticate_shared(c.token, SessionKind::Cookie);
    ASSERT_TRUE(touched);
    EXPECT_NE(touched.value().get(), first.value().get());
    EXPECT_EQ(touched.value()->session.last_seen_at, clock_->now());

    // the user's record changes (roles; a suspension): seen at once
    {
        auto txn = store_->write();
        auto u = txn->user_by_id(touched.value()->user.id);
        ASSERT_TRUE(u);
        u->roles = {"admin"};
        txn->put_user(*u);
        txn->commit();
    }
    auto roles = sessions().authenticate_shared(c.token, SessionKind::Cookie);
    ASSERT_TRUE(roles);
    EXPECT_EQ(roles.value()->user.roles, std::vector<std::string>{"admin"});
    ASSERT_TRUE(id_->set_suspended("", "alice@example.com", true));
    EXPECT_FALSE(sessions().authenticate_shared(c.token, SessionKind::Cookie));
    ASSERT_TRUE(id_->set_suspended("", "alice@example.com", false));
    ASSERT_TRUE(sessions().authenticate_shared(c.token, SessionKind::Cookie));

    // the idle limit passes while the entry is in the memo
    clock_->advance(policy_.session_idle);
    EXPECT_FALSE(sessions().authenticate_shared(c.token, SessionKind::Cookie));
    clock_->advance(-policy_.session_idle);
    ASSERT_TRUE(sessions().authenticate_shared(c.token, SessionKind::Cookie));

    // signed out: the record is gone, whatever the memo holds
    auto p = sessions().authenticate_from(c.token, "x");
    ASSERT_TRUE(p);
    ASSERT_TRUE(sessions().logout(p.value(), "x"));
    EXPECT_FALSE(sessions().authenticate_shared(c.token, SessionKind::Cookie));
    EXPECT_TRUE(sessions().authenticate_shared(b.token, SessionKind::Bearer));
}

// Several credentials at once (a worker's waiting session reads): each gets what it would alone.
TEST_F(AuthTest, SeveralCredentialsAreEachAnsweredAsAlone) {
    add_user("alice@example.com");
    add_user("bob@example.com");
    Session a = sign_in("alice@example.com");
    Session b = sign_in("bob@example.com", SessionKind::Bearer);
    clock_->advance(policy_.token_resend);
    Session gone = sign_in("alice@example.com");
    auto p = sessions().authenticate_from(gone.token, "x");
    ASSERT_TRUE(p);
    ASSERT_TRUE(sessions().logout(p.value(), "x"));
    const Secret junk("not a session secret");
    const std::vector<Sessions::Asked> asked = {{&b.token, SessionKind::Bearer}, {&a.token, SessionKind::Cookie},
                                                {&junk, SessionKind::Cookie},    {&a.token, SessionKind::Bearer},
                                                {&gone.token, SessionKind::Cookie}, {&a.token, SessionKind::Cookie}};
    auto got = sessions().authenticate_shared(asked);
    ASSERT_EQ(got.size(), asked.size());
    ASSERT_TRUE(got[0] && got[1] && got[5]);
    EXPECT_EQ(got[0].value()->user.email, "bob@example.com");
    EXPECT_EQ(got[1].value()->user.email, "alice@example.com");
    EXPECT_EQ(got[5].value()->user.email, "alice@example.com");
    for (std::size_t i : {2, 3, 4}) {
        ASSERT_FALSE(got[i]) << i;
        EXPECT_EQ(got[i].error().code, Code::Unauthenticated) << i;
    }
    for (std::size_t i = 0; i < asked.size(); ++i)
        EXPECT_EQ(static_cast<bool>(got[i]), static_cast<bool>(sessions().authenticate_shared(*asked[i].token, asked[i].kind)));
    EXPECT_TRUE(sessions().authenticate_shared(std::vector<Sessions::Asked>{}).empty());
    ASSERT_TRUE(id_->set_suspended("", "bob@example.com", true));
    EXPECT_FALSE(sessions().authenticate_shared(asked)[0]) << "a suspended account";
}

TEST(PrincipalMemo, EntriesAreKeyedByKeyAndExactBytes) {
    PrincipalMemo memo(3);
    EXPECT_EQ(memo.slots(), 4u);
    auto p = std::make_shared<const Principal>();
    const std::string key(38, 'k');
    memo.put(key, "session-bytes", "user-bytes", p);
    ASSERT_NE(memo.find(key, "session-bytes"), nullptr);
    EXPECT_EQ(memo.find(key, "session-bytes")->get(), p.get());
    EXPECT_TRUE(memo.user_matches(key, "user-bytes"));
    EXPECT_FALSE(memo.user_matches(key, "user-bytez"));
    EXPECT_EQ(memo.find(key, "session-bytez"), nullptr);
    EXPECT_EQ(memo.find(key, std::string_view("session-bytes", 12)), nullptr);
    std::string other = key;
    other[0] = 'x';  // the same slot (its last bytes), another session
    EXPECT_EQ(memo.find(other, "session-bytes"), nullptr);
    EXPECT_FALSE(memo.user_matches(other, "user-bytes"));
    auto q = std::make_shared<const Principal>();
    memo.put(other, "session-bytes", "user-bytes", q);  // takes the slot
    EXPECT_EQ(memo.find(key, "session-bytes"), nullptr);
    EXPECT_EQ(memo.find(other, "session-bytes")->get(), q.get());
    EXPECT_EQ(p.use_count(), 1) << "the replaced entry let its principal go";
    PrincipalMemo empty(0);
    EXPECT_EQ(empty.slots(), 1u);
    EXPECT_EQ(empty.find(key, ""), nullptr);
}

// Each thread that reads through a store has its memo of that store, the same one every time,
// however often it reads through another store in between.
TEST(PrincipalMemo, OnePerThreadOfEachStore) {
    ThreadMemos a(2), b(2);
    PrincipalMemo &mine = a.mine();
    EXPECT_EQ(mine.slots(), 2u);
    EXPECT_EQ(&a.mine(), &mine);
    EXPECT_NE(&b.mine(), &mine);
    EXPECT_EQ(&a.mine(), &mine) << "back to the first store: its memo again, not a new one";
    PrincipalMemo *theirs = nullptr;
    std::thread([&] { theirs = &a.mine(); }).join();
    EXPECT_NE(theirs, nullptr);
    EXPECT_NE(theirs, &mine);
}

TEST_F(AuthTest, SetSuspendedUnknownAccount) {
    Status s = id_->set_suspended("", "ghost@example.com", true);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, Code::NotFound);
}

TEST_F(AuthTest, GarbageSessionTokenIsUnauthenticated) {
    add_user("alice@example.com");
    Session s = sign_in("alice@example.com");
    std::string flipped(s.token.reveal());
    flipped[0] = flipped[0] == 'A' ? 'B' : 'A';
    for (const std::string &t : {std::string(), std::string("garbage"), std::string(43, '!'), flipped,
                                 std::string(s.token.reveal()) + "A", std::string(s.id)}) {
        auto r = sessions().authenticate_from(Secret(t), "x");
        ASSERT_FALSE(r) << t;
        EXPECT_EQ(r.error().code, Code::Unauthenticated);
    }
}

TEST_F(AuthTest, LoginTokenIsNoSessionToken) {
    add_user("alice@example.com");
    Secret t = login_token("alice@example.com");
    EXPECT_FALSE(sessions().authenticate_from(t, "x"));
    EXPECT_TRUE(tokens().exchange(t));
}

// ================================================================ sessions, revoke, logout

TEST_F(AuthTest, SessionsListsTheUsersLiveSessionsOnly) {
    add_user("alice@example.com");
    add_user("bob@example.com");
    Session a1 = sign_in("alice@example.com", SessionKind::Cookie);
    clock_->advance(policy_.token_resend);
    Session a2 = sign_in("alice@example.com", SessionKind::Bearer);
    Session b1 = sign_in("bob@example.com");
    clock_->advance(kSecond);

    Principal pa = principal(a1);
    auto list = sessions().sessions(pa);
    ASSERT_TRUE(list) << list.error().message;
    ASSERT_EQ(list->size(), 2u);
    int current = 0;
    for (const auto &i : list.value()) {
        EXPECT_NE(i.id, b1.id);
        EXPECT_TRUE(i.id == a1.id || i.id == a2.id);
        EXPECT_EQ(i.client, "198.51.100.7");
        EXPECT_EQ(i.user_agent, "test-agent/1");
        if (i.id == a1.id) {
            EXPECT_TRUE(i.current);
            EXPECT_EQ(kind_name(i.kind), "cookie");
            EXPECT_EQ(i.expires_at, a1.expires_at);
            EXPECT_EQ(i.created_at, kStart);
        } else {
            EXPECT_FALSE(i.current);
            EXPECT_EQ(kind_name(i.kind), "bearer");
        }
        current += i.current;
    }
    EXPECT_EQ(current, 1);
    // the bearer token is current when it is the caller
    auto lb = sessions().sessions(principal(a2));
    ASSERT_TRUE(lb);
    for (const auto &i : lb.value()) EXPECT_EQ(i.current, i.id == a2.id);

    // an ended (expired) bearer disappears from the list
    clock_->set(kStart + policy_.token_resend + policy_.bearer_ttl);
    list = sessions().sessions(pa);
    ASSERT_TRUE(list);
    ASSERT_EQ(list->size(), 1u);
    EXPECT_EQ(list->front().id, a1.id);
}

TEST_F(AuthTest, FreshFlagFollowsTheFreshWindow) {
    add_user("alice@example.com");
    Session s = sign_in("alice@example.com");
    clock_->advance(policy_.fresh_window - 1);
    auto list = sessions().sessions(principal(s));
    ASSERT_TRUE(list);
    ASSERT_EQ(list->size(), 1u);
    EXPECT_TRUE(list->front().fresh);
    clock_->advance(1);
    list = sessions().sessions(principal(s));
    ASSERT_TRUE(list);
    ASSERT_EQ(list->size(), 1u);
    EXPECT_FALSE(list->front().fresh);
}

TEST_F(AuthTest, RevokeOwnSession) {
    add_user("alice@example.com");
    Session a1 = sign_in("alice@example.com");
    clock_->advance(policy_.token_resend);
    Session a2 = sign_in("alice@example.com");
    Principal p = principal(a1);
    ASSERT_TRUE(sessions().revoke_session(p, a2.id, "198.51.100.7"));
    EXPECT_FALSE(sessions().authenticate_from(a2.token, "x"));
    EXPECT_TRUE(sessions().authenticate_from(a1.token, "x"));
    auto list = sessions().sessions(p);
    ASSERT_TRUE(list);
    ASSERT_EQ(list->size(), 1u);
    EXPECT_EQ(list->front().id, a1.id);
    // revoking it again: it is gone
    Status again = sessions().revoke_session(p, a2.id, "x");
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().code, Code::NotFound);
    // revoking the current session ends it too
    ASSERT_TRUE(sessions().revoke_session(p, a1.id, "x"));
    EXPECT_FALSE(sessions().authenticate_from(a1.token, "x"));
}

TEST_F(AuthTest, RevokeAnotherUsersSessionIsNotFound) {
    add_user("alice@example.com");
    add_user("bob@example.com");
    Session a = sign_in("alice@example.com");
    Session b = sign_in("bob@example.com");
    Status s = sessions().revoke_session(principal(a), b.id, "x");
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, Code::NotFound);
    EXPECT_TRUE(sessions().authenticate_from(b.token, "x"));
    Status unknown = sessions().revoke_session(principal(a), "no-such-id", "x");
    ASSERT_FALSE(unknown);
    EXPECT_EQ(unknown.error().code, Code::NotFound);
}

TEST_F(AuthTest, LogoutEndsOnlyThatSession) {
    add_user("alice@example.com");
    Session a1 = sign_in("alice@example.com");
    clock_->advance(policy_.token_resend);
    Session a2 = sign_in("alice@example.com");
    ASSERT_TRUE(sessions().logout(principal(a1), "x"));
    auto r = sessions().authenticate_from(a1.token, "x");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Code::Unauthenticated);
    EXPECT_TRUE(sessions().authenticate_from(a2.token, "x"));
    auto list = sessions().sessions(principal(a2));
    ASSERT_TRUE(list);
    ASSERT_EQ(list->size(), 1u);
    EXPECT_EQ(list->front().id, a2.id);
}

// ================================================================ origin and cookie name

TEST_F(AuthTest, CookieNameByOrigin) {
    EXPECT_EQ(id_->cookie_name(), "svc_dev_session");
    EXPECT_EQ(auth::cookie_name(*id_), "svc_dev_session");
    make_identity("https://App.Example.com:443/");
    EXPECT_EQ(id_->cookie_name(), "__Host-svc_session");
    EXPECT_EQ(id_->origin().text, "https://app.example.com");
}

TEST_F(AuthTest, CheckOrigin) {
    make_identity("https://app.example.com");
    EXPECT_TRUE(id_->check_origin(std::string_view("https://app.example.com"), true));
    EXPECT_TRUE(id_->check_origin(std::string_view("https://app.example.com"), false));
    EXPECT_TRUE(id_->check_origin(std::nullopt, false));  // a bearer client need not send one
    for (std::string_view wrong : {"https://evil.example.com", "http://app.example.com",
                                   "https://app.example.com:8443", "null", ""}) {
        for (bool cookie_write : {true, false}) {
            Status s = id_->check_origin(wrong, cookie_write);
            ASSERT_FALSE(s) << wrong;
            EXPECT_EQ(s.error().code, Code::OriginMismatch);
        }
    }
    Status absent = id_->check_origin(std::nullopt, true);
    ASSERT_FALSE(absent);
    EXPECT_EQ(absent.error().code, Code::OriginMismatch);
}

// ================================================================ audit

TEST_F(AuthTest, AuditRecordsAddressAndClientButNoSecret) {
    add_user("alice@example.com");
    ASSERT_TRUE(tokens().request_token_from(Intent::Login, "Alice@Example.com", "", "203.0.113.9"));
    ASSERT_EQ(outbox_.count(), 1u);
    Secret t = outbox_.last().token;
    auto s = tokens().exchange_from(t, "203.0.113.9", SessionKind::Cookie, "ua");
    ASSERT_TRUE(s);
    // a failed exchange is audited too
    ASSERT_FALSE(tokens().exchange_from(t, "203.0.113.10"));
    ASSERT_TRUE(tokens().request_token_from(Intent::Login, "ghost@example.com", "", "203.0.113.11"));

    auto entries = store_->read()->audit(50);
    ASSERT_GE(entries.size(), 3u);
    bool requested = false, created = false, invalid = false, ghost = false;
    for (const auto &e : entries) {
        for (const std::string *f : {&e.kind, &e.email, &e.client, &e.user_id, &e.detail}) {
            EXPECT_EQ(f->find(t.reveal()), std::string::npos) << "token in audit " << e.kind;
            EXPECT_EQ(f->find(s->token.reveal()), std::string::npos) << "session secret in audit " << e.kind;
        }
        if (e.kind == "token.requested" && e.email == "alice@example.com" && e.client == "203.0.113.9") {
            requested = true;
        }
        if (e.kind == "session.created" && e.email == "alice@example.com" && e.client == "203.0.113.9") {
            created = true;
            EXPECT_EQ(e.user_id, s->user.id);
            EXPECT_EQ(e.at, kStart);
        }
        if (e.kind == "token.invalid" && e.client == "203.0.113.10") invalid = true;
        if (e.kind == "token.requested" && e.email == "ghost@example.com" && e.client == "203.0.113.11") {
            ghost = true;
        }
    }
    EXPECT_TRUE(requested);
    EXPECT_TRUE(created);
    EXPECT_TRUE(invalid);
    EXPECT_TRUE(ghost);
}

// ================================================================ purge

TEST_F(AuthTest, PurgeRemovesExpiredTokensAndSessions) {
    add_user("alice@example.com");
    Secret t = login_token("alice@example.com");
    clock_->advance(policy_.token_resend);
    Session b = sign_in("alice@example.com", SessionKind::Bearer);
    clock_->advance(policy_.bearer_ttl + policy_.token_ttl);
    auto n = id_->purge_expired(100);
    ASSERT_TRUE(n) << n.error().message;
    EXPECT_EQ(n.value(), 2u);
    EXPECT_FALSE(store_->read()->token(record_key(t.reveal())));
    EXPECT_FALSE(store_->read()->session(record_key(b.token.reveal())));
}

TEST_F(AuthTest, PurgeKeepsTheAuditTrailForAuditKeepOnly) {
    // anyone can add audit entries (a token request for any address): they must not fill the store
    for (int i = 0; i < 3; ++i) (void)tokens().request_token_from(Intent::Login, "nobody@example.com", {}, "c");
    const std::size_t before = store_->read()->audit_count();
    ASSERT_GE(before, 3u);
    clock_->advance(policy_.audit_keep - 1);
    ASSERT_TRUE(id_->purge_expired(100));
    EXPECT_EQ(store_->read()->audit_count(), before) << "younger than audit_keep: kept";
    clock_->advance(2);
    auto n = id_->purge_expired(100);
    ASSERT_TRUE(n) << n.error().message;
    EXPECT_GE(n.value(), before);
    EXPECT_EQ(store_->read()->audit_count(), 0u) << "older than audit_keep: purged";
}

}  // namespace
