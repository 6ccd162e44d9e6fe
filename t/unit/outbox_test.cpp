// The outbox (outbox.hpp): the secret key file, a delivery written with its token and sealed,
// retries with a doubling delay, giving up (the token cancelled), and claims of entries whose
// sender vanished.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "engine_fixtures.hpp"
#include "signin/auth.hpp"
#include "store/records.hpp"

using namespace signin;
using signin::testing::FakeClock;

namespace {

class OutboxTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/signin-outbox-test-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        root_ = tmpl;
        LmdbOptions o;
        o.path = root_ + "/db";
        o.map_size = 1ull << 26;
        o.max_readers = 32;
        store_ = std::shared_ptr<Store>(open_lmdb_store(o));
        clock_ = std::make_shared<FakeClock>();
        policy_.allow_registration = true;
        policy_.token_resend = 0;
        auto key = load_secret_key(root_ + "/signin.key", true);
        ASSERT_TRUE(key) << key.error().message;
        settings_.key = key.value();
        settings_.hold = 60000;
        settings_.retries = 3;
        id_ = make_identity(settings_);
    }
    void TearDown() override {
        id_.reset();
        store_.reset();
        std::filesystem::remove_all(root_);
    }

    std::unique_ptr<Identity> make_identity(const OutboxSettings &s) {
        std::string why;
        auto origin = parse_origin("http://127.0.0.1:8080", &why);
        auto id = std::make_unique<Identity>(store_, *origin, policy_, DeliveryFn{}, clock_);
        id->use_outbox(s);
        return id;
    }

    // A login token request for an existing account: the item its sender holds.
    OutboxItem request(std::string_view email) {
        auto issued = id_->tokens().issue_token(Intent::Login, email, {}, "198.51.100.7");
        EXPECT_TRUE(issued) << issued.error().message;
        EXPECT_TRUE(issued->delivery.has_value());
        EXPECT_EQ(issued->outbox_key.size(), 16u);
        OutboxItem item;
        item.key = issued->outbox_key;
        item.delivery = std::move(*issued->delivery);
        item.client = "198.51.100.7";
        return item;
    }

    void add_user(std::string email) {
        User u;
        u.id = "u-" + email;
        u.email = std::move(email);
        u.group_id = "default";
        auto txn = store_->write();
        txn->put_user(u);
        txn->commit();
    }

    std::size_t pending() { return id_->outbox().pending().value(); }
    bool token_live(const Secret &t) {
        auto txn = store_->read();
        return txn->token(record_key(t.reveal())).has_value();
    }
    std::string data_file() {
        std::ifstream in(root_ + "/db/data.mdb", std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
    }

    std::string root_;
    std::shared_ptr<Store> store_;
    std::shared_ptr<FakeClock> clock_;
    Policy policy_;
    OutboxSettings settings_;
    std::unique_ptr<Identity> id_;
};

TEST(SecretKeyFile, CreatedOnceWithMode0600AndReadBack) {
    char tmpl[] = "/tmp/signin-key-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    std::string path = std::string(tmpl) + "/signin.key";
    EXPECT_FALSE(load_secret_key(path, false)) << "a missing file is an error without create";
    auto a = load_secret_key(path, true);
    ASSERT_TRUE(a) << a.error().message;
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    auto b = load_secret_key(path, true);
    ASSERT_TRUE(b);
    EXPECT_EQ(a.value(), b.value()) << "an existing key is read, never replaced";

    chmod(path.c_str(), 0644);
    EXPECT_FALSE(load_secret_key(path, false)) << "a key others can read is refused";
    chmod(path.c_str(), 0600);
    {
        std::ofstream out(path, std::ios::trunc);
        out << "# comment\nnot-a-key\n";
    }
    EXPECT_FALSE(load_secret_key(path, false)) << "garbage is refused";
    std::filesystem::remove_all(tmpl);
}

TEST_F(OutboxTest, TheDeliveryIsWrittenWithItsTokenAndSealed) {
    add_user("ann@example.com");
    OutboxItem item = request("ann@example.com");
    EXPECT_EQ(pending(), 1u);
    EXPECT_EQ(item.delivery.purpose, Purpose::SignIn);
    // the store holds neither the token nor the address of the waiting email in clear
    const std::string file = data_file();
    EXPECT_EQ(file.find(item.delivery.token.reveal()), std::string::npos) << "the token is in the store in clear";
    ASSERT_TRUE(id_->outbox().sent(item));
    EXPECT_EQ(pending(), 0u);
}

TEST_F(OutboxTest, UnknownAddressWritesNothingToSend) {
    auto issued = id_->tokens().issue_token(Intent::Login, "nobody@example.com", {}, "198.51.100.7");
    ASSERT_TRUE(issued);
    EXPECT_FALSE(issued->delivery.has_value());
    EXPECT_TRUE(issued->outbox_key.empty());
    EXPECT_EQ(pending(), 0u);
    // the decoy writes that make it cost what a send costs leave nothing behind
    EXPECT_TRUE(store_->read()->tokens_for("default", "nobody@example.com").empty());
    // ... nor does a request while a token is waiting
    add_user("wait@example.com");
    OutboxItem first = request("wait@example.com");
    policy_.token_resend = 60000;
    id_ = make_identity(settings_);
    auto again = id_->tokens().issue_token(Intent::Login, "wait@example.com", {}, "198.51.100.7");
    ASSERT_TRUE(again);
    EXPECT_FALSE(again->delivery.has_value());
    EXPECT_EQ(pending(), 1u) << "only the first request's email";
    EXPECT_EQ(store_->read()->tokens_for("default", "wait@example.com").size(), 1u);
}

TEST_F(OutboxTest, RefusedSendsAreTriedAgainWithADoublingDelayThenGivenUp) {
    add_user("bob@example.com");
    OutboxItem item = request("bob@example.com");
    const Secret token = item.delivery.token;
    std::vector<Millis> delays;
    for (;;) {
        auto d = id_->outbox().failed(item);
        ASSERT_TRUE(d) << d.error().message;
        if (!d.value()) break;
        delays.push_back(*d.value());
        ASSERT_TRUE(id_->outbox().wanted(item).value()) << "still to be sent by its holder";
        clock_->advance(*d.value());
    }
    EXPECT_EQ(delays, (std::vector<Millis>{1000, 2000, 4000})) << "three retries, 1 s then doubling";
    EXPECT_EQ(pending(), 0u);
    EXPECT_FALSE(token_live(token)) << "a delivery that finally fails cancels its token";
    auto audit = store_->read()->audit(1);
    ASSERT_EQ(audit.size(), 1u);
    EXPECT_EQ(audit[0].kind, "delivery.failed");
    EXPECT_EQ(audit[0].detail, "sign_in");
    EXPECT_FALSE(id_->tokens().exchange(token)) << "the cancelled token does not sign in";
}

TEST_F(OutboxTest, ByDefaultARefusedSendIsTriedAgainForAsLongAsItsCodeLives) {
    settings_.retries = OutboxSettings::kUntilExpiry;
    id_ = make_identity(settings_);
    add_user("abe@example.com");
    OutboxItem item = request("abe@example.com");
    const Secret token = item.delivery.token;
    Millis waited = 0;
    std::vector<Millis> delays;
    for (int i = 0; i < 1000; ++i) {
        auto d = id_->outbox().failed(item);
        ASSERT_TRUE(d) << d.error().message;
        if (!d.value()) break;
        delays.push_back(*d.value());
        EXPECT_LE(*d.value(), kMaxRetryDelay);
        waited += *d.value();
        clock_->advance(*d.value());
    }
    ASSERT_GE(delays.size(), 8u);
    EXPECT_EQ(delays[0], 1000);
    EXPECT_EQ(delays[1], 2000);
    EXPECT_EQ(delays.back(), kMaxRetryDelay) << "the doubling stops at a minute";
    // tried again until the next try would come after the code expired (ten minutes)
    EXPECT_GT(waited, policy_.token_ttl - kMaxRetryDelay - 1);
    EXPECT_LE(waited, policy_.token_ttl);
    EXPECT_EQ(pending(), 0u);
    EXPECT_FALSE(token_live(token)) << "given up once the code could no longer be used";
    EXPECT_EQ(store_->read()->audit(1).at(0).kind, "delivery.failed");
}

TEST_F(OutboxTest, ARelayThatWasDownForAMinuteStillDeliversTheCode) {
    settings_.retries = OutboxSettings::kUntilExpiry;
    id_ = make_identity(settings_);
    add_user("ada@example.com");
    OutboxItem item = request("ada@example.com");
    Millis waited = 0;
    while (waited < 60000) {
        auto d = id_->outbox().failed(item);
        ASSERT_TRUE(d && d.value()) << "still tried after " << waited << " ms";
        waited += *d.value();
        clock_->advance(*d.value());
    }
    ASSERT_TRUE(id_->outbox().wanted(item).value());
    ASSERT_TRUE(id_->outbox().sent(item));
    EXPECT_TRUE(id_->tokens().exchange(item.delivery.token)) << "the code that finally arrived signs in";
}

TEST_F(OutboxTest, APermanentRefusalGivesUpAtOnceAndSaysWhy) {
    add_user("ann@example.com");
    OutboxItem item = request("ann@example.com");
    clock_->advance(1);  // its audit entry the newest one in any store (PostgreSQL orders by time)
    ASSERT_TRUE(id_->outbox().refused(item, "smtp 550"));
    EXPECT_EQ(pending(), 0u);
    EXPECT_FALSE(token_live(item.delivery.token)) << "no retry: the token is cancelled";
    auto audit = store_->read()->audit(1);
    ASSERT_EQ(audit.size(), 1u);
    EXPECT_EQ(audit[0].kind, "delivery.failed");
    EXPECT_EQ(audit[0].detail, "sign_in: smtp 550");
    EXPECT_FALSE(id_->outbox().failed(item).value()) << "nothing left to try again";
    const std::size_t entries = store_->read()->audit_count();
    ASSERT_TRUE(id_->outbox().refused(item, "smtp 550")) << "a second refusal finds nothing";
    EXPECT_EQ(store_->read()->audit_count(), entries) << "and audits nothing";
}

TEST_F(OutboxTest, ASuccessAfterAFailureKeepsTheToken) {
    add_user("cy@example.com");
    OutboxItem item = request("cy@example.com");
    auto d = id_->outbox().failed(item);
    ASSERT_TRUE(d && d.value());
    ASSERT_TRUE(id_->outbox().sent(item));
    EXPECT_EQ(pending(), 0u);
    EXPECT_TRUE(id_->tokens().exchange(item.delivery.token));
}

TEST_F(OutboxTest, AnEntryWhoseSenderVanishedIsClaimedAfterItsHold) {
    add_user("dee@example.com");
    OutboxItem held = request("dee@example.com");
    auto none = id_->outbox().claim_due(10);
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty()) << "held by its sender until the hold passes";
    clock_->advance(settings_.hold);
    auto claimed = id_->outbox().claim_due(10);
    ASSERT_TRUE(claimed);
    ASSERT_EQ(claimed->size(), 1u);
    const OutboxItem &c = claimed->front();
    EXPECT_EQ(c.delivery.token.reveal(), held.delivery.token.reveal()) << "the same email, unsealed";
    EXPECT_EQ(c.delivery.email, "dee@example.com");
    EXPECT_EQ(c.attempts, 2u);
    EXPECT_FALSE(id_->outbox().wanted(held).value()) << "the vanished sender's key is no longer the entry's";
    EXPECT_TRUE(id_->outbox().claim_due(10)->empty()) << "held by its new sender";
}

// signin-admin outbox: what waits, with the reason of its last failure, and never its secrets.
TEST_F(OutboxTest, WaitingEntriesShowTheirAddressTriesNextTryAndLastError) {
    add_user("ivy@example.com");
    add_user("jon@example.com");
    const Millis start = clock_->now();
    OutboxItem ivy = request("ivy@example.com");
    clock_->advance(5);
    OutboxItem jon = request("jon@example.com");
    {
        auto fresh = id_->outbox().waiting(10);
        ASSERT_TRUE(fresh) << fresh.error().message;
        ASSERT_EQ(fresh->size(), 2u);
        EXPECT_EQ(fresh->at(0).email, "ivy@example.com");
        EXPECT_EQ(fresh->at(0).attempts, 1u);
        EXPECT_EQ(fresh->at(0).next_try_at, start) << "sent at once by its holder";
        EXPECT_EQ(fresh->at(0).due_at, start + settings_.hold);
        EXPECT_EQ(fresh->at(0).last_error, "") << "nothing failed yet";
    }
    ASSERT_TRUE(id_->outbox().failed(ivy, "the relay refused the recipient: 451 4.7.1 greylisted").value());
    clock_->advance(1000);
    auto d = id_->outbox().failed(ivy, std::string(1000, 'x'));
    ASSERT_TRUE(d && d.value());
    ASSERT_TRUE(id_->outbox().failed(jon).value());
    auto w = id_->outbox().waiting(10);
    ASSERT_TRUE(w);
    ASSERT_EQ(w->size(), 2u);
    // the earliest due first: jon's first retry comes before ivy's second
    const OutboxEntry &j = w->at(0), &i = w->at(1);
    EXPECT_EQ(j.email, "jon@example.com");
    ASSERT_TRUE(j.purpose);
    EXPECT_EQ(*j.purpose, Purpose::SignIn);
    EXPECT_EQ(j.last_error, "no reason given");
    EXPECT_EQ(i.email, "ivy@example.com");
    EXPECT_EQ(i.attempts, 3u);
    EXPECT_EQ(i.next_try_at, start + 5 + 1000 + 2000) << "the second failure's delay doubled";
    EXPECT_EQ(i.due_at, i.next_try_at + settings_.hold);
    EXPECT_EQ(i.last_error, std::string(300, 'x')) << "the latest reason, cut short";
    EXPECT_EQ(i.created_at, start);
    // one that does not open under this key still shows its tries and error, not its address
    OutboxSettings other = settings_;
    other.key[0] ^= 1;
    auto stranger = make_identity(other);
    auto blind = stranger->outbox().waiting(1);
    ASSERT_TRUE(blind);
    ASSERT_EQ(blind->size(), 1u) << "at most the count asked";
    EXPECT_EQ(blind->at(0).email, "");
    EXPECT_FALSE(blind->at(0).purpose);
    EXPECT_EQ(blind->at(0).last_error, "no reason given");
    EXPECT_EQ(pending(), 2u) << "listing changes nothing";
}

TEST_F(OutboxTest, AClaimSaysThatTheSenderStopped) {
    add_user("kim@example.com");
    OutboxItem held = request("kim@example.com");
    ASSERT_TRUE(id_->outbox().failed(held, "smtp 451").value());
    clock_->advance(Outbox::backoff(1) + settings_.hold);
    ASSERT_EQ(id_->outbox().claim_due(10)->size(), 1u);
    auto w = id_->outbox().waiting(10);
    ASSERT_TRUE(w);
    ASSERT_EQ(w->size(), 1u);
    EXPECT_EQ(w->at(0).last_error, "its sender stopped before the send's end was recorded");
    EXPECT_EQ(w->at(0).next_try_at, clock_->now());
}

// Entries written before the outbox kept a next try and a last error (format 1) still read.
TEST(OutboxRecords, FormatOneEntriesReadWithoutNextTryOrError) {
    OutboxRecord o;
    o.created_at = 7;
    o.attempts = 2;
    o.token_hash = "h";
    o.client = "c";
    o.sealed = "s";
    o.next_try_at = 9;
    o.last_error = "e";
    const std::string key(16, '\0');
    const std::string v2 = records::encode_outbox(o);
    auto back = records::decode_outbox(key, v2);
    EXPECT_EQ(back.next_try_at, 9);
    EXPECT_EQ(back.last_error, "e");
    std::string v1 = v2.substr(0, v2.size() - 8 - 4 - 1);
    v1[0] = 1;
    auto old = records::decode_outbox(key, v1);
    EXPECT_EQ(old.sealed, "s");
    EXPECT_EQ(old.attempts, 2u);
    EXPECT_EQ(old.next_try_at, 0);
    EXPECT_EQ(old.last_error, "");
    EXPECT_THROW(records::decode_outbox(key, v1.substr(0, v1.size() - 1)), StoreError);
    v1[0] = 3;
    EXPECT_THROW(records::decode_outbox(key, v1), StoreError) << "a format from the future";
}

TEST_F(OutboxTest, AClaimDropsAnEntryWhoseTokenWasSpent) {
    add_user("eve@example.com");
    OutboxItem held = request("eve@example.com");
    ASSERT_TRUE(id_->tokens().exchange(held.delivery.token));
    EXPECT_FALSE(id_->outbox().wanted(held).value()) << "a spent token is not sent again";
    clock_->advance(settings_.hold);
    EXPECT_TRUE(id_->outbox().claim_due(10)->empty());
    EXPECT_EQ(pending(), 0u);
}

TEST_F(OutboxTest, AnotherSecretKeyCannotOpenTheOutboxAndGivesUp) {
    add_user("fay@example.com");
    OutboxItem held = request("fay@example.com");
    OutboxSettings other = settings_;
    other.key[0] ^= 1;
    auto id2 = make_identity(other);
    clock_->advance(settings_.hold);
    auto claimed = id2->outbox().claim_due(10);
    ASSERT_TRUE(claimed);
    EXPECT_TRUE(claimed->empty());
    EXPECT_EQ(pending(), 0u);
    EXPECT_FALSE(token_live(held.delivery.token)) << "an email that cannot be sent cancels its token";
    auto audit = store_->read()->audit(1);
    ASSERT_EQ(audit.size(), 1u);
    EXPECT_EQ(audit[0].kind, "delivery.failed");
}

TEST_F(OutboxTest, ClaimsCountAsAttempts) {
    add_user("gil@example.com");
    OutboxItem held = request("gil@example.com");
    for (int i = 0; i < 3; ++i) {
        clock_->advance(settings_.hold);
        ASSERT_EQ(id_->outbox().claim_due(10)->size(), 1u) << "claim " << i;
    }
    clock_->advance(settings_.hold);
    EXPECT_TRUE(id_->outbox().claim_due(10)->empty()) << "1 + retries sends, then given up";
    EXPECT_FALSE(token_live(held.delivery.token));
}

TEST_F(OutboxTest, APasswordChangeNoticeGoesThroughTheOutbox) {
    policy_.with_passwords = true;
    policy_.password_hash.opslimit = 1;
    policy_.password_hash.memlimit = 8192;
    id_ = make_identity(settings_);
    add_user("hal@example.com");
    OutboxItem login = request("hal@example.com");
    ASSERT_TRUE(id_->outbox().sent(login));
    auto session = id_->tokens().exchange(login.delivery.token);
    ASSERT_TRUE(session) << session.error().message;
    auto p = id_->sessions().authenticate_from(session->token, "198.51.100.7", SessionKind::Cookie);
    ASSERT_TRUE(p) << p.error().message;
    ASSERT_TRUE(id_->passwords().set_password(p.value(), Secret("correct horse battery staple 1")));
    auto changed = id_->passwords().change_password(p.value(), Secret("correct horse battery staple 1"),
                                                    Secret("another long passphrase 22"), "198.51.100.7");
    ASSERT_TRUE(changed) << changed.error().message;
    EXPECT_EQ(changed->outbox_key.size(), 16u);
    EXPECT_EQ(pending(), 1u);
    // its sender vanished: another claims the notice, which has no token to check
    clock_->advance(settings_.hold);
    auto claimed = id_->outbox().claim_due(10);
    ASSERT_TRUE(claimed);
    ASSERT_EQ(claimed->size(), 1u);
    EXPECT_EQ(claimed->front().delivery.purpose, Purpose::PasswordChanged);
    EXPECT_TRUE(claimed->front().delivery.token.empty());
    EXPECT_EQ(Outbox::backoff(1), 1000);
    EXPECT_EQ(Outbox::backoff(4), 8000);
}

TEST_F(OutboxTest, WithoutAnOutboxNothingIsWritten) {
    std::string why;
    auto origin = parse_origin("http://127.0.0.1:8080", &why);
    Identity plain(store_, *origin, policy_, DeliveryFn{}, clock_);
    add_user("ida@example.com");
    auto issued = plain.tokens().issue_token(Intent::Login, "ida@example.com", {}, "x");
    ASSERT_TRUE(issued);
    EXPECT_TRUE(issued->outbox_key.empty());
    EXPECT_EQ(pending(), 0u);
}

}  // namespace
