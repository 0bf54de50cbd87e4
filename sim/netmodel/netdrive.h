/*
 * netdrive.h - drives MetaRoCE engines over the network model.
 *
 * The discrete-event loop (in the manner of picoquic's test simulator) that
 * plays the datapath for several sans-IO endpoints at once: each endpoint is
 * a host of a mroce_net fabric (netmodel.h); the driver delivers the fabric's
 * packets with mre_ep_recv(), fires mre_ep_handle_expiry() when an
 * endpoint's timer is due and drains mre_ep_write_pkt() into the host's
 * uplink.  Virtual time only: a run takes as long as its events, not as long
 * as the simulated time.
 *
 * Back-pressure: a host's engine is asked for a packet only while fewer than
 * uplink_queue_bytes are waiting on its uplink (default 8192: about two
 * 4 KiB packets), so engines are paced by their link, as on a real NIC, and
 * see a short queue rather than an infinitely fast network.
 *
 * Addresses: host i is the mre_addr { len 4, data = i as 4 big-endian
 * bytes } (mroce_netdrive_addr()).  Endpoints treat it as opaque bytes.
 * On a fabric of several planes (mroce_net_config.planes) that is host i's
 * plane-0 address; on plane k > 0 it is { len 5, i, k }
 * (mroce_netdrive_plane_addr()).  An endpoint sends on plane
 * mre_tx_info.plane, and a packet addressed to another plane than the one
 * it leaves on is discarded (tx_cross_plane: planes are not
 * cross-connected); a delivered packet comes with its plane in
 * mre_rx_info.plane and its sender's address on that plane.
 * mroce_netdrive_ep_planes() gives an endpoint configuration its planes.
 *
 * Cached state: the driver keeps each endpoint's expiry and "wants to write"
 * state in a heap and re-reads them only after it has called into that
 * endpoint, so a step costs O(log hosts), not O(hosts).  Code that calls into
 * an endpoint behind the driver's back (posting work, connecting) must tell
 * it: mroce_netdrive_run_until()/run_while()/run_idle() re-read every endpoint
 * on entry, run_while() also after each predicate call (unless
 * pred_may_post = 0); after anything else (hooks, between step() calls)
 * call mroce_netdrive_kick().  With many hosts, pred_may_post = 0 plus
 * explicit kicks saves O(hosts) work per step.
 *
 * Stalls: mre_ep_want_write() is a hint.  When it says yes but
 * mre_ep_write_pkt() returns nothing (e.g. the window is full), the
 * endpoint is not asked again until it receives a packet, its timer fires,
 * it is kicked, or (run_while with pred_may_post) time has moved on - so a
 * wrong hint costs a call, never a spin.  Likewise a timer that is still due
 * right after mre_ep_handle_expiry() is retried 1 ns later
 * (expiry_stuck).
 *
 * Determinism: with the same seed, attachment order and calls, runs are
 * identical; mroce_netdrive_rand() gives endpoints a seeded random source.
 *
 * Thread safety: none.
 */
#ifndef MROCE_NETDRIVE_H
#define MROCE_NETDRIVE_H

#include <stddef.h>
#include <stdint.h>

#include <mroce/engine.h>

#include "netmodel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mroce_netdrive mroce_netdrive;

struct mroce_netdrive_config {
    struct mroce_net_config net; /* the fabric (hosts, spines, faults...) */
    uint32_t uplink_queue_bytes; /* ask an engine for a packet only while its
                                    uplink holds fewer unsent bytes; 8192 */
    uint32_t max_burst;          /* packets taken from one endpoint per step,
                                    so an infinitely fast link cannot make a
                                    step endless; 64 */
    mroce_tstamp start_time;     /* initial virtual time, ns; 0 */
    int pred_may_post;           /* run_while re-reads every endpoint after
                                    each predicate call; 1 */
};
void mroce_netdrive_config_default(struct mroce_netdrive_config *cfg);

/* A packet as shown to the hooks.  Hooks may modify the bytes at buf (up
 * to MROCE_NET_MAX_PKT of them), len, ecn and, on tx, entropy; not buf
 * itself.  A hook may call mroce_netdrive_kick() but must not step the
 * driver. */
struct mroce_netdrive_pkt {
    uint32_t src, dst;
    uint16_t entropy;
    uint8_t ecn;
    uint16_t spine;  /* rx: the spine it crossed; tx: the one it will */
    uint8_t plane;   /* the plane it is sent / was delivered on */
    uint32_t qp_num; /* tx: local QP that produced it; rx: 0 */
    uint8_t *buf;
    size_t len;
    mroce_tstamp now;
};
enum { MROCE_NETDRIVE_PASS = 0, MROCE_NETDRIVE_DROP = 1 };
/* Return MROCE_NETDRIVE_DROP to discard the packet (counted). */
typedef int (*mroce_netdrive_hook_fn)(void *user,
                                      struct mroce_netdrive_pkt *pkt);

/* clang-format off */
#define MROCE_NETDRIVE_COUNTERS(X)                                          \
    X(steps)           /* time instants processed */                        \
    X(tx_pkts)         /* engine packets handed to the fabric */            \
    X(rx_pkts)         /* packets fed to mre_ep_recv() */                 \
    X(tx_hook_drops) X(rx_hook_drops)                                       \
    X(tx_bad_addr)     /* engine addressed a non-model host: discarded */   \
    X(tx_cross_plane)  /* addressed to another plane than it left on */     \
    X(tx_errors)       /* write_pkt < 0 (e.g. ENOBUF), or pool exhausted */ \
    X(rx_no_host)      /* delivered to a host with no endpoint */           \
    X(expiries)        /* mre_ep_handle_expiry() calls */                 \
    X(expiry_stuck)    /* expiry still <= now after handling: retried 1 ns \
                          later instead of spinning */                      \
    X(write_stalls)    /* want_write said yes, write_pkt gave nothing */
/* clang-format on */

struct mroce_netdrive_counters {
#define MROCE_X_FIELD(name) uint64_t name;
    MROCE_NETDRIVE_COUNTERS(MROCE_X_FIELD)
#undef MROCE_X_FIELD
};

/* --- lifetime --- */
int mroce_netdrive_new(mroce_netdrive **pd,
                       const struct mroce_netdrive_config *cfg);
/* Frees the driver and its fabric; endpoints belong to the caller. */
void mroce_netdrive_del(mroce_netdrive *d);
mroce_net *mroce_netdrive_net(mroce_netdrive *d);

/* --- hosts --- */
/* Put ep at host (0..hosts-1); ep NULL detaches.  MROCE_EINVAL bad host,
 * MROCE_EBUSY host already has an endpoint.  Detach an endpoint before
 * deleting it if the driver is to run on; packets for a host without an
 * endpoint are discarded (rx_no_host). */
int mroce_netdrive_attach(mroce_netdrive *d, uint32_t host, mre_ep *ep);
mre_ep *mroce_netdrive_ep(const mroce_netdrive *d, uint32_t host);
/* The model address of a host, and back (-1: not a model address). */
void mroce_netdrive_addr(uint32_t host, struct mre_addr *addr);
int mroce_netdrive_host_of(const struct mre_addr *addr);
/* Host's address on plane `plane` (plane 0: mroce_netdrive_addr()), and
 * the plane a model address names (-1: none). */
void mroce_netdrive_plane_addr(uint32_t host, uint32_t plane,
                               struct mre_addr *addr);
int mroce_netdrive_plane_of(const struct mre_addr *addr);
/* Give cfg the planes of host `host` on a fabric of nplanes planes
 * (nplanes <= 1: none): its PLANES entries and the plane_addr that turns
 * a peer's entries into model addresses (refusing any other). */
void mroce_netdrive_ep_planes(struct mre_ep_config *cfg, uint32_t host,
                              uint32_t nplanes);
/* Deterministic random bytes for mre_ep_config.rand (rand_user = d). */
void mroce_netdrive_rand(uint8_t *buf, size_t len, void *user);

/* --- running --- */
mroce_tstamp mroce_netdrive_now(const mroce_netdrive *d);
/* Time of the next thing to do (>= now), MROCE_TSTAMP_INF if none. */
mroce_tstamp mroce_netdrive_next_time(const mroce_netdrive *d);
/* One time instant: advance now to next_time, deliver due packets, handle
 * due expiries, let endpoints write.  Returns 0 (and does nothing) if
 * nothing is scheduled, else 1.  Does not re-read endpoints (see top). */
int mroce_netdrive_step(mroce_netdrive *d);
/* Process everything scheduled at or before t, then set now = t. */
void mroce_netdrive_run_until(mroce_netdrive *d, mroce_tstamp t);
/* Step while pred(user) is nonzero and the next event is at or before
 * limit.  pred is checked before the first step and after each step that
 * ran endpoint or hook code (steps that only move packets inside the fabric
 * are not shown to it; pred should depend on endpoint state, not on time -
 * use limit for that).  Returns 1 if pred became 0 (now = the time it did),
 * 0 if the limit was reached or nothing was left to do (now = limit, unless
 * limit is INF). */
int mroce_netdrive_run_while(mroce_netdrive *d, int (*pred)(void *user),
                             void *user, mroce_tstamp limit);
/* Step until nothing is scheduled (fabric empty, no timers, nothing to send):
 * returns 1 then (now = the last event), or 0 if limit came first. */
int mroce_netdrive_run_idle(mroce_netdrive *d, mroce_tstamp limit);
/* Re-read one / every endpoint's expiry and write state. */
void mroce_netdrive_kick(mroce_netdrive *d, uint32_t host);
void mroce_netdrive_kick_all(mroce_netdrive *d);

/* --- observation --- */
/* tx: each packet an engine wrote, before the fabric.  rx: each packet the
 * fabric delivers, before mre_ep_recv() (CE marks, corruption visible). */
void mroce_netdrive_set_tx_hook(mroce_netdrive *d, mroce_netdrive_hook_fn fn,
                                void *user);
void mroce_netdrive_set_rx_hook(mroce_netdrive *d, mroce_netdrive_hook_fn fn,
                                void *user);
void mroce_netdrive_get_counters(const mroce_netdrive *d,
                                 struct mroce_netdrive_counters *c);

#ifdef __cplusplus
}
#endif
#endif /* MROCE_NETDRIVE_H */
