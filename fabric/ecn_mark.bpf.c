/*
 * ecn_mark.bpf.c - queue-based ECN marking for mroce-fabric links.
 *
 * Attached (tc clsact, direct action) to the egress of a veth whose root
 * qdisc is a tbf with rate RATE_BPS.  A tbf's backlog is invisible to BPF,
 * and this kernel has no red/codel/fq_codel, so the program keeps a
 * virtual copy of the tbf's queue: a byte counter that grows by every
 * packet handed to the qdisc and drains at RATE_BPS/8 bytes per second
 * (the tbf's service rate).  While the tbf is busy its real backlog equals
 * this counter minus at most its token bucket (the tbf's burst), so:
 *
 *   - a packet that finds more than MARK_BYTES queued ahead of it is marked
 *     CE (if ECT; bpf_skb_ecn_set_ce leaves Not-ECT packets alone); with
 *     KMAX_BYTES above MARK_BYTES the marking is RED-like instead: between
 *     the two with probability PMAX_PCT% x (queue - MARK) / (KMAX - MARK),
 *     above KMAX_BYTES always (the switch profile mroce-tune derives);
 *   - a packet that would take the queue past LIMIT_BYTES is dropped here
 *     (tail drop), so the program, not the tbf, owns the queue limit and
 *     the virtual queue never counts packets the tbf dropped (the tbf's own
 *     limit is set above LIMIT_BYTES plus its burst).
 *
 * Counters (packets, bytes, marks, drops) live in the same one-entry array
 * map, read by `mroce-fabric status` through bpftool.
 * Build: clang -O2 -g -target bpf -DRATE_BPS=... -DMARK_BYTES=... -DLIMIT_BYTES=...
 *        [-DKMAX_BYTES=... -DPMAX_PCT=...]
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>

#ifndef RATE_BPS
#define RATE_BPS 500000000ULL
#endif
#ifndef MARK_BYTES
#define MARK_BYTES 65536ULL
#endif
#ifndef KMAX_BYTES
#define KMAX_BYTES MARK_BYTES
#endif
#ifndef PMAX_PCT
#define PMAX_PCT 100ULL
#endif
#ifndef LIMIT_BYTES
#define LIMIT_BYTES 262144ULL
#endif

#define SEC(n) __attribute__((section(n), used))
#define __uint(name, val) int(*name)[val]
#define __type(name, val) __typeof__(val) *name

static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)
    BPF_FUNC_map_lookup_elem;
static __u64 (*bpf_ktime_get_ns)(void) = (void *)BPF_FUNC_ktime_get_ns;
static __u32 (*bpf_get_prandom_u32)(void) = (void *)BPF_FUNC_get_prandom_u32;
static long (*bpf_skb_ecn_set_ce)(struct __sk_buff *skb) = (void *)
    BPF_FUNC_skb_ecn_set_ce;
static long (*bpf_spin_lock)(struct bpf_spin_lock *l) = (void *)
    BPF_FUNC_spin_lock;
static long (*bpf_spin_unlock)(struct bpf_spin_lock *l) = (void *)
    BPF_FUNC_spin_unlock;

struct mrf_vq {
    struct bpf_spin_lock lock;
    __u32 pad;
    __u64 last_ns; /* time of the last update */
    __u64 backlog; /* virtual queue, bytes */
    __u64 pkts, bytes, marks, drops, max_backlog;
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct mrf_vq);
} mrf_vq SEC(".maps");

SEC("tc")
int mrf_ecn(struct __sk_buff *skb)
{
    __u32 key = 0;
    struct mrf_vq *q = bpf_map_lookup_elem(&mrf_vq, &key);
    if (!q)
        return TC_ACT_OK;
    __u64 now = bpf_ktime_get_ns();
    __u64 len = skb->len;
    int mark = 0, drop = 0;
    __u64 ramp = 0; /* 0: no draw; else 1 + the ramp's probability */

    bpf_spin_lock(&q->lock);
    __u64 dt = now > q->last_ns ? now - q->last_ns : 0;
    if (dt > 1000000000ULL)
        dt = 1000000000ULL;
    __u64 drained = dt * (RATE_BPS / 8) / 1000000000ULL;
    q->backlog = q->backlog > drained ? q->backlog - drained : 0;
    /* Advance only by the time actually converted into drained bytes, so
     * short gaps do not lose fractional bytes. */
    if (drained || q->backlog == 0)
        q->last_ns = now;
    if (q->backlog + len > LIMIT_BYTES) {
        drop = 1;
        q->drops++;
    } else {
        mark = q->backlog > MARK_BYTES;
        /* RED ramp: p = PMAX x (backlog - MARK) / (KMAX - MARK) in 1/65536,
         * drawn after the lock (no helper calls under a BPF spin lock). */
        if (mark && KMAX_BYTES > MARK_BYTES && q->backlog < KMAX_BYTES)
            ramp = PMAX_PCT * 65536ULL * (q->backlog - MARK_BYTES) /
                       (100ULL * (KMAX_BYTES - MARK_BYTES)) +
                   1;
        q->backlog += len;
        if (q->backlog > q->max_backlog)
            q->max_backlog = q->backlog;
        q->pkts++;
        q->bytes += len;
    }
    bpf_spin_unlock(&q->lock);

    if (drop)
        return TC_ACT_SHOT;
    if (ramp && (bpf_get_prandom_u32() & 0xffff) >= ramp - 1)
        mark = 0;
    if (mark && bpf_skb_ecn_set_ce(skb) == 1) {
        bpf_spin_lock(&q->lock);
        q->marks++;
        bpf_spin_unlock(&q->lock);
    }
    return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
