// What each backend of src/store tells store.cpp, the one place that chooses among them.
#pragma once

#include <optional>
#include <string>

#include "signin/store.hpp"

namespace signin::backends {

// LMDB: files in a directory, read in this process's memory, one machine's.
inline constexpr StoreTraits kLmdb{false, false, true};
// PostgreSQL: a database over the network that several nginx nodes share.
inline constexpr StoreTraits kPg{true, true, false};

// LMDB's part of prepare_store: `path` made, and given to `owner` with the environment's files.
void prepare_lmdb(const std::string &path, std::optional<unsigned> owner);

}  // namespace signin::backends
