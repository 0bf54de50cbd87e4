/*
 * txring.c - the transmit ring: one entry per PSN sent and not yet
 * released, and the in-flight accounting kept with it.
 *
 * Every packet the QP sends (request or response, first transmission or
 * not) owns the ring entry of its PSN from mre_txr_push() until the
 * cumulative acknowledgement passes it (mre_txr_advance_una()).  An entry
 * is in flight (TX_INFLIGHT) while it counts towards inflight_bytes and
 * inflight_pkts and sits on its path's in-flight list, which keeps each
 * path's packets in send order so that an acknowledgement exposes the
 * earlier ones on the same path (LOSS-*, PATH-*).  Packets declared lost
 * queue on the retransmission FIFO (retxq).  This module changes state and
 * counts only; when a packet is lost is decided by loss.c, what is sent by
 * requester.c, what is acknowledged by completer.c.
 */
#include "engine_int.h"

static void path_list_append(mre_qp *qp, uint32_t idx)
{
    struct mre_txent *e = &qp->tx[idx];
    struct mre_path *p = &qp->path_slots[e->path];
    e->path_next = MROCE_PATH_NONE;
    e->path_prev = p->list_tail;
    if (p->list_tail != MROCE_PATH_NONE)
        qp->tx[p->list_tail].path_next = idx;
    else
        p->list_head = idx;
    p->list_tail = idx;
}

static void path_list_remove(mre_qp *qp, uint32_t idx)
{
    struct mre_txent *e = &qp->tx[idx];
    struct mre_path *p = &qp->path_slots[e->path];
    if (e->path_prev != MROCE_PATH_NONE)
        qp->tx[e->path_prev].path_next = e->path_next;
    else
        p->list_head = e->path_next;
    if (e->path_next != MROCE_PATH_NONE)
        qp->tx[e->path_next].path_prev = e->path_prev;
    else
        p->list_tail = e->path_prev;
    e->path_prev = e->path_next = MROCE_PATH_NONE;
}

/* Bytes a packet occupies on the wire, as the window counts them. */
static uint32_t wire_len(const struct mre_txent *e)
{
    return (uint32_t)e->len + MROCE_MAX_DATA_HDR_LEN + MROCE_CRC_LEN;
}

uint32_t mre_txr_push(mre_qp *qp, uint8_t kind, uint32_t ref, uint32_t off,
                      uint32_t len)
{
    uint32_t psn = qp->snd_nxt++;
    uint32_t idx = psn & qp->tx_mask;
    struct mre_txent *e = &qp->tx[idx];
    memset(e, 0, sizeof(*e));
    qp->tx_sacked[idx >> 6] &= ~(1ull << (idx & 63));
    e->kind = kind;
    e->ref = ref;
    e->offset = off;
    e->len = (uint16_t)len;
    e->path_prev = e->path_next = MROCE_PATH_NONE;
    e->probe_from = MROCE_PATH_NONE;
    return psn;
}

uint32_t mre_txr_sacked_word(const mre_qp *qp, uint32_t psn)
{
    /* 32 bits from ring index i, which may straddle two 64-bit words and
     * the ring's end. */
    uint32_t i = psn & qp->tx_mask, sh = i & 63;
    uint64_t lo = qp->tx_sacked[i >> 6] >> sh;
    if (sh > 32)
        lo |= qp->tx_sacked[((i + 64 - sh) & qp->tx_mask) >> 6] << (64 - sh);
    return (uint32_t)lo;
}

void mre_txr_unpush(mre_qp *qp, uint32_t psn)
{
    qp->snd_nxt--;
    qp->tx[psn & qp->tx_mask].state = TX_FREE;
}

void mre_txr_enflight(mre_qp *qp, uint32_t idx)
{
    struct mre_txent *e = &qp->tx[idx];
    path_list_append(qp, idx);
    mre_path_inflight_add(&qp->paths, e->path, wire_len(e));
    qp->inflight_bytes += wire_len(e);
    qp->inflight_pkts++;
}

void mre_txr_unflight(mre_qp *qp, uint32_t idx)
{
    struct mre_txent *e = &qp->tx[idx];
    path_list_remove(qp, idx);
    mre_path_inflight_sub(&qp->paths, e->path, wire_len(e));
    qp->inflight_bytes -= wire_len(e);
    qp->inflight_pkts--;
}

void mre_txr_reflight(mre_qp *qp, uint32_t idx)
{
    struct mre_txent *e = &qp->tx[idx];
    struct mre_path *p = &qp->path_slots[e->path];
    uint32_t after = p->list_tail;
    while (after != MROCE_PATH_NONE &&
           (int32_t)(qp->tx[after].path_seq - e->path_seq) > 0)
        after = qp->tx[after].path_prev;
    e->state = TX_INFLIGHT;
    e->path_prev = after;
    e->path_next = after == MROCE_PATH_NONE ? p->list_head
                                            : qp->tx[after].path_next;
    if (after == MROCE_PATH_NONE)
        p->list_head = idx;
    else
        qp->tx[after].path_next = idx;
    if (e->path_next == MROCE_PATH_NONE)
        p->list_tail = idx;
    else
        qp->tx[e->path_next].path_prev = idx;
    mre_path_inflight_add(&qp->paths, e->path, wire_len(e));
    qp->inflight_bytes += wire_len(e);
    qp->inflight_pkts++;
}

void mre_txr_mark_lost(mre_qp *qp, uint32_t psn, int cause)
{
    uint32_t idx = psn & qp->tx_mask;
    struct mre_txent *e = &qp->tx[idx];
    if (e->state != TX_INFLIGHT && e->state != TX_RNR)
        return;
    if (e->state == TX_INFLIGHT)
        mre_txr_unflight(qp, idx);
    e->state = TX_LOST;
    e->cause = (uint8_t)cause;
    qp->retxq[qp->retxq_tail++ & qp->tx_mask] = psn;
}

void mre_txr_advance_una(mre_qp *qp)
{
    while (qp->snd_una != qp->snd_nxt) {
        struct mre_txent *e = &qp->tx[qp->snd_una & qp->tx_mask];
        if (e->state != TX_ACKED)
            break;
        e->state = TX_FREE;
        qp->snd_una++;
    }
}

void mre_txr_reset(mre_qp *qp)
{
    for (uint32_t p = qp->snd_una; p != qp->snd_nxt; p++)
        qp->tx[p & qp->tx_mask].state = TX_FREE;
    for (uint16_t i = 0; i < qp->paths.npaths; i++)
        qp->path_slots[i].list_head = qp->path_slots[i].list_tail =
            MROCE_PATH_NONE;
    qp->snd_una = qp->snd_nxt;
    qp->inflight_bytes = qp->inflight_pkts = 0;
    mre_path_inflight_reset(&qp->paths);
    qp->retxq_head = qp->retxq_tail;
}
