/*
 * test_prov_interop.c - one side of prov_interop.sh: a process with one
 * RDM endpoint that sends a tagged message to its peer process and
 * receives one from it, each side with its own FI_MROCE_SHARED_CONN.
 * The names go through files: this side writes its own to DIR/ROLE.name
 * and waits for the peer's, DIR/PEER.name.
 *
 *   test_prov_interop ROLE PEER DIR EXPECT
 *
 * EXPECT "ok": the send completes, the message arrives with its data.
 * EXPECT "fail": the peer runs the other connection layout (CONN-38), so
 * the send completes with an error (not success, and not silence until
 * the deadline), and nothing arrives.  Either way it prints one line:
 * "ROLE: send SUCCESS|ERROR(err)|NONE, recv ..." and exits 0 if that is
 * the expected outcome.
 *
 * Needs FI_PROVIDER_PATH to name the directory of libmroce-fi.so.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "prov_fi_test.h"

enum { OUTCOME_NONE, OUTCOME_OK, OUTCOME_ERR };

static const char *outcome_str(int o, int err)
{
    static char s[2][64];
    static int k;
    k ^= 1;
    if (o == OUTCOME_OK)
        return "SUCCESS";
    if (o == OUTCOME_NONE)
        return "NONE";
    snprintf(s[k], sizeof(s[k]), "ERROR(%s)", fi_strerror(err));
    return s[k];
}

static int write_name(const char *path, const void *name, size_t len)
{
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(name, 1, len, f) != len) {
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    return rename(tmp, path);
}

static size_t read_name(const char *path, void *name, size_t cap)
{
    double t0 = now_s();
    while (now_s() - t0 < 10) {
        FILE *f = fopen(path, "rb");
        if (f) {
            size_t n = fread(name, 1, cap, f);
            fclose(f);
            if (n > 0)
                return n;
        }
        usleep(10000);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s ROLE PEER DIR ok|fail\n", argv[0]);
        return 2;
    }
    const char *role = argv[1], *peer = argv[2], *dir = argv[3];
    int expect_ok = !strcmp(argv[4], "ok");
    struct fid_fabric *fabric;
    struct fi_info *info = prov_getinfo(FI_MSG | FI_TAGGED, 0, &fabric);
    struct fid_domain *dom;
    struct fid_av *av;
    struct fid_ep *ep;
    struct fid_cq *cq;
    DIE_IF(fi_domain(fabric, info, &dom, NULL), "fi_domain");
    struct fi_av_attr ava = {.type = FI_AV_TABLE};
    DIE_IF(fi_av_open(dom, &ava, &av, NULL), "fi_av_open");
    cq = prov_cq_open(dom);
    char name[64], pname[64], path[4096];
    size_t len = sizeof(name);
    ep = prov_ep_on(dom, info, av, cq, cq, name, &len);
    snprintf(path, sizeof(path), "%s/%s.name", dir, role);
    DIE_IF(write_name(path, name, len), "write the name");
    snprintf(path, sizeof(path), "%s/%s.name", dir, peer);
    size_t plen = read_name(path, pname, sizeof(pname));
    DIE_IF(plen == 0, "read the peer's name");
    fi_addr_t to;
    DIE_IF(fi_av_insert(av, pname, 1, &to, 0, NULL) != 1, "fi_av_insert");

    static char out[64], in[64];
    snprintf(out, sizeof(out), "from %s", role);
    int send_ctx, recv_ctx;
    CHECK(fi_trecv(ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 7, 0, &recv_ctx) ==
          0);
    ssize_t rc = fi_tsend(ep, out, strlen(out) + 1, NULL, to, 7, &send_ctx);
    int so = OUTCOME_NONE, ro = OUTCOME_NONE, serr = 0, rerr = 0;
    if (rc != 0) {
        so = OUTCOME_ERR;
        serr = (int)-rc;
    }
    /* Polls (manual progress: this side answers the peer only while it
     * polls) until this side has its outcome and the peer says it has
     * its own, at most 8 s: long enough for a handshake, a refusal and
     * its answer, far below the retry and peer timeouts that a silent
     * mismatch would wait for. */
    char done[4096], peer_done[4096];
    snprintf(done, sizeof(done), "%s/%s.done", dir, role);
    snprintf(peer_done, sizeof(peer_done), "%s/%s.done", dir, peer);
    int told = 0;
    double t0 = now_s();
    while (now_s() - t0 < 8) {
        struct fi_cq_tagged_entry c;
        ssize_t k = fi_cq_read(cq, &c, 1);
        if (k == 1) {
            if (c.op_context == &send_ctx)
                so = OUTCOME_OK;
            else if (c.op_context == &recv_ctx)
                ro = OUTCOME_OK;
        } else if (k == -FI_EAVAIL) {
            struct fi_cq_err_entry e = {0};
            if (fi_cq_readerr(cq, &e, 0) == 1) {
                if (e.op_context == &send_ctx) {
                    so = OUTCOME_ERR;
                    serr = e.err;
                } else if (e.op_context == &recv_ctx) {
                    ro = OUTCOME_ERR;
                    rerr = e.err;
                }
            }
        }
        /* Settled: the send has its answer and, if all goes well, the
         * receive too; expected to fail, the receive never completes. */
        if (!told && so != OUTCOME_NONE && (ro != OUTCOME_NONE || !expect_ok)) {
            DIE_IF(write_name(done, "x", 1), "write done");
            told = 1;
        }
        if (told && access(peer_done, F_OK) == 0)
            break;
    }
    printf("%s: send %s, recv %s\n", role, outcome_str(so, serr),
           outcome_str(ro, rerr));
    if (expect_ok) {
        CHECK(so == OUTCOME_OK && ro == OUTCOME_OK);
        char want[64];
        snprintf(want, sizeof(want), "from %s", peer);
        CHECK(ro != OUTCOME_OK || !strcmp(in, want));
    } else {
        CHECK(so == OUTCOME_ERR);
        CHECK(ro != OUTCOME_OK);
    }
    fi_close(&ep->fid);
    fi_close(&cq->fid);
    fi_close(&av->fid);
    fi_close(&dom->fid);
    fi_close(&fabric->fid);
    fi_freeinfo(info);
    return failures != 0;
}
