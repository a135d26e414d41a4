#!/usr/bin/env bash
# Runs one Tsung benchmark: run.sh OUT_DIR HOST PORT PATH VUS DURATION_S [--close] [--ssl] [LOGIN FLOW]
# Compiles lth_tsung.erl and fills tsung.xml.in into OUT_DIR, runs `tsung -n` (no web UI) with its
# log dir in OUT_DIR, then stops the epmd daemon that Erlang started for Tsung's node (only when
# none was running before: never one that other Erlang programs use).
# --close: every request sends `Connection: close` (keep-alive off: Tsung reconnects for the next
# request when the server closes); --ssl: the server is type="ssl" (TLS, certificate not verified).
# LOGIN FLOW (harness/flows.py; PATH is then the API's GET): --login-path P --login-method M --login-body B
# --login-content-type T --token-field F --token-header H [--relogin-every N] (0 or none: one login per user).
set -uo pipefail
OUT=$1 HOST=$2 PORT=$3 URLPATH=$4 VUS=$5 DURATION=$6
shift 6
HEADERS="" TYPE=tcp
LOGIN_PATH="" LOGIN_METHOD=POST LOGIN_BODY="" LOGIN_CONTENT_TYPE="application/json" TOKEN_FIELD=token
TOKEN_HEADER=Authorization RELOGIN_EVERY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --close) HEADERS='<http_header name="Connection" value="close"/>' ;;
    --ssl) TYPE=ssl ;;
    --login-path|--login-method|--login-body|--login-content-type|--token-field|--token-header|--relogin-every)
      [ $# -ge 2 ] || { echo "run.sh: $1 needs a value" >&2; exit 2; }
      name=${1#--}; name=${name//-/_}; printf -v "${name^^}" '%s' "$2"; shift ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
case "$RELOGIN_EVERY" in ''|*[!0-9]*) echo "run.sh: --relogin-every takes a count" >&2; exit 2 ;; esac
# The session tsung.xml keeps: the plain GET, or the login flow when a login path is given (the other is cut).
if [ -n "$LOGIN_PATH" ]; then
  CUT='/<!-- lth:get -->/,/<!-- \/lth:get -->/d'
  GETS_PER_LOGIN=$(( RELOGIN_EVERY > 0 ? RELOGIN_EVERY : 2000000000 ))
else
  CUT='/<!-- lth:flow -->/,/<!-- \/lth:flow -->/d'
  GETS_PER_LOGIN=0
fi
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
sed -e "$CUT" -e "s|@HOST@|$(xml_value "$HOST")|g" -e "s|@PORT@|$(xml_value "$PORT")|g" \
    -e "s|@PATH@|$(xml_value "$URLPATH")|g" -e "s|@VUS@|$VUS|g" \
    -e "s|@DURATION_MS@|$(( DURATION * 1000 ))|g" -e "s|@MAXDURATION@|$MAXDURATION|g" \
    -e "s|@USERS_FILE@|$(xml_value "$USERS_FILE")|g" -e "s|@RATE@|$RATE|g" -e "s|@MAXUSERS@|$MAXUSERS|g" \
    -e "s|@TYPE@|$TYPE|g" -e "s|@HEADERS@|$HEADERS|g" \
    -e "s|@LOGIN_METHOD@|$(xml_value "$LOGIN_METHOD")|g" -e "s|@LOGIN_PATH@|$(xml_value "$LOGIN_PATH")|g" \
    -e "s|@LOGIN_BODY@|$(xml_value "$LOGIN_BODY")|g" \
    -e "s|@LOGIN_CONTENT_TYPE@|$(xml_value "$LOGIN_CONTENT_TYPE")|g" \
    -e "s|@TOKEN_FIELD@|$(xml_value "$TOKEN_FIELD")|g" -e "s|@TOKEN_HEADER@|$(xml_value "$TOKEN_HEADER")|g" \
    -e "s|@GETS_PER_LOGIN@|$GETS_PER_LOGIN|g" "$HERE/tsung.xml.in" > "$OUT/tsung.xml" || exit 1
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
