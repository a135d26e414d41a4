#!/usr/bin/env bash
# Runs one drill benchmark: run.sh OUT_DIR BASE_URL PATH VUS DURATION_S
# drill has no duration option: it runs a fixed number of iterations (one GET each here) with
# `concurrency` of them in flight. So: a count far beyond what it can reach, ended by `timeout`
# after DURATION_S. drill prints its summary (--stats) only when every iteration is done, so the
# figures come from the line it prints per request (default, non-quiet output; --nanosec for
# ns resolution), which goes to OUT_DIR/drill-requests.log. The start and end of the window are
# noted in OUT_DIR/drill-window.txt (epoch seconds).
set -uo pipefail
OUT=$1 BASE=$2 URLPATH=$3 VUS=$4 DURATION=$5
ITERATIONS=1000000000
cat > "$OUT/benchmark.yml" <<YAML
---
concurrency: $VUS
base: '$BASE'
iterations: $ITERATIONS
rampup: 0

plan:
  - name: lth
    request:
      url: '$URLPATH'
YAML
echo "start $(date +%s.%N)" > "$OUT/drill-window.txt"
NO_COLOR=1 timeout --signal=TERM "$DURATION" /opt/lth/cargo/bin/drill --benchmark "$OUT/benchmark.yml" --nanosec \
  > "$OUT/drill-requests.log"
rc=$?
echo "end $(date +%s.%N)" >> "$OUT/drill-window.txt"
echo "drill exit status $rc (124 = stopped by timeout after ${DURATION}s, as intended)"
[ "$rc" -eq 124 ] && rc=0
exit $rc
