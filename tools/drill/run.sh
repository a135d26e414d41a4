#!/usr/bin/env bash
# Runs one drill benchmark: run.sh OUT_DIR BASE_URL PATH VUS DURATION_S [--close] [--no-check-certificate]
# drill has no duration option: it runs a fixed number of iterations (one GET each here) with
# `concurrency` of them in flight, and prints its summary (--stats) only when all are done. Its
# per-request lines (non-quiet output) cost it ~18% of its throughput, so it runs --quiet and the
# count is sized to last DURATION_S: quiet calibration runs of doubling size until one lasts
# >= 0.5 s (noted in OUT_DIR/drill-calibration.txt), then count = their rate x DURATION_S.
# The real run's summary goes to OUT_DIR/drill-stats.txt; its start and end (epoch seconds) to
# OUT_DIR/drill-window.txt. `timeout` is only a safety net (3 x DURATION_S + 10 s).
# --close: every request sends `Connection: close` (keep-alive off: drill has no option for it);
# --no-check-certificate: passed to drill (TLS to a self-signed certificate).
set -uo pipefail
OUT=$1 BASE=$2 URLPATH=$3 VUS=$4 DURATION=$5
shift 5
HEADERS="" DRILL_OPTIONS=()
for option in "$@"; do
  case "$option" in
    --close) HEADERS=$'\n      headers:\n        Connection: close' ;;
    --no-check-certificate) DRILL_OPTIONS+=("$option") ;;
    *) echo "run.sh: unknown option $option" >&2; exit 2 ;;
  esac
done
source "$(dirname "$0")/../_lib/common.sh"
DRILL="$(manifest_get binary)"
MAX_ITERATIONS=1000000000

plan() {  # plan FILE ITERATIONS
  cat > "$1" <<YAML
---
concurrency: $VUS
base: '$BASE'
iterations: $2
rampup: 0

plan:
  - name: lth
    request:
      url: '$URLPATH'$HEADERS
YAML
}
now() { date +%s.%N; }
seconds_between() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", b - a }'; }

iterations=$((VUS * 8))
: > "$OUT/drill-calibration.txt"
while :; do
  plan "$OUT/calibration.yml" "$iterations"
  t0=$(now)
  NO_COLOR=1 "$DRILL" --benchmark "$OUT/calibration.yml" --quiet "${DRILL_OPTIONS[@]}" > /dev/null || exit $?
  elapsed=$(seconds_between "$t0" "$(now)")
  echo "iterations $iterations seconds $elapsed" >> "$OUT/drill-calibration.txt"
  awk -v e="$elapsed" 'BEGIN { exit !(e >= 0.5) }' && break
  [ "$iterations" -ge "$MAX_ITERATIONS" ] && break
  iterations=$((iterations * 2))
done
total=$(awk -v n="$iterations" -v e="$elapsed" -v d="$DURATION" 'BEGIN { printf "%d", n / e * d }')
plan "$OUT/benchmark.yml" "$total"
rm -f "$OUT/calibration.yml"

echo "start $(now)" > "$OUT/drill-window.txt"
NO_COLOR=1 timeout --signal=TERM $((DURATION * 3 + 10)) "$DRILL" --benchmark "$OUT/benchmark.yml" \
  --quiet --stats --nanosec "${DRILL_OPTIONS[@]}" > "$OUT/drill-stats.txt"
rc=$?
echo "end $(now)" >> "$OUT/drill-window.txt"
echo "drill exit status $rc; $total iterations"
exit $rc
