// Test doubles shared by the engine's unit tests: a settable clock and a delivery function that
// records what it is given (and can be told to fail).
#pragma once

#include <atomic>
#include <mutex>
#include <vector>

#include "signin/auth.hpp"

namespace signin::testing {

constexpr Millis kStart = 1795000000000;  // 2026-11-18T11:06:40Z

class FakeClock final : public Clock {
public:
    Millis now() const override { return now_.load(); }
    void set(Millis t) { now_.store(t); }
    void advance(Millis d) { now_.fetch_add(d); }

private:
    std::atomic<Millis> now_{kStart};
};

struct Mailer {
    std::mutex mu;
    std::vector<Delivery> sent;
    bool fail = false;

    DeliveryFn fn() {
        return [this](const Delivery &d) -> Status {
            std::lock_guard<std::mutex> lock(mu);
            sent.push_back(d);
            if (fail) return Error{Code::Internal, "smtp: connection refused"};
            return ok_status();
        };
    }
    std::size_t count() {
        std::lock_guard<std::mutex> lock(mu);
        return sent.size();
    }
    Delivery last() {
        std::lock_guard<std::mutex> lock(mu);
        return sent.back();
    }
};

}  // namespace signin::testing
