// Events for the application (events.hpp): the Standard Webhooks signature against the
// specification's own example, the secret's form, the retry schedule, and on both stores: an event
// written with its change and only then, a user's events in order across retries, dropping after
// the last try, the type filter, and what signin-admin learns from the store.
#include <gtest/gtest.h>
#include <sodium.h>

#include <filesystem>
#include <functional>
#include <future>
#include <thread>
#include <limits>

#include "engine_fixtures.hpp"
#include "pg_fixture.hpp"
#include "signin/auth.hpp"
#include "signin/encoding.hpp"
#include "signin/events.hpp"
#include "signin/json.hpp"
#include "store/records.hpp"

using namespace signin;
using signin::testing::FakeClock;
using signin::testing::pg_server;
using signin::testing::PgSchema;

namespace {

// A user.created event of `user_id`, its id msg_<n>, as the store gets it before put_event.
EventRecord user_created(int n, const std::string &user_id) {
    EventRecord r;
    r.id = "msg_" + std::to_string(n);
    r.type = "user.created";
    r.user_id = user_id;
    r.body = "{}";
    return r;
}

// The example of the Standard Webhooks specification (and of its reference libraries' tests).
TEST(WebhookSignature, MatchesTheSpecificationsExample) {
    std::string why;
    auto key = parse_webhook_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", &why);
    ASSERT_TRUE(key) << why;
    EXPECT_EQ(webhook_signature(*key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, R"({"test": 2432232314})"),
              "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    // any change of id, time or body gives another signature
    EXPECT_NE(webhook_signature(*key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265331, R"({"test": 2432232314})"),
              "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    EXPECT_NE(webhook_signature(*key, "msg_p5jXN8AQM9LWM0D4loKWxJel", 1614265330, R"({"test": 2432232314})"),
              "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

// WebhookKey's HMAC (OpenSSL's SHA-256, its key's blocks hashed once) against libsodium's
// HMAC-SHA256, for keys shorter than a block, of a block, and longer (hashed first), messages
// around the block sizes, and one key signing many messages in turn.
TEST(WebhookSignature, OneKeySignsAsLibsodiumsHmac) {
    for (std::size_t key_len : {1, 24, 32, 63, 64, 65, 100}) {
        std::string raw(key_len, '\0');
        randombytes_buf(raw.data(), raw.size());
        const Secret key(raw);
        const WebhookKey signer(key);
        for (std::size_t body_len : {0, 1, 20, 55, 56, 64, 119, 120, 300, 1000}) {
            std::string body(body_len, '\0');
            for (auto &c : body) c = static_cast<char>('a' + randombytes_uniform(26));
            const std::string id = "msg_" + std::to_string(body_len);
            const std::string message = id + ".1700000000." + body;
            crypto_auth_hmacsha256_state st;
            crypto_auth_hmacsha256_init(&st, reinterpret_cast<const unsigned char *>(raw.data()), raw.size());
            crypto_auth_hmacsha256_update(&st, reinterpret_cast<const unsigned char *>(message.data()), message.size());
            unsigned char mac[crypto_auth_hmacsha256_BYTES];
            crypto_auth_hmacsha256_final(&st, mac);
            char b64[sodium_base64_ENCODED_LEN(sizeof mac, sodium_base64_VARIANT_ORIGINAL)];
            sodium_bin2base64(b64, sizeof b64, mac, sizeof mac, sodium_base64_VARIANT_ORIGINAL);
            const std::string want = std::string("v1,") + b64;
            EXPECT_EQ(signer.sign(id, 1700000000, body), want) << key_len << " " << body_len;
            EXPECT_EQ(webhook_signature(key, id, 1700000000, body), want) << key_len << " " << body_len;
        }
    }
}

TEST(WebhookSecret, OnlyTheWhsecForm) {
    std::string why;
    EXPECT_TRUE(parse_webhook_secret("  whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n", &why)) << why;
    EXPECT_FALSE(parse_webhook_secret("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", &why));
    EXPECT_NE(why.find("whsec_"), std::string::npos);
    EXPECT_FALSE(parse_webhook_secret("whsec_not base64!", &why));
    EXPECT_FALSE(parse_webhook_secret("whsec_c2hvcnQ=", &why)) << "5 bytes is too short a key";
    EXPECT_NE(why.find("24 to 64"), std::string::npos);
}

TEST(EventRetries, DoubleFromASecondUpToAnHour) {
    EXPECT_EQ(Events::backoff(0), 0);
    EXPECT_EQ(Events::backoff(1), 1000);
    EXPECT_EQ(Events::backoff(2), 2000);
    EXPECT_EQ(Events::backoff(12), 2048000);
    EXPECT_EQ(Events::backoff(13), 3600000);
    EXPECT_EQ(Events::backoff(16), 3600000);
    EXPECT_EQ(Events::backoff(1000), 3600000);
    Millis total = 0;  // the default 16 retries: how long an application may be away
    for (std::uint32_t n = 1; n <= 16; ++n) total += Events::backoff(n);
    EXPECT_EQ(total, (4095 + 4 * 3600) * 1000LL);
}

TEST(EventTypes, NamedOnce) {
    for (std::size_t i = 0; i < kEventTypes.size(); ++i) EXPECT_EQ(event_type_index(kEventTypes[i]), i);
    EXPECT_FALSE(event_type_index("user.made"));
}

enum class Backend { Lmdb, Pg };

class EventsTest : public ::testing::TestWithParam<Backend> {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/signin-events-test-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        root_ = tmpl;
        if (GetParam() == Backend::Pg) {
            auto server = pg_server();
            if (!server) GTEST_SKIP() << "SIGNIN_TEST_PG is not set: no PostgreSQL to test against";
            schema_ = std::make_unique<PgSchema>(*server);
            PgOptions o;
            o.conninfo = schema_->conninfo();
            store_ = std::shared_ptr<Store>(open_pg_store(o));
        } else {
            LmdbOptions o;
            o.path = root_ + "/db";
            o.map_size = 1ull << 24;
            store_ = std::shared_ptr<Store>(open_lmdb_store(o));
        }
        clock_ = std::make_shared<FakeClock>();
        std::string why;
        settings_.key = *parse_webhook_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", &why);
        settings_.retries = 3;
        settings_.hold = 60000;
    }
    void TearDown() override {
        id_.reset();
        store_.reset();
        schema_.reset();
        std::filesystem::remove_all(root_);
    }

    Identity &identity() {
        if (!id_) {
            std::string why;
            id_ = std::make_unique<Identity>(store_, *parse_origin("http://127.0.0.1:8080", &why), Policy{}, DeliveryFn{},
                                             clock_);
            id_->use_events(settings_);
        }
        return *id_;
    }

    void add_user(const std::string &id, const std::string &email) {
        User u;
        u.id = id;
        u.email = email;
        u.group_id = "default";
        auto txn = store_->write();
        txn->put_user(u);
        txn->commit();
    }

    std::vector<EventItem> claim(std::size_t budget = 100) {
        auto items = identity().events().claim_due(budget);
        EXPECT_TRUE(items) << items.error().message;
        return items ? items.value() : std::vector<EventItem>{};
    }

    std::string root_;
    std::unique_ptr<PgSchema> schema_;
    std::shared_ptr<Store> store_;
    std::shared_ptr<FakeClock> clock_;
    EventSettings settings_;
    std::unique_ptr<Identity> id_;
};

INSTANTIATE_TEST_SUITE_P(Backends, EventsTest, ::testing::Values(Backend::Lmdb, Backend::Pg),
                         [](const auto &p) { return p.param == Backend::Lmdb ? "Lmdb" : "Pg"; });

TEST_P(EventsTest, TheStoreKeepsThemInTheOrderWritten) {
    std::vector<std::string> keys;
    {
        auto w = store_->write();
        for (int i = 0; i < 3; ++i) {
            EventRecord r = user_created(i, "u" + std::to_string(i));
            r.created_at = 1000 - i;  // the order is the writing's, not the times'
            r.due_at = r.created_at;
            w->put_event(r);
            ASSERT_EQ(r.key.size(), 8u);
            keys.push_back(r.key);
        }
        w->commit();
    }
    EXPECT_LT(keys[0], keys[1]);
    EXPECT_LT(keys[1], keys[2]);
    {
        auto w = store_->write();
        auto r = w->event(keys[1]);
        ASSERT_TRUE(r);
        r->attempts = 4;
        r->last_error = "the application answered 500";
        w->update_event(*r);
        w->del_event(keys[0]);
        w->commit();
    }
    auto r = store_->read();
    EXPECT_EQ(r->event_count(), 2u);
    auto all = r->events(10);
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].id, "msg_1");
    EXPECT_EQ(all[0].attempts, 4u);
    EXPECT_EQ(all[0].last_error, "the application answered 500");
    EXPECT_EQ(all[1].id, "msg_2");
    EXPECT_EQ(r->events(1).size(), 1u);
    EXPECT_TRUE(store_->check_integrity().empty());
    EXPECT_EQ(r->counts().events, 2u);
}

TEST_P(EventsTest, WrittenWithTheChangeAndNeverWithoutIt) {
    add_user("u1", "ann@x.example");
    Identity &id = identity();
    ASSERT_TRUE(id.set_suspended("", "ann@x.example", true));
    ASSERT_TRUE(id.set_role("", "ann@x.example", "staff", true));
    auto items = claim();
    ASSERT_EQ(items.size(), 1u) << "the user's second event waits for the first";
    EXPECT_EQ(items[0].type, "user.suspended");
    EXPECT_EQ(items[0].user_id, "u1");
    EXPECT_EQ(items[0].id.substr(0, 4), "msg_");
    auto raw = enc::base64url_decode(std::string_view(items[0].id).substr(4));  // 128 random bits
    ASSERT_TRUE(raw) << items[0].id;
    EXPECT_EQ(raw->size(), 16u) << items[0].id;
    EXPECT_NE(items[0].body.find(R"("type":"user.suspended")"), std::string::npos) << items[0].body;
    EXPECT_NE(items[0].body.find(R"("email":"ann@x.example")"), std::string::npos) << items[0].body;
    EXPECT_NE(items[0].body.find(R"("timestamp":")"), std::string::npos) << items[0].body;
    ASSERT_TRUE(id.events().sent(items[0]));
    items = claim();
    ASSERT_EQ(items.size(), 1u);
    EXPECT_EQ(items[0].type, "user.roles_changed");
    EXPECT_NE(items[0].body.find(R"("roles":["staff"])"), std::string::npos) << items[0].body;
    ASSERT_TRUE(id.events().sent(items[0]));
    EXPECT_TRUE(claim().empty());

    // a transaction that never commits leaves no event
    {
        auto txn = store_->write();
        txn->append_audit(AuditEntry{clock_->now(), "user.suspended", "ann@x.example", "", "u1", ""});
        EXPECT_EQ(txn->event_count(), 1u) << "written in the change's own transaction";
    }
    EXPECT_EQ(store_->read()->event_count(), 0u);
    // nor does a change that changes nothing (a role held already)
    ASSERT_TRUE(id.set_role("", "ann@x.example", "staff", true));
    EXPECT_EQ(store_->read()->event_count(), 0u);
}

// A worker records the sends that ended meanwhile in one write: each goes, and one that is no
// longer its holder's (claimed again by another, with a new attempt) is left alone.
TEST_P(EventsTest, SeveralSentAtOnceGoInOneWrite) {
    add_user("u1", "ann@x.example");
    add_user("u2", "bob@x.example");
    add_user("u3", "cy@x.example");
    Identity &id = identity();
    for (const char *who : {"ann@x.example", "bob@x.example", "cy@x.example"}) {
        ASSERT_TRUE(id.set_suspended("", who, true));
    }
    auto items = claim();
    ASSERT_EQ(items.size(), 3u);
    EventItem stale = items[2];
    stale.id = "msg_not_this_one";
    ASSERT_TRUE(id.events().sent(std::vector<EventItem>{items[0], items[1], stale}));
    auto left = store_->read()->events(10);
    ASSERT_EQ(left.size(), 1u) << "the two sent went, the other stays";
    EXPECT_EQ(left[0].id, items[2].id);
    ASSERT_TRUE(id.events().sent(std::vector<EventItem>{}));
    EXPECT_EQ(store_->read()->event_count(), 1u);
}

TEST_P(EventsTest, AUsersEventsStayInOrderAcrossRetries) {
    add_user("ua", "a@x.example");
    add_user("ub", "b@x.example");
    Identity &id = identity();
    ASSERT_TRUE(id.set_suspended("", "a@x.example", true));    // a1
    ASSERT_TRUE(id.set_suspended("", "b@x.example", true));    // b1
    ASSERT_TRUE(id.set_suspended("", "a@x.example", false));   // a2
    auto items = claim();
    ASSERT_EQ(items.size(), 2u);
    EXPECT_EQ(items[0].type, "user.suspended");
    EXPECT_EQ(items[0].user_id, "ua");
    EXPECT_EQ(items[1].user_id, "ub");
    const EventItem a1 = items[0];
    EXPECT_TRUE(claim().empty()) << "held by their sender";

    auto r = id.events().failed(a1, "the application answered 500");
    ASSERT_TRUE(r);
    EXPECT_EQ(r.value(), EventRetry::Later);
    ASSERT_TRUE(id.events().sent(items[1]));
    EXPECT_TRUE(claim().empty()) << "a2 waits while a1 waits for its next try";
    auto waiting = id.events().waiting(10);
    ASSERT_TRUE(waiting);
    ASSERT_EQ(waiting->size(), 2u);
    EXPECT_EQ(waiting.value()[0].last_error, "the application answered 500");

    clock_->advance(Events::backoff(1));
    items = claim();
    ASSERT_EQ(items.size(), 1u);
    EXPECT_EQ(items[0].id, a1.id) << "the same webhook-id at every try";
    EXPECT_EQ(items[0].body, a1.body);
    EXPECT_EQ(items[0].attempts, 2u);
    EXPECT_EQ(id.events().sign(items[0], 1700000000), webhook_signature(settings_.key, a1.id, 1700000000, a1.body));
    ASSERT_TRUE(id.events().sent(items[0]));
    items = claim();
    ASSERT_EQ(items.size(), 1u);
    EXPECT_EQ(items[0].type, "user.unsuspended");
    // the failure of a send that another sender took over meanwhile changes nothing
    clock_->advance(settings_.hold);
    auto again = claim();
    ASSERT_EQ(again.size(), 1u) << "its sender vanished: another takes it after the hold";
    EXPECT_EQ(again[0].attempts, 2u);
    EXPECT_EQ(again[0].id, items[0].id);
    auto late = id.events().failed(items[0], "late");
    ASSERT_TRUE(late);
    EXPECT_EQ(late.value(), EventRetry::Lost);
    ASSERT_TRUE(id.events().sent(again[0]));
    EXPECT_EQ(store_->read()->event_count(), 0u);
}

// A long queue: the scan reads past held events and those waiting behind them, across the pages a
// store reads in, stops at the budget, and keeps each user's order.
TEST_P(EventsTest, ALongQueueIsScannedInOrderAndOnlyAsFarAsNeeded) {
    Identity &id = identity();
    const int users = 150;
    for (int i = 0; i < users; ++i) {
        const std::string email = "p" + std::to_string(i) + "@x.example";
        add_user("u" + std::to_string(1000 + i), email);
        ASSERT_TRUE(id.set_suspended("", email, true));
    }
    for (int i = 0; i < users; ++i) {  // each user's second event, behind all the first ones
        ASSERT_TRUE(id.set_suspended("", "p" + std::to_string(i) + "@x.example", false));
    }
    EXPECT_TRUE(claim(0).empty()) << "no budget, nothing claimed";
    auto first = claim(100);
    ASSERT_EQ(first.size(), 100u) << "the budget";
    for (int i = 0; i < 100; ++i) {
        EXPECT_EQ(first[static_cast<std::size_t>(i)].user_id, "u" + std::to_string(1000 + i));
        EXPECT_EQ(first[static_cast<std::size_t>(i)].type, "user.suspended");
    }
    // past 100 held events and into the second half: the 50 first events left, never a second
    // event of a user whose first is held
    auto second = claim(100);
    ASSERT_EQ(second.size(), 50u);
    for (const auto &e : second) EXPECT_EQ(e.type, "user.suspended") << e.user_id;
    EXPECT_EQ(second.front().user_id, "u1100");
    EXPECT_TRUE(claim(100).empty());
    // once a user's first event is sent, its second may go, from the far end of the queue
    ASSERT_TRUE(id.events().sent(first[7]));
    auto next = claim(100);
    ASSERT_EQ(next.size(), 1u);
    EXPECT_EQ(next[0].user_id, "u1007");
    EXPECT_EQ(next[0].type, "user.unsuspended");
    auto due = id.events().any_due();
    ASSERT_TRUE(due);
    EXPECT_FALSE(due.value()) << "everything left is held or waits behind a held event";
    ASSERT_TRUE(id.events().sent(first[8]));
    due = id.events().any_due();
    ASSERT_TRUE(due);
    EXPECT_TRUE(due.value());
}

TEST_P(EventsTest, DroppedAfterTheLastRetryAndAudited) {
    add_user("u1", "ann@x.example");
    Identity &id = identity();
    ASSERT_TRUE(id.set_suspended("", "ann@x.example", true));
    ASSERT_TRUE(id.set_suspended("", "ann@x.example", false));
    for (std::uint32_t n = 1; n <= 3; ++n) {
        auto items = claim();
        ASSERT_EQ(items.size(), 1u);
        EXPECT_EQ(items[0].type, "user.suspended");
        EXPECT_EQ(items[0].attempts, n);
        auto r = id.events().failed(items[0], "the application answered 503");
        ASSERT_TRUE(r);
        EXPECT_EQ(r.value(), EventRetry::Later);
        clock_->advance(Events::backoff(n));
    }
    auto items = claim();
    ASSERT_EQ(items.size(), 1u);
    EXPECT_EQ(items[0].attempts, 4u);
    auto r = id.events().failed(items[0], "the application answered 503");
    ASSERT_TRUE(r);
    EXPECT_EQ(r.value(), EventRetry::Dropped) << "1 send and 3 retries";
    bool audited = false;
    for (const auto &e : store_->read()->audit(20)) {
        if (e.kind == "event.dropped") {
            audited = true;
            EXPECT_EQ(e.user_id, "u1");
            EXPECT_EQ(e.detail, "user.suspended " + items[0].id);
        }
    }
    EXPECT_TRUE(audited);
    items = claim();
    ASSERT_EQ(items.size(), 1u) << "the next event of the user goes once the dropped one is gone";
    EXPECT_EQ(items[0].type, "user.unsuspended");
}

TEST_P(EventsTest, OnlyTheChosenTypes) {
    add_user("u1", "ann@x.example");
    settings_.types = {"user.roles_changed"};
    Identity &id = identity();
    ASSERT_TRUE(id.set_suspended("", "ann@x.example", true));
    ASSERT_TRUE(id.set_role("", "ann@x.example", "staff", true));
    auto items = claim();
    ASSERT_EQ(items.size(), 1u);
    EXPECT_EQ(items[0].type, "user.roles_changed");
}

TEST_P(EventsTest, SigninAdminWritesTheTypesTheServerPublished) {
    add_user("u1", "ann@x.example");
    settings_.types = {"user.suspended", "user.unsuspended"};
    ASSERT_TRUE(identity().publish_events());
    std::string why;
    Identity admin(store_, *parse_origin("http://127.0.0.1:8080", &why), Policy{}, DeliveryFn{}, clock_);
    // the admin's engine is the only one over its store in signin-admin: the server's hook goes
    id_.reset();
    store_->set_audit_hook(nullptr);
    auto used = admin.use_published_events();
    ASSERT_TRUE(used);
    EXPECT_TRUE(used.value());
    ASSERT_TRUE(admin.set_role("", "ann@x.example", "staff", true));
    ASSERT_TRUE(admin.set_suspended("", "ann@x.example", true));
    auto all = store_->read()->events(10);
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].type, "user.suspended");

    // events off at the server: signin-admin writes none
    Identity off(store_, *parse_origin("http://127.0.0.1:8080", &why), Policy{}, DeliveryFn{}, clock_);
    ASSERT_TRUE(off.publish_events());
    store_->set_audit_hook(nullptr);
    Identity admin2(store_, *parse_origin("http://127.0.0.1:8080", &why), Policy{}, DeliveryFn{}, clock_);
    auto none = admin2.use_published_events();
    ASSERT_TRUE(none);
    EXPECT_FALSE(none.value());
}

TEST(EventRecords, DecodeChecksWhatItReads) {
    EventRecord e;
    e.key = std::string(8, '\1');
    e.id = "msg_x";
    e.type = "user.created";
    e.user_id = "u";
    e.body = "{}";
    e.attempts = 2;
    const std::string data = records::encode_event(e);
    auto back = records::decode_event(e.key, data);
    EXPECT_EQ(back.id, "msg_x");
    EXPECT_EQ(back.attempts, 2u);
    EXPECT_THROW(records::decode_event("short", data), StoreError);
    EXPECT_THROW(records::decode_event(e.key, data.substr(0, data.size() - 1)), StoreError);
}

TEST(EventRecords, HeadReadsWhatASenderChoosesBy) {
    EventRecord e;
    e.key = std::string(8, '\2');
    e.id = "msg_y";
    e.type = "session.created";
    e.user_id = "a-user-id-longer-than-fifteen";
    e.body = std::string(300, 'b');
    e.created_at = 5;
    e.due_at = 123456789;
    e.attempts = 3;
    e.last_error = "the events location answered 500";
    const std::string data = records::encode_event(e);
    const EventHead h = records::decode_event_head(e.key, data);
    EXPECT_EQ(h.key, e.key);
    EXPECT_EQ(h.user_id, e.user_id);
    EXPECT_EQ(h.due_at, 123456789);
    EXPECT_EQ(h.attempts, 3u);
    EXPECT_THROW(records::decode_event_head("short", data), StoreError);
    EXPECT_THROW(records::decode_event_head(e.key, data.substr(0, data.size() - 1)), StoreError);
    EXPECT_THROW(records::decode_event_head(e.key, data + "x"), StoreError);
    // what a deletion checks before it deletes (del_event_if), read in place
    EXPECT_EQ(records::event_id_of(data), "msg_y");
    EXPECT_THROW(records::event_id_of(data.substr(0, 3)), StoreError);
}

// ---- events held as they are written (FreshEvents) ---------------------------------------------

// A batch on this thread whose events FreshEvents holds; what it handed over once committed.
std::vector<EventItem> fresh_batch(Identity &id, const std::function<void()> &writes) {
    FreshEvents fresh(id.events());
    Status st = id.write_batch([&] {
        fresh.restart();
        writes();
    });
    EXPECT_TRUE(st) << st.error().message;
    return fresh.take();
}

// A batch's event is written held by its writer and handed to it once committed: no claim finds
// it, and after the hold (the writer died) another sender takes it. (On PostgreSQL the batch
// holds the events' lock: no other writer of an event runs beside it.)
TEST_P(EventsTest, AFreshEventIsSentWithoutAClaim) {
    add_user("u1", "ann@x.example");
    Identity &id = identity();
    EXPECT_TRUE(id.events().sends_fresh());
    auto fresh = fresh_batch(id, [&] { ASSERT_TRUE(id.set_suspended("", "ann@x.example", true)); });
    ASSERT_EQ(fresh.size(), 1u);
    EXPECT_EQ(fresh[0].type, "user.suspended");
    EXPECT_EQ(fresh[0].user_id, "u1");
    EXPECT_EQ(fresh[0].attempts, 1u);
    auto stored = store_->read()->event(fresh[0].key);
    ASSERT_TRUE(stored);
    EXPECT_EQ(stored->id, fresh[0].id);
    EXPECT_EQ(stored->body, fresh[0].body);
    EXPECT_EQ(stored->attempts, 1u) << "held as a claim holds it";
    EXPECT_EQ(stored->due_at, clock_->now() + settings_.hold);
    EXPECT_TRUE(claim().empty()) << "held by its writer";
    auto due = id.events().any_due();
    ASSERT_TRUE(due);
    EXPECT_FALSE(due.value());

    clock_->advance(settings_.hold);  // its writer never sent it
    auto again = claim();
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].id, fresh[0].id) << "the same webhook-id";
    EXPECT_EQ(again[0].attempts, 2u);
    auto lost = id.events().failed(fresh[0], "late");
    ASSERT_TRUE(lost);
    EXPECT_EQ(lost.value(), EventRetry::Lost) << "its writer is no longer its holder";
    ASSERT_TRUE(id.events().sent(again[0]));
    EXPECT_EQ(store_->read()->event_count(), 0u);
    // outside a FreshEvents nothing is held
    ASSERT_TRUE(id.set_suspended("", "ann@x.example", false));
    EXPECT_EQ(claim().size(), 1u);
}

// Only what a kept transaction wrote is handed over: a write abandoned in the batch (which then
// runs again) leaves nothing, and a batch whose writes are all undone gives nothing. (On
// PostgreSQL the abandoned write spoils the batch's run, which runs again with a transaction per
// write: those hold nothing, and the claims send the event.)
TEST_P(EventsTest, OnlyKeptWritesAreHandedOver) {
    add_user("u1", "ann@x.example");
    add_user("u2", "bob@x.example");
    Identity &id = identity();
    auto fresh = fresh_batch(id, [&] {
        ASSERT_TRUE(id.set_suspended("", "ann@x.example", true));
        auto txn = store_->write();  // abandoned after it wrote an event
        txn->append_audit(AuditEntry{clock_->now(), "user.suspended", "bob@x.example", "", "u2", ""});
    });
    if (GetParam() == Backend::Pg) {
        EXPECT_TRUE(fresh.empty());
        auto items = claim();
        ASSERT_EQ(items.size(), 1u);
        EXPECT_EQ(items[0].user_id, "u1");
        return;
    }
    ASSERT_EQ(fresh.size(), 1u);
    EXPECT_EQ(fresh[0].user_id, "u1");
    auto all = store_->read()->events(10);
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].id, fresh[0].id);
}

// A user whose earlier event waits (due, failed, or held by a claim): the new event is written due
// and the claims send it after the earlier one. A user's events written held in one batch come in
// their order, the earlier one first.
TEST_P(EventsTest, AUserWithAnEarlierWaitingEventKeepsOrder) {
    add_user("ua", "a@x.example");
    add_user("ub", "b@x.example");
    Identity &id = identity();
    ASSERT_TRUE(id.set_suspended("", "a@x.example", true));  // a1, written without FreshEvents
    auto fresh = fresh_batch(id, [&] {
        ASSERT_TRUE(id.set_suspended("", "a@x.example", false));  // a2: behind a1
        ASSERT_TRUE(id.set_suspended("", "b@x.example", true));   // b1
        ASSERT_TRUE(id.set_role("", "b@x.example", "staff", true));  // b2: behind b1, in the same batch
    });
    ASSERT_EQ(fresh.size(), 2u);
    EXPECT_EQ(fresh[0].type, "user.suspended");
    EXPECT_EQ(fresh[0].user_id, "ub");
    EXPECT_EQ(fresh[1].type, "user.roles_changed");
    EXPECT_EQ(fresh[1].user_id, "ub");
    EXPECT_LT(fresh[0].key, fresh[1].key);
    auto items = claim();
    ASSERT_EQ(items.size(), 1u) << "a1 only: a2 waits behind it, b's are held";
    EXPECT_EQ(items[0].type, "user.suspended");
    EXPECT_EQ(items[0].user_id, "ua");
    ASSERT_TRUE(id.events().sent(items[0]));
    items = claim();
    ASSERT_EQ(items.size(), 1u);
    EXPECT_EQ(items[0].type, "user.unsuspended");
    EXPECT_EQ(items[0].attempts, 1u);
    ASSERT_TRUE(id.events().sent(items[0]));

    // b1 fails: b2, held behind it by the same sender, is given back and goes after b1's retry
    auto r = id.events().failed(fresh[0], "the application answered 500");
    ASSERT_TRUE(r);
    EXPECT_EQ(r.value(), EventRetry::Later);
    ASSERT_TRUE(id.events().release({fresh[1]}));
    EXPECT_TRUE(claim().empty()) << "b2 waits for b1's next try";
    clock_->advance(Events::backoff(1));
    items = claim();
    ASSERT_EQ(items.size(), 1u);
    EXPECT_EQ(items[0].id, fresh[0].id);
    EXPECT_EQ(items[0].attempts, 2u);
    ASSERT_TRUE(id.events().sent(items[0]));
    items = claim();
    ASSERT_EQ(items.size(), 1u);
    EXPECT_EQ(items[0].id, fresh[1].id);
    EXPECT_EQ(items[0].attempts, 1u) << "a given back event's try was never made";
    ASSERT_TRUE(id.events().sent(items[0]));
    EXPECT_EQ(store_->read()->event_count(), 0u);
}

// A long queue (the application is behind): nothing is held, the claims send everything.
TEST_P(EventsTest, NothingIsHeldBehindALongQueue) {
    {
        auto w = store_->write();
        for (int i = 0; i < 600; ++i) {
            EventRecord r = user_created(i, "q" + std::to_string(i));
            w->put_event(r);
        }
        w->commit();
    }
    add_user("u1", "ann@x.example");
    Identity &id = identity();
    auto fresh = fresh_batch(id, [&] { ASSERT_TRUE(id.set_suspended("", "ann@x.example", true)); });
    EXPECT_TRUE(fresh.empty());
    EXPECT_EQ(store_->read()->event_count(), 601u);
}

// PostgreSQL, where several nodes write: a batch holds its events only when no other writer of an
// event runs beside it. One that began before the batch and has not committed makes the batch hold
// nothing (the claims send both, in their order); one that begins while the batch holds the events'
// lock waits for the batch's commit, and its event comes after the batch's.
TEST_P(EventsTest, AWriterOfAnEventBesideABatchKeepsTheOrder) {
    if (GetParam() != Backend::Pg) GTEST_SKIP() << "LMDB runs one write transaction at a time";
    add_user("u1", "ann@x.example");
    Identity &id = identity();
    auto beside = store_->write();  // another node's transaction, not committed yet
    EventRecord first = user_created(1, "u1");
    beside->put_event(first);
    auto fresh = fresh_batch(id, [&] { ASSERT_TRUE(id.set_suspended("", "ann@x.example", true)); });
    EXPECT_TRUE(fresh.empty()) << "an event may have been written before the batch's, unseen";
    beside->commit();
    auto items = claim();
    ASSERT_EQ(items.size(), 1u) << "one at a time for a user";
    EXPECT_EQ(items[0].id, "msg_1");
    ASSERT_TRUE(id.events().sent(items[0]));
    items = claim();
    ASSERT_EQ(items.size(), 1u);
    EXPECT_EQ(items[0].type, "user.suspended");
    ASSERT_TRUE(id.events().sent(items[0]));

    std::promise<std::string> written;
    std::future<std::string> key = written.get_future();
    std::thread other;
    bool waited = false;
    fresh = fresh_batch(id, [&] {
        ASSERT_TRUE(id.set_suspended("", "ann@x.example", false));
        other = std::thread([&] {  // a transaction of its own (the batch is this thread's)
            try {
                auto w = store_->write();
                EventRecord r = user_created(2, "u1");
                w->put_event(r);
                w->commit();
                written.set_value(r.key);
            } catch (const std::exception &) {
                written.set_exception(std::current_exception());
            }
        });
        waited = key.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout;
    });
    other.join();
    EXPECT_TRUE(waited) << "the event beside waits for the batch holding the events' lock";
    ASSERT_EQ(fresh.size(), 1u);
    EXPECT_EQ(fresh[0].type, "user.unsuspended");
    const std::string after = key.get();
    EXPECT_GT(after, fresh[0].key) << "and takes a later key";
    EXPECT_TRUE(claim().empty()) << "behind the held one";
    ASSERT_TRUE(id.events().sent(fresh[0]));
    items = claim();
    ASSERT_EQ(items.size(), 1u);
    EXPECT_EQ(items[0].id, "msg_2");
}

// Many events in one batch take keys drawn together, in the order they were written.
TEST_P(EventsTest, ABatchsEventsKeepTheirOrder) {
    for (int i = 0; i < 300; ++i) add_user("u" + std::to_string(i), "p" + std::to_string(i) + "@x.example");
    Identity &id = identity();
    auto fresh = fresh_batch(id, [&] {
        for (int i = 0; i < 300; ++i) ASSERT_TRUE(id.set_suspended("", "p" + std::to_string(i) + "@x.example", true));
    });
    ASSERT_EQ(fresh.size(), 300u);
    for (std::size_t i = 1; i < fresh.size(); ++i) {
        EXPECT_LT(fresh[i - 1].key, fresh[i].key);
        EXPECT_EQ(fresh[i].user_id, "u" + std::to_string(i));
    }
    auto stored = store_->read()->events(400);
    ASSERT_EQ(stored.size(), 300u);
    for (std::size_t i = 0; i < stored.size(); ++i) EXPECT_EQ(stored[i].id, fresh[i].id);
}

}  // namespace
