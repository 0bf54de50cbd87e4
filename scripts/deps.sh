#!/bin/sh
# Install the Debian packages the build and tests need, if any is missing.
# Used by demo.sh and test.sh so both work on a fresh Debian 12 machine.
# tshark runs the Wireshark dissector's tests (dissector/); clang-format-14
# checks the C sources' layout (scripts/check_format.sh, run by .ci/run).
set -e
need=""
# The namespace fabric scenarios (fabric/) need iproute2, nftables,
# bpftool, linux-libc-dev (BPF headers) and iputils-ping.
# libfabric-dev builds the libfabric provider (prov/); Open MPI (mpicc,
# mpirun) and libfabric's tools (fi_info, fi_pingpong) run its tests
# (tests/mpi, prov/).  libibverbs-dev builds libibverbs over MetaRoCE
# (verbs/); ibverbs-utils, perftest and rdmacm-utils are its test programs.
# librdmacm-dev builds librdmacm over it (rdmacm/), rdmacm-utils tests it.
# libdpdk-dev builds the DPDK datapath (src/dpdk; optional: without it
# libmroce has the socket datapath only); dpdk-dev brings dpdk-testpmd,
# bench/compare_dpdk.sh's DPDK-level ceiling.  libssl-dev (OpenSSL 3's
# libcrypto) gives libmroce its secure mode's AEAD (src/lib/secure_evp.c);
# lua-luaossl (OpenSSL for tshark's Lua) lets the dissector decrypt it.
for p in cmake make gcc clang libclang-rt-14-dev clang-format-14 tshark \
         iproute2 nftables bpftool linux-libc-dev iputils-ping openmpi-bin \
         libopenmpi-dev libfabric-bin libfabric-dev \
         libibverbs-dev ibverbs-utils perftest rdmacm-utils libdpdk-dev dpdk-dev \
         libssl-dev librdmacm-dev lua-luaossl; do
  dpkg -s "$p" >/dev/null 2>&1 || need="$need $p"
done
if [ -n "$need" ]; then
  echo "deps: installing$need"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  # wireshark-common (from tshark) asks whether non-root users may capture:
  # answer no before it asks.
  echo "wireshark-common wireshark-common/install-setuid boolean false" |
    $SUDO debconf-set-selections
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
fi
