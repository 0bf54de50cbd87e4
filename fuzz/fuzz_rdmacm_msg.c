/*
 * fuzz_rdmacm_msg.c - libFuzzer target for the CM messages librdmacm over
 * MetaRoCE reads from its peer's TCP connection (rdmacm/cm_msg.c).
 *
 * cm_msg_parse() is all the library decodes from a peer's bytes, so this
 * target feeds it arbitrary input as the CM thread does (message after
 * message from the start of a buffer; ASan and UBSan catch any read
 * outside it) and checks what it accepts:
 *   - a message's length is within the input and at most CM_MSG_MAX;
 *   - its private data fits the type's limit (cm_msg_pdata_max);
 *   - re-encoding it with cm_msg_encode() gives back exactly the bytes it
 *     was parsed from (the format has no ignored bytes);
 *   - a prefix of it is "need more" (0), never a different verdict.
 * Any disagreement aborts.
 *
 * Without MROCE_FUZZ it is linked with replay_main.c and replays
 * fuzz/corpus/fuzz_rdmacm_msg/ as a test.  That seed corpus is written by
 * this file compiled with -DGEN_CORPUS (its own main()):
 *   cc -DGEN_CORPUS -I rdmacm fuzz/fuzz_rdmacm_msg.c rdmacm/cm_msg.c \
 *      -o gen && ./gen fuzz/corpus/fuzz_rdmacm_msg
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_msg.h"

#define CHECK(c)     \
    do {             \
        if (!(c))    \
            abort(); \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0;
    while (off < size) {
        struct cm_msg m;
        int n = cm_msg_parse(data + off, size - off, &m);
        if (n <= 0)
            break;
        CHECK((size_t)n <= size - off && n <= CM_MSG_MAX);
        CHECK(m.pdata_len <= cm_msg_pdata_max(m.type));
        uint8_t buf[CM_MSG_MAX];
        CHECK(cm_msg_encode(&m, buf) == (size_t)n);
        CHECK(memcmp(buf, data + off, (size_t)n) == 0);
        struct cm_msg p;
        CHECK(cm_msg_parse(data + off, (size_t)n - 1, &p) == 0);
        off += (size_t)n;
    }
    return 0;
}

#ifdef GEN_CORPUS
#include "corpus_emit.h"

static size_t msg(uint8_t *out, uint8_t type, uint8_t plen)
{
    struct cm_msg m = {.type = type,
                       .qpn = 0x10203,
                       .resp_res = 1,
                       .init_depth = 1,
                       .retry = 7,
                       .rnr_retry = 7,
                       .reason = type == CM_REJ ? 28 : 0,
                       .pdata_len = plen};
    m.gid[10] = m.gid[11] = 0xff;
    m.gid[12] = 127;
    m.gid[15] = 1;
    memset(m.pdata, 0x5a, plen);
    return cm_msg_encode(&m, out);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    corpus_dir = argv[1];
    uint8_t b[4 * CM_MSG_MAX];
    corpus_emit("req", b, msg(b, CM_REQ, 0));
    corpus_emit("req_pdata_max", b, msg(b, CM_REQ, CM_REQ_PDATA));
    corpus_emit("rep_pdata_max", b, msg(b, CM_REP, CM_REP_PDATA));
    corpus_emit("rej_pdata", b, msg(b, CM_REJ, 9));
    size_t n = msg(b, CM_RTU, 0);
    n += msg(b + n, CM_DREQ, 0);
    n += msg(b + n, CM_DREP, 0);
    corpus_emit("rtu_dreq_drep", b, n);
    corpus_emit("mra", b, msg(b, CM_MRA, 0));
    n = msg(b, CM_REQ, 20);
    corpus_emit("req_truncated", b, n - 5);
    b[27 + CM_MSG_HDR] = 21; /* private data longer than the body */
    corpus_emit("req_bad_pdata_len", b, n);
    return 0;
}
#endif
