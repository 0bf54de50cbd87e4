/*
 * test_lib_secure_vectors.c - the secure-mode vectors of
 * tests/vectors/secure_vectors.txt (WIRE-45), made with OpenSSL by
 * gen_secure_vectors.py, against the reference implementation: the engine
 * seals the vectors' clear packet (secure.c, through libmroce's EVP
 * callbacks) into exactly the vector's bytes, the codec decodes the SEC
 * header and the SECURE extension, opening the vector gives the clear
 * packet back, and the handshake MAC matches.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

#include "../src/lib/secure_evp.h"
#include "testutil.h"

struct vec {
    char name[64];
    unsigned suite;
    unsigned long long qpn, token, spi, epoch, seq;
    uint8_t info[64], key[32], clear[256], pkt[512], k_hs[32];
    size_t info_len, key_len, clear_len, pkt_len;
};

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = 0;
    unsigned v;
    while (*s && n < cap) {
        while (*s == ' ')
            s++;
        if (sscanf(s, "%2x", &v) != 1)
            break;
        out[n++] = (uint8_t)v;
        s += 2;
    }
    return n;
}

static void check_sealed(const uint8_t *master, const struct vec *v)
{
    struct lib_sec *s;
    struct mre_ep_config cfg;
    mre_ep *ep;
    mre_cq *cq;
    mre_qp *qp;
    struct mre_qp_attr a;
    uint64_t seed = 1;
    static uint8_t buf[MROCE_MAX_PKT_LEN];
    CHECK(lib_sec_new((uint8_t)v->suite, 0, master, 32, &s) == 0);
    mre_ep_config_default(&cfg);
    cfg.mem.calloc = testutil_calloc;
    cfg.mem.free = testutil_free;
    cfg.rand = testutil_rand_bytes;
    cfg.rand_user = &seed;
    lib_sec_fill(s, &cfg);
    CHECK(mre_ep_new(&ep, &cfg) == 0);
    CHECK(mre_cq_new(ep, 16, &cq) == 0);
    mre_qp_attr_default(&a);
    a.send_cq = a.recv_cq = cq;
    CHECK(mre_qp_new(ep, &a, &qp) == 0);
    /* The connection the vector's packet belongs to, as the handshake
     * would have left it. */
    struct mrw_conn_hdr c;
    memset(&c, 0, sizeof c);
    c.sec_spi = (uint32_t)v->spi;
    qp->peer_qpn = (uint32_t)v->qpn;
    qp->peer_token = v->token;
    CHECK(mre_sec_on_handshake(qp, &c) == 0);
    /* The engine writes the clear packet behind room for the SEC header;
     * then seals it. */
    memcpy(buf + MROCE_SEC_HDR_LEN, v->clear, v->clear_len);
    size_t n = mrw_pkt_seal(buf + MROCE_SEC_HDR_LEN, v->clear_len);
    int len = mre_sec_tx(qp, buf, n);
    CHECK(len == (int)v->pkt_len);
    CHECK(len > 0 && memcmp(buf, v->pkt, v->pkt_len) == 0);
    if (len > 0 && memcmp(buf, v->pkt, v->pkt_len) != 0)
        fprintf(stderr, "%s: sealed bytes differ from the vector\n", v->name);

    /* The codec reads the SEC header of the vector. */
    struct mrw_base_hdr b;
    struct mrw_sec_hdr sh;
    CHECK(mrw_sec_decode(&b, &sh, v->pkt, v->pkt_len) == 0);
    CHECK(sh.spi == v->spi && sh.epoch == v->epoch && sh.suite == v->suite &&
          sh.seq == v->seq && b.dst_qpn == v->qpn && b.token == v->token);
    /* A clear decoder drops it as a reserved flag (WIRE-38). */
    struct mrw_pkt p;
    CHECK(mrw_pkt_decode(&p, v->pkt, v->pkt_len) == MROCE_WIRE_EFLAGS);

    /* The key of the vector opens it: the callbacks alone (the info is
     * SEC-15's, which the vector spells out). */
    void *key = NULL;
    uint8_t nonce[12], out[256];
    CHECK(cfg.crypto.key_new(s, (uint8_t)v->suite, v->info, v->info_len,
                             &key) == 0);
    memcpy(nonce, v->pkt + 28, 4);
    memcpy(nonce + 4, v->pkt + 36, 8);
    size_t plen = v->pkt_len - 44 - 16;
    const uint8_t *tag = v->pkt + v->pkt_len - 16;
    if (v->suite == MROCE_SUITE_AES128_GMAC) {
        CHECK(cfg.crypto.open(s, key, nonce, v->pkt, 44 + plen, NULL, 0, NULL,
                              tag) == 0);
        CHECK(memcmp(v->pkt + 44, v->clear + 28, plen) == 0);
    } else {
        CHECK(cfg.crypto.open(s, key, nonce, v->pkt, 44, v->pkt + 44, plen, out,
                              tag) == 0);
        CHECK(memcmp(out, v->clear + 28, plen) == 0);
        /* One flipped bit of additional data: refused. */
        uint8_t t[512];
        memcpy(t, v->pkt, v->pkt_len);
        t[20] ^= 1;
        CHECK(cfg.crypto.open(s, key, nonce, t, 44, t + 44, plen, out, tag) <
              0);
    }
    cfg.crypto.key_free(s, key);
    mre_ep_del(ep);
    lib_sec_free(s);
}

static void check_connect(const uint8_t *master, const struct vec *v)
{
    struct lib_sec *s;
    struct mre_ep_config cfg;
    struct mrw_pkt p;
    uint8_t mac[16];
    CHECK(lib_sec_new(1, 0, master, 32, &s) == 0);
    mre_ep_config_default(&cfg);
    lib_sec_fill(s, &cfg);
    CHECK(mrw_pkt_decode(&p, v->pkt, v->pkt_len) == 0);
    CHECK(p.u.conn.sec_present && p.u.conn.sec_suite == v->suite &&
          p.u.conn.sec_spi == v->spi);
    CHECK(cfg.crypto.hs_mac(s, v->pkt, v->pkt_len - 4 - 16, mac) == 0);
    CHECK(memcmp(mac, p.u.conn.sec_mac, 16) == 0);
    /* The encoder writes the same bytes before the MAC. */
    uint8_t buf[256];
    size_t n = mrw_pkt_encode(&p, buf, sizeof buf);
    CHECK(n == v->pkt_len && memcmp(buf, v->pkt, n) == 0);
    lib_sec_free(s);
}

int main(void)
{
    FILE *f = fopen("tests/vectors/secure_vectors.txt", "r");
    char line[512];
    uint8_t master[32];
    struct vec v;
    int nv = 0, have = 0, have_master = 0;
    if (!f) {
        perror("tests/vectors/secure_vectors.txt");
        return 1;
    }
    memset(&v, 0, sizeof v);
    for (;;) {
        char *l = fgets(line, sizeof line, f);
        if (!l || !strncmp(line, "name: ", 6)) {
            if (have) {
                if (!strcmp(v.name, "connect_req_secure"))
                    check_connect(master, &v);
                else
                    check_sealed(master, &v);
                nv++;
            }
            if (!l)
                break;
            memset(&v, 0, sizeof v);
            sscanf(line + 6, "%63s", v.name);
            have = 1;
            continue;
        }
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "master: ", 8))
            have_master = unhex(line + 8, master, 32) == 32;
        else if (!strncmp(line, "suite: ", 7))
            v.suite = (unsigned)strtoul(line + 7, NULL, 0);
        else if (!strncmp(line, "qpn: ", 5))
            v.qpn = strtoull(line + 5, NULL, 0);
        else if (!strncmp(line, "token: ", 7))
            v.token = strtoull(line + 7, NULL, 0);
        else if (!strncmp(line, "spi: ", 5))
            v.spi = strtoull(line + 5, NULL, 0);
        else if (!strncmp(line, "epoch: ", 7))
            v.epoch = strtoull(line + 7, NULL, 0);
        else if (!strncmp(line, "seq: ", 5))
            v.seq = strtoull(line + 5, NULL, 0);
        else if (!strncmp(line, "info: ", 6))
            v.info_len = unhex(line + 6, v.info, sizeof v.info);
        else if (!strncmp(line, "key: ", 5))
            v.key_len = unhex(line + 5, v.key, sizeof v.key);
        else if (!strncmp(line, "k_hs: ", 6))
            unhex(line + 6, v.k_hs, sizeof v.k_hs);
        else if (!strncmp(line, "clear: ", 7))
            v.clear_len = unhex(line + 7, v.clear, sizeof v.clear);
        else if (!strncmp(line, "hex: ", 5))
            v.pkt_len += unhex(line + 5, v.pkt + v.pkt_len,
                               sizeof v.pkt - v.pkt_len);
    }
    fclose(f);
    CHECK(have_master);
    CHECK(nv == 4);
    printf("test_lib_secure_vectors: %d vectors read\n", nv);
    return TESTUTIL_SUMMARY("test_lib_secure_vectors");
}
