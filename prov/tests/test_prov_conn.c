/*
 * test_prov_conn.c - how many libmroce connections a pair of domains
 * holds, read through the provider's introspection (mroce_fi_ext.h), while
 * every endpoint pair has traffic that completes, each completion on its
 * own endpoint's CQ.  Two domains of NEP endpoints in one process (as
 * test_prov_multi_ep); each endpoint sends tagged messages, eager and
 * rendezvous, to every endpoint of the other domain.
 *
 * With shared connections (FI_MROCE_SHARED_CONN=1: ctest prov_conn and
 * prov_conn_fault; prov/README.md "One connection per peer pair") every
 * endpoint is on its domain's device and, once one
 * endpoint of each side has heard from the other, all 16 endpoint pairs
 * share exactly one QP per pair of domains, with four listeners per
 * domain.  Without (the default; ctest prov_conn_per_ep) the counts
 * asserted are the other layout's: a device per endpoint, at least
 * one and at most two QPs per endpoint pair at each side, four listeners
 * per endpoint at most.  Also: unknown extension names, bad names and bad
 * arguments are refused.
 *
 * Needs FI_PROVIDER_PATH to name the directory of libmroce-fi.so.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "mroce_fi_ext.h"
#include "prov_fi_test.h"

enum { NDOM = 2, NEP = 4, NSIZE = 2 };
static const size_t sizes[NSIZE] = {64, 70000}; /* eager, rendezvous */

struct side {
    struct fid_domain *dom;
    struct fid_av *av;
    struct fid_ep *ep[NEP];
    struct fid_cq *txcq[NEP], *rxcq[NEP];
    char name[NEP][64];
    size_t namelen[NEP];
    fi_addr_t addr[NEP]; /* the other side's endpoints, in this AV */
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct side sd[NDOM];
static unsigned char rbuf[NDOM][NEP][NEP][NSIZE][70000];
static unsigned char sbuf[NDOM][NEP][NEP][NSIZE][70000];
static size_t tx_done[NDOM][NEP], rx_done[NDOM][NEP];
static int shared; /* FI_MROCE_SHARED_CONN (default 1) */

static uint64_t tag_of(int from, int to, int z)
{
    return (uint64_t)from << 16 | (uint64_t)to << 8 | (uint64_t)z;
}

/* Reads every CQ once; every receive must be one sent to its endpoint. */
static void poll_all(void)
{
    for (int s = 0; s < NDOM; s++)
        for (int e = 0; e < NEP; e++) {
            struct fi_cq_tagged_entry c[16];
            ssize_t k = fi_cq_read(sd[s].txcq[e], c, 16);
            for (ssize_t i = 0; i < k; i++) {
                CHECK(c[i].flags & FI_SEND);
                /* The context names the sending endpoint. */
                CHECK(c[i].op_context == &sd[s].ep[e]);
                tx_done[s][e]++;
            }
            CHECK(k > 0 || k == -FI_EAGAIN);
            k = fi_cq_read(sd[s].rxcq[e], c, 16);
            for (ssize_t i = 0; i < k; i++) {
                CHECK((int)(c[i].tag >> 8 & 0xff) == e);
                CHECK(c[i].op_context == &sd[s].rxcq[e]);
                rx_done[s][e]++;
            }
            CHECK(k > 0 || k == -FI_EAGAIN);
        }
}

static void open_ep(int s, int e)
{
    struct side *x = &sd[s];
    x->txcq[e] = prov_cq_open(x->dom);
    x->rxcq[e] = prov_cq_open(x->dom);
    x->namelen[e] = sizeof(x->name[e]);
    x->ep[e] = prov_ep_on(x->dom, info, x->av, x->txcq[e], x->rxcq[e],
                          x->name[e], &x->namelen[e]);
}

static void open_side(int s)
{
    struct side *x = &sd[s];
    DIE_IF(fi_domain(fabric, info, &x->dom, NULL), "fi_domain");
    struct fi_av_attr av = {.type = FI_AV_TABLE};
    DIE_IF(fi_av_open(x->dom, &av, &x->av, NULL), "fi_av_open");
    for (int e = 0; e < NEP; e++)
        open_ep(s, e);
}

/* The last endpoint of side 1 closes while the QP stays, and a new one
 * opens in its place (shared connections: the same index, so the same
 * name, and the closed one's buffers still posted on its stream): side
 * 0's endpoint 1 sends it an eager and a rendezvous message, which it
 * receives, and it answers. */
static void reopen(void)
{
    int e = NEP - 1;
    char old[64];
    size_t oldlen = sd[1].namelen[e];
    memcpy(old, sd[1].name[e], oldlen);
    CHECK(fi_close(&sd[1].ep[e]->fid) == 0);
    CHECK(fi_close(&sd[1].txcq[e]->fid) == 0);
    CHECK(fi_close(&sd[1].rxcq[e]->fid) == 0);
    open_ep(1, e);
    if (shared)
        CHECK(sd[1].namelen[e] == oldlen &&
              !memcmp(sd[1].name[e], old, oldlen));
    fi_addr_t to;
    CHECK(fi_av_insert(sd[0].av, sd[1].name[e], 1, &to, 0, NULL) == 1);
    static unsigned char out[NSIZE][70000], in[NSIZE][70000], back[8];
    unsigned char ans[8] = "answer";
    for (int z = 0; z < NSIZE; z++) {
        memset(out[z], 0x40 + z, sizeof(out[z]));
        CHECK(fi_trecv(sd[1].ep[e], in[z], sizes[z], NULL, FI_ADDR_UNSPEC,
                       7000 + (uint64_t)z, 0, NULL) == 0);
    }
    CHECK(fi_trecv(sd[0].ep[1], back, sizeof(back), NULL, FI_ADDR_UNSPEC, 7100,
                   0, NULL) == 0);
    for (int z = 0; z < NSIZE; z++)
        CHECK(fi_tsend(sd[0].ep[1], out[z], sizes[z], NULL, to,
                       7000 + (uint64_t)z, NULL) == 0);
    int tx0 = 0, rx1 = 0, tx1 = 0, rx0 = 0;
    struct fi_cq_tagged_entry c;
    double t0 = now_s();
    while ((tx0 < NSIZE || rx1 < NSIZE || !tx1 || !rx0) && now_s() - t0 < 10) {
        tx0 += fi_cq_read(sd[0].txcq[1], &c, 1) == 1;
        if (fi_cq_read(sd[1].rxcq[e], &c, 1) == 1 && ++rx1 == NSIZE)
            CHECK(fi_tsend(sd[1].ep[e], ans, sizeof(ans), NULL, sd[1].addr[1],
                           7100, NULL) == 0);
        tx1 += fi_cq_read(sd[1].txcq[e], &c, 1) == 1;
        rx0 += fi_cq_read(sd[0].rxcq[1], &c, 1) == 1;
    }
    CHECK(tx0 == NSIZE && rx1 == NSIZE && tx1 == 1 && rx0 == 1);
    for (int z = 0; z < NSIZE; z++)
        CHECK(!memcmp(in[z], out[z], sizes[z]));
    CHECK(!memcmp(back, ans, sizeof(ans)));
}

/* First contact: endpoint 0 of side 0 sends one message to endpoint 0 of
 * side 1, which receives it, so side 1 knows the QP before it sends. */
static void first_contact(void)
{
    static char m[8] = "hello", r[8];
    struct fi_cq_tagged_entry c;
    CHECK(fi_trecv(sd[1].ep[0], r, sizeof(r), NULL, FI_ADDR_UNSPEC, 1ull << 40,
                   0, r) == 0);
    CHECK(fi_tsend(sd[0].ep[0], m, sizeof(m), NULL, sd[0].addr[0], 1ull << 40,
                   m) == 0);
    int got_tx = 0, got_rx = 0;
    double t0 = now_s();
    while ((!got_tx || !got_rx) && now_s() - t0 < 10) {
        got_tx += fi_cq_read(sd[0].txcq[0], &c, 1) == 1;
        got_rx += fi_cq_read(sd[1].rxcq[0], &c, 1) == 1;
    }
    CHECK(got_tx && got_rx && !memcmp(m, r, sizeof(m)));
}

/* Every endpoint receives from and sends to every endpoint of the other
 * side at every size; waits for all completions and checks the data. */
static void exchange(void)
{
    for (int s = 0; s < NDOM; s++)
        for (int e = 0; e < NEP; e++)
            for (int p = 0; p < NEP; p++)
                for (int z = 0; z < NSIZE; z++) {
                    memset(rbuf[s][e][p][z], 0, sizes[z]);
                    CHECK(fi_trecv(sd[s].ep[e], rbuf[s][e][p][z], sizes[z],
                                   NULL, FI_ADDR_UNSPEC, tag_of(p, e, z), 0,
                                   &sd[s].rxcq[e]) == 0);
                }
    for (int s = 0; s < NDOM; s++)
        for (int e = 0; e < NEP; e++)
            for (int p = 0; p < NEP; p++)
                for (int z = 0; z < NSIZE; z++) {
                    unsigned char *b = sbuf[s][e][p][z];
                    for (size_t i = 0; i < sizes[z]; i++)
                        b[i] = (unsigned char)(s * 97 + e * 31 + p * 7 + z +
                                               i * 13);
                    ssize_t rc;
                    double t0 = now_s();
                    while ((rc = fi_tsend(sd[s].ep[e], b, sizes[z], NULL,
                                          sd[s].addr[p], tag_of(e, p, z),
                                          &sd[s].ep[e])) == -FI_EAGAIN &&
                           now_s() - t0 < 10)
                        poll_all();
                    CHECK(rc == 0);
                }
    double t0 = now_s();
    for (;;) {
        int ok = 1;
        for (int s = 0; s < NDOM; s++)
            for (int e = 0; e < NEP; e++)
                if (tx_done[s][e] < NEP * NSIZE || rx_done[s][e] < NEP * NSIZE)
                    ok = 0;
        if (ok || now_s() - t0 > 30)
            break;
        poll_all();
    }
    for (int s = 0; s < NDOM; s++)
        for (int e = 0; e < NEP; e++) {
            CHECK(tx_done[s][e] == NEP * NSIZE);
            CHECK(rx_done[s][e] == NEP * NSIZE);
            for (int p = 0; p < NEP; p++)
                for (int z = 0; z < NSIZE; z++)
                    CHECK(!memcmp(rbuf[s][e][p][z], sbuf[1 - s][p][e][z],
                                  sizes[z]));
        }
}

int main(void)
{
    const char *sc = getenv("FI_MROCE_SHARED_CONN");
    shared = !sc || atoi(sc) != 0;
    prov_keep_mapped();
    info = prov_getinfo(FI_MSG | FI_TAGGED, 0, &fabric);
    for (int s = 0; s < NDOM; s++)
        open_side(s);
    for (int s = 0; s < NDOM; s++)
        for (int e = 0; e < NEP; e++)
            CHECK(fi_av_insert(sd[s].av, sd[1 - s].name[e], 1, &sd[s].addr[e],
                               0, NULL) == 1);
    struct mroce_fi_conn_ops *ops = NULL;
    DIE_IF(fi_open_ops(&sd[0].dom->fid, MROCE_FI_CONN_OPS, 0, (void **)&ops,
                       NULL),
           "fi_open_ops");
    CHECK(ops->size == sizeof(*ops));
    void *none = NULL;
    CHECK(fi_open_ops(&sd[0].dom->fid, "no_such_ops", 0, &none, NULL) ==
          -FI_ENOSYS);
    struct mroce_fi_conn_stats st[NDOM];
    /* Before any traffic: no connection, listeners only. */
    CHECK(ops->stats(sd[0].dom, sd[1].name[0], sd[1].namelen[0], &st[0]) == 0);
    CHECK(st[0].endpoints == NEP && st[0].devices == (shared ? 1 : NEP));
    CHECK(st[0].qps == 0 && st[0].peer_qps == 0);
    if (shared)
        CHECK(st[0].listening == 4);
    else
        CHECK(st[0].listening > 0 && st[0].listening <= 4 * NEP);
    first_contact();
    exchange();
    for (int s = 0; s < NDOM; s++) {
        /* The peer domain named through any of its endpoints. */
        for (int p = 0; p < NEP; p++) {
            CHECK(ops->stats(sd[s].dom, sd[1 - s].name[p], sd[1 - s].namelen[p],
                             &st[s]) == 0);
            fprintf(stderr,
                    "domain %d: %u endpoints, %u devices, %u QPs, "
                    "%u to the peer domain, %u listening\n",
                    s, st[s].endpoints, st[s].devices, st[s].qps,
                    st[s].peer_qps, st[s].listening);
            if (shared) {
                /* One QP for the pair of domains, all 16 endpoint pairs
                 * on it. */
                CHECK(st[s].peer_qps == 1);
                CHECK(st[s].qps == 1);
                CHECK(st[s].devices == 1);
                CHECK(st[s].listening == 4);
                continue;
            }
            /* Each endpoint pair its own QP (two where both sides
             * connected before a HELLO arrived). */
            CHECK(st[s].peer_qps >= NEP * NEP &&
                  st[s].peer_qps <= 2 * NEP * NEP);
            CHECK(st[s].qps == st[s].peer_qps);
            CHECK(st[s].listening <= 4 * NEP);
        }
        /* Its own domain: none (no endpoint talked to a sibling). */
        CHECK(ops->stats(sd[s].dom, sd[s].name[1], sd[s].namelen[1], &st[s]) ==
              0);
        CHECK(st[s].peer_qps == 0);
    }
    reopen();
    CHECK(ops->stats(sd[0].dom, sd[1].name[0], sd[1].namelen[0], &st[0]) == 0);
    CHECK(st[0].endpoints == NEP);
    if (shared)
        CHECK(st[0].peer_qps == 1 && st[0].qps == 1);
    /* Bad arguments. */
    CHECK(ops->stats(sd[0].dom, sd[1].name[0], 1, &st[0]) == -FI_EINVAL);
    CHECK(ops->stats(sd[0].dom, NULL, 0, NULL) == -FI_EINVAL);
    CHECK(ops->stats(sd[0].dom, NULL, 0, &st[0]) == 0 && st[0].peer_qps == 0);
    for (int s = 0; s < NDOM; s++) {
        for (int e = 0; e < NEP; e++) {
            CHECK(fi_close(&sd[s].ep[e]->fid) == 0);
            CHECK(fi_close(&sd[s].txcq[e]->fid) == 0);
            CHECK(fi_close(&sd[s].rxcq[e]->fid) == 0);
        }
        CHECK(fi_close(&sd[s].av->fid) == 0);
        CHECK(fi_close(&sd[s].dom->fid) == 0);
    }
    fi_close(&fabric->fid);
    fi_freeinfo(info);
    if (failures)
        fprintf(stderr, "test_prov_conn: %d check(s) failed\n", failures);
    else
        printf("test_prov_conn: %d x %d endpoints, every pair's traffic on "
               "its own CQs, connections counted (%s)\n",
               NEP, NEP, shared ? "one QP per domain pair" : "per endpoint");
    return failures != 0;
}
