/*
 * cases_rel_sack.c - reliability.md section 3, the SACK span: the SACK
 * extension a QP states (WIRE-52, CONN-25), the span of an ACK to a peer
 * that does not state it (REL-42, REL-15: 256 PSNs, as before the
 * extension) and to one that does (its SACK Words, WIRE-53).  The IUT QPs
 * have a window of 1024 PSNs, so the IUT states 32 words.
 */
#include "case_helpers.h"
#include "conform.h"

/* The tester as requester stating `words` SACK words (0: no extension). */
static struct ct_conn *sk_connect(struct ct *t, unsigned words)
{
    struct ct_conn *c = ct_conn_new(t, "window=1024");
    c->par.sack_words = (uint8_t)words;
    ct_conn_connect(c);
    return c;
}

CT_CASE(rel_sack_ext_stated, "WIRE-52 CONN-25 REL-42",
        "IUT QP of window 1024 states SACK Words 32 in its CONNECT_REQ, one "
        "of window 256 none; a CONNECT_RESP carries SACK only when the "
        "CONNECT_REQ did")
{
    struct ct_conn *a = ct_accept(t, "window=1024");
    CT_EQ(t, "CONNECT_REQ SACK Words, window 1024", 32, a->apar.sack_words);
    struct ct_conn *b = ct_accept(t, "window=256");
    CT_EQ(t, "CONNECT_REQ SACK Words, window 256 (absent)", 0,
          b->apar.sack_words);
    struct ct_conn *c = sk_connect(t, 0);
    CT_EQ(t, "CONNECT_RESP SACK Words to a request without it", 0,
          c->apar.sack_words);
    struct ct_conn *d = sk_connect(t, 16);
    CT_EQ(t, "CONNECT_RESP SACK Words to a request with it", 32,
          d->apar.sack_words);
}

CT_CASE(rel_sack_span_default, "REL-42 REL-15 WIRE-19 WIRE-53",
        "tester states no SACK extension: cum+1 and cum+300 arrive; the ACK "
        "echoing cum+300 carries one word (0x00000001): nothing beyond the "
        "256-PSN span")
{
    struct ct_mr mr = ct_mr_reg(t, 8192, "lw,rw", 0);
    struct ct_conn *c = sk_connect(t, 0);
    uint32_t P = c->snd_nxt, want = 1;

    ch_wr64(c, &mr, P, P + 1, 0, NULL);
    ch_wr64(c, &mr, P, P + 300, MROCE_F_ACK_REQ, NULL);
    const struct ct_rx *rx = ch_ack_echoing(c, P + 300, RL_WAIT);
    CT_EQ(t, "ACK Cum PSN", P, rx->p.u.ack.cum_psn);
    ch_expect_sack(t, &rx->p, &want, 1);
}

CT_CASE(rel_sack_span_negotiated, "REL-42 REL-15 WIRE-19 WIRE-53",
        "tester states SACK Words 16: cum+1 and cum+300 arrive: 10 words "
        "(word 0 0x00000001, word 9 0x00000800); then cum+600, beyond 16 "
        "words: still those 10")
{
    struct ct_mr mr = ct_mr_reg(t, 8192, "lw,rw", 0);
    struct ct_conn *c = sk_connect(t, 16);
    uint32_t P = c->snd_nxt;
    uint32_t want[10] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 1u << 11};

    ch_wr64(c, &mr, P, P + 1, 0, NULL);
    ch_wr64(c, &mr, P, P + 300, MROCE_F_ACK_REQ, NULL);
    const struct ct_rx *rx = ch_ack_echoing(c, P + 300, RL_WAIT);
    CT_EQ(t, "ACK Cum PSN", P, rx->p.u.ack.cum_psn);
    ch_expect_sack(t, &rx->p, want, 10);
    ch_wr64(c, &mr, P, P + 600, MROCE_F_ACK_REQ, NULL);
    rx = ch_ack_echoing(c, P + 600, RL_WAIT);
    CT_EQ(t, "ACK Cum PSN", P, rx->p.u.ack.cum_psn);
    ch_expect_sack(t, &rx->p, want, 10);
}
