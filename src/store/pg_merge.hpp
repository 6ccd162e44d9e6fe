// Which of a PostgreSQL transaction's deferred writes travel as one statement.
//
// A write batch (a worker's waiting sign-ins in one transaction) defers its writes and sends them
// with the COMMIT: for 30 sign-ins that was some 300 statements, each a row, and the database's
// time per statement, not per row, was most of the batch. Writes of one kind to one table (the
// sessions made, the tokens spent, the audit entries) can be one statement over arrays instead
// (INSERT ... SELECT FROM unnest(...), DELETE ... WHERE key = ANY(...)).
//
// Joining a write to an earlier one of its kind moves it ahead of the writes between them. That
// keeps the transaction's effect when each of those writes commutes with it: writes to different
// tables do (the schema has no triggers and no foreign keys), and so do two writes to one table
// that each touch only rows named by their primary keys, and not the same ones (the only unique
// constraint of every table is its primary key). A write that may touch any row of its table (a
// search entry's array, a statement over other columns) lets nothing of its table move across
// it. And a joined statement may not change one row twice (an INSERT ... ON CONFLICT DO UPDATE
// may not): a second write of a row already in the group starts a group of its own. The planner
// only sees each write's shape, so these rules are tested without a database.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <vector>

namespace signin::pg_merge {

// One deferred write, as the planner sees it.
struct Write {
    int kind = -1;   // the kind of statement it can be joined into; -1: none
    int table = -1;  // the table it changes; -1: any (nothing moves across it)
    // The rows it touches, by primary key, where it touches nothing else (a deletion may name a
    // row and its legacy key); none: any row of its table.
    std::array<std::string_view, 2> rows{};
    bool once = false;  // a group of its kind may hold each row once (ON CONFLICT DO UPDATE)
};

// The groups to send, in order: each lists indices into `writes` in their own order. A write of
// kind -1 is alone in its group; so is a write whose table is -1, and nothing joins a group
// opened before it.
std::vector<std::vector<std::size_t>> plan(const std::vector<Write> &writes);

}  // namespace signin::pg_merge
