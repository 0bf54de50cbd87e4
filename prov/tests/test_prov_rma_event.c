/*
 * test_prov_rma_event.c - FI_RMA_EVENT (fabtests' fi_rdm_rma_event): the
 * target of READs, WRITEs and atomics counts them on the counters bound
 * with FI_REMOTE_READ and FI_REMOTE_WRITE and reports them on its receive
 * CQ.  Checked at the target:
 *   - whenever the remote-write counter reads k, the first k WRITEs' data
 *     is in place (the data is placed before the event is seen);
 *   - every WRITE (inline, injected, eager-sized, large) and every READ
 *     counts once, with one CQ entry (FI_RMA | FI_REMOTE_WRITE or
 *     FI_REMOTE_READ, the target address and length); a WRITE with
 *     immediate data counts once and has one entry, its data's; an atomic
 *     counts as a remote write with an FI_ATOMIC entry;
 *   - an endpoint that did not ask for FI_RMA_EVENT refuses a remote
 *     counter (-FI_ENOSYS), and fi_getinfo without hints does not offer
 *     it; a counter bound to a registration (FI_MR_RMA_EVENT's way) is
 *     refused (-FI_ENOSYS) rather than never counting.
 *
 * Two endpoints in one process over 127.0.0.1, manual progress.
 * MROCE_FAULT, if the environment sets it, acts on both.  Needs
 * FI_PROVIDER_PATH to name the directory of libmroce-fi.so (CTest sets
 * it).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "prov_fi_test.h"

enum { NW = 6 };
static const size_t wsize[NW] = {8, 256, 300, 5000, 65536, 1 << 20};
#define REGION (1u << 20)
#define AREA ((NW + 3) * (size_t)REGION)

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct prov_ep ini, tgt;
static struct fid_cntr *rwc, *rrc; /* target: FI_REMOTE_WRITE, _READ */
static struct fid_mr *tmr, *imr;
static unsigned char *tbuf, *ibuf;
static fi_addr_t peer;
static size_t tx_done;

static unsigned char pattern(size_t w, size_t i)
{
    return (unsigned char)(w * 29 + i * 7 + 3);
}

static void poll_ini(void)
{
    struct fi_cq_tagged_entry e[8];
    ssize_t k = fi_cq_read(ini.txcq, e, 8);
    if (k > 0)
        tx_done += (size_t)k;
    else if (k == -FI_EAVAIL) {
        struct fi_cq_err_entry err = {0};
        fi_cq_readerr(ini.txcq, &err, 0);
        fprintf(stderr, "initiator error: %s\n", fi_strerror(err.err));
        failures++;
    }
    fi_cq_read(ini.rxcq, e, 8);
}

/* The first k WRITEs' data is at the target. */
static int writes_placed(uint64_t k)
{
    for (size_t w = 0; w < k && w < NW; w++)
        for (size_t i = 0; i < wsize[w]; i++)
            if (tbuf[w * REGION + i] != pattern(w, i))
                return 0;
    return 1;
}

/* Progresses both sides (the target through its counters) until the
 * initiator has want completions and the counters hold rw and rr, or
 * 30 s pass; checks the placement rule at every remote-write count. */
static void wait_counts(size_t want, uint64_t rw, uint64_t rr)
{
    double t0 = now_s();
    uint64_t w = 0, r = 0;
    while (now_s() - t0 < 30) {
        poll_ini();
        w = fi_cntr_read(rwc);
        r = fi_cntr_read(rrc);
        if (w <= NW && !writes_placed(w)) {
            fprintf(stderr, "remote-write count %llu before its data\n",
                    (unsigned long long)w);
            failures++;
            return;
        }
        if (tx_done >= want && w >= rw && r >= rr)
            break;
    }
    CHECK(tx_done == want);
    CHECK(w == rw);
    CHECK(r == rr);
    CHECK(fi_cntr_readerr(rwc) == 0 && fi_cntr_readerr(rrc) == 0);
}

static void post_retry(ssize_t rc_first, ssize_t (*again)(size_t), size_t w)
{
    ssize_t rc = rc_first;
    double t0 = now_s();
    while (rc == -FI_EAGAIN && now_s() - t0 < 10) {
        poll_ini();
        rc = again(w);
    }
    CHECK(rc == 0);
}

static ssize_t do_write(size_t w)
{
    unsigned char *src = ibuf + w * REGION;
    uint64_t dst = (uintptr_t)(tbuf + w * REGION);
    if (w == 2) /* past the inline size: the inject's bounce buffer */
        return fi_inject_write(ini.ep, src, wsize[w], peer, dst,
                               fi_mr_key(tmr));
    return fi_write(ini.ep, src, wsize[w], fi_mr_desc(imr), peer, dst,
                    fi_mr_key(tmr), NULL);
}

int main(void)
{
    prov_keep_mapped();
    /* Not offered unless asked for. */
    {
        struct fi_info *all = NULL;
        struct fi_info *h = fi_allocinfo();
        h->fabric_attr->prov_name = strdup("mroce");
        h->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR |
                                  FI_MR_ALLOCATED;
        CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &all) == 0);
        CHECK(all && !(all->caps & FI_RMA_EVENT));
        fi_freeinfo(all);
        fi_freeinfo(h);
    }
    /* An endpoint without it refuses remote counters. */
    {
        struct fid_fabric *f2;
        struct fi_info *plain = prov_getinfo(FI_MSG | FI_RMA, 0, &f2);
        CHECK(!(plain->caps & FI_RMA_EVENT));
        struct prov_ep x;
        prov_ep_open(&x, f2, plain, FI_AV_TABLE);
        struct fid_cntr *c;
        struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP,
                                  .wait_obj = FI_WAIT_UNSPEC};
        DIE_IF(fi_cntr_open(x.dom, &ca, &c, NULL), "fi_cntr_open");
        CHECK(fi_ep_bind(x.ep, &c->fid, FI_REMOTE_WRITE) == -FI_ENOSYS);
        CHECK(fi_close(&x.ep->fid) == 0);
        CHECK(fi_close(&c->fid) == 0);
        x.ep = NULL;
        CHECK(fi_close(&x.txcq->fid) == 0 && fi_close(&x.rxcq->fid) == 0 &&
              fi_close(&x.av->fid) == 0 && fi_close(&x.dom->fid) == 0);
        fi_close(&f2->fid);
        fi_freeinfo(plain);
    }

    info = prov_getinfo(FI_MSG | FI_RMA | FI_ATOMIC | FI_RMA_EVENT, 0, &fabric);
    CHECK(info->caps & FI_RMA_EVENT);
    CHECK(info->rx_attr->caps & FI_RMA_EVENT);
    /* The target: counters bound before enabling, as fabtests does. */
    {
        DIE_IF(fi_domain(fabric, info, &tgt.dom, NULL), "fi_domain");
        struct fi_av_attr av = {.type = FI_AV_TABLE};
        DIE_IF(fi_av_open(tgt.dom, &av, &tgt.av, NULL), "fi_av_open");
        struct fi_cq_attr cq = {.format = FI_CQ_FORMAT_TAGGED,
                                .wait_obj = FI_WAIT_NONE};
        DIE_IF(fi_cq_open(tgt.dom, &cq, &tgt.txcq, NULL), "fi_cq_open");
        DIE_IF(fi_cq_open(tgt.dom, &cq, &tgt.rxcq, NULL), "fi_cq_open");
        struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP,
                                  .wait_obj = FI_WAIT_UNSPEC};
        DIE_IF(fi_cntr_open(tgt.dom, &ca, &rwc, NULL), "fi_cntr_open");
        DIE_IF(fi_cntr_open(tgt.dom, &ca, &rrc, NULL), "fi_cntr_open");
        DIE_IF(fi_endpoint(tgt.dom, info, &tgt.ep, NULL), "fi_endpoint");
        DIE_IF(fi_ep_bind(tgt.ep, &tgt.av->fid, 0), "bind av");
        DIE_IF(fi_ep_bind(tgt.ep, &tgt.txcq->fid, FI_TRANSMIT), "bind tx");
        DIE_IF(fi_ep_bind(tgt.ep, &tgt.rxcq->fid, FI_RECV), "bind rx");
        DIE_IF(fi_ep_bind(tgt.ep, &rwc->fid, FI_REMOTE_WRITE), "bind rw");
        DIE_IF(fi_ep_bind(tgt.ep, &rrc->fid, FI_REMOTE_READ), "bind rr");
        DIE_IF(fi_enable(tgt.ep), "fi_enable");
        tgt.namelen = sizeof(tgt.name);
        DIE_IF(fi_getname(&tgt.ep->fid, tgt.name, &tgt.namelen), "getname");
    }
    prov_ep_open(&ini, fabric, info, FI_AV_TABLE);
    CHECK(fi_av_insert(ini.av, tgt.name, 1, &peer, 0, NULL) == 1);
    tbuf = calloc(1, AREA);
    ibuf = calloc(1, AREA);
    uint64_t acc = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    DIE_IF(fi_mr_reg(tgt.dom, tbuf, AREA, acc, 0, 0, 0, &tmr, NULL), "mr");
    DIE_IF(fi_mr_reg(ini.dom, ibuf, AREA, acc, 0, 0, 0, &imr, NULL), "mr");
    /* Per-registration counters (FI_MR_RMA_EVENT) are not offered: a
     * bind that would never count is refused. */
    CHECK(fi_mr_bind(tmr, &rwc->fid, FI_REMOTE_WRITE) == -FI_ENOSYS);

    /* WRITEs of every kind, all posted at once. */
    for (size_t w = 0; w < NW; w++)
        for (size_t i = 0; i < wsize[w]; i++)
            ibuf[w * REGION + i] = pattern(w, i);
    size_t want = 0;
    for (size_t w = 0; w < NW; w++) {
        post_retry(do_write(w), do_write, w);
        if (w != 2)
            want++; /* an inject makes no completion */
    }
    wait_counts(want, NW, 0);
    CHECK(writes_placed(NW));

    /* A WRITE with immediate data: counted once, one CQ entry. */
    unsigned char *src = ibuf + NW * (size_t)REGION;
    unsigned char *dst = tbuf + NW * (size_t)REGION;
    memset(src, 0x5c, 64);
    CHECK(fi_writedata(ini.ep, src, 64, fi_mr_desc(imr), 0x1234, peer,
                       (uintptr_t)dst, fi_mr_key(tmr), NULL) == 0);
    want++;
    wait_counts(want, NW + 1, 0);
    CHECK(dst[0] == 0x5c && dst[63] == 0x5c);

    /* READs: small and large. */
    unsigned char *rdst = ibuf + (NW + 1) * (size_t)REGION;
    CHECK(fi_read(ini.ep, rdst, 100, fi_mr_desc(imr), peer,
                  (uintptr_t)(tbuf + 3 * REGION), fi_mr_key(tmr), NULL) == 0);
    CHECK(fi_read(ini.ep, rdst + 100, REGION - 100, fi_mr_desc(imr), peer,
                  (uintptr_t)(tbuf + 5 * REGION), fi_mr_key(tmr), NULL) == 0);
    want += 2;
    wait_counts(want, NW + 1, 2);
    CHECK(memcmp(rdst, tbuf + 3 * REGION, 100) == 0);
    CHECK(memcmp(rdst + 100, tbuf + 5 * REGION, REGION - 100) == 0);

    /* An atomic: a remote write. */
    uint64_t *cell = (uint64_t *)(void *)(tbuf + (NW + 2) * (size_t)REGION);
    uint64_t *one = (uint64_t *)(void *)(ibuf + (NW + 2) * (size_t)REGION);
    *cell = 41;
    *one = 1;
    CHECK(fi_atomic(ini.ep, one, 1, fi_mr_desc(imr), peer, (uintptr_t)cell,
                    fi_mr_key(tmr), FI_UINT64, FI_SUM, NULL) == 0);
    want++;
    wait_counts(want, NW + 2, 2);
    CHECK(*cell == 42);

    /* The target's CQ: one entry per operation, of the right kind. */
    size_t n_w = 0, n_imm = 0, n_r = 0, n_amo = 0, n_other = 0, bad_buf = 0;
    struct fi_cq_tagged_entry e[16];
    ssize_t k;
    while ((k = fi_cq_read(tgt.rxcq, e, 16)) > 0)
        for (ssize_t i = 0; i < k; i++) {
            uint64_t f = e[i].flags;
            if (f == (FI_RMA | FI_REMOTE_WRITE)) {
                n_w++;
                size_t w = (size_t)((unsigned char *)e[i].buf - tbuf) / REGION;
                bad_buf += w >= NW || e[i].len != wsize[w] ||
                           (unsigned char *)e[i].buf != tbuf + w * REGION;
            } else if (f & FI_REMOTE_CQ_DATA) {
                n_imm++;
                CHECK(e[i].data == 0x1234);
            } else if (f == (FI_RMA | FI_REMOTE_READ)) {
                n_r++;
            } else if (f == (FI_ATOMIC | FI_REMOTE_WRITE)) {
                n_amo++;
                CHECK(e[i].buf == (void *)cell && e[i].len == 8);
            } else {
                n_other++;
            }
        }
    CHECK(n_w == NW);
    CHECK(bad_buf == 0);
    CHECK(n_imm == 1);
    CHECK(n_r == 2);
    CHECK(n_amo == 1);
    CHECK(n_other == 0);
    /* Nothing more comes: each operation counted once. */
    for (int i = 0; i < 200; i++) {
        poll_ini();
        (void)fi_cntr_read(rwc);
    }
    CHECK(fi_cntr_read(rwc) == NW + 2 && fi_cntr_read(rrc) == 2);
    CHECK(fi_cq_read(tgt.rxcq, e, 16) == -FI_EAGAIN);

    CHECK(fi_close(&imr->fid) == 0);
    CHECK(fi_close(&tmr->fid) == 0);
    CHECK(prov_ep_close(&ini) == 0);
    CHECK(fi_close(&tgt.ep->fid) == 0);
    CHECK(fi_close(&rwc->fid) == 0 && fi_close(&rrc->fid) == 0);
    CHECK(fi_close(&tgt.txcq->fid) == 0 && fi_close(&tgt.rxcq->fid) == 0 &&
          fi_close(&tgt.av->fid) == 0 && fi_close(&tgt.dom->fid) == 0);
    fi_close(&fabric->fid);
    fi_freeinfo(info);
    free(tbuf);
    free(ibuf);
    if (failures)
        fprintf(stderr, "test_prov_rma_event: %d check(s) failed\n", failures);
    else
        printf("test_prov_rma_event: writes, reads and an atomic counted "
               "and reported at the target\n");
    return failures != 0;
}
