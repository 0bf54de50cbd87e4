/*
 * dpdk_link.h - the DPDK datapath: a link (src/udp/link.h) over one DPDK
 * ethdev port, so libmroce sends and receives MetaRoCE-over-UDP frames
 * with the kernel out of the path.
 *
 * Built only when pkg-config finds libdpdk (MROCE_HAVE_DPDK); without it
 * mroce_dpdk_link_open() fails with a message saying so.  Configuration
 * comes from the environment, since existing programs open devices
 * unchanged (README, "The DPDK datapath"):
 *   MROCE_DPDK_ARGS   EAL arguments; default "--no-huge --no-shconf -m 128
 *                     --no-pci --no-telemetry -l 0" (no hugepages needed)
 *   MROCE_DPDK_VDEV   a virtual device to create and use, e.g.
 *                     "net_memif,role=server,socket=/run/mroce-memif.sock"
 *                     (memif role=auto: server unless one listens already)
 *                     or "net_af_packet,iface=eth1"; unset: the first port
 *                     EAL found
 *   MROCE_DPDK_NEIGH  static neighbours "IP=MAC,IP=MAC"; other peers are
 *                     resolved by ARP or IPv6 Neighbor Discovery, whose
 *                     requests for our address the link answers
 *   MROCE_DPDK_MAC    the port's MAC, overriding what the PMD reports
 * One queue pair on one port, one DPDK device per process (EAL initialises
 * once per process).  The IPv4 and UDP checksums go to the port where it
 * offers the offload (MROCE_DPDK_OFFLOAD=0: never), software otherwise,
 * except the UDP checksum over IPv4, which is then sent as 0 (WIRE-13;
 * MROCE_DPDK_UDP_CSUM=1: summed); a non-zero one received is checked.
 * Transmit attaches zero-copy payloads from registered memory where the
 * PMD allows (MROCE_DPDK_ZC=0: always copy; dpdk_tx.c).  The files:
 * dpdk_int.h.
 */
#ifndef MROCE_DPDK_LINK_H
#define MROCE_DPDK_LINK_H

#include <stddef.h>
#include <sys/socket.h>

#include "link.h"

#pragma GCC visibility push(hidden)

/* Opens the DPDK port for a device at `local` (address and port).  Returns
 * 0 and fills *l, or a negative MROCE_E* code with a one-line cause
 * (e.g. "rte_eal_init failed: Permission denied") written into err. */
int mroce_dpdk_link_open(struct mroce_link *l,
                         const struct sockaddr_storage *local, char *err,
                         size_t errlen);

#pragma GCC visibility pop

#endif /* MROCE_DPDK_LINK_H */
