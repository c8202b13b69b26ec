-- wrk `done` hook: prints the exact counts wrk keeps (its text summary rounds the duration).
-- Only `done` is defined, so wrk keeps its static request and runs no Lua per request.
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'LOADBENCH_WRK {"requests":%d,"duration_us":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"mean":%.2f,"p50":%d,"p90":%d,"p99":%d,"p99.9":%d,"max":%d}}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max))
end
