// The LMDB store's commits are durable when they return (nothing acknowledged is lost), with the meta page's
// flush after LMDB's write lock (issue #20, src/store/lmdb_store.cpp's header): the environment is
// opened with MDB_NOMETASYNC, so LMDB writes the meta page without waiting for it, and the store
// must then flush it itself before commit() or batch() returns.
//
// LMDB is a shared library: its calls to pwrite and fdatasync resolve to the definitions below,
// which this executable exports (default visibility, and CMakeLists.txt names them to the
// linker), and which pass every call on to the kernel unchanged. While a
// test records, they note the order of meta-page writes (the first two pages of data.mdb) and
// flushes; the tests then check that the last meta-page write of each commit was flushed before
// the commit returned.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "signin/store.hpp"

namespace {

enum class Io { MetaWrite, Flush };
std::atomic<bool> g_recording{false};
std::mutex g_io_lock;
std::vector<Io> g_io;

void note(Io what) {
    if (!g_recording.load()) return;
    std::lock_guard<std::mutex> hold(g_io_lock);
    g_io.push_back(what);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
    // the two meta pages are the file's first two pages (LMDB's page size is the system's)
    if (offset < 2 * sysconf(_SC_PAGESIZE)) note(Io::MetaWrite);
    return syscall(SYS_pwrite64, fd, buf, count, offset);
}

extern "C" __attribute__((visibility("default"))) int fdatasync(int fd) {
    const long rc = syscall(SYS_fdatasync, fd);
    note(Io::Flush);
    return static_cast<int>(rc);
}

namespace {

using namespace signin;

class StoreDurability : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/signin-durability-test-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        root_ = tmpl;
        LmdbOptions o;
        o.path = root_ + "/db";
        o.map_size = 1ull << 24;
        o.max_readers = 8;
        store_ = open_lmdb_store(o);
    }
    void TearDown() override {
        g_recording = false;
        store_.reset();
        std::filesystem::remove_all(root_);
    }
    static void record() {
        std::lock_guard<std::mutex> hold(g_io_lock);
        g_io.clear();
        g_recording = true;
    }
    // What was recorded since record(); recording stops.
    static std::vector<Io> recorded() {
        g_recording = false;
        std::lock_guard<std::mutex> hold(g_io_lock);
        return g_io;
    }
    static User user(const std::string &id) {
        User u;
        u.id = id;
        u.email = id + "@example.com";
        u.group_id = "default";
        u.created_at = u.updated_at = 1795604740123;
        return u;
    }
    // One commit's I/O: its meta page written, and a flush after the last such write.
    static void expect_meta_flushed(const std::vector<Io> &io) {
        std::size_t last_meta = io.size();
        for (std::size_t i = 0; i < io.size(); ++i) {
            if (io[i] == Io::MetaWrite) last_meta = i;
        }
        ASSERT_LT(last_meta, io.size()) << "no meta page was written: the interposed pwrite saw nothing";
        bool flushed = false;
        for (std::size_t i = last_meta + 1; i < io.size(); ++i) flushed = flushed || io[i] == Io::Flush;
        EXPECT_TRUE(flushed) << "the commit returned before its meta page was flushed";
    }

    std::string root_;
    std::unique_ptr<Store> store_;
};

TEST_F(StoreDurability, ACommitReturnsWithItsMetaPageFlushed) {
    for (int i = 0; i < 3; ++i) {
        record();
        auto w = store_->write();
        w->put_user(user("u-" + std::to_string(i)));
        w->commit();
        expect_meta_flushed(recorded());
    }
}

TEST_F(StoreDurability, ABatchReturnsWithItsMetaPageFlushed) {
    record();
    store_->batch([&] {
        for (int i = 0; i < 4; ++i) {
            auto w = store_->write();  // nested: their commits flush nothing
            w->put_user(user("b-" + std::to_string(i)));
            w->commit();
        }
        EXPECT_TRUE(recorded().empty()) << "a nested commit wrote or flushed before the batch's commit";
        record();
    });
    expect_meta_flushed(recorded());
    EXPECT_TRUE(store_->read()->user_by_id("b-3"));
}

}  // namespace
