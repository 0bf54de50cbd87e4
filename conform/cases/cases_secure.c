/*
 * cases_secure.c - security.md section 6, secure mode: every case gives the
 * agent a random master key (DEVICE key= suite=), connects with an
 * authenticated handshake and seals its packets with the tester's own
 * crypto (tester/secure.c).  Tampered, replayed, misaddressed (key id) and
 * clear packets must be dropped and counted with nothing placed; rotation
 * must lose nothing; an unauthenticated handshake must get no answer.
 * Every packet the IUT sends must be sealed and open (ct_sec_drain).
 */
#include <stdio.h>
#include <string.h>

#include "conform.h"

#define SEC_DRAIN 150 /* ms for the IUT to act on what we sent */

static struct ct_conn *sec_setup(struct ct *t, struct ct_sec *s,
                                 struct ct_mr *mr)
{
    ct_sec_device(t, s, MROCE_SUITE_AES128_GCM);
    *mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    return ct_sec_connect(t, s, "");
}

/* The counter's change, waited for while the IUT may be slow (a loaded
 * host): then judged as ct_rl_expect_counter does. */
static void sec_expect_counter(struct ct_conn *c, struct ct_sec *s,
                               const char *name, int64_t before, int64_t delta)
{
    for (int i = 0; i < 40; i++) {
        int64_t v = ct_rl_counter(c->t, c->aqp, name);
        if (v < 0 || v >= before + delta)
            break;
        ct_sec_drain(c, s, 25);
    }
    ct_rl_expect_counter(c->t, c->aqp, name, before, delta);
}

/* A one-packet WRITE of len bytes at off, at the next PSN and MSN. */
static void sec_write(struct ct_conn *c, struct mrw_pkt *p,
                      const struct ct_mr *mr, uint32_t off, const uint8_t *d,
                      uint32_t len)
{
    ct_pkt_req(c, p, MROCE_OP_WRITE);
    p->u.rq.req.raddr = mr->addr + off;
    p->u.rq.req.rkey = mr->rkey;
    p->u.rq.req.msg_len = len;
    p->payload = d;
    p->payload_len = len;
    c->snd_nxt++;
    c->msn++;
}

CT_CASE(secure_tampered_dropped, "SEC-21 SEC-28 WIRE-41 WIRE-44",
        "a sealed WRITE with one bit flipped in its payload, its PSN (clear "
        "but authenticated) and its Seq: each drop_auth, nothing placed; "
        "the genuine one is placed and answered with a sealed ACK")
{
    struct ct_sec s;
    struct ct_mr mr;
    struct ct_conn *c = sec_setup(t, &s, &mr);
    struct mrw_pkt p;
    static uint8_t g[512], x[512];
    uint8_t d[64];
    size_t spots[3];
    ct_pattern(d, sizeof d, 22);
    sec_write(c, &p, &mr, 0, d, sizeof d);
    size_t n = ct_sec_seal(c, &s, &p, g, sizeof g);
    spots[0] = n - 16 - 10;
    spots[1] = 17;
    spots[2] = 43;
    int64_t before = ct_rl_counter(t, c->aqp, "drop_auth");
    for (int i = 0; i < 3; i++) {
        memcpy(x, g, n);
        x[spots[i]] ^= 0x10;
        ct_sec_send(c, x, n);
    }
    ct_sec_drain(c, &s, SEC_DRAIN);
    sec_expect_counter(c, &s, "drop_auth", before, 3);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0);
    ct_sec_send(c, g, n);
    int acks = ct_sec_drain(c, &s, SEC_DRAIN);
    ct_expect_mem(t, &mr, 0, d, sizeof d);
    CT_REQUIRE(t, acks >= 1, "no sealed ACK for the genuine WRITE");
}

CT_CASE(secure_replay_dropped, "SEC-20 SEC-28",
        "a sealed WRITE, placed; the region cleared; the same sealed bytes "
        "again: drop_replay, nothing placed")
{
    struct ct_sec s;
    struct ct_mr mr;
    struct ct_conn *c = sec_setup(t, &s, &mr);
    struct mrw_pkt p;
    static uint8_t g[512];
    uint8_t d[64], z[64];
    ct_pattern(d, sizeof d, 23);
    memset(z, 0, sizeof z);
    sec_write(c, &p, &mr, 128, d, sizeof d);
    size_t n = ct_sec_seal(c, &s, &p, g, sizeof g);
    ct_sec_send(c, g, n);
    ct_sec_drain(c, &s, SEC_DRAIN);
    ct_expect_mem(t, &mr, 128, d, sizeof d);
    ct_mr_write(t, &mr, 128, z, sizeof z);
    int64_t before = ct_rl_counter(t, c->aqp, "drop_replay");
    ct_sec_send(c, g, n);
    ct_sec_drain(c, &s, SEC_DRAIN);
    sec_expect_counter(c, &s, "drop_replay", before, 1);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0);
}

CT_CASE(secure_wrong_key_id_dropped, "SEC-24 SEC-23 SEC-28 WIRE-40",
        "sealed WRITEs under another SPI and under an epoch two ahead (each "
        "correctly sealed for its key id): drop_key, nothing placed; the "
        "right key id places the data")
{
    struct ct_sec s;
    struct ct_mr mr;
    struct ct_conn *c = sec_setup(t, &s, &mr);
    struct mrw_pkt p;
    static uint8_t g[512];
    uint8_t d[64];
    ct_pattern(d, sizeof d, 24);
    int64_t before = ct_rl_counter(t, c->aqp, "drop_key");
    sec_write(c, &p, &mr, 0, d, sizeof d);
    size_t n = ct_sec_seal_as(c, &s, &p, s.aspi ^ 0x00010000u, 0, g, sizeof g);
    ct_sec_send(c, g, n);
    n = ct_sec_seal_as(c, &s, &p, s.aspi, 2, g, sizeof g);
    ct_sec_send(c, g, n);
    ct_sec_drain(c, &s, SEC_DRAIN);
    sec_expect_counter(c, &s, "drop_key", before, 2);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0);
    n = ct_sec_seal(c, &s, &p, g, sizeof g);
    ct_sec_send(c, g, n);
    ct_sec_drain(c, &s, SEC_DRAIN);
    ct_expect_mem(t, &mr, 0, d, sizeof d);
}

CT_CASE(secure_clear_packet_dropped, "SEC-25 SEC-28 SEC-17",
        "a clear WRITE on a secure connection, with the right QPN, token, "
        "PSN and CRC: drop_mode, nothing placed; sealed, it is placed")
{
    struct ct_sec s;
    struct ct_mr mr;
    struct ct_conn *c = sec_setup(t, &s, &mr);
    struct mrw_pkt p;
    static uint8_t g[512];
    uint8_t d[64];
    ct_pattern(d, sizeof d, 25);
    sec_write(c, &p, &mr, 256, d, sizeof d);
    int64_t before = ct_rl_counter(t, c->aqp, "drop_mode");
    ct_send(c, &p);
    ct_sec_drain(c, &s, SEC_DRAIN);
    sec_expect_counter(c, &s, "drop_mode", before, 1);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0);
    size_t n = ct_sec_seal(c, &s, &p, g, sizeof g);
    ct_sec_send(c, g, n);
    ct_sec_drain(c, &s, SEC_DRAIN);
    ct_expect_mem(t, &mr, 256, d, sizeof d);
}

CT_CASE(secure_rotation_no_loss, "SEC-22 SEC-23 SEC-19",
        "32 sealed WRITEs, a new epoch every 4, the first packet of each "
        "epoch sent before the last of the one before: all placed, no "
        "drop_key, drop_auth or drop_replay")
{
    struct ct_sec s;
    struct ct_mr mr;
    struct ct_conn *c = sec_setup(t, &s, &mr);
    struct mrw_pkt p;
    static uint8_t g[32][256], d[32 * 64];
    size_t n[32];
    ct_pattern(d, sizeof d, 26);
    int64_t k0 = ct_rl_counter(t, c->aqp, "drop_key");
    int64_t a0 = ct_rl_counter(t, c->aqp, "drop_auth");
    int64_t r0 = ct_rl_counter(t, c->aqp, "drop_replay");
    for (int i = 0; i < 32; i++) {
        s.epoch = (uint16_t)(i / 4);
        sec_write(c, &p, &mr, (uint32_t)i * 64, d + i * 64, 64);
        n[i] = ct_sec_seal(c, &s, &p, g[i], sizeof g[i]);
    }
    for (int i = 0; i < 32; i++) {
        int j = i;
        if (i % 4 == 3 && i + 1 < 32)
            j = i + 1; /* the next epoch's first goes first */
        else if (i % 4 == 0 && i > 0)
            j = i - 1;
        ct_sec_send(c, g[j], n[j]);
    }
    ct_sec_drain(c, &s, SEC_DRAIN * 2);
    ct_expect_mem(t, &mr, 0, d, sizeof d);
    ct_rl_expect_counter(t, c->aqp, "drop_key", k0, 0);
    ct_rl_expect_counter(t, c->aqp, "drop_auth", a0, 0);
    ct_rl_expect_counter(t, c->aqp, "drop_replay", r0, 0);
}

CT_CASE(secure_master_key_rotation, "SEC-31 SEC-32 SEC-33 WIRE-51",
        "SEC_KEY gives the IUT a master key of generation 1: 24 sealed "
        "WRITEs move from epoch 0 under generation 0 to epoch 1 under "
        "generation 1, the first of the new sent before the last of the "
        "old: all placed, no drop; one under generation 2, which the IUT "
        "lacks: drop_key, nothing placed; after SEC_KEY use=1 the IUT "
        "seals under generation 1")
{
    struct ct_sec s;
    struct ct_mr mr;
    struct ct_conn *c = sec_setup(t, &s, &mr);
    struct mrw_pkt p;
    static uint8_t g[24][256], d[25 * 64], z[64];
    size_t n[24];
    ct_pattern(d, sizeof d, 31);
    int64_t k0 = ct_rl_counter(t, c->aqp, "drop_key");
    int64_t a0 = ct_rl_counter(t, c->aqp, "drop_auth");
    int64_t r0 = ct_rl_counter(t, c->aqp, "drop_replay");
    ct_sec_add_key(t, &s, 1);
    for (int i = 0; i < 24; i++) {
        s.epoch = (uint16_t)(i < 8 ? 0 : 1);
        s.gen = (uint8_t)(i < 8 ? 0 : 1);
        sec_write(c, &p, &mr, (uint32_t)i * 64, d + i * 64, 64);
        n[i] = ct_sec_seal(c, &s, &p, g[i], sizeof g[i]);
    }
    for (int i = 0; i < 24; i++) {
        int j = i == 7 ? 8 : i == 8 ? 7 : i; /* the new key's first first */
        ct_sec_send(c, g[j], n[j]);
    }
    ct_sec_drain(c, &s, SEC_DRAIN * 2);
    ct_expect_mem(t, &mr, 0, d, 24 * 64);
    ct_rl_expect_counter(t, c->aqp, "drop_key", k0, 0);
    ct_rl_expect_counter(t, c->aqp, "drop_auth", a0, 0);
    ct_rl_expect_counter(t, c->aqp, "drop_replay", r0, 0);
    /* Epoch 2 under a generation the IUT was never given. */
    s.epoch = 2;
    s.gen = 2;
    sec_write(c, &p, &mr, 24 * 64, d + 24 * 64, 64);
    n[0] = ct_sec_seal(c, &s, &p, g[0], sizeof g[0]);
    ct_sec_send(c, g[0], n[0]);
    sec_expect_counter(c, &s, "drop_key", k0, 1);
    memset(z, 0, sizeof z);
    ct_expect_mem(t, &mr, 24 * 64, z, 64);
    /* The IUT sends under generation 1: its answer to a WRITE resent in
     * epoch 1 (a new Seq, SEC-17) opens under the new key. */
    ct_agent(t, "SEC_KEY gen=1 use=1");
    s.epoch = 1;
    s.gen = 1;
    s.gens_seen = 0;
    sec_write(c, &p, &mr, 24 * 64, d + 24 * 64, 64);
    p.base.flags |= MROCE_F_ACK_REQ;
    n[0] = ct_sec_seal(c, &s, &p, g[0], sizeof g[0]);
    ct_sec_send(c, g[0], n[0]);
    ct_sec_drain(c, &s, SEC_DRAIN * 2);
    ct_expect_mem(t, &mr, 24 * 64, d + 24 * 64, 64);
    if (!(s.gens_seen & 2))
        ct_fail(t, "after SEC_KEY use=1 the IUT sealed nothing under "
                   "generation 1 (SEC-32)");
}

CT_CASE(secure_handshake_authenticated, "CONN-32 SEC-26 SEC-27 SEC-28",
        "on a secure endpoint a CONNECT_REQ without SECURE (drop_mode) and "
        "one whose MAC is wrong (drop_auth) get no answer; the "
        "authenticated one is answered")
{
    struct ct_sec s;
    struct mrw_pkt req;
    static uint8_t buf[512];
    ct_sec_device(t, &s, MROCE_SUITE_AES128_GCM);
    struct ct_conn *c = ct_conn_new(t, "");
    ct_conn_listen(c);
    int64_t m0 = ct_rl_counter(t, c->aqp, "drop_mode");
    int64_t a0 = ct_rl_counter(t, c->aqp, "drop_auth");
    ct_pkt_connect_req(c, &req);
    size_t n = ct_encode(t, &req, buf, sizeof buf);
    ct_send_raw(t, -1, buf, n, CT_ECN_ECT0);
    ct_expect_silence(t, CT_QUIET);
    sec_expect_counter(c, &s, "drop_mode", m0, 1);
    req.u.conn.sec_present = 1;
    req.u.conn.sec_suite = s.suite;
    req.u.conn.sec_spi = s.spi;
    memset(req.u.conn.sec_mac, 0xa5, sizeof req.u.conn.sec_mac);
    n = ct_encode(t, &req, buf, sizeof buf);
    ct_send_raw(t, -1, buf, n, CT_ECN_ECT0);
    ct_expect_silence(t, CT_QUIET);
    sec_expect_counter(c, &s, "drop_auth", a0, 1);
    ct_expect_qp_state(t, c->aqp, "LISTEN", CT_WAIT);
    struct ct_conn *ok = ct_sec_connect(t, &s, "");
    CT_REQUIRE(t, ok->connected, "the authenticated handshake failed");
}
