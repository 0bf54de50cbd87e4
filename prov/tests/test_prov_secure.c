/*
 * test_prov_secure.c - the provider's secure mode (docs/spec/security.md
 * section 6) through its parameters and its MROCE_FI_SEC_OPS extension,
 * with domains of one process over 127.0.0.1, each opened under the
 * FI_MROCE_KEY_FILE, FI_MROCE_KEY_GEN and FI_MROCE_SECURE_SUITE of the
 * moment (the provider reads them at each domain open):
 *
 *  same key:   two domains with key 1 exchange eager and rendezvous
 *              messages both ways, data checked, nothing dropped; two
 *              more do the same with FI_MROCE_SECURE_SUITE=gmac;
 *  mismatch:   a domain with another key, one in clear, one of another
 *              suite and one naming another key id (FI_MROCE_KEY_GEN)
 *              each send to a secure domain: the send fails with an
 *              error completion, nothing is received, and the secure
 *              side counts the drop (SEC-27, CONN-32, SEC-24; the key id
 *              case at peer silence, its handshake MAC being good);
 *  rotation:   both domains add key 3 as generation 1, then move to it
 *              one after the other while messages flow: every message
 *              arrives with its data and both receive sides rekey
 *              (SEC-31..SEC-33); a new domain opened with key 3 and
 *              FI_MROCE_KEY_GEN=1 then talks to them.
 *
 * Needs FI_PROVIDER_PATH to name the directory of libmroce-fi.so (CTest
 * sets it).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mroce_fi_ext.h"
#include "prov_fi_test.h"

enum { BIG = 100000 }; /* above the eager size: a rendezvous READ */

static struct fi_info *info;
static struct fid_fabric *fabric;
static char dir[64];
static unsigned char *sbuf, *rbuf;

/* Writes a key file of 32 random-looking hex digits, seeded by n. */
static void key_file(int n, char *path, size_t len)
{
    snprintf(path, len, "%s/k%d", dir, n);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    for (int i = 0; i < 32; i++)
        fprintf(f, "%02x", (unsigned)((n * 131 + i * 29 + 7) & 0xff));
    fclose(f);
    chmod(path, 0600);
}

/* Opens x under the given parameters (NULL: unset). */
static void open_ep(struct prov_ep *x, const char *key, const char *gen,
                    const char *suite)
{
    if (key)
        setenv("FI_MROCE_KEY_FILE", key, 1);
    else
        unsetenv("FI_MROCE_KEY_FILE");
    if (gen)
        setenv("FI_MROCE_KEY_GEN", gen, 1);
    else
        unsetenv("FI_MROCE_KEY_GEN");
    if (suite)
        setenv("FI_MROCE_SECURE_SUITE", suite, 1);
    else
        unsetenv("FI_MROCE_SECURE_SUITE");
    prov_ep_open(x, fabric, info, FI_AV_TABLE);
}

static struct mroce_fi_sec_ops *sec_ops(struct prov_ep *x)
{
    struct mroce_fi_sec_ops *ops = NULL;
    DIE_IF(fi_open_ops(&x->dom->fid, MROCE_FI_SEC_OPS, 0, (void **)&ops, NULL),
           "fi_open_ops(MROCE_FI_SEC_OPS)");
    return ops;
}

static struct mroce_fi_sec_counters counters(struct prov_ep *x)
{
    struct mroce_fi_sec_counters c;
    CHECK(sec_ops(x)->counters(x->dom, &c) == 0);
    return c;
}

static fi_addr_t insert(struct prov_ep *x, struct prov_ep *peer)
{
    fi_addr_t a = FI_ADDR_NOTAVAIL;
    CHECK(fi_av_insert(x->av, peer->name, 1, &a, 0, NULL) == 1);
    return a;
}

/* Reads cq once: 1 for a completion, -1 for an error one, 0 for none. */
static int cq_once(struct fid_cq *cq)
{
    struct fi_cq_tagged_entry c;
    ssize_t k = fi_cq_read(cq, &c, 1);
    if (k == 1)
        return 1;
    if (k == -FI_EAVAIL) {
        struct fi_cq_err_entry err = {0};
        fi_cq_readerr(cq, &err, 0);
        return -1;
    }
    return 0;
}

/* One message of len bytes (pattern seed) from a to b (dest: b in a's
 * AV).  Returns 1 when it arrived with its data, 0 when the send failed
 * and nothing arrived; anything else is a failed check. */
static int xfer(struct prov_ep *a, struct prov_ep *b, fi_addr_t dest,
                size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        sbuf[i] = (unsigned char)(seed + i * 7);
    memset(rbuf, 0, len);
    ssize_t rc;
    double t0 = now_s();
    while ((rc = fi_recv(b->ep, rbuf, len, NULL, FI_ADDR_UNSPEC, rbuf)) ==
               -FI_EAGAIN &&
           now_s() - t0 < 5)
        cq_once(b->rxcq);
    CHECK(rc == 0);
    while ((rc = fi_send(a->ep, sbuf, len, NULL, dest, NULL)) == -FI_EAGAIN &&
           now_s() - t0 < 5)
        cq_once(a->txcq);
    CHECK(rc == 0);
    int tx = 0, rx = 0;
    while ((!tx || (tx > 0 && !rx)) && now_s() - t0 < 8) {
        if (!tx)
            tx = cq_once(a->txcq);
        if (!rx)
            rx = cq_once(b->rxcq);
        cq_once(b->txcq); /* progress the receiving domain */
    }
    if (tx > 0 && rx > 0) {
        CHECK(memcmp(sbuf, rbuf, len) == 0);
        return 1;
    }
    /* A failed send: give the receiver time to (wrongly) place it. */
    for (double t1 = now_s(); now_s() - t1 < 0.05;)
        if (!rx)
            rx = cq_once(b->rxcq);
    CHECK(tx < 0 && rx == 0);
    if (rx == 0) { /* the receive is still posted: take it back */
        CHECK(fi_cancel(&b->ep->fid, rbuf) == 0);
        for (double t1 = now_s(); now_s() - t1 < 0.05;)
            cq_once(b->rxcq); /* its FI_ECANCELED entry */
    }
    return 0;
}

/* Prints how long the case took. */
static void took(const char *what, double t0)
{
    printf("%-26s %.2f s\n", what, now_s() - t0);
}

/* Both ways, eager and rendezvous: all must arrive. */
static void talk(const char *what, struct prov_ep *a, struct prov_ep *b)
{
    double t0 = now_s();
    fi_addr_t ab = insert(a, b), ba = insert(b, a);
    int ok = 0;
    for (unsigned i = 0; i < 4; i++) {
        ok += xfer(a, b, ab, i & 1 ? BIG : 100, i);
        ok += xfer(b, a, ba, i & 1 ? BIG : 100, i + 50);
    }
    if (ok != 8)
        fprintf(stderr, "%s: %d of 8 messages\n", what, ok);
    CHECK(ok == 8);
    took(what, t0);
}

/* x sends to the secure domain s: must fail, counted at s. */
static void refused(const char *what, struct prov_ep *x, struct prov_ep *s)
{
    double t0 = now_s();
    struct mroce_fi_sec_counters c0 = counters(s);
    int ok = xfer(x, s, insert(x, s), 100, 9);
    struct mroce_fi_sec_counters c1 = counters(s);
    uint64_t drops = c1.drop_auth + c1.drop_key + c1.drop_mode - c0.drop_auth -
                     c0.drop_key - c0.drop_mode;
    if (ok || !drops)
        fprintf(stderr, "%s: delivered %d, %llu drops\n", what, ok,
                (unsigned long long)drops);
    CHECK(ok == 0);
    CHECK(drops > 0);
    took(what, t0);
}

int main(void)
{
    prov_keep_mapped();
    snprintf(dir, sizeof dir, "/tmp/mroce_psec.%d", (int)getpid());
    if (mkdir(dir, 0700) < 0) {
        perror(dir);
        return 1;
    }
    char k1[96], k2[96], k3[96];
    key_file(1, k1, sizeof k1);
    key_file(2, k2, sizeof k2);
    key_file(3, k3, sizeof k3);
    /* A refused handshake fails its sends after this long; a connection
     * whose packets are all dropped (another key id: the handshake MAC
     * verifies, the data's Key Gen is not held) after peer silence. */
    setenv("FI_MROCE_CONN_TIMEOUT", "400", 1);
    setenv("FI_MROCE_PEER_TIMEOUT", "1000", 1);
    unsetenv("MROCE_KEY_FILE");
    unsetenv("MROCE_KEY");
    info = prov_getinfo(FI_MSG, 0, &fabric);
    sbuf = malloc(BIG);
    rbuf = malloc(BIG);
    if (!sbuf || !rbuf)
        return 1;

    struct prov_ep a, b, g1, g2;
    open_ep(&a, k1, NULL, NULL);
    open_ep(&b, k1, NULL, NULL);
    talk("same key", &a, &b);
    open_ep(&g1, k1, NULL, "gmac");
    open_ep(&g2, k1, NULL, "gmac");
    talk("gmac", &g1, &g2);
    struct mroce_fi_sec_counters ca = counters(&a);
    CHECK(ca.drop_auth + ca.drop_key + ca.drop_replay + ca.drop_mode == 0);

    struct prov_ep other, clear, gen;
    open_ep(&other, k2, NULL, NULL);
    refused("another key", &other, &a);
    open_ep(&clear, "", NULL, NULL);
    refused("clear", &clear, &a);
    refused("another suite", &g1, &a);
    open_ep(&gen, k1, "1", NULL); /* a does not hold generation 1 */
    refused("another key id", &gen, &a);

    /* Rotation: add everywhere first, then use one side at a time. */
    struct mroce_fi_sec_ops *oa = sec_ops(&a), *ob = sec_ops(&b);
    struct mroce_fi_sec_counters a0 = counters(&a);
    CHECK(oa->use_key(a.dom, 1) == -FI_EINVAL); /* not added yet */
    CHECK(oa->add_key(a.dom, 1, k3) == 0);
    CHECK(ob->add_key(b.dom, 1, k3) == 0);
    CHECK(oa->add_key(a.dom, 0, k3) == -FI_EINVAL); /* the one in use */
    CHECK(sec_ops(&clear)->add_key(clear.dom, 1, k3) == -FI_EINVAL);
    talk("rotation, added", &a, &b);
    CHECK(oa->use_key(a.dom, 1) == 0);
    talk("rotation, a moved", &a, &b);
    CHECK(ob->use_key(b.dom, 1) == 0);
    talk("rotation, both moved", &a, &b);
    ca = counters(&a);
    struct mroce_fi_sec_counters cb = counters(&b);
    CHECK(ca.rekeys > a0.rekeys && cb.rekeys > 0);
    CHECK(ca.drop_auth + ca.drop_key + ca.drop_replay ==
          a0.drop_auth + a0.drop_key + a0.drop_replay);
    CHECK(cb.drop_auth + cb.drop_key + cb.drop_replay == 0);
    struct prov_ep late;
    open_ep(&late, k3, "1", NULL);
    talk("joined under generation 1", &late, &a);

    struct prov_ep *all[] = {&a, &b, &g1, &g2, &other, &clear, &gen, &late};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        CHECK(prov_ep_close(all[i]) == 0);
    fi_close(&fabric->fid);
    fi_freeinfo(info);
    free(sbuf);
    free(rbuf);
    unlink(k1);
    unlink(k2);
    unlink(k3);
    rmdir(dir);
    printf("prov_secure: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
