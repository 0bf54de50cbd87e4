#!/bin/sh
# The ABI: every symbol Debian's librdmacm.so.1 exports at its default
# version (rdma-core 44), this build's exports too, at the same version;
# and every symbol the rdmacm-utils programs import from it is there.
# Skips (77) without the system library or objdump.
# usage: test_abi.sh OURLIB
set -u
ours=$1
sys=/usr/lib/x86_64-linux-gnu/librdmacm.so.1
[ -e "$sys" ] || sys=/lib/x86_64-linux-gnu/librdmacm.so.1
if [ ! -e "$sys" ] || ! command -v objdump >/dev/null 2>&1; then
    echo "SKIP: no system librdmacm.so.1 or objdump"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
defs() {
    objdump -T "$1" | awk '$2 == "g" && ($3 == "DF" || $3 == "DO") &&
        $(NF-1) !~ /^\(/ && $NF != $(NF-1) {print $(NF-1), $NF}' | sort -u
}
defs "$sys" >"$tmp/sys"
defs "$ours" >"$tmp/ours"
missing=$(comm -23 "$tmp/sys" "$tmp/ours")
if [ -n "$missing" ]; then
    echo "FAIL: exported by $sys, not by $ours:"
    echo "$missing"
    exit 1
fi
extra=$(comm -13 "$tmp/sys" "$tmp/ours")
if [ -n "$extra" ]; then
    echo "FAIL: exported by $ours, not by $sys:"
    echo "$extra"
    exit 1
fi
echo "all $(wc -l <"$tmp/sys") default-version symbols of $sys exported"
# (one program a command -v: dash's prints the first name only)
for p in rping ucmatose udaddy mckey rdma_server rdma_client rstream \
    riostream cmtime rcopy udpong; do
    f=$(command -v "$p") || continue
    objdump -T "$f" | awk '/\*UND\*/ && $(NF-1) ~ /RDMACM/ {
        v = $(NF-1); gsub(/[()]/, "", v); print v, $NF}'
done | sort -u >"$tmp/imports"
missing=$(comm -23 "$tmp/imports" "$tmp/ours")
if [ -n "$missing" ]; then
    echo "FAIL: imported by rdmacm-utils, not exported:"
    echo "$missing"
    exit 1
fi
echo "all $(wc -l <"$tmp/imports") symbols rdmacm-utils imports resolved"
echo PASS
