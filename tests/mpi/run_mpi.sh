#!/bin/sh
# run_mpi.sh - run mpi_check (tests/mpi/mpi_check.c) on 4 ranks with Open
# MPI's cm PML and ofi MTL over one libfabric provider, on loopback only.
#
#   tests/mpi/run_mpi.sh PROVIDER_PATH PROVIDER [MPI_CHECK]
#     PROVIDER_PATH  the provider library (build/prov/libmroce-fi.so) or a
#                    directory for FI_PROVIDER_PATH; "" or "-" for the
#                    providers built into libfabric
#     PROVIDER       for mtl_ofi_provider_include: mroce, "tcp;ofi_rxm", ...
#     MPI_CHECK      the mpi_check program; default: built here with mpicc
#   e.g.  tests/mpi/run_mpi.sh build/prov/libmroce-fi.so mroce
#         MPI_OSC=1 tests/mpi/run_mpi.sh build/prov/libmroce-fi.so mroce build/tests/mpi/mpi_osc
#         tests/mpi/run_mpi.sh - "tcp;ofi_rxm"
#   env:  NP=4  MPI_CHECK_TIMEOUT=240 (s, per rank)  MPI_NETNS=auto|1|0
#         MPI_EXTRA="..." (more mpirun arguments)
#         MPI_OSC=1: one-sided (MPI_CHECK is then mpi_osc): Open MPI's
#         default osc, rdma, over btl ofi and the same provider
#         (btl ofi,self; btl_ofi_provider_include; osc_rdma_btls ofi)
# Exit status: 0 passed, 1 failed, 77 skipped (the provider library,
# mpirun or mpicc is missing; CTest's SKIP_RETURN_CODE).
#
# Traffic stays on loopback, twice over:
#  - as root, where `unshare -n` works (MPI_NETNS=auto), everything runs in
#    a private network namespace whose only interface is lo: no other
#    address exists to reach;
#  - in any case every layer is told to use loopback: the libfabric
#    providers (FI_MROCE_IFACE=127.0.0.1, FI_TCP_IFACE=lo, FI_UDP_IFACE=lo,
#    ...; the provider's first fi_info address is checked to be loopback
#    before the run), Open MPI's out-of-band channel (oob_tcp_if_include
#    lo), no TCP BTL (btl self: with pml cm all MPI traffic goes through
#    the MTL; btl_tcp_if_include lo should one be added through MPI_EXTRA),
#    and PMIx, whose server listens on 127.0.0.1 only by default.
set -u
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { sed -n '2,21p' "$0" >&2; exit 2; }
ppath=$1
prov=$2
check=${3:-}
np=${NP:-4}

skip() { echo "run_mpi: SKIP: $*"; exit 77; }

command -v mpirun >/dev/null 2>&1 || skip "no mpirun (apt-get install openmpi-bin)"
case $ppath in
"" | -) ppath= ;;
*)
    [ -e "$ppath" ] || skip "no provider at $ppath (not built)"
    ppath=$(cd "$(dirname "$ppath")" && pwd)/$(basename "$ppath")
    [ -d "$ppath" ] || ppath=$(dirname "$ppath")
    ;;
esac

work=$(mktemp -d /tmp/run_mpi.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [ -z "$check" ]; then
    command -v mpicc >/dev/null 2>&1 || skip "no mpicc (apt-get install libopenmpi-dev)"
    check=$work/mpi_check
    mpicc -O2 -std=gnu11 -Wall -Wextra -Werror -o "$check" \
        "$here/mpi_check.c" || exit 1
fi

# Loopback for every provider that takes an interface or address.
export FI_MROCE_IFACE="${FI_MROCE_IFACE:-127.0.0.1}"
export FI_TCP_IFACE=lo FI_UDP_IFACE=lo FI_SOCKETS_IFACE=lo FI_NET_IFACE=lo
if [ -n "$ppath" ]; then
    export FI_PROVIDER_PATH="$ppath"
else
    unset FI_PROVIDER_PATH
fi
export MPI_CHECK_TIMEOUT="${MPI_CHECK_TIMEOUT:-240}"
# Open MPI refuses root unless told twice; both ways, for mpirun and ranks.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# (the ranks are started on this host by mpirun and inherit all of these)

netns=0
case ${MPI_NETNS:-auto} in
1) netns=1 ;;
auto) [ "$(id -u)" = 0 ] && command -v ip >/dev/null 2>&1 &&
    unshare -n true 2>/dev/null && netns=1 ;;
esac

# In the namespace: bring lo up, then run the rest of the arguments.
in_ns() {
    if [ $netns = 1 ]; then
        unshare -n sh -c 'ip link set lo up && exec "$@"' sh "$@"
    else
        "$@"
    fi
}

# The provider must be there with tagged RDM endpoints on a loopback address.
if command -v fi_info >/dev/null 2>&1; then
    in_ns fi_info -p "$prov" -t FI_EP_RDM -c FI_TAGGED -v >"$work/fi_info" 2>&1
    addr=$(sed -n 's/^ *src_addr: *//p' "$work/fi_info" | head -1)
    if [ -z "$addr" ] && ! grep -q 'provider:' "$work/fi_info"; then
        echo "run_mpi: FAIL: fi_info -p '$prov' lists no RDM endpoint with FI_TAGGED${ppath:+ (FI_PROVIDER_PATH=$ppath)}"
        head -20 "$work/fi_info"
        exit 1
    fi
    # outside a private namespace, an address that is not loopback (or
    # none shown) stops the run before any traffic
    case $addr in
    *://127.0.0.1:* | *'://[::1]:'*) ;;
    *)
        if [ $netns = 0 ]; then
            echo "run_mpi: FAIL: provider '$prov' would use '${addr:-an address fi_info does not show}', not loopback"
            exit 1
        fi
        ;;
    esac
    echo "run_mpi: provider $prov, first address ${addr:-(none shown)}"
fi

[ -n "${MROCE_FAULT:-}" ] && echo "run_mpi: MROCE_FAULT=$MROCE_FAULT"
[ -n "${MPI_CHECK_TESTS:-}" ] && echo "run_mpi: MPI_CHECK_TESTS=$MPI_CHECK_TESTS"
echo "run_mpi: $np ranks, pml cm, mtl ofi, provider $prov${ppath:+, FI_PROVIDER_PATH=$ppath}, $([ $netns = 1 ] && echo 'private network namespace (lo only)' || echo 'host network, loopback only')"
btl="--mca btl self"
if [ "${MPI_OSC:-0}" = 1 ]; then
    btl="--mca btl ofi,self --mca btl_ofi_provider_include $prov --mca osc rdma --mca osc_rdma_btls ofi"
    echo "run_mpi: one-sided: osc rdma over btl ofi, provider $prov"
fi
# shellcheck disable=SC2086 # MPI_EXTRA and btl are lists of arguments
in_ns timeout -k 10 $((MPI_CHECK_TIMEOUT + 30)) \
    mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" \
    --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$prov" \
    $btl --mca btl_tcp_if_include lo \
    --mca oob_tcp_if_include lo --mca mpi_yield_when_idle 1 \
    ${MPI_EXTRA:-} "$check"
rc=$?
if [ $rc != 0 ]; then
    echo "run_mpi: FAIL: mpirun exited $rc"
    exit 1
fi
echo "run_mpi: PASS"
