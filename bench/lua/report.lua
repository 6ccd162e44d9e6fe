-- Shared by every scenario: print one JSON line with throughput, latency and errors at the end.
-- A script may define bench_extra() returning more JSON members (",\"name\":value").
function done(summary, latency, requests)
  local secs = summary.duration / 1e6
  local non2xx = summary.errors.status
  local extra = bench_extra and bench_extra() or ""
  io.write(string.format(
    '\nBENCH_JSON {"requests":%d,"seconds":%.3f,"rps":%.1f,"p50_ms":%.3f,"p99_ms":%.3f,"non2xx":%d,"socket_errors":%d%s}\n',
    summary.requests, secs, summary.requests / secs,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, non2xx,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, extra))
end
