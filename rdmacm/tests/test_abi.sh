#!/bin/sh
# The ABI: every symbol Debian's librdmacm.so.1 exports at its default
# version (rdma-core 44), this build's exports too, at the same version;
# and every symbol the rdmacm-utils programs import from it is there.
# Skips (77) without the system library or objdump.
# usage: test_abi.sh OURLIB
set -u
ours=$1
. "$(dirname "$0")/../../verbs/tests/abi_lib.sh"
abi_system librdmacm.so.1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
abi_defs "$sys" >"$tmp/sys"
abi_defs "$ours" >"$tmp/ours"
abi_subset "$tmp/sys" "$tmp/ours" "exported by $sys, not by $ours"
abi_subset "$tmp/ours" "$tmp/sys" "exported by $ours, not by $sys"
echo "all $(wc -l <"$tmp/sys") default-version symbols of $sys exported"
# (one program a command -v: dash's prints the first name only)
progs=""
for p in rping ucmatose udaddy mckey rdma_server rdma_client rstream \
    riostream cmtime rcopy udpong; do
    f=$(command -v "$p") && progs="$progs $f"
done
# shellcheck disable=SC2086 # one word per path
abi_imports RDMACM $progs >"$tmp/imports"
abi_subset "$tmp/imports" "$tmp/ours" "imported by rdmacm-utils, not exported"
echo "all $(wc -l <"$tmp/imports") symbols rdmacm-utils imports resolved"
echo PASS
