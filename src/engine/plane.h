/*
 * plane.h - the planes of one connection: which local plane (socket,
 * uplink) each packet leaves on, the peer's address per plane, and each
 * plane's health (docs/spec/multipath.md, Planes, PATH-17..31).
 *
 * A connection negotiates P planes in the handshake (CONN-28..30, the
 * PLANES CONN extension); with P = 1 (the default, and with a peer that
 * sends no PLANES) nothing here runs and qp->planes stays NULL.  With
 * P > 1, path slot i starts on plane i % P (its home) and every entropy
 * is congruent to its plane modulo P (path.c), so the entropy of any
 * packet, and the echo
 * entropy of any ACK, names its plane: the receiver answers on the plane
 * the echoed packet came over, with no new field.  A plane goes down when
 * a quorum of its slots has lost a packet with no ACK over the plane for an
 * RTT, or every slot has been retired, since the last ACK over it (PATH-21,
 * PATH-25): the path picker then skips it except for probes at a
 * backing-off interval (PATH-22, PATH-28), and the first ACK over it brings
 * it back.  Slot i's home is plane i % P: while its home is down it lives
 * on a plane that is up, all but one slot of a down plane moved off it,
 * and it goes home once the plane is up again (PATH-29..31).  The
 * connections of an endpoint share what one of them learns (PATH-27,
 * struct mre_ep_planes).  No OS calls; memory from the
 * endpoint's allocator.
 */
#ifndef MROCE_PLANE_H
#define MROCE_PLANE_H

#include <mroce/engine.h>
#include <mroce/wire.h>

/* The endpoint's view of its local planes, shared by its connections
 * (PATH-27): bit k of down is set while the last connection to judge local
 * plane k found it down; gen counts the changes, so a connection notices
 * one with a single compare.  Planes are not cross-connected (plane k of
 * one host reaches only plane k of another), so the local index is the
 * key.  Zeroed with the endpoint. */
struct mre_ep_planes {
    uint32_t gen;
    uint8_t down;
};

struct mre_plane {
    struct mre_addr peer;    /* where the peer's plane receives */
    mroce_tstamp probe_at;   /* down: the next probe may leave then */
    mroce_tstamp suspect_at; /* first pick that saw a loss since its last
                                ACK (0: none) */
    uint64_t tx_pkts, rx_acks;
    uint32_t downs, probes, adopted;
    uint32_t moved_out; /* slots moved off it (PATH-29..31) */
    uint16_t nslots;    /* path slots on this plane */
    uint16_t dead;      /* of them, retired since the last ACK over it */
    uint16_t lossy;     /* of them, with a loss since the last ACK over it */
    uint8_t down;
    uint8_t backoff;  /* unanswered probes since it went down (PATH-28) */
    uint8_t unusable; /* the peer's address for it did not convert */
};

struct mre_planes {
    uint8_t n;              /* planes in use, 2..MROCE_MAX_PLANES */
    uint8_t ndown;          /* planes down or unusable */
    uint8_t suspect;        /* bit k: plane k has lossy slots */
    uint32_t ep_gen;        /* the endpoint table's gen last looked at */
    uint64_t dead_bits[4];  /* slot retired since its plane's last ACK */
    uint64_t lossy_bits[4]; /* slot lost a packet since then */
    uint64_t back_bits[4];  /* slot waits, held, to go back to its home
                               plane (PATH-31) */
    uint16_t nback;         /* slots set in back_bits */
    struct mre_plane p[MROCE_MAX_PLANES];
};

/* The handshake: fill the PLANES extension of an outgoing CONNECT (none
 * with one local plane; in a CONNECT_RESP only when P > 1 was negotiated,
 * CONN-29), and adopt the peer's (called from adopt_peer with qp->peer
 * already set): P = min(local, peer), 1 if the peer sent none (CONN-28). */
void mre_plane_conn_ext(const mre_qp *qp, struct mrw_conn_hdr *c, int resp);
void mre_plane_negotiate(mre_qp *qp, const struct mrw_conn_hdr *c);
void mre_plane_free(mre_qp *qp);

/* Transmit: set info->plane and info->to from info->entropy (PATH-20). */
void mre_plane_tx(mre_qp *qp, struct mre_tx_info *info);
/* Receive: an ACK or NAK of this QP arrived over local plane `plane`. */
void mre_plane_on_ack_rx(mre_qp *qp, uint8_t plane);
/* A packet sent on slot `slot` was acknowledged (completer.c). */
void mre_plane_on_path_ack(mre_qp *qp, uint16_t slot);
/* Loss: a packet sent on slot `slot` was declared lost, and the slot was
 * retired by it if `retired` (loss.c). */
void mre_plane_on_loss(mre_qp *qp, uint16_t slot, int retired);
/* Path choice: before a pick, take in the endpoint's table and judge the
 * suspect planes (PATH-25, PATH-27), then hold back the down planes whose
 * probe is not due, and for a retransmission (retx) the planes with lossy
 * slots too (PATH-26); after it, note the pick.  mre_plane_picked returns 1 if the packet
 * is a probe of a down plane (it then asks for an immediate ACK). */
void mre_plane_pick_begin(mre_qp *qp, mroce_tstamp now, int retx);
int mre_plane_picked(mre_qp *qp, uint16_t slot, mroce_tstamp now);

#endif /* MROCE_PLANE_H */
