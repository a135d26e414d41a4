#!/usr/bin/env bash
# Waits for the compile `scripts/deps.sh` (make deps) runs in the background for the Go and cargo tools
# (RUNTIME=docker leaves it running when it returns), then says how it ended: its log's last line, "done"
# (exit 0) or "failed" (exit 1, with the log's end). At once when none runs.
# Usage: scripts/wait-compiles.sh
set -euo pipefail
LOCK=${LTH_COMPILE_LOCK:-/var/lock/lth-compile.lock} LOG=${LTH_COMPILE_LOG:-/var/log/lth-deps-compile.log}
if [ -e "$LOCK" ] && ! flock -s -n "$LOCK" true; then
  echo "waiting for the compile scripts/deps.sh runs in the background (log: $LOG)"
  flock -s "$LOCK" true
fi
[ -s "$LOG" ] || { echo "no background compile has run here ($LOG)"; exit 0; }
last=$(tail -1 "$LOG")
case "$last" in
  "deps: compile of "*" done "*) echo "$last"; exit 0 ;;
  "deps: compile of "*" failed "*) tail -20 "$LOG" >&2; exit 1 ;;
  *) echo "the background compile ended without its closing line (killed?): $LOG ends with:" >&2; tail -5 "$LOG" >&2; exit 1 ;;
esac
