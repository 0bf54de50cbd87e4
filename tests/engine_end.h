/*
 * engine_end.h - one end of an engine-level test: an endpoint on a
 * made-up 6-byte address (10.0.0.id) with the tests' allocator and seeded
 * random bytes, and one CQ.  Tests that pass packets between two engines
 * by hand (test_engine_conntab, test_engine_handshake) open their ends
 * through it.
 */
#ifndef MROCE_TEST_ENGINE_END_H
#define MROCE_TEST_ENGINE_END_H

#include "engine_int.h"
#include "testutil.h"

struct end {
    mre_ep *ep;           /* owned: freed by the test */
    mre_cq *cq;           /* owned by ep */
    struct mre_addr addr; /* 10.0.0.id */
    uint64_t seed;        /* state of the endpoint's random bytes */
};

/* Opens e as end `id` with random seed `seed`, at most max_qps QPs and a
 * CQ of cq_depth entries: 0, or the engine's negative error. */
static inline int end_new(struct end *e, uint8_t id, uint64_t seed,
                          uint32_t max_qps, uint32_t cq_depth)
{
    struct mre_ep_config c;
    mre_ep_config_default(&c);
    c.mem.calloc = testutil_calloc;
    c.mem.free = testutil_free;
    c.rand = testutil_rand_bytes;
    e->seed = seed;
    c.rand_user = &e->seed;
    c.max_qps = max_qps;
    memset(&e->addr, 0, sizeof(e->addr));
    e->addr.len = 6;
    e->addr.data[0] = 10;
    e->addr.data[3] = id;
    int rc = mre_ep_new(&e->ep, &c);
    if (rc < 0)
        return rc;
    return mre_cq_new(e->ep, cq_depth, &e->cq);
}

#endif /* MROCE_TEST_ENGINE_END_H */
