/*
 * sim.h - internal interfaces of mroce-sim, the packet-level datacenter
 * simulator.
 *
 * Architecture.  The simulator sits on the simulation core (sim/core,
 * simcore.h): its one event queue, a 4-ary heap on (time, insertion
 * order), and its splitmix64 RNG streams; the test network of the engine
 * tests, the demo and the engine benchmark (sim/netmodel) runs on the same
 * core.  On it, in the order a packet meets them: the topology and its
 * routing tables (topo.c); links, port queues and switches (fabric.c);
 * hosts with their NIC and the real MetaRoCE engine (host.c) or the RoCEv2
 * baseline model (roce.c); workloads and collectives (workload.c); metrics
 * and CSV (metrics.c), the failure report (report.c), the scenario parser
 * (scenario.c, scenario_json.c) and the program (main.c).  Packets move
 * hop to hop through per-node interfaces, as htsim's PacketSink: a host
 * or switch hands a packet to the link it leaves by (link_send, the
 * link's receive function); an arrival goes to the far end's sink, a
 * switch's forwarding inside fabric.c or a host's struct host_if, which
 * run.c wires in.  Calls therefore run one way, run.c -> host.c ->
 * fabric.c -> core, with fabric.c reaching hosts only through host_if.
 * run.c is the only owner of the event loop: it dispatches every event to
 * its module, and phases that advance in steps (handshakes, failure
 * report, trace) are loops in run.c that call their module between steps.
 *
 * Time: simulated picoseconds (uint64) everywhere inside, so serialization
 * at rates that do not divide evenly does not drift; the engine sees
 * nanoseconds (ps / 1000).  Determinism: all randomness comes from the
 * core's splitmix64 streams seeded from the scenario seed, one per entity
 * (a host's engine and baseline QPs, a link's loss and RED draws), and
 * events are ordered by (time, type, index): the event's time, then the
 * entity it is for (the link, host, QP or fault of its index), not the
 * order in which they were scheduled.  Two events with the same three are
 * indistinguishable, so a seed gives one run, bit for bit, and the order
 * in which one entity's events run does not depend on which other
 * entities share its process: a run split over partitions (partition.c)
 * gives the same results as one in a single queue.
 */
#ifndef MROCE_SIM_H
#define MROCE_SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <mroce/engine.h>

#include "link.h"
#include "simcore.h"

#define PS_PER_NS 1000ULL
#define PS_PER_US 1000000ULL
#define PS_PER_MS 1000000000ULL
#define T_INF UINT64_MAX
#define NONE32 UINT32_MAX

/* Bytes on the wire besides the UDP payload: Ethernet 14 + FCS 4 + IPv4 20 +
 * UDP 8.  Preamble and inter-frame gap are left out for both transports. */
#define FRAME_OVERHEAD 46
/* RoCEv2 adds BTH 12 + ICRC 4 inside UDP (RETH ignored). */
#define ROCE_HDR 16
/* Largest engine datagram the simulator carries (MTU 4096 + headers). */
#define SIM_BUF_CAP 4352
/* Datagram bytes a packet header holds itself (struct pkt's inl): the
 * headers and CRC of a zero-copy data packet, ACKs and other control
 * packets; anything larger takes a SIM_BUF_CAP buffer. */
#define SIM_SMALL_BUF 176

/* ---- events (the core's queue, sim/core/simcore.h) ---- */
/* The type of an event (4 bits of its key); its index (24 bits) names the
 * link, host, QP or fault it is for. */
enum ev_type {
    EV_ARRIVE,    /* idx = link whose first packet in flight arrives */
    EV_LINK_FREE, /* idx = link whose transmitter finished a packet */
    EV_PAUSE,     /* idx = link paused by PFC (frame has arrived) */
    EV_RESUME,    /* idx = link resumed by PFC */
    EV_TIMER,     /* idx = host whose engine timer is due */
    EV_WAKE,      /* idx = host whose NIC may send (baseline pacing) */
    EV_RTO,       /* idx = baseline QP retransmission timer */
    EV_FAULT,     /* idx = index of a scheduled fabric event */
    EV_ROUTE,     /* routing reconverges after a link went down */
};

/* ---- packets ---- */
enum pkt_kind {
    PK_MROCE, /* an engine datagram in buf */
    PK_RDATA, /* baseline RoCEv2 data */
    PK_RACK,  /* baseline ACK (psn = next expected) */
    PK_RNAK,  /* baseline NAK sequence error (psn = expected) */
    PK_RCNP,  /* baseline DCQCN congestion notification */
};

struct pkt {
    struct pkt *next; /* NIC / PFC output queue, free list link */
    /* PK_MROCE: the datagram: in inl[] if it fits, else a SIM_BUF_CAP
     * buffer from the pool (big).  A zero-copy data packet
     * (mre_ep_write_pkt_zc) keeps its payload where the engine found it:
     * buf holds the headers and the CRC, payload/zc_len name the bytes
     * between them (host.c puts the datagram together on delivery). */
    uint8_t *buf;
    const uint8_t *payload; /* zero-copy payload (registered memory: zero,
                             * so a delivery does not read it, host.c) */
    uint32_t len;           /* datagram bytes (UDP payload) */
    uint32_t wire;          /* bytes serialized on links */
    uint32_t src, dst;      /* hosts */
    uint32_t in_link; /* PFC: ingress link whose counter holds it, or NONE */
    uint32_t zc_len;  /* payload bytes, 0: the whole datagram is in buf */
    uint32_t qp;      /* baseline: sender QP index */
    uint16_t entropy; /* UDP source port: the ECMP input that varies */
    uint8_t ecn;      /* enum mre_ecn */
    uint8_t kind;     /* enum pkt_kind */
    uint8_t last;     /* baseline data: last packet of its message */
    uint8_t big;      /* buf is from the pool, not inl */
    uint8_t rx_plane; /* plane of the host port it arrived on (fabric.c) */
    uint8_t pad_[5];
    /* Headers + CRC of a zero-copy data packet, ACKs, control packets:
     * next to the fields above, so a delivery loads one object, and
     * from its second cache line on: a data packet's 60 bytes of
     * headers and 4 of CRC are exactly that line, so a delivery reads
     * two cache lines of the header, not three. */
    uint8_t inl[SIM_SMALL_BUF];
    uint64_t psn; /* baseline */
    uint32_t msg; /* baseline data: message id */
};
_Static_assert(sizeof(struct pkt) == 256, "struct pkt is 4 cache lines");
_Static_assert(offsetof(struct pkt, inl) == 64,
               "a packet's headers start its second cache line");

/* One packet on a link, from its transmission (or, on a lazy link, its
 * queueing) to its arrival at the far end: the arrival event's key and
 * the fields a switch reads to forward it, copied from hop to hop so that
 * switches never touch the packet header (a cache miss per hop: packets
 * are scattered over the pool, a link's hops are contiguous).  The packet
 * header's src/dst/wire/entropy do not change in flight; its ecn is
 * written back on delivery to a host or into a PFC / NIC queue. */
struct hop {
    uint64_t t;   /* ps: arrival at the far end */
    uint64_t seq; /* the arrival event's sequence number */
    struct pkt *p;
    uint32_t src, dst; /* hosts */
    uint32_t wire;
    uint16_t entropy;
    uint8_t ecn;
    uint8_t pad_;
};

/* ---- planes (planes.c) ---- */
/* A multiplane fabric is `planes` parallel leaf-spine networks of the
 * scenario's shape; a host has one NIC port (uplink) per plane, each at
 * host_rate, and sends a packet on the port of its plane. */
#define SIM_MAX_PLANES 8
#define SIM_MAX_DCS 4 /* across.c: data centres of the "across" topology */
/* How a packet's plane is chosen: a function of its entropy (today), the
 * engine's choice (the endpoint is configured with one address per plane
 * and the tx info's plane names the port: host.c), or by the
 * NIC alone, whatever the entropy: the port with the fewest packets
 * waiting among those whose link is up (a reference for a balanced
 * choice, not a model of the engine). */
enum plane_select { PLANE_SEL_ENTROPY, PLANE_SEL_ENGINE, PLANE_SEL_SPRAY };

/* ---- topology (topo.c) ---- */
enum node_kind { N_HOST, N_SWITCH };

struct node {
    uint8_t kind;
    uint8_t level; /* 0 host, 1 ToR/leaf/edge, 2 spine/agg, 3 core */
    uint8_t plane; /* switches: the plane it belongs to (planes.c) */
    uint8_t hash;  /* enum ecmp_hash_kind (vendors.c) */
    char name[16];
    uint32_t lo, hi; /* hosts below this switch: [lo, hi) */
    uint32_t span;   /* hosts per down port */
    uint32_t ndown, nup;
    uint32_t *down; /* links towards hosts, by (dst - lo) / span; owned */
    uint32_t *up;   /* links towards the top, ECMP group; owned */
    uint64_t salt;  /* per-switch ECMP hash salt */
    /* Routing after failures (NULL = every up port valid for every ToR):
     * rt[tor * nup + i] lists the usable up ports for ToR `tor`, rt_n[tor]
     * how many. */
    uint32_t *rt;
    uint16_t *rt_n;
};

/* L_DOWN_LOCAL: down, but only the cable's two ends know it (fault `down
 * ... local`): like a kernel dropping the routes of a dead interface with no
 * routing protocol to tell anyone else (the namespace testbed's `fail`). */
enum link_state { L_UP, L_DOWN, L_BLACKHOLE, L_DOWN_LOCAL };

struct link {
    /* First cache line: what every hop reads (the array is 64-aligned). */
    /* In flight: ring[i & rmask] for i in [rhead, rtail), free-running
     * counters, in order of arrival; the head is the link's EV_ARRIVE in
     * the event heap.  Lazy link (switch egress without PFC): nothing can
     * stop its FIFO, so a packet's departure is known when it is queued
     * and it enters the ring at once (no EV_LINK_FREE); [rwait, rtail) are
     * those whose transmission has not started yet, the output queue
     * that drop and ECN decisions see, trimmed on every enqueue.  Their
     * start times and sizes are in wq[i & rmask] (t_tx << 16 | wire): the
     * trim walks 8 bytes per packet, not a 40-byte hop that the packet
     * traffic has long evicted from the cache; wait_tx is the first
     * waiting packet's start, so a trim with nothing to do reads neither.
     * Other links (host NICs, PFC) queue in qh/qt and enter the ring when
     * they start. */
    _Alignas(64) struct hop *ring; /* owned (fabric.c) */
    uint64_t *wq;                  /* lazy links; owned (fabric.c) */
    uint32_t rmask, rhead, rtail, rwait;
    uint32_t dst;  /* node */
    uint8_t state; /* enum link_state */
    uint8_t lazy;
    uint8_t paused;       /* PFC: transmitter paused */
    uint8_t free_pending; /* an EV_LINK_FREE is queued */
    double loss;          /* random loss probability */
    uint64_t wait_tx;
    /* second line: the transmitter (link.h: busy till tx.busy_ps, at a
     * round-to-nearest rate) and its output queue */
    struct slink tx;
    uint32_t q_bytes, q_pkts; /* waiting, not in service */
    /* the egress queue's drop-tail limit and ECN ramp: the scenario's, or
     * its switch's profile (vendors.c) */
    uint32_t q_limit, q_kmin, q_kmax;
    double q_pmax;
    uint64_t prop_ps;
    struct pkt *qh, *qt; /* output queue of a non-lazy link */
    uint32_t src;        /* node */
    uint32_t peer;       /* the opposite direction of the cable */
    uint8_t tier;        /* index into tier names (metrics) */
    uint8_t pause_sent;  /* PFC: this link's receiver has sent XOFF */
    uint8_t remote;      /* dist.c: its far end is another process's */
    uint64_t rate_bps;
    uint32_t ing_bytes; /* PFC: bytes received on this link still queued */
    uint64_t ing_max;   /* PFC: the most ing_bytes held (the headroom) */
    /* counters */
    uint64_t tx_bytes, tx_pkts, drops_q, drops_fail, drops_loss, ecn_marks;
    uint64_t pfc_xoff, paused_ps, paused_since;
    uint64_t q_max, q_sum, q_samples;
    uint64_t rng;    /* the transmitter's stream: RED marking */
    uint64_t rng_rx; /* the receiver's stream: random loss */
};

/* ---- hosts (host.c) ---- */
struct host {
    uint32_t id;
    uint32_t uplink; /* link host -> ToR */
    mre_ep *ep;      /* MetaRoCE endpoint (NULL for the baseline) */
    mre_cq *scq, *rcq;
    uint32_t lkey;       /* of the endpoint's MR over the scratch buffer */
    mre_qp **qp_by_peer; /* peer host -> local QP; owned (MetaRoCE) */
    mre_qp **qp_by_slot; /* qpn & 0xffff -> QP; owned */
    uint64_t timer_at;   /* ps of the queued EV_TIMER, T_INF none */
    uint8_t wake_pending;
    uint64_t wake_at;
    uint64_t rng;
    /* messages refused with MROCE_EFULL, retried on completions */
    uint32_t *pend;
    uint32_t npend, cappend;
    /* baseline */
    uint32_t *rqp_by_peer; /* peer -> sender QP index, NONE; owned */
    uint32_t *act;         /* active sender QPs (round robin); owned */
    uint32_t nact, capact, rr;
    struct pkt *cq_h, *cq_t; /* control packets to send first */
};

/* ---- messages and workloads (workload.c) ---- */
struct msg {
    uint32_t src, dst;
    uint32_t bytes;
    uint16_t wl;  /* workload index */
    uint8_t bg;   /* background traffic: not in the measured metrics */
    uint8_t done; /* bit 0 received, bit 1 sender completion */
    uint64_t tag; /* workload-specific (step, slice, ...) */
    uint64_t t_post, t_recv, t_sent; /* ps */
};

/* WL_FLOWS and WL_READ: across.c's scale-across and storage workloads */
enum wl_kind {
    WL_PERM,
    WL_ALLREDUCE,
    WL_ALLTOALL,
    WL_INCAST,
    WL_FLOWS,
    WL_READ
};

struct wl_cfg {
    uint8_t kind;         /* enum wl_kind */
    uint8_t background;   /* runs until the measured workloads finish */
    uint8_t random_order; /* ring / permutation placement shuffled */
    uint64_t bytes;       /* per rank (allreduce), per pair (alltoall),
                             per sender (perm, incast) */
    uint32_t msg;         /* message size: slice (allreduce) / max msg */
    uint32_t window;      /* outstanding messages per rank (slots, active) */
    uint32_t ranks;       /* 0 = all hosts */
    uint32_t senders;     /* incast */
    double fraction;      /* background: share of hosts taking part */
    /* flows: hosts src_lo.. (src_n of them) send to dst_lo + i % dst_n;
     * read: client src_lo READs from dst_n servers from dst_lo (dst_n
     * spread over the fabric when dst_lo is NONE32) */
    uint32_t src_lo, src_n, dst_lo, dst_n;
};

/* ---- scenario (scenario.c) ---- */
enum fault_kind {
    F_DOWN,
    F_BLACKHOLE,
    F_LOSS,
    F_RATE,
    F_UP,
    /* planes.c: a whole plane (a = its number) down / up; random loss val
     * on every host uplink */
    F_PLANE_DOWN,
    F_PLANE_UP,
    F_HOST_LOSS,
};
struct fault {
    uint64_t t; /* ps */
    uint8_t kind;
    char a[16], b[16];  /* the cable between nodes a and b */
    double val;         /* loss probability / rate in bit/s */
    uint64_t detect_ps; /* F_DOWN: routing reconverges after this */
    uint8_t local;      /* F_DOWN: only the cable's ends reroute */
};

enum transport { T_MROCE, T_ROCE };

struct tp_cfg {
    char name[24];
    uint8_t kind;    /* enum transport */
    uint8_t cc;      /* MetaRoCE: enum mroce_cc_algo */
    uint8_t credit;  /* MetaRoCE: receiver credits */
    uint8_t nohint;  /* MetaRoCE: rate hints off (CC-24) */
    uint8_t ask;     /* MetaRoCE: share requests before data (CC-30) */
    uint8_t hint1;   /* MetaRoCE: hints without share requests
                        (rate_hint 1, the default before CC-36) */
    uint8_t nopcwnd; /* MetaRoCE: per-path windows off (CC-20) */
    uint8_t sack256; /* MetaRoCE: no SACK extension, the 256-PSN span
                        (WIRE-52) */
    uint8_t pfc;     /* baseline: lossless */
    uint8_t dcqcn;   /* baseline: rate control */
};

#define MAX_WL 4
#define MAX_SWPROF 8

/* ECMP hash functions a switch may use (vendors.c). */
enum ecmp_hash_kind {
    HASH_5TUPLE, /* the 5-tuple, UDP source port included (default) */
    HASH_L3,     /* addresses only: every entropy of a pair on one port */
    HASH_XOR,    /* the 5-tuple folded by XOR and one multiply: another
                    ASIC's function */
};

/* One `switch = SELECTOR key=value ...` line: the switches it selects
 * (`leaf`, `spine`, `core` by tier, or one switch by name) and what they
 * do differently from the scenario's defaults (set: SWP_* bits). */
struct swprof {
    char sel[16];
    uint32_t set;
    uint32_t buffer, kmin, kmax;
    double pmax;
    uint8_t hash;
    uint8_t ecn_off;
};
#define MAX_FAULTS 16
#define MAX_TP 8

struct scenario {
    char name[64];
    uint64_t seed;
    char topo[16];                         /* "leafspine" or "fattree" */
    uint32_t hosts, hosts_per_tor, spines; /* leaf-spine */
    uint32_t k;                      /* fat-tree: pods, k/2 aggs per pod ... */
    uint32_t ft_hosts_per_edge;      /* fat-tree: hosts per edge (oversub) */
    uint64_t host_rate, fabric_rate; /* bit/s */
    uint64_t prop_ps;
    uint32_t buffer; /* per output port, bytes */
    uint32_t ecn_kmin, ecn_kmax;
    double ecn_pmax;
    uint32_t pfc_xoff, pfc_xon;
    uint32_t mtu;
    /* MetaRoCE QP attributes used in the simulator (engine memory) */
    uint32_t qp_window, qp_npaths, qp_sq, qp_rq;
    uint32_t qp_init_cwnd;        /* bytes, 0 = the engine's default */
    uint64_t qp_target_qdelay_ps; /* 0 = the engine's default */
    /* baseline */
    uint64_t roce_rto_ps;
    uint32_t roce_retry;
    uint32_t roce_ack_every;
    uint64_t limit_ps;      /* stop the run at this simulated time */
    uint64_t qp_min_rto_ps; /* 0: the engine's default */
    uint32_t qp_path_burst; /* 0: the engine's default */
    uint32_t qp_path_reuse; /* PATH-16: 1 on, 0 (default) off */
    uint64_t report_ps; /* failure report: counters read every this (0 off) */
    /* planes.c: parallel leaf-spine planes (0: key absent, one plane),
     * how a packet's plane is chosen (enum plane_select), the goodput
     * bins' width (0 off) */
    uint32_t planes;
    uint8_t plane_select;
    uint64_t bin_ps;
    /* across.c: topology "across", dcs data centres of hosts / dcs hosts
     * each (a leaf-spine), joined by lh_links WAN nodes; DC d's long-haul
     * leg to them runs at lh_rate with lh_delay_ps[d] one way */
    uint32_t dcs, lh_links;
    uint64_t lh_rate;
    uint64_t lh_delay_ps[SIM_MAX_DCS];
    struct wl_cfg wl[MAX_WL];
    uint32_t nwl;
    struct fault faults[MAX_FAULTS];
    uint32_t nfaults;
    struct swprof swp[MAX_SWPROF]; /* per-switch differences (vendors.c) */
    uint32_t nswp;
    struct tp_cfg tp[MAX_TP];
    uint32_t ntp;
    char outdir[256];
    int progress;
};
void scenario_defaults(struct scenario *sc);
/* Parse a scenario file; 0 or -1 with a message on stderr. */
int scenario_load(struct scenario *sc, const char *path);
/* scenario_json.c: a JSON scenario's text; 0 or -1 with a message. */
int scenario_load_json(struct scenario *sc, const char *path, const char *text,
                       size_t len);
/* Parse one "key = value" setting (also used for -s on the command line). */
int scenario_set(struct scenario *sc, const char *key, const char *val,
                 const char *where);

/* ---- bulk memory on huge pages (arena.c) ---- */
#define ARENA_CLASSES 1024 /* 64-byte size classes: up to 64 KiB */
struct arena_map {
    void *p;
    size_t len;
};
struct arena {
    uint8_t *cur, *end;     /* bump region */
    struct arena_map *maps; /* every mapping, for arena_destroy */
    size_t nmaps, capmaps;
    void *free_[ARENA_CLASSES]; /* arena_free'd blocks per size class */
};
/* Zeroed, 64-byte aligned, lives until arena_destroy; NULL if out of
 * memory. */
void *arena_bump(struct arena *a, size_t bytes);
/* calloc / free for the engine's allocator (16-byte aligned). */
void *arena_calloc(struct arena *a, size_t bytes);
void arena_free(struct arena *a, void *p);
/* The size an arena_calloc block was asked for. */
size_t arena_size(const void *p);
void arena_destroy(struct arena *a);
/* The run's scratch buffer: len bytes of zeros whose virtual range repeats
 * the same 16 KiB of memory (*aliased = 1), or plain calloc'd memory if
 * that cannot be set up (*aliased = 0); released by scratch_unmap. */
void *scratch_map(size_t len, int *aliased);
void scratch_unmap(void *p, size_t len, int aliased);

/* ---- the simulation ---- */
/* A stack of free engine buffers of one size, grown a huge page at a
 * time from the arena (fabric.c). */
struct bufpool {
    uint8_t **free; /* owned */
    size_t n, cap;
    uint64_t alloc; /* buffers carved so far */
};

struct counting_mem {
    uint64_t live, peak, allocs;
    struct arena *ar; /* where the engine's memory comes from */
};

/* What a host exposes to the fabric, in the manner of htsim's PacketSink:
 * the fabric hands a packet that reached host `host` to recv, which owns
 * it from then on, and calls ready when the host's uplink transmitter has
 * room, so the NIC may hand over its next packet.  A host hands packets
 * to the fabric with link_send on its uplink, the link's own receive
 * function.  run.c wires host.c's interface (host_if) into struct sim, so
 * fabric.c calls no function of host.c by name. */
struct sim;
struct host_if {
    void (*recv)(struct sim *s, uint32_t host, struct pkt *p);
    void (*ready)(struct sim *s, uint32_t host);
};

struct sim {
    const struct scenario *sc;
    const struct tp_cfg *tp;
    uint64_t now; /* ps */
    struct evq q; /* the events of the partition that runs */
    /* Partitioned runs (partition.c, MROCE_SIM_PARTITION): pq[r] holds
     * partition r's events while another one runs, gq the events every
     * partition applies (faults, reroutes); NULL / empty otherwise. */
    struct evq *pq; /* owned */
    struct evq gq;
    uint32_t nparts;
    uint32_t cur_rank; /* the partition whose events run, NONE32 between */
    /* dist.c: this process runs partition dist_me of a run over several
     * (mroce-sim-mpi); NULL in one process */
    struct dist *dist;
    uint32_t dist_me;
    struct host_conn *conn;        /* host.c: the pairs being connected */
    uint32_t conn_host, conn_peer; /* host.c: the first QP not connected */
    /* Run windows: the smallest link delay of the fabric.  A run stops at
     * the end of the window in which its measured workloads finish
     * (stop_at, T_INF before), whatever the partition. */
    uint64_t win_ps, stop_at;
    struct host_if host_if; /* the hosts' side of the fabric (run.c) */
    /* topology */
    struct node *nodes; /* hosts first: node i < nhosts is host i */
    uint32_t nnodes, nhosts, ntors, hosts_per_tor;
    struct link *links;
    uint32_t nlinks;
    const char *tier_names[8];
    uint32_t ntiers;
    /* hosts */
    struct host *hosts;
    struct arena arena; /* pools and engine memory (huge pages) */
    /* packet and buffer pools */
    struct pkt *pkt_free;
    struct bufpool bufs; /* SIM_BUF_CAP bytes each */
    uint64_t pkts_alloc;
    /* the engine writes every packet here (hot in the cache) before it is
     * copied into a pool buffer of its size; deliveries of zero-copy
     * packets are put together in rx_stage, zero but for the headers and
     * CRC of the packet being delivered (host_on_pkt) */
    uint8_t *tx_stage, *rx_stage; /* SIM_BUF_CAP each, in the arena */
    uint64_t pkts_live;
    /* messages */
    struct msg *msgs;
    uint32_t nmsgs, capmsgs;
    void *wl_state[MAX_WL];
    uint32_t wl_pending;     /* measured workloads not finished */
    uint64_t t_start, t_end; /* measured interval, ps */
    /* baseline QPs (roce.c) */
    struct rqp *rqps;
    uint32_t nrqps, caprqps;
    /* engine memory accounting */
    struct counting_mem mem;
    uint64_t qp_mem_bytes, nqps, ep_mem_bytes;
    uint8_t *scratch; /* the one buffer every MR maps; owned */
    size_t scratch_len;
    int scratch_aliased;   /* from scratch_map: how to release it */
    struct report *report; /* report.c state, NULL unless `report`; owned */
    struct part *part;     /* partition.c, NULL unless MROCE_SIM_PARTITION */
    /* counters */
    uint64_t events, pkt_events;
    uint64_t pkts_sent, pkts_delivered;
    uint64_t ev_by_type[16];
    uint64_t drops_q, drops_fail, drops_loss, drops_noroute, ecn_marks;
    uint64_t pfc_pauses, retx_pkts, tx_data_pkts, qp_errors, wc_errors;
    uint64_t mroce_timeouts, mroce_paths_retired;
    uint64_t expiry_stuck; /* engine expiry still due after handling */
    uint64_t crc_drops;    /* engines' drop_crc, summed at the end */
    uint32_t route_dirty;
    int stop;
    uint32_t nplanes;               /* parallel planes, 1 without `planes` */
    struct planes_state *planes_st; /* planes.c: bins, fault; owned */
    /* plane_select engine: packets dropped at the NIC because their tx
     * plane and the plane of their destination address differ */
    uint64_t plane_misaddr;
};

/* Called when the event about to be handled has left the heap: if the
 * next one is a packet arrival, start loading its link and ring entry
 * (cold by then: a packet's flight time touches much other memory) so
 * they are in cache when the current event is done. */
static inline void sim_prefetch_next(const struct sim *s)
{
    if (s->q.n && ev_type(&s->q.h[0]) == EV_ARRIVE) {
        const struct link *l = &s->links[ev_idx(&s->q.h[0])];
        const struct hop *h = &l->ring[l->rhead & l->rmask];
#if defined(__x86_64__) || defined(__i386__)
        /* GCC 12 drops a __builtin_prefetch of this address at -O2/-O3 */
        __asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)h));
#else
        __builtin_prefetch(h);
#endif
    }
}

/* partition.c: the queue an event for (type, idx) at t goes to in a
 * partitioned run. */
struct evq *part_queue(struct sim *s, uint64_t t, uint32_t type, uint32_t idx);

/* The queue of an event: s->q, or its partition's in a partitioned run. */
static inline struct evq *sim_queue(struct sim *s, uint64_t t, uint32_t type,
                                    uint32_t idx)
{
    return s->pq ? part_queue(s, t, type, idx) : &s->q;
}

/* Schedules an event, ordered by (time, type, index) (the sequence number
 * is 0 for all); running out of memory ends the process (the run cannot
 * go on without it). */
static inline void sim_schedule(struct sim *s, uint64_t t, uint32_t type,
                                uint32_t idx)
{
    if (evq_push_seq(sim_queue(s, t, type, idx), t, 0, type, idx) < 0) {
        fprintf(stderr, "mroce-sim: out of memory (events)\n");
        exit(2);
    }
}

/* planes.c: the host's uplink on plane `plane`: the builders add every
 * host's cable of plane 0, then of plane 1, ..., before any other, so
 * plane 0's is h->uplink and the others follow at strides of 2 * hosts. */
static inline uint32_t host_port(const struct sim *s, const struct host *h,
                                 uint32_t plane)
{
    return h->uplink + 2 * s->nhosts * plane;
}

/* The plane a MetaRoCE or baseline packet with this entropy goes out on:
 * plane_select entropy, or the NIC's least-loaded port (planes_spray).
 * With plane_select engine, MetaRoCE packets go on the engine's plane
 * (host.c) and baseline packets on entropy % P. */
uint32_t planes_spray(const struct sim *s, const struct host *h);
static inline uint32_t plane_of_entropy(const struct sim *s,
                                        const struct host *h, uint16_t entropy)
{
    if (s->nplanes == 1)
        return 0;
    if (s->sc->plane_select == PLANE_SEL_SPRAY)
        return planes_spray(s, h);
    return entropy % s->nplanes;
}

/* The NIC takes another packet from its transport: with one port, when
 * nothing waits behind the packet on the wire; with several, while some
 * port that is up has nothing waiting (planes_nic_room). */
int planes_nic_room(const struct sim *s, const struct host *h);
/* plane_select engine on more than one plane: the endpoints name planes */
static inline int planes_engine(const struct sim *s)
{
    return s->nplanes > 1 && s->sc->plane_select == PLANE_SEL_ENGINE;
}
static inline int host_nic_room(const struct sim *s, const struct host *h)
{
    if (s->nplanes == 1)
        return s->links[h->uplink].q_pkts == 0;
    return planes_nic_room(s, h);
}

/* planes.c */
struct run_result;
/* Scenario keys `planes`, `plane_select`, `bin`: 0 or -1 (a message on
 * stderr), 1 when the key is not one of them. */
int planes_scenario_set(struct scenario *sc, const char *key, const char *val,
                        const char *where);
/* vendors.c: scenario key `switch`: 0 or -1 (a message on stderr), 1 when
 * the key is another. */
int vendors_scenario_set(struct scenario *sc, const char *key, const char *val,
                         const char *where);
/* Every link's queue limit and ECN ramp and every switch's hash from the
 * scenario and its `switch` lines; 0 or -1 (a selector matching nothing). */
int vendors_apply(struct sim *s);
/* The ECMP hash of a switch whose hash is not HASH_5TUPLE. */
uint32_t vendors_hash(const struct node *n, uint32_t src, uint32_t dst,
                      uint16_t entropy);

/* Faults `TIME plane_down N`, `TIME plane_up N`, `TIME host_loss P`: 0 or
 * -1 (a message on stderr); 1 when kind is not one of them.  arg is the
 * token after the kind, extra the one after that (must be NULL). */
int planes_parse_fault(struct fault *f, const char *kind, const char *arg,
                       const char *extra, const char *where);
void planes_apply_fault(struct sim *s, uint32_t i);
/* The host's bandwidth: the sum of its ports' rates, bit/s. */
double planes_host_bps(const struct sim *s, uint32_t host);
/* Goodput bins (`bin`): run.c calls start once the workloads start and
 * sample after each step of bin_ps. */
void planes_bins_start(struct sim *s);
void planes_bins_sample(struct sim *s);
/* After the run: fills res's plane counters and, if the scenario named
 * `planes` or `bin`, prints the `planes ...` line and writes
 * planes_SCEN_TP.csv / bins_SCEN_TP.csv. */
void planes_report(struct sim *s, struct run_result *res);
void planes_free(struct sim *s);

/* ---- scale-across and storage workloads (across.c) ---- */
/* The keys dcs, lh_links, lh_rate, lh_delay: 0, -1 (message on stderr),
 * or 1 if key is not one of them. */
int across_scenario_set(struct scenario *sc, const char *key, const char *val,
                        const char *where);
/* A workload option of flows / read (src=A-B, dst=C-D, servers=N,
 * client=H): 0, -1 on a bad value, 1 if not one of them. */
int across_wl_option(struct wl_cfg *w, const char *k, const char *val);
/* After a run: the fair line (flows: per-flow rates while all are
 * active, Jain index, per workload), the read line (READ completion
 * times), the pfc line (the largest ingress occupancy PFC held and the
 * long-haul headroom 2 x BDP it compares with). */
void across_report(struct sim *s, const struct run_result *res);
/* Extra 50 us rounds the handshakes may take on long-haul legs: four
 * round trips over the longest leg (0 on other topologies). */
uint64_t across_handshake_rounds(const struct sim *s);

/* topo.c */
int topo_build(struct sim *s);
void topo_free(struct sim *s);
/* Recompute routing tables from link states (after F_DOWN detection). */
int topo_reroute(struct sim *s);
/* The cable between two named nodes: the link a->b, or NONE. */
uint32_t topo_find_link(const struct sim *s, const char *a, const char *b);

/* fabric.c */
struct pkt *pkt_alloc(struct sim *s);
void pkt_free(struct sim *s, struct pkt *p);
/* A buffer of at least `bytes` (<= SIM_BUF_CAP) for p->buf. */
void pkt_set_buf(struct sim *s, struct pkt *p, size_t bytes);
/* Hand a packet to a link's transmitter (queue or start at once).  Drops
 * (drop-tail) are counted and the packet freed. */
void link_send(struct sim *s, uint32_t l, struct pkt *p);
/* EV_ARRIVE: the head of link l's ring arrives (and leaves the heap). */
void fabric_on_arrive(struct sim *s, uint32_t l);
/* Packets in flight (in rings or NIC/PFC queues), for the counters. */
uint64_t fabric_inflight(const struct sim *s);
void fabric_on_link_free(struct sim *s, uint32_t l);
void fabric_on_pause(struct sim *s, uint32_t l, int on);
void fabric_apply_fault(struct sim *s, uint32_t i);
void fabric_free_pools(struct sim *s);
uint32_t fabric_up_link(const struct sim *s, uint32_t node, uint32_t src,
                        uint32_t dst, uint16_t entropy);

/* host.c: the NIC and the MetaRoCE engine adapter */
/* The hosts' interface to the fabric (struct host_if). */
extern const struct host_if host_if;
int host_setup(struct sim *s);
void host_teardown(struct sim *s);
/* Create QPs for the pairs the workloads use and start their handshakes;
 * run.c then runs the loop until host_pairs_connected. */
int host_connect_start(struct sim *s);
/* 1 when every QP is RTS and knows its remote QPN, else 0 (agreed over
 * the processes of a run over several: dist.c). */
int host_pairs_connected(struct sim *s);
void host_pull(struct sim *s, struct host *h);
void host_on_timer(struct sim *s, struct host *h, uint64_t t);
int host_post(struct sim *s, uint32_t msg);
void host_collect_counters(struct sim *s);
/* Diagnostics (MROCE_SIM_TRACE=FILE[:STEP_US]): opens FILE with its
 * header and sets *step (ps, 20 us by default); NULL if it cannot be
 * opened.  host_trace_rows appends one row per sending QP; run.c calls it
 * after every step of the loop, t0 the measurement's start. */
FILE *host_trace_open(const char *arg, uint64_t *step);
void host_trace_rows(struct sim *s, FILE *f, uint64_t t0);
uint32_t wl_outstanding(const struct sim *s, uint32_t host);

/* roce.c: the RoCEv2 baseline model */
int roce_post(struct sim *s, uint32_t msg);
void roce_on_pkt(struct sim *s, struct host *h, struct pkt *p);
/* Next packet the NIC should send, or NULL; *wake = when to ask again if a
 * QP is waiting for its pacing time. */
struct pkt *roce_next_pkt(struct sim *s, struct host *h, uint64_t *wake);
void roce_on_rto(struct sim *s, uint32_t qp, uint64_t t);
void roce_free(struct sim *s);
/* The host that sends on baseline QP qp. */
uint32_t roce_qp_host(const struct sim *s, uint32_t qp);
/* One trace row per sending baseline QP (host_trace_open's columns). */
void roce_trace_rows(struct sim *s, FILE *f, uint64_t t0);

/* partition.c: the fabric split over R ranks, its lookahead and what a
 * window-synchronised parallel run of this scenario would cost.
 * part_plan also moves the pending events into the partitions' queues
 * (s->pq, s->gq), and run.c's loop then runs them a window at a time,
 * one partition after the other.  Returns 0 or -1 (a message on
 * stderr). */
int part_plan(struct sim *s, uint32_t nranks);
/* The end (exclusive) of the window the partitions are running, which no
 * event for another partition may precede (part_queue checks). */
void part_window(struct sim *s, uint64_t end);
void part_count(struct sim *s, const struct ev *e);
void part_report(struct sim *s);
void part_free(struct sim *s);
uint32_t part_rank_of(const struct sim *s, uint32_t node);
uint64_t part_lookahead_ps(const struct sim *s);

/* dist.c: a partitioned run over several processes, one partition each
 * (mroce-sim-mpi, sim/src/mpi_comm.c).  The collectives come from the
 * program through struct dist_comm, so the library needs no MPI. */
struct dist_buf {
    uint8_t *p; /* owned */
    size_t n, cap;
};
/* Room for n more bytes; exits the process when out of memory. */
uint8_t *dist_buf_room(struct dist_buf *b, size_t n);
struct dist_comm {
    uint32_t rank, nranks;
    void *ctx;
    /* Every rank sends out[r] to rank r and receives into in[r] (grown
     * with dist_buf_room, n set) what rank r sent it.  0 or -1. */
    int (*exchange)(void *ctx, struct dist_buf *out, struct dist_buf *in);
    /* v[0..n) summed (max 0) or maxed (max 1) over the ranks, in place.
     * 0 or -1. */
    int (*allreduce)(void *ctx, uint64_t *v, uint32_t n, int max);
};
/* Set by mroce-sim-mpi's main before sim_run; NULL in mroce-sim. */
extern const struct dist_comm *sim_dist_comm;
/* After part_plan, before the hosts are set up: this process keeps its
 * partition (its hosts get endpoints, it runs its nodes' events) and
 * marks the links whose far end is elsewhere.  0 or -1 (a message). */
int dist_start(struct sim *s, const struct dist_comm *c);
/* Whether host h is this process's (always, in one process). */
static inline int sim_host_here(const struct sim *s, uint32_t h)
{
    return !s->dist || part_rank_of(s, h) == s->dist_me;
}
/* A packet put on a link whose far end is another process's: it is sent
 * at the end of the window (and freed here). */
void dist_send_hop(struct sim *s, uint32_t li, const struct hop *h);
/* A message posted on this process: its record goes to the process of
 * its destination; its number on the wire (dist_msg_gid) and back
 * (dist_msg_local). */
void dist_on_post(struct sim *s, uint32_t m);
uint32_t dist_msg_gid(const struct sim *s, uint32_t m);
uint32_t dist_msg_local(const struct sim *s, uint32_t gid);
/* The end of a window: exchange packets, events and message records,
 * agree on the workloads' state (may set stop_at) and return the
 * earliest next event of all processes. */
uint64_t dist_sync(struct sim *s);
/* v[0..n) summed over the processes, in place (nothing in one process);
 * 0 or -1. */
int dist_sum(struct sim *s, uint64_t *v, uint64_t n);
/* After the run: sums the counters and gathers the messages on rank 0.
 * 0 or -1. */
int dist_finish(struct sim *s);
void dist_free(struct sim *s);
/* fabric.c: a packet from another process enters link li's ring. */
void fabric_inject(struct sim *s, uint32_t li, struct hop *h);

/* workload.c */
int wl_setup(struct sim *s);
void wl_start(struct sim *s);
void wl_free(struct sim *s);
/* Iterate the (src, dst) pairs the workloads will use (connection setup);
 * calls fn once per unordered pair.  Returns fn's first nonzero value. */
int wl_pairs(struct sim *s, int (*fn)(struct sim *, uint32_t, uint32_t));
void wl_on_recv(struct sim *s, uint32_t msg);
void wl_on_sent(struct sim *s, uint32_t msg);
/* Ideal completion time of the measured workloads: bytes over the
 * bottleneck bandwidth (host NICs, ToR and aggregation uplinks), ps. */
uint64_t wl_ideal_ps(const struct sim *s);
uint32_t msg_new(struct sim *s, uint32_t src, uint32_t dst, uint32_t bytes,
                 uint16_t wl, uint64_t tag);
/* dist.c: the measured workloads' receives counted here and the latest
 * of them (ps), per workload; and the agreed totals set back. */
uint32_t wl_count(const struct sim *s);
void wl_local(const struct sim *s, uint32_t i, uint64_t *received,
              uint64_t *t_last);
void wl_global(struct sim *s, uint32_t i, uint64_t received, uint64_t t_last);
/* Post a message with the run's transport. */
void tp_post(struct sim *s, uint32_t msg);

/* metrics.c */
struct run_result {
    uint64_t ideal_ps, time_ps;
    double eff;
    double mct_p50, mct_p99, mct_p999, mct_max; /* us */
    uint64_t msgs, msgs_done;
    int complete;
    double wall_s, cpu_s;
    /* for tests: packet conservation and determinism */
    uint64_t pkts_sent, pkts_delivered, pkts_dropped, pkts_inflight;
    uint64_t events, retx_pkts, ecn_marks, qp_errors;
    uint64_t crc_drops;     /* MetaRoCE packets the engines dropped for CRC */
    uint64_t tier_bytes[8]; /* bytes sent per tier during the run */
    uint64_t link_pkts_max, link_pkts_min; /* over tor->spine links */
    uint32_t links_busy; /* tor->spine links with >= 5% of the busiest */
    /* planes.c: bytes the hosts sent on each plane's uplinks */
    uint32_t nplanes;
    uint64_t plane_tx_bytes[SIM_MAX_PLANES];
    /* plane_select engine (planes.c): the planes the handshakes negotiated
     * (fewest and most over the QPs), per plane the QPs whose engine
     * reports it down at the end, the times QPs marked it down, and the
     * packets the engine put on it (mre_qp_plane_stats); packets whose
     * tx plane and destination plane disagreed (dropped) */
    uint32_t eng_planes_min, eng_planes_max;
    uint32_t eng_down_qps[SIM_MAX_PLANES];
    uint64_t eng_downs[SIM_MAX_PLANES];
    uint64_t eng_tx_pkts[SIM_MAX_PLANES];
    uint64_t plane_misaddr;
};
void metrics_report(struct sim *s, struct run_result *r);
int metrics_write(struct sim *s, const struct run_result *r);

/* run.c: one run, and the only owner of the event loop */
int sim_run(const struct scenario *sc, const struct tp_cfg *tp,
            struct run_result *res);

/* report.c: the failure report (scenario key `report`).  run.c runs the
 * measured part in steps: report_start once, then until report_until's
 * time, report_sample after each step. */
void report_start(struct sim *s);
uint64_t report_until(const struct sim *s, uint64_t limit);
void report_sample(struct sim *s);
void report_print(struct sim *s);

#endif /* MROCE_SIM_H */
