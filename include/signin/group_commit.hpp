// Group commit for concurrent writers of one process: threads that call run() at the same time
// share one durable commit (one fsync) instead of one each. The first caller becomes the leader,
// runs every queued operation in its own thread inside Store::batch(), commits once, and wakes
// the others; an operation's nested transaction that fails leaves the rest of the batch alone.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "signin/store.hpp"
#include "signin/types.hpp"

namespace signin {

class GroupCommitter {
public:
    explicit GroupCommitter(Store &store) : store_(store) {}

    // Runs op (engine calls that write through the store) and returns once its writes are
    // durable; an error when the batch's commit failed (op's own result is then void).
    Status run(const std::function<void()> &op);

    std::uint64_t batches() const;
    std::uint64_t operations() const;

private:
    struct Entry {
        const std::function<void()> *op;
        bool done = false;
        std::optional<Error> error;
    };
    Store &store_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::vector<Entry *> queue_;
    bool leading_ = false;
    std::uint64_t batches_ = 0, operations_ = 0;
};

}  // namespace signin
