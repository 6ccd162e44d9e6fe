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
    // A second label, written before `label` ("" for none), and its value for each sample (in
    // the order of `samples`).
    std::string outer_label;
    std::vector<std::string> outer_values;
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

// ---- the admin page's dashboard: a few counts over time, kept beside the counters

// A count per period (a minute or an hour) in a ring of slots, slot = period % size. Each slot is
// one 64-bit word: the period's number in the high 32 bits, its count in the low 32. A slot last
// written in an older period reads as zero, and one compare-and-swap both starts it again and
// counts: no lock, and no reset that could lose a count of a worker counting at the same time.
inline constexpr std::size_t kMinuteSlots = 60;  // the last hour, per minute
inline constexpr std::size_t kHourSlots = 48;    // the last two days, per hour
// The word after one more count in `period`; the same word when the slot already holds a newer
// period (a worker whose clock is a moment behind counts nothing rather than wipe it).
std::uint64_t slot_add(std::uint64_t word, std::uint32_t period);
// The counts of the `n` periods ending with `now`, oldest first, read from a ring of n words.
std::vector<std::uint64_t> slot_series(const std::vector<std::uint64_t> &ring, std::uint32_t now);

// What the dashboard counts over time.
enum class Series : std::uint8_t { SignIns, Failures, RateLimited, Sent, NotDelivered };
inline constexpr std::size_t kSeries = 5;
inline constexpr std::string_view kSeriesNames[kSeries] = {"signins", "failures", "rate_limited", "emails_sent",
                                                           "emails_failed"};

// GET admin/api/stats: the totals since the counters' zone was made, the series, the store's use.
struct Dashboard {
    bool metrics = false;  // no signin_metrics location: nothing is counted, only the store's use
    Millis at = 0;
    std::vector<Sample> signins, failures, rate_limited;  // the totals by way in, reason, limit
    std::uint64_t emails_sent = 0, emails_retried = 0, emails_failed = 0;
    std::vector<std::uint64_t> minutes[kSeries], hours[kSeries];  // oldest first, ending with `at`'s period
    std::uint64_t store_used_bytes = 0, store_map_bytes = 0;
};
// {"metrics", "at", "store": {...}} and, with metrics, "totals", "minutes" and "hours" (each
// {"start", "step_seconds", SERIES: [counts]}).
std::string dashboard_json(const Dashboard &d);

}  // namespace signin::metrics
