#!/bin/sh
# ibv_devices and ibv_devinfo -v (Debian's ibverbs-utils, unmodified) over
# libibverbs.so.1 from this build (LIBDIR): two configured devices are
# listed, port 1 is active on Ethernet with a 4096-byte MTU, and GID 0 is
# the IPv4-mapped address, RoCE v2, or the IPv6 address itself.
# usage: test_devinfo.sh LIBDIR
set -u
libdir=$1
for p in ibv_devices ibv_devinfo; do
    command -v $p >/dev/null 2>&1 || {
        echo "SKIP: $p is not installed (Debian: ibverbs-utils)"
        exit 77
    }
done
fail() { echo "FAIL: $*"; exit 1; }
. "$(dirname "$0")/asan_env.sh"
asan_env "$libdir"
export LD_LIBRARY_PATH="$libdir" LD_PRELOAD="$MV_PRELOAD"
export MROCE_IBV_DEVICES="mroce0=127.0.0.1:5290,mroce1=[::1]:5291"
out=$(ibv_devices) || fail "ibv_devices exit $?"
echo "$out"
echo "$out" | grep -Eq "mroce0[[:space:]]+02ff7f00000114aa$" || fail "mroce0 not listed"
echo "$out" | grep -Eq "mroce1[[:space:]]" || fail "mroce1 not listed"
out=$(ibv_devinfo -v -d mroce0) || fail "ibv_devinfo exit $?"
echo "$out"
for want in "hca_id:	mroce0" "state:			PORT_ACTIVE" \
    "link_layer:		Ethernet" "active_mtu:		4096" \
    "GID\[  0\]:		::ffff:127.0.0.1, RoCE v2" "atomic_cap:			ATOMIC_HCA" \
    "max_qp_rd_atom:			16"; do
    echo "$out" | grep -q "$want" || fail "ibv_devinfo lacks \"$want\""
done
out=$(ibv_devinfo -v -d mroce1) || fail "ibv_devinfo mroce1 exit $?"
echo "$out" | grep -q "GID\[  0\]:		::1, RoCE v2" || fail "mroce1 GID is not ::1"
# A device that is not configured is not there.
ibv_devinfo -d mroce7 >/dev/null 2>&1 && fail "ibv_devinfo found mroce7"
echo PASS
