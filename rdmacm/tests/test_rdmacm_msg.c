/*
 * test_rdmacm_msg.c - the CM messages of librdmacm over MetaRoCE
 * (rdmacm/cm_msg.c): every type round-trips with its private data; a
 * message split anywhere parses only once whole; and the parser refuses
 * a wrong magic or version, an unknown type, a body on RTU/DREQ/DREP/MRA,
 * a body too short for REQ/REP/REJ, private data longer than the type
 * allows or than the body, while the encoder refuses to write them.
 */
#include <stdio.h>
#include <string.h>

#include "../cm_msg.h"

static int failures;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                  \
            failures++;                                                      \
        }                                                                    \
    } while (0)

static struct cm_msg sample(uint8_t type, uint8_t plen)
{
    struct cm_msg m = {.type = type};
    if (type == CM_REQ || type == CM_REP || type == CM_REJ) {
        for (int i = 0; i < 16; i++)
            m.gid[i] = (uint8_t)(0xa0 + i);
        m.qpn = 0x00123456;
        m.resp_res = 3;
        m.init_depth = 4;
        m.retry = 5;
        m.rnr_retry = 7;
        m.flow_control = 1;
        m.reason = type == CM_REJ ? 28 : 0;
        m.pdata_len = plen;
        for (int i = 0; i < plen && i < (int)sizeof(m.pdata); i++)
            m.pdata[i] = (uint8_t)(i * 7 + 1);
    }
    return m;
}

static void round_trip(uint8_t type, uint8_t plen)
{
    struct cm_msg m = sample(type, plen), out;
    uint8_t buf[CM_MSG_MAX];
    size_t n = cm_msg_encode(&m, buf);
    CHECK(n > 0);
    for (size_t k = 0; k < n; k++)
        CHECK(cm_msg_parse(buf, k, &out) == 0); /* a part: wait for more */
    CHECK(cm_msg_parse(buf, n, &out) == (int)n);
    CHECK(memcmp(&m, &out, sizeof(m)) == 0);
}

int main(void)
{
    for (uint8_t t = CM_REQ; t <= CM_MSG_TYPE_MAX; t++) {
        unsigned max = cm_msg_pdata_max(t);
        round_trip(t, 0);
        if (max) {
            round_trip(t, 1);
            round_trip(t, (uint8_t)max);
            struct cm_msg m = sample(t, (uint8_t)(max + 1));
            uint8_t buf[CM_MSG_MAX + 64];
            CHECK(cm_msg_encode(&m, buf) == 0); /* too much private data */
        }
    }
    CHECK(cm_msg_pdata_max(CM_REQ) == 56 && cm_msg_pdata_max(CM_REP) == 196 &&
          cm_msg_pdata_max(CM_REJ) == 148);

    struct cm_msg m = sample(CM_REQ, 10), out;
    uint8_t good[CM_MSG_MAX], bad[CM_MSG_MAX];
    size_t n = cm_msg_encode(&m, good);
    memcpy(bad, good, n);
    bad[0] ^= 1; /* magic */
    CHECK(cm_msg_parse(bad, n, &out) == -1);
    memcpy(bad, good, n);
    bad[4] = 2; /* version */
    CHECK(cm_msg_parse(bad, n, &out) == -1);
    memcpy(bad, good, n);
    bad[5] = 0; /* type */
    CHECK(cm_msg_parse(bad, n, &out) == -1);
    bad[5] = CM_MSG_TYPE_MAX + 1;
    CHECK(cm_msg_parse(bad, n, &out) == -1);
    memcpy(bad, good, n);
    bad[CM_MSG_HDR + 27] = 11; /* private data longer than the body */
    CHECK(cm_msg_parse(bad, n, &out) == -1);
    bad[CM_MSG_HDR + 27] = 9; /* or shorter */
    CHECK(cm_msg_parse(bad, n, &out) == -1);
    memcpy(bad, good, n);
    bad[7] = CM_MSG_FIXED - 1; /* body too short for a REQ */
    bad[6] = 0;
    CHECK(cm_msg_parse(bad, n, &out) == -1);
    bad[7] = (uint8_t)(CM_MSG_FIXED + 57); /* more than a REQ may carry */
    CHECK(cm_msg_parse(bad, sizeof(bad), &out) == -1);
    bad[6] = 0xff; /* a length far past any message */
    CHECK(cm_msg_parse(bad, n, &out) == -1);
    struct cm_msg r = sample(CM_RTU, 0);
    n = cm_msg_encode(&r, good);
    CHECK(n == CM_MSG_HDR);
    good[7] = 1; /* RTU with a body */
    CHECK(cm_msg_parse(good, n + 1, &out) == -1);
    struct cm_msg u = {.type = 9};
    CHECK(cm_msg_encode(&u, good) == 0);

    /* Two messages back to back parse one at a time. */
    struct cm_msg a = sample(CM_REP, 196), b = sample(CM_DREQ, 0);
    uint8_t two[2 * CM_MSG_MAX];
    size_t na = cm_msg_encode(&a, two), nb = cm_msg_encode(&b, two + na);
    CHECK(cm_msg_parse(two, na + nb, &out) == (int)na && out.type == CM_REP);
    CHECK(cm_msg_parse(two + na, nb, &out) == (int)nb && out.type == CM_DREQ);

    if (failures) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
