#include "signin/group_commit.hpp"

#include <exception>

namespace signin {

Status GroupCommitter::run(const std::function<void()> &op) {
    Entry me{&op, false, std::nullopt};
    std::unique_lock<std::mutex> lock(mutex_);
    queue_.push_back(&me);
    while (!me.done) {
        if (leading_) {
            cv_.wait(lock);
            continue;
        }
        leading_ = true;
        std::vector<Entry *> batch;
        batch.swap(queue_);
        lock.unlock();
        std::optional<Error> failure;
        try {
            store_.batch([&batch] {
                for (Entry *e : batch) {
                    try {
                        (*e->op)();
                    } catch (...) {
                        // the engine catches everything; an escaping exception only loses this op
                    }
                }
            });
        } catch (const StoreError &e) {
            failure = Error{e.code(), e.what()};
        } catch (const std::exception &e) {
            failure = Error{Code::StorageError, e.what()};
        } catch (...) {
            failure = Error{Code::StorageError, "group commit failed"};
        }
        lock.lock();
        for (Entry *e : batch) {
            e->error = failure;
            e->done = true;
        }
        ++batches_;
        operations_ += batch.size();
        leading_ = false;
        cv_.notify_all();
    }
    if (me.error) return *me.error;
    return ok_status();
}

std::uint64_t GroupCommitter::batches() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return batches_;
}

std::uint64_t GroupCommitter::operations() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return operations_;
}

}  // namespace signin
