#!/bin/sh
# test_live_capture.sh - the dissector on real MetaRoCE traffic.
#
# Captures UDP on the loopback interface with tshark while a program of the
# project talks MetaRoCE over it (default: build/tests/test_lib_basic, which
# connects two devices on 127.0.0.1 and runs SEND, WRITE, READ, atomics,
# errors and disconnects), then decodes the capture with dissector/mroce.lua
# and checks that
#   - the program succeeded and MetaRoCE packets were captured;
#   - every captured UDP datagram decodes as MetaRoCE (only when the run is
#     isolated in its own network namespace, see below);
#   - no packet has mroce.error, a CRC status other than Good, an expert info
#     of severity Error, the _ws.malformed mark or a Lua error;
#   - every opcode seen has its name from include/mroce/wire.h, and the
#     opcodes in $MROCE_LIVE_REQUIRE_OPS (default: CONNECT_REQ CONNECT_RESP
#     ACK) and at least one data opcode were seen.
# Datagrams that UDP GSO/GRO coalesced on loopback are split by the dissector
# and checked packet by packet.
#
# Without arguments it runs build/tests/test_lib_basic and, when built,
# build/tools/mroce-perf (a write_bw and a read_bw run between a server and a
# client on 127.0.0.1, UDP port 4794: the registered-port path, where
# test_lib_basic's random ports exercise the heuristic).
#
# The programs run in a fresh network namespace (unshare -n) when possible,
# so that no other traffic on lo (parallel tests, other programs) is
# captured; otherwise it captures the host's lo and only checks the datagrams
# that decode as MetaRoCE.
#
# Usage: dissector/test_live_capture.sh [program [args...]]
#   With a program: capture while it runs (instead of the default programs).
#   MROCE_LIVE_LIB_TEST, MROCE_LIVE_PERF  the default programs' paths
#   MROCE_LIVE_DURATION  capture bound in seconds (default 300)
#   MROCE_LIVE_NO_NETNS  set: capture on the host's lo, no namespace
#   MROCE_LIVE_REQUIRE_OPS  opcodes that must appear (space separated)
#   MROCE_SKIP_CODE      exit code when the check cannot run: no tshark, not
#                        root, no program, capture impossible (default 0;
#                        CTest sets 77 with SKIP_RETURN_CODE 77)
# Prints "test_live_capture: N passed, M failed" and exits 1 on failure.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
lua=$here/mroce.lua
wire_h=$root/include/mroce/wire.h
skip=${MROCE_SKIP_CODE:-0}
duration=${MROCE_LIVE_DURATION:-300}
require_ops=${MROCE_LIVE_REQUIRE_OPS:-CONNECT_REQ CONNECT_RESP ACK}

skip_test() {
  echo "test_live_capture: SKIP: $*"
  exit "$skip"
}

# Inside the namespace (re-executed by the outer run): lo must be brought up.
isolated=0
if [ "${1:-}" = "--in-netns" ]; then
  shift
  isolated=1
  ip link set lo up || exit 3
fi

lib_test=${MROCE_LIVE_LIB_TEST:-$root/build/tests/test_lib_basic}
perf=${MROCE_LIVE_PERF:-$root/build/tools/mroce-perf}

command -v tshark >/dev/null 2>&1 || skip_test "tshark not found (apt-get install tshark)"
[ "$(id -u)" -eq 0 ] || skip_test "capturing on lo needs root"
if [ $# -gt 0 ]; then
  [ -x "$1" ] || command -v "$1" >/dev/null 2>&1 || skip_test "$1 not found"
elif [ ! -x "$lib_test" ] && [ ! -x "$perf" ]; then
  skip_test "neither $lib_test nor $perf is built"
fi
if [ ! -r "$lua" ] || [ ! -r "$wire_h" ]; then
  echo "test_live_capture: missing $lua or $wire_h"
  exit 1
fi

if [ "$isolated" -eq 0 ] && [ -z "${MROCE_LIVE_NO_NETNS:-}" ] &&
   command -v unshare >/dev/null 2>&1 &&
   command -v ip >/dev/null 2>&1 && unshare -n true 2>/dev/null; then
  unshare -n sh "$0" --in-netns "$@"
  rc=$?
  # 3: the namespace could not be set up; fall back to the host's lo.
  [ "$rc" -ne 3 ] && exit "$rc"
  echo "test_live_capture: no usable network namespace, capturing on the host's lo"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mroce_live.XXXXXX")
tshark_pid=""
cleanup() {
  if [ -n "$tshark_pid" ] && kill -0 "$tshark_pid" 2>/dev/null; then
    kill -INT "$tshark_pid" 2>/dev/null
    wait "$tshark_pid" 2>/dev/null
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

pcap=$tmp/live.pcapng
# Bounded capture: -a duration stops it even if we are never able to.
tshark -i lo -f udp -w "$pcap" -a duration:"$duration" -q >"$tmp/cap.out" 2>"$tmp/cap.err" &
tshark_pid=$!
started=0
i=0
while [ $i -lt 100 ]; do
  if grep -q "Capturing on" "$tmp/cap.err" 2>/dev/null; then started=1; break; fi
  kill -0 "$tshark_pid" 2>/dev/null || break
  sleep 0.1
  i=$((i + 1))
done
if [ "$started" -ne 1 ]; then
  grep -v '^Running as user' "$tmp/cap.err" | head -5
  skip_test "cannot capture on lo"
fi
sleep 0.3 # let the capture settle before the first packet

pass=0
failn=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { failn=$((failn + 1)); echo "FAIL $*"; }

where="lo"
[ "$isolated" -eq 1 ] && where="lo of its own network namespace"
run() { # run <label> <command...>: runs it, output in $tmp/prog.out
  label=$1; shift
  echo "test_live_capture: running $label (capture on $where)"
  "$@" >"$tmp/prog.out" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ]; then
    ok "$label exited 0"
  else
    bad "$label exited $rc"
    tail -20 "$tmp/prog.out"
  fi
}
# mroce-perf server and client; the server exits after the client's run.
perf_pair() { # perf_pair <test> <client options...>
  t=$1; shift
  "$perf" "$t" >"$tmp/perf_server.out" 2>&1 &
  spid=$!
  sleep 0.5
  timeout 120 "$perf" "$t" 127.0.0.1 "$@"
  crc=$?
  i=0 # the server exits after the run; bound the wait
  while kill -0 "$spid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  kill "$spid" 2>/dev/null
  wait "$spid"
  src=$?
  [ "$crc" -eq 0 ] && [ "$src" -eq 0 ]
}

if [ $# -gt 0 ]; then
  run "$*" "$@"
else
  [ -x "$lib_test" ] && run "test_lib_basic" timeout 300 "$lib_test"
  if [ -x "$perf" ]; then
    run "mroce-perf write_bw (port 4794)" perf_pair write_bw -n 100 -s 65536
    run "mroce-perf read_bw (port 4794)" perf_pair read_bw -n 100 -s 65536
  fi
fi
sleep 0.5 # last packets
kill -INT "$tshark_pid" 2>/dev/null
wait "$tshark_pid" 2>/dev/null
tshark_pid=""

if [ ! -s "$pcap" ]; then
  bad "no capture file"
  echo "test_live_capture: $pass passed, $failn failed"
  exit 1
fi

# The program's ports are arbitrary: let the heuristic run before any
# dissector registered on those ports.
tshark -X lua_script:"$lua" -o udp.try_heuristic_first:TRUE -r "$pcap" \
  -T fields -E separator=/t -E occurrence=a -E aggregator=, \
  -e frame.number -e frame.protocols -e mroce.opcode -e mroce.error \
  -e mroce.crc.status -e _ws.expert.severity -e _ws.malformed -e _ws.lua.error \
  >"$tmp/fields.out" 2>"$tmp/decode.err"
decode_rc=$?
grep -v '^Running as user' "$tmp/decode.err" >"$tmp/decode.err2"
if [ "$decode_rc" -eq 0 ] && [ ! -s "$tmp/decode.err2" ]; then
  ok "tshark decoded the capture"
else
  bad "tshark failed on the capture (rc $decode_rc)"
  head -5 "$tmp/decode.err2"
fi

awk -F '\t' -v ISOLATED="$isolated" -v REQUIRE="$require_ops" -v OUT="$tmp/summary" '
  FILENAME == ARGV[1] {
    if ($0 ~ /^#define MROCE_OPCODES\(/) inop = 1
    if (inop && match($0, /X\([A-Z_]+, *0x[0-9a-fA-F]+/)) {
      s = substr($0, RSTART + 2, RLENGTH - 2); split(s, p, /, */)
      name[tolower(p[2])] = p[1]
    }
    if (inop && $0 !~ /\\$/) inop = 0
    next
  }
  {
    frames++
    if (index($2, "mroce") == 0) { notm++; if (notm <= 5) nm = nm " " $1; next }
    mframes++
    n = split($3, ops, ",")
    for (i = 1; i <= n; i++) {
      pdus++
      op = tolower(ops[i]) # "0x%02x" on both sides
      if (op in name) count[name[op]]++
      else { unknown++; if (unknown <= 5) ul = ul " " $1 ":" ops[i] }
    }
    if ($4 != "") { errs++; if (errs <= 5) el = el " " $1 }
    m = split($5, st, ",")
    for (i = 1; i <= m; i++) if (st[i] != "1") { crcbad++; if (crcbad <= 5) cl = cl " " $1 }
    if (m != n) { crcmiss++; if (crcmiss <= 5) ml = ml " " $1 }
    if (index("," $6 ",", ",8388608,")) { experr++; if (experr <= 5) xl = xl " " $1 }
    if ($7 != "") { malf++; if (malf <= 5) fl = fl " " $1 }
    if ($8 != "") { luaerr++; if (luaerr <= 5) ll = ll " " $1 }
  }
  function detail(n, list) { return n ? sprintf(" (%d, first frames:%s)", n, list) : "" }
  function res(cond, msg) { print (cond ? "ok" : "FAIL") "\t" msg >OUT }
  END {
    res(mframes > 0, sprintf("%d UDP frames captured, %d decode as MetaRoCE, %d MetaRoCE packets", frames, mframes, pdus))
    if (ISOLATED) res(notm == 0, "every UDP frame decodes as MetaRoCE" detail(notm, nm))
    res(errs == 0, "no mroce.error" detail(errs, el))
    res(crcbad == 0, "mroce.crc.status Good on every packet" detail(crcbad, cl))
    res(crcmiss == 0, "a CRC status for every packet" detail(crcmiss, ml))
    res(experr == 0, "no expert info of severity Error" detail(experr, xl))
    res(malf == 0, "no malformed packets (_ws.malformed)" detail(malf, fl))
    res(luaerr == 0, "no Lua errors" detail(luaerr, ll))
    res(unknown == 0, "every opcode has its wire.h name" detail(unknown, ul))
    hist = ""
    for (k in count) hist = hist " " k "=" count[k]
    nreq = split(REQUIRE, req, " "); missing = ""
    for (i = 1; i <= nreq; i++) if (!(req[i] in count)) missing = missing " " req[i]
    res(missing == "", "required opcodes seen (missing:" (missing == "" ? " none" : missing) ")")
    data = count["SEND"] + count["WRITE"] + count["READ_REQ"] + count["READ_RESP"] + \
           count["FETCH_ADD"] + count["CMP_SWAP"] + count["ATOMIC_RESP"]
    res(data > 0, sprintf("data packets seen (%d)", data))
    print "info\topcodes:" hist >OUT
  }
' "$wire_h" "$tmp/fields.out"

while IFS='	' read -r status msg; do
  case $status in
    ok) ok "$msg" ;;
    FAIL) bad "$msg" ;;
    info) echo "     $msg" ;;
  esac
done <"$tmp/summary"

echo "sample:"
tshark -X lua_script:"$lua" -o udp.try_heuristic_first:TRUE -r "$pcap" 2>/dev/null |
  awk '/CONNECT_REQ/ && !c++ || /\[[0-9]+ pkts\]/ && !g++ || / ACK / && !a++ || /READ_REQ/ && !r++' |
  cut -c1-200 | head -6

echo "test_live_capture: $pass passed, $failn failed"
[ "$failn" -eq 0 ]
