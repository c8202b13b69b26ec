#!/usr/bin/env bash
# Re-measures every report in reports/ that the open issues rest on, one after another, with
# nothing else running: the exact commands behind the committed figures, so anyone can rerun
# them. About an hour on 2 cores. Each driver waits for a quiet machine (load gate) first and
# states in its environment block how quiet it was; run nothing else meanwhile (no builds, no
# tests, no other sessions).
#
#   bash bench/quiet_reports.sh                      # everything below
#   BEFORE_PYTHON=/path/venv/bin/python bash bench/quiet_reports.sh
#       ... and measure an older loadbench build beside this one in the generator comparison
#       (BEFORE_NOTE says what it is, e.g. its commit)
#   ONLY="memory sweep" bash bench/quiet_reports.sh   # a subset: generators memory servers contention h3 modes sweep wrk2 open-loop
#   ONLY=open-loop WRK2=/path/to/wrk2/wrk bash bench/quiet_reports.sh
#       ... issue 45's open-loop figures only (~35 min; not in the default set)
#   CAPACITIES=reports/SWEEP ONLY=capacities WRK2=... bash bench/quiet_reports.sh
#       ... only wrk2 at the capacities of a committed sweep (issue 42's check of them)
#   SWEEPS=2 ONLY="sweep wrk2" WRK2=/path/to/wrk2/wrk bash bench/quiet_reports.sh
#       ... issue 42's figures: two default sweeps (do their capacities agree?), then wrk2 at the
#       rates and connections of the first one's capacities and of the open-loop cells
#   SWEEPS=2 SWEEP_FIRST=3 ONLY="sweep capacities" WRK2=... bash bench/quiet_reports.sh
#       ... the same into <date>-<host>-3 and -4 (today's first two already committed)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
ONLY=${ONLY:-"generators memory servers contention h3 modes sweep wrk2"}
SWEEPS=${SWEEPS:-1}
want() { [[ " $ONLY " == *" $1 "* ]]; }
# Each step starts only once the 1-min load average has settled to 0.25 or less (at most 5 min):
# the step before leaves a trail that the load at start would otherwise report, and a report
# whose environment shows load 1.5 at start reads as measured busy.
settle() {
  local waited=0
  while awk '{exit !($1 > 0.25)}' /proc/loadavg && [ $waited -lt 300 ]; do sleep 5; waited=$((waited + 5)); done
  echo "quiet_reports: $1 starts at load $(cut -d' ' -f1-3 /proc/loadavg) after waiting ${waited} s" >&2
}

if want generators; then
  settle generators
  # Issues 11, 12, 19: every generator pinned to CPU 1 against servers on CPU 0 - keep-alive at
  # c = 1/10/50/200, a new connection (and a full TLS handshake) per request, system calls per
  # response and per new connection / handshake, and the HTTP/2 part (loadbench --h2 vs h2load
  # and oha --http2). 5 s x 3 repeats. Then, after every measured run, the perf profiles of
  # loadbench, loadbench-lean-tcp, loadbench-wolfssl, loadbench-rustls, wrk (and the --before build) per connection and per handshake
  # (on whenever `perf record` works: bash bench/install-peers.sh installs linux-perf).
  # Issue 19's setup numbers alone: add --only-setup.
  before=()
  if [ -n "${BEFORE_PYTHON:-}" ]; then before=(--before "$BEFORE_PYTHON" --before-note "${BEFORE_NOTE:-}"); fi
  "$PY" bench/generator_vs_peers.py -d 5 -r 3 --generators loadbench,wrk,h2load,oha,loadbench-wolfssl,loadbench-rustls,loadbench-lean-tcp \
    --h2-cells 25x10,1x1,10x10,50x10 "${before[@]}"
  # Issue 19's connection-setup figures again with 5 repeats (the setup cells are the noisiest):
  # loadbench (default and lean TCP exchange, OpenSSL and rustls) beside wrk and oha.
  settle generators-setup
  "$PY" bench/generator_vs_peers.py --only-setup -d 5 -r 5 \
    --generators loadbench,wrk,oha,loadbench-rustls,loadbench-lean-tcp --no-profiles --no-syscalls --no-proof \
    --out reports/generator-vs-peers-setup
fi
if want memory; then
  settle memory
  # Issue 16: memory per idle keep-alive connection at 10,000 connections, 3 repeats.
  "$PY" bench/memory_per_connection.py -c 10000 -r 3
fi
if want servers; then
  settle servers
  # Issue 19: the Beast server's CPU per response, per new connection and per full TLS handshake
  # beside nginx's and node's (wrk on CPU 1), and both servers' system calls per new connection (strace).
  "$PY" bench/server_vs_peers.py --setup -d 5
fi
if want contention; then
  settle contention
  # Issue 25: what a quiet window's "outside CPU" was - /proc/stat's busy share against every
  # process's CPU over the same edges - for Beast and the peers, closed and open loop, 5 x 1 s.
  "$PY" bench/contention_accounting.py --repeats 5
fi
if want h3; then
  settle h3
  # Issues 33 and 44: the generator's CPU per response over HTTP/1.1 (TLS), HTTP/2 and HTTP/3
  # against caddy beside oha, h2load and the HTTP/3 clients - and, with BEFORE_PYTHON, the build
  # from before a change in the same cells (a redesign of the sessions must not cost more).
  before=()
  if [ -n "${BEFORE_PYTHON:-}" ]; then before=(--before "$BEFORE_PYTHON"); fi
  "$PY" bench/h3_generator_cost.py --protocols h1,h2,h3 -c 10,50 -d 5 -r 3 "${before[@]}"
fi
if want modes; then
  settle modes
  # Issue 42: does a server's CPU per response differ from one process to the next? Each run a
  # freshly started, primed server at the default sweep's 25 connections, loadbench and wrk in
  # turn: two sweeps 20 minutes apart read python-asyncio at 10.8 and 16.0 us per response.
  "$PY" bench/server_state.py --peers python-asyncio,hypercorn,go,h2o --tools loadbench,wrk \
    --states primed -r 6 -d 2 -c 25 --out reports/server-modes.md
fi
first_sweep=""
if want sweep; then
  # Issue 14: the default sweep (every installed peer, http/https/h2c/h2) into a fresh folder;
  # issue 42: SWEEPS=2 runs it twice (<date>-<host>, <date>-<host>-2) - the same server's
  # capacities in the two must agree within their stated ranges.
  first=${SWEEP_FIRST:-1}
  for n in $(seq "$first" $((first + SWEEPS - 1))); do
    out="reports/$(date -u +%Y-%m-%d)-$(hostname -s)"
    if [ "$n" -gt 1 ]; then out="$out-$n"; fi
    if [ -e "$out" ]; then
      echo "quiet_reports: $out exists; move it away first (a sweep resumes in a folder it finds)" >&2
      exit 1
    fi
    settle "sweep $n"
    "$PY" -m loadbench sweep --no-progress --out "$out"
    if [ -z "$first_sweep" ]; then first_sweep=$out; fi
  done
fi
if want wrk2 || want capacities; then
  # Issue 42: loadbench's open loop beside wrk2 (an open-loop, CO-corrected generator no one here
  # wrote) at the same rate and connections - settled servers, freshly started ones at the rates
  # that went wrong before, and the capacities of the sweep above (or CAPACITIES=DIR).
  if [ -z "${WRK2:-}" ] || [ ! -x "$WRK2" ]; then
    echo "quiet_reports: wrk2 skipped - set WRK2= to its wrk binary (giltene/wrk2, built with make)" >&2
  else
    before=()
    if [ -n "${BEFORE_LOADBENCH:-}" ]; then before=(--before "$BEFORE_LOADBENCH"); fi
    capacities=${CAPACITIES:-$first_sweep}
    if [ -n "$capacities" ]; then
      settle wrk2-capacities
      "$PY" bench/open_loop_vs_wrk2.py --capacities "$capacities" --out reports/capacity-vs-wrk2.md
    fi
    if want wrk2; then
      settle wrk2
      "$PY" bench/open_loop_vs_wrk2.py "${before[@]}"
      settle wrk2-fresh
      "$PY" bench/open_loop_vs_wrk2.py --fresh --cells python-asyncio:24000:50,python-asyncio:29000:50 \
        --out reports/open-loop-vs-wrk2-fresh.md
    fi
  fi
fi
if want open-loop; then
  # Issue 45: the open loop's wake-ups. The same schedule on epoll, on io_uring and with a tick
  # (bench/io_uring/http1_loop.cpp) beside the engine; the engine's send batches beside oha and
  # wrk2 at 10 000 and 50 000 req/s in one run; one thread's on-time ceiling at the capacity
  # search's 100 us send batch.
  settle io-uring-open-loop
  "$PY" bench/io_uring_open_loop.py
  settle generator-open-loop-tick
  "$PY" bench/generator_vs_peers.py --only-open-loop \
    --open-generators loadbench,loadbench-send-batch-100us,loadbench-send-batch-1ms,oha,wrk2 \
    --open-rates 10000,50000 --open-fractions '' -c 50 --out reports/generator-open-loop-tick
  settle open-loop-ceiling-100us
  "$PY" bench/open_loop_ceiling.py --send-batch-us 100 --out reports/open-loop-ceiling-100us
fi
