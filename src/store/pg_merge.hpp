// Which of a PostgreSQL transaction's deferred writes travel as one statement.
//
// A write batch (a worker's waiting sign-ins in one transaction) defers its writes and sends them
// with the COMMIT: for 30 sign-ins that was some 300 statements, each a row, and the database's
// time per statement, not per row, was most of the batch. Writes of one kind to one table (the
// sessions made, the tokens spent, the audit entries) can be one statement over arrays instead
// (INSERT ... SELECT FROM unnest(...), DELETE ... WHERE key = ANY(...)).
//
// Joining a write to an earlier one of its kind moves it ahead of the writes between them. That
// keeps the transaction's effect only when none of those writes touches its table (writes to
// different tables commute: the schema has no triggers and no foreign keys), and when the joined
// statement does not change one row twice (an INSERT ... ON CONFLICT DO UPDATE may not: a second
// write of a key already in the group starts a group of its own). The planner only sees each
// write's shape, so these rules are tested without a database.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace signin::pg_merge {

// One deferred write, as the planner sees it.
struct Write {
    int kind = -1;             // the kind of statement it can be joined into; -1: none
    int table = -1;            // the table it changes; -1: any (nothing moves across it)
    std::string_view key;      // the row it writes where a group may hold each row once; empty: any
};

// The groups to send, in order: each lists indices into `writes` in their own order. A write of
// kind -1 is alone in its group; so is a write whose table is -1, and nothing joins a group
// opened before it.
std::vector<std::vector<std::size_t>> plan(const std::vector<Write> &writes);

}  // namespace signin::pg_merge
