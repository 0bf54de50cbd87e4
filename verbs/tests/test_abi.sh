#!/bin/sh
# The ABI: every symbol Debian's libibverbs.so.1 exports at its default
# version (rdma-core 44), this build's exports too, at the same version;
# and every symbol the unmodified test programs and the provider libraries
# they load (BIND_NOW) import from it is there.  Skips (77) without the
# system library or objdump.
# usage: test_abi.sh OURLIB
set -u
ours=$1
. "$(dirname "$0")/abi_lib.sh"
abi_system libibverbs.so.1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
abi_defs "$sys" >"$tmp/sys"
abi_defs "$ours" >"$tmp/ours"
abi_subset "$tmp/sys" "$tmp/ours" "exported by $sys, not by $ours"
echo "all $(wc -l <"$tmp/sys") default-version symbols of $sys exported"
# Imports of the programs and of the libraries perftest loads (dash's
# command -v names only its first argument: one program at a time).
progs=""
for p in ibv_devinfo ibv_rc_pingpong ib_write_bw ib_read_lat ib_atomic_bw; do
    progs="$progs $(command -v "$p")"
done
# shellcheck disable=SC2086 # one word per path
abi_imports IBVERBS $progs /lib/x86_64-linux-gnu/libmlx5.so.1 \
    /lib/x86_64-linux-gnu/libefa.so.1 \
    /lib/x86_64-linux-gnu/librdmacm.so.1 >"$tmp/imports"
abi_subset "$tmp/imports" "$tmp/ours" \
    "imported by the test programs, not exported"
echo "all $(wc -l <"$tmp/imports") imported symbols resolved"
echo PASS
