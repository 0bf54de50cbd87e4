/*
 * secure.h - secure mode (docs/spec/security.md section 6): sealing and
 * opening packets with the caller's AEAD callbacks (mre_ep_config.crypto),
 * the SECURE handshake extension, key epochs and the replay window.
 *
 * The engine computes everything the spec fixes (derivation contexts,
 * nonces, additional data, the SEC header, which epoch's key applies, the
 * replay window over Seq) and leaves the cryptography to the caller, so it
 * stays free of crypto libraries and OS calls.  Hooks: ep.c (seal after a
 * packet is written, open before it is decoded, CONNECT checks), qp.c
 * (SPI, handshake extension, keys once the handshake is done).
 */
#ifndef MROCE_SECURE_H
#define MROCE_SECURE_H

#include <mroce/engine.h>
#include <mroce/wire.h>

/* Per QP; all zero (and unused) on an endpoint without secure mode. */
struct mre_sec_qp {
    uint8_t keyed;        /* handshake done, keys derived: seal and open */
    uint16_t tx_epoch;    /* epoch of tx_key (SEC-22) */
    uint16_t rx_epoch;    /* C of SEC-23: epoch of rx_cur */
    uint32_t local_spi;   /* SPI of the packets we receive (CONN-34) */
    uint32_t peer_spi;    /* SPI of the packets we send */
    uint32_t rx_w;        /* replay window, Seq values (power of two) */
    void *tx_key;         /* caller's key handles (mre_crypto.key_new) */
    void *rx_cur;         /* epoch rx_epoch */
    void *rx_prev;        /* epoch rx_epoch - 1, NULL if none */
    void *rx_next;        /* epoch rx_epoch + 1, NULL until first seen */
    uint64_t tx_seq;      /* Seq of the last packet sealed (SEC-18) */
    uint64_t tx_in_epoch; /* packets sealed under tx_key */
    uint64_t rx_high;     /* highest Seq authenticated, 0 before any */
    uint64_t *rx_bits;    /* rx_w bits: Seq s received iff bit s % rx_w */
    uint8_t tx_gen;       /* master key generation of tx_key (SEC-31) */
    uint8_t rx_gen_cur;   /* ... of rx_cur, rx_prev and rx_next */
    uint8_t rx_gen_prev;
    uint8_t rx_gen_next;
};

/* mre_sec_config_check: 0 if cfg's secure mode is off or complete (a known
 * suite, every callback set), MROCE_EINVAL otherwise. */
int mre_sec_config_check(const struct mre_ep_config *cfg);
/* mre_sec_ep_init allocates the endpoint's open buffer when secure mode is
 * on.  0 or MROCE_ENOMEM. */
int mre_sec_ep_init(mre_ep *ep);
/* mre_sec_ep_free frees it. */
void mre_sec_ep_free(mre_ep *ep);
/* mre_sec_qp_init allocates a new QP's replay window (secure endpoint
 * only).  0 or MROCE_ENOMEM. */
int mre_sec_qp_init(mre_qp *qp);
/* mre_sec_qp_free frees the QP's keys and window. */
void mre_sec_qp_free(mre_qp *qp);
/* mre_sec_new_identity draws the QP's SPI for a new connection and resets
 * its keys, counters and window (CONN-34). */
void mre_sec_new_identity(mre_qp *qp);
/* mre_sec_conn_build fills the SECURE extension (without MAC) of a CONNECT
 * the QP sends (CONN-31); nothing on a clear endpoint. */
void mre_sec_conn_build(const mre_qp *qp, struct mrw_conn_hdr *c);
/* mre_sec_conn_mac writes the MAC of the encoded CONNECT buf[0..n) (SECURE
 * last) and recomputes its CRC.  0, or MROCE_EINVAL if the callback fails
 * (the CONNECT must not be sent). */
int mre_sec_conn_mac(mre_qp *qp, uint8_t *buf, size_t n);
/* mre_sec_conn_check decides whether a received, decoded CONNECT buf[0..len)
 * may be acted on (CONN-32, CONN-33): 0 yes; otherwise -1, counted
 * (drop_mode, drop_key or drop_auth). */
int mre_sec_conn_check(mre_ep *ep, const struct mrw_pkt *pkt,
                       const uint8_t *buf, size_t len);
/* mre_sec_on_handshake takes the peer's SPI from its SECURE extension and
 * derives the connection's epoch-0 keys.  0, or MROCE_ENOMEM if a key
 * cannot be made (the caller fails the QP). */
int mre_sec_on_handshake(mre_qp *qp, const struct mrw_conn_hdr *c);
/* mre_sec_tx turns the clear packet the QP wrote at buf + MROCE_SEC_HDR_LEN
 * (n bytes, CRC included) into what goes on the wire at buf: a CONNECT
 * moved down unchanged, anything else sealed (WIRE-39).  Returns the
 * length at buf, or 0 if the packet must not be sent (no keys yet, the
 * callback failed, Seq exhausted: the QP fails). */
int mre_sec_tx(mre_qp *qp, uint8_t *buf, size_t n);
/* mre_sec_open checks and opens a sealed datagram (WIRE-44 steps 1-13)
 * into the endpoint's open buffer, as the clear packet step 14 checks.
 * Returns its length (with *out set), 0 if dropped and counted here, or a
 * negative enum mrw_wire_error for the caller to count. */
int mre_sec_open(mre_ep *ep, const uint8_t *buf, size_t len,
                 const uint8_t **out);

#endif /* MROCE_SECURE_H */
