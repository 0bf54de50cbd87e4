/*
 * secure.c - the tester's side of secure mode (docs/spec/security.md
 * section 6, wire-format.md section 8): its own HKDF, AES-GCM and HMAC
 * with OpenSSL's libcrypto, written from the spec and sharing no code with
 * the implementation under test, so a case judges the IUT against the
 * spec rather than against itself.
 *
 * A case gives the IUT a random master key (DEVICE key= suite=), connects
 * with an authenticated CONNECT_REQ (ct_sec_connect), seals the packets it
 * sends (ct_sec_seal) and opens what the IUT seals back (ct_sec_drain).
 */
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/core_names.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)(v >> 16));
    put16(p + 2, (uint16_t)v);
}
static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)(v >> 32));
    put32(p + 4, (uint32_t)v);
}

/* SEC-13: HKDF-SHA256, salt "MetaRoCE v1". */
static void hkdf(struct ct *t, const uint8_t *master, const uint8_t *info,
                 size_t n, uint8_t *out, size_t len)
{
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    EVP_KDF_CTX *kc = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
    OSSL_PARAM p[5];
    int ok = 0;
    if (kc) {
        p[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
                                                (char *)"SHA256", 0);
        p[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
                                                 (void *)master, 32);
        p[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
                                                 (void *)"MetaRoCE v1", 11);
        p[3] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO,
                                                 (void *)info, n);
        p[4] = OSSL_PARAM_construct_end();
        ok = EVP_KDF_derive(kc, out, len, p) == 1;
    }
    EVP_KDF_CTX_free(kc);
    EVP_KDF_free(kdf);
    if (!ok)
        ct_fail(t, "tester: HKDF failed");
}

/* SEC-31: the master key of generation gen; the first key for one we
 * do not hold (the packet then fails its tag). */
static const uint8_t *master_of(const struct ct_sec *s, uint8_t gen)
{
    return s->have_next && gen == s->next_gen ? s->next : s->master;
}

/* SEC-15: the key of packets to (qpn, token, spi) in epoch, under the
 * master key of generation gen. */
static size_t pkt_key(struct ct *t, const struct ct_sec *s, uint8_t gen,
                      uint32_t qpn, uint64_t token, uint32_t spi,
                      uint16_t epoch, uint8_t *key)
{
    uint8_t info[31];
    size_t kl = s->suite == 2 ? 32 : 16;
    memcpy(info, "mroce packet", 12);
    info[12] = s->suite;
    put32(info + 13, qpn);
    put64(info + 17, token);
    put32(info + 25, spi);
    put16(info + 29, epoch);
    hkdf(t, master_of(s, gen), info, sizeof info, key, kl);
    return kl;
}

/* SEC-14, WIRE-43: HMAC-SHA256 under K_hs, first 16 bytes. */
static void hs_mac(struct ct *t, const struct ct_sec *s, const uint8_t *m,
                   size_t n, uint8_t *mac)
{
    uint8_t k[32], full[32];
    unsigned int len = 0;
    hkdf(t, s->master, (const uint8_t *)"mroce handshake", 15, k, sizeof k);
    if (!HMAC(EVP_sha256(), k, sizeof k, m, n, full, &len))
        ct_fail(t, "tester: HMAC failed");
    memcpy(mac, full, 16);
}

static int gcm(const uint8_t *key, size_t kl, int enc, const uint8_t *nonce,
               const uint8_t *aad, size_t an, const uint8_t *in, size_t n,
               uint8_t *out, uint8_t *tag)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int l, ok;
    ok = c &&
         EVP_CipherInit_ex(c, kl == 32 ? EVP_aes_256_gcm() : EVP_aes_128_gcm(),
                           NULL, key, nonce, enc) == 1 &&
         EVP_CipherUpdate(c, NULL, &l, aad, (int)an) == 1 &&
         (n == 0 || EVP_CipherUpdate(c, out, &l, in, (int)n) == 1);
    if (ok && !enc)
        ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, 16, tag) == 1;
    ok = ok && EVP_CipherFinal_ex(c, out + n, &l) == 1;
    if (ok && enc)
        ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1;
    EVP_CIPHER_CTX_free(c);
    return ok ? 0 : -1;
}

void ct_sec_device(struct ct *t, struct ct_sec *s, uint8_t suite)
{
    char hex[65];
    memset(s, 0, sizeof *s);
    s->suite = suite;
    for (size_t i = 0; i < sizeof s->master; i += 8)
        put64(s->master + i, ct_rand(t));
    for (size_t i = 0; i < sizeof s->master; i++)
        snprintf(hex + 2 * i, 3, "%02x", s->master[i]);
    do
        s->spi = (uint32_t)ct_rand(t);
    while (s->spi == 0);
    ct_agent(t, "DEVICE key=%s suite=%u", hex, suite);
}

void ct_sec_add_key(struct ct *t, struct ct_sec *s, uint8_t gen)
{
    char hex[65];
    for (size_t i = 0; i < sizeof s->next; i += 8)
        put64(s->next + i, ct_rand(t));
    for (size_t i = 0; i < sizeof s->next; i++)
        snprintf(hex + 2 * i, 3, "%02x", s->next[i]);
    s->next_gen = gen;
    s->have_next = 1;
    ct_agent(t, "SEC_KEY gen=%u key=%s", gen, hex);
}

struct ct_conn *ct_sec_connect(struct ct *t, struct ct_sec *s,
                               const char *qp_opts)
{
    struct ct_conn *c = ct_conn_new(t, qp_opts);
    struct mrw_pkt req;
    static uint8_t buf[512];
    uint8_t mac[16];
    const struct ct_rx *rx;
    ct_conn_listen(c);
    ct_pkt_connect_req(c, &req);
    req.u.conn.sec_present = 1;
    req.u.conn.sec_suite = s->suite;
    req.u.conn.sec_spi = s->spi;
    size_t n = ct_encode(t, &req, buf, sizeof buf);
    hs_mac(t, s, buf, n - 20, buf + n - 20);
    ct_reseal(buf, n);
    ct_send_raw(t, -1, buf, n, CT_ECN_ECT0);
    rx = ct_expect_op(c, MROCE_OP_CONNECT_RESP, 0, CT_WAIT);
    if (!rx->p.u.conn.sec_present)
        ct_fail(t, "CONNECT_RESP without SECURE (CONN-31)");
    hs_mac(t, s, rx->buf, rx->len - 20, mac);
    if (memcmp(mac, rx->p.u.conn.sec_mac, 16) != 0)
        ct_fail(t, "CONNECT_RESP's SECURE MAC is wrong (WIRE-43)");
    if (rx->p.u.conn.sec_suite != s->suite)
        ct_fail(t, "CONNECT_RESP names suite %u, we asked for %u (CONN-33)",
                rx->p.u.conn.sec_suite, s->suite);
    ct_conn_take_params(c, &rx->p);
    c->hs_sport = rx->sport;
    c->hs_sock = rx->sock;
    s->aspi = rx->p.u.conn.sec_spi;
    c->connected = 1;
    c->auto_ack = 0;
    ct_expect_qp_state(t, c->aqp, "RTS", CT_WAIT);
    return c;
}

size_t ct_sec_seal_as(struct ct_conn *c, struct ct_sec *s,
                      const struct mrw_pkt *p, uint32_t spi, uint16_t epoch,
                      uint8_t *out, size_t cap)
{
    static uint8_t clear[65536];
    uint8_t key[32], nonce[12];
    struct ct *t = c->t;
    size_t n = ct_encode(t, p, clear, sizeof clear);
    size_t plen = n - 28 - 4, total = n + 28;
    if (total > cap)
        ct_fail(t, "tester: sealed packet does not fit");
    size_t kl = pkt_key(t, s, s->gen, c->aqpn, c->atoken, spi, epoch, key);
    memcpy(out, clear, 28);
    out[2] |= 0x80; /* SECURE (WIRE-38) */
    put16(out + 26, (uint16_t)total);
    put32(out + 28, spi);
    put16(out + 32, epoch);
    out[34] = s->suite;
    out[35] = s->gen;
    put64(out + 36, ++s->seq);
    put32(nonce, spi);
    put64(nonce + 4, s->seq);
    int rc;
    if (s->suite == 3) {
        memcpy(out + 44, clear + 28, plen);
        rc = gcm(key, kl, 1, nonce, out, 44 + plen, NULL, 0, out + 44 + plen,
                 out + 44 + plen);
    } else {
        rc = gcm(key, kl, 1, nonce, out, 44, clear + 28, plen, out + 44,
                 out + 44 + plen);
    }
    if (rc < 0)
        ct_fail(t, "tester: AES-GCM failed");
    return total;
}

size_t ct_sec_seal(struct ct_conn *c, struct ct_sec *s, const struct mrw_pkt *p,
                   uint8_t *out, size_t cap)
{
    return ct_sec_seal_as(c, s, p, s->aspi, s->epoch, out, cap);
}

void ct_sec_send(struct ct_conn *c, const uint8_t *buf, size_t len)
{
    ct_send_raw(c->t, c->entropy, buf, len, CT_ECN_ECT0);
}

int ct_sec_drain(struct ct_conn *c, struct ct_sec *s, int ms)
{
    struct ct *t = c->t;
    uint64_t end = ct_now_ns() + (uint64_t)ct_ms(t, ms) * 1000000u;
    static uint8_t out[65536];
    int n = 0;
    for (;;) {
        int left = (int)((end - ct_now_ns()) / 1000000u);
        if (ct_now_ns() >= end)
            break;
        const struct ct_rx *rx = ct_recv(t, left > 0 ? left : 1);
        if (!rx)
            break;
        if (rx->len >= 28 && !(rx->buf[2] & 0x80) && rx->rc == 0 &&
            rx->p.base.opcode != MROCE_OP_CONNECT_RESP &&
            rx->p.base.opcode != MROCE_OP_CONNECT_REQ)
            ct_fail(t,
                    "IUT sent %s in clear on a secure connection "
                    "(SEC-17)",
                    ct_describe(t, rx));
        if (rx->len < 60 || !(rx->buf[2] & 0x80))
            continue;
        /* Sealed to us: our QPN, token and SPI, the IUT's epoch. */
        uint8_t key[32], nonce[12];
        uint16_t epoch = (uint16_t)(rx->buf[32] << 8 | rx->buf[33]);
        uint8_t gen = rx->buf[35];
        size_t kl = pkt_key(t, s, gen, c->qpn, c->token, s->spi, epoch, key);
        if (gen < 32)
            s->gens_seen |= 1u << gen;
        size_t plen = rx->len - 60;
        memcpy(nonce, rx->buf + 28, 4);
        memcpy(nonce + 4, rx->buf + 36, 8);
        uint8_t tag[16];
        memcpy(tag, rx->buf + rx->len - 16, 16);
        int rc = s->suite == 3 ? gcm(key, kl, 0, nonce, rx->buf, 44 + plen,
                                     NULL, 0, out, tag)
                               : gcm(key, kl, 0, nonce, rx->buf, 44,
                                     rx->buf + 44, plen, out, tag);
        if (rc < 0)
            ct_fail(t, "a sealed packet from the IUT does not open with "
                       "the key of SEC-15 (WIRE-41)");
        n++;
    }
    return n;
}
