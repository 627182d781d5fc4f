-- report.lua: wrk done() hook shared by the bench/api scripts (and used alone for plain GETs):
-- prints one machine-readable line for run.sh. Latencies in microseconds.
function done(summary, latency, requests)
  local e = summary.errors
  local secs = summary.duration / 1e6
  io.write(string.format(
    "RESULT requests=%d seconds=%.3f rps=%.1f p50_us=%d p99_us=%d max_us=%d " ..
    "socket_errors=%d http_errors=%d\n",
    summary.requests, secs, summary.requests / secs, latency:percentile(50),
    latency:percentile(99), latency.max, e.connect + e.read + e.write + e.timeout, e.status))
end
