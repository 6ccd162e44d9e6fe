// Store::session_reader: an event loop's session reads over a connection that nothing waits on
// (PostgreSQL), and Sessions' two halves of authenticate_shared that such a loop calls around it.
// The PostgreSQL cases run where SIGNIN_TEST_PG names a server and skip with that reason elsewhere.
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine_fixtures.hpp"
#include "pg_fixture.hpp"
#include "signin/sessions.hpp"
#include "signin/store.hpp"

using namespace signin;
using namespace signin::testing;

namespace {

using Principals = std::vector<std::shared_ptr<const Principal>>;

// Waits (at most 5 s) for the reader's answer, as an event loop would: the socket readable, then
// receive(); flush() first whenever it wants to write.
std::optional<Principals> answer(SessionReader &reader) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < until) {
        pollfd p{reader.socket(), static_cast<short>(POLLIN | (reader.wants_write() ? POLLOUT : 0)), 0};
        if (::poll(&p, 1, 100) < 0) return std::nullopt;
        if ((p.revents & POLLOUT) != 0) reader.flush();
        if (auto got = reader.receive()) return got;
    }
    return std::nullopt;
}

class SessionReaderTest : public EngineTest {
protected:
    void SetUp() override {
        EngineTest::SetUp();
        make(open_policy());
    }
    // The answers through the reader (PostgreSQL), or through principals() where the store has no
    // reader (LMDB): what the glue's event loop makes of `asked`.
    std::vector<Result<std::shared_ptr<const Principal>>> through_reader(const std::vector<Sessions::Asked> &asked) {
        const Sessions::Reading reading = Sessions::reading(asked);
        auto reader = store_->session_reader();
        if (!reader) return id_->sessions().answers(asked, reading, store_->read()->principals(reading.views()));
        reader->connect();
        if (reading.keys.empty()) return id_->sessions().answers(asked, reading, {});
        reader->send(reading.views());
        auto got = answer(*reader);
        EXPECT_TRUE(got) << "no answer within 5 s";
        return id_->sessions().answers(asked, reading, got ? *got : Principals{});
    }
};

// Each credential is answered as authenticate_shared answers it: its own user, nobody for a
// credential of the other kind, a token that is no token, or a session signed out.
TEST_F(SessionReaderTest, AnswersAsAuthenticateShared) {
    const Session a = sign_in("a@example.com"), b = sign_in("b@example.com"), gone = sign_in("c@example.com");
    ASSERT_TRUE(id_->sessions().logout(principal(gone), "c"));
    const Secret junk("not-a-token");
    const std::vector<Sessions::Asked> asked = {{&a.token, SessionKind::Cookie}, {&b.token, SessionKind::Cookie},
                                                {&a.token, SessionKind::Bearer}, {&junk, SessionKind::Cookie},
                                                {&gone.token, SessionKind::Cookie}, {&b.token, SessionKind::Cookie}};
    const auto want = id_->sessions().authenticate_shared(asked);
    const auto got = through_reader(asked);
    ASSERT_EQ(got.size(), asked.size());
    for (std::size_t i = 0; i < asked.size(); ++i) {
        ASSERT_EQ(static_cast<bool>(got[i]), static_cast<bool>(want[i])) << "credential " << i;
        if (got[i]) EXPECT_EQ(got[i].value()->user.id, want[i].value()->user.id) << "credential " << i;
        else EXPECT_EQ(got[i].error().code, Code::Unauthenticated) << "credential " << i;
    }
    EXPECT_EQ(got[0].value()->user.email, "a@example.com");
    EXPECT_EQ(got[1].value()->user.email, "b@example.com");
    const std::vector<Sessions::Asked> none = {{&junk, SessionKind::Cookie}};
    EXPECT_TRUE(Sessions::reading(none).keys.empty()) << "an implausible token is never read";
    ASSERT_EQ(through_reader(none).size(), 1u);
    EXPECT_FALSE(through_reader(none)[0]);
}

TEST_F(SessionReaderTest, OnlyAStoreWhoseReadsWaitHasOne) {
    auto reader = store_->session_reader();
    EXPECT_EQ(static_cast<bool>(reader), store_->traits().reads_may_block);
    if (reader) {
        EXPECT_EQ(reader->socket(), -1) << "not connected before connect()";
    }
}

class PgReader : public SessionReaderTest {
protected:
    void SetUp() override {
        SessionReaderTest::SetUp();
        if (!pg_) GTEST_SKIP() << "SIGNIN_TEST_PG is not set: no PostgreSQL to test against";
        reader_ = store_->session_reader();
        ASSERT_TRUE(reader_);
        reader_->connect();
        ASSERT_GE(reader_->socket(), 0);
    }
    std::string key_of(const Session &s) { return record_key(s.token.reveal()); }
    std::unique_ptr<SessionReader> reader_;
};

// One read at a time, the connection kept for the next; a read while one is out is refused.
TEST_F(PgReader, ReadsOneAfterAnotherOnOneConnection) {
    const Session a = sign_in("a@example.com"), b = sign_in("b@example.com");
    const std::string ka = key_of(a), kb = key_of(b);
    const int socket = reader_->socket();
    for (int round = 0; round < 3; ++round) {
        reader_->send({ka, kb, ka});
        EXPECT_TRUE(reader_->busy());
        EXPECT_THROW(reader_->send({kb}), StoreError) << "a second read while the first is out";
        auto got = answer(*reader_);
        ASSERT_TRUE(got);
        ASSERT_EQ(got->size(), 3u);
        EXPECT_EQ((*got)[0]->user.email, "a@example.com");
        EXPECT_EQ((*got)[1]->user.email, "b@example.com");
        EXPECT_EQ((*got)[2]->user.email, "a@example.com");
        EXPECT_FALSE(reader_->busy());
        EXPECT_EQ(reader_->socket(), socket) << "the same connection";
    }
    reader_->send({std::string(38, 'x')});
    auto none = answer(*reader_);
    ASSERT_TRUE(none);
    ASSERT_EQ(none->size(), 1u);
    EXPECT_FALSE((*none)[0]) << "no such session";
}

// While the database holds the answer back (another transaction locks the sessions' table),
// receive() returns at once without it: the loop's thread never waits for the server.
TEST_F(PgReader, ReceiveNeverWaitsForTheServer) {
    const Session a = sign_in("a@example.com");
    std::promise<void> locked;
    auto holder = std::async(std::launch::async, [&] {
        PGconn *c = PQconnectdb(pg_->conninfo().c_str());
        PQclear(PQexec(c, "BEGIN; LOCK TABLE signin_sessions IN ACCESS EXCLUSIVE MODE"));
        locked.set_value();
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        PQclear(PQexec(c, "COMMIT"));
        PQfinish(c);
    });
    locked.get_future().wait();
    reader_->send({key_of(a)});
    const auto start = std::chrono::steady_clock::now();
    int empty = 0;
    for (int i = 0; i < 5; ++i) {
        if (!reader_->receive()) ++empty;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(800)) << "receive() waited";
    EXPECT_EQ(empty, 5) << "nothing could be answered while the table is locked";
    auto got = answer(*reader_);
    holder.wait();
    ASSERT_TRUE(got) << "answered once the lock went";
    EXPECT_EQ((*got)[0]->user.email, "a@example.com");
}

// The statement's plan, made for the connection's life while the tables are small, stays a lookup
// by key once they are large: after the first reads (PostgreSQL keeps a generic plan from the
// sixth), 100 000 sessions and accounts come, and 100 reads take well under what scanning them
// would (several milliseconds a read).
TEST_F(PgReader, ReadsStayLookupsByKeyAsTheTablesGrow) {
    const Session a = sign_in("a@example.com");
    for (int i = 0; i < 8; ++i) {
        reader_->send({key_of(a)});
        ASSERT_TRUE(answer(*reader_));
    }
    pg_exec(pg_->conninfo(), "INSERT INTO signin_users (id, rec) SELECT int8send(g), ''::bytea FROM generate_series(1, 100000) g");
    pg_exec(pg_->conninfo(), "INSERT INTO signin_sessions (key, id, user_id, browser, expires_at, rec) SELECT int8send(g), "
                             "int8send(g), int8send(g), ''::bytea, 0, ''::bytea FROM generate_series(1, 100000) g");
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 100; ++i) {
        reader_->send({key_of(a)});
        auto got = answer(*reader_);
        ASSERT_TRUE(got && (*got)[0]);
        EXPECT_EQ((*got)[0]->user.email, "a@example.com");
    }
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    EXPECT_LT(took.count(), 400) << "100 reads took " << took.count() << " ms: the tables were scanned";
}

// A connection the server ends is a StoreError and is closed; connect() makes a fresh one.
TEST_F(PgReader, AConnectionTheServerEndsIsAnErrorAndConnectMakesAnother) {
    const Session a = sign_in("a@example.com");
    pg_exec(*pg_server(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE usename = current_user AND pid <> pg_backend_pid() AND datname = current_database()");
    bool failed = false;
    try {
        reader_->send({key_of(a)});
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (std::chrono::steady_clock::now() < until && !reader_->receive())
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } catch (const StoreError &e) {
        failed = true;
        EXPECT_EQ(e.code(), Code::StorageError);
    }
    EXPECT_TRUE(failed) << "the ended connection was not noticed";
    EXPECT_EQ(reader_->socket(), -1);
    EXPECT_FALSE(reader_->busy());
    reader_->connect();
    reader_->send({key_of(a)});
    auto got = answer(*reader_);
    ASSERT_TRUE(got);
    EXPECT_EQ((*got)[0]->user.email, "a@example.com");
    reader_->close();
    EXPECT_EQ(reader_->socket(), -1);
}

// A server that cannot be reached: connect() says so, and the reader stays closed.
TEST_F(PgReader, AnUnreachableServerIsAStoreErrorAtConnect) {
    PgOptions o;
    o.conninfo = "postgresql://127.0.0.1:1/none?connect_timeout=2";
    o.wait_for_server = true;
    auto down = open_pg_store(o);
    auto reader = down->session_reader();
    ASSERT_TRUE(reader);
    EXPECT_THROW(reader->connect(), StoreError);
    EXPECT_EQ(reader->socket(), -1);
}

}  // namespace
