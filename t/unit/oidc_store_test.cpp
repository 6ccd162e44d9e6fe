// The OpenID provider's grants in the store, on both backends: codes spent once (two takes at once
// included), refresh token families rotated and ended, consents per user and client, secrets kept
// only as digests, the purge, the account's deletion, the check and the copy, and a store made
// before these tables. The PostgreSQL cases run where SIGNIN_TEST_PG names a server and skip with
// that reason elsewhere.
#include <gtest/gtest.h>
#include <lmdb.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/encoding.hpp"
#include "pg_fixture.hpp"
#include "signin/engine.hpp"
#include "signin/oidc_provider.hpp"
#include "signin/store.hpp"

using namespace signin;
using namespace signin::testing;

namespace {

constexpr Millis kNow = 1760000000000;

enum class Backend { Lmdb, Pg };

class OidcStore : public ::testing::TestWithParam<Backend> {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/signin-oidc-store-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        root_ = tmpl;
        if (GetParam() == Backend::Pg) {
            auto server = pg_server();
            if (!server) GTEST_SKIP() << "SIGNIN_TEST_PG is not set: no PostgreSQL to test against";
            schema_ = std::make_unique<PgSchema>(*server);
        }
        open();
        auto w = store_->write();
        for (const char *id : {"u1", "u2"}) {
            User u;
            u.id = id;
            u.email = std::string(id) + "@example.com";
            u.group_id = "g1";
            w->put_user(u);
        }
        w->commit();
    }
    void TearDown() override {
        store_.reset();
        schema_.reset();
        std::filesystem::remove_all(root_);
    }
    void open() {
        store_.reset();
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
    // Every byte the store holds.
    std::string all_bytes() const {
        if (GetParam() == Backend::Pg) return schema_->all_bytes();
        std::ifstream in(root_ + "/db/data.mdb", std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
    }
    // A write transaction run as the engine runs it: again from the start after a lost race.
    template <class F>
    void retried(F f) {
        for (int attempt = 1;; ++attempt) {
            try {
                auto w = store_->write();
                f(*w);
                w->commit();
                return;
            } catch (const StoreError &e) {
                if (!e.retry() || attempt >= 20) throw;
            }
        }
    }

    // The n-th secret of the test, as the provider hands one out (the time, then random
    // characters): the same each time it is asked for.
    const std::string &secret(int n) {
        auto &s = secrets_[n];
        if (s.empty()) s = enc::ordered_secret(kNow + n);
        return s;
    }

    std::string root_;
    std::unique_ptr<PgSchema> schema_;
    std::unique_ptr<Store> store_;
    std::map<int, std::string> secrets_;
};

INSTANTIATE_TEST_SUITE_P(Backends, OidcStore, ::testing::Values(Backend::Lmdb, Backend::Pg),
                         [](const auto &p) { return p.param == Backend::Lmdb ? "Lmdb" : "Pg"; });

op::AuthorizeRequest request(const std::string &client, std::vector<std::string> scopes) {
    op::AuthorizeRequest r;
    r.client_id = client;
    r.redirect_uri = "https://" + client + ".example.com/cb";
    r.scopes = std::move(scopes);
    r.nonce = "n-0S6_WzA2Mj";
    r.code_challenge = op::pkce_challenge("verifier-of-the-test-verifier-of-the-test-43");
    return r;
}

op::CodeRecord code(const std::string &key, const std::string &user, const std::string &client = "wiki",
                    std::vector<std::string> scopes = {"openid", "email"}, Millis now = kNow) {
    return op::new_code(request(client, std::move(scopes)), user, now - 5000, SignInMethod::EmailToken, true, key, now);
}

op::TokenRequest exchange(const std::string &code_secret, const std::string &client = "wiki") {
    op::TokenRequest t;
    t.grant = op::Grant::AuthorizationCode;
    t.client_id = client;
    t.code = Secret(code_secret);
    t.redirect_uri = "https://" + client + ".example.com/cb";
    t.code_verifier = Secret("verifier-of-the-test-verifier-of-the-test-43");
    return t;
}

op::Client client(const std::string &id = "wiki") {
    op::Client c;
    c.id = id;
    c.redirect_uris = {"https://" + id + ".example.com/cb"};
    c.is_public = true;
    return c;
}

op::TokenRequest refresh(const std::string &token_secret, const std::string &client = "wiki") {
    op::TokenRequest t;
    t.grant = op::Grant::RefreshToken;
    t.client_id = client;
    t.refresh_token = Secret(token_secret);
    return t;
}

// A code read in a write transaction and written back spent once, with what it gave: it keeps
// only that, and a second use finds it spent and says what to revoke.
TEST_P(OidcStore, ACodeIsSpentOnceAndItsReuseSaysWhatItGave) {
    const std::string c = secret(1);
    const std::string key = record_key(c);
    {
        auto w = store_->write();
        w->put_oidc_code(code(key, "u1"));
        w->commit();
    }
    const std::string access_key = record_key(secret(2));
    {
        auto w = store_->write();
        auto taken = w->oidc_code(key);
        ASSERT_TRUE(taken);
        EXPECT_FALSE(taken->spent);
        EXPECT_EQ(taken->user_id, "u1");
        EXPECT_EQ(taken->nonce, "n-0S6_WzA2Mj");
        EXPECT_EQ(taken->scopes, (std::vector<std::string>{"openid", "email"}));
        EXPECT_EQ(taken->amr, op::amr(SignInMethod::EmailToken, true));
        EXPECT_EQ(op::check_code(&*taken, exchange(c), client(), kNow).outcome, op::CodeOutcome::Ok);
        // spent with what it gave, in one write
        taken->spent = true;
        taken->access_key = access_key;
        taken->family_id = "fam-1";
        w->put_oidc_code(*taken);
        w->put_oidc_access_token(op::new_access_token(access_key, "wiki", "u1", taken->scopes, "", kNow));
        // its request's details are gone within this transaction already
        auto now = w->oidc_code(key);
        ASSERT_TRUE(now);
        EXPECT_TRUE(now->spent);
        EXPECT_TRUE(now->nonce.empty());
        EXPECT_TRUE(now->redirect_uri.empty());
        EXPECT_TRUE(now->code_challenge.empty());
        EXPECT_TRUE(now->scopes.empty());
        w->commit();
    }
    auto r = store_->read()->oidc_code(key);
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->spent);
    EXPECT_TRUE(r->nonce.empty()) << "a spent code keeps only what revoking its grant needs";
    EXPECT_EQ(r->user_id, "u1");
    EXPECT_EQ(r->client_id, "wiki");

    auto w = store_->write();
    auto again = w->oidc_code(key);
    ASSERT_TRUE(again);
    const op::CodeCheck check = op::check_code(&*again, exchange(c), client(), kNow + 1000);
    EXPECT_EQ(check.outcome, op::CodeOutcome::Reused);
    EXPECT_EQ(again->access_key, access_key);
    EXPECT_EQ(again->family_id, "fam-1");
    w->del_oidc_access_token(again->access_key);
    w->commit();
    EXPECT_FALSE(store_->read()->oidc_access_token(access_key));
    EXPECT_FALSE(store_->write()->oidc_code(record_key(secret(99)))) << "a code never given";
}

// Many transactions spend one code at once, as the token endpoint does (read it, write it back
// spent; one connection each on PostgreSQL, as nginx workers on several nodes): exactly one finds
// it live, every other one finds it spent.
TEST_P(OidcStore, OfConcurrentSpendsOfOneCodeExactlyOneWins) {
    constexpr int kRounds = 5;
    constexpr int kThreads = 6;
    for (int round = 0; round < kRounds; ++round) {
        const std::string key = record_key(secret(100 + round));
        {
            auto w = store_->write();
            w->put_oidc_code(code(key, "u1"));
            w->commit();
        }
        std::atomic<int> ready{0}, live{0}, spent{0}, failed{0};
        std::vector<std::thread> threads;
        for (int i = 0; i < kThreads; ++i) {
            threads.emplace_back([&] {
                ready.fetch_add(1);
                while (ready.load() < kThreads) std::this_thread::yield();
                try {
                    bool was_live = false;
                    retried([&](WriteTxn &w) {
                        auto c = w.oidc_code(key);
                        was_live = c && !c->spent;
                        if (was_live) {
                            c->spent = true;
                            w.put_oidc_code(*c);
                        }
                    });
                    (was_live ? live : spent).fetch_add(1);
                } catch (const std::exception &) {
                    failed.fetch_add(1);
                }
            });
        }
        for (auto &t : threads) t.join();
        EXPECT_EQ(failed.load(), 0);
        EXPECT_EQ(live.load(), 1) << "round " << round;
        EXPECT_EQ(spent.load(), kThreads - 1) << "round " << round;
    }
}

// A family from a code with offline_access: each use of its live token writes the next
// generation and the family in one transaction; the token before it coming back ends the family
// and everything it gave.
TEST_P(OidcStore, RefreshTokensRotateAndAReusedOneEndsTheFamily) {
    const op::CodeRecord c = code(record_key(secret(1)), "u1", "wiki", {"openid", "offline_access"});
    auto family = op::new_family(c, "fam-1", kNow);
    ASSERT_TRUE(family);
    const std::string first = secret(2), second = secret(3);
    const std::string access1 = record_key(secret(4)), access2 = record_key(secret(5));
    {
        auto w = store_->write();
        w->put_oidc_family(*family);
        w->put_oidc_refresh_token(op::refresh_token_record(*family, record_key(first), kNow));
        w->put_oidc_access_token(op::new_access_token(access1, "wiki", "u1", c.scopes, family->id, kNow));
        w->commit();
    }
    retried([&](WriteTxn &w) {  // a rotation
        auto token = w.oidc_refresh_token(record_key(first));
        auto f = token ? w.oidc_family(token->family_id) : std::nullopt;
        ASSERT_TRUE(token && f);
        const op::RefreshCheck check = op::use_refresh(&*token, &*f, refresh(first), client(), kNow + 1000);
        ASSERT_EQ(check.outcome, op::RefreshOutcome::Rotate);
        w.put_oidc_family(*f);
        w.put_oidc_refresh_token(op::refresh_token_record(*f, record_key(second), kNow + 1000));
        w.put_oidc_access_token(op::new_access_token(access2, "wiki", "u1", check.scopes, f->id, kNow + 1000));
    });
    {
        auto r = store_->read();
        EXPECT_EQ(r->oidc_family("fam-1")->generation, 2u);
        EXPECT_EQ(r->oidc_refresh_token(record_key(second))->generation, 2u);
        EXPECT_EQ(r->oidc_refresh_token(record_key(first))->generation, 1u) << "the used one stays, to be known";
        EXPECT_EQ(r->oidc_family("fam-1")->last_used_at, kNow + 1000);
    }
    retried([&](WriteTxn &w) {  // the first token again: someone copied it
        auto token = w.oidc_refresh_token(record_key(first));
        auto f = token ? w.oidc_family(token->family_id) : std::nullopt;
        ASSERT_TRUE(token && f);
        const op::RefreshCheck check = op::use_refresh(&*token, &*f, refresh(first), client(), kNow + 2000);
        ASSERT_EQ(check.outcome, op::RefreshOutcome::Reused);
        w.end_oidc_family(f->id);
    });
    auto r = store_->read();
    auto f = r->oidc_family("fam-1");
    ASSERT_TRUE(f) << "an ended family is kept until it expires";
    EXPECT_TRUE(f->revoked);
    EXPECT_FALSE(r->oidc_refresh_token(record_key(first)));
    EXPECT_FALSE(r->oidc_refresh_token(record_key(second))) << "the live token went with its family";
    EXPECT_FALSE(r->oidc_access_token(access1));
    EXPECT_FALSE(r->oidc_access_token(access2));
    EXPECT_TRUE(store_->check_integrity().empty());
}

// One refresh token used by two parties at once: one rotation wins, and the other use is the
// token's reuse, which ends the family with the token just handed out (neither party keeps it).
TEST_P(OidcStore, OfConcurrentUsesOfOneRefreshTokenOneRotatesAndTheFamilyEnds) {
    constexpr int kThreads = 4;
    const op::CodeRecord c = code(record_key(secret(1)), "u1", "wiki", {"openid", "offline_access"});
    auto family = op::new_family(c, "fam-1", kNow);
    const std::string first = secret(2);
    {
        auto w = store_->write();
        w->put_oidc_family(*family);
        w->put_oidc_refresh_token(op::refresh_token_record(*family, record_key(first), kNow));
        w->commit();
    }
    std::vector<std::string> next;
    for (int i = 0; i < kThreads; ++i) next.push_back(record_key(secret(10 + i)));
    std::atomic<int> ready{0}, rotated{0}, reused{0}, failed{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
        threads.emplace_back([&, i] {
            ready.fetch_add(1);
            while (ready.load() < kThreads) std::this_thread::yield();
            try {
                op::RefreshOutcome outcome = op::RefreshOutcome::Invalid;
                retried([&](WriteTxn &w) {
                    auto token = w.oidc_refresh_token(record_key(first));
                    auto f = token ? w.oidc_family(token->family_id) : std::nullopt;
                    const op::RefreshCheck check = op::use_refresh(token ? &*token : nullptr, f ? &*f : nullptr,
                                                                   refresh(first), client(), kNow + 1000);
                    outcome = check.outcome;
                    if (outcome == op::RefreshOutcome::Rotate) {
                        w.put_oidc_family(*f);
                        w.put_oidc_refresh_token(op::refresh_token_record(*f, next[static_cast<std::size_t>(i)], kNow + 1000));
                    } else if (outcome == op::RefreshOutcome::Reused) {
                        w.end_oidc_family(f->id);
                    }
                });
                if (outcome == op::RefreshOutcome::Rotate) rotated.fetch_add(1);
                if (outcome == op::RefreshOutcome::Reused) reused.fetch_add(1);
            } catch (const std::exception &) {
                failed.fetch_add(1);
            }
        });
    }
    for (auto &t : threads) t.join();
    EXPECT_EQ(failed.load(), 0);
    EXPECT_EQ(rotated.load(), 1);
    EXPECT_EQ(reused.load(), 1) << "the next use sees the reuse; later ones find the family ended";
    auto r = store_->read();
    EXPECT_TRUE(r->oidc_family("fam-1")->revoked);
    for (const auto &k : next) EXPECT_FALSE(r->oidc_refresh_token(k)) << "the winner's token went with its family";
}

TEST_P(OidcStore, ConsentsPerUserAndClient) {
    {
        auto w = store_->write();
        w->put_oidc_consent(op::grant_consent(nullptr, request("wiki", {"openid", "email"}), "u1", kNow));
        w->put_oidc_consent(op::grant_consent(nullptr, request("forge", {"openid"}), "u1", kNow));
        w->put_oidc_consent(op::grant_consent(nullptr, request("wiki", {"openid"}), "u2", kNow));
        w->commit();
    }
    auto r = store_->read();
    auto wiki = r->oidc_consent("u1", "wiki");
    ASSERT_TRUE(wiki);
    EXPECT_EQ(wiki->scopes, (std::vector<std::string>{"openid", "email"}));
    EXPECT_EQ(wiki->granted_at, kNow);
    EXPECT_TRUE(op::covers(&*wiki, request("wiki", {"openid"})));
    const auto theirs = r->oidc_consent("u2", "wiki");
    ASSERT_TRUE(theirs);
    EXPECT_FALSE(op::covers(&*theirs, request("wiki", {"openid", "email"})));
    EXPECT_FALSE(r->oidc_consent("u2", "forge"));
    EXPECT_FALSE(r->oidc_consent("u1", "wik"));
    auto mine = r->oidc_consents_of("u1");
    ASSERT_EQ(mine.size(), 2u);
    EXPECT_EQ(mine[0].client_id, "forge");
    EXPECT_EQ(mine[1].client_id, "wiki");
    EXPECT_TRUE(r->oidc_consents_of("u").empty()) << "a prefix of an id is not the id";
    {
        auto w = store_->write();
        // more scopes later: one record, both agreements
        auto before = w->oidc_consent("u2", "wiki");
        w->put_oidc_consent(op::grant_consent(&*before, request("wiki", {"openid", "email"}), "u2", kNow + 1));
        w->del_oidc_consent("u1", "forge");
        w->commit();
    }
    r = store_->read();
    EXPECT_EQ(r->oidc_consent("u2", "wiki")->scopes.size(), 2u);
    EXPECT_EQ(r->oidc_consents_of("u2").size(), 1u);
    EXPECT_FALSE(r->oidc_consent("u1", "forge"));
}

// The store is given digests only: no code, access or refresh token it holds can be read back
// out of its files or tables.
TEST_P(OidcStore, SecretsAreKeptOnlyAsDigests) {
    const std::string c = secret(1), access = secret(2), refresh_secret = secret(3);
    const op::CodeRecord rec = code(record_key(c), "u1", "wiki", {"openid", "offline_access"});
    auto family = op::new_family(rec, "fam-1", kNow);
    {
        auto w = store_->write();
        w->put_oidc_code(rec);
        w->put_oidc_family(*family);
        w->put_oidc_refresh_token(op::refresh_token_record(*family, record_key(refresh_secret), kNow));
        w->put_oidc_access_token(op::new_access_token(record_key(access), "wiki", "u1", rec.scopes, "fam-1", kNow));
        w->commit();
    }
    store_.reset();  // everything on disk
    const std::string bytes = all_bytes();
    ASSERT_FALSE(bytes.empty());
    for (const auto &s : {c, access, refresh_secret}) {
        EXPECT_EQ(bytes.find(s), std::string::npos) << "a secret in the store";
        EXPECT_NE(bytes.find(secret_hash(s)), std::string::npos) << "its digest is the key";
    }
}

TEST_P(OidcStore, DeletingAUserDeletesItsGrantsAndConsents) {
    for (const char *user : {"u1", "u2"}) {
        const int base = user[1] == '1' ? 0 : 10;
        const op::CodeRecord rec = code(record_key(secret(base + 1)), user, "wiki", {"openid", "offline_access"});
        auto family = op::new_family(rec, std::string("fam-") + user, kNow);
        auto w = store_->write();
        w->put_oidc_code(rec);
        w->put_oidc_family(*family);
        w->put_oidc_refresh_token(op::refresh_token_record(*family, record_key(secret(base + 2)), kNow));
        w->put_oidc_access_token(op::new_access_token(record_key(secret(base + 3)), "wiki", user, rec.scopes,
                                                      family->id, kNow));
        w->put_oidc_access_token(op::new_access_token(record_key(secret(base + 4)), "forge", user, {"openid"}, "", kNow));
        w->put_oidc_consent(op::grant_consent(nullptr, request("wiki", {"openid"}), user, kNow));
        w->commit();
    }
    {
        auto w = store_->write();
        EXPECT_EQ(w->del_oidc_of("u1"), 6u) << "code, family, refresh token, two access tokens, consent";
        w->del_user("u1");
        w->commit();
    }
    auto r = store_->read();
    EXPECT_FALSE(r->oidc_code(record_key(secret(1))));
    EXPECT_FALSE(r->oidc_family("fam-u1"));
    EXPECT_FALSE(r->oidc_refresh_token(record_key(secret(2))));
    EXPECT_FALSE(r->oidc_access_token(record_key(secret(3))));
    EXPECT_FALSE(r->oidc_access_token(record_key(secret(4))));
    EXPECT_TRUE(r->oidc_consents_of("u1").empty());
    // the other person's stay
    EXPECT_TRUE(r->oidc_code(record_key(secret(11))));
    EXPECT_TRUE(r->oidc_family("fam-u2"));
    EXPECT_TRUE(r->oidc_refresh_token(record_key(secret(12))));
    EXPECT_TRUE(r->oidc_access_token(record_key(secret(13))));
    EXPECT_TRUE(r->oidc_access_token(record_key(secret(14))));
    EXPECT_EQ(r->oidc_consents_of("u2").size(), 1u);
    EXPECT_TRUE(store_->check_integrity().empty());
}

TEST_P(OidcStore, ThePurgeTakesExpiredGrantsWithinItsBudget) {
    const Millis later = kNow + op::kAccessTokenTtl + 1;
    const op::CodeRecord old_code = code(record_key(secret(1)), "u1");                    // expires in 60 s
    const op::CodeRecord new_code = code(record_key(secret(2)), "u1", "wiki", {"openid"}, later);
    op::CodeRecord spent = code(record_key(secret(3)), "u1");
    spent.spent = true;
    const op::CodeRecord offline = code(record_key(secret(4)), "u2", "wiki", {"openid", "offline_access"});
    auto family = op::new_family(offline, "fam-2", kNow);
    {
        auto w = store_->write();
        w->put_oidc_code(old_code);
        w->put_oidc_code(new_code);
        w->put_oidc_code(spent);
        w->put_oidc_access_token(op::new_access_token(record_key(secret(5)), "wiki", "u1", {"openid"}, "", kNow));
        w->put_oidc_access_token(op::new_access_token(record_key(secret(6)), "wiki", "u1", {"openid"}, "", later));
        w->put_oidc_family(*family);
        w->put_oidc_refresh_token(op::refresh_token_record(*family, record_key(secret(7)), kNow));
        w->commit();
    }
    {
        auto w = store_->write();
        EXPECT_EQ(w->purge_expired(later, 100), 3u) << "two codes and an access token";
        w->commit();
    }
    {
        auto r = store_->read();
        EXPECT_FALSE(r->oidc_code(old_code.key));
        EXPECT_FALSE(r->oidc_code(spent.key));
        EXPECT_TRUE(r->oidc_code(new_code.key));
        EXPECT_FALSE(r->oidc_access_token(record_key(secret(5))));
        EXPECT_TRUE(r->oidc_access_token(record_key(secret(6))));
        EXPECT_TRUE(r->oidc_family("fam-2"));
        EXPECT_TRUE(r->oidc_refresh_token(record_key(secret(7))));
    }
    {
        // past the family's end: its token (idle for 30 days) and the family, one per call
        const Millis end = kNow + op::kFamilyTtl + 1;
        auto w = store_->write();
        std::size_t n = 0;
        for (int i = 0; i < 10; ++i) n += w->purge_expired(end, 1);
        EXPECT_EQ(n, 4u) << "the last code, the last access token, the refresh token and the family";
        w->commit();
    }
    auto r = store_->read();
    EXPECT_FALSE(r->oidc_family("fam-2"));
    EXPECT_FALSE(r->oidc_refresh_token(record_key(secret(7))));
    EXPECT_FALSE(r->oidc_code(new_code.key));
    EXPECT_TRUE(store_->check_integrity().empty());
}

// A store made before the provider's tables gets them, empty, when it is opened; nothing else
// changes (the schema version stays).
TEST_P(OidcStore, AStoreWithoutTheProvidersTablesGetsThemAtOpen) {
    store_.reset();
    if (GetParam() == Backend::Pg) {
        pg_exec(schema_->conninfo(),
                "DROP TABLE signin_oidc_codes, signin_oidc_access, signin_oidc_refresh, signin_oidc_families, "
                "signin_oidc_consents");
    } else {
        MDB_env *env = nullptr;
        ASSERT_EQ(mdb_env_create(&env), 0);
        mdb_env_set_maxdbs(env, 32);
        ASSERT_EQ(mdb_env_open(env, (root_ + "/db").c_str(), 0, 0600), 0);
        MDB_txn *txn = nullptr;
        ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), 0);
        for (const char *name : {"oidc_codes", "oidc_access", "oidc_refresh", "oidc_families", "oidc_family_tokens",
                                 "user_oidc_families", "oidc_consents"}) {
            MDB_dbi dbi = 0;
            ASSERT_EQ(mdb_dbi_open(txn, name, 0, &dbi), 0) << name;
            ASSERT_EQ(mdb_drop(txn, dbi, 1), 0) << name;
        }
        ASSERT_EQ(mdb_txn_commit(txn), 0);
        mdb_env_close(env);
    }
    open();
    EXPECT_TRUE(store_->read()->user_by_id("u1"));
    {
        auto w = store_->write();
        w->put_oidc_code(code(record_key(secret(1)), "u1"));
        w->put_oidc_consent(op::grant_consent(nullptr, request("wiki", {"openid"}), "u1", kNow));
        w->commit();
    }
    EXPECT_TRUE(store_->read()->oidc_code(record_key(secret(1))));
    EXPECT_TRUE(store_->read()->oidc_consent("u1", "wiki"));
    EXPECT_TRUE(store_->check_integrity().empty());
}

// signin-admin copy takes the grants along; the check reads every one of them.
TEST_P(OidcStore, CopiedFromLmdbAndChecked) {
    if (GetParam() != Backend::Pg) GTEST_SKIP() << "the copy goes from LMDB into PostgreSQL";
    LmdbOptions o;
    o.path = root_ + "/source";
    o.map_size = 1ull << 24;
    auto source = open_lmdb_store(o);
    const op::CodeRecord rec = code(record_key(secret(1)), "u1", "wiki", {"openid", "offline_access"});
    auto family = op::new_family(rec, "fam-1", kNow);
    {
        auto w = source->write();
        User u;
        u.id = "u1";
        u.email = "u1@example.com";
        u.group_id = "g1";
        w->put_user(u);
        w->put_oidc_code(rec);
        w->put_oidc_family(*family);
        w->put_oidc_refresh_token(op::refresh_token_record(*family, record_key(secret(2)), kNow));
        w->put_oidc_access_token(op::new_access_token(record_key(secret(3)), "wiki", "u1", rec.scopes, "fam-1", kNow));
        w->put_oidc_consent(op::grant_consent(nullptr, request("wiki", {"openid"}), "u1", kNow));
        w->commit();
    }
    EXPECT_TRUE(source->check_integrity().empty());
    {
        auto w = store_->write();
        source->copy_into(*w);
        w->commit();
    }
    auto r = store_->read();
    EXPECT_EQ(r->oidc_code(rec.key)->nonce, rec.nonce);
    EXPECT_EQ(r->oidc_family("fam-1")->scopes, rec.scopes);
    EXPECT_EQ(r->oidc_refresh_token(record_key(secret(2)))->family_id, "fam-1");
    EXPECT_EQ(r->oidc_access_token(record_key(secret(3)))->family_id, "fam-1");
    EXPECT_TRUE(r->oidc_consent("u1", "wiki"));
    EXPECT_TRUE(store_->check_integrity().empty());
    {
        // the copy's family still ends with its tokens
        auto w = store_->write();
        w->end_oidc_family("fam-1");
        w->commit();
    }
    EXPECT_FALSE(store_->read()->oidc_access_token(record_key(secret(3))));
}

// What the check says of a family whose user is gone, and of a refresh token of no family.
TEST_P(OidcStore, TheCheckFindsGrantsOfNobody) {
    const op::CodeRecord rec = code(record_key(secret(1)), "u3", "wiki", {"openid", "offline_access"});
    auto family = op::new_family(rec, "fam-3", kNow);
    op::RefreshTokenRecord stray;
    stray.key = record_key(secret(2));
    stray.family_id = "fam-none";
    stray.generation = 1;
    stray.expires_at = kNow + 1000;
    {
        auto w = store_->write();
        w->put_oidc_family(*family);
        w->put_oidc_refresh_token(stray);
        w->commit();
    }
    const auto problems = store_->check_integrity();
    ASSERT_EQ(problems.size(), 2u);
    bool family_of_nobody = false, token_of_nothing = false;
    for (const auto &p : problems) {
        family_of_nobody |= p.find("a family of no user (u3)") != std::string::npos;
        token_of_nothing |= p.find("a token of no family") != std::string::npos;
    }
    EXPECT_TRUE(family_of_nobody);
    EXPECT_TRUE(token_of_nothing);
}

}  // namespace
