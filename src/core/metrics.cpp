// The Prometheus text format of metrics.hpp.
#include "signin/metrics.hpp"

#include "signin/json.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace signin::metrics {
namespace {

// A number as Prometheus reads it: integers without a fraction, others in the fewest digits that
// read back as the same double (0.0025, not %.17g's 0.0025000000000000001), as Prometheus' own
// clients print them. A bucket's le is a label: the same bound must be the same text everywhere.
std::string number(double v) {
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    if (std::isnan(v)) return "NaN";
    char buf[64];
    if (v == std::floor(v) && std::fabs(v) < 1e15) {
        std::snprintf(buf, sizeof buf, "%.0f", v);
        return buf;
    }
    // The fewest significant digits that round-trip (to_chars' shortest scientific form), laid
    // out as %g does: plain decimals from 1e-4 on (0.0005, where to_chars alone picks 5e-04).
    const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    int digits = 0;
    for (const char *c = buf; c != r.ptr && *c != 'e'; ++c) digits += (*c >= '0' && *c <= '9') ? 1 : 0;
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    return buf;
}

// A label value: backslash, double quote and newline escaped.
std::string escaped(std::string_view v) {
    std::string out;
    for (char c : v) {
        if (c == '\\') out += "\\\\";
        else if (c == '"') out += "\\\"";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
    return out;
}

// The HELP text: backslash and newline escaped.
std::string help_text(std::string_view v) {
    std::string out;
    for (char c : v) {
        if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
    return out;
}

}  // namespace

std::string render(const std::vector<Family> &families) {
    std::string out;
    for (const Family &f : families) {
        const char *type = f.type == Family::Type::Counter ? "counter" : f.type == Family::Type::Gauge ? "gauge" : "histogram";
        out += "# HELP " + f.name + " " + help_text(f.help) + "\n";
        out += "# TYPE " + f.name + " " + type + "\n";
        if (f.type == Family::Type::Histogram) {
            const Histogram &h = f.histogram;
            std::uint64_t cumulative = 0;
            for (std::size_t i = 0; i <= h.bounds.size(); ++i) {
                cumulative += i < h.counts.size() ? h.counts[i] : 0;
                const std::string le = i < h.bounds.size() ? number(h.bounds[i]) : "+Inf";
                out += f.name + "_bucket{le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
            }
            out += f.name + "_sum " + number(h.sum) + "\n";
            out += f.name + "_count " + std::to_string(cumulative) + "\n";
            continue;
        }
        for (std::size_t i = 0; i < f.samples.size(); ++i) {
            const Sample &s = f.samples[i];
            out += f.name;
            if (!f.outer_label.empty()) {
                const std::string outer = i < f.outer_values.size() ? f.outer_values[i] : std::string();
                out += "{" + f.outer_label + "=\"" + escaped(outer) + "\"";
                if (!f.label.empty()) out += "," + f.label + "=\"" + escaped(s.label_value) + "\"";
                out += "}";
            } else if (!f.label.empty()) {
                out += "{" + f.label + "=\"" + escaped(s.label_value) + "\"}";
            }
            out += " " + number(s.value) + "\n";
        }
    }
    return out;
}

std::optional<std::size_t> failure_slot(Code c) {
    for (std::size_t i = 0; i < sizeof kFailureCodes / sizeof kFailureCodes[0]; ++i) {
        if (kFailureCodes[i] == c) return i;
    }
    return std::nullopt;
}

std::size_t bucket_of(const double *bounds, std::size_t n, double v) {
    for (std::size_t i = 0; i < n; ++i) {
        if (v <= bounds[i]) return i;
    }
    return n;
}

std::uint64_t slot_add(std::uint64_t word, std::uint32_t period) {
    const auto held = static_cast<std::uint32_t>(word >> 32);
    const auto count = static_cast<std::uint32_t>(word);
    if (held == period) return count == UINT32_MAX ? word : word + 1;
    if (held > period) return word;
    return (static_cast<std::uint64_t>(period) << 32) | 1u;
}

std::vector<std::uint64_t> slot_series(const std::vector<std::uint64_t> &ring, std::uint32_t now) {
    const std::size_t n = ring.size();
    std::vector<std::uint64_t> out(n, 0);
    for (std::size_t i = 0; i < n && i <= now; ++i) {  // i periods back from now
        const std::uint32_t period = now - static_cast<std::uint32_t>(i);
        const std::uint64_t word = ring[period % n];
        if (static_cast<std::uint32_t>(word >> 32) == period) out[n - 1 - i] = static_cast<std::uint32_t>(word);
    }
    return out;
}

namespace {

void write_samples(json::Writer &w, std::string_view name, const std::vector<Sample> &samples) {
    w.key(name).begin_object();
    for (const Sample &s : samples) w.key(s.label_value).value(static_cast<std::int64_t>(s.value));
    w.end_object();
}

void write_series(json::Writer &w, std::string_view name, const std::vector<std::uint64_t> (&series)[kSeries],
                  Millis at, Millis step) {
    const std::size_t n = series[0].size();
    const Millis start = (at / step - static_cast<Millis>(n > 0 ? n - 1 : 0)) * step;
    w.key(name).begin_object().key("start").time(start).key("step_seconds").value(step / 1000);
    for (std::size_t s = 0; s < kSeries; ++s) {
        w.key(kSeriesNames[s]).begin_array();
        for (std::uint64_t v : series[s]) w.value(static_cast<std::int64_t>(v));
        w.end_array();
    }
    w.end_object();
}

}  // namespace

std::string dashboard_json(const Dashboard &d) {
    json::Writer w;
    w.begin_object().key("metrics").value(d.metrics).key("at").time(d.at);
    w.key("store").begin_object();
    w.key("used_bytes").value(static_cast<std::int64_t>(d.store_used_bytes));
    w.key("map_bytes").value(static_cast<std::int64_t>(d.store_map_bytes));
    w.end_object();
    if (d.metrics) {
        w.key("totals").begin_object();
        write_samples(w, "signins", d.signins);
        write_samples(w, "failures", d.failures);
        write_samples(w, "rate_limited", d.rate_limited);
        w.key("emails").begin_object();
        w.key("sent").value(static_cast<std::int64_t>(d.emails_sent));
        w.key("retried").value(static_cast<std::int64_t>(d.emails_retried));
        w.key("failed").value(static_cast<std::int64_t>(d.emails_failed));
        w.end_object();
        w.end_object();
        write_series(w, "minutes", d.minutes, d.at, 60 * 1000);
        write_series(w, "hours", d.hours, d.at, 3600 * 1000);
    }
    w.end_object();
    return w.take();
}

}  // namespace signin::metrics
