/*
 * prov_fi_test.h - what the provider's libfabric-level tests
 * (test_prov_*.c) share: checks that count failures, a fatal one for
 * set-up calls, a monotonic clock, keeping the provider mapped for leak
 * reports, the provider's fi_info and fabric, and one endpoint with its
 * domain, AV and CQs opened, bound and enabled.  Header-only and static,
 * like tests/testutil.h.
 */
#ifndef MROCE_PROV_FI_TEST_H
#define MROCE_PROV_FI_TEST_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

/* Failed checks so far: a test goes on after one, and its exit status
 * says whether any failed. */
static int failures;
#define CHECK(c)                                                             \
    do {                                                                     \
        if (!(c)) {                                                          \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, \
                    #c);                                                     \
            failures++;                                                      \
        }                                                                    \
    } while (0)

/* A set-up call that must succeed: exits with the libfabric error. */
#define DIE_IF(c, what)                                                  \
    do {                                                                 \
        int rc_ = (c);                                                   \
        if (rc_) {                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, what, \
                    fi_strerror(-rc_));                                  \
            exit(1);                                                     \
        }                                                                \
    } while (0)

static inline double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Keeps the provider mapped after libfabric unloads it at exit, so that
 * leak reports (sanitized builds) can name its functions. */
static inline void prov_keep_mapped(void)
{
    const char *dir = getenv("FI_PROVIDER_PATH");
    if (dir) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/libmroce-fi.so", dir);
        (void)dlopen(path, RTLD_NOW | RTLD_NODELETE);
    }
}

/* The mroce provider's fi_info for RDM endpoints with caps and the keys
 * and addresses it uses (FI_MR_PROV_KEY | FI_MR_VIRT_ADDR), with
 * FI_PROGRESS_AUTO and FI_THREAD_SAFE if autoprog, and its fabric; exits
 * if there is none. */
static inline struct fi_info *prov_getinfo(uint64_t caps, int autoprog,
                                           struct fid_fabric **fabric)
{
    struct fi_info *hints = fi_allocinfo(), *info = NULL;
    hints->caps = caps;
    hints->ep_attr->type = FI_EP_RDM;
    hints->fabric_attr->prov_name = strdup("mroce");
    hints->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR |
                                  FI_MR_ALLOCATED;
    if (autoprog) {
        hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
        hints->domain_attr->threading = FI_THREAD_SAFE;
    }
    int rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
    fi_freeinfo(hints);
    if (rc) {
        fprintf(stderr, "fi_getinfo(mroce): %s (is FI_PROVIDER_PATH set?)\n",
                fi_strerror(-rc));
        exit(1);
    }
    DIE_IF(fi_fabric(info->fabric_attr, fabric, NULL), "fi_fabric");
    return info;
}

/* One endpoint and its objects. */
struct prov_ep {
    struct fid_domain *dom;
    struct fid_av *av;
    struct fid_cq *txcq, *rxcq;
    struct fid_ep *ep;
    char name[64];
    size_t namelen;
};

/* A tagged-format CQ without a wait object on dom. */
static inline struct fid_cq *prov_cq_open(struct fid_domain *dom)
{
    struct fi_cq_attr cq = {.format = FI_CQ_FORMAT_TAGGED,
                            .wait_obj = FI_WAIT_NONE};
    struct fid_cq *c;
    DIE_IF(fi_cq_open(dom, &cq, &c, NULL), "fi_cq_open");
    return c;
}

/* Opens an endpoint of info on dom, binds it to av and to its CQs (one
 * CQ for both directions when txcq == rxcq), enables it and takes its
 * name (*namelen: the room in name, then the name's length). */
static inline struct fid_ep *prov_ep_on(struct fid_domain *dom,
                                        struct fi_info *info, struct fid_av *av,
                                        struct fid_cq *txcq,
                                        struct fid_cq *rxcq, char *name,
                                        size_t *namelen)
{
    struct fid_ep *ep;
    DIE_IF(fi_endpoint(dom, info, &ep, NULL), "fi_endpoint");
    DIE_IF(fi_ep_bind(ep, &av->fid, 0), "bind av");
    if (txcq == rxcq) {
        DIE_IF(fi_ep_bind(ep, &txcq->fid, FI_TRANSMIT | FI_RECV), "bind cq");
    } else {
        DIE_IF(fi_ep_bind(ep, &txcq->fid, FI_TRANSMIT), "bind txcq");
        DIE_IF(fi_ep_bind(ep, &rxcq->fid, FI_RECV), "bind rxcq");
    }
    DIE_IF(fi_enable(ep), "fi_enable");
    DIE_IF(fi_getname(&ep->fid, name, namelen), "fi_getname");
    return ep;
}

/* Opens x's domain, an AV of type avt, tagged-format CQs and the
 * endpoint, binds and enables it, and takes its name. */
static inline void prov_ep_open(struct prov_ep *x, struct fid_fabric *fabric,
                                struct fi_info *info, enum fi_av_type avt)
{
    DIE_IF(fi_domain(fabric, info, &x->dom, NULL), "fi_domain");
    struct fi_av_attr av = {.type = avt};
    DIE_IF(fi_av_open(x->dom, &av, &x->av, NULL), "fi_av_open");
    x->txcq = prov_cq_open(x->dom);
    x->rxcq = prov_cq_open(x->dom);
    x->namelen = sizeof(x->name);
    x->ep = prov_ep_on(x->dom, info, x->av, x->txcq, x->rxcq, x->name,
                       &x->namelen);
}

/* Closes what prov_ep_open opened; returns how many closes failed. */
static inline int prov_ep_close(struct prov_ep *x)
{
    int bad = 0;
    bad += fi_close(&x->ep->fid) != 0;
    bad += fi_close(&x->txcq->fid) != 0;
    bad += fi_close(&x->rxcq->fid) != 0;
    bad += fi_close(&x->av->fid) != 0;
    bad += fi_close(&x->dom->fid) != 0;
    return bad;
}

#endif /* MROCE_PROV_FI_TEST_H */
