// The Prometheus text format (metrics.hpp): HELP and TYPE lines, labels escaped, histograms
// cumulative with +Inf, _sum and _count.
#include <gtest/gtest.h>

#include <iterator>
#include <string>
#include <vector>

#include "signin/metrics.hpp"

using namespace signin::metrics;

TEST(Metrics, CountersGaugesAndHistogramsInTheTextFormat) {
    std::vector<Family> f(3);
    f[0].name = "signin_signins_total";
    f[0].help = "Sign-ins by way in.";
    f[0].label = "method";
    f[0].samples = {{"email", 3}, {"pass\"key\\\n", 0}};
    f[1].name = "signin_store_used_bytes";
    f[1].help = "Bytes used.";
    f[1].type = Family::Type::Gauge;
    f[1].samples = {{"", 1048576}};
    f[2].name = "signin_commit_seconds";
    f[2].help = "Durable commit time.";
    f[2].type = Family::Type::Histogram;
    f[2].histogram.bounds = {0.001, 0.01};
    f[2].histogram.counts = {2, 1, 4};
    f[2].histogram.sum = 0.25;
    EXPECT_EQ(render(f),
              "# HELP signin_signins_total Sign-ins by way in.\n"
              "# TYPE signin_signins_total counter\n"
              "signin_signins_total{method=\"email\"} 3\n"
              "signin_signins_total{method=\"pass\\\"key\\\\\\n\"} 0\n"
              "# HELP signin_store_used_bytes Bytes used.\n"
              "# TYPE signin_store_used_bytes gauge\n"
              "signin_store_used_bytes 1048576\n"
              "# HELP signin_commit_seconds Durable commit time.\n"
              "# TYPE signin_commit_seconds histogram\n"
              "signin_commit_seconds_bucket{le=\"0.001\"} 2\n"
              "signin_commit_seconds_bucket{le=\"0.01\"} 3\n"
              "signin_commit_seconds_bucket{le=\"+Inf\"} 7\n"
              "signin_commit_seconds_sum 0.25\n"
              "signin_commit_seconds_count 7\n");
}

// A family with two labels (signin_deliveries_total{transport,result}): the outer one first, both
// escaped.
TEST(Metrics, TwoLabels) {
    std::vector<Family> f(1);
    f[0].name = "signin_deliveries_total";
    f[0].help = "Sends.";
    f[0].outer_label = "transport";
    f[0].label = "result";
    f[0].samples = {{"sent", 2}, {"failed", 1}};
    f[0].outer_values = {"smtp", "ht\"tp"};
    EXPECT_EQ(render(f),
              "# HELP signin_deliveries_total Sends.\n"
              "# TYPE signin_deliveries_total counter\n"
              "signin_deliveries_total{transport=\"smtp\",result=\"sent\"} 2\n"
              "signin_deliveries_total{transport=\"ht\\\"tp\",result=\"failed\"} 1\n");
}

// Bucket bounds and sums print in the fewest digits that read back as the same double: 0.0025,
// not 0.0025000000000000001 (%.17g). Each le is checked to parse back to its bound.
TEST(Metrics, NumbersInTheirShortestRoundTripForm) {
    std::vector<Family> f(1);
    f[0].name = "signin_commit_seconds";
    f[0].type = Family::Type::Histogram;
    f[0].histogram.bounds.assign(std::begin(kCommitBounds), std::end(kCommitBounds));
    f[0].histogram.counts.assign(f[0].histogram.bounds.size() + 1, 1);
    f[0].histogram.sum = 0.1 + 0.2;  // 0.30000000000000004: shortest is not always short
    const std::string text = render(f);
    std::vector<std::string> les;
    for (std::size_t at = 0; (at = text.find("le=\"", at)) != std::string::npos;) {
        at += 4;
        les.push_back(text.substr(at, text.find('"', at) - at));
    }
    EXPECT_EQ(les, (std::vector<std::string>{"0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",
                                              "0.25", "0.5", "1", "2.5", "+Inf"}));
    for (std::size_t i = 0; i + 1 < les.size(); ++i) EXPECT_EQ(std::stod(les[i]), kCommitBounds[i]) << les[i];
    EXPECT_NE(text.find("signin_commit_seconds_sum 0.30000000000000004\n"), std::string::npos) << text;

    std::vector<Family> g(1);
    g[0].name = "g";
    g[0].type = Family::Type::Gauge;
    g[0].samples = {{"", 1e-7}, {"", 123456.789}, {"", -0.1}, {"", 1e300}};
    EXPECT_EQ(render(g), "# HELP g \n# TYPE g gauge\ng 1e-07\ng 123456.789\ng -0.1\ng 1e+300\n");
}

TEST(Metrics, BucketsAndFailureSlots) {
    EXPECT_EQ(bucket_of(kBatchSizeBounds, 8, 1), 0u);
    EXPECT_EQ(bucket_of(kBatchSizeBounds, 8, 3), 2u);
    EXPECT_EQ(bucket_of(kBatchSizeBounds, 8, 1000), 8u);
    EXPECT_EQ(failure_slot(signin::Code::InvalidToken), 0u);
    EXPECT_FALSE(failure_slot(signin::Code::Internal));
}

// The dashboard's rings: a slot counts in its period, starts again in a later one, ignores an
// earlier one (a worker a moment behind), and never wraps its count into the period's bits.
TEST(Metrics, SlotsCountPerPeriodAndStartAgainInALaterOne) {
    std::uint64_t w = 0;
    w = slot_add(w, 100);
    w = slot_add(w, 100);
    EXPECT_EQ(w, (std::uint64_t{100} << 32) | 2u);
    EXPECT_EQ(slot_add(w, 99), w) << "an older period counts nothing";
    EXPECT_EQ(slot_add(w, 160), (std::uint64_t{160} << 32) | 1u) << "a later period starts at one";
    const std::uint64_t full = (std::uint64_t{7} << 32) | UINT32_MAX;
    EXPECT_EQ(slot_add(full, 7), full) << "a full count stays full, its period unchanged";
}

TEST(Metrics, SeriesReadTheLastPeriodsOldestFirst) {
    std::vector<std::uint64_t> ring(4, 0);
    auto put = [&ring](std::uint32_t period, std::uint32_t count) {
        ring[period % ring.size()] = (std::uint64_t{period} << 32) | count;
    };
    put(10, 5);   // now
    put(9, 4);    // a period ago
    put(4, 9);    // slot 0: a stale period (8 is the one three back): reads as zero
    put(7, 2);    // slot 3: 7 is three back
    EXPECT_EQ(slot_series(ring, 10), (std::vector<std::uint64_t>{2, 0, 4, 5}));
    EXPECT_EQ(slot_series(ring, 11), (std::vector<std::uint64_t>{0, 4, 5, 0})) << "a period later";
    EXPECT_EQ(slot_series(ring, 100), (std::vector<std::uint64_t>{0, 0, 0, 0})) << "long after";
    EXPECT_EQ(slot_series(std::vector<std::uint64_t>(3, 0), 1), (std::vector<std::uint64_t>{0, 0, 0}))
        << "no period before zero is read";
}

TEST(Metrics, TheDashboardInJson) {
    Dashboard d;
    d.at = 1764000000000 + 90 * 1000;  // 2025-11-24T16:01:30.000Z
    d.store_used_bytes = 4096;
    d.store_map_bytes = 1 << 20;
    EXPECT_EQ(dashboard_json(d),
              "{\"metrics\":false,\"at\":\"2025-11-24T16:01:30.000Z\",\"store\":{\"used_bytes\":4096,\"map_bytes\":1048576}}");
    d.metrics = true;
    d.signins = {{"email", 3}, {"passkey", 1}};
    d.failures = {{"invalid_code", 2}};
    d.rate_limited = {{"sensitive", 1}};
    d.emails_sent = 4;
    d.emails_failed = 1;
    for (std::size_t s = 0; s < kSeries; ++s) {
        d.minutes[s] = {0, static_cast<std::uint64_t>(s)};
        d.hours[s] = {static_cast<std::uint64_t>(s)};
    }
    const std::string j = dashboard_json(d);
    EXPECT_NE(j.find("\"totals\":{\"signins\":{\"email\":3,\"passkey\":1},\"failures\":{\"invalid_code\":2},"
                     "\"rate_limited\":{\"sensitive\":1},\"emails\":{\"sent\":4,\"retried\":0,\"failed\":1}}"),
              std::string::npos)
        << j;
    EXPECT_NE(j.find("\"minutes\":{\"start\":\"2025-11-24T16:00:00.000Z\",\"step_seconds\":60,\"signins\":[0,0],"
                     "\"failures\":[0,1],\"rate_limited\":[0,2],\"emails_sent\":[0,3],\"emails_failed\":[0,4]}"),
              std::string::npos)
        << "the first minute of two, ending with the current one: " << j;
    EXPECT_NE(j.find("\"hours\":{\"start\":\"2025-11-24T16:00:00.000Z\",\"step_seconds\":3600,\"signins\":[0]"),
              std::string::npos)
        << j;
}
