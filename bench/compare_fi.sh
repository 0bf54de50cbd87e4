#!/usr/bin/env bash
# compare_fi.sh - the libfabric provider's figures (issue 7): Debian's
# fi_pingpong (libfabric-bin, 1.17) between two processes over 127.0.0.1,
# RDM endpoints, FI_MSG ping-pong:
#   latency     64 B, half round trip in usec (fi_pingpong's usec/xfer);
#   bandwidth   1 MiB ping-pong, Gbit/s (fi_pingpong's MB/sec: one message
#               in flight at a time, both directions counted);
# for mroce (BUILD_DIR/prov/libmroce-fi.so through FI_PROVIDER_PATH, when
# it is built), udp;ofi_rxd and tcp;ofi_rxm, all in the same run,
# interleaved (the order rotates each repetition), REPS repetitions each.
# Prints medians, the best run and the ratios mroce / peer, and writes
# bench/results/compare_fi.txt and .json.
#
#   bench/compare_fi.sh [BUILD_DIR]          (default: build)
#   env: REPS=5  SECS=2 (target seconds per run: iterations are calibrated
#        once per provider and size, then fixed)  PORT_BASE=19300
#        NETNS=auto|1|0  NO_INSTALL=1 (no apt-get)  NICE=-10 (all peers)
#        PROVIDERS="mroce udp;ofi_rxd tcp;ofi_rxm"  LAT_SIZE=64
#        BW_SIZE=1048576  LAT_ITERS= BW_ITERS= (fixed iterations instead
#        of calibrated ones)
# The provider is not built here: cmake --build BUILD_DIR --target mroce-fi.
#
# Loopback only.  Every client names 127.0.0.1; every provider is told to
# use loopback (FI_MROCE_IFACE=127.0.0.1, FI_TCP_IFACE=lo, FI_UDP_IFACE=lo:
# without them rxm and rxd take the first interface's address, whatever the
# client connects to), and each provider's first fi_info address is checked
# to be 127.0.0.1 before it is run at all (a provider that would use
# another address is left out).  As root, where `unshare -n` works
# (NETNS=auto), the whole script also runs in a private network namespace
# whose only interface is lo (fi_pingpong's server binds its control socket
# to INADDR_ANY, which has no option).  Every process is bounded by
# `timeout` and killed on exit.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-${BUILD:-$ROOT/build}}
case $BUILD in /*) ;; *) BUILD=$(pwd)/$BUILD ;; esac
REPS=${REPS:-5}
SECS=${SECS:-2}
LAT_SIZE=${LAT_SIZE:-64}
BW_SIZE=${BW_SIZE:-1048576}
PORT=${PORT_BASE:-19300}
RESULTS=$ROOT/bench/results
RUN=()
[ "${NICE:-0}" != 0 ] && RUN=(nice -n "$NICE")

log() { printf '%s\n' "$*" >&2; }

# --- what we need ---
if ! command -v fi_pingpong >/dev/null || ! command -v fi_info >/dev/null ||
    ! command -v python3 >/dev/null; then
    if [ "${NO_INSTALL:-0}" != 1 ]; then
        log "installing libfabric-bin python3 ..."
        apt-get update -qq >/dev/null 2>&1
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libfabric-bin \
            python3 >/dev/null 2>&1 || log "apt-get failed"
    fi
    command -v fi_pingpong >/dev/null || { log "no fi_pingpong"; exit 1; }
fi

# --- a private network namespace with only lo, where we can ---
if [ "${COMPARE_FI_IN_NETNS:-0}" != 1 ]; then
    case ${NETNS:-auto} in
    1 | auto)
        if [ "$(id -u)" = 0 ] && command -v ip >/dev/null &&
            unshare -n true 2>/dev/null; then
            export COMPARE_FI_IN_NETNS=1
            exec unshare -n bash -c 'ip link set lo up && exec bash "$@"' \
                bash "$0" "$BUILD"
        fi
        [ "${NETNS:-auto}" = 1 ] && { log "unshare -n failed"; exit 1; }
        ;;
    esac
fi
if [ "${COMPARE_FI_IN_NETNS:-0}" = 1 ]; then
    WHERE="private network namespace (lo only)"
else
    WHERE="host network namespace, loopback only"
fi

export FI_MROCE_IFACE=127.0.0.1 FI_TCP_IFACE=lo FI_UDP_IFACE=lo
unset FI_PROVIDER_PATH FI_PROVIDER
MROCE_SO=$BUILD/prov/libmroce-fi.so
mkdir -p "$RESULTS"
WORK=$(mktemp -d /tmp/compare_fi.XXXXXX)
RAW=$WORK/raw.tsv
: >"$RAW"

PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# penv PROV CMD...: runs CMD with FI_PROVIDER_PATH set for mroce only
penv() {
    local p=$1
    shift
    if [ "$p" = mroce ]; then
        FI_PROVIDER_PATH=$BUILD/prov "$@"
    else
        "$@"
    fi
}

# --- which providers, each checked to sit on 127.0.0.1 ---
PROVS=()
NOTES=()
for p in ${PROVIDERS:-mroce udp;ofi_rxd tcp;ofi_rxm}; do
    if [ "$p" = mroce ] && [ ! -e "$MROCE_SO" ]; then
        log "mroce: $MROCE_SO not built: left out"
        NOTES+=("mroce: not built ($MROCE_SO)")
        continue
    fi
    penv "$p" fi_info -p "$p" -t FI_EP_RDM -c FI_MSG -v >"$WORK/fi_info" 2>&1
    addr=$(sed -n 's/^ *src_addr: *//p' "$WORK/fi_info" | head -1)
    case $addr in
    *://127.0.0.1:*)
        log "$p: endpoints on $addr"
        PROVS+=("$p")
        ;;
    "")
        log "$p: fi_info lists no RDM endpoint: left out"
        NOTES+=("$p: no RDM endpoint")
        ;;
    *)
        log "$p: first address $addr is not 127.0.0.1: left out"
        NOTES+=("$p: not on 127.0.0.1 ($addr)")
        ;;
    esac
done
[ ${#PROVS[@]} -gt 0 ] || { log "no provider to measure"; exit 1; }
for p in "${PROVS[@]}"; do
    [ "$p" = mroce ] &&
        NOTES+=("mroce: $MROCE_SO, $(date -r "$MROCE_SO" '+built %Y-%m-%d %H:%M')")
done

# pingpong PROV SIZE ITERS: one server/client pair; sets RES to
# "usec MBps" from the client's result line, or to "" on failure
pingpong() {
    local prov=$1 size=$2 iters=$3 bound
    bound=$(awk -v s="$SECS" 'BEGIN { printf "%d", s * 15 + 30 }')
    RES=
    PORT=$((PORT + 1))
    penv "$prov" "${RUN[@]}" timeout "$bound" fi_pingpong -p "$prov" -e rdm \
        -S "$size" -I "$iters" -B "$PORT" >"$WORK/server.out" 2>&1 &
    local srv=$!
    PIDS+=("$srv")
    sleep 0.3
    penv "$prov" "${RUN[@]}" timeout "$bound" fi_pingpong -p "$prov" -e rdm \
        -S "$size" -I "$iters" -P "$PORT" 127.0.0.1 >"$WORK/client.out" 2>&1
    local rc=$?
    for _ in $(seq 50); do
        kill -0 "$srv" 2>/dev/null || break
        sleep 0.1
    done
    kill "$srv" 2>/dev/null
    wait "$srv" 2>/dev/null
    # bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec; "=" in #ack:
    # every message answered
    local line
    line=$(awk '$1 ~ /^[0-9]/ && $3 ~ /^=/ {l=$0} END {print l}' \
        "$WORK/client.out")
    if [ $rc != 0 ] || [ -z "$line" ]; then
        log "  $prov $size B: fi_pingpong failed (rc $rc)"
        tail -n 3 "$WORK/client.out" "$WORK/server.out" >&2
        return
    fi
    RES=$(echo "$line" | awk '{print $7, $6}')
}

# calibrate PROV SIZE: sets ITERS for about SECS seconds from a short run
# (0 if it fails).  The bandwidth run is 200 iterations and at least 1000
# are measured: tcp;ofi_rxm needs a few hundred 1 MiB iterations to reach
# its steady rate, and a shorter calibration would time its ramp and
# understate it (figures: bench/LOG.md).
calibrate() {
    local prov=$1 size=$2 small=0
    [ "$size" -le 65536 ] && small=1
    ITERS=${BW_ITERS:-}
    [ $small = 1 ] && ITERS=${LAT_ITERS:-}
    [ -n "$ITERS" ] && return
    pingpong "$prov" "$size" "$([ $small = 1 ] && echo 2000 || echo 200)"
    ITERS=0
    [ -n "$RES" ] || return
    ITERS=$(python3 -c '
import sys
secs, usec, small = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3] == "1"
n = int(secs * 1e6 / max(2 * usec, 0.01))
lo, hi = (1000, 500000) if small else (1000, 20000)
print(min(max(n, lo), hi))' "$SECS" "${RES%% *}" "$small")
}

START=$(date +%s)
log "iterations for about $SECS s per run ..."
CASES=()
for p in "${PROVS[@]}"; do
    for s in "$LAT_SIZE" "$BW_SIZE"; do
        calibrate "$p" "$s"
        it=$ITERS
        if [ "$it" = 0 ]; then
            log "  $p $s B: fails: left out"
            printf '%s\t%s\t0\t\t\t\n' "$p" "$s" >>"$RAW"
            continue
        fi
        log "  $p $s B: $it iterations"
        CASES+=("$p|$s|$it")
    done
done

LOADS=()
n=${#CASES[@]}
for rep in $(seq 1 "$REPS"); do
    LOADS+=("$(cut -d' ' -f1 /proc/loadavg)")
    log "repetition $rep/$REPS (load $(cut -d' ' -f1-3 /proc/loadavg)) ..."
    for i in $(seq 0 $((n - 1))); do
        IFS='|' read -r p s it <<<"${CASES[$(((i + rep - 1) % n))]}"
        pingpong "$p" "$s" "$it"
        r=$RES
        log "  $p $s B x $it: ${r:-failed}"
        printf '%s\t%s\t%s\t%s\t%s\n' "$p" "$s" "$rep" "$it" "${r/ /$'\t'}" \
            >>"$RAW"
    done
done
LOADS+=("$(cut -d' ' -f1 /proc/loadavg)")
ELAPSED=$(($(date +%s) - START))

python3 - "$RAW" "$RESULTS/compare_fi.json" "$REPS" "$SECS" "$ELAPSED" \
    "${LOADS[*]}" "$LAT_SIZE" "$BW_SIZE" "$WHERE" "$(printf '%s\n' "${NOTES[@]}")" \
    >"$WORK/table.txt" <<'EOF'
import json, os, platform, statistics, subprocess, sys, time
raw, out, reps, secs, elapsed, loads, lat_size, bw_size, where, notes = sys.argv[1:11]
lat_size, bw_size = int(lat_size), int(bw_size)
lat, bw, iters, fails = {}, {}, {}, {}
provs = []
for line in open(raw):
    f = line.rstrip("\n").split("\t")
    p, size = f[0], int(f[1])
    if p not in provs:
        provs.append(p)
    if len(f) < 6 or not f[4]:
        fails[p] = fails.get(p, 0) + 1
        continue
    it, usec, mbps = int(f[3]), float(f[4]), float(f[5])
    iters[(p, size)] = it
    if size == lat_size:
        lat.setdefault(p, []).append(usec)
    if size == bw_size:
        bw.setdefault(p, []).append(mbps * 8 / 1000)  # MB/s -> Gbit/s
med = lambda d, p: statistics.median(d[p]) if d.get(p) else None
def fmt(x, d=2): return "-" if x is None else "%.*f" % (d, x)
def ratio(a, b): return a / b if a is not None and b else None
def fr(x): return "-" if x is None else ("%.2fx" % x if x >= 0.1 else "%.3fx" % x)
try:
    ver = subprocess.run(["fi_info", "--version"], capture_output=True,
                         text=True).stdout.split("\n")[1].strip()
except Exception:
    ver = "?"

print()
print("fi_pingpong -e rdm over 127.0.0.1 (%s; %s): median of %s runs, "
      "about %s s each, interleaved; load avg %s" % (ver, where, reps, secs, loads))
print()
print("%-14s %29s   %31s" % ("", "%d B latency, usec (lower better)" % lat_size,
      "%d KiB bandwidth, Gbit/s (higher)" % (bw_size // 1024)))
print("%-14s %9s %9s  %-12s %9s %9s  %s" % ("provider", "median", "best",
      "iterations", "median", "best", "runs: latency | bandwidth"))
rows = {}
for p in provs:
    l, b = med(lat, p), med(bw, p)
    lb = min(lat[p]) if lat.get(p) else None
    bb = max(bw[p]) if bw.get(p) else None
    rows[p] = {"lat_us_median": l, "lat_us_best": lb, "lat_us_runs": lat.get(p, []),
               "bw_gbps_median": b, "bw_gbps_best": bb, "bw_gbps_runs": bw.get(p, []),
               "iterations": {"lat": iters.get((p, lat_size)), "bw": iters.get((p, bw_size))},
               "failed_runs": fails.get(p, 0)}
    print("%-14s %9s %9s  %-12s %9s %9s  %s | %s%s" % (
        p, fmt(l), fmt(lb), "%s/%s" % (iters.get((p, lat_size), "-"),
                                      iters.get((p, bw_size), "-")),
        fmt(b), fmt(bb), " ".join(fmt(x) for x in lat.get(p, [])),
        " ".join(fmt(x) for x in bw.get(p, [])),
        ("  (%d failed)" % fails[p]) if p in fails else ""))
ratios = {}
if "mroce" in provs:
    best_lat = lambda p: min(lat[p]) if lat.get(p) else None
    best_bw = lambda p: max(bw[p]) if bw.get(p) else None
    print()
    print("%-24s %9s %9s   %9s %9s" % ("mroce / peer", "latency", "", "bandwidth", ""))
    print("%-24s %9s %9s   %9s %9s" % ("", "median", "best", "median", "best"))
    for p in provs:
        if p == "mroce":
            continue
        r = {"lat": ratio(med(lat, "mroce"), med(lat, p)),
             "lat_best": ratio(best_lat("mroce"), best_lat(p)),
             "bw": ratio(med(bw, "mroce"), med(bw, p)),
             "bw_best": ratio(best_bw("mroce"), best_bw(p))}
        r["ahead_on_both"] = (None if r["lat"] is None or r["bw"] is None
                              else r["lat"] < 1 and r["bw"] > 1)
        ratios[p] = r
        print("%-24s %9s %9s   %9s %9s   %s" % (
            "mroce / " + p, fr(r["lat"]), fr(r["lat_best"]), fr(r["bw"]),
            fr(r["bw_best"]), {True: "ahead on both", False: "not ahead on both",
                                None: "-"}[r["ahead_on_both"]]))
    print("(mroce is ahead where the latency ratio is below 1 and the "
          "bandwidth ratio above 1)")
else:
    print()
    print("mroce not measured: no ratios")
if max(float(x) for x in loads.split()) > (os.cpu_count() or 1):
    print("warning: load average above the CPU count (%d): other jobs took "
          "the CPU; medians are unreliable, the best runs less so" % os.cpu_count())
for n in [n for n in notes.split("\n") if n]:
    print("note: " + n)
print("(%s s in all)" % elapsed)
json.dump({
    "tool": "bench/compare_fi.sh", "program": "fi_pingpong -e rdm (FI_MSG)",
    "libfabric": ver, "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    "host": {"kernel": platform.release(), "cpus": os.cpu_count()},
    "network": where, "address": "127.0.0.1",
    "reps": int(reps), "secs_per_run": float(secs), "elapsed_s": int(elapsed),
    "nice": int(os.environ.get("NICE", "0") or 0),
    "load_avg_per_rep": [float(x) for x in loads.split()],
    "sizes": {"lat": lat_size, "bw": bw_size},
    "units": {"lat": "usec, half round trip (fi_pingpong usec/xfer)",
              "bw": "Gbit/s, ping-pong (fi_pingpong MB/sec * 8 / 1000)"},
    "providers": rows, "ratios_mroce_over_peer": ratios,
    "notes": [n for n in notes.split("\n") if n],
}, open(out, "w"), indent=1)
print("wrote", out)
EOF
cat "$WORK/table.txt"
cp "$WORK/table.txt" "$RESULTS/compare_fi.txt"
