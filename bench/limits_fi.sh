#!/usr/bin/env bash
# limits_fi.sh - what the provider's 1 MiB ping-pong would reach without the
# per-byte work that the MetaRoCE datapath does and TCP does not, against
# tcp;ofi_rxm in the same run (issue 7: "ahead of rxm at 1 MiB").  It builds
# the provider three times, into build-limits-*/ (never used for anything
# else; the switches exist only for this measurement):
#   shipped     the normal build;
#   noplace     -DMROCE_MEASURE_NO_PLACE: payload runs of 4 KiB or more are
#               not copied into the application's memory on receive (the
#               data is wrong; the protocol runs unchanged);
#   noplace+nocrc  also -DMROCE_MEASURE_NO_CRC: no CRC32C computed on send
#               nor checked on receive (WIRE-23/24 require both).
# Then runs Debian's fi_pingpong -S 1 MiB -I ITERS for each build and for
# tcp;ofi_rxm, interleaved, REPS times, in a private network namespace with
# only lo, and prints medians and ratios.  A measurement, never a test:
# the two switched builds deliver wrong data.
#   bench/limits_fi.sh          env: REPS=3 ITERS=3000 NO_INSTALL=1
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REPS=${REPS:-3}
ITERS=${ITERS:-3000}
if [ "${LIMITS_IN_NETNS:-0}" != 1 ]; then
    if [ "${NO_INSTALL:-0}" != 1 ] && ! command -v fi_pingpong >/dev/null; then
        apt-get update -qq >/dev/null 2>&1
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libfabric-bin \
            libfabric-dev >/dev/null 2>&1 || true
    fi
    command -v fi_pingpong >/dev/null || { echo "no fi_pingpong" >&2; exit 1; }
    for v in shipped noplace noplace+nocrc; do
        flags=
        case $v in
        noplace) flags=-DMROCE_MEASURE_NO_PLACE ;;
        noplace+nocrc) flags="-DMROCE_MEASURE_NO_PLACE -DMROCE_MEASURE_NO_CRC" ;;
        esac
        b=$ROOT/build-limits-${v/+/-}
        cmake -S "$ROOT" -B "$b" -DCMAKE_BUILD_TYPE=Release \
            -DCMAKE_C_FLAGS="$flags" >/dev/null
        cmake --build "$b" -j2 --target mroce-fi >/dev/null
    done
    [ "$(id -u)" = 0 ] || { echo "needs root (unshare -n)" >&2; exit 1; }
    export LIMITS_IN_NETNS=1
    exec unshare -n bash -c 'ip link set lo up && exec bash "$@"' bash "$0"
fi

export FI_MROCE_IFACE=127.0.0.1 FI_TCP_IFACE=lo
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$WORK"' EXIT
PORT=19600
# run VARIANT: one fi_pingpong pair; prints Gbit/s (both directions) or "-"
run() {
    local v=$1 prov=mroce
    PORT=$((PORT + 1))
    if [ "$v" = rxm ]; then
        prov="tcp;ofi_rxm"
    else
        export FI_PROVIDER_PATH=$ROOT/build-limits-${v/+/-}/prov
    fi
    timeout 120 fi_pingpong -p "$prov" -e rdm -S 1048576 -I "$ITERS" \
        -B "$PORT" >"$WORK/srv" 2>&1 &
    sleep 0.3
    timeout 120 fi_pingpong -p "$prov" -e rdm -S 1048576 -I "$ITERS" \
        -P "$PORT" 127.0.0.1 >"$WORK/cli" 2>&1 || true
    wait 2>/dev/null || true
    awk '$1 == "1m" && $3 ~ /^=/ {printf "%.2f\n", $6 * 8 / 1000; f=1}
         END {if (!f) print "-"}' "$WORK/cli"
}
declare -A R
VARS=(shipped noplace noplace+nocrc rxm)
for rep in $(seq "$REPS"); do
    for v in "${VARS[@]}"; do
        g=$(run "$v")
        R[$v]="${R[$v]:-} $g"
        echo "rep $rep: $v $g Gbit/s" >&2
    done
done
med() { tr ' ' '\n' | grep -v '^-\?$' | sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "-"}'; }
rxm=$(echo ${R[rxm]} | med)
printf 'fi_pingpong -S 1 MiB -I %s, medians of %s (Gbit/s, both directions)\n' "$ITERS" "$REPS"
for v in "${VARS[@]}"; do
    m=$(echo ${R[$v]} | med)
    ratio=$(awk -v a="$m" -v b="$rxm" 'BEGIN { if (a != "-" && b > 0) printf "%.2fx", a / b; else print "-" }')
    printf '%-16s %8s   runs:%s   / rxm %s\n' "$v" "$m" "${R[$v]}" "$ratio"
done
