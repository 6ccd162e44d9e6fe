// The PostgreSQL backend of signin::Store beside the LMDB one: the same contract
// (records, the lookups that stand for LMDB's index tables, the purge), and what only a shared
// database has: races between connections (serializable transactions retried), a server that
// drops its connections or refuses writes, and the copy of an LMDB store into it.
// The PostgreSQL cases run where SIGNIN_TEST_PG names a server (./build.sh test starts one with
// t/pg-server) and skip with that reason elsewhere.
#include <gtest/gtest.h>
#include <lmdb.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "engine_fixtures.hpp"
#include "pg_fixture.hpp"
#include "signin/password.hpp"
#include "signin/store.hpp"

using namespace signin;
using namespace signin::testing;

namespace {

std::string digest(int n) {
    std::string h(32, '\0');
    for (int i = 0; i < 4; ++i) h[i] = static_cast<char>((n >> (8 * i)) & 0xff);
    h[31] = '\x01';
    return h;
}

User make_user(const std::string &id, const std::string &email, const std::string &group = "g1") {
    User u;
    u.id = id;
    u.email = email;
    u.group_id = group;
    u.created_at = 1700000000000;
    u.updated_at = 1700000000000;
    u.roles = {"admin"};
    return u;
}

TokenRecord make_token(int n, const std::string &email, Millis created, Millis expires) {
    TokenRecord t;
    t.hash = digest(n);
    t.group_id = "g1";
    t.email = email;
    t.purpose = Purpose::SignIn;
    t.created_at = created;
    t.expires_at = expires;
    return t;
}

SessionRecord make_session(int n, const std::string &user_id, Millis expires, const std::string &browser = "") {
    SessionRecord s;
    s.hash = digest(100000 + n);
    s.id = "0190a000-0000-7000-8000-" + std::to_string(100000000000 + n);
    s.user_id = user_id;
    s.kind = browser.empty() ? SessionKind::Bearer : SessionKind::Cookie;
    s.created_at = 1700000000000 + n;
    s.last_seen_at = s.created_at;
    s.expires_at = expires;
    s.browser = browser;
    return s;
}

enum class Backend { Lmdb, Pg };

// A fresh store of either backend.
class StoreContract : public ::testing::TestWithParam<Backend> {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/signin-pg-test-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        root_ = tmpl;
        if (GetParam() == Backend::Pg) {
            auto server = pg_server();
            if (!server) GTEST_SKIP() << "SIGNIN_TEST_PG is not set: no PostgreSQL to test against";
            schema_ = std::make_unique<PgSchema>(*server);
        }
        open();
    }
    void open() {
        if (GetParam() == Backend::Pg) {
            PgOptions o;
            o.conninfo = schema_->conninfo();
            store_ = open_pg_store(o);
        } else {
            LmdbOptions o;
            o.path = root_ + "/db";
            o.map_size = 1ull << 24;
            store_ = open_lmdb_store(o);
        }
    }
    // Closes the store, changes its tables underneath it (`sql` on PostgreSQL; `lmdb` in a raw
    // write transaction of the LMDB file otherwise), and opens it again: a store as an older
    // version, or a broken disk, would leave it.
    void reopen_changed(const std::string &sql, const std::function<void(MDB_txn *)> &lmdb) {
        store_.reset();
        if (GetParam() == Backend::Pg) {
            pg_exec(schema_->conninfo(), sql);
        } else {
            MDB_env *env = nullptr;
            ASSERT_EQ(mdb_env_create(&env), 0);
            mdb_env_set_maxdbs(env, 32);
            ASSERT_EQ(mdb_env_open(env, (root_ + "/db").c_str(), 0, 0600), 0);
            MDB_txn *txn = nullptr;
            ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), 0);
            lmdb(txn);
            ASSERT_EQ(mdb_txn_commit(txn), 0);
            mdb_env_close(env);
        }
        open();
    }
    void TearDown() override {
        store_.reset();
        schema_.reset();
        std::filesystem::remove_all(root_);
    }

    std::string root_;
    std::unique_ptr<PgSchema> schema_;
    std::unique_ptr<Store> store_;
};

INSTANTIATE_TEST_SUITE_P(Backends, StoreContract, ::testing::Values(Backend::Lmdb, Backend::Pg),
                         [](const auto &p) { return p.param == Backend::Lmdb ? "Lmdb" : "Pg"; });

TEST_P(StoreContract, UsersAndTheirAddresses) {
    {
        auto w = store_->write();
        w->put_user(make_user("u1", "a@example.com"));
        w->put_user(make_user("u2", "a@example.com", "g2"));
        w->put_user(make_user("u3", ""));  // a provider's account without an address
        w->commit();
    }
    {
        auto r = store_->read();
        EXPECT_EQ(r->user_by_email("g1", "a@example.com")->id, "u1");
        EXPECT_EQ(r->user_by_email("g2", "a@example.com")->id, "u2");
        EXPECT_EQ(r->user_by_id("u1")->roles, std::vector<std::string>{"admin"});
        EXPECT_FALSE(r->user_by_email("g1", ""));
        EXPECT_EQ(r->user_count(), 3u);
        auto page = r->users("u1", 10);
        ASSERT_EQ(page.size(), 2u);
        EXPECT_EQ(page[0].id, "u2");
        EXPECT_EQ(r->users("", 1).at(0).id, "u1");
    }
    {  // an address change moves the index; deleting a user drops its entry
        auto w = store_->write();
        User u = make_user("u1", "b@example.com");
        w->put_user(u);
        w->del_user("u2");
        w->commit();
    }
    auto r = store_->read();
    EXPECT_FALSE(r->user_by_email("g1", "a@example.com"));
    EXPECT_EQ(r->user_by_email("g1", "b@example.com")->id, "u1");
    EXPECT_FALSE(r->user_by_email("g2", "a@example.com"));
    EXPECT_FALSE(r->user_by_id("u2"));
    EXPECT_TRUE(store_->check_integrity().empty());
}

// api_versions_pin signin: the first use pins, a later first use keeps it, an administrator's
// set replaces it and "" clears it; the pin is on the user record (sessions read it with the
// user) and no other field of the record moves.
TEST_P(StoreContract, AnAccountsApiVersionPin) {
    {
        auto w = store_->write();
        w->put_user(make_user("u1", "a@example.com"));
        EXPECT_EQ(pin_api_version(*w, "u1", "2024-01-01", true), std::optional<std::string>("2024-01-01"));
        EXPECT_EQ(pin_api_version(*w, "nobody", "2024-01-01", true), std::nullopt);
        w->commit();
    }
    const User before = *store_->read()->user_by_id("u1");
    EXPECT_EQ(before.api_version, "2024-01-01");
    {  // a second first use (another request, another node) keeps the first pin
        auto w = store_->write();
        EXPECT_EQ(pin_api_version(*w, "u1", "2025-01-01", true), std::optional<std::string>("2024-01-01"));
        w->commit();
    }
    EXPECT_EQ(store_->read()->user_by_id("u1")->api_version, "2024-01-01");
    {
        auto w = store_->write();
        EXPECT_EQ(pin_api_version(*w, "u1", "2025-01-01", false), std::optional<std::string>("2025-01-01"));
        w->commit();
    }
    const User after = *store_->read()->user_by_id("u1");
    EXPECT_EQ(after.api_version, "2025-01-01");
    EXPECT_EQ(after.updated_at, before.updated_at);
    EXPECT_EQ(after.roles, before.roles);
    EXPECT_EQ(after.email, before.email);
    {  // an aborted write leaves the pin
        auto w = store_->write();
        pin_api_version(*w, "u1", "", false);
    }
    EXPECT_EQ(store_->read()->user_by_id("u1")->api_version, "2025-01-01");
    {
        auto w = store_->write();
        EXPECT_EQ(pin_api_version(*w, "u1", "", false), std::optional<std::string>(""));
        w->commit();
    }
    EXPECT_EQ(store_->read()->user_by_id("u1")->api_version, "");
    EXPECT_TRUE(store_->check_integrity().empty());
}

TEST(ApiVersionPin, NamesAVersionBlockMayHave) {
    EXPECT_TRUE(valid_api_version_name("v1"));
    EXPECT_TRUE(valid_api_version_name("2024-06-01"));
    EXPECT_TRUE(valid_api_version_name(std::string(64, 'a')));
    EXPECT_FALSE(valid_api_version_name(""));
    EXPECT_FALSE(valid_api_version_name(std::string(65, 'a')));
    for (std::string bad : {"a b", "a/b", "a\"b", "a\\b", "a,b", "caf\xc3\xa9", "a\tb"}) {
        EXPECT_FALSE(valid_api_version_name(bad)) << bad;
    }
}

// The ids of the accounts whose search index entries start with `prefix`, in index order.
std::vector<std::string> indexed(ReadTxn &r, const std::string &prefix) {
    std::vector<std::string> out;
    for (const auto &k : r.user_index(prefix, "", 100)) out.push_back(k.substr(k.rfind('\0') + 1));
    return out;
}

TEST_P(StoreContract, TheSearchIndexFollowsEveryWriteOfAUser) {
    {
        auto w = store_->write();
        w->put_user(make_user("u1", "Bob@Example.com"));
        User pending = make_user("u2", "ann@example.org");
        pending.pending = true;
        pending.roles = {"editor"};
        w->put_user(pending);
        w->put_user(make_user("u3", ""));  // no address: found by role and state only
        w->commit();
    }
    {
        auto r = store_->read();
        EXPECT_EQ(indexed(*r, "e"), (std::vector<std::string>{"u2", "u1"})) << "by address, lower case";
        EXPECT_EQ(indexed(*r, "ebob@"), std::vector<std::string>{"u1"});
        EXPECT_EQ(indexed(*r, "dexample."), (std::vector<std::string>{"u1", "u2"})) << "by domain";
        EXPECT_EQ(indexed(*r, std::string("radmin") + '\0'), (std::vector<std::string>{"u1", "u3"}));
        EXPECT_EQ(indexed(*r, std::string("spending") + '\0'), std::vector<std::string>{"u2"});
        EXPECT_EQ(indexed(*r, std::string("sactive") + '\0'), (std::vector<std::string>{"u1", "u3"}));
        auto first = r->user_index("e", "", 1);
        ASSERT_EQ(first.size(), 1u);
        auto rest = r->user_index("e", first[0], 10);
        ASSERT_EQ(rest.size(), 1u) << "a page goes on after the key it was given";
        EXPECT_EQ(rest[0].substr(rest[0].rfind('\0') + 1), "u1");
        EXPECT_TRUE(r->user_index("ezed", "", 10).empty());
    }
    {  // a new address, a role taken, a suspension and a deletion leave no stale entry
        auto w = store_->write();
        User u1 = make_user("u1", "carol@example.net");
        u1.suspended = true;
        u1.roles.clear();
        w->put_user(u1);
        w->del_user("u2");
        w->commit();
    }
    auto r = store_->read();
    EXPECT_TRUE(indexed(*r, "ebob").empty());
    EXPECT_EQ(indexed(*r, "ecarol@"), std::vector<std::string>{"u1"});
    EXPECT_EQ(indexed(*r, "d"), std::vector<std::string>{"u1"});
    EXPECT_EQ(indexed(*r, "r"), std::vector<std::string>{"u3"});
    EXPECT_EQ(indexed(*r, std::string("ssuspended") + '\0'), std::vector<std::string>{"u1"});
    EXPECT_TRUE(indexed(*r, std::string("spending") + '\0').empty());
    EXPECT_TRUE(store_->check_integrity().empty());
}

// A store written before the index existed gets it filled when it is next opened.
TEST_P(StoreContract, AStoreWithoutTheSearchIndexGetsItFilledAtOpen) {
    {
        auto w = store_->write();
        w->put_user(make_user("u1", "old@example.com"));
        w->commit();
    }
    reopen_changed("DROP TABLE signin_user_search; DELETE FROM signin_meta WHERE name = 'user_search'", [](MDB_txn *txn) {
        MDB_dbi search = 0, meta = 0;
        ASSERT_EQ(mdb_dbi_open(txn, "user_search", 0, &search), 0);
        ASSERT_EQ(mdb_drop(txn, search, 1), 0);
        ASSERT_EQ(mdb_dbi_open(txn, "meta", 0, &meta), 0);
        MDB_val k{11, const_cast<char *>("user_search")};
        ASSERT_EQ(mdb_del(txn, meta, &k, nullptr), 0);
    });
    auto r = store_->read();
    EXPECT_EQ(indexed(*r, "eold@"), std::vector<std::string>{"u1"});
    EXPECT_EQ(indexed(*r, "dexample.com"), std::vector<std::string>{"u1"});
}

// signin-admin check: an account's missing search entry, and an entry no account makes, are both
// found, on either store.
TEST_P(StoreContract, TheCheckFindsAMissingAndAStaleSearchEntry) {
    {
        auto w = store_->write();
        w->put_user(make_user("u1", "bob@example.com"));
        w->commit();
    }
    std::string bob;
    {
        auto r = store_->read();
        auto keys = r->user_index("ebob@", "", 1);
        ASSERT_EQ(keys.size(), 1u);
        bob = keys[0];
    }
    const std::string stale = std::string("ezed@example.com") + '\0' + "u9";
    auto hex = [](const std::string &b) {
        static const char *digits = "0123456789abcdef";
        std::string out = "'\\x";
        for (unsigned char c : b) {
            out += digits[c >> 4];
            out += digits[c & 15];
        }
        return out + "'::bytea";
    };
    reopen_changed("DELETE FROM signin_user_search WHERE key = " + hex(bob) +
                       "; INSERT INTO signin_user_search (key) VALUES (" + hex(stale) + ")",
                   [&](MDB_txn *txn) {
                       MDB_dbi search = 0;
                       ASSERT_EQ(mdb_dbi_open(txn, "user_search", 0, &search), 0);
                       MDB_val gone{bob.size(), bob.data()};
                       ASSERT_EQ(mdb_del(txn, search, &gone, nullptr), 0);
                       std::string key = stale;
                       MDB_val k{key.size(), key.data()}, v{0, nullptr};
                       ASSERT_EQ(mdb_put(txn, search, &k, &v, 0), 0);
                   });
    const auto problems = store_->check_integrity();
    auto has = [&problems](const std::string &text) {
        return std::any_of(problems.begin(), problems.end(),
                           [&text](const std::string &p) { return p.find(text) != std::string::npos; });
    };
    EXPECT_TRUE(has("u1 is missing from the search index")) << ::testing::PrintToString(problems);
    EXPECT_TRUE(has("an entry no user has (u9)")) << ::testing::PrintToString(problems);
}

// add_user (an account made now) leaves what put_user would: the record, its address and its
// search entries, and check_integrity finds nothing amiss.
TEST_P(StoreContract, AnAccountMadeNowIsStoredAsPutUserStoresIt) {
    {
        auto w = store_->write();
        User u = make_user("u1", "New@Example.com");
        u.pending = true;
        w->add_user(u);
        w->add_user(make_user("u2", ""));  // a provider's account without an address
        w->commit();
    }
    auto r = store_->read();
    EXPECT_EQ(r->user_by_email("g1", "New@Example.com")->id, "u1");
    EXPECT_TRUE(r->user_by_id("u1")->pending);
    EXPECT_EQ(r->user_by_id("u2")->email, "");
    EXPECT_EQ(r->user_count(), 2u);
    EXPECT_EQ(indexed(*r, "enew@"), std::vector<std::string>{"u1"});
    EXPECT_TRUE(store_->check_integrity().empty());
}

TEST_P(StoreContract, TokensOfAnAddressOldestFirst) {
    {
        auto w = store_->write();
        w->put_token(make_token(3, "a@example.com", 300, 10000));
        w->put_token(make_token(1, "a@example.com", 100, 10000));
        w->put_token(make_token(2, "b@example.com", 200, 10000));
        w->commit();
    }
    {
        auto r = store_->read();
        auto ts = r->tokens_for("g1", "a@example.com");
        ASSERT_EQ(ts.size(), 2u);
        EXPECT_EQ(ts[0].created_at, 100);
        EXPECT_EQ(ts[1].created_at, 300);
        EXPECT_EQ(r->token(digest(2))->email, "b@example.com");
        EXPECT_FALSE(r->token(digest(9)));
    }
    {
        auto w = store_->write();
        w->del_token(digest(1));
        w->commit();
    }
    EXPECT_EQ(store_->read()->tokens_for("g1", "a@example.com").size(), 1u);
}

// A write reads an address's account and then its tokens (a token request, a typed code): on
// PostgreSQL both come in one statement, and the tokens are answered from it for that address
// only, as the transaction's own writes change them.
TEST_P(StoreContract, AnAddressesTokensReadWithItsAccountAreItsTokensNow) {
    {
        auto w = store_->write();
        w->put_user(make_user("u1", "a@example.com"));
        w->put_token(make_token(3, "a@example.com", 300, 10000));
        w->put_token(make_token(1, "a@example.com", 100, 10000));
        w->put_token(make_token(2, "b@example.com", 200, 10000));
        w->commit();
    }
    auto created = [](const std::vector<TokenRecord> &ts) {
        std::vector<Millis> out;
        for (const auto &t : ts) out.push_back(t.created_at);
        return out;
    };
    {
        auto w = store_->write();
        EXPECT_EQ(w->user_by_email("g1", "a@example.com")->id, "u1");
        EXPECT_EQ(created(w->tokens_for("g1", "a@example.com")), (std::vector<Millis>{100, 300}));
        EXPECT_EQ(created(w->tokens_for("g1", "a@example.com")), (std::vector<Millis>{100, 300})) << "and again";
        EXPECT_FALSE(w->user_by_email("g1", "b@example.com")) << "an address without an account";
        EXPECT_EQ(created(w->tokens_for("g1", "a@example.com")), (std::vector<Millis>{100, 300})) << "another address's";
        EXPECT_EQ(created(w->tokens_for("g1", "b@example.com")), (std::vector<Millis>{200}));
        // written between the two reads: the tokens are what the writes left
        EXPECT_TRUE(w->user_by_email("g1", "a@example.com"));
        w->put_token(make_token(4, "a@example.com", 50, 10000));
        w->del_token(digest(3));
        EXPECT_EQ(created(w->tokens_for("g1", "a@example.com")), (std::vector<Millis>{50, 100}));
        w->commit();
    }
    int runs = 0;
    store_->batch([&] {  // and in a write batch, job after job
        ++runs;
        for (int i = 0; i < 3; ++i) {
            auto w = store_->write();
            EXPECT_TRUE(w->user_by_email("g1", "a@example.com"));
            EXPECT_EQ(w->tokens_for("g1", "a@example.com").size(), static_cast<std::size_t>(2 + i)) << i;
            w->put_token(make_token(10 + i, "a@example.com", 1000 + i, 10000));
            w->commit();
        }
    });
    EXPECT_EQ(runs, 1);
    EXPECT_EQ(store_->read()->tokens_for("g1", "a@example.com").size(), 5u);
}

// A flood of token requests for one address in one write batch (POST /login over and over): on
// PostgreSQL the batch reads the address's account and tokens once and keeps them as its own
// writes change them. Each request must find what the writes before it left, in the store's
// order (oldest first, then by key), and the store must hold the same at the end.
TEST_P(StoreContract, InABatchEachTokenRequestFindsTheTokensTheOnesBeforeItLeft) {
    {
        auto w = store_->write();
        w->put_user(make_user("u1", "a@example.com"));
        w->put_token(make_token(1, "a@example.com", 100, 1ll << 50));
        w->put_token(make_token(2, "b@example.com", 100, 1ll << 50));
        w->commit();
    }
    using Model = std::vector<std::pair<Millis, std::string>>;  // (created_at, key): the store's order
    Model model{{100, digest(1)}};
    auto seen = [](const std::vector<TokenRecord> &ts) {
        Model out;
        for (const auto &t : ts) out.emplace_back(t.created_at, t.hash);
        return out;
    };
    int runs = 0;
    store_->batch([&] {
        ++runs;
        Model m = model;
        for (int i = 0; i < 12; ++i) {
            auto w = store_->write();
            ASSERT_TRUE(w->user_by_email("g1", "a@example.com")) << i;
            const auto live = w->tokens_for("g1", "a@example.com");
            ASSERT_EQ(seen(live), m) << "request " << i;
            // keep two, as signin_tokens_per_address 3 does, and add one; some share a
            // millisecond (ordered by key then), one is older than the rest
            for (std::size_t k = 0; k + 2 < live.size(); ++k) {
                w->del_token(live[k].hash);
                m.erase(m.begin());
            }
            const Millis at = i == 7 ? 50 : 200 + i / 3;
            TokenRecord t = make_token(10 + (i * 7) % 12, "a@example.com", at, 1ll << 50);
            w->put_token(t);
            m.insert(std::upper_bound(m.begin(), m.end(), std::make_pair(at, t.hash)), {at, t.hash});
            if (i == 5 && !live.empty()) {  // a wrong code counted on a token: written again under its key
                TokenRecord again = live.back();
                again.code_failures = 1;
                w->put_token(again);
            }
            if (i % 4 == 3) {
                EXPECT_EQ(seen(w->tokens_for("g1", "b@example.com")), (Model{{100, digest(2)}}))
                    << "another address's stay its own";
            }
            w->commit();
        }
        model = m;
    });
    EXPECT_EQ(runs, 1);
    auto r = store_->read();
    EXPECT_EQ(seen(r->tokens_for("g1", "a@example.com")), model);
    EXPECT_EQ(r->tokens_for("g1", "a@example.com").size(), 3u);
}

TEST_P(StoreContract, SessionsByKeyIdUserAndBrowser) {
    const std::string browser(32, 'b');
    {
        auto w = store_->write();
        w->put_user(make_user("u1", "a@example.com"));
        w->put_session(make_session(1, "u1", 10000, browser));
        w->put_session(make_session(2, "u1", 10000));
        w->put_session(make_session(3, "u9", 10000, browser));
        w->commit();
    }
    {
        auto r = store_->read();
        EXPECT_EQ(r->sessions_of("u1").size(), 2u);
        EXPECT_EQ(r->sessions_of_browser(browser).size(), 2u);
        EXPECT_EQ(r->session_by_id(make_session(2, "u1", 0).id)->hash, digest(100002));
        EXPECT_EQ(r->session(digest(100001))->browser, browser);
    }
    {  // a touch keeps the lookups; a delete drops them
        auto w = store_->write();
        SessionRecord s = make_session(1, "u1", 20000, browser);
        s.last_seen_at += 5;
        w->put_session(s);
        w->del_session(digest(100002));
        w->commit();
    }
    auto r = store_->read();
    ASSERT_EQ(r->sessions_of("u1").size(), 1u);
    EXPECT_EQ(r->sessions_of("u1")[0].expires_at, 20000);
    EXPECT_FALSE(r->session_by_id(make_session(2, "u1", 0).id));
    EXPECT_EQ(r->counts().sessions, 2u);
}

// The principals of several keys, read together (on PostgreSQL one pipeline): each key's own, in
// the order asked, nobody where a key or its user is missing, and a legacy key found as principal()
// finds it.
TEST_P(StoreContract, PrincipalsOfSeveralKeysInTheirOrder) {
    {
        auto w = store_->write();
        w->put_user(make_user("u1", "a@example.com"));
        w->put_user(make_user("u2", "b@example.com"));
        w->put_session(make_session(1, "u1", 10000, std::string(32, 'b')));
        w->put_session(make_session(2, "u2", 10000));
        w->put_session(make_session(3, "u9", 10000));  // its user is gone
        w->commit();
    }
    const std::string legacy = "\x01\x02\x03\x04\x05\x06" + digest(100002);  // 6 + 32 bytes: a key of today's form
    const std::vector<std::string> owned = {digest(100002), digest(100001), digest(100003), digest(7), legacy,
                                            digest(100001)};
    const std::vector<std::string_view> keys(owned.begin(), owned.end());
    auto r = store_->read();
    auto got = r->principals(keys);
    ASSERT_EQ(got.size(), keys.size());
    ASSERT_TRUE(got[0] && got[1] && got[4] && got[5]);
    EXPECT_EQ(got[0]->user.email, "b@example.com");
    EXPECT_EQ(got[0]->session.hash, digest(100002));
    EXPECT_EQ(got[1]->user.email, "a@example.com");
    EXPECT_EQ(got[1]->session.kind, SessionKind::Cookie);
    EXPECT_FALSE(got[2]) << "a session whose user is gone is nobody's";
    EXPECT_FALSE(got[3]) << "no such session";
    EXPECT_EQ(got[4]->user.id, "u2") << "the legacy key, as principal() finds it";
    EXPECT_EQ(got[5]->user.id, "u1") << "a key asked twice";
    for (std::size_t i = 0; i < keys.size(); ++i)
        EXPECT_EQ(static_cast<bool>(got[i]), static_cast<bool>(r->principal(keys[i]))) << "key " << i;
    EXPECT_TRUE(r->principals({}).empty());
    ASSERT_EQ(r->principals({keys[1]}).size(), 1u);
}

TEST_P(StoreContract, SecondFactorsPasskeysLinksAndChallenges) {
    {
        auto w = store_->write();
        MfaRecord m;
        m.user_id = "u1";
        m.totp_sealed = "sealed";
        m.recovery_hashes = {digest(7)};
        w->put_mfa(m);
        for (int i = 0; i < 3; ++i) {
            MfaPendingRecord p;
            p.hash = digest(200 + i);
            p.user_id = i < 2 ? "u1" : "u2";
            p.expires_at = 5000;
            w->put_mfa_pending(p);
        }
        PasskeyRecord k;
        k.key = digest(300);
        k.credential_id = "cred";
        k.user_id = "u1";
        k.public_key = "cose";
        w->put_passkey(k);
        ProviderLinkRecord l;
        l.key = digest(400);
        l.user_id = "u1";
        l.provider = "corp";
        l.issuer = "https://idp.example";
        l.subject = "s";
        w->put_provider_link(l);
        w->spend_challenge(digest(500), 5000);
        w->commit();
    }
    {
        auto r = store_->read();
        EXPECT_EQ(r->mfa("u1")->totp_sealed, "sealed");
        EXPECT_EQ(r->mfa_pending(digest(201))->user_id, "u1");
        EXPECT_EQ(r->passkeys_of("u1").size(), 1u);
        EXPECT_EQ(r->passkey(digest(300))->credential_id, "cred");
        EXPECT_EQ(r->provider_links_of("u1").at(0).issuer, "https://idp.example");
        EXPECT_TRUE(r->challenge_spent(digest(500)));
        EXPECT_FALSE(r->challenge_spent(digest(501)));
    }
    auto w = store_->write();
    EXPECT_EQ(w->del_mfa_pending_of("u1"), 2u);
    w->del_passkey(digest(300));
    w->del_provider_link(digest(400));
    w->del_mfa("u1");
    w->commit();
    auto r = store_->read();
    EXPECT_FALSE(r->mfa_pending(digest(200)));
    EXPECT_TRUE(r->mfa_pending(digest(202)));
    EXPECT_TRUE(r->passkeys_of("u1").empty());
    EXPECT_TRUE(r->provider_links_of("u1").empty());
    EXPECT_FALSE(r->mfa("u1"));
}

TEST_P(StoreContract, OutboxAuditAndPurge) {
    {
        auto w = store_->write();
        for (Millis due : {300, 100, 200}) {
            OutboxRecord o;
            o.due_at = due;
            o.sealed = "d" + std::to_string(due);
            w->put_outbox(o);
            EXPECT_EQ(o.key.size(), 16u);
        }
        for (Millis at : {10, 30, 20}) w->append_audit(AuditEntry{at, "token.requested", "a@example.com", "c", "", ""});
        w->put_token(make_token(1, "a@example.com", 1, 50));     // expired at 100
        w->put_token(make_token(2, "a@example.com", 1, 5000));   // live
        w->put_session(make_session(1, "u1", 50));
        w->spend_challenge(digest(9), 50);
        w->commit();
    }
    {
        auto r = store_->read();
        auto due = r->outbox_due(250, 10);
        ASSERT_EQ(due.size(), 2u);
        EXPECT_EQ(due[0].sealed, "d100");
        EXPECT_EQ(due[1].sealed, "d200");
        EXPECT_EQ(r->outbox(due[0].key)->due_at, 100);
        EXPECT_EQ(r->outbox_count(), 3u);
        auto audit = r->audit(2);
        ASSERT_EQ(audit.size(), 2u);
        EXPECT_EQ(audit[0].at, 30);  // newest first
        EXPECT_EQ(audit[1].at, 20);
        EXPECT_EQ(r->audit_count(), 3u);
    }
    auto w = store_->write();
    EXPECT_EQ(w->purge_expired(100, 100), 3u);  // the token, the session, the challenge
    EXPECT_EQ(w->purge_index(100), 0u) << "no index entry is left behind here";
    EXPECT_EQ(w->purge_audit(25, 100), 2u);
    w->commit();
    auto r = store_->read();
    EXPECT_TRUE(r->token(digest(2)));
    EXPECT_FALSE(r->token(digest(1)));
    EXPECT_FALSE(r->challenge_spent(digest(9)));
    EXPECT_EQ(r->audit_count(), 1u);
}

// What signin-admin outbox shows of an entry besides its sealed delivery: the next try and the
// last failure's reason, kept by both stores through a rewrite of the entry.
TEST_P(StoreContract, OutboxEntriesKeepTheirNextTryAndLastError) {
    std::string key;
    {
        auto w = store_->write();
        OutboxRecord o;
        o.due_at = 61000;
        o.created_at = 1000;
        o.next_try_at = 2000;
        o.attempts = 2;
        o.sealed = "sealed";
        o.last_error = "the relay refused the recipient: 451 4.7.1 try again later";
        w->put_outbox(o);
        key = o.key;
        w->commit();
    }
    auto r = store_->read();
    auto o = r->outbox(key);
    ASSERT_TRUE(o);
    EXPECT_EQ(o->next_try_at, 2000);
    EXPECT_EQ(o->last_error, "the relay refused the recipient: 451 4.7.1 try again later");
    EXPECT_EQ(o->attempts, 2u);
    auto all = r->outbox_due(std::numeric_limits<Millis>::max(), 10);
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].last_error, o->last_error);
}

// The audit trail bounded in entries, the oldest going first (signin_audit_max): on PostgreSQL
// by the purge, on LMDB also as entries are written.
TEST_P(StoreContract, TheOldestAuditEntriesBeyondABoundGo) {
    {
        auto w = store_->write();
        for (Millis at = 1; at <= 30; ++at) w->append_audit(AuditEntry{at, "login", "", "c", "", ""});
        w->commit();
    }
    auto w = store_->write();
    EXPECT_EQ(w->trim_audit(10, 5), 5u) << "at most the budget";
    EXPECT_EQ(w->trim_audit(10, 100), 15u);
    EXPECT_EQ(w->trim_audit(10, 100), 0u);
    w->commit();
    auto r = store_->read();
    EXPECT_EQ(r->audit_count(), 10u);
    auto newest = r->audit(100);
    ASSERT_EQ(newest.size(), 10u);
    EXPECT_EQ(newest.front().at, 30);
    EXPECT_EQ(newest.back().at, 21);
}

// On PostgreSQL a write batch's writes of one kind travel as one statement over arrays (the
// sessions made, the tokens spent, the accounts, the audit entries): the batch leaves what its
// writes, one after the other, leave. Rows written twice, a row deleted between two writes of its
// table, an account whose address changes: both backends alike.
TEST_P(StoreContract, ABatchOfManyWritesLeavesWhatEachWriteInTurnWould) {
    {
        auto w = store_->write();
        for (int i = 0; i < 4; ++i) w->put_token(make_token(i, "old@example.com", i, 1ll << 50));
        w->put_session(make_session(50, "u0", 1ll << 50));
        w->commit();
    }
    const std::size_t audit_before = store_->read()->audit_count();
    int runs = 0;
    store_->batch([&] {
        ++runs;
        for (int i = 0; i < 12; ++i) {  // twelve sign-ins: a token spent (four of them exist), an account, a session
            const std::string id = "u" + std::to_string(i);
            auto w = store_->write();
            w->del_token(digest(i));
            w->add_user(make_user(id, "p" + std::to_string(i) + "@example.com"));
            w->put_session(make_session(i, id, 1ll << 50));
            for (const char *kind : {"token.used", "session.created"})
                w->append_audit(AuditEntry{1700000000000 + i, kind, "", "", id, ""});
            OutboxRecord o;
            o.due_at = o.created_at = 1700000000000 + i;
            o.sealed = "notice " + id;
            w->put_outbox(o);
            w->commit();
        }
        auto w = store_->write();
        w->put_user(make_user("u1", "q1@example.com"));  // a new address: the old one's entry goes
        w->put_session(make_session(3, "u3", 1ll << 49));  // written again, and again: the last write wins
        w->put_session(make_session(3, "u3", 1ll << 51));
        w->del_session(digest(100000 + 50));
        w->del_token(digest(200));  // a token that is not there
        w->put_token(make_token(102, "p7@example.com", 8, 1ll << 50));
        w->del_token(digest(102));  // not joined to the deletion before: it would go before the write
        w->put_token(make_token(100, "p5@example.com", 5, 1ll << 50));
        w->del_token(digest(100));  // between two writes of the tokens: it must not move past either
        w->put_token(make_token(101, "p5@example.com", 6, 1ll << 50));
        w->put_token(make_token(100, "p6@example.com", 7, 1ll << 49));  // written again after its deletion
        w->commit();
    });
    EXPECT_EQ(runs, 1);
    auto r = store_->read();
    for (int i = 0; i < 12; ++i) {
        EXPECT_FALSE(r->token(digest(i))) << i;
        const auto s = r->session(digest(100000 + i));
        ASSERT_TRUE(s) << i;
        EXPECT_EQ(s->user_id, "u" + std::to_string(i));
        EXPECT_EQ(s->expires_at, i == 3 ? 1ll << 51 : 1ll << 50) << i;
        if (i != 1) {
            EXPECT_EQ(r->user_by_email("g1", "p" + std::to_string(i) + "@example.com")->id, "u" + std::to_string(i));
        }
    }
    EXPECT_FALSE(r->user_by_email("g1", "p1@example.com"));
    EXPECT_EQ(r->user_by_email("g1", "q1@example.com")->id, "u1");
    EXPECT_FALSE(r->session(digest(100000 + 50)));
    ASSERT_TRUE(r->token(digest(100)));
    EXPECT_EQ(r->token(digest(100))->email, "p6@example.com");
    EXPECT_TRUE(r->token(digest(101)));
    EXPECT_FALSE(r->token(digest(102)));
    EXPECT_EQ(r->user_count(), 12u);
    EXPECT_EQ(r->audit_count(), audit_before + 24);
    EXPECT_EQ(r->outbox_count(), 12u);
    EXPECT_EQ(r->outbox_due(1700000000000 + 11, 100).size(), 12u);
    EXPECT_TRUE(store_->check_integrity().empty()) << "the search and address indexes follow the accounts";
}

TEST_P(StoreContract, AnAbortedWriteLeavesNothing) {
    {
        auto w = store_->write();
        w->put_user(make_user("u1", "a@example.com"));
    }  // not committed
    EXPECT_FALSE(store_->read()->user_by_id("u1"));
    auto w = store_->write();
    w->put_user(make_user("u1", "a@example.com"));
    w->commit();
    EXPECT_TRUE(store_->read()->user_by_id("u1"));
}

// The copy of signin-admin copy: everything an LMDB store holds, read back from PostgreSQL.
// serialize_on before a transaction's first statement: PostgreSQL waits for the key's turn, LMDB
// (one writer at a time) has nothing to wait for; the transaction is an ordinary one either way.
TEST_P(StoreContract, ATransactionMaySerializeOnAKey) {
    {
        auto w = store_->write();
        w->serialize_on(std::string("address:g1\0a@example.com", 23));
        w->put_user(make_user("u1", "a@example.com"));
        w->commit();
    }
    EXPECT_EQ(store_->read()->user_by_email("g1", "a@example.com")->id, "u1");
}

TEST_P(StoreContract, CopiesAnLmdbStore) {
    if (GetParam() != Backend::Pg) GTEST_SKIP() << "the copy goes from LMDB into PostgreSQL";
    LmdbOptions o;
    o.path = root_ + "/source";
    o.map_size = 1ull << 24;
    auto source = open_lmdb_store(o);
    {
        auto w = source->write();
        w->put_user(make_user("u1", "a@example.com"));
        w->put_token(make_token(1, "a@example.com", 100, 1ll << 50));
        w->put_session(make_session(1, "u1", 1ll << 50, std::string(32, 'b')));
        MfaRecord m;
        m.user_id = "u1";
        m.totp_sealed = "sealed";
        w->put_mfa(m);
        PasskeyRecord k;
        k.key = digest(300);
        k.user_id = "u1";
        w->put_passkey(k);
        w->append_audit(AuditEntry{42, "user.created", "a@example.com", "admin", "u1", ""});
        OutboxRecord ob;
        ob.due_at = 7;
        ob.sealed = "x";
        w->put_outbox(ob);
        w->spend_challenge(digest(500), 1ll << 50);
        w->commit();
    }
    {
        auto w = store_->write();
        source->copy_into(*w);
        w->commit();
    }
    auto r = store_->read();
    EXPECT_EQ(r->user_by_email("g1", "a@example.com")->id, "u1");
    EXPECT_EQ(r->tokens_for("g1", "a@example.com").size(), 1u);
    EXPECT_EQ(r->sessions_of("u1").size(), 1u);
    EXPECT_EQ(r->sessions_of_browser(std::string(32, 'b')).size(), 1u);
    EXPECT_TRUE(r->mfa("u1"));
    EXPECT_EQ(r->passkeys_of("u1").size(), 1u);
    EXPECT_EQ(r->audit(1).at(0).kind, "user.created");
    EXPECT_EQ(r->outbox_due(10, 10).size(), 1u);
    EXPECT_TRUE(r->challenge_spent(digest(500)));
    EXPECT_TRUE(store_->check_integrity().empty());
}

TEST_P(StoreContract, CountersByKeyAndPrefix) {
    using namespace std::string_literals;  // keys with a NUL in them
    {
        auto w = store_->write();
        w->put_counter("pw\na\0c1"s, "one", 100);
        w->put_counter("pw\na\0c2"s, "two", 5000);
        w->put_counter("pw\nb\0c1"s, "three", 5000);
        w->commit();
    }
    EXPECT_EQ(store_->read()->counter("pw\na\0c2"s).value_or(""), "two");
    EXPECT_FALSE(store_->read()->counter("pw\nz"));
    {
        auto w = store_->write();
        EXPECT_EQ(w->purge_expired(200, 100), 1u) << "the expired counter";
        EXPECT_EQ(w->del_counters("pw\na\0"s), 1u);
        w->commit();
    }
    auto r = store_->read();
    EXPECT_FALSE(r->counter("pw\na\0c1"s));
    EXPECT_FALSE(r->counter("pw\na\0c2"s));
    EXPECT_EQ(r->counter("pw\nb\0c1"s).value_or(""), "three");
}

// The password limits counted in the store (several nodes) decide as the ones in memory do, call
// for call: two limiters on the same store are one (two nodes).
TEST_P(StoreContract, StoreAttemptLimiterDecidesAsTheMemoryOne) {
    AttemptLimits limits;
    limits.free_attempts = 3;
    limits.address_limit = 6;
    std::shared_ptr<Store> shared(std::move(store_));
    StoreAttemptLimiter node1(shared, limits), node2(shared, limits);
    MemoryAttemptLimiter memory(limits);
    const std::string a = "g\na@example.com";
    Millis now = 1700000000000;
    for (int i = 0; i < 6; ++i) {
        AttemptLimiter &node = i % 2 ? static_cast<AttemptLimiter &>(node2) : node1;
        EXPECT_EQ(node.login_attempt(a, "198.51.100.1", now), memory.login_attempt(a, "198.51.100.1", now)) << i;
        node.login_failed(a, "198.51.100.1", now);
        memory.login_failed(a, "198.51.100.1", now);
        now += 1000;
    }
    const Millis wait = node2.login_attempt(a, "198.51.100.1", now);
    EXPECT_GT(wait, 0) << "the backoff holds on the other node";
    EXPECT_EQ(wait, memory.login_attempt(a, "198.51.100.1", now));
    EXPECT_EQ(node1.login_attempt(a, "198.51.100.2", now), 0) << "another client of the address";
    node2.reset_address(a);
    EXPECT_EQ(node1.login_attempt(a, "198.51.100.1", now), 0) << "a reset clears every pair";
    // the address window (6 a minute) counted the attempts the backoff let through: 3, then .2,
    // then .1 after the reset: this is the 6th, the next one is refused on either node
    EXPECT_EQ(node1.login_attempt(a, "198.51.100.3", now), 0);
    EXPECT_GT(node2.login_attempt(a, "198.51.100.4", now), 0) << "the address window holds on every node";
    EXPECT_EQ(node1.register_attempt(a, now), 0);
    EXPECT_GT(node2.register_attempt(a, now + 1), 0) << "a repeated registration waits, on any node";
    store_.reset();
    (void)shared;
}

// ---- PostgreSQL only -----------------------------------------------------------------------------

class PgOnly : public ::testing::Test {
protected:
    void SetUp() override {
        auto server = pg_server();
        if (!server) GTEST_SKIP() << "SIGNIN_TEST_PG is not set: no PostgreSQL to test against";
        schema_ = std::make_unique<PgSchema>(*server);
        PgOptions o;
        o.conninfo = schema_->conninfo();
        store_ = open_pg_store(o);
    }
    std::unique_ptr<PgSchema> schema_;
    std::unique_ptr<Store> store_;
};

// b spends token 1 and writes session n after another transaction spent it first: whether b is
// told to run again (StoreError::retry), rather than told it committed.
bool told_to_retry(WriteTxn &b, int n) {
    try {
        b.del_token(digest(1));
        b.put_session(make_session(n, "u1", 1ll << 50));
        b.commit();
    } catch (const StoreError &e) {
        return e.retry();
    }
    return false;
}

// Two transactions spend the same token: the one that commits second finds its snapshot stale
// and is told to run again (StoreError::retry), never told it committed.
TEST_F(PgOnly, TheLoserOfARaceIsToldToRetry) {
    {
        auto w = store_->write();
        w->put_token(make_token(1, "a@example.com", 1, 1ll << 50));
        w->commit();
    }
    auto a = store_->write();
    auto b = store_->write();
    ASSERT_TRUE(a->token(digest(1)));
    ASSERT_TRUE(b->token(digest(1)));
    a->del_token(digest(1));
    a->put_session(make_session(1, "u1", 1ll << 50));
    a->commit();
    EXPECT_TRUE(told_to_retry(*b, 2));
    b.reset();
    EXPECT_EQ(store_->read()->counts().sessions, 1u);
}

// Whether a transaction of `other` (its own connections: another worker, another node) gets the
// key's turn within 5 s. If it does not, `mine` is closed: its connections end, and so do their
// locks, so the waiting thread finishes and the test fails instead of hanging.
bool other_gets_turn(Store &other, std::unique_ptr<Store> &mine, const std::string &key) {
    std::promise<void> done;
    std::future<void> finished = done.get_future();
    std::thread t([&] {
        try {
            auto w = other.write();
            w->serialize_on(key);
            w->commit();
        } catch (const std::exception &e) {
            ADD_FAILURE() << e.what();
        }
        done.set_value();
    });
    const bool got = finished.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
    if (!got) mine.reset();
    t.join();
    return got;
}

std::string random_key() {
    unsigned char r[8];
    randombytes_buf(r, sizeof r);
    return "address:test\0" + std::string(reinterpret_cast<char *>(r), sizeof r);
}

// Two token requests for one address (each reads the address's tokens, deletes the oldest, adds
// one): the second waits for the first's COMMIT before its snapshot, sees what the first wrote and
// commits, where without the turn it read the same token and lost the race at its delete.
TEST_F(PgOnly, TransactionsOnOneKeyTakeTurns) {
    PgOptions o;
    o.conninfo = schema_->conninfo();
    auto other = open_pg_store(o);  // the second request's node
    const std::string key = random_key();
    {
        auto w = store_->write();
        w->put_token(make_token(1, "a@example.com", 1, 1ll << 50));
        w->commit();
    }
    auto a = store_->write();
    a->serialize_on(key);
    ASSERT_EQ(a->tokens_for("g1", "a@example.com").size(), 1u);
    std::atomic<bool> b_began{false};
    std::promise<void> done;
    std::future<void> b_done = done.get_future();
    std::thread b_thread([&] {
        try {
            auto b = other->write();
            b->serialize_on(key);
            b_began = true;
            auto seen = b->tokens_for("g1", "a@example.com");
            EXPECT_EQ(seen.size(), 1u);
            if (!seen.empty()) {
                EXPECT_EQ(seen[0].hash, digest(2)) << "the second saw the first's token, not the one it deleted";
                b->del_token(seen[0].hash);
            }
            b->put_token(make_token(3, "a@example.com", 3, 1ll << 50));
            b->commit();
        } catch (const StoreError &e) {
            ADD_FAILURE() << "the second lost the race: " << e.what();
        }
        done.set_value();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_FALSE(b_began.load()) << "the second began while the first had the key";
    try {
        a->del_token(digest(1));
        a->put_token(make_token(2, "a@example.com", 2, 1ll << 50));
        a->commit();
    } catch (const StoreError &e) {
        ADD_FAILURE() << "the first lost the race: " << e.what();
    }
    a.reset();
    if (b_done.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
        ADD_FAILURE() << "the second never got its turn after the first committed";
        store_.reset();  // the first's connections end, and their locks with them
    }
    b_thread.join();
    auto left = other->read()->tokens_for("g1", "a@example.com");
    ASSERT_EQ(left.size(), 1u);
    EXPECT_EQ(left[0].hash, digest(3));
}

// The turn ends with the transaction however it ends (committed, abandoned, lost to a race), and
// the connection goes back to the pool without it: another store's transaction gets the key at once.
TEST_F(PgOnly, AKeysTurnEndsWithItsTransactionHoweverItEnds) {
    PgOptions o;
    o.conninfo = schema_->conninfo();
    auto other = open_pg_store(o);
    const std::string key = random_key();
    {
        auto w = store_->write();
        w->serialize_on(key);
        w->put_user(make_user("u1", "a@example.com"));
        w->commit();
    }
    ASSERT_TRUE(other_gets_turn(*other, store_, key)) << "after a commit";
    {
        auto w = store_->write();
        w->serialize_on(key);
        w->commit();  // nothing but the turn
    }
    ASSERT_TRUE(other_gets_turn(*other, store_, key)) << "after a commit of nothing";
    {
        auto w = store_->write();
        w->serialize_on(key);
        EXPECT_TRUE(w->user_by_id("u1"));
    }  // abandoned: rolled back
    ASSERT_TRUE(other_gets_turn(*other, store_, key)) << "after an abandoned transaction";
    {
        auto w = store_->write();
        w->put_token(make_token(1, "a@example.com", 1, 1ll << 50));
        w->commit();
    }
    auto a = store_->write();
    auto b = store_->write();
    b->serialize_on(key);
    ASSERT_TRUE(b->token(digest(1)));
    ASSERT_TRUE(a->token(digest(1)));
    a->del_token(digest(1));
    a->commit();
    EXPECT_TRUE(told_to_retry(*b, 1));
    b.reset();
    ASSERT_TRUE(other_gets_turn(*other, store_, key)) << "after a transaction that lost a race";
    // the turn is asked for before the first statement, or not at all
    auto late = store_->write();
    EXPECT_TRUE(late->user_by_id("u1"));
    EXPECT_THROW(late->serialize_on(key), StoreError);
    late.reset();
    // the pooled connections still work
    auto w = store_->write();
    w->serialize_on(key);
    w->put_user(make_user("u2", "b@example.com"));
    w->commit();
    EXPECT_EQ(store_->read()->user_count(), 2u);
}

// Connections the server ended (a restart, a failover, an administrator) fail the transaction
// that meets them with StorageError (503), and the next ones connect again.
TEST_F(PgOnly, RecoversFromDroppedConnections) {
    for (int i = 0; i < 3; ++i) EXPECT_FALSE(store_->read()->user_by_id("u1"));  // a pooled connection
    pg_exec(*pg_server(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE usename = current_user AND pid <> pg_backend_pid() AND datname = current_database()");
    int failed = 0;
    for (int i = 0; i < 8; ++i) {
        try {
            auto w = store_->write();
            w->put_user(make_user("u" + std::to_string(i), "x" + std::to_string(i) + "@example.com"));
            w->commit();
        } catch (const StoreError &e) {
            EXPECT_EQ(e.code(), Code::StorageError);
            EXPECT_FALSE(e.retry());
            ++failed;
        }
    }
    EXPECT_LE(failed, 4) << "only the pooled connections fail, once each";
    EXPECT_EQ(store_->read()->user_count(), static_cast<std::size_t>(8 - failed));
}

// How many connections the server has open under an application name.
std::size_t connections_named(const std::string &name) {
    PGconn *c = PQconnectdb(pg_server()->c_str());
    if (PQstatus(c) != CONNECTION_OK) {
        PQfinish(c);
        return 0;
    }
    const char *values[] = {name.c_str()};
    PGresult *r = PQexecParams(c, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", 1, nullptr,
                               values, nullptr, nullptr, 0);
    const std::size_t n = PQresultStatus(r) == PGRES_TUPLES_OK ? std::stoul(PQgetvalue(r, 0, 0)) : 0;
    PQclear(r);
    PQfinish(c);
    return n;
}

// connections=2: a third transaction at once waits until one of the two ends, then runs on the
// connection it gave back; a thread that holds one is never made to wait for a second (it would
// wait on itself); the process keeps no more than two open.
TEST_F(PgOnly, AProcessHoldsAtMostItsConnectionsAndATransactionWaitsForOne) {
    const std::string name = "t_conn_" + std::to_string(::getpid()) + "_" + std::to_string(std::rand() % 100000);
    PgOptions o;
    o.conninfo = schema_->conninfo() + "&application_name=" + name;
    o.connections = 2;
    auto s = open_pg_store(o);
    auto w1 = s->write();  // holds the first connection
    w1->put_token(make_token(1, "a@example.com", 1, 1ll << 50));
    std::promise<void> held, release;
    std::thread b([&] {
        auto w2 = s->write();  // and the second
        w2->put_token(make_token(2, "b@example.com", 2, 1ll << 50));
        held.set_value();
        release.get_future().wait();
        w2->commit();
    });
    held.get_future().wait();
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_FALSE(s->read()->token(digest(1))) << "this thread holds one: its read takes a third at once";
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
    std::atomic<bool> done{false};
    std::thread c([&] {
        (void)s->read()->token(digest(1));
        done = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    EXPECT_FALSE(done) << "a third transaction on another thread waits while both are busy";
    w1->commit();
    c.join();
    EXPECT_TRUE(done);
    release.set_value();
    b.join();
    std::size_t open = 99;
    for (int i = 0; i < 40 && (open = connections_named(name)) > 2; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_EQ(open, 2u) << "both kept open for the next transactions, and no third";
    EXPECT_TRUE(s->read()->token(digest(1)));
    EXPECT_TRUE(s->read()->token(digest(2)));
}

// nginx -t compares the workers' connections with what the server allows.
TEST_F(PgOnly, TheServerSaysHowManyConnectionsOrdinaryClientsMayHold) {
    const std::size_t limit = pg_connection_limit(*pg_server());
    EXPECT_GT(limit, 0u);
    EXPECT_LT(limit, 100000u);
    EXPECT_THROW(pg_connection_limit("postgresql://127.0.0.1:1/none?connect_timeout=2"), StoreError);
}

// A database that refuses writes (a standby, default_transaction_read_only) answers StorageError.
TEST_F(PgOnly, AReadOnlyDatabaseRefusesWrites) {
    PgOptions o;
    o.conninfo = schema_->conninfo() + "%20-cdefault_transaction_read_only%3Don";
    auto ro = open_pg_store(o);
    try {
        auto w = ro->write();
        w->put_user(make_user("u1", "a@example.com"));
        w->commit();
        ADD_FAILURE() << "the write went through";
    } catch (const StoreError &e) {
        EXPECT_EQ(e.code(), Code::StorageError);
        EXPECT_NE(std::string(e.what()).find("read-only"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(store_->read()->user_by_id("u1"));
}

}  // namespace

// One sign-in code exchanged by many threads at once (one connection each, as nginx workers on
// several nodes): exactly one session, whichever backend (LMDB serializes the writers; PostgreSQL
// runs them at once and retries the losers, who then find the code spent).
// ---- write batches: one transaction for a worker's waiting writes ----

// The writes of a batch are one transaction: none is seen by others before the batch's end,
// every one of them is after it, durable (a store opened anew finds them).
TEST_F(PgOnly, ABatchIsOneTransactionCommittedAtItsEnd) {
    PgOptions o;
    o.conninfo = schema_->conninfo();
    auto other = open_pg_store(o);
    constexpr int kWrites = 40;
    int runs = 0;
    std::size_t seen_meanwhile = 99;
    store_->batch([&] {
        ++runs;
        for (int i = 1; i <= kWrites; ++i) {
            auto w = store_->write();
            w->put_token(make_token(i, "batch@example.com", i, 1ll << 50));
            w->commit();
        }
        seen_meanwhile = other->read()->tokens_for("g1", "batch@example.com").size();
    });
    EXPECT_EQ(runs, 1) << "nothing spoiled the batch: it ran once";
    EXPECT_EQ(seen_meanwhile, 0u) << "nothing of the batch is committed before its end";
    store_.reset();
    store_ = open_pg_store(o);
    EXPECT_EQ(store_->read()->tokens_for("g1", "batch@example.com").size(), static_cast<std::size_t>(kWrites));
}

// Tokens and accounts read ahead of a batch's writes (read_tokens_ahead): each write finds them
// as the store has them, under a key of today's form or the legacy one, and what a write of the
// batch changes (a token spent, an account made, a token rewritten) is read afresh.
TEST_F(PgOnly, ABatchFindsWhatItReadAheadAndWhatItChangesAfresh) {
    const std::string prefix("\x01\x02\x03\x04\x05\x06", 6);
    TokenRecord modern = make_token(1, "a@example.com", 1, 1ll << 50);
    modern.hash = prefix + digest(1);  // 6 + 32 bytes: a key of today's form
    {
        auto w = store_->write();
        w->put_user(make_user("u1", "a@example.com"));
        w->put_token(modern);
        w->put_token(make_token(2, "b@example.com", 2, 1ll << 50));  // an address without an account
        w->put_token(make_token(3, "a@example.com", 3, 1ll << 50));  // stored under its legacy key
        w->commit();
    }
    const std::string legacy_asked = prefix + digest(3), unknown = prefix + digest(9);
    int runs = 0;
    store_->batch([&] {
        ++runs;
        store_->read_tokens_ahead({modern.hash, digest(2), legacy_asked, unknown});
        auto w = store_->write();
        ASSERT_TRUE(w->token(modern.hash));
        EXPECT_EQ(w->token(modern.hash)->email, "a@example.com");
        EXPECT_EQ(w->token(digest(2))->email, "b@example.com");
        ASSERT_TRUE(w->token(legacy_asked)) << "found under its legacy key";
        EXPECT_EQ(w->token(legacy_asked)->hash, digest(3));
        EXPECT_FALSE(w->token(unknown));
        EXPECT_EQ(w->user_by_email("g1", "a@example.com")->id, "u1");
        EXPECT_FALSE(w->user_by_email("g1", "b@example.com"));
        // what the batch changes
        w->del_token(modern.hash);
        EXPECT_FALSE(w->token(modern.hash)) << "spent in this batch";
        w->add_user(make_user("u2", "b@example.com"));
        EXPECT_EQ(w->user_by_email("g1", "b@example.com")->id, "u2") << "made in this batch";
        TokenRecord later = make_token(2, "b@example.com", 2, 1ll << 51);
        w->put_token(later);
        EXPECT_EQ(w->token(digest(2))->expires_at, 1ll << 51) << "rewritten in this batch";
        w->del_token(digest(3));
        EXPECT_FALSE(w->token(legacy_asked)) << "its legacy key deleted in this batch";
        w->commit();
    });
    EXPECT_EQ(runs, 1);
    auto r = store_->read();
    EXPECT_FALSE(r->token(modern.hash));
    EXPECT_EQ(r->token(digest(2))->expires_at, 1ll << 51);
    EXPECT_EQ(r->user_by_email("g1", "b@example.com")->id, "u2");
    EXPECT_FALSE(r->token(legacy_asked));
    // outside a batch it reads nothing ahead, and changes nothing
    store_->read_tokens_ahead({digest(2)});
    EXPECT_EQ(store_->read()->token(digest(2))->expires_at, 1ll << 51);
}

// A write abandoned after it changed something cannot be taken out of the batch's transaction:
// the batch runs again with a transaction per write, and only that run counts.
// The write batches take turns on one advisory lock; a turn that another session keeps (a node
// that vanished holding it, until the database notices) is waited for about 2 s, then the batch
// runs without it, and runs whole.
TEST_F(PgOnly, ABatchWhoseTurnDoesNotComeRunsAfterTwoSecondsWithoutIt) {
    PGconn *holder = PQconnectdb(schema_->conninfo().c_str());
    ASSERT_EQ(PQstatus(holder), CONNECTION_OK);
    PGresult *r = PQexec(holder, "SELECT pg_advisory_lock(x'5349474e494e4231'::bigint)");  // the batches' turn
    ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQresultErrorMessage(r);
    PQclear(r);
    const auto t0 = std::chrono::steady_clock::now();
    int runs = 0;
    store_->batch([&] {
        ++runs;
        auto w = store_->write();
        w->put_token(make_token(1, "turn@example.com", 1, 1ll << 50));
        w->commit();
    });
    const auto waited = std::chrono::steady_clock::now() - t0;
    PQfinish(holder);
    EXPECT_EQ(runs, 1);
    EXPECT_TRUE(store_->read()->token(digest(1)));
    EXPECT_GE(waited, std::chrono::milliseconds(1500)) << "the turn was waited for";
    EXPECT_LT(waited, std::chrono::seconds(10)) << "but not for ever";
}

// Writes whose answers nobody reads go with the next statement or the COMMIT: one that fails
// there (here a constraint the test adds refuses it) spoils the batch's run as it would have
// alone, and the second run, a transaction per write, fails that write only.
TEST_F(PgOnly, AWriteThatFailsWithTheCommitRunsTheBatchAgainAndFailsOnlyItself) {
    pg_exec(schema_->conninfo(), "ALTER TABLE signin_tokens ADD CONSTRAINT t_refused CHECK (created_at <> 2)");
    int runs = 0, failed = 0;
    store_->batch([&] {
        ++runs;
        failed = 0;
        for (int i = 1; i <= 3; ++i) {
            try {
                auto w = store_->write();
                w->put_token(make_token(i, "deferred@example.com", i, 1ll << 50));
                w->commit();
            } catch (const StoreError &e) {
                EXPECT_FALSE(e.retry()) << e.what();
                EXPECT_NE(std::string(e.what()).find("write token"), std::string::npos) << e.what();
                ++failed;
            }
        }
    });
    EXPECT_EQ(runs, 2);
    EXPECT_EQ(failed, 1) << "only the write that failed is told so";
    auto r = store_->read();
    EXPECT_TRUE(r->token(digest(1)));
    EXPECT_FALSE(r->token(digest(2)));
    EXPECT_TRUE(r->token(digest(3)));
}

// Outside a batch, such a write fails its transaction's commit, and nothing of it is kept; the
// connection goes on serving.
TEST_F(PgOnly, AWriteThatFailsWithTheCommitFailsThatCommit) {
    pg_exec(schema_->conninfo(), "ALTER TABLE signin_tokens ADD CONSTRAINT t_refused CHECK (created_at <> 2)");
    {
        auto w = store_->write();
        w->put_session(make_session(1, "u1", 1ll << 50));
        w->put_token(make_token(2, "deferred@example.com", 2, 1ll << 50));
        EXPECT_THROW(w->commit(), StoreError);
    }
    EXPECT_FALSE(store_->read()->session(digest(100001))) << "nothing of the failed transaction is kept";
    {
        auto w = store_->write();
        w->put_token(make_token(3, "deferred@example.com", 3, 1ll << 50));
        w->put_token(make_token(2, "deferred@example.com", 2, 1ll << 50));
        EXPECT_THROW((void)w->token(digest(3)), StoreError) << "a read after the failed write says so";
    }
    auto w = store_->write();
    w->put_token(make_token(4, "deferred@example.com", 4, 1ll << 50));
    w->commit();
    EXPECT_TRUE(store_->read()->token(digest(4)));
    EXPECT_FALSE(store_->read()->token(digest(3)));
}

TEST_F(PgOnly, AnAbandonedWriteMakesTheBatchRunAgainWithATransactionPerWrite) {
    int runs = 0;
    store_->batch([&] {
        ++runs;
        for (int i = 1; i <= 3; ++i) {
            auto w = store_->write();
            w->put_token(make_token(i, "abandon@example.com", i, 1ll << 50));
            if (i != 2) w->commit();
        }
    });
    EXPECT_EQ(runs, 2);
    auto r = store_->read();
    EXPECT_TRUE(r->token(digest(1)));
    EXPECT_FALSE(r->token(digest(2))) << "the abandoned write is undone";
    EXPECT_TRUE(r->token(digest(3)));
    EXPECT_EQ(r->tokens_for("g1", "abandon@example.com").size(), 2u) << "nothing of the first run is kept twice";
}

// A write of the batch that loses a race (40001) leaves the batch's transaction aborted: the
// writes after it fail at once, nothing of that run is kept, and the second run (a transaction
// per write) decides: the token spent meanwhile by another node is not spent again.
TEST_F(PgOnly, ALostRaceInABatchRunsItAgainAndTheSecondRunDecides) {
    PgOptions o;
    o.conninfo = schema_->conninfo();
    auto other = open_pg_store(o);
    {
        auto w = store_->write();
        w->put_token(make_token(1, "race@example.com", 1, 1ll << 50));
        w->commit();
    }
    int runs = 0, spent = 0, failed = 0;
    store_->batch([&] {
        ++runs;
        spent = failed = 0;
        try {
            auto w = store_->write();
            w->put_token(make_token(7, "other@example.com", 1, 1ll << 50));  // an unrelated job
            w->commit();
        } catch (const StoreError &) {
            ++failed;
        }
        try {
            auto w = store_->write();
            if (w->token(digest(1))) {
                if (runs == 1) {  // another node spends it first
                    auto theirs = other->write();
                    theirs->del_token(digest(1));
                    theirs->put_session(make_session(1, "u1", 1ll << 50));
                    theirs->commit();
                }
                w->del_token(digest(1));
                w->put_session(make_session(2, "u1", 1ll << 50));
                w->commit();
                ++spent;
            }
        } catch (const StoreError &) {
            ++failed;
        }
        try {
            auto w = store_->write();
            w->put_token(make_token(8, "other@example.com", 2, 1ll << 50));
            w->commit();
        } catch (const StoreError &) {
            ++failed;
        }
    });
    EXPECT_EQ(runs, 2);
    EXPECT_EQ(spent, 0) << "the second run found the token spent";
    EXPECT_EQ(failed, 0);
    auto r = store_->read();
    EXPECT_EQ(r->counts().sessions, 1u) << "one session for one token";
    EXPECT_TRUE(r->token(digest(7)));
    EXPECT_TRUE(r->token(digest(8)));
}

// A key another transaction holds, asked for once the batch's transaction began (a statement of
// it was run), is not waited for there (the batch's snapshot would stay older than the holder's
// commit): the batch runs again with a transaction per write, which waits its turn. A key asked
// for before anything else, or after writes that wait to be sent, is waited for, and held to the
// batch's end.
TEST_F(PgOnly, AKeyHeldElsewhereMidBatchMakesItRunAgain) {
    PgOptions o;
    o.conninfo = schema_->conninfo();
    auto other = open_pg_store(o);
    const std::string key = random_key();
    auto holder = other->write();
    holder->serialize_on(key);
    int runs = 0;
    store_->batch([&] {
        ++runs;
        {
            auto w = store_->write();
            w->put_token(make_token(1, "key@example.com", 1, 1ll << 50));
            (void)w->token(digest(1));  // run: the transaction's snapshot is taken
            w->commit();
        }
        if (runs == 2) holder.reset();  // the holder's transaction ends: the key's turn comes
        try {
            auto w = store_->write();
            w->serialize_on(key);
            w->put_token(make_token(2, "key@example.com", 2, 1ll << 50));
            w->commit();
        } catch (const StoreError &e) {
            EXPECT_EQ(runs, 1) << e.what();
        }
    });
    EXPECT_EQ(runs, 2);
    EXPECT_EQ(store_->read()->tokens_for("g1", "key@example.com").size(), 2u);

    // first in the batch: taken before its transaction begins, and kept until the batch ends
    bool other_got_it_inside = true;
    std::promise<void> done;
    std::future<void> finished = done.get_future();
    std::thread t;
    store_->batch([&] {
        auto w = store_->write();
        w->serialize_on(key);
        w->put_token(make_token(3, "key@example.com", 3, 1ll << 50));
        w->commit();
        t = std::thread([&] {
            try {
                auto x = other->write();
                x->serialize_on(key);
                x->commit();
            } catch (const std::exception &e) {
                ADD_FAILURE() << e.what();
            }
            done.set_value();
        });
        other_got_it_inside = finished.wait_for(std::chrono::milliseconds(300)) == std::future_status::ready;
    });
    EXPECT_FALSE(other_got_it_inside) << "the batch holds the key to its end";
    EXPECT_EQ(finished.wait_for(std::chrono::seconds(5)), std::future_status::ready) << "and gives it back then";
    t.join();

    // after writes that were deferred, nothing sent yet: waited for, ahead of them, in one run
    auto holds = other->write();
    holds->serialize_on(key);
    std::thread ends([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        holds.reset();
    });
    runs = 0;
    store_->batch([&] {
        ++runs;
        {
            auto w = store_->write();
            w->put_token(make_token(4, "key@example.com", 4, 1ll << 50));
            w->commit();
        }
        auto w = store_->write();
        w->serialize_on(key);
        w->put_token(make_token(5, "key@example.com", 5, 1ll << 50));
        w->commit();
    });
    ends.join();
    EXPECT_EQ(runs, 1) << "the key was waited for, not a reason to run again";
    EXPECT_EQ(store_->read()->tokens_for("g1", "key@example.com").size(), 5u);
}

class ExchangeRace : public EngineTest {};

TEST_F(ExchangeRace, OneCodeMakesExactlyOneSession) {
    make(open_policy());
    ASSERT_TRUE(id_->tokens().request_token(Intent::Register, "race@example.com", ""));
    const Secret token = mailer_.last().token;
    std::atomic<int> won{0}, lost{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 12; ++i) {
        threads.emplace_back([&] {
            auto s = id_->tokens().exchange_from(token, "198.51.100.1");
            if (s) {
                ++won;
            } else if (s.error().code == Code::InvalidToken) {
                ++lost;
            } else {
                ADD_FAILURE() << s.error().message;
            }
        });
    }
    for (auto &t : threads) t.join();
    EXPECT_EQ(won.load(), 1);
    EXPECT_EQ(lost.load(), 11);
    EXPECT_EQ(store_->read()->counts().sessions, 1u);
}

// Token requests for one address from many threads at once (each reads the address's tokens,
// deletes the oldest and adds one): every one is answered. On PostgreSQL they take turns on the
// address (serialize_on); racing instead, 12 at once lost 10 tries in a row and answered 503.
TEST_F(ExchangeRace, TokenRequestsForOneAddressAllAnswer) {
    make(open_policy());
    std::atomic<int> answered{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 12; ++i) {
        threads.emplace_back([&] {
            for (int k = 0; k < 10; ++k) {
                auto s = id_->tokens().request_token(Intent::Register, "crowd@example.com", "");
                if (s) {
                    ++answered;
                } else {
                    ADD_FAILURE() << s.error().message;
                }
            }
        });
    }
    // a turn that is never given back would hang the threads: fail the run instead
    std::atomic<bool> finished{false};
    std::thread watchdog([&] {
        for (int i = 0; i < 600 && !finished; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (!finished) {
            std::fprintf(stderr, "TokenRequestsForOneAddressAllAnswer: still waiting after 60 s\n");
            std::_Exit(1);
        }
    });
    for (auto &t : threads) t.join();
    finished = true;
    watchdog.join();
    EXPECT_EQ(answered.load(), 120);
    EXPECT_LE(store_->read()->counts().tokens, 3u) << "tokens_per_address holds";
}
