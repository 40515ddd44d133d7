-- wrk script for bench/webhook.py: each connection POSTs the pod reviews of a file (one JSON
-- document per line) in turn, and done() prints one machine-readable line for the bench to parse.
-- With WRK_GAP_MS set, each connection waits that long after an answer before its next request:
-- an open-ish loop at a fixed rate, with latency measured by wrk itself (C) rather than by hey (Go).
local requests = {}
local position = 0
local gap = tonumber(os.getenv("WRK_GAP_MS") or "")

if gap then
  function delay()
    return gap
  end
end

function init(args)
  local headers = { ["Content-Type"] = "application/json", ["Accept"] = "application/json" }
  for line in io.lines(args[1]) do
    requests[#requests + 1] = wrk.format("POST", "/mutate-pods?timeout=10s", headers, line)
  end
  position = math.random(#requests)
end

function request()
  position = position % #requests + 1
  return requests[position]
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "WRK-RESULT requests=%d duration_us=%d p50_us=%d p99_us=%d max_us=%d errors=%d status_errors=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.max,
    e.connect + e.read + e.write + e.timeout, e.status))
end
