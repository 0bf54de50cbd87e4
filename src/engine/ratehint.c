/*
 * ratehint.c - the receiver's rate hint (CC-24..29).
 *
 * Receiver: every data packet from a peer that negotiated RATE marks that
 * sender active and counts its bytes.  The shares are recomputed when a
 * sender becomes active (so an incast's hints reflect every sender within
 * an RTT of its first packet) and once per quarter of the activity window
 * (rate_active, the endpoint's "few RTTs"), never per ACK: a max-min fair
 * division of the endpoint's receive rate (rx_rate_mbps) over the active
 * senders, by water-filling.  A sender's demand is twice its arrival rate
 * over the last interval (at least a quarter of the equal share), once it
 * has been active for a full interval (a new sender's demand is unknown,
 * so unlimited): senders held back elsewhere get what they use and room
 * to grow, the rest share what is left equally; if every sender is held
 * back, what is left is shared by all.  An interval holds at least
 * RH_INTERVAL_PKTS packets at the equal share.  Shares are rates, not windows, so senders of different
 * RTTs get the same share.  The passes are bounded (RH_PASSES): what is
 * still unfrozen after them shares the remainder equally.
 *
 * Sender: the hint caps the window at hint * srtt plus the packets a receiver may hold before it
 * acknowledges (it becomes peer_credit, which CC-2 already applies) and
 * paces data packets at the hint, so the senders' rates add up to the
 * receiver's even while their windows are one packet.
 */
#include "engine_int.h"
#include "../wire/seeded_fault.h"

#define RH_PASSES 4         /* water-filling passes per recomputation */
#define RH_INTERVAL_PKTS 16 /* packets at the equal share per interval */
#define RH_UTIL_PCT 95      /* of the receive rate the shares divide */
#define RH_SETTLE 8         /* intervals before a rate counts as a demand */

/* The rate the shares divide: with more than one active sender,
 * RH_UTIL_PCT of the receive rate, so that senders paced at their shares
 * leave the receiver's queue room to drain (at exactly the link's rate a
 * queue, once built, would stay); a lone sender gets the whole rate (its
 * window controller keeps its own queue short). */
static uint32_t rh_rate_for(const mre_ep *ep, uint32_t nactive)
{
    uint64_t r = ep->cfg.rx_rate_mbps;
    return (uint32_t)(nactive > 1 ? r * RH_UTIL_PCT / 100u : r);
}

static uint32_t rh_rate(const mre_ep *ep)
{
    return rh_rate_for(ep, ep->rh.nactive);
}

static mroce_tstamp rh_active_ns(const mre_ep *ep)
{
    return ep->cfg.rate_active ? ep->cfg.rate_active : MROCE_RH_ACTIVE_DEFAULT;
}

uint32_t mre_rh_conn_flags(const mre_qp *qp)
{
    return qp->attr.rate_hint && !MROCE_SEEDED_FAULT(RATE_NOT_NEGOTIATED)
               ? MROCE_CONN_RATE
               : 0;
}

void mre_rh_on_conn(mre_qp *qp, uint32_t peer_flags)
{
    qp->rh.on = qp->attr.rate_hint && (peer_flags & MROCE_CONN_RATE) != 0;
    qp->rh.hint = MROCE_CREDIT_UNLIMITED;
}

void mre_rh_on_data(mre_ep *ep, mre_qp *qp, size_t len, mroce_tstamp now)
{
    if (!qp->rh.on)
        return;
    if (!qp->rh.active) {
        qp->rh.active = 1;
        qp->rh.intervals = 0;
        qp->rh.rate = 0;
        ep->rh.nactive++;
        ep->rh.dirty = 1;
    }
    qp->rh.last = now;
    qp->rh.bytes += len;
}

/* The water-filling over the active senders; also ends the measurement
 * interval (when `measure`) and retires senders silent for rate_active. */
static void rh_recompute(mre_ep *ep, mroce_tstamp now, int measure)
{
    uint64_t left, dt = now - ep->rh.start;
    uint32_t nleft = 0, i, pass;

    for (i = 0; i < ep->nqps; i++) {
        mre_qp *q = ep->live[i];
        if (!q->rh.active)
            continue;
        if (q->rh.last + rh_active_ns(ep) < now) {
            q->rh.active = 0;
            continue;
        }
        if (measure && dt) {
            uint64_t r = q->rh.bytes * 8000u / dt; /* Mbit/s */
            q->rh.rate = r > UINT32_MAX ? UINT32_MAX : (uint32_t)r;
            q->rh.bytes = 0;
            if (q->rh.intervals < 255)
                q->rh.intervals++;
        }
        q->rh.frozen = 0;
        nleft++;
    }
    if (measure)
        ep->rh.start = now;
    left = rh_rate_for(ep, nleft);
    ep->rh.nactive = nleft; /* recounted: deleted QPs drop out here */
    /* Max-min: a sender whose demand is below the equal share of what is
     * left gets its demand; repeat with the rest. */
    for (pass = 0; pass < RH_PASSES && nleft; pass++) {
        uint64_t fair = left / nleft;
        int froze = 0;
        for (i = 0; i < ep->nqps; i++) {
            mre_qp *q = ep->live[i];
            uint64_t d;
            if (!q->rh.active || q->rh.frozen || q->rh.intervals < RH_SETTLE)
                continue;
            d = 4 * (uint64_t)q->rh.rate;
            if (d < fair / 4)
                d = fair / 4; /* room to resume after a pause */
            if (d < fair) {
                q->rh.share = d ? (uint32_t)d : 1;
                q->rh.frozen = 1;
                left -= q->rh.share;
                nleft--;
                froze = 1;
            }
        }
        if (!froze)
            break;
    }
    for (i = 0; i < ep->nqps; i++) {
        mre_qp *q = ep->live[i];
        uint64_t s;
        if (!q->rh.active)
            continue;
        if (!q->rh.frozen)
            s = left / nleft;
        else if (nleft == 0) /* all held back: share what is left too */
            s = q->rh.share + left / ep->rh.nactive;
        else
            continue;
        q->rh.share = s == 0               ? 1
                      : s > UINT32_MAX - 1 ? UINT32_MAX - 1
                                           : (uint32_t)s;
    }
    ep->rh.dirty = 0;
}

uint32_t mre_rh_share(mre_ep *ep, mre_qp *qp, mroce_tstamp now)
{
    if (!ep->cfg.rx_rate_mbps)
        return MROCE_CREDIT_UNLIMITED; /* this endpoint gives no hints */
    if (now >= ep->rh.next) {
        /* The next interval: a quarter of the activity window, and long
         * enough for RH_INTERVAL_PKTS full packets at the equal share, so
         * that a rate measured over it is not one packet more or less. */
        mroce_tstamp t = rh_active_ns(ep) / 4, tp;
        rh_recompute(ep, now, 1);
        tp = (mroce_tstamp)RH_INTERVAL_PKTS *
             ((uint64_t)qp->mtu + MROCE_MAX_DATA_HDR_LEN + MROCE_CRC_LEN) *
             8000u * (ep->rh.nactive ? ep->rh.nactive : 1) /
             (rh_rate(ep) ? rh_rate(ep) : 1);
        ep->rh.next = now + (tp > t ? tp : t);
    } else if (ep->rh.dirty) {
        rh_recompute(ep, now, 0);
    }
    if (!qp->rh.active)
        return rh_rate_for(ep, ep->rh.nactive + 1) /
               (ep->rh.nactive + 1); /* what it would get */
    return qp->rh.share +
           MROCE_SEEDED_FAULT(RATE_SHARE_LINK) * ep->cfg.rx_rate_mbps;
}

/* Pacing: the next packet may leave once now reaches pace_next less the
 * slack (rh_slack: two full packets' time at the hint, or a burst's), so
 * a sender may send that many back to back but not more, and its average
 * rate is the hint. */
static mroce_tstamp rh_pkt_time(const mre_qp *qp, size_t len)
{
    return (mroce_tstamp)len * 8000u / (qp->rh.pace ? qp->rh.pace : 1u);
}

/* Packets a sender may send back to back: two, or a whole burst of a
 * batching datapath (path_burst, PATH-3). */
static mroce_tstamp rh_slack(const mre_qp *qp)
{
    uint32_t n = qp->paths.burst > 2 ? qp->paths.burst : 2u;
    return n * rh_pkt_time(qp, (size_t)qp->mtu + MROCE_MAX_DATA_HDR_LEN +
                                   MROCE_CRC_LEN);
}

/* A hint of h Mbit/s over t ns is h * t / 8000 bytes. */
uint32_t mre_rh_on_hint(mre_qp *qp, uint32_t credit)
{
    uint32_t floor = (uint32_t)qp->mtu + MROCE_MAX_DATA_HDR_LEN + MROCE_CRC_LEN;
    mroce_tstamp t = qp->srtt ? qp->srtt : qp->cc.base_rtt;
    uint64_t cap;

    qp->rh.hint = credit == 0 ? 1 : credit; /* 0 would stop the sender */
    qp->rh.pace = qp->rh.hint;              /* CC-28: paced at the hint */
    /* The pacing clock owes at most one packet at the new hint: a sender
     * whose hint rises is not held to the slower clock it ran on. */
    if (qp->rh.hint != MROCE_CREDIT_UNLIMITED) {
        mroce_tstamp lim = qp->rh.last_send + rh_pkt_time(qp, floor) +
                           rh_slack(qp); /* pace_next - slack: next send */
        if (qp->rh.pace_next > lim)
            qp->rh.pace_next = lim;
    }
    if (credit == MROCE_CREDIT_UNLIMITED || MROCE_SEEDED_FAULT(RATE_NO_CAP))
        return MROCE_CREDIT_UNLIMITED;
    if (t == 0)
        return MROCE_CREDIT_UNLIMITED; /* no RTT yet: pacing alone */
    /* Plus the packets the receiver may hold before it acknowledges
     * (MROCE_ACK_FREQ): a window below that waits for its ACK delay. */
    cap = (uint64_t)qp->rh.hint * t / 8000u + (uint64_t)MROCE_ACK_FREQ * floor;
    if (cap < floor)
        return floor;
    return cap >= MROCE_CREDIT_UNLIMITED ? MROCE_CREDIT_UNLIMITED - 1
                                         : (uint32_t)cap;
}

int mre_rh_may_send(mre_qp *qp, mroce_tstamp now)
{
    mroce_tstamp slack;

    if (!qp->rh.on || qp->rh.hint == MROCE_CREDIT_UNLIMITED ||
        MROCE_SEEDED_FAULT(RATE_NO_PACE))
        return 1;
    slack = rh_slack(qp);
    if (now + slack >= qp->rh.pace_next)
        return 1;
    if (!qp->rh.pace_wait) {
        qp->rh.pace_wait = 1;
        mre_timer_update(qp->ep, qp); /* wake it when the clock allows */
    }
    return 0;
}

void mre_rh_on_sent(mre_qp *qp, size_t len, mroce_tstamp now)
{
    mroce_tstamp slack;

    if (!qp->rh.on || qp->rh.hint == MROCE_CREDIT_UNLIMITED)
        return;
    slack = rh_slack(qp);
    /* An idle sender earns no more than the two packets of slack. */
    if (qp->rh.pace_next + slack < now)
        qp->rh.pace_next = now - slack;
    qp->rh.pace_next += rh_pkt_time(qp, len);
    qp->rh.last_send = now;
}

mroce_tstamp mre_rh_deadline(const mre_qp *qp)
{
    mroce_tstamp slack;

    if (!qp->rh.pace_wait)
        return MROCE_TSTAMP_INF;
    slack = rh_slack(qp);
    return qp->rh.pace_next > slack ? qp->rh.pace_next - slack : 0;
}

void mre_rh_timer(mre_qp *qp, mroce_tstamp now)
{
    if (qp->rh.pace_wait && now >= mre_rh_deadline(qp))
        qp->rh.pace_wait = 0; /* the caller marks the QP ready */
}
