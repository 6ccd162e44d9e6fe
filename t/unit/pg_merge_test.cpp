// Which deferred writes of a PostgreSQL transaction are joined into one statement
// (store/pg_merge.hpp): writes of one kind to one table join, unless a write between them
// touches the same row of that table (or any row of it), or the group already writes that row.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "store/pg_merge.hpp"

using signin::pg_merge::plan;
using signin::pg_merge::Write;
using Groups = std::vector<std::vector<std::size_t>>;

namespace {

// kinds and tables of the examples
constexpr int kPutSession = 0, kPutAudit = 1, kDelToken = 2, kPutToken = 3;
constexpr int kSessions = 10, kAudit = 11, kTokens = 12;

Write put_session(std::string_view key) { return {kPutSession, kSessions, {key}, true}; }
Write put_audit(std::string_view key) { return {kPutAudit, kAudit, {key}, true}; }
Write del_token(std::string_view key, std::string_view legacy = {}) { return {kDelToken, kTokens, {key, legacy}, false}; }
Write put_token(std::string_view key) { return {kPutToken, kTokens, {key}, true}; }

}  // namespace

TEST(PgMerge, ABatchOfSignInsBecomesOneStatementAKind) {
    // three sign-ins, each: spend its token, make its session, write two audit entries
    const std::string keys[] = {"a", "b", "c", "a1", "a2", "b1", "b2", "c1", "c2"};
    std::vector<Write> w;
    for (int n = 0; n < 3; ++n) {
        w.push_back(del_token(keys[n]));
        w.push_back(put_session(keys[n]));
        w.push_back(put_audit(keys[3 + 2 * n]));
        w.push_back(put_audit(keys[4 + 2 * n]));
    }
    EXPECT_EQ(plan(w), (Groups{{0, 4, 8}, {1, 5, 9}, {2, 3, 6, 7, 10, 11}}));
}

TEST(PgMerge, NothingJoinsAcrossAWriteOfTheSameRow) {
    // a token written, then spent: the deletion may not move ahead of the write (it would
    // delete nothing, and the write would stay)
    EXPECT_EQ(plan({del_token("a"), put_token("k"), del_token("k")}), (Groups{{0}, {1}, {2}}));
    // nor ahead of a write under the legacy key it deletes too
    EXPECT_EQ(plan({del_token("a"), put_token("old"), del_token("new", "old")}), (Groups{{0}, {1}, {2}}));
    // another row of the table, or another table, in between does not matter
    EXPECT_EQ(plan({del_token("a"), put_token("k"), del_token("b")}), (Groups{{0, 2}, {1}}));
    EXPECT_EQ(plan({del_token("a"), put_session("s"), del_token("b")}), (Groups{{0, 2}, {1}}));
}

TEST(PgMerge, NothingOfATableJoinsAcrossAWriteOfAnyOfItsRows) {
    const Write any_token{-1, kTokens, {}, false};  // e.g. a statement over the address column
    EXPECT_EQ(plan({del_token("a"), any_token, del_token("b")}), (Groups{{0}, {1}, {2}}));
    // a write that names no row moves across nothing of its table either
    EXPECT_EQ(plan({del_token("a"), put_token("k"), Write{kDelToken, kTokens, {}, false}}), (Groups{{0}, {1}, {2}}));
    EXPECT_EQ(plan({put_token("k"), Write{kDelToken, kTokens, {}, false}, put_token("j")}), (Groups{{0}, {1}, {2}}));
}

TEST(PgMerge, AFloodOfTokenRequestsForOneAddressIsAFewStatements) {
    // each request: the oldest of the address's three tokens deleted, a new one written, an
    // audit entry; the deletions of tokens this batch wrote must wait for their writes
    std::vector<std::string> tokens;
    for (int n = 0; n < 33; ++n) tokens.push_back("t" + std::to_string(n));
    std::vector<Write> w;
    for (int n = 3; n < 33; ++n) {
        w.push_back(del_token(tokens[n - 3]));
        w.push_back(put_token(tokens[n]));
        w.push_back(put_audit(tokens[n]));
    }
    const Groups groups = plan(w);
    EXPECT_EQ(groups.size(), 4u);  // the first three deletions, the writes, the audit entries, the other deletions
    EXPECT_EQ(groups[0], (std::vector<std::size_t>{0, 3, 6}));
    EXPECT_EQ(groups[1].size(), 30u);
}

TEST(PgMerge, AWriteOfNoKnownTableStopsEveryGroup) {
    const Write unknown{};  // e.g. BEGIN, or a statement that changes several tables
    EXPECT_EQ(plan({put_session("a"), unknown, put_session("b")}), (Groups{{0}, {1}, {2}}));
    EXPECT_EQ(plan({unknown, put_session("a"), put_session("b")}), (Groups{{0}, {1, 2}}));
}

TEST(PgMerge, AWriteThatJoinsNothingStillStopsGroupsOnItsTable) {
    const Write any_token{-1, kTokens, {}, false};  // kind -1: never joined, but its table is known
    EXPECT_EQ(plan({put_token("a"), any_token, put_token("b"), put_session("s")}),
              (Groups{{0}, {1}, {2}, {3}}));
    EXPECT_EQ(plan({put_token("a"), {-1, kAudit, {}, false}, put_token("b")}), (Groups{{0, 2}, {1}}));
    // one that names its row lets the others of its table pass
    EXPECT_EQ(plan({put_token("a"), {-1, kTokens, {"x"}, false}, put_token("b")}), (Groups{{0, 2}, {1}}));
    EXPECT_EQ(plan({put_token("a"), {-1, kTokens, {"b"}, false}, put_token("b")}), (Groups{{0}, {1}, {2}}));
}

TEST(PgMerge, EveryWriteIsSentOnceAndEachGroupKeepsItsOrder) {
    // a long mixed run: every index once, and increasing inside a group
    std::vector<Write> w;
    std::vector<std::string> keys;
    keys.reserve(200);
    for (int i = 0; i < 200; ++i) keys.push_back(std::to_string(i % 37));
    for (int i = 0; i < 200; ++i) {
        switch (i % 5) {
        case 0: w.push_back(i % 15 == 0 ? Write{kDelToken, kTokens, {}, false} : del_token(keys[i])); break;
        case 1: w.push_back(put_token(keys[i])); break;
        case 2: w.push_back(put_session(keys[i])); break;
        case 3: w.push_back(put_audit(keys[i])); break;
        default: w.push_back(i % 35 == 4 ? Write{} : put_session(keys[i]));
        }
    }
    const Groups groups = plan(w);
    std::vector<int> seen(w.size(), 0);
    std::vector<std::size_t> at(w.size());  // the group each write is sent in
    for (std::size_t n = 0; n < groups.size(); ++n) {
        const auto &g = groups[n];
        for (std::size_t k = 0; k < g.size(); ++k) {
            ++seen[g[k]];
            at[g[k]] = n;
            if (k > 0) {
                EXPECT_LT(g[k - 1], g[k]);
            }
            EXPECT_EQ(w[g[k]].kind, w[g[0]].kind);
        }
    }
    for (int n : seen) EXPECT_EQ(n, 1);
    // two writes on one row of a table (or one of any row, or of no known table) are sent in
    // their order
    auto any = [](const Write &x) { return x.rows[0].empty() && x.rows[1].empty(); };
    auto same_row = [&](const Write &a, const Write &b) {
        if (any(a) || any(b)) return true;
        for (auto r : a.rows)
            for (auto q : b.rows)
                if (!r.empty() && r == q) return true;
        return false;
    };
    for (std::size_t i = 0; i < w.size(); ++i)
        for (std::size_t j = i + 1; j < w.size(); ++j)
            if (w[i].table < 0 || w[j].table < 0 || (w[i].table == w[j].table && same_row(w[i], w[j]))) {
                EXPECT_LE(at[i], at[j]) << i << " " << j;
            }
    EXPECT_LT(groups.size(), w.size() * 3 / 5) << "and the sessions and audit entries between barriers joined";
}
