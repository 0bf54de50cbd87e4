/*
 * test_prov_multi_ep.c - several endpoints in one domain (fabtests'
 * fi_multi_ep): two domains of NEP endpoints each, every endpoint with
 * its own CQs and all of a domain's endpoints sharing one AV.  Each
 * endpoint must have a name of its own; every endpoint of one domain
 * sends to every endpoint of the other, eagerly and by rendezvous, and
 * each message must arrive, with its data, at the endpoint it was sent
 * to and from the source it came from.  Every endpoint writes (plain and
 * with remote CQ data) and reads, with its domain's registration as the
 * local descriptor, the peer domain's registration through every one of
 * the peer's endpoints: the data must land and read back, and the CQ data
 * must be reported by the endpoint addressed, from the writer, as must
 * the FI_RMA_EVENT entry of each plain READ and WRITE.  Closing
 * one endpoint leaves the others working.
 *
 * One process over 127.0.0.1; manual progress, or the progress thread
 * with "auto".  Needs FI_PROVIDER_PATH to name the directory of
 * libmroce-fi.so (CTest sets it).
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
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "prov_fi_test.h"

enum { NDOM = 2, NEP = 4, NSIZE = 2 };
static const size_t sizes[NSIZE] = {100, 100000}; /* eager, rendezvous */

struct side {
    struct fid_domain *dom;
    struct fid_av *av;
    struct fid_ep *ep[NEP];
    struct fid_cq *txcq[NEP], *rxcq[NEP];
    char name[NEP][64];
    size_t namelen[NEP];
    fi_addr_t addr[NDOM][NEP]; /* every endpoint, in this side's AV */
    struct fid_mr *mr;         /* over buf */
    unsigned char *buf;        /* [NEP][NEP][NSIZE] receive slots, then
                                  the same for sends, then the RMA area */
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct side sd[NDOM];
static size_t slot_len;

static unsigned char *rx_slot(int s, int e, int from, int z)
{
    return sd[s].buf +
           (((size_t)e * NEP + (size_t)from) * NSIZE + (size_t)z) * slot_len;
}
static unsigned char *tx_slot(int s, int e, int to, int z)
{
    return rx_slot(s, e, to, z) + (size_t)NEP * NEP * NSIZE * slot_len;
}
static unsigned char *rma_area(int s)
{
    return sd[s].buf + 2 * (size_t)NEP * NEP * NSIZE * slot_len;
}

static unsigned char pattern(int s, int e, int to, int z, size_t i)
{
    return (unsigned char)(s * 101 + e * 37 + to * 17 + z * 7 + i * 13 + 1);
}

static uint64_t tag_of(int e, int to, int z)
{
    return (uint64_t)e << 16 | (uint64_t)to << 8 | (uint64_t)z;
}

/* Reads every CQ once; counts completions per endpoint and checks the
 * receives' sources and tags. */
static size_t tx_done[NDOM][NEP], rx_done[NDOM][NEP];
static uint64_t cq_data[NDOM][NEP]; /* last remote CQ data reported */
static size_t rma_ev[NDOM][NEP];    /* FI_RMA_EVENT entries */
static void poll_all(void)
{
    for (int s = 0; s < NDOM; s++)
        for (int e = 0; e < NEP; e++) {
            struct fi_cq_tagged_entry c[16];
            fi_addr_t src[16];
            if (!sd[s].ep[e])
                continue;
            ssize_t k = fi_cq_read(sd[s].txcq[e], c, 16);
            if (k > 0)
                tx_done[s][e] += (size_t)k;
            else if (k == -FI_EAVAIL) {
                struct fi_cq_err_entry err = {0};
                fi_cq_readerr(sd[s].txcq[e], &err, 0);
                fprintf(stderr, "side %d ep %d tx error: %s\n", s, e,
                        fi_strerror(err.err));
                failures++;
            }
            k = fi_cq_readfrom(sd[s].rxcq[e], c, 16, src);
            for (ssize_t i = 0; i < k; i++) {
                if (c[i].flags & FI_REMOTE_CQ_DATA) {
                    int from = (int)(c[i].data >> 8 & 0xff);
                    CHECK((c[i].data & 0xff) == (uint64_t)e);
                    CHECK(from < NEP && src[i] == sd[s].addr[1 - s][from]);
                    cq_data[s][e] = c[i].data;
                    continue;
                }
                if (c[i].flags & (FI_REMOTE_READ | FI_REMOTE_WRITE)) {
                    CHECK(c[i].flags & FI_RMA);
                    rma_ev[s][e]++;
                    continue;
                }
                int from = (int)(c[i].tag >> 16),
                    to = (int)(c[i].tag >> 8 & 0xff);
                CHECK(to == e); /* delivered to the endpoint it was sent to */
                CHECK(from < NEP && src[i] == sd[s].addr[1 - s][from]);
                rx_done[s][e]++;
            }
            if (k == -FI_EAVAIL) {
                struct fi_cq_err_entry err = {0};
                fi_cq_readerr(sd[s].rxcq[e], &err, 0);
                fprintf(stderr, "side %d ep %d rx error: %s\n", s, e,
                        fi_strerror(err.err));
                failures++;
            }
        }
}

static void retry_eagain(ssize_t (*post)(int, int, int, int), int s, int e,
                         int peer, int z)
{
    ssize_t rc;
    double t0 = now_s();
    while ((rc = post(s, e, peer, z)) == -FI_EAGAIN && now_s() - t0 < 10)
        poll_all();
    CHECK(rc == 0);
}

static ssize_t post_recv(int s, int e, int from, int z)
{
    return fi_trecv(sd[s].ep[e], rx_slot(s, e, from, z), sizes[z],
                    fi_mr_desc(sd[s].mr), sd[s].addr[1 - s][from],
                    tag_of(from, e, z), 0, NULL);
}

static ssize_t post_send(int s, int e, int to, int z)
{
    unsigned char *b = tx_slot(s, e, to, z);
    for (size_t i = 0; i < sizes[z]; i++)
        b[i] = pattern(s, e, to, z, i);
    return fi_tsend(sd[s].ep[e], b, sizes[z], fi_mr_desc(sd[s].mr),
                    sd[s].addr[1 - s][to], tag_of(e, to, z), NULL);
}

/* One round: every live endpoint receives from and sends to every live
 * endpoint of the other side, at every size; then the data is checked. */
static void exchange(void)
{
    size_t want_tx[NDOM][NEP], want_rx[NDOM][NEP];
    for (int s = 0; s < NDOM; s++)
        for (int e = 0; e < NEP; e++) {
            want_tx[s][e] = tx_done[s][e];
            want_rx[s][e] = rx_done[s][e];
        }
    for (int s = 0; s < NDOM; s++)
        for (int e = 0; e < NEP; e++)
            for (int p = 0; p < NEP && sd[s].ep[e]; p++)
                for (int z = 0; z < NSIZE && sd[1 - s].ep[p]; z++) {
                    memset(rx_slot(s, e, p, z), 0, sizes[z]);
                    retry_eagain(post_recv, s, e, p, z);
                    want_rx[s][e]++;
                }
    for (int s = 0; s < NDOM; s++)
        for (int e = 0; e < NEP; e++)
            for (int p = 0; p < NEP && sd[s].ep[e]; p++)
                for (int z = 0; z < NSIZE && sd[1 - s].ep[p]; z++) {
                    retry_eagain(post_send, s, e, p, z);
                    want_tx[s][e]++;
                }
    double t0 = now_s();
    for (;;) {
        int ok = 1;
        for (int s = 0; s < NDOM; s++)
            for (int e = 0; e < NEP; e++)
                if (tx_done[s][e] < want_tx[s][e] ||
                    rx_done[s][e] < want_rx[s][e])
                    ok = 0;
        if (ok)
            break;
        if (now_s() - t0 > 30) {
            fprintf(stderr, "exchange: completions missing\n");
            failures++;
            return;
        }
        poll_all();
    }
    int bad = 0;
    for (int s = 0; s < NDOM; s++)
        for (int e = 0; e < NEP; e++)
            for (int p = 0; p < NEP && sd[s].ep[e]; p++)
                for (int z = 0; z < NSIZE && sd[1 - s].ep[p]; z++) {
                    const unsigned char *b = rx_slot(s, e, p, z);
                    for (size_t i = 0; i < sizes[z]; i++)
                        if (b[i] != pattern(1 - s, p, e, z, i)) {
                            bad++;
                            break;
                        }
                }
    CHECK(bad == 0);
}

static void open_side(int s)
{
    struct side *x = &sd[s];
    DIE_IF(fi_domain(fabric, info, &x->dom, NULL), "fi_domain");
    struct fi_av_attr av = {.type = FI_AV_TABLE};
    DIE_IF(fi_av_open(x->dom, &av, &x->av, NULL), "fi_av_open");
    size_t len = 3 * (size_t)NEP * NEP * NSIZE * slot_len;
    x->buf = calloc(1, len);
    DIE_IF(fi_mr_reg(x->dom, x->buf, len,
                     FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
                         FI_REMOTE_WRITE,
                     0, 0, 0, &x->mr, NULL),
           "fi_mr_reg");
    struct fi_cq_attr cq = {.format = FI_CQ_FORMAT_TAGGED,
                            .wait_obj = FI_WAIT_NONE};
    for (int e = 0; e < NEP; e++) {
        DIE_IF(fi_cq_open(x->dom, &cq, &x->txcq[e], NULL), "fi_cq_open");
        DIE_IF(fi_cq_open(x->dom, &cq, &x->rxcq[e], NULL), "fi_cq_open");
        DIE_IF(fi_endpoint(x->dom, info, &x->ep[e], NULL), "fi_endpoint");
        DIE_IF(fi_ep_bind(x->ep[e], &x->av->fid, 0), "bind av");
        DIE_IF(fi_ep_bind(x->ep[e], &x->txcq[e]->fid, FI_TRANSMIT), "bind tx");
        DIE_IF(fi_ep_bind(x->ep[e], &x->rxcq[e]->fid, FI_RECV), "bind rx");
        DIE_IF(fi_enable(x->ep[e]), "fi_enable");
        x->namelen[e] = sizeof(x->name[e]);
        DIE_IF(fi_getname(&x->ep[e]->fid, x->name[e], &x->namelen[e]),
               "fi_getname");
    }
}

static void close_ep(int s, int e)
{
    CHECK(fi_close(&sd[s].ep[e]->fid) == 0);
    sd[s].ep[e] = NULL;
    CHECK(fi_close(&sd[s].txcq[e]->fid) == 0);
    CHECK(fi_close(&sd[s].rxcq[e]->fid) == 0);
}

/* Waits until endpoint e of side s has done n sends in all. */
static void wait_tx(int s, int e, size_t n)
{
    double t0 = now_s();
    while (tx_done[s][e] < n && now_s() - t0 < 20)
        poll_all();
    CHECK(tx_done[s][e] == n);
}

/* Endpoint e of side s writes, writes with CQ data, then reads the RMA
 * area of the peer side through the peer's endpoint te, its local buffer
 * described by its domain's MR. */
static void rma_check(int s, int e, int te)
{
    int t = 1 - s;
    size_t len = slot_len;
    unsigned char *src = rma_area(s), *dst = rma_area(t);
    fi_addr_t to = sd[s].addr[t][te];
    uint64_t key = fi_mr_key(sd[t].mr);
    for (size_t i = 0; i < len; i++)
        src[i] = (unsigned char)(i * 3 + (size_t)(e * NEP + te));
    memset(dst, 0, len);
    size_t tx0 = tx_done[s][e], ev0 = rma_ev[t][te];
    ssize_t rc = fi_write(sd[s].ep[e], src, len, fi_mr_desc(sd[s].mr), to,
                          (uintptr_t)dst, key, NULL);
    CHECK(rc == 0);
    wait_tx(s, e, tx0 + 1);
    CHECK(memcmp(src, dst, len) == 0);
    /* With CQ data: reported at te once the data is in place. */
    uint64_t data = 0x10000u | (uint64_t)e << 8 | (uint64_t)te;
    memset(dst, 0, len);
    rc = fi_writedata(sd[s].ep[e], src, len, fi_mr_desc(sd[s].mr), data, to,
                      (uintptr_t)dst, key, NULL);
    CHECK(rc == 0);
    wait_tx(s, e, tx0 + 2);
    double t0 = now_s();
    while (cq_data[t][te] != data && now_s() - t0 < 20)
        poll_all();
    CHECK(cq_data[t][te] == data);
    CHECK(memcmp(src, dst, len) == 0);
    memset(src, 0, len);
    rc = fi_read(sd[s].ep[e], src, len, fi_mr_desc(sd[s].mr), to,
                 (uintptr_t)dst, key, NULL);
    CHECK(rc == 0);
    wait_tx(s, e, tx0 + 3);
    CHECK(memcmp(src, dst, len) == 0);
    /* The plain WRITE's and the READ's events, at te (the WRITE with CQ
     * data is reported by its CQ data alone). */
    t0 = now_s();
    while (rma_ev[t][te] < ev0 + 2 && now_s() - t0 < 20)
        poll_all();
    CHECK(rma_ev[t][te] == ev0 + 2);
}

int main(int argc, char **argv)
{
    int autoprog = argc > 1 && !strcmp(argv[1], "auto");
    prov_keep_mapped();
    info = prov_getinfo(FI_MSG | FI_TAGGED | FI_RMA | FI_RMA_EVENT |
                            FI_DIRECTED_RECV,
                        autoprog, &fabric);
    CHECK(info->domain_attr->ep_cnt >= NEP);
    slot_len = sizes[NSIZE - 1];
    for (int s = 0; s < NDOM; s++)
        open_side(s);
    /* Every endpoint its own name. */
    for (int a = 0; a < NDOM * NEP; a++)
        for (int b = a + 1; b < NDOM * NEP; b++) {
            struct side *x = &sd[a / NEP], *y = &sd[b / NEP];
            CHECK(x->namelen[a % NEP] != y->namelen[b % NEP] ||
                  memcmp(x->name[a % NEP], y->name[b % NEP],
                         x->namelen[a % NEP]));
        }
    for (int s = 0; s < NDOM; s++)
        for (int t = 0; t < NDOM; t++)
            for (int e = 0; e < NEP; e++)
                CHECK(fi_av_insert(sd[s].av, sd[t].name[e], 1,
                                   &sd[s].addr[t][e], 0, NULL) == 1);
    exchange();
    for (int s = 0; s < NDOM; s++)
        for (int e = 0; e < NEP; e++)
            for (int te = 0; te < NEP; te++)
                rma_check(s, e, te);
    /* A closed endpoint leaves the others as they were (the second's
     * device is its own, the first's the domain's). */
    close_ep(0, 1);
    close_ep(1, 0);
    exchange();
    for (int s = 0; s < NDOM; s++)
        for (int e = 0; e < NEP; e++)
            if (sd[s].ep[e])
                close_ep(s, e);
    for (int s = 0; s < NDOM; s++) {
        CHECK(fi_close(&sd[s].mr->fid) == 0);
        CHECK(fi_close(&sd[s].av->fid) == 0);
        CHECK(fi_close(&sd[s].dom->fid) == 0);
        free(sd[s].buf);
    }
    fi_close(&fabric->fid);
    fi_freeinfo(info);
    if (failures)
        fprintf(stderr, "test_prov_multi_ep: %d check(s) failed\n", failures);
    else
        printf("test_prov_multi_ep: %d endpoints per domain, all exchanges "
               "and RMA checked\n",
               NEP);
    return failures != 0;
}
