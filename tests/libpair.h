/*
 * libpair.h - two libmroce devices on 127.0.0.1, one RC QP each, connected
 * to each other: the set-up the libmroce tests that watch both ends of a
 * connection (test_lib_basic, test_lib_ackdefer, test_lib_ackbatch)
 * share.  Header-only and static like testutil.h.
 *
 * Each side has a device (APP progress unless asked) on a port drawn from
 * the pid and retried (parallel CTest runs must not collide), a PD, one CQ
 * for both directions, a QP and a zeroed, page-aligned buffer registered
 * with the access the test asks for.  connect_pair() accepts on b in a thread while a connects: each
 * call drives its own device, so neither can stall the other.
 */
#ifndef MROCE_TESTS_LIBPAIR_H
#define MROCE_TESTS_LIBPAIR_H

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mroce/mroce.h>

#include "testutil.h"

static inline uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct side {
    mroce_device *dev;
    mroce_pd *pd;
    mroce_cq *cq;
    mroce_qp *qp;
    uint8_t *buf;
    size_t buf_len;
    mroce_mr *mr;
};

/* Opens a device of progress mode `mode` on a port that is free now: ports
 * are drawn from the pid and retried, so parallel CTest runs do not
 * collide.  0 or a negative error. */
static inline int libpair_open_dev(mroce_device **dev, int mode)
{
    static unsigned salt;
    int rc = MROCE_EADDR;
    for (int i = 0; i < 50 && rc == MROCE_EADDR; i++) {
        struct mroce_device_attr a;
        mroce_device_attr_default(&a);
        a.progress = (uint8_t)mode;
        a.port = (uint16_t)(20000 + ((unsigned)getpid() * 173u +
                                     salt++ * 7919u + (unsigned)i * 104729u) %
                                        20000u);
        a.src_port_count = 64;
        rc = mroce_device_open(&a, dev);
    }
    return rc;
}

/* A device of progress mode `mode`, a PD, a CQ, a QP of engine attributes
 * *eng (NULL: mroce_qp_init_attr_default's) and buf_len zeroed,
 * page-aligned bytes registered with `access`.  0 or a negative error. */
static inline int side_open_eng(struct side *s, size_t buf_len, int access,
                                int mode, const struct mre_qp_attr *eng)
{
    memset(s, 0, sizeof(*s));
    int rc = libpair_open_dev(&s->dev, mode);
    if (rc < 0)
        return rc;
    struct mroce_qp_init_attr qa;
    if ((rc = mroce_pd_alloc(s->dev, &s->pd)) < 0 ||
        (rc = mroce_create_cq(s->dev, 256, &s->cq)) < 0)
        return rc;
    mroce_qp_init_attr_default(&qa);
    if (eng)
        qa.eng = *eng;
    qa.send_cq = s->cq;
    qa.recv_cq = s->cq;
    if ((rc = mroce_create_qp(s->pd, &qa, &s->qp)) < 0)
        return rc;
    s->buf = aligned_alloc(4096, (buf_len + 4095) & ~(size_t)4095);
    if (!s->buf)
        return MROCE_ENOMEM;
    memset(s->buf, 0, buf_len);
    s->buf_len = buf_len;
    return mroce_reg_mr(s->pd, s->buf, buf_len, access, &s->mr);
}

/* The same with the default attributes but init_cwnd (0 keeps the
 * default). */
static inline int side_open_mode(struct side *s, size_t buf_len, int access,
                                 uint32_t init_cwnd, int mode)
{
    struct mroce_qp_init_attr qa;
    mroce_qp_init_attr_default(&qa);
    if (init_cwnd)
        qa.eng.init_cwnd = init_cwnd;
    return side_open_eng(s, buf_len, access, mode, &qa.eng);
}

/* The same on an APP-progress device. */
static inline int side_open(struct side *s, size_t buf_len, int access,
                            uint32_t init_cwnd)
{
    return side_open_mode(s, buf_len, access, init_cwnd, MROCE_PROGRESS_APP);
}

/* Posts one signaled WR: opcode (SEND, WRITE or READ) over len bytes at
 * offset off of s's buffer; a WRITE or READ goes to, or comes from, offset
 * roff of peer's buffer (peer NULL for a SEND).  0 or a negative error. */
static inline int side_post(struct side *s, enum mroce_wr_opcode opcode,
                            uint64_t id, size_t off, uint32_t len,
                            const struct side *peer, size_t roff)
{
    struct mroce_sge sg = {(uintptr_t)s->buf + off, len, mroce_mr_lkey(s->mr)};
    struct mroce_send_wr w, *bad;
    memset(&w, 0, sizeof(w));
    w.wr_id = id;
    w.sg_list = &sg;
    w.num_sge = 1;
    w.opcode = opcode;
    w.send_flags = MROCE_SEND_SIGNALED;
    if (peer) {
        w.remote_addr = (uintptr_t)peer->buf + roff;
        w.rkey = mroce_mr_rkey(peer->mr);
    }
    return mroce_post_send(s->qp, &w, &bad);
}

static inline void side_fini(struct side *s)
{
    if (s->dev)
        mroce_device_close(s->dev);
    free(s->buf);
}

struct libpair_accept {
    mroce_qp *qp;
    int rc;
};

static inline void *libpair_accept_main(void *p)
{
    struct libpair_accept *a = p;
    a->rc = mroce_accept(a->qp, 3000);
    return NULL;
}

/* a connects to b; 1 when both ends are connected (a failed CHECK if not). */
static inline int connect_pair(struct side *a, struct side *b)
{
    struct libpair_accept arg = {b->qp, -99};
    pthread_t t;
    if (!CHECK(pthread_create(&t, NULL, libpair_accept_main, &arg) == 0))
        return 0;
    usleep(10000); /* let accept listen (connect retries anyway) */
    int rc = mroce_connect(a->qp, "127.0.0.1", mroce_device_port(b->dev), 0,
                           3000);
    pthread_join(t, NULL);
    return CHECK_MSG(rc == 0 && arg.rc == 0, "connect %d accept %d", rc,
                     arg.rc);
}

#endif
