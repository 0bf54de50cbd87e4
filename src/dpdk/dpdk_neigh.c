/*
 * dpdk_neigh.c - the DPDK link's neighbour table: which MAC each peer
 * address is at.  Entries come from MROCE_DPDK_NEIGH (static), from the
 * source of every accepted frame and from ARP and Neighbor Discovery
 * answers (dpdk_rx.c); a peer not yet known is asked for and sent to
 * broadcast meanwhile.  The table is small and searched linearly: a
 * device talks to a few peers, and a full table replaces its oldest entry.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>

#include "dpdk_int.h"

const uint8_t dpdk_bcast_mac[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

int dpdk_neigh_parse_mac(const char *s, uint8_t mac[6])
{
    unsigned v[6];
    if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4],
               &v[5]) != 6)
        return -1;
    for (int i = 0; i < 6; i++) {
        if (v[i] > 255)
            return -1;
        mac[i] = (uint8_t)v[i];
    }
    return 0;
}

struct dpdk_neigh *dpdk_neigh_find(struct dlink *d, const uint8_t *ip)
{
    size_t al = d->family6 ? 16 : 4;
    for (unsigned i = 0; i < d->nneigh; i++)
        if (memcmp(d->neigh[i].ip, ip, al) == 0)
            return &d->neigh[i];
    return NULL;
}

/* The entry for ip, made (replacing the oldest when full) if missing. */
static struct dpdk_neigh *neigh_get(struct dlink *d, const uint8_t *ip)
{
    struct dpdk_neigh *n = dpdk_neigh_find(d, ip);
    if (n)
        return n;
    unsigned k = d->nneigh < DPDK_MAX_NEIGH ? d->nneigh++
                                            : d->neigh_next++ % DPDK_MAX_NEIGH;
    n = &d->neigh[k];
    memset(n, 0, sizeof *n);
    memcpy(n->ip, ip, d->family6 ? 16 : 4);
    return n;
}

void dpdk_neigh_set(struct dlink *d, const uint8_t *ip, const uint8_t *mac)
{
    struct dpdk_neigh *n = neigh_get(d, ip);
    memcpy(n->mac, mac, 6);
    n->resolved = 1;
}

int dpdk_neigh_parse(struct dlink *d, const char *spec)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        uint8_t ip[16] = {0}, mac[6];
        if (!eq)
            return -1;
        *eq = 0;
        if (inet_pton(d->family6 ? AF_INET6 : AF_INET, t, ip) != 1 ||
            dpdk_neigh_parse_mac(eq + 1, mac) < 0)
            return -1;
        dpdk_neigh_set(d, ip, mac);
    }
    return 0;
}

void dpdk_neigh_lookup(struct dlink *d, const uint8_t *ip, uint8_t mac[6])
{
    struct dpdk_neigh *n = neigh_get(d, ip);
    if (n->resolved) {
        memcpy(mac, n->mac, 6);
        return;
    }
    memcpy(mac, dpdk_bcast_mac, 6);
    uint64_t now = rte_get_tsc_cycles();
    if (n->asked && now - n->asked < rte_get_tsc_hz() / 10)
        return;
    n->asked = now;
    if (d->family6) {
        struct mroce_nd ns;
        memset(&ns, 0, sizeof ns);
        ns.type = MROCE_ND_SOLICIT;
        memcpy(ns.src, d->self.ip, 16);
        memcpy(ns.target, ip, 16);
        dpdk_tx_resolve(d, dpdk_bcast_mac, NULL, &ns);
        return;
    }
    struct mroce_arp a;
    memset(&a, 0, sizeof a);
    a.op = MROCE_ARP_REQUEST;
    memcpy(a.sha, d->self.mac, 6);
    memcpy(a.spa, d->self.ip, 4);
    memcpy(a.tpa, ip, 4);
    dpdk_tx_resolve(d, dpdk_bcast_mac, &a, NULL);
}
