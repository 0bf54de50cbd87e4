#!/bin/sh
# bench_sim.sh - simulator performance: event rate on one core, engine
# memory per queue pair, and all-to-all scaling (1 MiB per pair).
#
# Speed is reported per wall second and per CPU second of the process (the
# machine is shared: the CPU figure is the one load does not distort); each
# speed run is done twice.  Units of the result line:
#   pkt-ev  a packet event: one packet handled by one simulator event at the
#           far end of a link, i.e. its arrival at a switch (which forwards
#           it) or at a host NIC (which hands it to the engine or the RoCE
#           model).  One per link hop: a packet crossing leaf-spine-leaf
#           counts 4.  Transmissions are not counted separately (a switch
#           port schedules the arrival when it queues the packet).
#   Mev     every event the event queue handled: pkt-ev plus host NIC
#           link-free events, engine timers, RoCE timers and wake-ups.
# The figure the >= 5 M goal is compared with is "M pkt-ev/s cpu".  The all-to-all series uses small per-QP engine
# attributes (window 64, 8 paths, 4 send / 4 receive WRs) and a 1:1
# leaf-spine with 32 hosts per leaf; "setup" in its result line is the wall
# time of QP creation and the real CONNECT handshakes over the fabric.
#   usage: bench/bench_sim.sh [MAX_HOSTS]   (default 256; 512/1024 take long)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-sim
out=${OUT:-$root/sim-out/bench}
max=${1:-256}
mkdir -p "$build" "$out"
(cd "$build" && cmake -DCMAKE_BUILD_TYPE=Release .. >/dev/null &&
 make -j2 mroce-sim >/dev/null)
sim=$build/sim/mroce-sim
sc=$root/sim/scenarios/ls128_alltoall.txt
rm -f "$out/summary.csv"

echo "== speed: 32-host ring all-reduce 16 MiB (x2), 64-host all-to-all 1 MiB/pair (x2), 256-host all-to-all 128 KiB/pair, small QPs (x2)"
for i in 1 2; do
    $sim -q -o "$out" -s name=speed_ar32 -s transports=mroce,roce \
        -s "workload=allreduce bytes=16M slice=128K" -s hosts=32 \
        -s hosts_per_tor=8 -s spines=8 "$sc"
done
for i in 1 2; do
    $sim -q -o "$out" -s name=speed_a2a64 -s transports=mroce,roce -s hosts=64 -s hosts_per_tor=16 -s spines=16 "$sc"
done
# the mid-size run the profiles are taken on (sim/README.md, Performance)
for i in 1 2; do
    /usr/bin/time -f "  process CPU %U user + %S sys s, max RSS %M KiB" \
        $sim -q -o "$out" -s name=speed_a2a256 -s transports=mroce \
        -s hosts=256 -s hosts_per_tor=32 -s spines=32 -s qp_window=64 \
        -s qp_npaths=8 -s qp_sq=4 -s qp_rq=4 \
        -s "workload=alltoall bytes=128K active=8" "$sc"
done

echo "== engine memory per QP (counted through the engine's allocator)"
for a in "1024 64 256 256" "256 32 16 16" "64 8 4 4"; do
    set -- $a
    printf "window=%s npaths=%s sq=%s rq=%s: " "$1" "$2" "$3" "$4"
    $sim -q -o "$out" -s name=mem -s transports=mroce -s qp_window=$1 \
        -s qp_npaths=$2 -s qp_sq=$3 -s qp_rq=$4 \
        -s "workload=alltoall bytes=64K active=4" -s hosts=16 \
        -s hosts_per_tor=4 -s spines=4 "$sc" | sed 's/.*cpu, //; s/\]//'
done

echo "== all-to-all 1 MiB per pair, scaling (MetaRoCE, small QPs)"
h=64
while [ $h -le "$max" ]; do
    tor=32; [ $h -lt 64 ] && tor=8
    /usr/bin/time -f "  max RSS %M KiB" $sim -q -o "$out" -s name=a2a_$h \
        -s transports=mroce -s hosts=$h -s hosts_per_tor=$tor -s spines=$tor \
        -s qp_window=64 -s qp_npaths=8 -s qp_sq=4 -s qp_rq=4 \
        -s limit=10s \
        -s "workload=alltoall bytes=1M active=8" "$sc"
    h=$((h * 2))
done
echo "CSV: $out/summary.csv"
