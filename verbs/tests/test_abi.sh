#!/bin/sh
# The ABI: every symbol Debian's libibverbs.so.1 exports at its default
# version (rdma-core 44), this build's exports too, at the same version;
# and every symbol the unmodified test programs and the provider libraries
# they load (BIND_NOW) import from it is there.  Skips (77) without the
# system library or objdump.
# usage: test_abi.sh OURLIB
set -u
ours=$1
sys=/usr/lib/x86_64-linux-gnu/libibverbs.so.1
[ -e "$sys" ] || sys=/lib/x86_64-linux-gnu/libibverbs.so.1
if [ ! -e "$sys" ] || ! command -v objdump >/dev/null 2>&1; then
    echo "SKIP: no system libibverbs.so.1 or objdump"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# "VERSION NAME" of each defined global symbol at its default version.
defs() {
    objdump -T "$1" | awk '$2 == "g" && ($3 == "DF" || $3 == "DO") &&
        $(NF-1) !~ /^\(/ && $NF != $(NF-1) {print $(NF-1), $NF}' | sort -u
}
defs "$sys" >"$tmp/sys"
defs "$ours" >"$tmp/ours"
missing=$(comm -23 "$tmp/sys" "$tmp/ours")
n=$(wc -l <"$tmp/sys")
if [ -n "$missing" ]; then
    echo "FAIL: exported by $sys, not by $ours:"
    echo "$missing"
    exit 1
fi
echo "all $n default-version symbols of $sys exported"
# Imports of the programs and of the libraries perftest loads.
# (dash's command -v names only its first argument: one program at a time)
progs=""
for p in ibv_devinfo ibv_rc_pingpong ib_write_bw ib_read_lat ib_atomic_bw; do
    progs="$progs $(command -v "$p")"
done
for f in $progs /lib/x86_64-linux-gnu/libmlx5.so.1 \
    /lib/x86_64-linux-gnu/libefa.so.1 /lib/x86_64-linux-gnu/librdmacm.so.1; do
    [ -e "$f" ] || continue
    objdump -T "$f" | awk '/\*UND\*/ && $(NF-1) ~ /IBVERBS/ {
        v = $(NF-1); gsub(/[()]/, "", v); print v, $NF}'
done | sort -u >"$tmp/imports"
missing=$(comm -23 "$tmp/imports" "$tmp/ours")
if [ -n "$missing" ]; then
    echo "FAIL: imported by the test programs, not exported:"
    echo "$missing"
    exit 1
fi
echo "all $(wc -l <"$tmp/imports") imported symbols resolved"
echo PASS
