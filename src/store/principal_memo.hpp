// Decoded principals of recently read sessions, for a store that reads its records in place
// (LMDB: a record is a slice of the memory map). Every request still reads the session and its
// user from the store; when both records' stored bytes are exactly those an entry was decoded
// from, the entry's principal is handed back instead of decoding the two records into new strings
// again. Nothing can be stale: a changed byte (a touch, a revocation, a suspension, a role, a
// deleted record) is a miss. Direct-mapped and bounded (`slots`, each holding one session, its
// user and their bytes); not thread-safe: one thread owns one memo (ThreadMemos).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
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

// The memos of one store, one for each thread that reads principals through it: an nginx worker's
// event loop, and any thread of its pool that reads too. Each is made at its thread's first read
// and lives as long as the store (freed with it, whatever became of the thread).
class ThreadMemos {
public:
    // Sessions in use at once beyond this share slots (a miss decodes again); a slot in use holds
    // about 1 KiB.
    static constexpr std::size_t kSlots = 1024;

    explicit ThreadMemos(std::size_t slots = kSlots);
    ThreadMemos(const ThreadMemos &) = delete;
    ThreadMemos &operator=(const ThreadMemos &) = delete;

    // The calling thread's memo. After a thread's first call, a look at one thread-local pair,
    // no lock and no allocation.
    PrincipalMemo &mine() {
        if (t_last.serial == serial_) return *t_last.memo;
        return find_or_make();
    }

private:
    // The memo a thread used last, and which ThreadMemos it belongs to: a serial number, never
    // reused, since a new store may be made where an old one was. Trivially destructible, so a
    // thread that ends has nothing of it to clean up.
    struct Last {
        std::uint64_t serial;  // 0: none yet
        PrincipalMemo *memo;
    };
    static inline thread_local Last t_last{0, nullptr};

    PrincipalMemo &find_or_make();

    const std::uint64_t serial_;
    const std::size_t slots_;
    std::mutex lock_;
    std::vector<std::pair<std::thread::id, std::unique_ptr<PrincipalMemo>>> memos_;
};

}  // namespace signin
