#!/bin/sh
# soak_liveness.sh - the liveness soak of issue 15: verified mroce-perf runs
# under heavy faults on a host whose cores are kept busy, counting QP
# failures (which must be 0) and the data verified.
#
# write_bw, read_bw, send_bw and atomic_lat run one after the other, each
# for a quarter of the total (default 600 s: 150 s each), client and server
# on 127.0.0.1 with --verify and, on both sides,
#   --fault "tx:drop=0.05,dup=0.05,corrupt=0.05;rx:reorder=0.05"
# (5% drop, duplication, corruption and reordering: a corrupted packet
# fails its CRC and is dropped too), while one spinning process per CPU
# competes with them for the whole soak, so both mroce-perf processes are
# descheduled again and again (the stalls of issue 15).  A QP failure is a
# run in which either process exits non-zero, prints an error completion,
# or counts a peer_timeouts; a verification failure, a mismatch on either
# side.  Per run: exit codes, bytes verified (both sides), mismatches,
# retransmission timeouts, keepalives and peer timeouts of both sides.
#
# Usage: bench/soak_liveness.sh [-d TOTAL_SECONDS] [-o OUTPUT] [BUILD_DIR]
#   BUILD_DIR defaults to build; OUTPUT to bench/results/soak_liveness.txt.
#   The JSON of every run lands next to it, in soak_liveness/.
# Exit status: 0 if there was no QP failure and no mismatch, 1 otherwise.
set -u

here=$(cd "$(dirname "$0")" && pwd)
total=600
out=$here/results/soak_liveness.txt
while getopts d:o: opt; do
  case $opt in
    d) total=$OPTARG ;;
    o) out=$OPTARG ;;
    *) echo "usage: $0 [-d TOTAL_SECONDS] [-o OUTPUT] [BUILD_DIR]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
build=${1:-$here/../build}
bin=$build/tools/mroce-perf
[ -x "$bin" ] || { echo "soak_liveness: no $bin (build first)" >&2; exit 2; }
tests="write_bw read_bw send_bw atomic_lat"
per=$((total / 4))
fault='tx:drop=0.05,dup=0.05,corrupt=0.05;rx:reorder=0.05'
jdir=$(dirname "$out")/soak_liveness
mkdir -p "$jdir"
port=$((31000 + ($$ % 8000) * 2))

hogs=""
pids=""
cleanup() {
  for p in $hogs $pids; do kill -KILL "$p" 2>/dev/null; done
}
trap cleanup EXIT INT TERM
ncpu=$(nproc 2>/dev/null || echo 2)
i=0
while [ $i -lt "$ncpu" ]; do
  sh -c 'while :; do :; done' &
  hogs="$hogs $!"
  i=$((i + 1))
done

{
  echo "soak_liveness: $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n)," \
    "$ncpu CPUs, $ncpu spinning processes, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "each test ${per} s, --verify, --fault \"$fault\" on both sides," \
    "default peer_timeout (5 s)"
} | tee "$out"

fail=0
for t in $tests; do
  port=$((port + 2))
  sj=$jdir/$t.server.json
  cj=$jdir/$t.client.json
  rm -f "$sj" "$cj"
  "$bin" "$t" -p "$port" --fault "$fault" --json "$sj" --timeout 60 \
    >"$jdir/$t.server.txt" 2>&1 &
  srv=$!
  pids="$srv"
  n=0
  while ! grep -aq "Waiting for client" "$jdir/$t.server.txt" 2>/dev/null; do
    n=$((n + 1))
    [ $n -gt 400 ] && break
    sleep 0.05
  done
  "$bin" "$t" 127.0.0.1 -p "$port" -D "$per" --verify --fault "$fault" \
    --json "$cj" --timeout 60 >"$jdir/$t.client.txt" 2>&1 &
  cli=$!
  pids="$srv $cli"
  wait "$cli"
  crc=$?
  wait "$srv"
  src=$?
  pids=""
  python3 - "$t" "$crc" "$src" "$sj" "$cj" "$jdir/$t.server.txt" \
    "$jdir/$t.client.txt" >"$jdir/$t.line" <<'EOF'
import json, sys
t, crc, src, sj, cj, st, ct = sys.argv[1:]
def load(p):
    try:
        with open(p) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
s, c = load(sj), load(cj)
errs = sum(open(p, errors="replace").read().count("error completion")
           for p in (st, ct))
def g(j, *k):
    for x in k:
        if j is None or x not in j:
            return 0
        j = j[x]
    return j
pt = g(s, "counters", "peer_timeouts") + g(c, "counters", "peer_timeouts")
failed = int(crc != "0" or src != "0" or errs > 0 or pt > 0 or
             s is None or c is None)
mism = (g(s, "verify", "mismatches") + g(c, "verify", "mismatches"))
checked = g(s, "verify", "bytes_checked") + g(c, "verify", "bytes_checked")
iters = sum(r.get("iterations", 0) for r in g(c, "results") or [])
print("%-10s exit %s/%s  QP failures %d  verified %.2f GB, %d mismatches  "
      "%d iterations  RTOs %d/%d  keepalives %d/%d  peer timeouts %d"
      % (t, crc, src, failed, checked / 1e9, mism, iters,
         g(c, "counters", "timeouts"), g(s, "counters", "timeouts"),
         g(c, "counters", "tx_keepalives"), g(s, "counters", "tx_keepalives"),
         pt))
sys.exit(1 if failed or mism else 0)
EOF
  [ $? -eq 0 ] || fail=1
  tee -a "$out" <"$jdir/$t.line"
  rm -f "$jdir/$t.line"
done
echo "soak_liveness: $( [ $fail -eq 0 ] && echo PASS || echo FAIL )," \
  "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out"
exit $fail
