#!/usr/bin/env bash
# Flake hunt (issue 43): the whole suite N times back to back, the last run beside a CPU burner
# when BURN=1, and every test that failed in any run, with the runs it failed in.
#   bash .ci/repeat-suite.sh 5            # five runs back to back
#   BURN=1 bash .ci/repeat-suite.sh 1     # one run beside a busy loop on every CPU (nice 19)
# Logs go to ${OUT:-/tmp/repeat-suite}/run-K.log; run .ci/install.sh test first.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
out=${OUT:-/tmp/repeat-suite}
mkdir -p "$out"
burners=()
stop_burners() {
  for pid in "${burners[@]}"; do kill "$pid" 2>/dev/null; done
  burners=()
}
trap stop_burners EXIT
for k in $(seq 1 "$runs"); do
  if [ "${BURN:-0}" = 1 ] && [ "$k" = "$runs" ]; then
    # one busy loop per CPU, bounded by the suite's own 90-minute CI limit in case this dies
    for _ in $(seq 1 "$(nproc)"); do
      timeout 5400 nice -n 19 sh -c 'while :; do :; done' &
      burners+=($!)
    done
    echo "run $k: beside ${#burners[@]} busy loops (nice 19)"
  fi
  start=$(date +%s)
  CI=true python3 -m pytest tests -p no:cacheprovider >"$out/run-$k.log" 2>&1
  status=$?
  stop_burners
  echo "run $k: exit $status in $(( $(date +%s) - start )) s: $(grep -E '^=+ .*(passed|failed).* in ' "$out/run-$k.log" | tail -1)"
done
echo "tests that failed in any run:"
grep -H '^FAILED' "$out"/run-*.log | sed -E 's/^([^:]*run-([0-9]+)\.log):FAILED ([^ ]+).*/\3 (run \2)/' | sort || true
