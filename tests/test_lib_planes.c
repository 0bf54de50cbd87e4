/*
 * test_lib_planes.c - libmroce with two planes over loopback
 * (docs/spec/multipath.md, Planes): each device attaches to 127.0.0.1 and
 * 127.0.0.2 (both are loopback on Linux), one datapath per plane, and
 *   - a bulk WRITE transfer uses both planes' sockets;
 *   - when one plane's sockets of the sender are blackholed mid-transfer
 *     (the datapath's test hook drops all they send and receive), the
 *     transfer completes, correct, over the other plane.
 * Both devices run their own progress thread; the test posts and polls.
 */
#include <stdio.h>

#include "libpair.h"

/* libmroce's internal test hooks (src/lib/planes.c; linked statically). */
void lib_plane_blackhole(mroce_device *dev, uint8_t plane, int on);
void lib_plane_counters(mroce_device *dev, uint8_t plane,
                        struct mroce_udp_counters *c);

#define CHUNK (1u << 20)
#define NCHUNK 8

static int open_planes(struct side *s)
{
    static unsigned salt;
    int rc = MROCE_EADDR;
    memset(s, 0, sizeof(*s));
    for (int i = 0; i < 50 && rc == MROCE_EADDR; i++) {
        struct mroce_device_attr a;
        mroce_device_attr_default(&a);
        a.progress = MROCE_PROGRESS_THREAD;
        a.port = (uint16_t)(20000 + ((unsigned)getpid() * 211u +
                                     salt++ * 7919u + (unsigned)i * 104729u) %
                                        20000u);
        a.planes = "127.0.0.1,127.0.0.2";
        rc = mroce_device_open(&a, &s->dev);
    }
    if (rc < 0)
        return rc;
    struct mroce_qp_init_attr qa;
    if ((rc = mroce_pd_alloc(s->dev, &s->pd)) < 0 ||
        (rc = mroce_create_cq(s->dev, 256, &s->cq)) < 0)
        return rc;
    mroce_qp_init_attr_default(&qa);
    qa.send_cq = qa.recv_cq = s->cq;
    if ((rc = mroce_create_qp(s->pd, &qa, &s->qp)) < 0)
        return rc;
    s->buf_len = (size_t)CHUNK * NCHUNK;
    s->buf = aligned_alloc(4096, s->buf_len);
    if (!s->buf)
        return MROCE_ENOMEM;
    memset(s->buf, 0, s->buf_len);
    return mroce_reg_mr(s->pd, s->buf, s->buf_len,
                        MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE,
                        &s->mr);
}

/* Posts `n` WRITEs of a's whole buffer, chunk by chunk, to b, keeping up
 * to NCHUNK outstanding; calls mid() once half of them completed.  Returns
 * the completions that failed (or went missing within 20 s). */
static int transfer(struct side *a, struct side *b, int n,
                    void (*mid)(struct side *))
{
    int posted = 0, done = 0, bad = 0, mid_done = 0;
    uint64_t end = now_ms() + 20000;
    while (done < n && now_ms() < end) {
        while (posted < n && posted - done < NCHUNK) {
            size_t off = (size_t)(posted % NCHUNK) * CHUNK;
            if (side_post(a, MROCE_WR_WRITE, (uint64_t)posted, off, CHUNK, b,
                          off) != 0)
                break;
            posted++;
        }
        struct mroce_wc wc[8];
        int k = mroce_poll_cq(a->cq, 8, wc);
        for (int i = 0; i < k; i++) {
            done++;
            bad += wc[i].status != MROCE_WC_SUCCESS;
        }
        if (!mid_done && mid && done >= n / 2) {
            mid(a);
            mid_done = 1;
        }
        if (k == 0)
            usleep(100);
    }
    return bad + (n - done);
}

static void blackhole_plane1(struct side *a)
{
    lib_plane_blackhole(a->dev, 1, 1);
}

int main(void)
{
    struct side a, b;
    if (!CHECK(open_planes(&a) == 0) || !CHECK(open_planes(&b) == 0))
        return TESTUTIL_SUMMARY("test_lib_planes");
    for (size_t i = 0; i < a.buf_len; i++)
        a.buf[i] = (uint8_t)(i * 2654435761u >> 13);
    if (!connect_pair(&a, &b))
        return TESTUTIL_SUMMARY("test_lib_planes");

    /* Both planes carry data. */
    struct mroce_udp_counters c0, c1, d0, d1;
    CHECK_EQ(transfer(&a, &b, 16, NULL), 0);
    lib_plane_counters(a.dev, 0, &c0);
    lib_plane_counters(a.dev, 1, &c1);
    lib_plane_counters(b.dev, 0, &d0);
    lib_plane_counters(b.dev, 1, &d1);
    printf("plane tx a: %llu %llu, rx b: %llu %llu\n",
           (unsigned long long)c0.tx_pkts, (unsigned long long)c1.tx_pkts,
           (unsigned long long)d0.rx_pkts, (unsigned long long)d1.rx_pkts);
    CHECK(c0.tx_pkts > 500);
    CHECK(c1.tx_pkts > 500);
    CHECK(d0.rx_pkts > 500);
    CHECK(d1.rx_pkts > 500);
    CHECK(memcmp(a.buf, b.buf, a.buf_len) == 0);

    /* Plane 1 of the sender goes dark halfway through. */
    memset(b.buf, 0, b.buf_len);
    CHECK_EQ(transfer(&a, &b, 64, blackhole_plane1), 0);
    CHECK(memcmp(a.buf, b.buf, a.buf_len) == 0);
    lib_plane_counters(a.dev, 1, &c1);
    printf("plane 1 of a blackholed: %llu sent packets dropped\n",
           (unsigned long long)c1.fault_tx_drop);
    CHECK(c1.fault_tx_drop > 0);

    side_fini(&a);
    side_fini(&b);
    return TESTUTIL_SUMMARY("test_lib_planes");
}
