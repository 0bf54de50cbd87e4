/*
 * bench_fi_conn.c - what a provider's connections to one peer cost a
 * process, on the real path: two domains in one process (the peer pair),
 * E endpoints each, every endpoint of one sending a 64-byte tagged message
 * to every endpoint of the other and back (so every endpoint pair has
 * talked), then the process's resident memory growth, in three steps:
 * the domains opened (the baseline), the endpoints enabled (their devices
 * and listeners), every pair connected.  Divided by two (two domains), it
 * is one side's cost.  With MROCE_DUMP_COUNTERS=1 libmroce also prints
 * every QP it destroys (bench/prov_conn_count.sh counts them).  For
 * mroce the provider's introspection (prov/include/mroce_fi_ext.h) also
 * gives domain 0's devices, connected QPs (all to domain 1) and listeners
 * once every pair has talked; FI_MROCE_SHARED_CONN picks its layout.
 * bench/bench_fi_conn.sh runs the table of bench/README.md.
 *
 *   FI_PROVIDER_PATH=build/prov bench_fi_conn E [PROV]     (E <= 64)
 *
 * The last line is machine-readable: "RESULT key=value ...".  A
 * measurement, never a test; every wait is bounded in time.
 */
#define _GNU_SOURCE
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
#include <rdma/fi_tagged.h>

#include "mroce_fi_ext.h"

#define MAXE 64
#define MSG 64

struct side {
    struct fid_domain *dom;
    struct fid_av *av;
    struct fid_ep *ep[MAXE];
    struct fid_cq *cq[MAXE]; /* transmit and receive */
    fi_addr_t addr[MAXE];    /* the other side's endpoints, in this AV */
    char name[MAXE][64];
    size_t namelen[MAXE];
};

static struct side sd[2];
static unsigned char bufs[2][MAXE][2 * MAXE][MSG];

#define DIE_IF(c, what)                                 \
    do {                                                \
        int rc_ = (c);                                  \
        if (rc_) {                                      \
            fprintf(stderr, "%s: %s\n", what,           \
                    fi_strerror(rc_ < 0 ? -rc_ : rc_)); \
            exit(1);                                    \
        }                                               \
    } while (0)

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Resident set, bytes (/proc/self/status VmRSS). */
static long rss_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmRSS:", 6))
            kb = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kb * 1024;
}

/* Reads every CQ once, counting completions and error entries. */
static void poll_all(int ne, size_t *got, size_t *bad)
{
    for (int s = 0; s < 2; s++)
        for (int e = 0; e < ne; e++) {
            struct fi_cq_tagged_entry c[16];
            ssize_t k = fi_cq_read(sd[s].cq[e], c, 16);
            if (k == -FI_EAVAIL) {
                struct fi_cq_err_entry err = {0};
                fi_cq_readerr(sd[s].cq[e], &err, 0);
                if (!*bad)
                    fprintf(stderr, "first error entry: %s (provider %d)\n",
                            fi_strerror(err.err), err.prov_errno);
                (*bad)++;
                (*got)++;
            } else if (k > 0) {
                *got += (size_t)k;
            }
        }
}

int main(int argc, char **argv)
{
    int ne = argc > 1 ? atoi(argv[1]) : 8;
    const char *prov = argc > 2 ? argv[2] : "mroce";
    if (ne < 1 || ne > MAXE) {
        fprintf(stderr, "E must be 1..%d\n", MAXE);
        return 2;
    }
    struct fi_info *hints = fi_allocinfo(), *info = NULL;
    hints->caps = FI_TAGGED;
    hints->ep_attr->type = FI_EP_RDM;
    hints->fabric_attr->prov_name = strdup(prov);
    hints->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR |
                                  FI_MR_ALLOCATED;
    DIE_IF(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, FI_SOURCE, hints,
                      &info),
           "fi_getinfo");
    struct fid_fabric *fabric;
    DIE_IF(fi_fabric(info->fabric_attr, &fabric, NULL), "fi_fabric");
    struct fi_av_attr av = {.type = FI_AV_TABLE};
    struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_TAGGED,
                             .wait_obj = FI_WAIT_NONE};
    for (int s = 0; s < 2; s++) {
        DIE_IF(fi_domain(fabric, info, &sd[s].dom, NULL), "fi_domain");
        DIE_IF(fi_av_open(sd[s].dom, &av, &sd[s].av, NULL), "fi_av_open");
    }
    long rss0 = rss_bytes();
    for (int s = 0; s < 2; s++)
        for (int e = 0; e < ne; e++) {
            struct side *x = &sd[s];
            DIE_IF(fi_cq_open(x->dom, &cqa, &x->cq[e], NULL), "fi_cq_open");
            DIE_IF(fi_endpoint(x->dom, info, &x->ep[e], NULL), "fi_endpoint");
            DIE_IF(fi_ep_bind(x->ep[e], &x->av->fid, 0), "bind av");
            DIE_IF(fi_ep_bind(x->ep[e], &x->cq[e]->fid, FI_TRANSMIT | FI_RECV),
                   "bind cq");
            DIE_IF(fi_enable(x->ep[e]), "fi_enable");
            x->namelen[e] = sizeof(x->name[e]);
            DIE_IF(fi_getname(&x->ep[e]->fid, x->name[e], &x->namelen[e]),
                   "fi_getname");
        }
    for (int s = 0; s < 2; s++)
        for (int e = 0; e < ne; e++)
            DIE_IF(fi_av_insert(sd[s].av, sd[1 - s].name[e], 1, &sd[s].addr[e],
                                0, NULL) != 1,
                   "fi_av_insert");
    long rss1 = rss_bytes();
    /* Receives first (tag: the sender's index), then the sends. */
    for (int s = 0; s < 2; s++)
        for (int e = 0; e < ne; e++)
            for (int p = 0; p < ne; p++)
                DIE_IF((int)fi_trecv(sd[s].ep[e], bufs[s][e][p], MSG, NULL,
                                     sd[s].addr[p], (uint64_t)p, 0, NULL),
                       "fi_trecv");
    size_t want = 4 * (size_t)ne * ne, got = 0, bad = 0;
    double t0 = now_s();
    for (int s = 0; s < 2; s++)
        for (int e = 0; e < ne; e++)
            for (int p = 0; p < ne; p++) {
                unsigned char *b = bufs[s][e][ne + p];
                memset(b, (int)(s * 64 + e), MSG);
                ssize_t rc;
                while ((rc = fi_tsend(sd[s].ep[e], b, MSG, NULL, sd[s].addr[p],
                                      (uint64_t)e, NULL)) == -FI_EAGAIN &&
                       now_s() - t0 < 30)
                    poll_all(ne, &got, &bad);
                DIE_IF((int)rc, "fi_tsend");
            }
    while (got < want && now_s() - t0 < 60)
        poll_all(ne, &got, &bad);
    for (int s = 0; s < 2; s++)
        for (int e = 0; e < ne; e++)
            for (int p = 0; p < ne; p++)
                if (bufs[s][e][p][0] != (unsigned char)((1 - s) * 64 + p))
                    bad++;
    long rss2 = rss_bytes();
    struct mroce_fi_conn_stats st = {0};
    struct mroce_fi_conn_ops *ops = NULL;
    if (!strcmp(prov, "mroce") &&
        fi_open_ops(&sd[0].dom->fid, MROCE_FI_CONN_OPS, 0, (void **)&ops,
                    NULL) == 0)
        ops->stats(sd[0].dom, sd[1].name[0], sd[1].namelen[0], &st);
    const char *sc = getenv("FI_MROCE_SHARED_CONN");
    printf("E %d: endpoints enabled +%.1f MB, all %d pairs connected +%.1f MB "
           "(both domains); per side %.1f MB, per endpoint pair %.1f KB\n",
           ne, (rss1 - rss0) / 1e6, ne * ne, (rss2 - rss0) / 1e6,
           (rss2 - rss0) / 2e6, (rss2 - rss1) / 2e3 / ((double)ne * ne));
    for (int s = 0; s < 2; s++) {
        for (int e = 0; e < ne; e++) {
            fi_close(&sd[s].ep[e]->fid);
            fi_close(&sd[s].cq[e]->fid);
        }
        fi_close(&sd[s].av->fid);
        fi_close(&sd[s].dom->fid);
    }
    fi_close(&fabric->fid);
    fi_freeinfo(info);
    fi_freeinfo(hints);
    printf("RESULT prov=%s shared=%s E=%d completions=%zu want=%zu "
           "errors=%zu rss_ep=%ld rss_conn=%ld devices=%u qps=%u peer_qps=%u "
           "listening=%u\n",
           prov,
           strcmp(prov, "mroce") ? "-"
           : sc                  ? sc
                                 : "1",
           ne, got, want, bad, rss1 - rss0, rss2 - rss0, st.devices, st.qps,
           st.peer_qps, st.listening);
    return got == want && bad == 0 ? 0 : 1;
}
