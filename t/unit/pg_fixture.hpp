// The PostgreSQL the unit tests may use: SIGNIN_TEST_PG names a server (./build.sh test starts
// one with t/pg-server); each test gets a schema of its own, dropped afterwards, so tests that
// run at once do not see each other's records.
#pragma once

#include <libpq-fe.h>
#include <sodium.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

namespace signin::testing {

// The server's URI, or nullopt when the tests run without PostgreSQL.
inline std::optional<std::string> pg_server() {
    const char *v = std::getenv("SIGNIN_TEST_PG");
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
}

// Runs one statement on the server; throws with the server's message.
inline void pg_exec(const std::string &conninfo, const std::string &sql) {
    PGconn *c = PQconnectdb(conninfo.c_str());
    if (PQstatus(c) != CONNECTION_OK) {
        std::string why = PQerrorMessage(c);
        PQfinish(c);
        throw std::runtime_error("connect: " + why);
    }
    PQsetNoticeProcessor(c, [](void *, const char *) {}, nullptr);  // "drop cascades to ..."
    PGresult *r = PQexec(c, sql.c_str());
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    std::string why = ok ? "" : PQresultErrorMessage(r);
    PQclear(r);
    PQfinish(c);
    if (!ok) throw std::runtime_error(sql + ": " + why);
}

class PgSchema {
public:
    explicit PgSchema(const std::string &server) : server_(server) {
        unsigned char r[8];
        randombytes_buf(r, sizeof r);
        name_ = "t_";
        for (unsigned char b : r) {
            name_.push_back("0123456789abcdef"[b >> 4]);
            name_.push_back("0123456789abcdef"[b & 15]);
        }
        pg_exec(server_, "CREATE SCHEMA " + name_);
        conninfo_ = server_ + (server_.find('?') == std::string::npos ? "?" : "&") + "options=-csearch_path%3D" + name_;
    }
    ~PgSchema() {
        try {
            pg_exec(server_, "DROP SCHEMA " + name_ + " CASCADE");
        } catch (...) {
        }
    }
    PgSchema(const PgSchema &) = delete;
    PgSchema &operator=(const PgSchema &) = delete;
    // A connection string whose tables are this schema's.
    const std::string &conninfo() const { return conninfo_; }

    // Every cell of every table of the schema, as the server sends them in binary (bytea: its
    // bytes): what a test searches for secrets that must not be stored, as it reads data.mdb.
    std::string all_bytes() const {
        std::string out;
        PGconn *c = PQconnectdb(conninfo_.c_str());
        if (PQstatus(c) != CONNECTION_OK) {
            PQfinish(c);
            throw std::runtime_error("connect to the test schema");
        }
        PGresult *tables = PQexec(c, ("SELECT table_name FROM information_schema.tables WHERE table_schema = '" + name_ + "'").c_str());
        for (int t = 0; t < PQntuples(tables); ++t) {
            const std::string sql = "SELECT * FROM " + name_ + "." + PQgetvalue(tables, t, 0);
            PGresult *r = PQexecParams(c, sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 1);
            for (int i = 0; i < PQntuples(r); ++i) {
                for (int j = 0; j < PQnfields(r); ++j) out.append(PQgetvalue(r, i, j), static_cast<std::size_t>(PQgetlength(r, i, j)));
            }
            PQclear(r);
        }
        PQclear(tables);
        PQfinish(c);
        return out;
    }

private:
    std::string server_, name_, conninfo_;
};

}  // namespace signin::testing
