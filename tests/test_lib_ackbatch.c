/*
 * test_lib_ackbatch.c - how a receiving device spaces its ACKs inside a
 * receive batch (rx_one in src/lib/progress.c, REL-18 and REL-18a), between
 * two devices on 127.0.0.1 driven from one thread.
 *
 * a posts MSGS WRITEs of 8 packets as one chain (only the last packet
 * carries ACK_REQ, REL-23), which its post_send sends at once (a window of
 * 1 MiB; GSO bursts of 8, GRO datagrams at b); they wait in b's socket
 * until b's progress rounds take them in batches (usually one round).  A
 * batched receiver may process up to 16 more packets after an ACK fell due
 * (the 4th new packet since the last ACK) but must then send it: an ACK
 * newly covers at most 4 - 1 + 16 = 19 PSNs, so b sends at least
 * ceil(STREAM / 19) ACKs.  It should also send at most one per 19 packets
 * of a round and one at each round's end: the library sent one every 16
 * packets counted from the last drain before (12 for 192 packets in one
 * round, where 11 do), and each ACK costs the receiver a sendmsg and the
 * sender a receive.  Every WRITE must complete.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mroce/mroce.h>

#include "libpair.h"
#include "testutil.h"

#define BUF_SIZE (1u << 20)
#define MTU 4096u
#define MSG (8u * MTU)
#define MSGS 24u
#define STREAM (MSGS * MSG / MTU) /* packets */
#define MAX_NEW_PER_ACK 19u
#define RW (MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE)

/* MSGS WRITEs of MSG bytes in one chain, the last one signaled. */
static int post_stream(struct side *a, struct side *b)
{
    static struct mroce_sge sg[MSGS];
    static struct mroce_send_wr w[MSGS];
    memset(w, 0, sizeof(w));
    for (unsigned i = 0; i < MSGS; i++) {
        sg[i].addr = (uintptr_t)a->buf + (size_t)i * MSG;
        sg[i].length = MSG;
        sg[i].lkey = mroce_mr_lkey(a->mr);
        w[i].wr_id = i;
        w[i].sg_list = &sg[i];
        w[i].num_sge = 1;
        w[i].opcode = MROCE_WR_WRITE;
        w[i].send_flags = i == MSGS - 1 ? MROCE_SEND_SIGNALED : 0;
        w[i].remote_addr = (uintptr_t)b->buf + (size_t)i * MSG;
        w[i].rkey = mroce_mr_rkey(b->mr);
        w[i].next = i + 1 < MSGS ? &w[i + 1] : NULL;
        memset(a->buf + (size_t)i * MSG, (int)(i + 1), MSG);
    }
    struct mroce_send_wr *bad;
    return mroce_post_send(a->qp, w, &bad);
}

static uint64_t qp_counter_rx_data(struct side *s)
{
    struct mroce_qp_counters c;
    return mroce_qp_get_counters(s->qp, &c) == 0 ? c.rx_data_pkts : 0;
}

static uint64_t qp_counter_tx_acks(struct side *s)
{
    struct mroce_qp_counters c;
    return mroce_qp_get_counters(s->qp, &c) == 0 ? c.tx_acks : 0;
}

int main(void)
{
    struct side a, b;
    struct mroce_qp_init_attr qa;
    /* an initial window of 1 MiB and no share request before data
     * (rate_hint 1; 2, the default, would hold all but the first packet
     * for b's answer, CC-36): a sends the whole stream at once */
    mroce_qp_init_attr_default(&qa);
    qa.eng.init_cwnd = 1u << 20;
    qa.eng.rate_hint = 1;
    if (!CHECK(side_open_eng(&a, BUF_SIZE, RW, MROCE_PROGRESS_APP, &qa.eng) ==
               0) ||
        !CHECK(side_open(&b, BUF_SIZE, RW, 1u << 20) == 0) ||
        !connect_pair(&a, &b)) {
        side_fini(&a);
        side_fini(&b);
        return TESTUTIL_SUMMARY("test_lib_ackbatch");
    }
    uint64_t acks0 = qp_counter_tx_acks(&b), rx0 = qp_counter_rx_data(&b);
    CHECK(post_stream(&a, &b) == 0);
    /* b alone takes the stream in as few rounds as its batches allow. */
    unsigned rounds = 0;
    uint64_t end = now_ms() + 3000;
    while (qp_counter_rx_data(&b) - rx0 < STREAM && now_ms() < end) {
        if (mroce_device_progress(b.dev) > 0)
            rounds++;
    }
    uint64_t got = qp_counter_rx_data(&b) - rx0;
    uint64_t acks = qp_counter_tx_acks(&b) - acks0;
    CHECK_MSG(got == STREAM, "b received %llu of %u packets",
              (unsigned long long)got, STREAM);
    printf("%u packets in %u rounds of b: %llu ACKs\n", STREAM, rounds,
           (unsigned long long)acks);
    CHECK_MSG(acks * MAX_NEW_PER_ACK >= got,
              "%llu ACKs for %llu packets: one covered more than %u "
              "(REL-18, REL-18a)",
              (unsigned long long)acks, (unsigned long long)got,
              MAX_NEW_PER_ACK);
    CHECK_MSG(acks <= got / MAX_NEW_PER_ACK + rounds,
              "%llu ACKs for %llu packets in %u rounds: more than one per "
              "%u packets and one per round",
              (unsigned long long)acks, (unsigned long long)got, rounds,
              MAX_NEW_PER_ACK);
    /* Every WRITE completes (the last is signaled; completions are in
     * order) and landed. */
    int done = 0;
    end = now_ms() + 3000;
    while (!done && now_ms() < end) {
        struct mroce_wc wc;
        int n = mroce_poll_cq(a.cq, 1, &wc);
        if (n == 1) {
            CHECK_MSG(wc.status == MROCE_WC_SUCCESS && wc.wr_id == MSGS - 1,
                      "completion %llu: %s", (unsigned long long)wc.wr_id,
                      mroce_wc_status_str(wc.status));
            done = 1;
        }
        mroce_device_progress(b.dev);
    }
    CHECK_MSG(done, "the last WRITE never completed");
    int same = 1;
    for (unsigned i = 0; i < MSGS; i++)
        if (b.buf[(size_t)i * MSG] != (uint8_t)(i + 1) ||
            b.buf[(size_t)i * MSG + MSG - 1] != (uint8_t)(i + 1))
            same = 0;
    CHECK_MSG(same, "WRITE data differs at the target");
    side_fini(&a);
    side_fini(&b);
    return TESTUTIL_SUMMARY("test_lib_ackbatch");
}
