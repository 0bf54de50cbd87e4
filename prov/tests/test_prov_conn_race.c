/*
 * test_prov_conn_race.c - both domains of a pair connect at the same
 * moment (shared connections, FI_MROCE_SHARED_CONN=1; CONN-37,
 * prov/README.md "One connection per peer pair").  Two domains of NEP
 * endpoints in one process (manual progress, so neither side can see the
 * other's HELLO before it has posted its own first send): every endpoint
 * sends to every endpoint of the other side before any completion is
 * read, so each domain connects a QP of its own.  Each pair sends NMSG
 * messages under one tag, eager and rendezvous in turn, each carrying its
 * sequence number, and the receives are posted in order under that tag,
 * so a message that overtook an earlier one of its pair (sent on the
 * other QP) would land in the wrong receive.  Then a second round, after the tie-break has
 * had its time.  Checked: every message arrives, in order, with its data;
 * no completion fails; a race did happen (two QPs to the peer at some
 * point on one side); and in the end each domain holds exactly one QP to
 * the other.
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

enum { NDOM = 2, NEP = 2, NMSG = 8, BIG = 70000 };

struct side {
    struct fid_domain *dom;
    struct fid_av *av;
    struct fid_ep *ep[NEP];
    struct fid_cq *cq[NEP];
    char name[NEP][64];
    size_t namelen[NEP];
    fi_addr_t addr[NEP]; /* the other side's endpoints */
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct side sd[NDOM];
static unsigned char sbuf[NDOM][NEP][NEP][NMSG][BIG];
static unsigned char rbuf[NDOM][NEP][NEP][NMSG][BIG];
static size_t tx_done[NDOM], rx_done[NDOM];
static int rx_next[NDOM][NEP][NEP]; /* messages received, per pair */
static unsigned max_peer_qps[NDOM];
static struct mroce_fi_conn_ops *ops[NDOM];

static size_t size_of(int k)
{
    return k % 2 ? BIG : 64; /* rendezvous, eager */
}

static uint64_t tag_of(int from, int to)
{
    return 0x5000u | (uint64_t)from << 4 | (uint64_t)to;
}

/* Byte i of message k from endpoint e of side s to endpoint p. */
static unsigned char pattern(int s, int e, int p, int k, size_t i)
{
    return (unsigned char)(s * 97 + e * 31 + p * 7 + k * 3 + i * 13);
}

static unsigned peer_qps(int s)
{
    struct mroce_fi_conn_stats st;
    CHECK(ops[s]->stats(sd[s].dom, sd[1 - s].name[0], sd[1 - s].namelen[0],
                        &st) == 0);
    if (st.peer_qps > max_peer_qps[s])
        max_peer_qps[s] = st.peer_qps;
    return st.peer_qps;
}

/* Reads every CQ once.  A receive's context is its rbuf slot: the
 * sequence number in its first byte must be the slot's. */
static void poll_all(void)
{
    for (int s = 0; s < NDOM; s++)
        for (int e = 0; e < NEP; e++) {
            struct fi_cq_tagged_entry c[16];
            ssize_t k = fi_cq_read(sd[s].cq[e], c, 16);
            for (ssize_t i = 0; i < k; i++) {
                if (c[i].flags & FI_SEND) {
                    tx_done[s]++;
                    continue;
                }
                int from = (int)(c[i].tag >> 4 & 0xf);
                CHECK((int)(c[i].tag & 0xf) == e && from < NEP);
                if (from >= NEP)
                    continue;
                const unsigned char *b = c[i].op_context;
                int seq = b[0];
                /* The k-th receive posted under the pair's tag matches
                 * its k-th message (FI_ORDER_SAS); completions may come
                 * in any order (eager before an earlier rendezvous). */
                CHECK(b >= rbuf[s][e][from][0] &&
                      b <= rbuf[s][e][from][NMSG - 1]);
                CHECK(seq == (int)((size_t)(b - rbuf[s][e][from][0]) / BIG));
                CHECK(c[i].len == size_of(seq));
                for (size_t j = 1; j < size_of(seq) && seq < NMSG; j++)
                    if (b[j] != pattern(1 - s, from, e, seq, j)) {
                        CHECK(!"payload intact");
                        break;
                    }
                rx_next[s][e][from]++;
                rx_done[s]++;
            }
            if (k == -FI_EAVAIL) {
                struct fi_cq_err_entry err = {0};
                fi_cq_readerr(sd[s].cq[e], &err, 0);
                fprintf(stderr, "side %d ep %d: error %d (%s)\n", s, e, err.err,
                        fi_strerror(err.err));
                CHECK(!"no completion fails");
            }
        }
}

static void open_side(int s)
{
    struct side *x = &sd[s];
    DIE_IF(fi_domain(fabric, info, &x->dom, NULL), "fi_domain");
    struct fi_av_attr av = {.type = FI_AV_TABLE};
    DIE_IF(fi_av_open(x->dom, &av, &x->av, NULL), "fi_av_open");
    for (int e = 0; e < NEP; e++) {
        x->cq[e] = prov_cq_open(x->dom);
        x->namelen[e] = sizeof(x->name[e]);
        x->ep[e] = prov_ep_on(x->dom, info, x->av, x->cq[e], x->cq[e],
                              x->name[e], &x->namelen[e]);
    }
}

/* One round: messages k0..k1-1 of every pair, receives first. */
static void round_trip(int k0, int k1)
{
    for (int s = 0; s < NDOM; s++)
        for (int e = 0; e < NEP; e++)
            for (int p = 0; p < NEP; p++)
                for (int k = k0; k < k1; k++)
                    CHECK(fi_trecv(sd[s].ep[e], rbuf[s][e][p][k], BIG, NULL,
                                   FI_ADDR_UNSPEC, tag_of(p, e), 0,
                                   rbuf[s][e][p][k]) == 0);
    /* Side 0's first sends and side 1's, before either reads a CQ. */
    for (int k = k0; k < k1; k++)
        for (int e = 0; e < NEP; e++)
            for (int p = 0; p < NEP; p++)
                for (int s = 0; s < NDOM; s++) {
                    unsigned char *b = sbuf[s][e][p][k];
                    b[0] = (unsigned char)k;
                    for (size_t i = 1; i < size_of(k); i++)
                        b[i] = pattern(s, e, p, k, i);
                    ssize_t rc;
                    double t0 = now_s();
                    while ((rc = fi_tsend(sd[s].ep[e], b, size_of(k), NULL,
                                          sd[s].addr[p], tag_of(e, p), NULL)) ==
                               -FI_EAGAIN &&
                           now_s() - t0 < 10)
                        poll_all();
                    CHECK(rc == 0);
                }
    size_t want = (size_t)NEP * NEP * (size_t)(k1 - k0);
    static size_t tx0[NDOM], rx0[NDOM];
    double t0 = now_s();
    while (now_s() - t0 < 20) {
        poll_all();
        (void)peer_qps(0);
        (void)peer_qps(1);
        if (tx_done[0] - tx0[0] == want && tx_done[1] - tx0[1] == want &&
            rx_done[0] - rx0[0] == want && rx_done[1] - rx0[1] == want)
            break;
    }
    for (int s = 0; s < NDOM; s++) {
        CHECK(tx_done[s] - tx0[s] == want);
        CHECK(rx_done[s] - rx0[s] == want);
        tx0[s] = tx_done[s];
        rx0[s] = rx_done[s];
    }
}

/* Polls until both sides hold one QP to the other (the loser's close
 * takes an ACK round trip and a DISCONNECT), at most 5 s. */
static void settle(void)
{
    double t0 = now_s();
    while (now_s() - t0 < 5 && (peer_qps(0) != 1 || peer_qps(1) != 1))
        poll_all();
}

int main(void)
{
    prov_keep_mapped();
    info = prov_getinfo(FI_MSG | FI_TAGGED, 0, &fabric);
    for (int s = 0; s < NDOM; s++)
        open_side(s);
    for (int s = 0; s < NDOM; s++) {
        for (int e = 0; e < NEP; e++)
            CHECK(fi_av_insert(sd[s].av, sd[1 - s].name[e], 1, &sd[s].addr[e],
                               0, NULL) == 1);
        DIE_IF(fi_open_ops(&sd[s].dom->fid, MROCE_FI_CONN_OPS, 0,
                           (void **)&ops[s], NULL),
               "fi_open_ops");
    }
    round_trip(0, NMSG / 2);
    settle();
    unsigned raced = max_peer_qps[0] > 1 || max_peer_qps[1] > 1;
    round_trip(NMSG / 2, NMSG);
    settle();
    unsigned q0 = peer_qps(0), q1 = peer_qps(1);
    fprintf(stderr,
            "QPs to the peer: side 0 %u (at most %u), side 1 %u (at most "
            "%u)\n",
            q0, max_peer_qps[0], q1, max_peer_qps[1]);
    CHECK(raced); /* both connected: the case under test happened */
    CHECK(q0 == 1 && q1 == 1);
    for (int s = 0; s < NDOM; s++)
        for (int e = 0; e < NEP; e++)
            for (int p = 0; p < NEP; p++)
                CHECK(rx_next[s][e][p] == NMSG);
    for (int s = 0; s < NDOM; s++) {
        for (int e = 0; e < NEP; e++) {
            CHECK(fi_close(&sd[s].ep[e]->fid) == 0);
            CHECK(fi_close(&sd[s].cq[e]->fid) == 0);
        }
        CHECK(fi_close(&sd[s].av->fid) == 0);
        CHECK(fi_close(&sd[s].dom->fid) == 0);
    }
    fi_close(&fabric->fid);
    fi_freeinfo(info);
    if (failures)
        fprintf(stderr, "test_prov_conn_race: %d check(s) failed\n", failures);
    else
        printf("test_prov_conn_race: both domains connected at once; one QP "
               "per domain pair after the tie-break, %d x %d messages in "
               "order\n",
               NEP * NEP * NDOM, NMSG);
    return failures != 0;
}
