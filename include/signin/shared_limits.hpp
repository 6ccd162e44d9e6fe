// Request limits counted in the store (signin_store postgresql://...): the sliding
// windows of signin/throttle.hpp over states the store keeps, so that every nginx node sees every
// request of a client. Each call is a write transaction of its own (retried when it loses a race
// with another node's); a store that fails lets the request go ahead (what it does next fails with
// the store). Implemented in src/core/attempts.cpp with the password limits' counters.
#pragma once

#include <memory>
#include <string_view>

#include "signin/throttle.hpp"
#include "signin/types.hpp"

namespace signin {

class Store;

class SharedLimits {
public:
    explicit SharedLimits(std::shared_ptr<Store> store) : store_(std::move(store)) {}
    // Counts one request of `key` if it fits the rule: 0, or how long to wait (ms) when it does not.
    Millis take(std::string_view key, const throttle::WindowRule &rule, Millis now);
    // Gives back one request counted by take() (work that turned out not to happen).
    void refund(std::string_view key, const throttle::WindowRule &rule, Millis now);

private:
    std::shared_ptr<Store> store_;
};

}  // namespace signin
