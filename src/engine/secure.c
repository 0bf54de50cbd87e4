/*
 * secure.c - secure mode in the engine (docs/spec/security.md section 6):
 * the SECURE handshake extension, sealing every later packet at transmit
 * time, and opening sealed packets ahead of the codec's checks.
 *
 * Where it sits: between the QP's packet writers and the datapath on the
 * way out (ep.c hands it each packet the writers produced), and between the
 * datapath and the codec on the way in (ep.c hands it each datagram with
 * the SECURE flag).  The cryptography is the caller's (mre_crypto); this
 * file decides what is sealed, under which key, with which nonce and
 * additional data, and what is dropped: wrong key identifier, replay,
 * failed tag, clear packets on a secure endpoint (SEC-20..SEC-25); and
 * which master key generation each key is derived under (SEC-31..SEC-33).
 */
#include "engine_int.h"
#include "../wire/seeded_fault.h"

#define SEC_LABEL_PKT "mroce packet"
#define SEC_LABEL_PKT_LEN 12
#define SEC_INFO_LEN (SEC_LABEL_PKT_LEN + 1 + 4 + 8 + 4 + 2)
#define SEC_AAD_LEN (MROCE_BASE_HDR_LEN + MROCE_SEC_HDR_LEN)
#define SEC_ROTATE_DEFAULT (1ull << 30)
#define SEC_WINDOW_MIN 1024u

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

int mre_sec_config_check(const struct mre_ep_config *cfg)
{
    const struct mre_crypto *c = &cfg->crypto;
    if (!cfg->sec_suite)
        return 0;
    if (cfg->sec_suite < MROCE_SUITE_AES128_GCM ||
        cfg->sec_suite > MROCE_SUITE_AES128_GMAC || !c->key_new ||
        !c->key_free || !c->seal || !c->open || !c->hs_mac ||
        !c->key_new_gen != !c->hs_check)
        return MROCE_EINVAL;
    return 0;
}

int mre_ep_sec_use_gen(mre_ep *ep, uint8_t gen)
{
    if (!ep || !ep->cfg.sec_suite || !ep->cfg.crypto.key_new_gen)
        return MROCE_EINVAL;
    ep->sec_tx_gen = gen; /* each sender moves at its next packet */
    return 0;
}

int mre_sec_ep_init(mre_ep *ep)
{
    if (!ep->cfg.sec_suite)
        return 0;
    ep->sec_buf = mre_mem_calloc(&ep->mem, 1, MROCE_MAX_PKT_LEN);
    return ep->sec_buf ? 0 : MROCE_ENOMEM;
}

void mre_sec_ep_free(mre_ep *ep)
{
    mre_mem_free(&ep->mem, ep->sec_buf);
    ep->sec_buf = NULL;
}

/* SEC-20: at least twice the announced receive window, and 1024. */
int mre_sec_qp_init(mre_qp *qp)
{
    uint32_t w = SEC_WINDOW_MIN;
    if (!qp->ep->cfg.sec_suite)
        return 0;
    while (w < 2 * qp->attr.window && w < (1u << 30))
        w <<= 1;
    qp->sec.rx_w = w;
    qp->sec.rx_bits = mre_mem_calloc(&qp->ep->mem, w / 64, sizeof(uint64_t));
    return qp->sec.rx_bits ? 0 : MROCE_ENOMEM;
}

static void key_drop(mre_ep *ep, void **k)
{
    if (*k)
        ep->cfg.crypto.key_free(ep->cfg.crypto.user, *k);
    *k = NULL;
}

static void drop_keys(mre_qp *qp)
{
    key_drop(qp->ep, &qp->sec.tx_key);
    key_drop(qp->ep, &qp->sec.rx_cur);
    key_drop(qp->ep, &qp->sec.rx_prev);
    key_drop(qp->ep, &qp->sec.rx_next);
    qp->sec.keyed = 0;
}

void mre_sec_qp_free(mre_qp *qp)
{
    if (!qp->ep->cfg.sec_suite)
        return;
    drop_keys(qp);
    mre_mem_free(&qp->ep->mem, qp->sec.rx_bits);
    qp->sec.rx_bits = NULL;
}

void mre_sec_new_identity(mre_qp *qp)
{
    if (!qp->ep->cfg.sec_suite)
        return;
    drop_keys(qp);
    do
        qp->sec.local_spi = (uint32_t)mre_ep_rand64(qp->ep);
    while (qp->sec.local_spi == 0);
    qp->sec.tx_epoch = qp->sec.rx_epoch = 0;
    qp->sec.tx_gen = qp->sec.rx_gen_cur = qp->sec.rx_gen_prev =
        qp->sec.rx_gen_next = qp->ep->sec_tx_gen;
    qp->sec.tx_seq = qp->sec.tx_in_epoch = qp->sec.rx_high = 0;
    memset(qp->sec.rx_bits, 0, qp->sec.rx_w / 8);
}

void mre_sec_conn_build(const mre_qp *qp, struct mrw_conn_hdr *c)
{
    if (!qp->sec_on)
        return;
    c->sec_present = 1;
    c->sec_suite = qp->ep->cfg.sec_suite;
    c->sec_spi = qp->sec.local_spi;
    memset(c->sec_mac, 0, sizeof c->sec_mac);
}

/* The MAC sits in the last MROCE_SEC_MAC_LEN bytes before the CRC. */
int mre_sec_conn_mac(mre_qp *qp, uint8_t *buf, size_t n)
{
    const struct mre_crypto *c = &qp->ep->cfg.crypto;
    size_t at = n - MROCE_CRC_LEN - MROCE_SEC_MAC_LEN;
    if (!qp->sec_on)
        return 0;
    if (c->hs_mac(c->user, buf, at, buf + at) < 0)
        return MROCE_EINVAL;
    mrw_pkt_seal(buf, n - MROCE_CRC_LEN);
    return 0;
}

static int mac_equal(const uint8_t *a, const uint8_t *b)
{
    uint8_t d = 0;
    for (int i = 0; i < MROCE_SEC_MAC_LEN; i++)
        d |= (uint8_t)(a[i] ^ b[i]);
    return d == 0;
}

int mre_sec_conn_check(mre_ep *ep, const struct mrw_pkt *pkt,
                       const uint8_t *buf, size_t len)
{
    const struct mrw_conn_hdr *c = &pkt->u.conn;
    const struct mre_crypto *cr = &ep->cfg.crypto;
    uint8_t mac[MROCE_SEC_MAC_LEN];
    /* SEC-34, SEC-35: what the QP it names wants; with none, the
     * endpoint's default (what follows drops it anyway). */
    const mre_qp *q = pkt->base.opcode == MROCE_OP_CONNECT_REQ
                          ? mre_conntab_listen_find(ep, pkt->base.dst_qpn)
                          : mre_ep_find_qp(ep, pkt->base.dst_qpn);
    int want = q ? q->sec_on : ep->cfg.sec_suite != 0;
    if (q && q->attr.secure == MRE_QP_SEC_ANY && q->state == MROCE_QPS_LISTEN &&
        ep->cfg.sec_suite)
        want = c->sec_present; /* a listener that takes either */
    if (!want) {
        if (!c->sec_present)
            return 0;
        ep->cnt.drop_mode++; /* cannot authenticate it (SEC-27) */
        return -1;
    }
    if (!c->sec_present) {
        if (MROCE_SEEDED_FAULT(SEC_CLEAR_OK))
            return 0;
        ep->cnt.drop_mode++;
        return -1;
    }
    if (c->sec_suite != ep->cfg.sec_suite) {
        ep->cnt.drop_key++; /* CONN-33 */
        return -1;
    }
    size_t at = len - MROCE_CRC_LEN - MROCE_SEC_MAC_LEN;
    if (cr->hs_check ? cr->hs_check(cr->user, buf, at, c->sec_mac) < 0
                     : (cr->hs_mac(cr->user, buf, at, mac) < 0 ||
                        !mac_equal(mac, c->sec_mac))) {
        ep->cnt.drop_auth++; /* CONN-32 */
        return -1;
    }
    return 0;
}

/* SEC-15's info: label, suite, then the receiving QP's QPN, token, SPI,
 * and the epoch. */
static int derive(mre_ep *ep, uint32_t qpn, uint64_t token, uint32_t spi,
                  uint16_t epoch, uint8_t gen, void **key)
{
    const struct mre_crypto *c = &ep->cfg.crypto;
    uint8_t info[SEC_INFO_LEN], *p = info;
    memcpy(p, SEC_LABEL_PKT, SEC_LABEL_PKT_LEN);
    p += SEC_LABEL_PKT_LEN;
    *p++ = ep->cfg.sec_suite;
    put32(p, qpn);
    put64(p + 4, token);
    put32(p + 12, spi);
    put16(p + 16, epoch);
    *key = NULL;
    /* SEC-31: the same info under the master key of generation gen. */
    if ((c->key_new_gen ? c->key_new_gen(c->user, gen, ep->cfg.sec_suite, info,
                                         sizeof info, key)
         : gen          ? -1
               : c->key_new(c->user, ep->cfg.sec_suite, info, sizeof info,
                            key)) < 0 ||
        !*key)
        return MROCE_ENOMEM;
    return 0;
}

static int derive_tx(mre_qp *qp, uint16_t epoch, uint8_t gen, void **key)
{
    return derive(qp->ep, qp->peer_qpn, qp->peer_token, qp->sec.peer_spi, epoch,
                  gen, key);
}

static int derive_rx(mre_qp *qp, uint16_t epoch, uint8_t gen, void **key)
{
    return derive(qp->ep, qp->qpn, qp->local_token, qp->sec.local_spi, epoch,
                  gen, key);
}

int mre_sec_on_handshake(mre_qp *qp, const struct mrw_conn_hdr *c)
{
    if (!qp->sec_on)
        return 0;
    drop_keys(qp);
    qp->sec.peer_spi = c->sec_spi;
    qp->sec.tx_gen = qp->sec.rx_gen_cur = qp->ep->sec_tx_gen;
    if (derive_tx(qp, 0, qp->sec.tx_gen, &qp->sec.tx_key) < 0 ||
        derive_rx(qp, 0, qp->sec.rx_gen_cur, &qp->sec.rx_cur) < 0) {
        drop_keys(qp);
        return MROCE_ENOMEM;
    }
    qp->sec.keyed = 1;
    return 0;
}

static void nonce_of(uint8_t *nonce, uint32_t spi, uint64_t seq)
{
    put32(nonce, spi);
    put64(nonce + 4, seq);
}

/* SEC-22: after rotate_pkts packets the next packet uses the next epoch;
 * SEC-32: so does the first packet after the endpoint's generation
 * changed, under the new generation's master key.  If the key cannot be
 * made now, the old one serves until it can. */
static void tx_rotate(mre_qp *qp, int sealed)
{
    uint64_t per = qp->ep->cfg.sec_rotate_pkts ? qp->ep->cfg.sec_rotate_pkts
                                               : SEC_ROTATE_DEFAULT;
    uint8_t gen = qp->ep->sec_tx_gen;
    void *k;
    if (sealed)
        qp->sec.tx_in_epoch++;
    if (qp->sec.tx_in_epoch < per && gen == qp->sec.tx_gen)
        return;
    if (derive_tx(qp, (uint16_t)(qp->sec.tx_epoch + 1), gen, &k) < 0)
        return;
    key_drop(qp->ep, &qp->sec.tx_key);
    qp->sec.tx_key = k;
    qp->sec.tx_gen = gen;
    qp->sec.tx_epoch++;
    qp->sec.tx_in_epoch = 0;
}

int mre_sec_tx(mre_qp *qp, uint8_t *buf, size_t n)
{
    mre_ep *ep = qp->ep;
    const struct mre_crypto *c = &ep->cfg.crypto;
    uint8_t *w = buf + MROCE_SEC_HDR_LEN, nonce[MROCE_SEC_NONCE_LEN];
    struct mrw_sec_hdr sh;
    uint8_t op = w[1];
    if (op == MROCE_OP_CONNECT_REQ || op == MROCE_OP_CONNECT_RESP) {
        memmove(buf, w, n); /* CONNECTs stay clear (SEC-17) */
        return (int)n;
    }
    if (!qp->sec.keyed || n < MROCE_BASE_HDR_LEN + MROCE_CRC_LEN)
        return 0; /* never in clear */
    if (qp->sec.tx_seq == UINT64_MAX) {
        mre_qp_enter_error(qp); /* SEC-18: never wrap */
        return 0;
    }
    if (qp->sec.tx_gen != ep->sec_tx_gen)
        tx_rotate(qp, 0); /* a new master key (SEC-32) */
    size_t plen = n - MROCE_BASE_HDR_LEN - MROCE_CRC_LEN;
    size_t total = n + MROCE_SEC_OVERHEAD;
    memmove(buf, w, MROCE_BASE_HDR_LEN); /* the protected part stays put */
    uint16_t flags = (uint16_t)(buf[2] << 8 | buf[3]) | MROCE_F_SECURE;
    put16(buf + 2, flags);
    put16(buf + 26, (uint16_t)total);
    sh.spi = qp->sec.peer_spi;
    sh.epoch = qp->sec.tx_epoch;
    sh.suite = ep->cfg.sec_suite;
    sh.key_gen = qp->sec.tx_gen;
    sh.seq = ++qp->sec.tx_seq;
    mrw_sec_encode(buf + MROCE_BASE_HDR_LEN, &sh);
    nonce_of(nonce, sh.spi, sh.seq);
    uint8_t *body = buf + SEC_AAD_LEN, *tag = body + plen;
    int rc;
    if (ep->cfg.sec_suite == MROCE_SUITE_AES128_GMAC)
        rc = c->seal(c->user, qp->sec.tx_key, nonce, buf, SEC_AAD_LEN + plen,
                     NULL, 0, NULL, tag);
    else
        rc = c->seal(c->user, qp->sec.tx_key, nonce, buf, SEC_AAD_LEN, body,
                     plen, body, tag);
    if (rc < 0)
        return 0;
    tx_rotate(qp, 1);
    return (int)total;
}

/* The key for a packet of this epoch and generation (SEC-23, SEC-32),
 * deriving C + 1 on first sight, and epoch 0 of another generation while
 * nothing is authenticated (SEC-33); NULL: not acceptable.  *next: 1 if
 * the key is C + 1's, 2 if it replaces C's. */
static void *rx_key_for(mre_qp *qp, uint16_t epoch, uint8_t gen, int *next)
{
    struct mre_sec_qp *s = &qp->sec;
    *next = 0;
    if (epoch == s->rx_epoch && gen == s->rx_gen_cur)
        return s->rx_cur;
    if (epoch == (uint16_t)(s->rx_epoch - 1))
        return gen == s->rx_gen_prev ? s->rx_prev : NULL;
    if (epoch == s->rx_epoch) {
        if (epoch != 0 || s->rx_high != 0)
            return NULL;
        *next = 2;
    } else if (epoch == (uint16_t)(s->rx_epoch + 1)) {
        *next = 1;
    } else {
        return NULL;
    }
    if (s->rx_next && s->rx_gen_next != gen)
        key_drop(qp->ep, &s->rx_next);
    if (MROCE_SEEDED_FAULT(SEC_GEN_IGNORED))
        gen = s->rx_gen_cur; /* the packet's Key Gen not read */
    if (!s->rx_next && derive_rx(qp, epoch, gen, &s->rx_next) < 0)
        return NULL;
    s->rx_gen_next = gen;
    return s->rx_next;
}

static int replay_seen(const mre_qp *qp, uint64_t seq)
{
    uint32_t w = qp->sec.rx_w;
    if (seq == 0)
        return 1; /* Seq starts at 1 (SEC-18) */
    if (seq > qp->sec.rx_high)
        return 0;
    if (qp->sec.rx_high - seq >= w)
        return 1;
    uint64_t b = seq & (w - 1);
    return (qp->sec.rx_bits[b / 64] >> (b % 64)) & 1;
}

static void replay_mark(mre_qp *qp, uint64_t seq)
{
    uint32_t w = qp->sec.rx_w;
    if (seq > qp->sec.rx_high) {
        if (seq - qp->sec.rx_high >= w) {
            memset(qp->sec.rx_bits, 0, w / 8);
        } else {
            for (uint64_t s = qp->sec.rx_high + 1; s < seq; s++) {
                uint64_t b = s & (w - 1);
                qp->sec.rx_bits[b / 64] &= ~(1ull << (b % 64));
            }
        }
        qp->sec.rx_high = seq;
    }
    uint64_t b = seq & (w - 1);
    qp->sec.rx_bits[b / 64] |= 1ull << (b % 64);
}

int mre_sec_open(mre_ep *ep, const uint8_t *buf, size_t len,
                 const uint8_t **out)
{
    const struct mre_crypto *c = &ep->cfg.crypto;
    struct mrw_base_hdr b;
    struct mrw_sec_hdr sh;
    uint8_t nonce[MROCE_SEC_NONCE_LEN];
    int next, rc = mrw_sec_decode(&b, &sh, buf, len);
    if (rc < 0)
        return rc;
    mre_qp *qp = mre_ep_find_qp(ep, b.dst_qpn);
    if (!qp) {
        ep->cnt.drop_no_qp++;
        return 0;
    }
    if (!qp->sec.keyed) {
        ep->cnt.drop_mode++; /* no connection to open it for */
        return 0;
    }
    void *key = rx_key_for(qp, sh.epoch, sh.key_gen, &next);
    if ((sh.spi != qp->sec.local_spi || sh.suite != ep->cfg.sec_suite ||
         !key) &&
        !MROCE_SEEDED_FAULT(SEC_KEYID_ANY)) {
        ep->cnt.drop_key++; /* SEC-24 */
        return 0;
    }
    if (!key)
        key = qp->sec.rx_cur;
    if (replay_seen(qp, sh.seq) && !MROCE_SEEDED_FAULT(SEC_REPLAY_OK)) {
        ep->cnt.drop_replay++; /* SEC-20 */
        return 0;
    }
    size_t plen = len - SEC_AAD_LEN - MROCE_SEC_TAG_LEN;
    const uint8_t *tag = buf + len - MROCE_SEC_TAG_LEN;
    uint8_t *o = ep->sec_buf;
    nonce_of(nonce, sh.spi, sh.seq);
    if (ep->cfg.sec_suite == MROCE_SUITE_AES128_GMAC) {
        rc = c->open(c->user, key, nonce, buf, SEC_AAD_LEN + plen, NULL, 0,
                     NULL, tag);
        memcpy(o + MROCE_BASE_HDR_LEN, buf + SEC_AAD_LEN, plen);
    } else {
        rc = c->open(c->user, key, nonce, buf, SEC_AAD_LEN, buf + SEC_AAD_LEN,
                     plen, o + MROCE_BASE_HDR_LEN, tag);
    }
    if (rc < 0 && !MROCE_SEEDED_FAULT(SEC_TAG_SKIP)) {
        ep->cnt.drop_auth++; /* SEC-21: nothing changed */
        return 0;
    }
    if (next && qp->sec.rx_gen_next != qp->sec.rx_gen_cur)
        ep->cnt.sec_rekeys++;
    if (next == 2) {
        key_drop(ep, &qp->sec.rx_cur); /* epoch 0 of another generation */
        qp->sec.rx_cur = qp->sec.rx_next;
        qp->sec.rx_gen_cur = qp->sec.rx_gen_next;
        qp->sec.rx_next = NULL;
    } else if (next && !MROCE_SEEDED_FAULT(SEC_ROTATE_STUCK)) {
        key_drop(ep, &qp->sec.rx_prev); /* C + 1 is now current */
        qp->sec.rx_prev = qp->sec.rx_cur;
        qp->sec.rx_gen_prev = qp->sec.rx_gen_cur;
        qp->sec.rx_cur = qp->sec.rx_next;
        qp->sec.rx_gen_cur = qp->sec.rx_gen_next;
        qp->sec.rx_next = NULL;
        qp->sec.rx_epoch++;
    } else if (next) {
        ep->cnt.drop_key++;
        return 0;
    }
    replay_mark(qp, sh.seq);
    /* The clear packet: base header without SECURE and with the clear Pkt
     * Len, the opened headers and payload, and four bytes where its CRC
     * would be (mrw_pkt_decode_opened does not read them). */
    size_t clen = len - MROCE_SEC_OVERHEAD;
    memcpy(o, buf, MROCE_BASE_HDR_LEN);
    o[2] &= (uint8_t) ~(MROCE_F_SECURE >> 8);
    put16(o + 26, (uint16_t)clen);
    memset(o + clen - MROCE_CRC_LEN, 0, MROCE_CRC_LEN);
    *out = o;
    return (int)clen;
}
