/*
 * netmodel.h - the fabric of the deterministic in-process network model.
 *
 * This is the test network the sans-IO engine runs on in unit and property
 * tests, the demo and the engine benchmark.  It knows nothing about the
 * engine: it moves opaque datagrams between hosts 0..H-1 through a two-stage
 * leaf/spine fabric and applies the faults tests need.  The engine driver
 * (netdrive.h) sits on top of it.
 *
 * Path of a packet:
 *
 *   src host uplink   --(base delay + spine delay [+ reorder delay])-->
 *   spine (chosen by hash(src, dst, entropy); by default no queue,
 *          non-blocking; optionally a rate-limited FIFO, see below)  -->
 *   dst host downlink (the last switch hop: drop-tail queue, ECN marking)
 *   --> delivered to dst
 *
 *   - Uplink: FIFO serialization at the host's uplink rate, unbounded (the
 *     driver provides back-pressure by asking mroce_net_uplink_ready()).
 *   - Global random faults are drawn when the packet enters the fabric
 *     (after the uplink, so a lost packet still used the sender's NIC):
 *     loss, duplication (the copy follows the same path), corruption (one
 *     random bit flipped, independently per copy), reordering (an extra
 *     uniform delay in [1, reorder_max] ns, independently per copy).
 *   - Spine effects (blackhole, spine loss) are decided when the packet
 *     crosses the spine, which the model places at the end of propagation,
 *     so toggling a blackhole also hits packets already in flight, as a real
 *     link failure would.
 *   - Spine rate (per-path rate, mroce_net_set_spine_rate(); off by
 *     default): a spine given a rate models a slower or degraded path.
 *     Packets that pass the spine's blackhole and loss checks join a FIFO
 *     serialized at that rate, with its own drop-tail byte limit and ECN
 *     threshold (same rules as the downlink below, counted in the spine
 *     counters), and move on to the downlink when their last bit has left
 *     it (store and forward).  A blackhole raised while packets sit in the
 *     spine queue drops them too when they reach its head.  With rate 0
 *     (the default) the spine adds no queue and no serialization.
 *   - Downlink: drop-tail when (bytes still queued ahead, including the
 *     unsent rest of the packet in service) + len > queue_limit; ECT packets
 *     are CE-marked when the bytes queued ahead exceed ecn_thresh.  Incast
 *     shows here.  The downlink is FIFO, so packets that share a spine and a
 *     destination keep their order unless reordering is enabled (the engine's
 *     per-path loss detection relies on that).
 *   - Planes (docs/spec/multipath.md, Planes; config `planes`, default 1):
 *     P parallel fabrics of this shape.  Each host has an uplink and a
 *     downlink on every plane, each plane its own `spines` spines (global
 *     spine index plane * spines + i, for the spine calls and counters), and
 *     a packet sent on plane k crosses only plane k's spines and links.
 *     Planes are not cross-connected: a packet stays on the plane it was
 *     sent on.  A plane fails as its spines do (blackhole every one of
 *     them).  With one plane the fabric is the one above, hash and all.
 *   - Unloaded one-way latency = ser(len, uplink) + delay + spine delay +
 *     [ser(len, spine) if the spine has a rate +] ser(len, downlink).
 *
 * Determinism: every random decision comes from seeded splitmix64 streams
 * of the simulation core (sim/core/simcore.h), one per kind of fault, so
 * enabling duplication does not change which packets are lost, and events
 * go through the core's event queue, ordered by (time, sequence number).  The same seed and the same sequence of calls
 * give the same run, bit for bit.
 *
 * Time: the API speaks nanoseconds (mroce_tstamp, like the engine).  Inside,
 * link timing is kept in picoseconds so that serialization at rates that do
 * not divide evenly (4176 B at 100 Gb/s = 334.08 ns) does not drift; an
 * event at a fractional nanosecond becomes due at the next whole one.
 * Times must stay below 2^64 ps (~213 days).
 *
 * Memory: packet buffers (MROCE_NET_MAX_PKT bytes each) come from a free-list
 * pool grown in chunks, events live in the core's growable heap; after warm-up
 * nothing is allocated per packet.  Larger packets are rejected and counted.
 *
 * Thread safety: none; one thread drives a model.
 */
#ifndef MROCE_NETMODEL_H
#define MROCE_NETMODEL_H

#include <stddef.h>
#include <stdint.h>

#include <mroce/engine.h> /* mroce_tstamp, MROCE_TSTAMP_INF, enum mroce_err */

#ifdef __cplusplus
extern "C" {
#endif

/* Largest datagram the model carries: a 8192-byte payload MTU plus headers
 * fits with room; the default 4096 + 80 B leaves most of it unused. */
#define MROCE_NET_MAX_PKT 9216
/* queue_limit / ecn_thresh value meaning "no limit" / "never mark". */
#define MROCE_NET_UNLIMITED UINT32_MAX
/* Most planes a fabric has (as MROCE_EP_MAX_PLANES). */
#define MROCE_NET_MAX_PLANES 8

typedef struct mroce_net mroce_net;

struct mroce_net_config {
    uint64_t seed;        /* all randomness derives from it; default 1 */
    uint32_t hosts;       /* 1..2^20; default 2 */
    uint32_t spines;      /* per plane, 1..65535 (all planes' together);
                             default 4 */
    uint32_t planes;      /* parallel fabrics, 0 or 1 = one; at most
                             MROCE_NET_MAX_PLANES */
    mroce_tstamp delay;   /* base one-way propagation delay, ns; 2000 */
    uint64_t rate_bps;    /* every host link, bits/s; 100e9; 0 = infinite
                                (no serialization, no queueing); else >= 1000 */
    uint32_t queue_limit; /* downlink drop-tail limit, bytes; 1 MiB */
    uint32_t ecn_thresh;  /* CE-mark ECT packets when more than this many
                                bytes are queued ahead; 64 KiB */
    double loss;          /* probability a packet is lost in the fabric */
    double dup;           /* ... is delivered twice */
    double corrupt;       /* ... has one random bit flipped */
    double reorder;       /* ... is delayed by an extra [1, reorder_max] ns */
    mroce_tstamp reorder_max; /* ns; default 10000 */
    uint32_t max_pkts;        /* cap on packets held at once (pool size);
                                0 = unlimited; beyond it sends fail, counted */
};
void mroce_net_config_default(struct mroce_net_config *cfg);

/* Counters.  X-macros so callers can print them by name. */
/* clang-format off */
#define MROCE_NET_COUNTERS(X)                                              \
    X(tx_pkts) X(tx_bytes)       /* accepted by mroce_net_send*() */       \
    X(rx_pkts) X(rx_bytes)       /* delivered (duplicates included) */     \
    X(drop_loss)                 /* global random loss */                  \
    X(drop_spine_loss)           /* per-spine random loss */               \
    X(drop_blackhole)            /* blackholed spine */                    \
    X(drop_queue)                /* downlink drop-tail */                  \
    X(drop_spine_queue)          /* spine queue drop-tail (spine rate) */  \
    X(drop_oversize)             /* rejected: len > MROCE_NET_MAX_PKT */   \
    X(drop_nomem)                /* rejected / dup skipped: pool empty */  \
    X(dups) X(corrupted) X(reordered)                                      \
    X(ce_marked)                 /* CE marks set at downlinks */           \
    X(ce_marked_spine)           /* CE marks set at spine queues */
/* clang-format on */

/* clang-format off */
#define MROCE_NET_SPINE_COUNTERS(X)                                        \
    X(pkts) X(bytes)             /* packets routed over this spine */      \
    X(drops)                     /* dropped by this spine (loss, blackhole, \
                                    queue drop-tail) */                    \
    X(ce_marks)                  /* marked at the downlink after crossing it */ \
    X(queue_drops)               /* of drops: spine queue drop-tail */     \
    X(queue_ce_marks)            /* CE marks set at the spine queue */     \
    X(queue_max)                 /* peak spine queue occupancy, bytes */
/* clang-format on */

/* clang-format off */
#define MROCE_NET_HOST_COUNTERS(X)                                         \
    X(up_pkts) X(up_bytes)       /* sent by the host */                    \
    X(down_pkts) X(down_bytes)   /* delivered to the host */               \
    X(down_drops)                /* drop-tail at its downlink */           \
    X(down_ce_marks)             /* CE marks at its downlink */            \
    X(down_max_queue)            /* peak downlink occupancy, bytes */
/* clang-format on */

struct mroce_net_counters {
#define MROCE_X_FIELD(name) uint64_t name;
    MROCE_NET_COUNTERS(MROCE_X_FIELD)
#undef MROCE_X_FIELD
};
struct mroce_net_spine_counters {
#define MROCE_X_FIELD(name) uint64_t name;
    MROCE_NET_SPINE_COUNTERS(MROCE_X_FIELD)
#undef MROCE_X_FIELD
};
struct mroce_net_host_counters {
#define MROCE_X_FIELD(name) uint64_t name;
    MROCE_NET_HOST_COUNTERS(MROCE_X_FIELD)
#undef MROCE_X_FIELD
};

/* A delivered packet, as handed to the delivery callback.  buf belongs to the
 * model and is valid only during the callback (it may be modified there). */
struct mroce_net_pkt {
    uint32_t src, dst;
    uint16_t entropy;
    uint8_t ecn;    /* enum mre_ecn, CE if marked on the way */
    uint16_t spine; /* the spine it crossed (global index) */
    uint8_t plane;  /* the plane it was sent and delivered on */
    uint8_t *buf;
    size_t len;
    mroce_tstamp time; /* delivery time, ns (rounded up) */
    uint64_t time_ps;  /* exact delivery time, ps */
};
typedef void (*mroce_net_deliver_fn)(void *user,
                                     const struct mroce_net_pkt *pkt);

/* --- lifetime --- */
/* MROCE_EINVAL on a bad config (hosts/spines out of range, probability not in
 * [0,1], 0 < rate < 1000), MROCE_ENOMEM. */
int mroce_net_new(mroce_net **pnet, const struct mroce_net_config *cfg);
void mroce_net_del(mroce_net *net);
const struct mroce_net_config *mroce_net_config_get(const mroce_net *net);

/* --- sending --- */
/* Put a datagram on src's uplink at time now (ns, nondecreasing across calls).
 * The data are copied.  Returns 0 when accepted (it may still be lost later;
 * all fabric drops are silent and counted), MROCE_EINVAL for a bad host,
 * MROCE_ERANGE if len > MROCE_NET_MAX_PKT (counted drop_oversize),
 * MROCE_ENOMEM if the pool is exhausted (counted drop_nomem).
 * ecn: ECT(0)/ECT(1) packets can be CE-marked, NOT_ECT ones never are. */
int mroce_net_send(mroce_net *net, uint32_t src, uint32_t dst, uint16_t entropy,
                   uint8_t ecn, const uint8_t *buf, size_t len,
                   mroce_tstamp now);
/* The same on plane `plane` (< planes): src's uplink and dst's downlink
 * there, one of the plane's spines.  mroce_net_send_staged() is plane 0. */
int mroce_net_send_staged_plane(mroce_net *net, uint32_t plane, uint32_t src,
                                uint32_t dst, uint16_t entropy, uint8_t ecn,
                                size_t len, mroce_tstamp now);
/* Zero-copy send: mroce_net_tx_buf() returns a buffer of MROCE_NET_MAX_PKT
 * bytes owned by the model (the same one until it is sent; NULL if the pool
 * is exhausted); fill it and hand it over with mroce_net_send_staged(), which
 * behaves as mroce_net_send() on its first len bytes. */
uint8_t *mroce_net_tx_buf(mroce_net *net);
int mroce_net_send_staged(mroce_net *net, uint32_t src, uint32_t dst,
                          uint16_t entropy, uint8_t ecn, size_t len,
                          mroce_tstamp now);

/* --- time and delivery --- */
/* Time (ns) of the earliest pending internal event or delivery, or
 * MROCE_TSTAMP_INF when the fabric is empty.  Some events are internal (a
 * packet reaching its downlink), so deliver_due at this time may deliver
 * nothing; call again. */
mroce_tstamp mroce_net_next_event_time(const mroce_net *net);
/* Process every event due at or before now, calling cb for each delivery in
 * (time, sequence) order.  cb may call mroce_net_send*() but not
 * mroce_net_deliver_due().  Returns the number of packets delivered. */
size_t mroce_net_deliver_due(mroce_net *net, mroce_tstamp now,
                             mroce_net_deliver_fn cb, void *user);
/* Packets in the fabric (uplinks, propagation, downlinks). */
size_t mroce_net_in_flight(const mroce_net *net);

/* --- uplink back-pressure --- */
/* Bytes on host's uplink not yet serialized at time now (with planes: on
 * the fullest of its uplinks). */
uint32_t mroce_net_uplink_backlog(const mroce_net *net, uint32_t host,
                                  mroce_tstamp now);
/* Earliest time (ns) at which host's uplink holds less than queue_bytes of
 * unsent data (queue_bytes 0: is completely idle).  May be in the past;
 * 0 for an infinite-rate link (with queue_bytes > 0).  With planes: when
 * every one of the host's uplinks does. */
mroce_tstamp mroce_net_uplink_ready(const mroce_net *net, uint32_t host,
                                    uint32_t queue_bytes);

/* --- routing --- */
/* The spine that packets from src to dst with this entropy cross (ECMP hash,
 * keyed by the seed; the reverse direction hashes independently), on plane
 * 0 / on plane `plane`: a global spine index, one of that plane's. */
uint32_t mroce_net_spine_of(const mroce_net *net, uint32_t src, uint32_t dst,
                            uint16_t entropy);
uint32_t mroce_net_spine_of_plane(const mroce_net *net, uint32_t plane,
                                  uint32_t src, uint32_t dst, uint16_t entropy);
/* The fabric's plane count (at least 1). */
uint32_t mroce_net_planes(const mroce_net *net);

/* --- runtime settings (take effect for packets entering the fabric, or for
 * spine settings crossing the spine, from now on) --- */
int mroce_net_set_loss(mroce_net *net, double p);
int mroce_net_set_dup(mroce_net *net, double p);
int mroce_net_set_corrupt(mroce_net *net, double p);
int mroce_net_set_reorder(mroce_net *net, double p, mroce_tstamp max_extra);
void mroce_net_set_delay(mroce_net *net, mroce_tstamp delay);
/* Downlink queue limit and ECN threshold for every host. */
void mroce_net_set_queue(mroce_net *net, uint32_t queue_limit,
                         uint32_t ecn_thresh);
/* Rate of every host link (0 = infinite; else >= 1000). */
int mroce_net_set_rate(mroce_net *net, uint64_t rate_bps);
/* One host's uplink and downlink rates (asymmetric hosts, slow receivers),
 * on every plane. */
int mroce_net_set_host_rate(mroce_net *net, uint32_t host, uint64_t up_bps,
                            uint64_t down_bps);
int mroce_net_set_spine_delay(mroce_net *net, uint32_t spine,
                              mroce_tstamp extra);
int mroce_net_set_spine_loss(mroce_net *net, uint32_t spine, double p);
int mroce_net_set_spine_blackhole(mroce_net *net, uint32_t spine, int on);
/* Per-path rate: serialize packets crossing spine through a FIFO at rate_bps
 * (0 = no spine bottleneck, the default; else >= 1000), dropping a packet
 * when (bytes queued ahead, including the unsent rest of the packet in
 * service) + len > queue_limit and CE-marking ECT packets when the bytes
 * queued ahead exceed ecn_thresh (MROCE_NET_UNLIMITED: no limit / never
 * mark).  queue_limit and ecn_thresh are ignored while the rate is 0.
 * Packets already in the spine queue keep their departure times.
 * MROCE_EINVAL for a bad spine or 0 < rate < 1000. */
int mroce_net_set_spine_rate(mroce_net *net, uint32_t spine, uint64_t rate_bps,
                             uint32_t queue_limit, uint32_t ecn_thresh);

/* --- counters --- */
void mroce_net_get_counters(const mroce_net *net, struct mroce_net_counters *c);
int mroce_net_get_spine_counters(const mroce_net *net, uint32_t spine,
                                 struct mroce_net_spine_counters *c);
/* A host's counters summed over its planes (down_max_queue: the peak of
 * any one downlink). */
int mroce_net_get_host_counters(const mroce_net *net, uint32_t host,
                                struct mroce_net_host_counters *c);
/* Zero every counter (e.g. after warm-up). */
void mroce_net_reset_counters(mroce_net *net);

#ifdef __cplusplus
}
#endif
#endif /* MROCE_NETMODEL_H */
