#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "signin/group_commit.hpp"
#include "signin/store.hpp"

using namespace signin;

namespace {

class GroupCommitTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/signin-gc-test-XXXXXX";
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
    std::unique_ptr<Store> store_;
};

TEST_F(GroupCommitTest, ConcurrentWritersShareCommitsAndAllLand) {
    GroupCommitter gc(*store_);
    constexpr int kThreads = 8, kOps = 100;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kOps; ++i) {
                Status st = gc.run([&] {
                    auto w = store_->write();
                    w->put_token(token(t, i));
                    w->commit();
                });
                ASSERT_TRUE(st.ok());
            }
        });
    }
    for (auto &th : threads) th.join();
    EXPECT_EQ(gc.operations(), static_cast<std::uint64_t>(kThreads * kOps));
    EXPECT_LT(gc.batches(), gc.operations()) << "no two writers ever shared a commit";
    store_.reset();
    store_ = open_lmdb_store(opts_);  // durable: all there after reopen
    auto r = store_->read();
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(r->tokens_for("default", token(t, 0).email).size(), 100u);
}

TEST_F(GroupCommitTest, AnAbortedOperationLeavesTheRestOfTheBatch) {
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

TEST_F(GroupCommitTest, LaterOperationsInABatchSeeEarlierOnes) {
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

TEST_F(GroupCommitTest, AFullMapFailsCleanlyAndLosesNothingAcknowledged) {
    store_.reset();
    opts_.map_size = 256 * 1024;
    std::filesystem::remove_all(opts_.path);
    store_ = open_lmdb_store(opts_);
    GroupCommitter gc(*store_);
    int acknowledged = 0;
    bool full = false;
    for (int i = 0; i < 5000 && !full; ++i) {
        bool op_ok = false;
        Status st = gc.run([&] {
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
    store_.reset();
    store_ = open_lmdb_store(opts_);
    EXPECT_EQ(store_->read()->audit(100000).size(), static_cast<std::size_t>(acknowledged));
}

}  // namespace
