// Decoded principals of recently read sessions, for a store that reads its records in place
// (LMDB: a record is a slice of the memory map). Every request still reads the session and its
// user from the store; when both records' stored bytes are exactly those an entry was decoded
// from, the entry's principal is handed back instead of decoding the two records into new strings
// again. Nothing can be stale: a changed byte (a touch, a revocation, a suspension, a role, a
// deleted record) is a miss. Direct-mapped and bounded (`slots`, each holding one session, its
// user and their bytes); not thread-safe: one event loop owns one memo. Valid C++17.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "signin/types.hpp"

namespace signin {

class PrincipalMemo {
public:
    // `slots` is rounded up to a power of two (at least 1).
    explicit PrincipalMemo(std::size_t slots);

    // The principal decoded from exactly these bytes of the session stored under `key`, or
    // nullptr. Its user still has to be compared (user_matches) before it is used.
    const std::shared_ptr<const Principal> *find(std::string_view key, std::string_view session_bytes) const;
    // Whether `user_bytes` are the bytes the entry found for `key` decoded its user from.
    bool user_matches(std::string_view key, std::string_view user_bytes) const;
    // Remembers what was decoded from these bytes (replacing whatever shared its slot).
    void put(std::string_view key, std::string_view session_bytes, std::string_view user_bytes,
             std::shared_ptr<const Principal> p);
    std::size_t slots() const { return slots_.size(); }

private:
    struct Slot {
        std::string key, session, user;
        std::shared_ptr<const Principal> principal;
    };
    std::size_t index(std::string_view key) const;
    std::vector<Slot> slots_;
};

}  // namespace signin
