#!/usr/bin/env bash
# Runs one drill benchmark: run.sh OUT_DIR BASE_URL PATH VUS DURATION_S [--close] [--no-check-certificate]
#   [--flow LOGIN_PATH LOGIN_BODY CONTENT_TYPE TOKEN_FIELD GET_PATH TOKEN_HEADER RELOGIN_EVERY]
# drill has no duration option: it runs a fixed number of iterations (one GET each here) with
# `concurrency` of them in flight, and prints its summary (--stats) only when all are done. Its
# per-request lines (non-quiet output) cost it ~18% of its throughput, so it runs --quiet and the
# count is sized to last DURATION_S: quiet calibration runs of doubling size until one lasts
# >= 0.5 s (noted in OUT_DIR/drill-calibration.txt), then count = their rate x DURATION_S.
# The real run's summary goes to OUT_DIR/drill-stats.txt; its start and end (epoch seconds) to
# OUT_DIR/drill-window.txt. `timeout` is only a safety net (3 x DURATION_S + 10 s).
# --close: every request sends `Connection: close` (keep-alive off: drill has no option for it);
# --no-check-certificate: passed to drill (TLS to a self-signed certificate).
# --flow (harness/flows.py): the real run's plan is the login flow, in drill's plan idiom: an iteration is one
# VU's session, a `login` request whose JSON answer is kept by `assign: login`, then GET_PATH `api_get` requests
# (with_items_range: the step repeated) carrying `{{ login.body.TOKEN_FIELD }}` in TOKEN_HEADER. drill's context
# lives for one iteration, so RELOGIN_EVERY 0 (log in once per VU) runs VUS iterations of one login and as many
# GETs as last the duration, and RELOGIN_EVERY N runs iterations of one login and N GETs, VUS at a time. The
# calibration runs GET PATH (the plain file), not the API: a calibration login would count as the VU's. The count
# is sized from their rate (requests of either step alike).
set -uo pipefail
OUT=$1 BASE=$2 URLPATH=$3 VUS=$4 DURATION=$5
shift 5
HEADERS="" CLOSE="" FLOW="" DRILL_OPTIONS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --close) HEADERS=$'\n      headers:\n        Connection: close' CLOSE=$'\n        Connection: close'; shift ;;
    --no-check-certificate) DRILL_OPTIONS+=("$1"); shift ;;
    --flow)
      [ $# -ge 8 ] || { echo "run.sh: --flow takes 7 values" >&2; exit 2; }
      FLOW=1 LOGIN_PATH=$2 LOGIN_BODY=$3 CONTENT_TYPE=$4 TOKEN_FIELD=$5 GET_PATH=$6 TOKEN_HEADER=$7 RELOGIN_EVERY=$8
      shift 8 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
source "$(dirname "$0")/../_lib/common.sh"
DRILL="$(manifest_get binary)"
MAX_ITERATIONS=1000000000

plan_head() {  # plan_head FILE ITERATIONS: what every plan starts with
  cat > "$1" <<YAML
---
concurrency: $VUS
base: '$BASE'
iterations: $2
rampup: 0

plan:
YAML
}
plan() {  # plan FILE ITERATIONS
  plan_head "$1" "$2"
  cat >> "$1" <<YAML
  - name: lth
    request:
      url: '$URLPATH'$HEADERS
YAML
}
quoted() { printf "'%s'" "${1//\'/\'\'}"; }   # a YAML single-quoted scalar
flow_plan() {  # flow_plan FILE ITERATIONS GETS_PER_ITERATION
  plan_head "$1" "$2"
  cat >> "$1" <<YAML
  - name: login
    request:
      url: $(quoted "$LOGIN_PATH")
      method: POST
      body: $(quoted "$LOGIN_BODY")
      headers:
        Content-Type: $(quoted "$CONTENT_TYPE")$CLOSE
    assign: login
  - name: api_get
    request:
      url: $(quoted "$GET_PATH")
      headers:
        $(quoted "$TOKEN_HEADER"): '{{ login.body.$TOKEN_FIELD }}'$CLOSE
    with_items_range:
      start: 1
      stop: $3
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
if [ -z "$FLOW" ]; then
  plan "$OUT/benchmark.yml" "$total"
elif [ "$RELOGIN_EVERY" -gt 0 ]; then   # one login and RELOGIN_EVERY GETs per iteration
  total=$(( total / (RELOGIN_EVERY + 1) > 1 ? total / (RELOGIN_EVERY + 1) : 1 ))
  flow_plan "$OUT/benchmark.yml" "$total" "$RELOGIN_EVERY"
else                                    # one iteration per VU: one login, then its share of the GETs
  gets=$(( total / VUS - 1 > 1 ? total / VUS - 1 : 1 ))
  flow_plan "$OUT/benchmark.yml" "$VUS" "$gets"
  total=$VUS
fi
rm -f "$OUT/calibration.yml"

echo "start $(now)" > "$OUT/drill-window.txt"
NO_COLOR=1 timeout --signal=TERM $((DURATION * 3 + 10)) "$DRILL" --benchmark "$OUT/benchmark.yml" \
  --quiet --stats --nanosec "${DRILL_OPTIONS[@]}" > "$OUT/drill-stats.txt"
rc=$?
echo "end $(now)" >> "$OUT/drill-window.txt"
echo "drill exit status $rc; $total iterations"
exit $rc
