#!/usr/bin/env bash
# Runs one Tsung benchmark: run.sh OUT_DIR HOST PORT PATH VUS DURATION_S [--close] [--ssl]
# Compiles lth_tsung.erl and fills tsung.xml.in into OUT_DIR, runs `tsung -n` (no web UI) with its
# log dir in OUT_DIR, then stops the epmd daemon that Erlang started for Tsung's node (only when
# none was running before: never one that other Erlang programs use).
# --close: every request sends `Connection: close` (keep-alive off: Tsung reconnects for the next
# request when the server closes); --ssl: the server is type="ssl" (TLS, certificate not verified).
set -uo pipefail
OUT=$1 HOST=$2 PORT=$3 URLPATH=$4 VUS=$5 DURATION=$6
shift 6
HEADERS="" TYPE=tcp
for option in "$@"; do
  case "$option" in
    --close) HEADERS='<http_header name="Connection" value="close"/>' ;;
    --ssl) TYPE=ssl ;;
    *) echo "run.sh: unknown option $option" >&2; exit 2 ;;
  esac
done
HERE="$(cd "$(dirname "$0")" && pwd)"
USERS_FILE="$OUT/lth-users.txt"
# All VUS users arrive within ~1% of the duration (Poisson arrivals at VUS*100/DURATION per s).
RATE=$(( VUS * 100 / DURATION + 1 ))
MAXUSERS=$(( VUS > 800 ? VUS + 10 : 800 ))
# Users stop themselves after DURATION; Tsung's <load duration> abort is only a safety net.
MAXDURATION=$(( DURATION + 10 ))
mkdir -p "$OUT/ebin"
erlc -o "$OUT/ebin" "$HERE/lth_tsung.erl" || exit 1
: > "$USERS_FILE"
# A value for tsung.xml: XML-escaped (attribute text), then escaped for sed's replacement, whose delimiter
# is |: a path or URL holding & < > " ' \ or | comes out as itself in the XML Tsung reads.
xml_value() {
  local value=$1
  value=${value//"&"/"&amp;"}; value=${value//"<"/"&lt;"}; value=${value//">"/"&gt;"}
  value=${value//'"'/"&quot;"}; value=${value//"'"/"&apos;"}
  value=${value//"\\"/"\\\\"}; value=${value//"&"/"\\&"}; value=${value//"|"/"\\|"}
  printf '%s' "$value"
}
sed -e "s|@HOST@|$(xml_value "$HOST")|g" -e "s|@PORT@|$(xml_value "$PORT")|g" \
    -e "s|@PATH@|$(xml_value "$URLPATH")|g" -e "s|@VUS@|$VUS|g" \
    -e "s|@DURATION_MS@|$(( DURATION * 1000 ))|g" -e "s|@MAXDURATION@|$MAXDURATION|g" \
    -e "s|@USERS_FILE@|$(xml_value "$USERS_FILE")|g" -e "s|@RATE@|$RATE|g" -e "s|@MAXUSERS@|$MAXUSERS|g" \
    -e "s|@TYPE@|$TYPE|g" -e "s|@HEADERS@|$HEADERS|g" "$HERE/tsung.xml.in" > "$OUT/tsung.xml" || exit 1
epmd_before=no
epmd -names >/dev/null 2>&1 && epmd_before=yes
# HOME in OUT_DIR: tsung creates ~/.tsung even with -l. -w 0: no warm-up delay before the users
# start (Tsung logs a harmless "Negative Warm timeout" then).
HOME="$OUT" tsung -n -w 0 -X "$OUT/ebin" -l "$OUT/log" -f "$OUT/tsung.xml" start
rc=$?
if [ "$epmd_before" = no ]; then
  epmd -kill >/dev/null 2>&1 || true
fi
exit $rc
