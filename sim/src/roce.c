/*
 * roce.c - the RoCEv2 baseline: a model of a commodity RDMA NIC inside the
 * simulator (not a wire-compatible implementation).
 *
 * What is modelled, per RC queue pair (one per ordered host pair):
 *   - one network path: every packet of the QP carries the same UDP source
 *     port, so ECMP pins the QP to one path (and hash collisions stay);
 *   - go-back-N: the receiver accepts only the next expected PSN, sends one
 *     NAK (sequence error) per gap and drops everything out of order; the
 *     sender rewinds to the NAKed PSN, or to the oldest unacknowledged one
 *     on a retransmission timeout (fixed roce_rto, no backoff; after
 *     roce_retry consecutive timeouts without progress the QP goes to error
 *     and its messages never complete, as on a real NIC);
 *   - ACKs coalesced every roce_ack_every packets and on the last packet of
 *     each message;
 *   - DCQCN (Zhu et al., SIGCOMM 2015) rate control: the receiver (NP) sends
 *     a CNP for a CE-marked packet at most once per 50 us per QP; the sender
 *     (RP) cuts Rc by alpha/2, then recovers through fast recovery,
 *     additive and hyper increase on a 55 us timer and a byte counter; alpha
 *     decays every 55 us.  Timers are evaluated lazily when the QP is about
 *     to send, which is when their effect is observable;
 *   - optional PFC is a property of the fabric (fabric.c), enabled by the
 *     transport "roce_pfc".
 * Header overhead: BTH + ICRC (16 B) inside UDP/IP/Ethernet; ACK/NAK/CNP are
 * 66-byte frames and bypass the data queue at the NIC.
 *
 * host.c calls in here for the baseline's packets; when a QP has something
 * to send again, this asks the host's NIC to pull through the host
 * interface (s->host_if.ready), as the fabric does, not by calling back
 * into host.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define DCQCN_G (1.0 / 256)
#define DCQCN_PERIOD_PS (55 * PS_PER_US)
#define DCQCN_F 5
#define DCQCN_BC (10u << 20)
#define CNP_INTERVAL_PS (50 * PS_PER_US)
#define CTRL_WIRE (ROCE_HDR + 4 + FRAME_OVERHEAD)

struct rmsg {
    uint32_t msg, npkts;
    uint64_t first;
};

struct rqp {
    uint32_t src, dst;
    uint16_t entropy;
    uint8_t active, dead, rto_pending;
    /* sender */
    struct rmsg *mq; /* messages in PSN order; [mq_head, mq_n) live */
    uint32_t mq_head, mq_n, mq_cap, tx_mi;
    uint64_t una, nxt, end, hi;
    uint64_t next_tx, rto_at;
    uint32_t retries;
    double rc, rt, alpha;
    uint64_t t_alpha, t_inc, bytes_since;
    uint32_t inc_t, inc_b;
    /* receiver side of the same flow */
    uint64_t epsn, last_cnp;
    uint32_t since_ack;
    uint8_t nak_sent, cnp_sent;
    /* counts for the trace (roce_trace_rows) */
    uint64_t tx_data, tx_retx, ce_rx;
};

static struct rqp *get_qp(struct sim *s, uint32_t src, uint32_t dst,
                          uint32_t *idx)
{
    struct host *h = &s->hosts[src];
    if (!h->rqp_by_peer) {
        h->rqp_by_peer = malloc(s->nhosts * sizeof(uint32_t));
        if (!h->rqp_by_peer)
            return NULL;
        memset(h->rqp_by_peer, 0xff, s->nhosts * sizeof(uint32_t));
    }
    uint32_t i = h->rqp_by_peer[dst];
    if (i == NONE32) {
        if (s->nrqps == s->caprqps) {
            uint32_t nc = s->caprqps ? 2 * s->caprqps : 256;
            struct rqp *n = realloc(s->rqps, nc * sizeof(*n));
            if (!n)
                return NULL;
            s->rqps = n;
            s->caprqps = nc;
        }
        i = s->nrqps++;
        struct rqp *q = &s->rqps[i];
        memset(q, 0, sizeof(*q));
        q->src = src;
        q->dst = dst;
        q->entropy = (uint16_t)(49152 + rng_next(&h->rng) % 16384);
        q->rc = q->rt = (double)s->links[h->uplink].rate_bps;
        q->alpha = 1.0;
        q->rto_at = T_INF;
        h->rqp_by_peer[dst] = i;
        s->nqps++;
    }
    *idx = i;
    return &s->rqps[i];
}

static void act_add(struct host *h, uint32_t qi)
{
    if (h->nact == h->capact) {
        uint32_t nc = h->capact ? 2 * h->capact : 8;
        uint32_t *n = realloc(h->act, nc * sizeof(*n));
        if (!n) {
            fprintf(stderr, "mroce-sim: out of memory\n");
            exit(2);
        }
        h->act = n;
        h->capact = nc;
    }
    h->act[h->nact++] = qi;
}

int roce_post(struct sim *s, uint32_t m)
{
    const struct msg *mm = &s->msgs[m];
    uint32_t qi;
    struct rqp *q = get_qp(s, mm->src, mm->dst, &qi);
    if (!q)
        return -1;
    if (q->mq_n == q->mq_cap) {
        if (q->mq_head > q->mq_n / 2) {
            memmove(q->mq, q->mq + q->mq_head,
                    (q->mq_n - q->mq_head) * sizeof(*q->mq));
            q->mq_n -= q->mq_head;
            /* on_ack() advances mq_head before it lifts tx_mi, and the
             * workload may post from inside that loop: tx_mi can be
             * behind mq_head here, and then the cursor starts at the head */
            q->tx_mi = q->tx_mi > q->mq_head ? q->tx_mi - q->mq_head : 0;
            q->mq_head = 0;
        } else {
            uint32_t nc = q->mq_cap ? 2 * q->mq_cap : 8;
            struct rmsg *n = realloc(q->mq, nc * sizeof(*n));
            if (!n)
                return -1;
            q->mq = n;
            q->mq_cap = nc;
        }
    }
    uint32_t mtu = s->sc->mtu;
    uint32_t npkts = mm->bytes ? (mm->bytes + mtu - 1) / mtu : 1;
    q->mq[q->mq_n++] = (struct rmsg){m, npkts, q->end};
    q->end += npkts;
    struct host *h = &s->hosts[mm->src];
    if (!q->active) {
        q->active = 1;
        act_add(h, qi);
    }
    s->host_if.ready(s, h->id);
    return 0;
}

static void ctrl_send(struct sim *s, uint32_t from, uint32_t to, uint8_t kind,
                      uint32_t qi, uint64_t psn)
{
    struct host *h = &s->hosts[from];
    struct pkt *p = pkt_alloc(s);
    p->kind = kind;
    p->src = from;
    p->dst = to;
    p->qp = qi;
    p->psn = psn;
    p->entropy = s->rqps[qi].entropy;
    p->ecn = MROCE_ECN_NOT_ECT;
    p->len = ROCE_HDR + 4;
    p->wire = CTRL_WIRE;
    p->next = NULL;
    if (h->cq_t)
        h->cq_t->next = p;
    else
        h->cq_h = p;
    h->cq_t = p;
    s->host_if.ready(s, h->id);
}

static void dcqcn_increase(struct sim *s, struct rqp *q, double line)
{
    (void)s;
    uint32_t mx = q->inc_t > q->inc_b ? q->inc_t : q->inc_b;
    uint32_t mn = q->inc_t < q->inc_b ? q->inc_t : q->inc_b;
    if (mx >= DCQCN_F) {
        if (mn > DCQCN_F)
            q->rt += line / 200; /* hyper increase */
        else
            q->rt += line / 1000; /* additive increase */
        if (q->rt > line)
            q->rt = line;
    }
    q->rc = (q->rt + q->rc) / 2;
    if (q->rc > line)
        q->rc = line;
}

/* Bring the DCQCN timers of q up to now. */
static void dcqcn_catch_up(struct sim *s, struct rqp *q, double line)
{
    if (s->now >= q->t_alpha && q->t_alpha) {
        uint64_t n = (s->now - q->t_alpha) / DCQCN_PERIOD_PS + 1;
        q->alpha *= pow(1.0 - DCQCN_G, (double)n);
        q->t_alpha += n * DCQCN_PERIOD_PS;
    }
    while (q->t_inc && s->now >= q->t_inc) {
        if (q->rc >= line) {
            q->t_inc = 0;
            break;
        }
        q->inc_t++;
        dcqcn_increase(s, q, line);
        q->t_inc += DCQCN_PERIOD_PS;
    }
}

static void dcqcn_cut(struct sim *s, struct rqp *q, double line)
{
    dcqcn_catch_up(s, q, line);
    q->rt = q->rc;
    q->rc *= 1.0 - q->alpha / 2;
    if (q->rc < line / 1000)
        q->rc = line / 1000;
    q->alpha = (1.0 - DCQCN_G) * q->alpha + DCQCN_G;
    q->t_alpha = s->now + DCQCN_PERIOD_PS;
    q->t_inc = s->now + DCQCN_PERIOD_PS;
    q->inc_t = q->inc_b = 0;
    q->bytes_since = 0;
}

static void rewind_cursor(struct rqp *q)
{
    q->tx_mi = q->mq_head;
    while (q->tx_mi < q->mq_n &&
           q->nxt >= q->mq[q->tx_mi].first + q->mq[q->tx_mi].npkts)
        q->tx_mi++;
}

static void arm_rto(struct sim *s, uint32_t qi)
{
    struct rqp *q = &s->rqps[qi];
    q->rto_at = s->now + s->sc->roce_rto_ps;
    if (!q->rto_pending) {
        q->rto_pending = 1;
        sim_schedule(s, q->rto_at, EV_RTO, qi);
    }
}

static struct pkt *make_data(struct sim *s, uint32_t qi)
{
    struct rqp *q = &s->rqps[qi];
    while (q->nxt >= q->mq[q->tx_mi].first + q->mq[q->tx_mi].npkts)
        q->tx_mi++;
    const struct rmsg *rm = &q->mq[q->tx_mi];
    const struct msg *mm = &s->msgs[rm->msg];
    uint32_t mtu = s->sc->mtu;
    uint64_t off = q->nxt - rm->first;
    uint32_t pay = mm->bytes - (uint32_t)off * mtu;
    if (pay > mtu)
        pay = mtu;
    struct pkt *p = pkt_alloc(s);
    p->kind = PK_RDATA;
    p->src = q->src;
    p->dst = q->dst;
    p->qp = qi;
    p->msg = rm->msg;
    p->psn = q->nxt;
    p->last = off + 1 == rm->npkts;
    p->entropy = q->entropy;
    p->ecn = s->tp->dcqcn ? MROCE_ECN_ECT0 : MROCE_ECN_NOT_ECT;
    p->len = pay + ROCE_HDR;
    p->wire = p->len + FRAME_OVERHEAD;
    if (q->nxt < q->hi) {
        s->retx_pkts++;
        q->tx_retx++;
    } else {
        q->hi = q->nxt + 1;
    }
    s->tx_data_pkts++;
    q->tx_data++;
    if (q->una == q->nxt || !q->rto_pending)
        arm_rto(s, qi);
    q->nxt++;
    double line = (double)s->links[s->hosts[q->src].uplink].rate_bps;
    if (s->tp->dcqcn) {
        q->next_tx = s->now + (uint64_t)((double)p->wire * 8e12 / q->rc);
        q->bytes_since += p->wire;
        if (q->bytes_since >= DCQCN_BC && q->rc < line) {
            q->bytes_since = 0;
            q->inc_b++;
            dcqcn_increase(s, q, line);
        }
    }
    return p;
}

struct pkt *roce_next_pkt(struct sim *s, struct host *h, uint64_t *wake)
{
    if (h->cq_h) {
        struct pkt *p = h->cq_h;
        h->cq_h = p->next;
        if (!h->cq_h)
            h->cq_t = NULL;
        return p;
    }
    uint32_t i = 0;
    while (i < h->nact) {
        uint32_t k = (h->rr + i) % h->nact;
        uint32_t qi = h->act[k];
        struct rqp *q = &s->rqps[qi];
        if (q->dead || q->una == q->end) {
            q->active = 0;
            h->act[k] = h->act[--h->nact];
            continue;
        }
        if (q->nxt < q->end) {
            if (s->tp->dcqcn)
                dcqcn_catch_up(s, q, (double)s->links[h->uplink].rate_bps);
            if (q->next_tx <= s->now) {
                h->rr = k + 1;
                return make_data(s, qi);
            }
            if (q->next_tx < *wake)
                *wake = q->next_tx;
        }
        i++;
    }
    return NULL;
}

static void on_ack(struct sim *s, uint32_t qi, uint64_t psn, int nak)
{
    struct rqp *q = &s->rqps[qi];
    if (psn > q->una) {
        q->una = psn;
        q->retries = 0;
        while (q->mq_head < q->mq_n &&
               q->mq[q->mq_head].first + q->mq[q->mq_head].npkts <= q->una) {
            uint32_t m = q->mq[q->mq_head].msg;
            q->mq_head++;
            /* the workload may post a message on a new QP, growing (and
             * moving) s->rqps */
            wl_on_sent(s, m);
            q = &s->rqps[qi];
        }
        if (q->tx_mi < q->mq_head)
            q->tx_mi = q->mq_head;
        if (q->una < q->nxt)
            arm_rto(s, qi);
        else
            q->rto_at = T_INF;
    }
    if (nak && q->nxt > psn) {
        q->nxt = psn;
        rewind_cursor(q);
        arm_rto(s, qi);
    }
    if (q->nxt < q->una) {
        q->nxt = q->una;
        rewind_cursor(q);
    }
}

void roce_on_pkt(struct sim *s, struct host *h, struct pkt *p)
{
    struct rqp *q = &s->rqps[p->qp];
    switch (p->kind) {
    case PK_RDATA:
        if (p->ecn == MROCE_ECN_CE)
            q->ce_rx++;
        if (p->ecn == MROCE_ECN_CE && s->tp->dcqcn &&
            (!q->cnp_sent || s->now - q->last_cnp >= CNP_INTERVAL_PS)) {
            q->cnp_sent = 1;
            q->last_cnp = s->now;
            ctrl_send(s, h->id, p->src, PK_RCNP, p->qp, 0);
        }
        if (p->psn == q->epsn) {
            q->epsn++;
            q->nak_sent = 0;
            if (++q->since_ack >= s->sc->roce_ack_every || p->last) {
                q->since_ack = 0;
                ctrl_send(s, h->id, p->src, PK_RACK, p->qp, q->epsn);
            }
            if (p->last)
                wl_on_recv(s, p->msg);
        } else if (p->psn > q->epsn) {
            if (!q->nak_sent) {
                q->nak_sent = 1;
                ctrl_send(s, h->id, p->src, PK_RNAK, p->qp, q->epsn);
            }
        } else {
            ctrl_send(s, h->id, p->src, PK_RACK, p->qp, q->epsn);
        }
        break;
    case PK_RACK:
    case PK_RNAK:
        on_ack(s, p->qp, p->psn, p->kind == PK_RNAK);
        s->host_if.ready(s, h->id);
        break;
    case PK_RCNP:
        dcqcn_cut(s, q, (double)s->links[h->uplink].rate_bps);
        break;
    }
    pkt_free(s, p);
}

void roce_on_rto(struct sim *s, uint32_t qi, uint64_t t)
{
    struct rqp *q = &s->rqps[qi];
    (void)t;
    q->rto_pending = 0;
    if (q->dead || q->rto_at == T_INF || q->una >= q->end)
        return;
    if (q->rto_at > s->now) {
        q->rto_pending = 1;
        sim_schedule(s, q->rto_at, EV_RTO, qi);
        return;
    }
    if (++q->retries > s->sc->roce_retry) {
        q->dead = 1;
        s->qp_errors++;
        return;
    }
    q->nxt = q->una;
    rewind_cursor(q);
    arm_rto(s, qi);
    struct host *h = &s->hosts[q->src];
    if (!q->active) {
        q->active = 1;
        act_add(h, qi);
    }
    s->host_if.ready(s, h->id);
}

void roce_free(struct sim *s)
{
    for (uint32_t i = 0; i < s->nrqps; i++)
        free(s->rqps[i].mq);
    free(s->rqps);
    s->rqps = NULL;
    s->nrqps = s->caprqps = 0;
}

uint32_t roce_qp_host(const struct sim *s, uint32_t qp)
{
    return s->rqps[qp].src;
}

/* The trace (MROCE_SIM_TRACE, host.c's columns): per sending QP its data
 * packets, CE marks seen by its receiver, retransmissions and its DCQCN
 * rate (or the line rate without DCQCN); no window, RTT or hint. */
void roce_trace_rows(struct sim *s, FILE *f, uint64_t t0)
{
    for (uint32_t i = 0; i < s->nrqps; i++) {
        const struct rqp *q = &s->rqps[i];
        if (!q->tx_data)
            continue;
        fprintf(f, "%.1f,%u,%u,%llu,%llu,%llu,0,0,%u,0,%llu\n",
                (double)(s->now - t0) / PS_PER_US, q->src, q->dst,
                (unsigned long long)q->tx_data, (unsigned long long)q->ce_rx,
                (unsigned long long)q->tx_retx, wl_outstanding(s, q->src),
                (unsigned long long)(q->rc / 1e6));
    }
}
