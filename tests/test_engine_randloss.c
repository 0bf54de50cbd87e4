/*
 * test_engine_randloss.c - random loss on a path without a queue (LOSS-31,
 * LOSS-32): how soon the hole at snd_una is repaired, and that losses
 * without a queue do not hold the congestion estimate up.
 *
 * 2 hosts on the network model (2 us one way), host 0 WRITEs to host 1.
 *
 * 1. Head hole (LOSS-31): after a few 64 KiB WRITEs that give the QP its
 *    RTT estimate, one more 64 KiB WRITE loses its next-to-last data
 *    packet (a tx hook drops it).  Nothing follows the message, and its 16
 *    packets are fewer than the 64 slots, so neither LOSS-6 nor the
 *    ooo_thresh distance applies: LOSS-7 (b) finds it, and the hole is at
 *    snd_una, whose arrival the receiver acknowledges at once (REL-20 (d)).
 *    (The WRITE's last packet is sent as a WRITE of its own once the drop
 *    is done, so that it leaves after the lost one.)
 *    Checked: it is declared lost (cause ooo) less than 2 srtt +
 *    max_ack_delay after it was sent (the guard LOSS-7 (b) gives any
 *    other packet); the data are intact.
 * 2. Random loss, no queue (LOSS-32): infinitely fast links (no queue,
 *    every RTT sample the base RTT) and 5% random loss, 32 MiB.  Checked:
 *    alpha ends below 1% (each round's losses counted as marks hold it
 *    near the loss rate, 5%); every loss repaired, data intact.
 */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "testbed.h"
#include "testutil.h"

#define MSG (64u << 10)
#define WARM 8u /* WRITEs before the lossy one */
#define BULK (32u << 20)
#define MODEL_LIMIT 2000000000ull

struct drop_one {
    uint32_t seen, at; /* host 0's data packets so far; the one to drop */
    mroce_tstamp sent; /* when it was dropped, 0 = not yet */
};

/* Drops host 0's data packet number `at` (packets over 1 KiB). */
static int drop_hook(void *user, struct mroce_netdrive_pkt *pkt)
{
    struct drop_one *d = user;
    if (pkt->src != 0 || pkt->len < 1024)
        return MROCE_NETDRIVE_PASS;
    if (d->seen++ == d->at) {
        d->sent = pkt->now;
        return MROCE_NETDRIVE_DROP;
    }
    return MROCE_NETDRIVE_PASS;
}

struct bed {
    struct mroce_testbed *tb;
    mre_qp *qa, *qb;
    uint8_t *src, *dst;
    mre_mr *msrc, *mdst;
};

static int bed_new(struct bed *b, uint64_t seed, uint64_t size, int fast)
{
    struct mroce_netdrive_config cfg;
    mroce_netdrive_config_default(&cfg);
    cfg.net.seed = seed;
    memset(b, 0, sizeof(*b));
    if (!CHECK(mroce_tb_new(&b->tb, &cfg, NULL) == 0))
        return -1;
    if (fast)
        CHECK(mroce_net_set_rate(mroce_netdrive_net(b->tb->d), 0) == 0);
    struct mre_qp_attr at;
    mre_qp_attr_default(&at);
    at.max_send_wr = 64;
    if (!CHECK(mroce_tb_connect(b->tb, 0, 1, &at, &b->qa, &b->qb, 100000000) ==
               0)) {
        mroce_tb_del(b->tb);
        return -1;
    }
    b->src = malloc(size);
    b->dst = calloc(1, size);
    uint64_t s = seed;
    for (uint64_t i = 0; i < size; i += 8) {
        s = testutil_rand64(&s);
        memcpy(b->src + i, &s, 8);
    }
    CHECK(mre_mr_reg(b->tb->h[0].ep, b->src, size, MROCE_ACCESS_LOCAL_WRITE,
                     &b->msrc) == 0);
    CHECK(mre_mr_reg(b->tb->h[1].ep, b->dst, size,
                     MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE,
                     &b->mdst) == 0);
    return 0;
}

static void bed_write(struct bed *b, uint64_t off, uint32_t len, uint64_t id)
{
    struct mroce_sge sg = {(uint64_t)(uintptr_t)(b->src + off), len,
                           mre_mr_lkey(b->msrc)};
    struct mroce_send_wr wr = {.wr_id = id,
                               .sg_list = &sg,
                               .num_sge = 1,
                               .opcode = MROCE_WR_WRITE,
                               .send_flags = MROCE_SEND_SIGNALED,
                               .remote_addr = (uint64_t)(uintptr_t)(b->dst +
                                                                    off),
                               .rkey = mre_mr_rkey(b->mdst)};
    CHECK(mre_qp_post_send(b->qa, &wr, NULL, mroce_netdrive_now(b->tb->d)) ==
          0);
    mroce_netdrive_kick_all(b->tb->d);
}

/* Runs the model until `want` send completions (all successful) or the
 * limit; returns how many came. */
static uint32_t bed_wait(struct bed *b, uint32_t want, uint32_t *done,
                         void (*each)(struct bed *, void *), void *user)
{
    mroce_tstamp t0 = mroce_netdrive_now(b->tb->d);
    while (*done < want && mroce_netdrive_step(b->tb->d) &&
           mroce_netdrive_now(b->tb->d) - t0 <= MODEL_LIMIT) {
        struct mroce_wc wc[16];
        int n = mre_cq_poll(b->tb->h[0].scq, 16, wc);
        for (int i = 0; i < n; i++, (*done)++)
            CHECK(wc[i].status == MROCE_WC_SUCCESS);
        if (each)
            each(b, user);
    }
    return *done;
}

static void bed_end(struct bed *b)
{
    mre_qp_del(b->qa);
    mre_qp_del(b->qb);
    mroce_tb_del(b->tb);
    free(b->src);
    free(b->dst);
}

struct head_watch {
    struct drop_one *d;
    mroce_tstamp declared, bound; /* when retx_ooo rose; 2 srtt + mad then */
};

static void head_each(struct bed *b, void *user)
{
    struct head_watch *w = user;
    if (w->declared || !b->qa->cnt.retx_ooo)
        return;
    w->declared = mroce_netdrive_now(b->tb->d);
    w->bound = 2 * b->qa->srtt + b->qa->peer_ack_delay;
}

static void head_hole(uint64_t seed)
{
    struct bed b;
    uint64_t size = (uint64_t)(WARM + 1) * MSG;
    if (bed_new(&b, seed, size, 0) != 0)
        return;
    uint32_t per = MSG / 4096; /* data packets per WRITE at MTU 4096 */
    struct drop_one d = {0, WARM * per + per - 2, 0};
    mroce_netdrive_set_tx_hook(b.tb->d, drop_hook, &d);
    uint32_t done = 0;
    for (uint32_t i = 0; i < WARM; i++) {
        bed_write(&b, (uint64_t)i * MSG, MSG, i);
        CHECK(bed_wait(&b, i + 1, &done, NULL, NULL) == i + 1);
    }
    CHECK(b.qa->srtt != 0);
    struct head_watch w = {&d, 0, 0};
    bed_write(&b, (uint64_t)WARM * MSG, MSG - 4096, WARM);
    /* The last packet goes as a WRITE of its own once the drop is done: a
     * burst leaves the engine at one instant, and a packet sent at the
     * lost one's instant shows nothing about it (RACK, LOSS-7 step 2). */
    while ((!d.sent || mroce_netdrive_now(b.tb->d) == d.sent) &&
           mroce_netdrive_step(b.tb->d))
        ;
    bed_write(&b, (uint64_t)WARM * MSG + MSG - 4096, 4096, WARM + 1);
    CHECK(bed_wait(&b, WARM + 2, &done, head_each, &w) == WARM + 2);
    CHECK(d.sent != 0);
    CHECK(b.qa->cnt.retx_ooo == 1 && b.qa->cnt.retx_path == 0);
    CHECK(b.qa->cnt.timeouts == 0);
    CHECK(w.declared > d.sent);
    printf("head hole: declared %llu ns after sending, 2 srtt + mad %llu ns\n",
           (unsigned long long)(w.declared - d.sent),
           (unsigned long long)w.bound);
    CHECK(w.declared - d.sent < w.bound);
    CHECK(memcmp(b.src, b.dst, size) == 0);
    bed_end(&b);
}

static void random_loss(uint64_t seed)
{
    struct bed b;
    if (bed_new(&b, seed, BULK, 1) != 0)
        return;
    mroce_net_set_loss(mroce_netdrive_net(b.tb->d), 0.05);
    uint32_t n = BULK / (1u << 20), done = 0;
    for (uint32_t i = 0; i < n; i++)
        bed_write(&b, (uint64_t)i << 20, 1u << 20, i);
    CHECK(bed_wait(&b, n, &done, NULL, NULL) == n);
    printf("random loss: alpha %.4f, cwnd %u, retx %llu, timeouts %llu\n",
           b.qa->cc.alpha / 65536.0, b.qa->cc.cwnd,
           (unsigned long long)b.qa->cnt.retx_pkts,
           (unsigned long long)b.qa->cnt.timeouts);
    CHECK(b.qa->cnt.retx_pkts > 0);
    CHECK(b.qa->cc.alpha < 65536 / 100);
    CHECK(memcmp(b.src, b.dst, BULK) == 0);
    bed_end(&b);
}

int main(void)
{
    head_hole(1);
    head_hole(2);
    random_loss(1);
    return testutil_summary("test_engine_randloss");
}
