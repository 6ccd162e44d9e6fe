-- Shared by every scenario: print one JSON line with throughput, latency and errors at the end.
function done(summary, latency, requests)
  local secs = summary.duration / 1e6
  local non2xx = summary.errors.status
  io.write(string.format(
    '\nBENCH_JSON {"requests":%d,"seconds":%.3f,"rps":%.1f,"p50_ms":%.3f,"p99_ms":%.3f,"non2xx":%d,"socket_errors":%d}\n',
    summary.requests, secs, summary.requests / secs,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, non2xx,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
