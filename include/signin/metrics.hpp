// The Prometheus text exposition format (version 0.0.4) of the module's metrics (see
// signin_metrics): families of counters, gauges and histograms, rendered with their HELP and TYPE
// lines. The glue counts (a shared-memory zone summed over workers) and hands a snapshot here.
// Valid C++17: the glue includes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "signin/types.hpp"

namespace signin::metrics {

struct Sample {
    std::string label_value;  // "" for a family without a label
    double value = 0;
};

struct Histogram {
    std::vector<double> bounds;         // the upper bounds, ascending (le="..."), +Inf added
    std::vector<std::uint64_t> counts;  // per bucket, not cumulative: bounds.size() + 1 (the last: above every bound)
    double sum = 0;
};

struct Family {
    std::string name;  // signin_...
    std::string help;
    enum class Type { Counter, Gauge, Histogram } type = Type::Counter;
    std::string label;  // the label's name, "" for none
    std::vector<Sample> samples;
    Histogram histogram;  // Type::Histogram
};

// The text of every family, in order, newline-terminated.
std::string render(const std::vector<Family> &families);

// The label values of the module's metrics, index = the counter's slot in the glue.
inline constexpr std::string_view kMethods[] = {"email", "password", "passkey", "provider", "mfa"};
// The refusals counted by signin_signin_failures_total{reason}: the API's codes of a failed way in.
inline constexpr Code kFailureCodes[] = {Code::InvalidToken,   Code::InvalidCode,       Code::InvalidCredentials,
                                         Code::PasskeyRefused, Code::Suspended,         Code::OriginMismatch,
                                         Code::MfaRequired,    Code::Forbidden,         Code::Unauthenticated,
                                         Code::MfaLocked};
std::optional<std::size_t> failure_slot(Code c);
// The buckets of the histograms.
inline constexpr double kBatchSizeBounds[] = {1, 2, 4, 8, 16, 32, 64, 128};
inline constexpr double kCommitBounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
// The bucket index of v among bounds of size n (n when above every bound).
std::size_t bucket_of(const double *bounds, std::size_t n, double v);

}  // namespace signin::metrics
