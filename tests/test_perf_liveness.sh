#!/bin/sh
# test_perf_liveness.sh - host stalls and dead peers with two mroce-perf
# processes on loopback (REL-32..REL-36, LOSS-21).
#
#  stall: a verified transfer under 5% loss and 5% reordering (--fault on
#         both sides); 1 s in, one side is stopped (SIGSTOP) for 2 s and
#         then continued.  With the default peer_timeout (5 s) both sides
#         must finish the run with exit 0, no QP failure and no mismatch:
#         write_bw with the server (the WRITE target) stopped, its sender
#         retransmitting meanwhile; read_bw with the client stopped, the
#         server's READ responses outstanding.
#  kill:  with --peer-timeout 2 on both sides, one side is killed
#         (SIGKILL) mid-run; the other must fail with RETRY_EXC_ERR ("transport
#         retry counter exceeded") within peer_timeout (plus a scheduling
#         allowance for a loaded machine): the passive side of write_bw (a
#         WRITE target) and of send_bw (a receiver), and the active sender
#         of write_bw.  --timeout 30 keeps mroce-perf's own silence check out
#         of the way.  Each detection time (from the kill to the error
#         message) is printed.
#
# Usage: tests/test_perf_liveness.sh MROCE_PERF_BINARY
set -u

bin=${1:?usage: test_perf_liveness.sh mroce-perf}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mroce_liveness.XXXXXX")
pids=""
cleanup() {
  for p in $pids; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
fail=0
pass=0
# An even port in 30000-49998, and the client's own one above it.
port=$((30000 + ($$ % 10000) * 2))
fault='tx:drop=0.05;rx:reorder=0.05'
pt_ms=2000    # --peer-timeout of the kill cases
allow_ms=3000 # on top of peer_timeout: a loaded host, or a sanitizer build

ms_now() { date +%s%N | cut -b1-13; }

check() { # check NAME CONDITION-RESULT MESSAGE
  if [ "$2" -eq 0 ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "test_perf_liveness: FAIL: $1: $3"
  fi
}

# start_server TEST ARGS...: starts it, waits for its "Waiting" line.
start_server() {
  t=$1
  shift
  port=$((port + 2))
  "$bin" "$t" -p "$port" --timeout 30 "$@" >"$tmp/srv.txt" 2>&1 &
  srv=$!
  pids="$pids $srv"
  i=0
  while ! grep -q "Waiting for client" "$tmp/srv.txt" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 200 ]; then
      echo "test_perf_liveness: server did not start"
      cat "$tmp/srv.txt"
      return 1
    fi
    sleep 0.05
  done
}

# start_client TEST ARGS...: starts it, waits until the run has begun
# (its table header: connected, the run's shape agreed), so that what the
# case does next hits a transfer, not the connection, on a slow host too.
start_client() {
  t=$1
  shift
  "$bin" "$t" 127.0.0.1 -p "$port" --timeout 30 "$@" >"$tmp/cli.txt" 2>&1 &
  cli=$!
  pids="$pids $cli"
  i=0
  while ! grep -aq "#bytes" "$tmp/cli.txt" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 600 ] || ! kill -0 "$cli" 2>/dev/null; then
      echo "test_perf_liveness: the client did not start its run:"
      tail -n 2 "$tmp/cli.txt"
      return 1
    fi
    sleep 0.05
  done
}

stall() { # stall TEST client|server
  start_server "$1" --fault "$fault" || { fail=$((fail + 1)); return; }
  start_client "$1" -D 5 --verify --fault "$fault" || { fail=$((fail + 1)); return; }
  sleep 1
  if [ "$2" = client ]; then victim=$cli; else victim=$srv; fi
  kill -STOP "$victim"
  sleep 2
  kill -CONT "$victim"
  wait "$cli"
  crc=$?
  wait "$srv"
  src=$?
  check "$1 stall ($2 stopped 2 s)" $((crc != 0 || src != 0)) \
    "exit status client $crc, server $src:
$(tail -3 "$tmp/cli.txt")
$(tail -3 "$tmp/srv.txt")"
  v=$(grep -a '^ verify' "$tmp/cli.txt")
  case $v in
    *" 0 mismatches here, 0 at the peer"*) r=0 ;;
    *) r=1 ;;
  esac
  check "$1 stall: verified" $r "client's verify line: '$v'"
  checked=$(cat "$tmp/cli.txt" "$tmp/srv.txt" | tr -d '\000' |
    sed -n 's/^ verify *: \([0-9]*\) bytes checked.*/\1/p' |
    awk '{s += $1} END {printf "%.0f\n", s}')
  check "$1 stall: data checked" $((checked == 0)) "no byte was checked"
  if [ "$crc" -eq 0 ] && [ "$src" -eq 0 ]; then r=completed; else r=FAILED; fi
  echo "stall: $1 with the $2 stopped for 2 s under 5% loss: $r," \
    "$checked bytes verified"
}

kill_one() { # kill_one TEST client|server
  pt=$((pt_ms / 1000))
  start_server "$1" --peer-timeout $pt || { fail=$((fail + 1)); return; }
  if ! start_client "$1" -D 30 --peer-timeout $pt; then
    # A host so loaded that a process stalls for peer_timeout before the
    # run begins: the QPs rightly fail; try once more.
    kill -KILL $srv $cli 2>/dev/null
    wait $srv $cli 2>/dev/null
    start_server "$1" --peer-timeout $pt || { fail=$((fail + 1)); return; }
    start_client "$1" -D 30 --peer-timeout $pt || { fail=$((fail + 1)); return; }
  fi
  sleep 1
  if [ "$2" = client ]; then
    victim=$cli survivor=$srv out=$tmp/srv.txt role="server (passive)"
  else
    victim=$srv survivor=$cli out=$tmp/cli.txt role="client (sender)"
  fi
  t0=$(ms_now)
  kill -KILL "$victim"
  # The error's time is when its message appears (the exit after it can
  # take long under a sanitizer's leak check).
  i=0
  while ! grep -aq "error completion" "$out" && [ $i -lt 1000 ]; do
    sleep 0.01
    i=$((i + 1))
  done
  t1=$(ms_now)
  wait "$survivor"
  rc=$?
  wait "$victim" 2>/dev/null
  took=$((t1 - t0))
  check "$1 kill $2: failed" $((rc == 0)) "the $role exited 0"
  grep -aq "transport retry counter exceeded" "$out"
  check "$1 kill $2: RETRY_EXC_ERR" $? "$(tail -2 "$out")"
  check "$1 kill $2: within peer_timeout" $((took > pt_ms + allow_ms)) \
    "the $role took $took ms (peer_timeout $pt_ms ms)"
  echo "kill: $1, $2 killed: the $role failed after $took ms" \
    "(peer_timeout $pt_ms ms)"
}

stall write_bw server
stall read_bw client
kill_one write_bw client
kill_one send_bw client
kill_one write_bw server

echo "test_perf_liveness: $pass passed, $fail failed"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
