/*
 * planes.c - what the planes cases (cases_planes.c) need of the tester's
 * sockets: PLANES entries (connection.md CONN-28) that name them, so that
 * the tester, on one address, can play a peer with several planes whose
 * plane i is one of its own sockets.
 */
#include <arpa/inet.h>
#include <string.h>

#include "ct_int.h"

void ct_plane_entry(const struct ct *t, int e, struct mrw_plane_addr *out)
{
    const struct ct_net *n = &t->run->net;
    struct in_addr v4;

    memset(out, 0, sizeof(*out));
    if (n->family == AF_INET) {
        if (inet_pton(AF_INET, n->local, &v4) == 1) {
            out->addr[10] = out->addr[11] = 0xff;
            memcpy(out->addr + 12, &v4, 4);
        }
    } else {
        (void)inet_pton(AF_INET6, n->local, out->addr);
    }
    out->port = e < 0 || e >= n->nent ? n->main_port : n->eport[e];
}
