#!/usr/bin/env bash
# compare_loopback.sh - the loopback comparison of libmroce's C API (issue 3):
# mroce-perf against its peers, all measured in one run, interleaved, each
# case repeated REPS times (medians reported), as ratios:
#   throughput  mroce-perf write_bw at 64 KiB and 1 MiB against the raw UDP
#               ceiling (bench_udp_blaster bw: the same GSO/GRO batching, no
#               protocol; also with a 4 MiB credit window, -W, as
#               informative), libfabric's tcp;ofi_rxm and udp;ofi_rxd
#               (bench_fi_bw, fi_write streaming) and iperf3 TCP;
#   latency     write_lat and send_lat at 64 B (half round trip) against a
#               busy-polling raw UDP ping-pong (bench_udp_blaster lat; also
#               with an explicit ACK per message, -a, as informative) and the
#               two providers' fi_send ping-pong (bench_fi_bw -m lat);
#   loss        write_bw 64 KiB with --fault tx:drop=0.01 against loss-free;
#   informative mroce-perf with MROCE_DEFER_ACKS=0 (no ACK deferral,
#               src/lib/ackdefer.c, the default before it): write_lat,
#               send_lat, write_bw 64 KiB and 1 MiB, as the same-run "before".
# Also write_bw 1 MiB with -t 8 (informative): 8 MiB in flight at most and 8
# MiB regions, the shape of the rxm/rxd peers' 1 MiB run (window 8), where
# the default -t 128 cycles through 32 MiB regions that miss the caches.
# It installs what it lacks (apt-get: libfabric-bin libfabric-dev iperf3),
# builds the programs, prints a table with the goals met or missed, and
# writes bench/results/compare_loopback.json (and the table as .txt).  Traffic stays on 127.0.0.1;
# every process it starts is bounded by `timeout` and killed on exit.
# Takes about 4 minutes with the defaults (well under 10).
#
#   bench/compare_loopback.sh [--profile | --profile-only]
#   env: REPS=3 SECS=3 (seconds per throughput/latency run) BUILD=build
#        ONLY=REGEX: run only the cases whose line in CASES below matches
#        (grep -E), e.g. ONLY='_lat|blaster_lat$' for the latency part
#        NO_INSTALL=1 (skip apt-get)  PORT_BASE=18700
#        NICE=-10: run every peer at that nice level (root), the same for
#        all, to shield the closed-loop peers from other jobs' CPU load
# --profile: afterwards, profile mroce-perf write_bw 64 KiB (perf stat:
# CPU and syscalls per side; perf record -g: top symbols per side) into
# bench/results/profile_*.txt.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
REPS=${REPS:-3}
SECS=${SECS:-3}
PORT=${PORT_BASE:-18700}
RESULTS=$ROOT/bench/results
RUN=
[ "${NICE:-0}" != 0 ] && RUN="nice -n $NICE"
PROFILE=0 COMPARE=1
case ${1:-} in
--profile) PROFILE=1 ;;
--profile-only) PROFILE=1 COMPARE=0 ;;
"") ;;
*) echo "usage: $0 [--profile|--profile-only]" >&2; exit 2 ;;
esac
mkdir -p "$RESULTS"
WORK=$(mktemp -d /tmp/compare_loopback.XXXXXX)
RAW=$WORK/raw.tsv
: >"$RAW"

PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do
        kill "$p" 2>/dev/null
    done
    for p in "${PIDS[@]}"; do
        wait "$p" 2>/dev/null
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { printf '%s\n' "$*" >&2; }

# --- what we need ---
need_install=0
command -v iperf3 >/dev/null || need_install=1
command -v fi_info >/dev/null || need_install=1
[ -e /usr/include/rdma/fabric.h ] || need_install=1
command -v python3 >/dev/null || need_install=1
if [ $need_install = 1 ] && [ "${NO_INSTALL:-0}" != 1 ]; then
    log "installing libfabric-bin libfabric-dev iperf3 python3 ..."
    apt-get update -qq >/dev/null 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libfabric-bin \
        libfabric-dev iperf3 python3 >/dev/null 2>&1 || log "apt-get failed"
fi
if [ $PROFILE = 1 ] && ! command -v perf >/dev/null; then
    apt-get install -y -qq linux-perf >/dev/null 2>&1 || true
fi

log "building in $BUILD ..."
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
cmake --build "$BUILD" -j2 --target mroce-perf bench_udp_blaster >/dev/null ||
    exit 1
FI_BW=
if cmake --build "$BUILD" -j2 --target bench_fi_bw >/dev/null 2>&1; then
    FI_BW=$BUILD/bench/bench_fi_bw
else
    log "bench_fi_bw not built (no libfabric-dev): provider columns skipped"
fi
PERF=$BUILD/tools/mroce-perf
BLASTER=$BUILD/bench/bench_udp_blaster
HAVE_IPERF=0
command -v iperf3 >/dev/null && HAVE_IPERF=1

next_port() { PORT=$((PORT + 4)); }
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$RAW"; }

# Background server with a time bound; its pid goes to PIDS and SRV.
start_server() {
    $RUN timeout 60 "$@" >"$WORK/server.out" 2>&1 &
    SRV=$!
    PIDS+=("$SRV")
    sleep 0.3
}
stop_server() {
    # the servers end by themselves after their client; bound the wait
    for _ in $(seq 50); do
        kill -0 "$SRV" 2>/dev/null || break
        sleep 0.1
    done
    kill "$SRV" 2>/dev/null
    wait "$SRV" 2>/dev/null
}

# value of key=... on the RESULT line of a file
result_of() { sed -n 's/.*RESULT.* '"$2"'=\([^ ]*\).*/\1/p' "$1" | tail -1; }

# mroce-perf TEST SIZE NAME REP [client options]: records the client's JSON
mroce_case() {
    local test=$1 size=$2 name=$3 rep=$4
    shift 4
    next_port
    start_server env $MROCE_ENV "$PERF" "$test" -p "$PORT" --timeout 10
    local js=$WORK/$name.$rep.json
    rm -f "$js"
    $RUN timeout 60 env $MROCE_ENV "$PERF" "$test" 127.0.0.1 -p "$PORT" \
        -s "$size" -D "$SECS" \
        --timeout 10 --json "$js" "$@" >"$WORK/client.out" 2>&1
    local rc=$?
    stop_server
    if [ $rc != 0 ] || [ ! -s "$js" ]; then
        log "  $name: mroce-perf failed (rc $rc)"
        tail -3 "$WORK/client.out" >&2
        record "$name" "$rep" "" ""
        return
    fi
    python3 - "$js" "$name" "$rep" >>"$RAW" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1])); r = j["results"][0]
if "bw_avg_gbps" in r:
    v = r["bw_avg_gbps"]
    c = j.get("counters", {})
    extra = "retx=%d timeouts=%d cwnd=%d srtt_ns=%d" % (
        r.get("retx_local", 0), c.get("timeouts", 0), c.get("cwnd", 0),
        c.get("srtt", 0))
else:
    v, extra = r["t_typical_us"], "avg=%.3f" % r["t_avg_us"]
print("%s\t%s\t%s\t%s" % (sys.argv[2], sys.argv[3], v, extra))
EOF
}

blaster_bw() {
    next_port
    $RUN timeout 60 "$BLASTER" bw -D "$SECS" -p "$PORT" >"$WORK/bl.out" 2>&1
    record udp_ceiling "$1" "$(result_of "$WORK/bl.out" gbps | head -1)" \
        "offered=$(sed -n 's/.*role=send gbps=\([^ ]*\).*/\1/p' "$WORK/bl.out")"
}
blaster_bw_window() {
    next_port
    $RUN timeout 60 "$BLASTER" bw -D "$SECS" -p "$PORT" -W 4194304 >"$WORK/bl.out" 2>&1
    record udp_windowed "$1" "$(result_of "$WORK/bl.out" gbps | head -1)" ""
}
stall_case() {
    $RUN timeout 30 "$BLASTER" stalls -D 2 >"$WORK/bl.out" 2>&1
    record host_stalls_1ms_per_s "$1" "$(result_of "$WORK/bl.out" per_s_1ms)" \
        "max_ms=$(result_of "$WORK/bl.out" max_ms)"
}
blaster_lat_ack() {
    next_port
    $RUN timeout 60 "$BLASTER" lat -a -D "$SECS" -p "$PORT" >"$WORK/bl.out" 2>&1
    record udp_pingpong_ack "$1" "$(result_of "$WORK/bl.out" median_us)" \
        "avg=$(result_of "$WORK/bl.out" avg_us)"
}
blaster_lat() {
    next_port
    $RUN timeout 60 "$BLASTER" lat -D "$SECS" -p "$PORT" >"$WORK/bl.out" 2>&1
    record udp_pingpong "$1" "$(result_of "$WORK/bl.out" median_us)" \
        "avg=$(result_of "$WORK/bl.out" avg_us)"
}
# fi_case NAME PROV REP client-args...
fi_case() {
    local name=$1 prov=$2 rep=$3
    shift 3
    [ -n "$FI_BW" ] || return
    next_port
    start_server "$FI_BW" -p "$prov" -P "$PORT" -T 15
    $RUN timeout 60 "$FI_BW" -p "$prov" -P "$PORT" -T 15 -D "$SECS" "$@" \
        127.0.0.1 >"$WORK/fi.out" 2>&1
    stop_server
    if grep -q "mode=lat" "$WORK/fi.out"; then
        record "$name" "$rep" "$(result_of "$WORK/fi.out" median_us)" \
            "avg=$(result_of "$WORK/fi.out" avg_us)"
    else
        record "$name" "$rep" "$(result_of "$WORK/fi.out" gbps)" ""
    fi
}
iperf_case() {
    [ $HAVE_IPERF = 1 ] || return
    $RUN timeout 60 iperf3 -c 127.0.0.1 -B 127.0.0.1 -p "$IPERF_PORT" -t "$SECS" \
        -J >"$WORK/iperf.json" 2>/dev/null
    record iperf3_tcp "$1" "$(python3 -c '
import json,sys
try: print(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"]/1e9)
except Exception: print("")' "$WORK/iperf.json")" ""
}

if [ $HAVE_IPERF = 1 ]; then
    IPERF_PORT=$((PORT - 1))
    $RUN timeout 900 iperf3 -s -B 127.0.0.1 -p "$IPERF_PORT" >/dev/null 2>&1 &
    PIDS+=($!)
    sleep 0.3
fi

# window for fi_write streaming: 8 MiB in flight at most, 64 messages
fi_window() { local w=$((8388608 / $1)); [ $w -gt 64 ] && w=64; [ $w -lt 1 ] && w=1; echo $w; }

CASES=(
    "mroce_case write_bw 65536 mroce_bw_64k"
    "blaster_bw"
    "fi_case rxm_bw_64k tcp;ofi_rxm . -m bw -o write -s 65536 -w $(fi_window 65536)"
    "mroce_case write_lat 64 mroce_write_lat"
    "blaster_lat"
    "blaster_lat_ack"
    "iperf_case"
    "mroce_case write_bw 1048576 mroce_bw_1m"
    "mroce_case write_bw 1048576 mroce_bw_1m_t8 . -t 8"
    "blaster_bw_window"
    "stall_case"
    "fi_case rxd_bw_64k udp;ofi_rxd . -m bw -o write -s 65536 -w $(fi_window 65536)"
    "mroce_case send_lat 64 mroce_send_lat"
    "fi_case rxm_lat tcp;ofi_rxm . -m lat -s 64"
    "mroce_case write_bw 65536 mroce_bw_64k_loss . --fault tx:drop=0.01"
    "fi_case rxm_bw_1m tcp;ofi_rxm . -m bw -o write -s 1048576 -w $(fi_window 1048576)"
    "fi_case rxd_lat udp;ofi_rxd . -m lat -s 64"
    "fi_case rxd_bw_1m udp;ofi_rxd . -m bw -o write -s 1048576 -w $(fi_window 1048576)"
    "mroce_nodefer write_lat 64 mroce_write_lat_nodefer"
    "mroce_nodefer write_bw 65536 mroce_bw_64k_nodefer"
    "mroce_nodefer send_lat 64 mroce_send_lat_nodefer"
    "mroce_nodefer write_bw 1048576 mroce_bw_1m_nodefer"
)
if [ -n "${ONLY:-}" ]; then
    SEL=()
    for c in "${CASES[@]}"; do
        grep -Eq -- "$ONLY" <<<"$c" && SEL+=("$c")
    done
    CASES=("${SEL[@]}")
    [ ${#CASES[@]} -gt 0 ] || { echo "ONLY=$ONLY matches no case" >&2; exit 2; }
fi
MROCE_ENV=

run_case() { # "func args..." with "." standing for the repetition number
    local spec=$1 rep=$2
    local -a a
    IFS=' ' read -r -a a <<<"$spec"
    local f=${a[0]}
    a=("${a[@]:1}")
    case $f in
    mroce_case | mroce_nodefer)
        local extra=("${a[@]:3}")
        [ "${extra[0]:-}" = . ] && extra=("${extra[@]:1}")
        [ "$f" = mroce_nodefer ] && MROCE_ENV=MROCE_DEFER_ACKS=0
        mroce_case "${a[0]}" "${a[1]}" "${a[2]}" "$rep" "${extra[@]}"
        MROCE_ENV= ;;
    fi_case) fi_case "${a[0]}" "${a[1]}" "$rep" "${a[@]:3}" ;;
    *) "$f" "$rep" ;;
    esac
}

compare() {
START=$(date +%s)
LOADS=()
n=${#CASES[@]}
for rep in $(seq 1 "$REPS"); do
    LOADS+=("$(cut -d' ' -f1 /proc/loadavg)")
    log "repetition $rep/$REPS (load $(cut -d' ' -f1-3 /proc/loadavg)) ..."
    # rotate the order each repetition so no case always follows another
    for i in $(seq 0 $((n - 1))); do
        spec=${CASES[$(((i + (rep - 1) * 5) % n))]}
        log "  $spec"
        run_case "$spec" "$rep"
    done
done
LOADS+=("$(cut -d' ' -f1 /proc/loadavg)")
ELAPSED=$(($(date +%s) - START))

python3 - "$RAW" "$RESULTS/compare_loopback.json" "$REPS" "$SECS" \
    "$ELAPSED" "${LOADS[*]}" >"$WORK/table.txt" <<'EOF'
import json, statistics, sys, time, platform
raw, out, reps, secs, elapsed, loads = sys.argv[1:7]
vals, extra = {}, {}
for line in open(raw):
    name, rep, v, x = (line.rstrip("\n").split("\t") + ["", ""])[:4]
    vals.setdefault(name, [])
    extra.setdefault(name, [])
    if v:
        vals[name].append(float(v))
        extra[name].append(x)
med = {k: statistics.median(v) for k, v in vals.items() if v}
def m(k): return med.get(k)
def ratio(a, b):
    return (m(a) / m(b)) if m(a) is not None and m(b) else None
def fmt(x, d=2): return "-" if x is None else ("%.*f" % (d, x))

rows = []
print()
print("MetaRoCE loopback comparison: median of %s runs (all values), "
      "%s s per run, nice %s, load avg %s" % (reps, secs,
      __import__("os").environ.get("NICE", "0"), loads))
print()
print("Throughput, Gbit/s (higher is better); ratio = mroce / peer")
print("%-28s %10s %10s   %s" % ("", "64 KiB", "1 MiB", "runs"))
def bw_row(label, k64, k1m):
    print("%-28s %10s %10s   %s | %s" % (label, fmt(m(k64)), fmt(m(k1m)),
          " ".join(fmt(v) for v in vals.get(k64, [])),
          " ".join(fmt(v) for v in vals.get(k1m, []))))
bw_row("mroce-perf write_bw", "mroce_bw_64k", "mroce_bw_1m")
bw_row("mroce-perf 1 MiB -t 8", None, "mroce_bw_1m_t8")
bw_row("raw UDP ceiling (blaster)", "udp_ceiling", "udp_ceiling")
bw_row("raw UDP, 4 MiB credit window", "udp_windowed", "udp_windowed")
bw_row("libfabric tcp;ofi_rxm", "rxm_bw_64k", "rxm_bw_1m")
bw_row("libfabric udp;ofi_rxd", "rxd_bw_64k", "rxd_bw_1m")
bw_row("iperf3 TCP", "iperf3_tcp", "iperf3_tcp")
bw_row("mroce 64K, 1% tx loss", "mroce_bw_64k_loss", None)
bw_row("mroce MROCE_DEFER_ACKS=0", "mroce_bw_64k_nodefer", "mroce_bw_1m_nodefer")
print()
print("%-28s %10s %10s" % ("mroce / peer", "64 KiB", "1 MiB"))
ratios = {}
for label, peer64, peer1m in [("raw UDP ceiling", "udp_ceiling", "udp_ceiling"),
                              ("raw UDP, credit window", "udp_windowed", "udp_windowed"),
                              ("tcp;ofi_rxm", "rxm_bw_64k", "rxm_bw_1m"),
                              ("udp;ofi_rxd", "rxd_bw_64k", "rxd_bw_1m"),
                              ("iperf3 TCP", "iperf3_tcp", "iperf3_tcp"),
                              ("MROCE_DEFER_ACKS=0", "mroce_bw_64k_nodefer",
                               "mroce_bw_1m_nodefer")]:
    r64, r1m = ratio("mroce_bw_64k", peer64), ratio("mroce_bw_1m", peer1m)
    ratios["bw_vs_" + peer64.replace("_64k", "")] = {"64k": r64, "1m": r1m}
    print("%-28s %9sx %9sx" % (label, fmt(r64), fmt(r1m)))
r8 = {p: ratio("mroce_bw_1m_t8", p) for p in ("udp_ceiling", "rxm_bw_1m")}
ratios["bw_1m_t8"] = r8
print("%-28s %9sx %9sx" % ("1 MiB -t 8 / ceiling, rxm", fmt(r8["udp_ceiling"]),
                           fmt(r8["rxm_bw_1m"])))
rl = ratio("mroce_bw_64k_loss", "mroce_bw_64k")
ratios["loss_vs_lossfree_64k"] = rl
print("%-28s %9sx" % ("1% loss / loss-free", fmt(rl)))
print()
print("Latency at 64 B, half round trip, usec (median; lower is better)")
print("%-28s %10s %10s   %s" % ("", "median", "mean", "runs (median)"))
def avg_of(k):
    xs = [float(x.split("=")[1]) for x in extra.get(k, []) if x.startswith("avg=") and x[4:]]
    return statistics.median(xs) if xs else None
for label, k in [("mroce-perf write_lat", "mroce_write_lat"),
                 ("mroce-perf send_lat", "mroce_send_lat"),
                 ("raw UDP ping-pong", "udp_pingpong"),
                 ("raw UDP + an ACK per msg", "udp_pingpong_ack"),
                 ("libfabric tcp;ofi_rxm", "rxm_lat"),
                 ("libfabric udp;ofi_rxd", "rxd_lat"),
                 ("write_lat DEFER_ACKS=0", "mroce_write_lat_nodefer"),
                 ("send_lat DEFER_ACKS=0", "mroce_send_lat_nodefer")]:
    print("%-28s %10s %10s   %s" % (label, fmt(m(k)), fmt(avg_of(k)),
          " ".join(fmt(v) for v in vals.get(k, []))))
print()
print("%-28s %10s %10s" % ("mroce / peer (median)", "write_lat", "send_lat"))
for label, peer in [("raw UDP ping-pong", "udp_pingpong"),
                    ("raw UDP + an ACK per msg", "udp_pingpong_ack"),
                    ("tcp;ofi_rxm", "rxm_lat"), ("udp;ofi_rxd", "rxd_lat")]:
    rw, rs = ratio("mroce_write_lat", peer), ratio("mroce_send_lat", peer)
    ratios["lat_vs_" + peer] = {"write_lat": rw, "send_lat": rs}
    print("%-28s %9sx %9sx" % (label, fmt(rw), fmt(rs)))
rw = ratio("mroce_write_lat", "mroce_write_lat_nodefer")
rs = ratio("mroce_send_lat", "mroce_send_lat_nodefer")
ratios["lat_vs_nodefer"] = {"write_lat": rw, "send_lat": rs}
print("%-28s %9sx %9sx" % ("MROCE_DEFER_ACKS=0", fmt(rw), fmt(rs)))

print()
print("Host: a busy-polling process (two at once) loses its CPU for > 1 ms "
      "%s times a second (median; runs %s)" % (fmt(m("host_stalls_1ms_per_s"), 1),
      " ".join(fmt(v, 1) for v in vals.get("host_stalls_1ms_per_s", []))))

def goal(desc, ok):
    return {"goal": desc, "met": ok}
def ge(x, t): return None if x is None else x >= t
def le(x, t): return None if x is None else x <= t
def lt(x, t): return None if x is None else x < t
goals = [
    goal("write_bw 64 KiB >= 80% of the raw UDP ceiling",
         ge(ratio("mroce_bw_64k", "udp_ceiling"), 0.8)),
    goal("write_bw 1 MiB >= 80% of the raw UDP ceiling",
         ge(ratio("mroce_bw_1m", "udp_ceiling"), 0.8)),
    goal("write_bw 64 KiB >= 10x udp;ofi_rxd",
         ge(ratio("mroce_bw_64k", "rxd_bw_64k"), 10)),
    goal("write_bw 1 MiB >= 10x udp;ofi_rxd",
         ge(ratio("mroce_bw_1m", "rxd_bw_1m"), 10)),
    goal("write_bw 64 KiB ahead of tcp;ofi_rxm",
         ge(ratio("mroce_bw_64k", "rxm_bw_64k"), 1.0)),
    goal("write_bw 1 MiB ahead of tcp;ofi_rxm",
         ge(ratio("mroce_bw_1m", "rxm_bw_1m"), 1.0)),
    goal("write_bw 64 KiB ahead of iperf3",
         ge(ratio("mroce_bw_64k", "iperf3_tcp"), 1.0)),
    goal("write_bw 1 MiB ahead of iperf3",
         ge(ratio("mroce_bw_1m", "iperf3_tcp"), 1.0)),
    goal("write_lat 64 B within 1.3x of raw UDP ping-pong",
         le(ratio("mroce_write_lat", "udp_pingpong"), 1.3)),
    goal("send_lat 64 B within 1.3x of raw UDP ping-pong",
         le(ratio("mroce_send_lat", "udp_pingpong"), 1.3)),
    goal("write_lat 64 B below tcp;ofi_rxm and udp;ofi_rxd",
         None if None in (ratio("mroce_write_lat", "rxm_lat"), ratio("mroce_write_lat", "rxd_lat"))
         else max(ratio("mroce_write_lat", "rxm_lat"), ratio("mroce_write_lat", "rxd_lat")) < 1),
    goal("send_lat 64 B below tcp;ofi_rxm and udp;ofi_rxd",
         None if None in (ratio("mroce_send_lat", "rxm_lat"), ratio("mroce_send_lat", "rxd_lat"))
         else max(ratio("mroce_send_lat", "rxm_lat"), ratio("mroce_send_lat", "rxd_lat")) < 1),
    goal("1% loss: write_bw 64 KiB >= 90% of loss-free", ge(rl, 0.9)),
]
print()
print("Goals")
for g in goals:
    s = {True: "met", False: "MISSED", None: "not measured"}[g["met"]]
    print("  %-52s %s" % (g["goal"], s))
print()
print("(%s s in all)" % elapsed)
json.dump({
    "tool": "bench/compare_loopback.sh",
    "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    "host": {"kernel": platform.release(), "cpus": __import__("os").cpu_count()},
    "reps": int(reps), "secs_per_run": float(secs), "elapsed_s": int(elapsed),
    "nice": int(__import__("os").environ.get("NICE", "0") or 0),
    "load_avg_per_rep": [float(x) for x in loads.split()],
    "units": {"bw": "Gbit/s", "lat": "usec, half round trip, median"},
    "runs": vals, "run_notes": extra, "medians": med, "ratios": ratios,
    "goals": goals,
}, open(out, "w"), indent=1)
print("wrote", out)
EOF
cat "$WORK/table.txt"
cp "$WORK/table.txt" "$RESULTS/compare_loopback.txt"
}
[ $COMPARE = 1 ] && compare

# --- profile: where mroce-perf write_bw 64 KiB spends its time ---
if [ $PROFILE = 1 ] && command -v perf >/dev/null; then
    log "profiling mroce-perf write_bw 64 KiB ..."
    EV=task-clock,context-switches,syscalls:sys_enter_sendmsg,syscalls:sys_enter_sendmmsg,syscalls:sys_enter_recvmmsg,syscalls:sys_enter_recvmsg,syscalls:sys_enter_ppoll,syscalls:sys_enter_epoll_wait
    next_port
    start_server perf stat -x, -e "$EV" -o "$RESULTS/profile_stat_server.txt" \
        -- "$PERF" write_bw -p "$PORT" --timeout 10
    timeout 60 perf stat -x, -e "$EV" -o "$RESULTS/profile_stat_client.txt" \
        -- "$PERF" write_bw 127.0.0.1 -p "$PORT" -s 65536 -D 5 --timeout 10 \
        --json "$RESULTS/profile_client.json" >"$WORK/client.out" 2>&1
    stop_server
    next_port
    start_server perf record -q -g -o "$WORK/server.data" -- \
        "$PERF" write_bw -p "$PORT" --timeout 10
    timeout 60 perf record -q -g -o "$WORK/client.data" -- \
        "$PERF" write_bw 127.0.0.1 -p "$PORT" -s 65536 -D 5 --timeout 10 \
        >"$WORK/client.out" 2>&1
    stop_server
    # the CPU cost alone, without cross-process scheduling: one thread
    # drives both devices (bench_lib_write -1)
    if cmake --build "$BUILD" -j2 --target bench_lib_write >/dev/null 2>&1; then
        timeout 60 perf record -q -g -o "$WORK/one.data" -- \
            "$BUILD/bench/bench_lib_write" -1 -t 4 \
            >"$RESULTS/profile_one_process.txt" 2>&1
    fi
    for side in client server one; do
        [ -s "$WORK/$side.data" ] || continue
        perf report -i "$WORK/$side.data" --no-children --sort symbol -g none \
            --stdio 2>/dev/null | grep -v '^$' | grep -v '^#' |
            grep '%' | head -40 >"$RESULTS/profile_top_$side.txt"
        perf report -i "$WORK/$side.data" --no-children --sort dso \
            --stdio 2>/dev/null | grep '%' | head -8 \
            >>"$RESULTS/profile_top_$side.txt"
    done
    python3 - "$RESULTS" <<'EOF' | tee "$RESULTS/profile_summary.txt"
import json, sys, os
d = sys.argv[1]
c = json.load(open(os.path.join(d, "profile_client.json")))
cnt, res = c["counters"], c["results"][0]

print("\nProfile: mroce-perf write_bw 64 KiB, %.2f Gbit/s; client sent %d packets, got %d ACKs"
      % (res["bw_avg_gbps"], cnt["tx_pkts"], cnt["rx_acks"]))
for side in ("client", "server"):
    if not os.path.exists(os.path.join(d, "profile_stat_%s.txt" % side)):
        continue
    ev = {}
    for line in open(os.path.join(d, "profile_stat_%s.txt" % side)):
        f = line.strip().split(",")
        if len(f) > 3 and f[0] and f[0][0].isdigit():
            ev[f[2]] = float(f[0])
    sc = sum(v for k, v in ev.items() if k.startswith("syscalls:"))
    print("  %s: CPU %.2f s (task-clock), %d context switches, syscalls %d = %.3f per data packet; %s"
          % (side, ev.get("task-clock", 0) / 1e3, ev.get("context-switches", 0), sc,
             sc / max(cnt["tx_data_pkts"], 1),
             ", ".join("%s %d" % (k.split("enter_")[1], v) for k, v in ev.items()
                       if k.startswith("syscalls:") and v)))
    print("  %s top symbols:" % side)
    for line in open(os.path.join(d, "profile_top_%s.txt" % side)).readlines()[:12]:
        print("    " + line.rstrip())
one = os.path.join(d, "profile_one_process.txt")
if os.path.exists(one):
    print("\nOne process, one thread driving both devices (bench_lib_write -1):")
    for line in open(one):
        print("  " + line.rstrip())
    print("  top symbols:")
    for line in open(os.path.join(d, "profile_top_one.txt")).readlines()[:15]:
        print("    " + line.rstrip())
EOF
fi
