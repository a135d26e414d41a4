-- Prints wrk's own summary and latency percentiles (microseconds) as one JSON line at the end,
-- then the latency histogram as wrk holds it in done(): every non-zero bucket, "us:count".
-- wrk 4.1.0 has already applied its coordinated-omission correction to that histogram
-- (stats_correct); the adapter inverts it. latency[i] is the count at i - 1 microseconds.
-- Corrected counts lie below latency.min too, so the dump starts at 0. It runs once, after the load.
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'LTH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"min":%d,"max":%d,"mean":%.3f,"stdev":%.3f,' ..
    '"p50":%d,"p75":%d,"p90":%d,"p95":%d,"p99":%d}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.max, latency.mean, latency.stdev,
    latency:percentile(50), latency:percentile(75), latency:percentile(90),
    latency:percentile(95), latency:percentile(99)))
  local buckets = {}
  for us = 0, latency.max do
    local count = latency[us + 1]
    if count > 0 then buckets[#buckets + 1] = string.format("%d:%d", us, count) end
  end
  io.write("LTH_HIST " .. table.concat(buckets, " ") .. "\n")
end
