// The LMDB backend of signin::Store: records, indexes, transactions, durability, errors.
#include <gtest/gtest.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "signin/store.hpp"
#include "store/records.hpp"

using namespace signin;

namespace {

// A fresh directory under /tmp, removed afterwards.
class StoreTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/signin-store-test-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        root_ = tmpl;
        dir_ = root_ + "/db";  // not there yet: open_lmdb_store creates it
    }
    void TearDown() override {
        store_.reset();
        std::filesystem::remove_all(root_);
    }

    LmdbOptions options(std::size_t map_size = 1ull << 26, std::size_t audit_max = 0) const {
        LmdbOptions o;
        o.path = dir_;
        o.map_size = map_size;
        o.max_readers = 16;
        o.audit_max = audit_max;
        return o;
    }
    Store &open(std::size_t map_size = 1ull << 26, std::size_t audit_max = 0) {
        store_.reset();
        store_ = open_lmdb_store(options(map_size, audit_max));
        return *store_;
    }

    // Raw access for the tests that damage the store: the Store must be closed (one env per process).
    void raw_put(const char *table, const std::string &key, const std::string &value) {
        MDB_env *env = nullptr;
        ASSERT_EQ(mdb_env_create(&env), 0);
        ASSERT_EQ(mdb_env_set_maxdbs(env, 16), 0);
        ASSERT_EQ(mdb_env_open(env, dir_.c_str(), MDB_NOTLS, 0600), 0);
        MDB_txn *txn = nullptr;
        ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), 0);
        MDB_dbi dbi = 0;
        ASSERT_EQ(mdb_dbi_open(txn, table, 0, &dbi), 0);
        MDB_val k{key.size(), const_cast<char *>(key.data())};
        MDB_val v{value.size(), const_cast<char *>(value.data())};
        ASSERT_EQ(mdb_put(txn, dbi, &k, &v, 0), 0);
        ASSERT_EQ(mdb_txn_commit(txn), 0);
        mdb_env_close(env);
    }

    std::string root_, dir_;
    std::unique_ptr<Store> store_;
};

std::string hash_of(int n) {
    std::string h(32, '\0');
    for (int i = 0; i < 4; ++i) h[i] = static_cast<char>((n >> (8 * i)) & 0xff);
    h[31] = '\x7f';
    return h;
}

User user(std::string id, std::string email, std::string group = "g1") {
    User u;
    u.id = std::move(id);
    u.email = std::move(email);
    u.group_id = std::move(group);
    u.created_at = 1700000000000;
    u.updated_at = 1700000000500;
    u.suspended = true;
    u.password_hash = "$argon2id$v=19$m=65536,t=2,p=1$c2FsdA$aGFzaA";
    return u;
}

TokenRecord token(int n, std::string email, Millis created, Millis expires = 1ll << 50) {
    TokenRecord t;
    t.hash = hash_of(n);
    t.group_id = "g1";
    t.email = std::move(email);
    t.purpose = Purpose::Registration;
    t.created_at = created;
    t.expires_at = expires;
    t.password_hash = n % 2 ? "" : "$argon2id$pending";
    return t;
}

SessionRecord session(int n, std::string user_id, Millis expires = 1ll << 50) {
    SessionRecord s;
    s.hash = hash_of(1000000 + n);
    s.id = "0190a000-0000-7000-8000-" + std::to_string(100000000000 + n);
    s.user_id = std::move(user_id);
    s.kind = n % 2 ? SessionKind::Bearer : SessionKind::Cookie;
    s.method = SignInMethod::Password;
    s.created_at = 1700000000000 + n;
    s.last_seen_at = 1700000001000 + n;
    s.expires_at = expires;
    s.client = "203.0.113.7";
    s.user_agent = "curl/8.5.0";
    if (s.kind == SessionKind::Cookie) {
        s.browser = std::string(32, static_cast<char>('a' + n % 2));
        s.browser_sealed = "sealed-" + std::to_string(n);
    }
    return s;
}

void expect_same(const User &a, const User &b) {
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.email, b.email);
    EXPECT_EQ(a.group_id, b.group_id);
    EXPECT_EQ(a.created_at, b.created_at);
    EXPECT_EQ(a.updated_at, b.updated_at);
    EXPECT_EQ(a.suspended, b.suspended);
    EXPECT_EQ(a.password_hash, b.password_hash);
}
void expect_same(const TokenRecord &a, const TokenRecord &b) {
    EXPECT_EQ(a.hash, b.hash);
    EXPECT_EQ(a.group_id, b.group_id);
    EXPECT_EQ(a.email, b.email);
    EXPECT_EQ(a.purpose, b.purpose);
    EXPECT_EQ(a.created_at, b.created_at);
    EXPECT_EQ(a.expires_at, b.expires_at);
    EXPECT_EQ(a.password_hash, b.password_hash);
}
void expect_same(const SessionRecord &a, const SessionRecord &b) {
    EXPECT_EQ(a.hash, b.hash);
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.user_id, b.user_id);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.method, b.method);
    EXPECT_EQ(a.created_at, b.created_at);
    EXPECT_EQ(a.last_seen_at, b.last_seen_at);
    EXPECT_EQ(a.expires_at, b.expires_at);
    EXPECT_EQ(a.client, b.client);
    EXPECT_EQ(a.user_agent, b.user_agent);
    EXPECT_EQ(a.browser, b.browser);
    EXPECT_EQ(a.browser_sealed, b.browser_sealed);
}

}  // namespace

TEST_F(StoreTest, CreatesTheDirectoryPrivate) {
    open();
    struct stat st {};
    ASSERT_EQ(stat(dir_.c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(StoreTest, UserRoundTripAndEmailIndex) {
    Store &s = open();
    User a = user("u-1", "a@example.com");
    {
        auto w = s.write();
        w->put_user(a);
        w->put_user(user("u-2", "a@example.com", "g2"));  // same address, other group
        w->commit();
    }
    auto r = s.read();
    auto byid = r->user_by_id("u-1");
    ASSERT_TRUE(byid);
    expect_same(*byid, a);
    auto bymail = r->user_by_email("g1", "a@example.com");
    ASSERT_TRUE(bymail);
    expect_same(*bymail, a);
    EXPECT_EQ(r->user_by_email("g2", "a@example.com")->id, "u-2");
    EXPECT_FALSE(r->user_by_id("u-3"));
    EXPECT_FALSE(r->user_by_id(""));
    EXPECT_FALSE(r->user_by_email("g3", "a@example.com"));
    EXPECT_EQ(r->user_count(), 2u);
}

// Read transactions are kept reset and renewed (issue #20): a renewed one sees what was committed
// since, a snapshot still open keeps its own view, more can be open at once than are kept.
TEST_F(StoreTest, ReusedReadTransactionsSeeTheLatestCommit) {
    Store &s = open();
    EXPECT_FALSE(s.read()->user_by_id("u-1"));  // ended: kept for the next read
    {
        auto w = s.write();
        w->put_user(user("u-1", "a@example.com"));
        w->commit();
    }
    EXPECT_TRUE(s.read()->user_by_id("u-1")) << "the renewed transaction sees the commit";
    auto held = s.read();
    {
        auto w = s.write();
        w->put_user(user("u-2", "b@example.com"));
        w->commit();
    }
    EXPECT_FALSE(held->user_by_id("u-2")) << "an open snapshot keeps its view";
    EXPECT_TRUE(s.read()->user_by_id("u-2"));
    held.reset();
    std::vector<std::unique_ptr<ReadTxn>> many;  // more at once than are kept
    for (int i = 0; i < 6; ++i) many.push_back(s.read());
    for (auto &r : many) EXPECT_TRUE(r->user_by_id("u-2"));
    many.clear();
    EXPECT_TRUE(s.read()->user_by_id("u-1")) << "and after them, the kept ones";
}

TEST_F(StoreTest, ChangingAUsersEmailMovesTheIndex) {
    Store &s = open();
    {
        auto w = s.write();
        w->put_user(user("u-1", "old@example.com"));
        w->commit();
    }
    {
        auto w = s.write();
        User u = user("u-1", "new@example.com");
        u.suspended = false;
        w->put_user(u);
        // visible inside the same transaction
        EXPECT_FALSE(w->user_by_email("g1", "old@example.com"));
        EXPECT_EQ(w->user_by_email("g1", "new@example.com")->id, "u-1");
        w->commit();
    }
    {
        auto w = s.write();
        w->put_user(user("u-1", "new@example.com", "g9"));  // group change moves it too
        w->commit();
    }
    auto r = s.read();
    EXPECT_FALSE(r->user_by_email("g1", "old@example.com"));
    EXPECT_FALSE(r->user_by_email("g1", "new@example.com"));
    EXPECT_EQ(r->user_by_email("g9", "new@example.com")->id, "u-1");
    EXPECT_EQ(r->user_count(), 1u);
}

TEST_F(StoreTest, TokensRoundTripOldestFirstAndDelete) {
    Store &s = open();
    // written out of order; created_at decides the order
    std::vector<TokenRecord> ts = {token(3, "a@example.com", 3000), token(1, "a@example.com", 1000),
                                   token(2, "a@example.com", 2000), token(4, "b@example.com", 500)};
    {
        auto w = s.write();
        for (const auto &t : ts) w->put_token(t);
        w->commit();
    }
    {
        auto r = s.read();
        auto t1 = r->token(hash_of(1));
        ASSERT_TRUE(t1);
        expect_same(*t1, ts[1]);
        auto list = r->tokens_for("g1", "a@example.com");
        ASSERT_EQ(list.size(), 3u);
        expect_same(list[0], ts[1]);
        expect_same(list[1], ts[2]);
        expect_same(list[2], ts[0]);
        EXPECT_EQ(r->tokens_for("g1", "b@example.com").size(), 1u);
        EXPECT_TRUE(r->tokens_for("g2", "a@example.com").empty());
        EXPECT_FALSE(r->token(hash_of(99)));
    }
    {
        auto w = s.write();
        w->del_token(hash_of(1));
        w->del_token(hash_of(2));
        w->del_token(hash_of(3));
        w->del_token(hash_of(99));  // missing: no-op
        w->commit();
    }
    auto r = s.read();
    EXPECT_TRUE(r->tokens_for("g1", "a@example.com").empty());
    EXPECT_FALSE(r->token(hash_of(1)));
    EXPECT_EQ(r->tokens_for("g1", "b@example.com").size(), 1u);
}

TEST_F(StoreTest, RewritingATokenLeavesOneIndexEntry) {
    Store &s = open();
    auto w = s.write();
    w->put_token(token(1, "a@example.com", 1000));
    w->put_token(token(1, "a@example.com", 2000));
    w->put_token(token(1, "c@example.com", 3000));
    EXPECT_TRUE(w->tokens_for("g1", "a@example.com").empty());
    auto list = w->tokens_for("g1", "c@example.com");
    ASSERT_EQ(list.size(), 1u);
    EXPECT_EQ(list[0].created_at, 3000);
}

// Issue #20: a deleted token's address entry is left for later (the exchange's commit does not
// write that address's leaf); nothing reads it as a token, and the address's next token or the
// purge removes it.
TEST_F(StoreTest, SpentTokensAddressEntriesGoLater) {
    Store &s = open();
    const Millis now = 1700000000000;
    {
        auto w = s.write();
        for (int i = 0; i < 4; ++i) w->put_token(token(i, "a@example.com", 1000 + i, now + 60000));
        w->put_token(token(10, "b@example.com", 1000, now + 60000));
        w->commit();
    }
    {
        auto w = s.write();
        w->del_token(hash_of(0));
        w->del_token(hash_of(1));
        w->del_token(hash_of(10));
        w->commit();
    }
    EXPECT_EQ(s.read()->counts().tokens, 2u);
    EXPECT_EQ(s.read()->counts().token_index, 5u) << "the spent tokens' entries wait";
    {
        auto r = s.read();
        auto left = r->tokens_for("g1", "a@example.com");
        ASSERT_EQ(left.size(), 2u);
        EXPECT_EQ(left[0].created_at, 1002);
        EXPECT_EQ(left[1].created_at, 1003);
        EXPECT_TRUE(r->tokens_for("g1", "b@example.com").empty());
    }
    // the address's next token drops its spent entries; another address's stays for the purge
    {
        auto w = s.write();
        w->put_token(token(20, "a@example.com", 2000, now + 60000));
        w->commit();
    }
    EXPECT_EQ(s.read()->tokens_for("g1", "a@example.com").size(), 3u);
    EXPECT_EQ(s.read()->counts().token_index, 4u) << "a@'s two spent entries went with its next token";
    // a token re-made under a spent one's key (never, with random keys): found, once
    {
        auto w = s.write();
        w->put_token(token(10, "b@example.com", 1000, now + 60000));
        w->commit();
    }
    EXPECT_EQ(s.read()->tokens_for("g1", "b@example.com").size(), 1u);
    {
        auto w = s.write();
        w->del_token(hash_of(10));
        w->del_token(hash_of(2));
        // nothing expired: the purge reports no record, and leaves the live tokens' entries
        EXPECT_EQ(w->purge_expired(now, 100), 0u);
        w->commit();
    }
    auto r = s.read();
    EXPECT_EQ(r->counts().token_index, 2u) << "the purge removed the spent tokens' entries";
    EXPECT_TRUE(r->tokens_for("g1", "b@example.com").empty());
    auto left = r->tokens_for("g1", "a@example.com");
    ASSERT_EQ(left.size(), 2u);
    EXPECT_EQ(left[0].created_at, 1003);
    EXPECT_EQ(left[1].created_at, 2000);
}

// The purge's scan of the address entries goes on where it stopped, round the table, and never
// deletes an entry whose token is live.
TEST_F(StoreTest, PurgeDropsSpentAddressEntriesRoundTheTable) {
    Store &s = open();
    const Millis now = 1700000000000;
    const int n = 300;
    {
        auto w = s.write();
        for (int i = 0; i < n; ++i) w->put_token(token(i, "u" + std::to_string(i) + "@example.com", 1000 + i, now + 60000));
        w->commit();
    }
    {
        auto w = s.write();
        for (int i = 0; i < n; i += 2) w->del_token(hash_of(i));  // every other one spent
        w->commit();
    }
    EXPECT_EQ(s.read()->counts().token_index, static_cast<std::size_t>(n));
    for (int round = 0; round < 10; ++round) {  // 7 a call: the first ten calls remove 70, in key order
        auto w = s.write();
        EXPECT_EQ(w->purge_expired(now, 7), 0u);
        w->commit();
    }
    EXPECT_EQ(s.read()->counts().token_index, static_cast<std::size_t>(n - 70));
    for (int round = 0; round < 20; ++round) {  // round the table from where each call stopped
        auto w = s.write();
        EXPECT_EQ(w->purge_expired(now, 7), 0u);
        w->commit();
    }
    auto r = s.read();
    EXPECT_EQ(r->counts().token_index, static_cast<std::size_t>(n / 2));
    for (int i = 0; i < n; ++i) {
        EXPECT_EQ(r->tokens_for("g1", "u" + std::to_string(i) + "@example.com").size(), i % 2 ? 1u : 0u) << i;
    }
    EXPECT_EQ(r->counts().tokens, static_cast<std::size_t>(n / 2));
}

TEST_F(StoreTest, SessionsRoundTripAllIndexes) {
    Store &s = open();
    SessionRecord s1 = session(1, "u-1"), s2 = session(2, "u-1"), s3 = session(3, "u-2");
    {
        auto w = s.write();
        w->put_session(s1);
        w->put_session(s2);
        w->put_session(s3);
        w->commit();
    }
    {
        auto r = s.read();
        auto byhash = r->session(s1.hash);
        ASSERT_TRUE(byhash);
        expect_same(*byhash, s1);
        auto byid = r->session_by_id(s2.id);
        ASSERT_TRUE(byid);
        expect_same(*byid, s2);
        auto of1 = r->sessions_of("u-1");
        ASSERT_EQ(of1.size(), 2u);
        std::set<std::string> ids{of1[0].id, of1[1].id};
        EXPECT_EQ(ids, (std::set<std::string>{s1.id, s2.id}));
        EXPECT_EQ(r->sessions_of("u-2").size(), 1u);
        EXPECT_TRUE(r->sessions_of("u-3").empty());
        auto browser = r->sessions_of_browser(s2.browser);  // s2 is the one cookie session
        ASSERT_EQ(browser.size(), 1u);
        expect_same(browser[0], s2);
        EXPECT_TRUE(r->sessions_of_browser(std::string(32, 'z')).empty());
    }
    {
        auto w = s.write();
        SessionRecord seen = s1;
        seen.last_seen_at += 60000;  // the common update
        w->put_session(seen);
        w->del_session(s2.hash);
        w->del_session(hash_of(424242));  // missing: no-op
        w->commit();
    }
    auto r = s.read();
    EXPECT_EQ(r->session(s1.hash)->last_seen_at, s1.last_seen_at + 60000);
    EXPECT_FALSE(r->session(s2.hash));
    EXPECT_FALSE(r->session_by_id(s2.id));
    EXPECT_TRUE(r->sessions_of_browser(s2.browser).empty()) << "the browser index goes with the session";
    auto of1 = r->sessions_of("u-1");
    ASSERT_EQ(of1.size(), 1u);
    EXPECT_EQ(of1[0].id, s1.id);
}

TEST_F(StoreTest, DestroyingAWriteWithoutCommitAbortsIt) {
    Store &s = open();
    {
        auto w = s.write();
        w->put_user(user("u-1", "a@example.com"));
        w->put_token(token(1, "a@example.com", 1000));
        w->put_session(session(1, "u-1"));
        w->append_audit({1000, "token.requested", "a@example.com", "203.0.113.7", "", ""});
    }
    auto r = s.read();
    EXPECT_FALSE(r->user_by_id("u-1"));
    EXPECT_FALSE(r->user_by_email("g1", "a@example.com"));
    EXPECT_FALSE(r->token(hash_of(1)));
    EXPECT_TRUE(r->tokens_for("g1", "a@example.com").empty());
    EXPECT_FALSE(r->session(session(1, "u-1").hash));
    EXPECT_TRUE(r->sessions_of("u-1").empty());
    EXPECT_TRUE(r->audit(10).empty());
    EXPECT_EQ(r->user_count(), 0u);
}

TEST_F(StoreTest, UseAfterCommitThrows) {
    Store &s = open();
    auto w = s.write();
    w->put_user(user("u-1", "a@example.com"));
    w->commit();
    EXPECT_THROW(w->commit(), StoreError);
    EXPECT_THROW(w->put_user(user("u-2", "b@example.com")), StoreError);
    EXPECT_THROW(w->user_by_id("u-1"), StoreError);
    EXPECT_EQ(s.read()->user_count(), 1u);
}

TEST_F(StoreTest, CommitIsThereAfterReopen) {
    {
        Store &s = open();
        auto w = s.write();
        w->put_user(user("u-1", "a@example.com"));
        w->put_token(token(1, "a@example.com", 1000));
        w->put_session(session(1, "u-1"));
        w->append_audit({1000, "login", "a@example.com", "", "u-1", ""});
        w->commit();
    }
    store_.reset();
    Store &s = open();
    auto r = s.read();
    expect_same(*r->user_by_id("u-1"), user("u-1", "a@example.com"));
    expect_same(*r->token(hash_of(1)), token(1, "a@example.com", 1000));
    expect_same(*r->session_by_id(session(1, "u-1").id), session(1, "u-1"));
    ASSERT_EQ(r->audit(5).size(), 1u);
}

TEST_F(StoreTest, SchemaVersionMismatchThrows) {
    open();
    store_.reset();
    raw_put("meta", "schema_version", "2");
    try {
        open();
        FAIL() << "opened a store of another schema version";
    } catch (const StoreError &e) {
        EXPECT_EQ(e.code(), Code::StorageError);
        EXPECT_STREQ(e.what(), "store schema version 2, this build reads 1");
    }
}

TEST_F(StoreTest, AuditNewestFirstWithLimit) {
    Store &s = open();
    {
        auto w = s.write();
        for (int i = 0; i < 10; ++i) {
            w->append_audit({1700000000000 + i, "kind" + std::to_string(i), "a@example.com",
                             "203.0.113.7", "u-1", i == 3 ? "quote \" and \\ and \n" : ""});
        }
        // two entries in the same millisecond both land (random key suffix)
        w->append_audit({1700000000009, "same-ms", "", "", "", ""});
        w->commit();
    }
    auto r = s.read();
    auto all = r->audit(100);
    ASSERT_EQ(all.size(), 11u);
    auto top = r->audit(3);
    ASSERT_EQ(top.size(), 3u);
    EXPECT_EQ(top[0].at, 1700000000009);
    EXPECT_EQ(top[1].at, 1700000000009);
    EXPECT_EQ(top[2].at, 1700000000008);
    EXPECT_EQ(top[2].kind, "kind8");
    EXPECT_EQ(top[2].email, "a@example.com");
    EXPECT_EQ(top[2].client, "203.0.113.7");
    EXPECT_EQ(top[2].user_id, "u-1");
    EXPECT_EQ(all[7].kind, "kind3");
    EXPECT_EQ(all[7].detail, "quote \" and \\ and \n");
    EXPECT_TRUE(r->audit(0).empty());
}

// An audit entry is JSON text that mdb_dump shows a person (written by the engine's JSON writer
// since issue #20, read by cJSON): every kind of text comes back as it went in.
TEST(AuditRecord, RoundTripsEveryKindOfText) {
    const std::string key(16, '\x01');
    std::string all_bytes;
    for (int c = 1; c < 128; ++c) all_bytes.push_back(static_cast<char>(c));
    AuditEntry e{static_cast<Millis>(0x0101010101010101), "login.failed", "zo\xc3\xab <x>&y@example.com",
                 "2001:db8::1", "0194-\"u\"", all_bytes};
    const std::string text = records::encode_audit(e);
    EXPECT_EQ(text.find('<'), std::string::npos) << text;
    EXPECT_EQ(text.find('\n'), std::string::npos) << text;
    EXPECT_EQ(text.rfind("{\"at\":\"", 0), 0u) << text;
    AuditEntry back = records::decode_audit(key, text);
    EXPECT_EQ(back.at, e.at);
    EXPECT_EQ(back.kind, e.kind);
    EXPECT_EQ(back.email, e.email);
    EXPECT_EQ(back.client, e.client);
    EXPECT_EQ(back.user_id, e.user_id);
    EXPECT_EQ(back.detail, e.detail);
}

TEST_F(StoreTest, MapFullIsStorageFullAndTheStoreStaysUsable) {
    constexpr std::size_t kSmall = 128 * 1024;  // a few dozen pages: the tables alone need ~16
    constexpr std::size_t kUnbounded = 1u << 30;  // audit entries fill it (their own bound is tested apart)
    {
        Store &s = open(kSmall, kUnbounded);
        auto w = s.write();
        w->put_user(user("u-1", "a@example.com"));
        w->put_session(session(1, "u-1"));
        w->commit();
    }
    Store &s = open(kSmall, kUnbounded);
    int committed = 0;
    bool full = false;
    for (int i = 0; i < 100000 && !full; ++i) {
        try {
            auto w = s.write();
            for (int j = 0; j < 10; ++j)
                w->append_audit({1700000000000 + i, "filler", "a@example.com", "203.0.113.7", "u-1",
                                 std::string(200, 'x')});
            w->commit();
            ++committed;
        } catch (const StoreError &e) {
            EXPECT_EQ(e.code(), Code::StorageFull) << e.what();
            EXPECT_NE(std::string(e.what()).find("raise signin_store size="), std::string::npos);
            full = true;
        }
    }
    ASSERT_TRUE(full);
    ASSERT_GT(committed, 0);
    {
        auto r = s.read();
        expect_same(*r->user_by_id("u-1"), user("u-1", "a@example.com"));
        expect_same(*r->session(session(1, "u-1").hash), session(1, "u-1"));
        EXPECT_EQ(r->audit(100000).size(), static_cast<std::size_t>(committed) * 10);
    }
    {
        // a write that fits still commits
        auto w = s.write();
        w->put_session(session(1, "u-1"));
        w->commit();
    }
    Store &again = open(kSmall, kUnbounded);
    auto r = again.read();
    expect_same(*r->user_by_id("u-1"), user("u-1", "a@example.com"));
    EXPECT_EQ(r->sessions_of("u-1").size(), 1u);
    EXPECT_EQ(r->audit(100000).size(), static_cast<std::size_t>(committed) * 10);
}

// Issue #20: the worker's purge rounds are small (each deletion dirties a page of the batch's
// transaction, and LMDB keeps the buffers of its largest one): purge_index takes spent address
// entries alone, and purge_expired gives them only what its records left of the budget.
TEST_F(StoreTest, PurgeIndexTakesSpentEntriesAloneAndTheRecordsLeaveItTheRest) {
    Store &s = open();
    const Millis now = 1700000000000;
    {
        auto w = s.write();
        for (int i = 0; i < 20; ++i) w->put_token(token(i, "u" + std::to_string(i) + "@example.com", 1000 + i, now + 60000));
        for (int i = 20; i < 23; ++i) w->put_token(token(i, "u" + std::to_string(i) + "@example.com", 1000 + i, now - 1));
        w->commit();
    }
    {
        auto w = s.write();
        for (int i = 0; i < 10; ++i) w->del_token(hash_of(i));
        w->commit();
    }
    ASSERT_EQ(s.read()->counts().token_index, 23u);
    {
        auto w = s.write();
        EXPECT_EQ(w->purge_index(4), 4u);
        w->commit();
    }
    EXPECT_EQ(s.read()->counts().token_index, 19u) << "four spent entries, no more";
    EXPECT_EQ(s.read()->counts().tokens, 13u) << "no record: the expired ones wait for purge_expired";
    {
        auto w = s.write();
        EXPECT_EQ(w->purge_expired(now, 5), 3u) << "the three expired tokens";
        w->commit();
    }
    EXPECT_EQ(s.read()->counts().tokens, 10u);
    EXPECT_EQ(s.read()->counts().token_index, 17u) << "5 - 3 = 2 spent entries in the same round";
    {
        auto w = s.write();
        // the six spent and the expired tokens' three, less the two taken above: a scan that
        // begins mid-table and goes round it counts each entry once
        EXPECT_EQ(w->purge_index(100), 7u);
        EXPECT_EQ(w->purge_index(100), 0u);
        w->commit();
    }
    EXPECT_EQ(s.read()->counts().token_index, 10u);
    for (int i = 10; i < 20; ++i)
        EXPECT_EQ(s.read()->tokens_for("g1", "u" + std::to_string(i) + "@example.com").size(), 1u) << i;
}

TEST_F(StoreTest, PurgeRemovesOnlyExpiredWithinBudget) {
    Store &s = open();
    const Millis now = 1700000000000;
    {
        auto w = s.write();
        for (int i = 0; i < 5; ++i) w->put_token(token(i, "a@example.com", 1000 + i, now - i));  // expired (<= now)
        for (int i = 5; i < 8; ++i) w->put_token(token(i, "a@example.com", 1000 + i, now + 1));
        for (int i = 0; i < 4; ++i) w->put_session(session(i, "u-1", now - 10));  // expired
        for (int i = 4; i < 6; ++i) w->put_session(session(i, "u-1", now + 1000));
        w->commit();
    }
    {
        auto w = s.write();
        EXPECT_EQ(w->purge_expired(now, 0), 0u);
        EXPECT_EQ(w->purge_expired(now, 3), 3u);
        w->commit();
    }
    {
        auto r = s.read();
        EXPECT_EQ(r->tokens_for("g1", "a@example.com").size() + r->sessions_of("u-1").size(), 8u + 6u - 3u);
    }
    {
        auto w = s.write();
        EXPECT_EQ(w->purge_expired(now, 100), 6u);
        EXPECT_EQ(w->purge_expired(now, 100), 0u);
        w->commit();
    }
    auto r = s.read();
    auto toks = r->tokens_for("g1", "a@example.com");
    ASSERT_EQ(toks.size(), 3u);
    for (const auto &t : toks) EXPECT_GT(t.expires_at, now);
    for (int i = 0; i < 5; ++i) EXPECT_FALSE(r->token(hash_of(i)));
    auto ss = r->sessions_of("u-1");
    ASSERT_EQ(ss.size(), 2u);
    for (int i = 0; i < 4; ++i) {
        EXPECT_FALSE(r->session(session(i, "u-1").hash));
        EXPECT_FALSE(r->session_by_id(session(i, "u-1").id));
    }
    for (int i = 4; i < 6; ++i) EXPECT_TRUE(r->session_by_id(session(i, "u-1").id));
}

TEST_F(StoreTest, CorruptRecordThrowsInsteadOfCrashing) {
    {
        Store &s = open();
        auto w = s.write();
        w->put_session(session(1, "u-1"));
        w->commit();
    }
    store_.reset();
    raw_put("users", "u-bad", std::string("\x01\xff\xff\xff\x7f" "abc", 8));  // length past the end
    raw_put("users", "u-short", std::string("\x01", 1));
    raw_put("users", "u-version", std::string("\x09\x00\x00\x00\x00", 5));
    raw_put("users", "u-empty", std::string());
    raw_put("sessions", session(1, "u-1").hash, "garbage garbage garbage garbage");
    Store &s = open();
    auto r = s.read();
    for (const char *id : {"u-bad", "u-short", "u-version", "u-empty"}) {
        try {
            r->user_by_id(id);
            ADD_FAILURE() << id << " decoded";
        } catch (const StoreError &e) {
            EXPECT_EQ(e.code(), Code::StorageError);
        }
    }
    EXPECT_THROW(r->session(session(1, "u-1").hash), StoreError);
    EXPECT_FALSE(r->user_by_id("u-ok"));  // the store itself is fine
}

TEST_F(StoreTest, ConcurrentWritersAllLand) {
    Store &s = open();
    constexpr int kPerThread = 200;
    auto writer = [&](int base) {
        for (int i = 0; i < kPerThread; ++i) {
            auto w = s.write();
            w->put_token(token(base + i, "t" + std::to_string(base) + "@example.com", 1000 + i));
            w->commit();
        }
    };
    // readers running at the same time see consistent snapshots
    std::atomic<bool> stop{false};
    std::thread reader([&] {
        while (!stop) {
            auto r = s.read();
            auto n = r->tokens_for("g1", "t0@example.com").size();
            EXPECT_LE(n, static_cast<std::size_t>(kPerThread));
        }
    });
    std::thread a(writer, 0), b(writer, 100000);
    a.join();
    b.join();
    stop = true;
    reader.join();
    auto r = s.read();
    EXPECT_EQ(r->tokens_for("g1", "t0@example.com").size(), static_cast<std::size_t>(kPerThread));
    EXPECT_EQ(r->tokens_for("g1", "t100000@example.com").size(), static_cast<std::size_t>(kPerThread));
}

TEST_F(StoreTest, AnotherProcessesWritesAreVisible) {
    Store &s = open();
    {
        auto w = s.write();
        w->put_user(user("u-parent", "p@example.com"));
        w->commit();
    }
    {
        auto r = s.read();  // a reader open across the child's write keeps its snapshot
        pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            int rc = 1;
            try {
                auto mine = open_lmdb_store(options());  // its own environment, opened after fork
                auto w = mine->write();
                w->put_user(user("u-child", "c@example.com"));
                w->put_session(session(7, "u-child"));
                w->commit();
                rc = 0;
            } catch (...) {
            }
            _exit(rc);
        }
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status));
        ASSERT_EQ(WEXITSTATUS(status), 0);
        EXPECT_FALSE(r->user_by_id("u-child"));
    }
    auto r = s.read();
    EXPECT_EQ(r->user_by_email("g1", "c@example.com")->id, "u-child");
    EXPECT_EQ(r->sessions_of("u-child").size(), 1u);
    EXPECT_EQ(r->user_count(), 2u);
    // and the parent can still write
    auto w = s.write();
    w->put_user(user("u-parent2", "p2@example.com"));
    w->commit();
}

namespace {

TEST_F(StoreTest, AuditEntriesOlderThanACutOffArePurgedOldestFirst) {
    Store &s = open();
    {
        auto w = s.write();
        for (Millis at : {1000, 2000, 3000, 4000, 5000}) w->append_audit({at, "token.requested", "a@example.com", "c", "", ""});
        w->commit();
    }
    {
        auto w = s.write();
        EXPECT_EQ(w->purge_audit(3000, 1), 1u) << "the budget bounds a round";
        EXPECT_EQ(w->purge_audit(3000, 100), 1u) << "only entries before the cut-off";
        w->commit();
    }
    auto r = s.read();
    EXPECT_EQ(r->audit_count(), 3u);
    auto left = r->audit(10);
    ASSERT_EQ(left.size(), 3u);
    EXPECT_EQ(left.back().at, 3000) << "the oldest left is the cut-off itself";
}

}  // namespace

namespace {

TEST_F(StoreTest, UsersAreListedInIdOrderAPageAtATime) {
    Store &s = open();
    {
        auto w = s.write();
        for (const char *id : {"u3", "u1", "u5", "u2", "u4"}) w->put_user(user(id, std::string(id) + "@example.com"));
        w->commit();
    }
    auto r = s.read();
    auto first = r->users("", 2);
    ASSERT_EQ(first.size(), 2u);
    EXPECT_EQ(first[0].id, "u1");
    EXPECT_EQ(first[1].id, "u2");
    auto next = r->users(first.back().id, 2);
    ASSERT_EQ(next.size(), 2u);
    EXPECT_EQ(next[0].id, "u3") << "after the last id, exclusive";
    EXPECT_EQ(r->users("u4", 10).size(), 1u);
    EXPECT_TRUE(r->users("u5", 10).empty());
    EXPECT_EQ(r->users("u0", 10).size(), 5u) << "an id that is not there starts at the next one";
}

}  // namespace

// ---- second factors -----------------------------------------------------------------------

// A flood of requests nobody signed in to writes audit entries (unknown addresses, failed
// exchanges): the trail is bounded in entries, the oldest going first, so it never fills the
// store and the records sign-ins need still fit.
TEST_F(StoreTest, TheAuditTrailIsBoundedOldestFirstAndNeverFillsTheStore) {
    constexpr std::size_t kSmall = 256 * 1024;
    Store &s = open(kSmall);  // the default bound: one entry for each 4 KiB of the map
    const std::size_t bound = kSmall / kMapBytesPerAuditEntry;
    Millis at = 1700000000000;
    for (int i = 0; i < 400; ++i) {  // 4 000 entries of ~300 bytes: ten times what the map holds
        auto w = s.write();
        for (int j = 0; j < 10; ++j) {
            w->append_audit({at++, "login.unknown", std::string(247, 'a') + "@example.com", "203.0.113.7", "",
                             "flood"});
        }
        ASSERT_NO_THROW(w->commit()) << "round " << i;
    }
    {
        auto r = s.read();
        EXPECT_EQ(r->audit_count(), bound);
        auto newest = r->audit(bound + 10);
        ASSERT_EQ(newest.size(), bound);
        EXPECT_EQ(newest.front().at, at - 1) << "the newest entry is kept";
        EXPECT_EQ(newest.back().at, at - static_cast<Millis>(bound)) << "the oldest ones went";
    }
    auto w = s.write();  // and a sign-in's records still fit
    w->put_user(user("u-1", "a@example.com"));
    w->put_session(session(1, "u-1"));
    ASSERT_NO_THROW(w->commit());
    // a smaller bound set later: the table comes back under it as entries are written
    Store &smaller = open(kSmall, 10);
    for (int i = 0; i < 60; ++i) {  // one fewer each time: 64 down to 10
        auto w2 = smaller.write();
        w2->append_audit({at++, "login.unknown", "b@example.com", "", "", ""});
        w2->commit();
    }
    EXPECT_EQ(smaller.read()->audit_count(), 10u);
}

TEST_F(StoreTest, SecondFactorRecordsRoundTrip) {
    Store &s = open();
    MfaRecord m;
    m.user_id = "u-mfa";
    m.totp_sealed = std::string("\x01sealed\x00secret", 14);
    m.pending_sealed = "pending";
    m.pending_expires_at = 1234;
    m.last_step = 56789;
    m.recovery_hashes = {hash_of(1), hash_of(2)};
    m.devices = {{hash_of(3), 999}, {hash_of(4), 1000}};
    m.updated_at = 42;
    m.failures = 17;
    m.wait_until = 1700000060000;
    MfaPendingRecord p;
    p.hash = hash_of(5);
    p.user_id = "u-mfa";
    p.kind = SessionKind::Bearer;
    p.method = SignInMethod::Password;
    p.client = "10.0.0.1";
    p.user_agent = "agent";
    p.created_at = 10;
    p.expires_at = 20;
    p.failures = 3;
    {
        auto w = s.write();
        w->put_mfa(m);
        w->put_mfa_pending(p);
        w->commit();
    }
    auto r = s.read();
    auto got = r->mfa("u-mfa");
    ASSERT_TRUE(got);
    EXPECT_EQ(got->totp_sealed, m.totp_sealed);
    EXPECT_EQ(got->pending_sealed, "pending");
    EXPECT_EQ(got->pending_expires_at, 1234);
    EXPECT_EQ(got->last_step, 56789);
    EXPECT_EQ(got->recovery_hashes, m.recovery_hashes);
    ASSERT_EQ(got->devices.size(), 2U);
    EXPECT_EQ(got->devices[1].hash, hash_of(4));
    EXPECT_EQ(got->devices[1].expires_at, 1000);
    EXPECT_EQ(got->failures, 17u);
    EXPECT_EQ(got->wait_until, 1700000060000);
    EXPECT_TRUE(got->has_factor());
    auto gp = r->mfa_pending(hash_of(5));
    ASSERT_TRUE(gp);
    EXPECT_EQ(gp->user_id, "u-mfa");
    EXPECT_EQ(gp->kind, SessionKind::Bearer);
    EXPECT_EQ(gp->method, SignInMethod::Password);
    EXPECT_EQ(gp->failures, 3);
    EXPECT_FALSE(r->mfa("someone-else"));
    EXPECT_FALSE(r->mfa_pending(hash_of(6)));
    r.reset();
    {
        auto w = s.write();
        w->del_mfa("u-mfa");
        w->del_mfa_pending(hash_of(5));
        w->del_mfa("never-there");
        w->commit();
    }
    EXPECT_FALSE(s.read()->mfa("u-mfa"));
    EXPECT_FALSE(s.read()->mfa_pending(hash_of(5)));
}

TEST_F(StoreTest, ExpiredPendingSecondFactorsArePurged) {
    Store &s = open();
    {
        auto w = s.write();
        for (int i = 0; i < 4; i++) {
            MfaPendingRecord p;
            p.hash = hash_of(100 + i);
            p.user_id = "u";
            p.expires_at = i < 3 ? 100 : 10'000;  // three expired at 100, one alive
            w->put_mfa_pending(p);
        }
        w->commit();
    }
    auto w = s.write();
    EXPECT_EQ(w->purge_expired(500, 2), 2U);  // the budget holds
    EXPECT_EQ(w->purge_expired(500, 100), 1U);
    EXPECT_EQ(w->purge_expired(500, 100), 0U);
    EXPECT_TRUE(w->mfa_pending(hash_of(103)));
    w->commit();
}

TEST_F(StoreTest, SessionsRememberTheirSecondFactor) {
    Store &s = open();
    SessionRecord rec;
    rec.hash = hash_of(7);
    rec.id = "sid-7";
    rec.user_id = "u";
    rec.expires_at = 1;
    rec.mfa = true;
    {
        auto w = s.write();
        w->put_session(rec);
        w->commit();
    }
    auto got = s.read()->session(hash_of(7));
    ASSERT_TRUE(got);
    EXPECT_TRUE(got->mfa);
}

// A session written before format 2 (no second-factor byte) is still read, as without one.
TEST_F(StoreTest, SessionsOfTheFirstFormatAreRead) {
    open();
    store_.reset();
    std::string v(1, '\x01');
    auto str = [&v](const std::string &x) {
        for (int i = 0; i < 4; i++) v.push_back(static_cast<char>((x.size() >> (8 * i)) & 0xff));
        v += x;
    };
    auto i64 = [&v](std::int64_t x) {
        for (int i = 0; i < 8; i++) v.push_back(static_cast<char>((static_cast<std::uint64_t>(x) >> (8 * i)) & 0xff));
    };
    str("sid-old");
    str("u-old");
    v.push_back('\x01');
    v.push_back('\x01');
    i64(1);
    i64(2);
    i64(3);
    str("client");
    str("agent");
    raw_put("sessions", hash_of(8), v);
    Store &s = open();
    auto got = s.read()->session(hash_of(8));
    ASSERT_TRUE(got);
    EXPECT_EQ(got->user_id, "u-old");
    EXPECT_EQ(got->user_agent, "agent");
    EXPECT_FALSE(got->mfa);
}

TEST_F(StoreTest, DeletingAUserFreesItsAddress) {
    Store &s = open();
    {
        auto w = s.write();
        w->put_user(user("u-del", "del@example.com"));
        for (int i = 0; i < 3; i++) {
            MfaPendingRecord p;
            p.hash = hash_of(200 + i);
            p.user_id = i == 1 ? "someone-else" : "u-del";
            p.expires_at = 1'000'000;
            w->put_mfa_pending(p);
        }
        w->commit();
    }
    {
        auto w = s.write();
        w->del_user("u-del");
        EXPECT_EQ(w->del_mfa_pending_of("u-del"), 2U);
        w->del_user("never-there");
        w->commit();
    }
    auto r = s.read();
    EXPECT_FALSE(r->user_by_id("u-del"));
    EXPECT_FALSE(r->user_by_email("g1", "del@example.com"));
    EXPECT_TRUE(r->mfa_pending(hash_of(201))) << "another user's step stays";
    EXPECT_FALSE(r->mfa_pending(hash_of(200)));
}

TEST_F(StoreTest, UsersKeepTheirPendingFlag) {
    Store &s = open();
    User u = user("u-pending", "pending@example.com");
    u.pending = true;
    {
        auto w = s.write();
        w->put_user(u);
        w->commit();
    }
    EXPECT_TRUE(s.read()->user_by_id("u-pending")->pending);
}
