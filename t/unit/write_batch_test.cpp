#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "signin/auth.hpp"
#include "signin/store.hpp"

using namespace signin;

namespace {

class WriteBatchTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/signin-batch-test-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        opts_.path = dir_ + "/db";
        opts_.map_size = 1ull << 26;
        store_ = open_lmdb_store(opts_);
    }
    void TearDown() override {
        store_.reset();
        std::filesystem::remove_all(dir_);
    }
    static TokenRecord token(int thread, int i) {
        TokenRecord t;
        t.hash = std::string(32, 'x');
        std::string id = std::to_string(thread) + ":" + std::to_string(i);
        t.hash.replace(0, id.size(), id);
        t.group_id = "default";
        t.email = "t" + std::to_string(thread) + "@example.com";
        t.created_at = i;
        t.expires_at = 1LL << 40;
        return t;
    }
    std::string dir_;
    LmdbOptions opts_;
    std::shared_ptr<Store> store_;
    // the engine over store_: its write_batch is the transports' group commit
    std::unique_ptr<Identity> engine() {
        return std::make_unique<Identity>(store_, Origin{"https://app.example.com", true, false}, Policy{});
    }
};

TEST_F(WriteBatchTest, EveryOperationOfABatchIsDurableWhenItReturns) {
    constexpr int kOps = 100;
    {
        auto id = engine();
        Status st = id->write_batch([&] {
            for (int i = 0; i < kOps; ++i) {
                auto w = store_->write();
                w->put_token(token(1, i));
                w->commit();
            }
        });
        ASSERT_TRUE(st.ok());
    }
    store_.reset();
    store_ = open_lmdb_store(opts_);  // durable: all there after reopen
    EXPECT_EQ(store_->read()->tokens_for("default", token(1, 0).email).size(), static_cast<std::size_t>(kOps));
}

TEST_F(WriteBatchTest, AnOperationThatThrowsLosesTheBatchAndSaysSo) {
    auto id = engine();
    Status st = id->write_batch([&] {
        auto w = store_->write();
        w->put_token(token(5, 5));
        w->commit();
        throw StoreError(Code::StorageError, "injected");
    });
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, Code::StorageError);
    EXPECT_FALSE(store_->read()->token(token(5, 5).hash)) << "a failed batch wrote nothing";
}

TEST_F(WriteBatchTest, AnAbortedOperationLeavesTheRestOfTheBatch) {
    // Three operations in one batch: the middle one writes and then aborts its nested txn.
    store_->batch([&] {
        {
            auto w = store_->write();
            w->put_token(token(1, 1));
            w->commit();
        }
        {
            auto w = store_->write();
            w->put_token(token(2, 2));
            // destroyed without commit: aborted
        }
        {
            auto w = store_->write();
            w->put_token(token(3, 3));
            w->commit();
        }
    });
    auto r = store_->read();
    EXPECT_TRUE(r->token(token(1, 1).hash));
    EXPECT_FALSE(r->token(token(2, 2).hash));
    EXPECT_TRUE(r->token(token(3, 3).hash));
}

// Issue #20: a batch first runs in one LMDB transaction (no nested one per write()); a write()
// abandoned after it wrote makes the whole batch run again with nested transactions, and only
// that second run is kept.
TEST_F(WriteBatchTest, AnAbandonedWriteMakesTheBatchRunAgainAndOnlyTheSecondRunCounts) {
    int runs = 0;
    std::vector<int> seen_before;  // what each run saw of the first operation's token before writing
    store_->batch([&] {
        ++runs;
        seen_before.push_back(store_->write()->token(token(6, 1).hash) ? 1 : 0);
        {
            auto w = store_->write();
            w->put_token(token(6, 1));
            w->commit();
        }
        {
            auto w = store_->write();
            w->put_token(token(6, 2));
            // abandoned after writing
        }
        {
            auto w = store_->write();
            // the first run may see it (that run is undone whole); the run that counts does not
            if (runs == 2) {
                EXPECT_FALSE(w->token(token(6, 2).hash)) << "the kept run sees no abandoned write";
            }
            w->put_token(token(6, 3));
            w->commit();
        }
    });
    EXPECT_EQ(runs, 2);
    EXPECT_EQ(seen_before, (std::vector<int>{0, 0})) << "the second run starts from what was before the batch";
    auto r = store_->read();
    EXPECT_TRUE(r->token(token(6, 1).hash));
    EXPECT_FALSE(r->token(token(6, 2).hash));
    EXPECT_TRUE(r->token(token(6, 3).hash));
}

TEST_F(WriteBatchTest, ABatchRunsOnceWhenNoWriteIsAbandonedAfterWriting) {
    {
        auto w = store_->write();
        w->put_token(token(7, 1));
        w->commit();
    }
    int runs = 0;
    store_->batch([&] {
        ++runs;
        {
            auto w = store_->write();  // abandoned after reading only
            EXPECT_TRUE(w->token(token(7, 1).hash));
        }
        {
            auto w = store_->write();  // abandoned after deleting what is not there
            w->del_token(token(7, 9).hash);
            w->del_session(std::string(32, 's'));
        }
        {
            auto w = store_->write();
            w->del_token(token(7, 1).hash);
            w->put_token(token(7, 2));
            w->commit();
        }
    });
    EXPECT_EQ(runs, 1);
    auto r = store_->read();
    EXPECT_FALSE(r->token(token(7, 1).hash));
    EXPECT_TRUE(r->token(token(7, 2).hash));
}

TEST_F(WriteBatchTest, AFailedWriteInsideABatchIsUndoneAlone) {
    // A write that throws half way (here: a key LMDB refuses, after the first put) is undone
    // like an abandoned one: the batch runs again and the failed operation leaves nothing.
    int runs = 0;
    bool threw = false;
    store_->batch([&] {
        ++runs;
        {
            auto w = store_->write();
            w->put_token(token(8, 1));
            w->commit();
        }
        try {
            auto w = store_->write();
            w->put_token(token(8, 2));
            TokenRecord bad = token(8, 3);
            bad.hash = std::string(600, 'k');  // over LMDB's key limit: refused
            w->put_token(bad);
            w->commit();
        } catch (const StoreError &) {
            threw = true;
        }
    });
    EXPECT_TRUE(threw);
    EXPECT_EQ(runs, 2);
    auto r = store_->read();
    EXPECT_TRUE(r->token(token(8, 1).hash));
    EXPECT_FALSE(r->token(token(8, 2).hash)) << "the failed operation's first write is undone";
}

TEST_F(WriteBatchTest, LaterOperationsInABatchSeeEarlierOnes) {
    bool seen = false;
    store_->batch([&] {
        {
            auto w = store_->write();
            w->put_token(token(4, 4));
            w->commit();
        }
        auto w = store_->write();
        seen = w->token(token(4, 4).hash).has_value();
    });
    EXPECT_TRUE(seen);
}

TEST_F(WriteBatchTest, AFullMapFailsCleanlyAndLosesNothingAcknowledged) {
    store_.reset();
    opts_.map_size = 256 * 1024;
    opts_.audit_max = 1u << 30;  // audit entries fill the map here (their own bound is tested in store_test)
    std::filesystem::remove_all(opts_.path);
    store_ = open_lmdb_store(opts_);
    auto id = engine();
    int acknowledged = 0;
    bool full = false;
    for (int i = 0; i < 5000 && !full; ++i) {
        bool op_ok = false;
        Status st = id->write_batch([&] {
            try {
                auto w = store_->write();
                AuditEntry e;
                e.kind = "fill";
                e.detail = std::string(400, 'a');
                w->append_audit(e);
                w->commit();
                op_ok = true;
            } catch (const StoreError &e) {
                EXPECT_EQ(e.code(), Code::StorageFull);
            }
        });
        if (st.ok() && op_ok) {
            ++acknowledged;
        } else {
            full = true;
            if (!st.ok()) {
                EXPECT_EQ(st.error().code, Code::StorageFull);  // the batch commit itself
            }
        }
    }
    ASSERT_TRUE(full);
    // every acknowledged write is there, nothing else, also after reopening
    EXPECT_EQ(store_->read()->audit(100000).size(), static_cast<std::size_t>(acknowledged));
    id.reset();
    store_.reset();
    store_ = open_lmdb_store(opts_);
    EXPECT_EQ(store_->read()->audit(100000).size(), static_cast<std::size_t>(acknowledged));
}

}  // namespace
