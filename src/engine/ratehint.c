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
 * still unfrozen after them shares the remainder equally.  The active
 * senders are kept in a list (ep->rh.act), so a recomputation reads them
 * only, not every QP of an endpoint that may hold thousands (a simulated
 * all-to-all); the division does not depend on their order.
 *
 * Sender: the hint caps the window at hint * srtt plus the packets a
 * receiver may hold before it acknowledges (it becomes peer_credit, which
 * CC-2 already applies) and paces data packets at the hint, so the
 * senders' rates add up to the receiver's even while their windows are
 * one packet.
 *
 * Long-haul senders (CC-52, RTT >= MROCE_CC_LONG_RTT): a window-limited
 * sender there sends in bursts an RTT apart, so it stays active for two
 * RTTs and its rate is measured over at least one.
 *
 * Asking first (CC-30..35): N senders that start at once cannot know of
 * each other, and N first windows overflow the receiver's queue before
 * any hint can act.  So a sender without a fresh share (none yet, or
 * idle for rate_active, after which the receiver no longer counts it)
 * first sends a share request, an ACK with ACK_REQ, and holds its data
 * until the answer or, if request or answer is lost, for at most about
 * two RTTs.  The receiver counts the requester active at once and holds
 * the answers of new senders for a short gather, so that requests
 * arriving together are answered together, each with the share of all
 * of them; the senders then start their pacing clocks at random points
 * within one packet at that share, so their first packets do not arrive
 * as one burst either.
 */
#include "engine_int.h"
#include "../wire/seeded_fault.h"

#define RH_PASSES 4         /* water-filling passes per recomputation */
#define RH_INTERVAL_PKTS 16 /* packets at the equal share per interval */
#define RH_UTIL_PCT 95      /* of the receive rate the shares divide */
#define RH_SETTLE 8         /* intervals before a rate counts as a demand */
#define RH_ACTIVE_PKTS 4    /* packets at its share a sender stays active */
#define RH_GATHER_DIV 8     /* the gather: rate_active / RH_GATHER_DIV */
#define RH_FIRST_PKTS 1     /* data packets behind a share request (CC-36) */

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

/* CC-52: the QP's RTT if it is a long-haul one (at least
 * MROCE_CC_LONG_RTT: its lowest RTT sample, or before a sample the
 * handshake's time), else 0.  The lowest sample, not srtt, so that a busy
 * host's scheduling delays do not make a data-centre peer long-haul. */
static mroce_tstamp rh_long_rtt(const mre_qp *qp)
{
    mroce_tstamp r = qp->min_rtt ? qp->min_rtt : qp->hs_rtt;
    return r >= MROCE_CC_LONG_RTT ? r : 0;
}

/* CC-34: how long a sender stays active (receiver) and its share fresh
 * (sender) after its last data packet: rate_active, and at least
 * RH_ACTIVE_PKTS full packets at `share` Mbit/s, so that a sender paced
 * at a small share is not retired between two of its packets; over a
 * long-haul RTT at least two RTTs (CC-52), since a window-limited sender
 * there is silent for most of each RTT. */
static mroce_tstamp rh_active_for(const mre_qp *qp, uint32_t share)
{
    mroce_tstamp a = rh_active_ns(qp->ep), p;

    if (2 * rh_long_rtt(qp) > a)
        a = 2 * rh_long_rtt(qp);

    if (share == 0 || share == MROCE_CREDIT_UNLIMITED ||
        MROCE_SEEDED_FAULT(RATE_ACTIVE_SHORT))
        return a;
    p = (mroce_tstamp)RH_ACTIVE_PKTS *
        ((uint64_t)qp->mtu + MROCE_MAX_DATA_HDR_LEN + MROCE_CRC_LEN) * 8000u /
        share;
    return p > a ? p : a;
}

uint32_t mre_rh_conn_flags(const mre_qp *qp)
{
    return qp->attr.rate_hint && !MROCE_SEEDED_FAULT(RATE_NOT_NEGOTIATED)
               ? MROCE_CONN_RATE
               : 0;
}

void mre_rh_on_conn(mre_qp *qp, uint32_t peer_flags)
{
    /* CONN-27: in effect only when both sides set RATE */
    qp->rh.on = qp->attr.rate_hint && ((peer_flags & MROCE_CONN_RATE) != 0 ||
                                       MROCE_SEEDED_FAULT(RATE_ONE_SIDED));
    qp->rh.hint = MROCE_CREDIT_UNLIMITED;
    qp->rh.ask = qp->rh.on && qp->attr.rate_hint >= 2;
    /* With asking, no share yet: it asks before its first data (CC-30). */
    qp->rh.grant = qp->rh.ask ? RH_G_NONE : RH_G_OPEN;
}

/* CC-33: how long a receiver holds the answers to new senders' share
 * requests, so that senders starting together hear the same share. */
static mroce_tstamp rh_gather_ns(const mre_ep *ep)
{
    return rh_active_ns(ep) / RH_GATHER_DIV;
}

/* CC-31: how long a sender waits for the answer to its share request:
 * two RTTs and the receiver's gather, or, before any RTT sample, the
 * QP's min_rto. */
static mroce_tstamp rh_ask_wait(const mre_qp *qp)
{
    mroce_tstamp r = qp->srtt ? 2 * qp->srtt : qp->attr.min_rto;
    return r + rh_gather_ns(qp->ep);
}

static void rh_act_add(mre_ep *ep, mre_qp *qp)
{
    ep->rh.act_pos[qp->slot] = ep->rh.nact;
    ep->rh.act[ep->rh.nact++] = qp;
}

static void rh_act_remove(mre_ep *ep, mre_qp *qp)
{
    uint32_t i = ep->rh.act_pos[qp->slot];
    mre_qp *last = ep->rh.act[--ep->rh.nact];
    ep->rh.act[i] = last;
    ep->rh.act_pos[last->slot] = i;
}

void mre_rh_forget(mre_ep *ep, mre_qp *qp)
{
    if (qp->rh.active)
        rh_act_remove(ep, qp);
}

void mre_rh_on_data(mre_ep *ep, mre_qp *qp, size_t len, mroce_tstamp now)
{
    if (!qp->rh.on)
        return;
    if (!qp->rh.active) {
        rh_act_add(ep, qp);
        qp->rh.active = 1;
        qp->rh.intervals = 0;
        qp->rh.rate = 0;
        qp->rh.mstart = now;
        ep->rh.nactive++;
        ep->rh.dirty = 1;
    }
    qp->rh.last = now;
    qp->rh.bytes += len;
}

static void rh_recompute(mre_ep *ep, mroce_tstamp now, int measure);

int mre_rh_on_request(mre_ep *ep, mre_qp *qp, mroce_tstamp now)
{
    int was = qp->rh.active;
    mroce_tstamp g = rh_gather_ns(ep);

    if (!qp->rh.on || !ep->cfg.rx_rate_mbps)
        return 0; /* a keepalive, answered as one (REL-35) */
    if (!MROCE_SEEDED_FAULT(RATE_REQ_NOT_ACTIVE))
        mre_rh_on_data(ep, qp, 0, now); /* CC-32: an active sender now */
    if (was || !g || MROCE_SEEDED_FAULT(RATE_NO_GATHER))
        return 0; /* answered at once, with the share as it is */
    /* CC-37: a lone sender, no gather open: nobody to wait for (the
     * count recomputed first, so senders since retired do not count). */
    if (ep->rh.nactive > 1 && ep->rh.gather_end <= now)
        rh_recompute(ep, now, 0);
    if (ep->rh.nactive <= 1 && ep->rh.gather_end <= now &&
        !MROCE_SEEDED_FAULT(RATE_LONE_GATHER))
        return 0;
    if (ep->rh.gather_end <= now)
        ep->rh.gather_end = now + g; /* CC-33: a new gather */
    qp->rh.answer = 1;
    qp->ka |= KA_ANSWER; /* what REL-35's answer carries, then */
    return 1;
}

/* The water-filling over the active senders; also ends the measurement
 * interval (when `measure`) and retires senders silent for rate_active. */
static void rh_recompute(mre_ep *ep, mroce_tstamp now, int measure)
{
    uint64_t left, dt = now - ep->rh.start;
    uint32_t nleft = 0, i, pass;

    /* from the end, so that a sender retired here (its place taken by
     * the last one) is not skipped */
    for (i = ep->rh.nact; i-- > 0;) {
        mre_qp *q = ep->rh.act[i];
        if (q->rh.last + rh_active_for(q, q->rh.share) < now) {
            rh_act_remove(ep, q);
            q->rh.active = 0;
            continue;
        }
        /* CC-52: a long-haul sender's rate is measured over at least
         * its RTT, since within one it sends a window and pauses */
        mroce_tstamp lr = rh_long_rtt(q);
        if (measure && lr && now - q->rh.mstart >= lr) {
            uint64_t r = q->rh.bytes * 8000u / (now - q->rh.mstart);
            q->rh.rate = r > UINT32_MAX ? UINT32_MAX : (uint32_t)r;
            q->rh.bytes = 0;
            q->rh.mstart = now;
            if (q->rh.intervals < 255)
                q->rh.intervals++;
        } else if (measure && dt && !lr) {
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
        for (i = 0; i < ep->rh.nact; i++) {
            mre_qp *q = ep->rh.act[i];
            uint64_t d;
            if (q->rh.frozen || q->rh.intervals < RH_SETTLE)
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
    for (i = 0; i < ep->rh.nact; i++) {
        mre_qp *q = ep->rh.act[i];
        uint64_t s;
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
    uint32_t pace = qp->rh.pace;

    if (MROCE_SEEDED_FAULT(RATEHINT_EARLY) &&
        qp->rh.hint == MROCE_CREDIT_UNLIMITED)
        pace = 1; /* paced without a hint */
    return (mroce_tstamp)len * 8000u / (pace ? pace : 1u);
}

/* Packets a sender may send back to back: two, or a whole burst of a
 * batching datapath (path_burst, PATH-3). */
static mroce_tstamp rh_slack(const mre_qp *qp)
{
    uint32_t n = qp->paths.burst > 2 ? qp->paths.burst : 2u;
    return n * rh_pkt_time(qp, (size_t)qp->mtu + MROCE_MAX_DATA_HDR_LEN +
                                   MROCE_CRC_LEN);
}

/* CC-34: a sender answered with a hint starts its pacing clock at a
 * random point within one full packet at the hint, so the senders that one
 * gather answered do not send their first packets at the same moment. */
static void rh_grant_start(mre_qp *qp, mroce_tstamp now)
{
    uint16_t r = 0;
    mroce_tstamp pkt = rh_pkt_time(qp, (size_t)qp->mtu +
                                           MROCE_MAX_DATA_HDR_LEN +
                                           MROCE_CRC_LEN);

    if (!MROCE_SEEDED_FAULT(RATE_FIXED_START))
        qp->ep->cfg.rand((uint8_t *)&r, sizeof r, qp->ep->cfg.rand_user);
    qp->rh.pace_next = now + rh_slack(qp) + (pkt * r >> 16);
    qp->rh.last_send = now;
}

/* CC-38: the answer's share over the request's round trip `rt` opens the
 * window that far at once (never below what it is, never above twice
 * init_cwnd nor max_cwnd): a lone sender answered with the whole receive
 * rate starts at a bandwidth-delay product, not at init_cwnd.  The bound
 * is one slow-start round: rt also holds any gather and the hosts' own
 * delays, which on a loaded host are milliseconds. */
static void rh_grant_window(mre_qp *qp, mroce_tstamp rt)
{
    uint64_t w = (uint64_t)qp->rh.hint * rt / 8000u;
    uint64_t lim = 2 * (uint64_t)qp->cc.init_cwnd;

    if (lim > qp->cc.max_cwnd)
        lim = qp->cc.max_cwnd;
    if (w > lim)
        w = lim;
    if (w > qp->cc.cwnd)
        qp->cc.cwnd = (uint32_t)w;
}

/* A hint of h Mbit/s over t ns is h * t / 8000 bytes. */
uint32_t mre_rh_on_hint(mre_qp *qp, uint32_t credit, mroce_tstamp now)
{
    uint32_t floor = (uint32_t)qp->mtu + MROCE_MAX_DATA_HDR_LEN + MROCE_CRC_LEN;
    mroce_tstamp t = qp->srtt ? qp->srtt : qp->cc.base_rtt;
    uint64_t cap;
    int granted = qp->rh.grant == RH_G_ASKED;

    qp->rh.hint = credit == 0 ? 1 : credit; /* 0 would stop the sender */
    qp->rh.pace = qp->rh.hint;              /* CC-28: paced at the hint */
    qp->cc.hint_mbps = credit == MROCE_CREDIT_UNLIMITED ? 0 : qp->rh.hint;
    /* CC-40: for one srtt after a long-haul start-up jump, at most at the
     * delivery rate that sized it */
    if (now < qp->cc.jump_until && qp->cc.jump_mbps < qp->rh.pace)
        qp->rh.pace = qp->cc.jump_mbps ? qp->cc.jump_mbps : 1;
    /* The pacing clock owes at most one packet at the new hint: a sender
     * whose hint rises is not held to the slower clock it ran on. */
    if (qp->rh.hint != MROCE_CREDIT_UNLIMITED) {
        mroce_tstamp lim = qp->rh.last_send + rh_pkt_time(qp, floor) +
                           rh_slack(qp); /* pace_next - slack: next send */
        if (qp->rh.pace_next > lim)
            qp->rh.pace_next = lim;
    }
    if (granted) { /* the answer to its share request (CC-30) */
        qp->rh.grant = RH_G_OPEN;
        qp->rh.tx_last = now; /* fresh until it has sent (CC-35) */
        if (qp->rh.hint != MROCE_CREDIT_UNLIMITED) {
            rh_grant_start(qp, now);
            rh_grant_window(qp, now - qp->rh.ask_at);
            if (t == 0)
                t = now - qp->rh.ask_at;
        }
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

int mre_rh_asking(const mre_qp *qp)
{
    return qp->rh.ask_now;
}

void mre_rh_on_ack_sent(mre_qp *qp)
{
    qp->rh.ask_now = 0;
}

/* CC-35: the share of a sender idle for its activity time (CC-34) is no
 * longer fresh (the receiver no longer counts it): back to no hint, and
 * ask again. */
static void rh_expire(mre_qp *qp, mroce_tstamp now)
{
    if (qp->rh.grant != RH_G_OPEN || qp->snd_una != qp->snd_nxt ||
        now - qp->rh.tx_last <= rh_active_for(qp, qp->rh.hint) ||
        MROCE_SEEDED_FAULT(RATE_NO_REASK))
        return;
    qp->rh.grant = RH_G_NONE;
    qp->rh.hint = MROCE_CREDIT_UNLIMITED;
    qp->cc.hint_mbps = 0;
    qp->peer_credit = MROCE_CREDIT_UNLIMITED;
}

/* CC-43: the first packet behind a share request leaves at a random
 * point within two RTTs of the request (srtt, else the handshake's), or
 * with the answer if that comes first.  N senders that start together
 * then put about half their first packets, spread over an RTT, into the
 * receiver's queue before the answers pace the rest, instead of N packets
 * at once; a lone sender loses nothing, since its link idles for that RTT
 * anyway.  Without an RTT it leaves at once. */
static mroce_tstamp rh_first_at(mre_qp *qp, mroce_tstamp now)
{
    mroce_tstamp t = qp->srtt ? qp->srtt : qp->hs_rtt;
    uint16_t r = 0;

    if (t == 0)
        return now;
    qp->ep->cfg.rand((uint8_t *)&r, sizeof r, qp->ep->cfg.rand_user);
    return now + (2 * t * r >> 16);
}

int mre_rh_ask(mre_qp *qp, mroce_tstamp now)
{
    if (!qp->rh.ask)
        return 0;
    rh_expire(qp, now);
    if (qp->rh.grant != RH_G_NONE || !mre_req_has_data(qp))
        return 0;
    if (MROCE_SEEDED_FAULT(RATE_NO_REQUEST)) {
        qp->rh.grant = RH_G_OPEN;
        return 0;
    }
    qp->rh.grant = RH_G_ASKED; /* CC-30: the share request goes first */
    /* CC-36: rate_hint 2 sends its first packet behind the request at
     * once; 3 holds every data packet for the answer. */
    qp->rh.first = MROCE_SEEDED_FAULT(RATE_FIRST_BURST) ? UINT8_MAX
                   : qp->attr.rate_hint == 2            ? RH_FIRST_PKTS
                                                        : 0;
    qp->rh.ask_until = now + rh_ask_wait(qp);
    qp->rh.ask_at = now;
    qp->rh.first_at = rh_first_at(qp, now);
    qp->rh.tx_last = now;
    qp->rh.ask_now = 1; /* the caller's ACK is the request */
    qp->cnt.rate_asks++;
    return 1;
}

int mre_rh_may_send(mre_qp *qp, mroce_tstamp now)
{
    mroce_tstamp slack;

    if (!qp->rh.on)
        return 1;
    if (qp->rh.grant == RH_G_ASKED) {
        if (qp->rh.first && now >= qp->rh.first_at)
            return 1; /* CC-36: the first packet behind the request */
        if (qp->rh.first && now < qp->rh.ask_until) {
            if (!qp->rh.fwait) { /* CC-43: wake it at first_at */
                qp->rh.fwait = 1;
                mre_timer_update(qp->ep, qp);
            }
            return 0;
        }
        if (now < qp->rh.ask_until || MROCE_SEEDED_FAULT(RATE_ASK_FOREVER))
            return 0; /* the deadline is ask_until (CC-31) */
        qp->rh.grant = RH_G_OPEN;
        qp->rh.tx_last = now;
    }
    if ((qp->rh.hint == MROCE_CREDIT_UNLIMITED &&
         !MROCE_SEEDED_FAULT(RATEHINT_EARLY)) ||
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

    if (!qp->rh.on)
        return;
    qp->rh.tx_last = now;
    if (qp->rh.grant == RH_G_ASKED && qp->rh.first && qp->rh.first != UINT8_MAX)
        qp->rh.first--;
    if (qp->rh.hint == MROCE_CREDIT_UNLIMITED &&
        !MROCE_SEEDED_FAULT(RATEHINT_EARLY))
        return;
    slack = rh_slack(qp);
    /* An idle sender earns no more than the two packets of slack. */
    if (qp->rh.pace_next + slack < now)
        qp->rh.pace_next = now - slack;
    qp->rh.pace_next += rh_pkt_time(qp, len);
    qp->rh.last_send = now;
}

static mroce_tstamp rh_pace_deadline(const mre_qp *qp)
{
    mroce_tstamp slack;

    if (!qp->rh.pace_wait)
        return MROCE_TSTAMP_INF;
    slack = rh_slack(qp);
    return qp->rh.pace_next > slack ? qp->rh.pace_next - slack : 0;
}

mroce_tstamp mre_rh_deadline(const mre_qp *qp)
{
    mroce_tstamp t = rh_pace_deadline(qp);

    if (qp->rh.grant == RH_G_ASKED && qp->rh.ask_until < t &&
        !MROCE_SEEDED_FAULT(RATE_ASK_FOREVER))
        t = qp->rh.ask_until;
    if (qp->rh.fwait && qp->rh.first_at < t)
        t = qp->rh.first_at; /* CC-43 */
    if (qp->rh.answer && qp->ep->rh.gather_end < t)
        t = qp->ep->rh.gather_end;
    return t;
}

void mre_rh_timer(mre_qp *qp, mroce_tstamp now)
{
    if (qp->rh.pace_wait && now >= rh_pace_deadline(qp))
        qp->rh.pace_wait = 0; /* the caller marks the QP ready */
    if (qp->rh.fwait && now >= qp->rh.first_at)
        qp->rh.fwait = 0; /* CC-43: the first packet may leave */
    if (qp->rh.grant == RH_G_ASKED && now >= qp->rh.ask_until &&
        !MROCE_SEEDED_FAULT(RATE_ASK_FOREVER)) {
        qp->rh.grant = RH_G_OPEN; /* CC-31: no answer; send without */
        qp->rh.tx_last = now;     /* fresh until it has sent (CC-35) */
    }
    if (qp->rh.answer && now >= qp->ep->rh.gather_end) {
        qp->rh.answer = 0; /* CC-33: the gather is over: answer */
        qp->ack_now = 1;
    }
}
