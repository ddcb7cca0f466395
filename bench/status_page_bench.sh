#!/usr/bin/env bash
# Whether the status page slows training: with a 2-worker lifeboat-demo job
# running under lifeboat-launch --status-port, measures in one run, first
# with no browser, then with the coordinator's and rank 0's pages open in
# headless Chromium (each refreshes every second: /status, /rates,
# /timeline, /checkpoints):
#   - the demo's own steps per second (both ranks, from the launcher's
#     /rates over the window), the training the pages look at;
#   - handler_bench (the per-step hot path and notice to agreement), beside
#     it on the same host (left out with HANDLER_BENCH=0).
# Then the pages are closed and the steps measured again: load on the host
# from elsewhere shows as a difference between the two runs without pages.
# Usage: bench/status_page_bench.sh [BUILD_DIR] [WINDOW_S]
set -euo pipefail
build=${1:-build}
window=${2:-30}
command -v chromium >/dev/null || { echo "status_page_bench: chromium is not installed" >&2; exit 1; }
scratch=$(mktemp -d /tmp/lifeboat-status-page-bench-XXXXXX)
launcher=""
browsers=()
cleanup() {
  for pid in "${browsers[@]}"; do kill "$pid" 2>/dev/null || true; done
  # SIGTERM: a background job of a script ignores SIGINT.
  [[ -n "$launcher" ]] && kill -TERM "$launcher" 2>/dev/null && wait "$launcher" 2>/dev/null
  rm -rf "$scratch"
}
trap cleanup EXIT

LIFEBOAT_PLATFORM=generic "$build/apps/lifeboat-launch" --nproc 2 --status-port 0 -- \
  "$build/apps/lifeboat-demo" --checkpoint-dir "$scratch/ckpt" --steps 100000000 \
  --state-mb 1 --step-ms 10 >"$scratch/job.log" 2>&1 &
launcher=$!
port=""
worker_port=""
for _ in $(seq 600); do
  port=$(sed -n 's/^lifeboat status_endpoint: status endpoint listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$scratch/job.log")
  worker_port=$(sed -n 's/^lifeboat\[rank 0\] status_endpoint: status endpoint listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$scratch/job.log")
  [[ -n "$port" && -n "$worker_port" ]] && break
  sleep 0.1
done
[[ -n "$port" && -n "$worker_port" ]] || { echo "status_page_bench: the job did not start" >&2; cat "$scratch/job.log" >&2; exit 1; }

# Mean steps per second of every rank over the last WINDOW_S samples of /rates.
steps_per_s() {
  curl -s "http://127.0.0.1:$port/rates" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin); n = int(sys.argv[1])
print(" ".join("rank %d %.1f/s" % (l["rank"], sum(l["steps_per_s"][-n:]) / max(1, len(l["steps_per_s"][-n:])))
               for l in r["ranks"]))' "$window"
}

measure() {
  echo "-- $1"
  sleep "$window"
  echo "demo steps per second over ${window} s: $(steps_per_s)"
  if [[ "${HANDLER_BENCH:-1}" != 0 ]]; then
    "$build/bench/handler_bench" --benchmark_min_time=0.2 2>/dev/null |
      grep -E '^(hot path|notice to agreement N)'
  fi
}

measure "no page open"
for target in "$port" "$worker_port"; do
  chromium --headless --disable-gpu --no-sandbox --no-first-run --disable-background-networking \
    --user-data-dir="$scratch/profile-$target" --remote-debugging-port=0 \
    "http://127.0.0.1:$target/" >/dev/null 2>&1 &
  browsers+=($!)
done
sleep 10  # the browsers' start is no part of the page's cost
measure "the coordinator's and rank 0's pages open in headless Chromium"
for pid in "${browsers[@]}"; do kill "$pid"; done
browsers=()
sleep 5
measure "no page open, again"
