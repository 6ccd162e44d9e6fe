// What callers learn of a store without naming its backend (store.hpp): its traits, where it is
// chosen and opened (open_store), what is readied before other processes open it (prepare_store)
// and how a log line names it (describe_store).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "pg_fixture.hpp"
#include "signin/store.hpp"

using namespace signin;

namespace {

bool same(const StoreTraits &a, const StoreTraits &b) {
    return a.reads_may_block == b.reads_may_block && a.shared_by_nodes == b.shared_by_nodes &&
           a.in_directory == b.in_directory;
}

class StoreOpenTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/signin-store-open-test-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        root_ = tmpl;
    }
    void TearDown() override { std::filesystem::remove_all(root_); }

    static mode_t mode_of(const std::string &path) {
        struct stat st {};
        EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
        return st.st_mode & 07777;
    }

    std::string root_;
};

TEST(StoreTraits, KnownFromWhereTheStoreIs) {
    for (const char *db : {"postgresql://signin@db.example/signin", "postgres://db.example/signin"}) {
        const StoreTraits t = store_traits(db);
        EXPECT_TRUE(t.reads_may_block) << db;
        EXPECT_TRUE(t.shared_by_nodes) << db;
        EXPECT_FALSE(t.in_directory) << db;
    }
    for (const char *dir : {"/var/lib/nginx/signin", "signin", "postgresql"}) {
        const StoreTraits t = store_traits(dir);
        EXPECT_FALSE(t.reads_may_block) << dir;
        EXPECT_FALSE(t.shared_by_nodes) << dir;
        EXPECT_TRUE(t.in_directory) << dir;
    }
}

TEST(StoreTraits, LogLinesNeverShowADatabasePassword) {
    const std::string d = describe_store("postgresql://signin:pw-must-not-leak@db.example/signin");
    EXPECT_EQ(d.find("pw-must-not-leak"), std::string::npos) << d;
    EXPECT_FALSE(d.empty());
    EXPECT_EQ(describe_store("/var/lib/nginx/signin"), "/var/lib/nginx/signin");
}

// A directory: opened as one, with the size asked for (or the default), and saying so of itself.
TEST_F(StoreOpenTest, OpensADirectoryWithItsSize) {
    StoreOptions o;
    o.where = root_ + "/db";
    o.map_size = 1ull << 22;
    {
        auto store = open_store(o);
        EXPECT_TRUE(same(store->traits(), store_traits(o.where)));
        EXPECT_EQ(store->space().map_bytes, 1ull << 22);
        auto txn = store->write();
        txn->put_counter("k", "v", 1);
        txn->commit();
    }
    EXPECT_TRUE(std::filesystem::exists(o.where + "/data.mdb"));
    o.where = root_ + "/other";
    o.map_size = 0;
    EXPECT_EQ(open_store(o)->space().map_bytes, LmdbOptions{}.map_size) << "0: the default size";
}

// A database's URI: opened as a database (SIGNIN_TEST_PG names a server; skipped without one).
TEST_F(StoreOpenTest, OpensADatabase) {
    auto server = signin::testing::pg_server();
    if (!server) GTEST_SKIP() << "SIGNIN_TEST_PG is not set";
    signin::testing::PgSchema schema(*server);
    StoreOptions o;
    o.where = schema.conninfo();
    auto store = open_store(o);
    EXPECT_TRUE(same(store->traits(), store_traits(o.where)));
    EXPECT_TRUE(store->traits().shared_by_nodes);
    auto txn = store->write();
    txn->put_counter("k", "v", 1);
    txn->commit();
    EXPECT_EQ(store->read()->counter("k"), std::optional<std::string>("v"));
    EXPECT_FALSE(std::filesystem::exists(root_ + "/data.mdb"));
}

// The directory and those above it are made, whatever the umask: the store's for its owner
// alone, the others searchable by everyone (the owner may be another user than the maker).
TEST_F(StoreOpenTest, PrepareMakesTheDirectoryAndThoseAboveIt) {
    const std::string where = root_ + "/a/b/db/";
    const mode_t was = umask(077);
    prepare_store(where, std::nullopt);
    umask(was);
    EXPECT_EQ(mode_of(root_ + "/a"), 0755u);
    EXPECT_EQ(mode_of(root_ + "/a/b"), 0755u);
    EXPECT_EQ(mode_of(root_ + "/a/b/db"), 0700u);
    // again, now that it is there and holds a store: given to its owner (here: who runs the test)
    LmdbOptions o;
    o.path = root_ + "/a/b/db";
    o.map_size = 1ull << 20;
    open_lmdb_store(o).reset();
    EXPECT_NO_THROW(prepare_store(where, getuid()));
    EXPECT_TRUE(std::filesystem::exists(root_ + "/a/b/db/data.mdb"));
}

TEST_F(StoreOpenTest, PrepareSaysWhatFailed) {
    std::ofstream(root_ + "/file") << "not a directory";
    try {
        prepare_store(root_ + "/file/db", std::nullopt);
        FAIL() << "a directory under a file";
    } catch (const StoreError &e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("mkdir \"" + root_ + "/file/db\""), std::string::npos) << what;
        EXPECT_EQ(e.code(), Code::StorageError);
    }
}

// A database needs nothing made: no directory named after its URI appears.
TEST_F(StoreOpenTest, PrepareLeavesADatabaseAlone) {
    const auto cwd = std::filesystem::current_path();
    std::filesystem::current_path(root_);
    EXPECT_NO_THROW(prepare_store("postgresql://db.example/signin", getuid()));
    EXPECT_NO_THROW(prepare_store("postgres://db.example/signin", std::nullopt));
    std::filesystem::current_path(cwd);
    EXPECT_TRUE(std::filesystem::is_empty(root_));
}

}  // namespace
