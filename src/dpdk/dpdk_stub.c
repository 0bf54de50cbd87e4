/*
 * dpdk_stub.c - the DPDK datapath's entry point in a build without DPDK
 * (pkg-config found no libdpdk): opening it fails with a message saying
 * how to get it, and the socket datapath is unaffected.
 */
#include <stdio.h>

#include <mroce/mroce.h>

#include "dpdk_link.h"

int mroce_dpdk_link_open(struct mroce_link *l,
                         const struct sockaddr_storage *local, char *err,
                         size_t errlen)
{
    (void)l;
    (void)local;
    snprintf(err, errlen,
             "libmroce was built without DPDK (install libdpdk-dev and "
             "rebuild)");
    return MROCE_EDATAPATH;
}
