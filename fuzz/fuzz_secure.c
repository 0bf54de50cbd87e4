/*
 * fuzz_secure.c - libFuzzer target for the secure receive path
 * (src/engine/secure.c: WIRE-44, SEC-20..SEC-25).
 *
 * Each input starts from the same state: two endpoints A and B in secure
 * mode, connected by the real authenticated handshake, B with a writable
 * region, a WRITE from A partly delivered, and key rotation every 8
 * packets.  The crypto is a stand-in with the interface of mre_crypto (a
 * keyed XOR stream and a 16-byte keyed checksum as tag), so that the
 * harness can seal arbitrary bytes with the connection's real keys, SPI
 * and Seq and the fuzzer reaches everything after the tag check: the
 * decoding of opened packets, epochs, the replay window.
 *
 * Record: mode (1 byte) | len (2 bytes, big-endian) | len bytes
 *   mode & 3 == 0  raw: the bytes to B as a datagram
 *   mode & 3 == 1  sealed: the bytes are a clear packet (base header
 *                  onwards, CRC excluded); Dst QPN and token are set to
 *                  B's, Pkt Len to the length, and A's QP seals it (real
 *                  SPI, epoch, next Seq) before B receives it
 *   mode & 3 == 2  sealed, then the first len bytes XORed over the sealed
 *                  packet from offset 0 (a forged or damaged header, tag)
 *   mode & 3 == 3  replay the last sealed packet, then move genuine
 *                  traffic both ways and run timers
 * After every record: the guard bytes around B's region are untouched and
 * every packet either engine writes is a valid sealed packet.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "../tests/testutil.h"

#define REGION 8192
#define GUARD 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The stand-in crypto: a key is 8 bytes of a hash of its info. */
struct fz_key {
    uint64_t k;
};
static uint64_t mix(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}
static int fz_key_new(void *u, uint8_t suite, const uint8_t *info, size_t n,
                      void **key)
{
    (void)u;
    struct fz_key *k = malloc(sizeof *k);
    if (!k)
        return -1;
    k->k = mix(0xcbf29ce484222325ull ^ suite, info, n);
    *key = k;
    return 0;
}
static void fz_key_free(void *u, void *key)
{
    (void)u;
    free(key);
}
static void fz_tag(const struct fz_key *k, const uint8_t *nonce,
                   const uint8_t *aad, size_t an, const uint8_t *ct, size_t n,
                   uint8_t *tag)
{
    uint64_t h = mix(k->k, nonce, 12);
    h = mix(h, aad, an);
    uint64_t h2 = mix(h ^ 0x5555, ct ? ct : (const uint8_t *)"", ct ? n : 0);
    memcpy(tag, &h, 8);
    memcpy(tag + 8, &h2, 8);
}
static void fz_xor(const struct fz_key *k, const uint8_t *nonce,
                   const uint8_t *in, size_t n, uint8_t *out)
{
    uint64_t s = mix(k->k, nonce, 12);
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1;
        out[i] = in[i] ^ (uint8_t)(s >> 56);
    }
}
static int fz_seal(void *u, void *key, const uint8_t *nonce, const uint8_t *aad,
                   size_t an, const uint8_t *in, size_t n, uint8_t *out,
                   uint8_t *tag)
{
    (void)u;
    if (n)
        fz_xor(key, nonce, in, n, out);
    fz_tag(key, nonce, aad, an, n ? out : NULL, n, tag);
    return 0;
}
static int fz_open(void *u, void *key, const uint8_t *nonce, const uint8_t *aad,
                   size_t an, const uint8_t *in, size_t n, uint8_t *out,
                   const uint8_t *tag)
{
    uint8_t t[16];
    (void)u;
    fz_tag(key, nonce, aad, an, n ? in : NULL, n, t);
    if (memcmp(t, tag, 16) != 0)
        return -1;
    if (n)
        fz_xor(key, nonce, in, n, out);
    return 0;
}
static int fz_hs_mac(void *u, const uint8_t *m, size_t n, uint8_t *mac)
{
    (void)u;
    uint64_t h = mix(0x1234, m, n);
    memcpy(mac, &h, 8);
    memcpy(mac + 8, &h, 8);
    return 0;
}

struct host {
    mre_ep *ep;
    mre_cq *cq;
    mre_qp *qp;
    mre_mr *mr;
    uint64_t seed;
    uint8_t id;
};

static uint8_t *mem_b; /* GUARD | REGION | GUARD */
static uint8_t pkt[MROCE_MAX_PKT_LEN], last[MROCE_MAX_PKT_LEN];
static size_t last_len;
static mroce_tstamp now;

static void host_open(struct host *h, uint8_t id)
{
    struct mre_ep_config c;
    struct mre_qp_attr a;
    memset(h, 0, sizeof *h);
    h->id = id;
    h->seed = id;
    mre_ep_config_default(&c);
    c.mem.calloc = testutil_calloc;
    c.mem.free = testutil_free;
    c.rand = testutil_rand_bytes;
    c.rand_user = &h->seed;
    c.sec_suite = MROCE_SUITE_AES128_GCM;
    c.crypto.key_new = fz_key_new;
    c.crypto.key_free = fz_key_free;
    c.crypto.seal = fz_seal;
    c.crypto.open = fz_open;
    c.crypto.hs_mac = fz_hs_mac;
    c.sec_rotate_pkts = 8;
    if (mre_ep_new(&h->ep, &c) || mre_cq_new(h->ep, 256, &h->cq))
        abort();
    mre_qp_attr_default(&a);
    a.send_cq = a.recv_cq = h->cq;
    a.mtu = 1024;
    a.npaths = 2;
    a.cc_algo = MROCE_CC_NONE;
    if (mre_qp_new(h->ep, &a, &h->qp))
        abort();
}

static struct mre_addr addr(uint8_t id)
{
    struct mre_addr a;
    memset(&a, 0, sizeof a);
    a.len = 1;
    a.data[0] = id;
    return a;
}

static void recv_at(struct host *to, uint8_t from, const uint8_t *p, size_t n)
{
    struct mre_rx_info ri;
    memset(&ri, 0, sizeof ri);
    ri.from = addr(from);
    mre_ep_recv(to->ep, p, n, &ri, now);
}

/* Genuine traffic both ways until quiet; every packet must be sealed or a
 * CONNECT. */
static void shuttle(struct host *a, struct host *b)
{
    for (int round = 0; round < 64; round++) {
        int any = 0;
        struct host *from[2] = {a, b}, *to[2] = {b, a};
        for (int k = 0; k < 2; k++) {
            struct mre_tx_info ti;
            int n;
            while ((n = mre_ep_write_pkt(from[k]->ep, pkt, sizeof pkt, &ti,
                                         now)) > 0) {
                struct mrw_base_hdr bh;
                struct mrw_sec_hdr sh;
                struct mrw_pkt p;
                if (mrw_sec_decode(&bh, &sh, pkt, (size_t)n) != 0 &&
                    (mrw_pkt_decode(&p, pkt, (size_t)n) != 0 ||
                     (p.base.opcode != MROCE_OP_CONNECT_REQ &&
                      p.base.opcode != MROCE_OP_CONNECT_RESP)))
                    abort(); /* SEC-17: never in clear */
                recv_at(to[k], from[k]->id, pkt, (size_t)n);
                any = 1;
            }
        }
        now += 5000;
        if (!any)
            break;
    }
}

static void check_guards(void)
{
    for (int i = 0; i < GUARD; i++)
        if (mem_b[i] != 0xee || mem_b[GUARD + REGION + i] != 0xee)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct host a, b;
    static uint8_t src[REGION];
    struct mroce_wc wc[16];
    now = 1000000;
    if (!mem_b)
        mem_b = malloc(REGION + 2 * GUARD);
    memset(mem_b, 0xee, REGION + 2 * GUARD);
    memset(mem_b + GUARD, 0, REGION);
    host_open(&a, 1);
    host_open(&b, 2);
    mre_mr *mra;
    if (mre_mr_reg(b.ep, mem_b + GUARD, REGION,
                   MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE,
                   &b.mr) ||
        mre_mr_reg(a.ep, src, REGION, MROCE_ACCESS_LOCAL_WRITE, &mra))
        abort();
    struct mre_addr to = addr(2);
    mre_qp_listen(b.qp, now);
    mre_qp_connect(a.qp, &to, 0, now);
    shuttle(&a, &b);
    if (mre_qp_state(a.qp) != MROCE_QPS_RTS)
        abort();
    struct mroce_sge sge = {(uint64_t)(uintptr_t)src, 4096, mre_mr_lkey(mra)};
    struct mroce_send_wr wr, *bad;
    memset(&wr, 0, sizeof wr);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = MROCE_WR_WRITE;
    wr.send_flags = MROCE_SEND_SIGNALED;
    wr.remote_addr = (uint64_t)(uintptr_t)(mem_b + GUARD);
    wr.rkey = mre_mr_rkey(b.mr);
    mre_qp_post_send(a.qp, &wr, &bad, now);
    last_len = 0;

    while (size >= 3) {
        unsigned mode = data[0];
        size_t len = (size_t)data[1] << 8 | data[2];
        data += 3;
        size -= 3;
        if (len > size)
            len = size;
        const uint8_t *rec = data;
        data += len;
        size -= len;
        switch (mode & 3) {
        case 0:
            recv_at(&b, 1, rec, len);
            break;
        case 1:
        case 2: {
            /* A clear packet at pkt + SEC_HDR_LEN, sealed by A's QP. */
            size_t n = len < MROCE_BASE_HDR_LEN ? MROCE_BASE_HDR_LEN : len;
            if (n + MROCE_CRC_LEN + MROCE_SEC_OVERHEAD > 4096)
                n = 4096 - MROCE_CRC_LEN - MROCE_SEC_OVERHEAD;
            uint8_t *w = pkt + MROCE_SEC_HDR_LEN;
            memset(w, 0, n);
            memcpy(w, rec, len < n ? len : n);
            w[0] = MROCE_VERSION;
            uint32_t q = mre_qp_num(b.qp);
            w[4] = (uint8_t)(q >> 24);
            w[5] = (uint8_t)(q >> 16);
            w[6] = (uint8_t)(q >> 8);
            w[7] = (uint8_t)q;
            uint64_t tok = a.qp->peer_token;
            for (int i = 0; i < 8; i++)
                w[8 + i] = (uint8_t)(tok >> (56 - 8 * i));
            w[26] = (uint8_t)((n + MROCE_CRC_LEN) >> 8);
            w[27] = (uint8_t)(n + MROCE_CRC_LEN);
            if (w[1] == MROCE_OP_CONNECT_REQ || w[1] == MROCE_OP_CONNECT_RESP)
                w[1] = MROCE_OP_WRITE; /* mre_sec_tx leaves those clear */
            int s = mre_sec_tx(a.qp, pkt, n + MROCE_CRC_LEN);
            if (s <= 0)
                break;
            if ((mode & 3) == 2)
                for (size_t i = 0; i < len && i < (size_t)s; i++)
                    pkt[i] ^= rec[i];
            memcpy(last, pkt, (size_t)s);
            last_len = (size_t)s;
            recv_at(&b, 1, pkt, (size_t)s);
            break;
        }
        default:
            if (last_len)
                recv_at(&b, 1, last, last_len);
            now += (mode >> 2) * 100000ull;
            mre_ep_handle_expiry(a.ep, now);
            mre_ep_handle_expiry(b.ep, now);
            shuttle(&a, &b);
            break;
        }
        check_guards();
        while (mre_cq_poll(a.cq, 16, wc) > 0 || mre_cq_poll(b.cq, 16, wc) > 0)
            ;
    }
    now += 10000000;
    mre_ep_handle_expiry(a.ep, now);
    mre_ep_handle_expiry(b.ep, now);
    shuttle(&a, &b);
    check_guards();
    mre_ep_del(a.ep);
    mre_ep_del(b.ep);
    return 0;
}
