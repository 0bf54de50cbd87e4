#!/bin/sh
# compare_secure.sh [BUILD_DIR] - secure mode against clear, in one run
# (docs/spec/security.md section 6; issue 22's goals: encrypted bulk at
# least 0.8x clear, 64 B latency at most 0.3 us above clear).
#
# Over loopback sockets (or DATAPATH=dpdk: libmroce's DPDK datapath over a
# net_memif pair, as bench/compare_dpdk.sh runs it), interleaved so both
# see the same load, REPS times (default 3): mroce-perf write_bw at 64 KiB
# and 1 MiB and write_lat at 64 B (typical and t_min), clear and with
# --encrypt (AES-128-GCM, and GMAC for bulk), then `openssl speed -evp
# aes-128-gcm` (and
# aes-256-gcm) at 4 KiB on the same machine, the ceiling of one core's
# AES-GCM, and `openssl speed -aead` (nonce, AAD, data, tag per call, as a
# packet pays) at 64 B, 4 KiB and 8 KiB in ns per call.  Prints medians and
# ratios and writes bench/results/compare_secure.txt (compare_secure_dpdk.txt
# with DATAPATH=dpdk; DATAPATH=all runs both, one after the other).
# Environment: REPS, SECS (per run, 3), PORT_BASE (47900), DATAPATH
# (socket).  Nothing here passes or fails.
set -u
if [ "${DATAPATH:-}" = all ]; then
    DATAPATH=socket sh "$0" "$@"
    DATAPATH=dpdk exec sh "$0" "$@"
fi
BUILD=${1:-build}
PERF=$BUILD/tools/mroce-perf
REPS=${REPS:-3}
SECS=${SECS:-3}
PORT=${PORT_BASE:-47900}
DATAPATH=${DATAPATH:-socket}
OUT=bench/results/compare_secure.txt
[ "$DATAPATH" = dpdk ] && OUT=bench/results/compare_secure_dpdk.txt
[ -x "$PERF" ] || { echo "compare_secure: $PERF not built" >&2; exit 2; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mroce-sec.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
umask 077
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$WORK/key"
export MROCE_KEY_FILE=$WORK/key
RAW=$WORK/raw.tsv
: >"$RAW"

# run NAME TEST SIZE [options]: one client run against a fresh server.
run() {
    name=$1 test=$2 size=$3
    shift 3
    PORT=$((PORT + 2))
    sock=$WORK/memif-$PORT.sock
    if [ "$DATAPATH" = dpdk ]; then
        senv="MROCE_DATAPATH=dpdk MROCE_DPDK_VDEV=net_memif,role=server,socket=$sock"
        cenv="MROCE_DATAPATH=dpdk MROCE_DPDK_VDEV=net_memif,role=client,socket=$sock"
        sa="-B 10.0.0.1" ca="10.0.0.1 -B 10.0.0.2"
    else
        senv="MROCE_DATAPATH=socket" cenv="MROCE_DATAPATH=socket"
        sa="" ca="127.0.0.1"
    fi
    # shellcheck disable=SC2086 # the env and address lists split on purpose
    env $senv timeout 60 "$PERF" "$test" -p "$PORT" $sa --timeout 10 "$@" \
        >"$WORK/srv.out" 2>&1 &
    srv=$!
    if [ "$DATAPATH" = dpdk ]; then
        for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
    else
        sleep 0.3
    fi
    js=$WORK/c.json
    rm -f "$js"
    # shellcheck disable=SC2086
    env $cenv timeout 60 "$PERF" "$test" $ca -p "$PORT" -s "$size" \
        -D "$SECS" --timeout 10 --json "$js" "$@" >"$WORK/cli.out" 2>&1
    wait "$srv" 2>/dev/null
    if [ ! -s "$js" ]; then
        echo "compare_secure: $name failed" >&2
        tail -3 "$WORK/cli.out" >&2
        return
    fi
    python3 - "$js" "$name" >>"$RAW" <<'PY'
import json, sys
rs = json.load(open(sys.argv[1])).get("results") or []
if not rs:
    sys.exit("compare_secure: %s: no result" % sys.argv[2])
v = rs[0].get("bw_avg_gbps", rs[0].get("t_typical_us"))
print("%s\t%s" % (sys.argv[2], v))
if "t_min_us" in rs[0]:
    print("%s_min\t%s" % (sys.argv[2], rs[0]["t_min_us"]))
PY
}

for rep in $(seq 1 "$REPS"); do
    echo "compare_secure: round $rep of $REPS" >&2
    run bw64k_clear write_bw 65536
    run bw64k_gcm write_bw 65536 --encrypt
    run bw64k_gmac write_bw 65536 --encrypt=gmac
    run bw1m_clear write_bw 1048576
    run bw1m_gcm write_bw 1048576 --encrypt
    run bw1m_gmac write_bw 1048576 --encrypt=gmac
    run lat64_clear write_lat 64
    run lat64_gcm write_lat 64 --encrypt
done

SPEED=$WORK/speed.txt
for c in aes-128-gcm aes-256-gcm; do
    openssl speed -evp "$c" -seconds 1 -bytes 4096 2>/dev/null | tail -1
done >"$SPEED"
AEAD=$WORK/aead.txt
for b in 64 4096 8192; do
    printf '%s ' "$b"
    openssl speed -aead -evp aes-128-gcm -seconds 1 -bytes "$b" 2>/dev/null |
        tail -1
done >"$AEAD"

python3 - "$RAW" "$SPEED" "$REPS" "$SECS" "$AEAD" "$DATAPATH" <<'PY' | tee "$OUT"
import statistics, sys, time, os
raw, speed, reps, secs, aead, dp = sys.argv[1:7]
v = {}
for line in open(raw):
    n, x = line.split("\t")
    v.setdefault(n, []).append(float(x))
m = {n: statistics.median(x) for n, x in v.items()}
def g(n): return m.get(n, float("nan"))
print("compare_secure.sh %s: datapath %s, %s runs of %s s, load %s, host %d CPUs"
      % (time.strftime("%Y-%m-%d %H:%M"), dp, reps, secs,
         open("/proc/loadavg").read().split()[0], os.cpu_count()))
print("")
print("| figure | clear | AES-128-GCM | GCM / clear | GMAC | GMAC / clear | goal |")
print("|---|---|---|---|---|---|---|")
for s, lab in (("64k", "64 KiB"), ("1m", "1 MiB")):
    c, e, a = g("bw%s_clear" % s), g("bw%s_gcm" % s), g("bw%s_gmac" % s)
    print("| write_bw %s, Gbit/s | %.1f | %.1f | %.2fx | %.1f | %.2fx | 0.8x: %s |"
          % (lab, c, e, e / c, a, a / c, "met" if e / c >= 0.8 else "missed"))
c, e = g("lat64_clear"), g("lat64_gcm")
print("| write_lat 64 B, us | %.2f | %.2f | +%.2f us | | | +0.3 us: %s |"
      % (c, e, e - c, "met" if e - c <= 0.3 else "missed"))
# t_min: the path without the preemption a loaded host adds.
c, e = g("lat64_clear_min"), g("lat64_gcm_min")
print("| write_lat 64 B t_min, us | %.2f | %.2f | +%.2f us | | | +0.3 us: %s |"
      % (c, e, e - c, "met" if e - c <= 0.3 else "missed"))
print("")
for line in open(speed):
    f = line.split()
    if len(f) >= 2:
        # openssl prints kB/s (1000 bytes) for the block size asked.
        kbs = float(f[-1].rstrip("k"))
        print("openssl speed -evp %s, 4 KiB blocks, one core: %.1f Gbit/s"
              % (f[0], kbs * 1000 * 8 / 1e9))
for line in open(aead):
    f = line.split()
    if len(f) >= 3:
        b, kbs = int(f[0]), float(f[-1].rstrip("k"))
        print("openssl speed -aead -evp aes-128-gcm, %5d B: %6.0f ns per call "
              "(%.1f Gbit/s)" % (b, b / (kbs * 1000) * 1e9, kbs * 8e3 / 1e9))
PY
