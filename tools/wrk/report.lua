-- Prints wrk's own summary and latency percentiles (microseconds) as one JSON line at the end,
-- then the latency histogram as wrk holds it in done(): "us:count" for every non-zero bucket from
-- latency.min up (latency(i), i = 1..#latency: wrk's stats_value_at/stats_popcount). wrk 4.1.0 has
-- already applied its coordinated-omission correction to it (stats_correct); the adapter inverts
-- it, which needs no bucket below latency.min (the raw minimum). Runs once, after the load.
DUMP_BUDGET_S = 5

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
  -- latency(i) scans from the minimum on every call, so the dump's cost grows with buckets x range:
  -- it stops after DUMP_BUDGET_S of CPU ("cut"), having dumped the lowest buckets.
  local buckets, state, started = {}, "complete", os.clock()
  for i = 1, #latency do
    local us, count = latency(i)
    buckets[i] = string.format("%d:%d", us, count)
    if i % 256 == 0 and os.clock() - started > DUMP_BUDGET_S then state = "cut"; break end
  end
  io.write("LTH_HIST " .. state .. " " .. table.concat(buckets, " ") .. "\n")
end
