// Secret values (tokens, session secrets, passwords): printing one shows "[redacted]".
#pragma once

#include <ostream>
#include <string>
#include <string_view>

namespace signin {

class Secret {
public:
    Secret() = default;
    explicit Secret(std::string value) : value_(std::move(value)) {}
    Secret(const Secret &) = default;
    Secret &operator=(const Secret &) = default;
    Secret(Secret &&other) noexcept : value_(std::move(other.value_)) { other.wipe(); }
    Secret &operator=(Secret &&other) noexcept {
        if (this != &other) {
            wipe();
            value_ = std::move(other.value_);
            other.wipe();
        }
        return *this;
    }
    ~Secret() { wipe(); }

    // The only way to the value: named so that every use is visible in review.
    std::string_view reveal() const { return value_; }
    bool empty() const { return value_.empty(); }

    void wipe() noexcept;

private:
    std::string value_;
};

inline std::ostream &operator<<(std::ostream &os, const Secret &) { return os << "[redacted]"; }

}  // namespace signin
