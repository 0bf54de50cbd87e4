/* What this librdmacm does not provide, failing with a clear error rather
 * than a crash: rsockets (rsocket() and the r* calls on its sockets;
 * rpoll and rselect work on ordinary descriptors, which is all an
 * application without rsockets passes them), multicast, SRQs on an id and
 * ECE.  The first call prints why on stderr. */
#include <poll.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/select.h>

#include "rdmacm_int.h"

static void say(const char *what)
{
    static int said;
    if (!said) {
        said = 1;
        fprintf(stderr,
                "librdmacm (MetaRoCE): %s is not supported "
                "(rdmacm/README.md)\n",
                what);
    }
}

static int no_rs(void)
{
    say("rsockets");
    return cm_err(EOPNOTSUPP);
}

int rsocket(int domain, int type, int protocol)
{
    (void)domain, (void)type, (void)protocol;
    return no_rs();
}
int rbind(int s, const struct sockaddr *a, socklen_t l)
{
    (void)s, (void)a, (void)l;
    return no_rs();
}
int rlisten(int s, int b)
{
    (void)s, (void)b;
    return no_rs();
}
int raccept(int s, struct sockaddr *a, socklen_t *l)
{
    (void)s, (void)a, (void)l;
    return no_rs();
}
int rconnect(int s, const struct sockaddr *a, socklen_t l)
{
    (void)s, (void)a, (void)l;
    return no_rs();
}
int rshutdown(int s, int how)
{
    (void)s, (void)how;
    return no_rs();
}
int rclose(int s)
{
    (void)s;
    return no_rs();
}
ssize_t rrecv(int s, void *b, size_t n, int f)
{
    (void)s, (void)b, (void)n, (void)f;
    return no_rs();
}
ssize_t rrecvfrom(int s, void *b, size_t n, int f, struct sockaddr *a,
                  socklen_t *l)
{
    (void)s, (void)b, (void)n, (void)f, (void)a, (void)l;
    return no_rs();
}
ssize_t rrecvmsg(int s, struct msghdr *m, int f)
{
    (void)s, (void)m, (void)f;
    return no_rs();
}
ssize_t rsend(int s, const void *b, size_t n, int f)
{
    (void)s, (void)b, (void)n, (void)f;
    return no_rs();
}
ssize_t rsendto(int s, const void *b, size_t n, int f, const struct sockaddr *a,
                socklen_t l)
{
    (void)s, (void)b, (void)n, (void)f, (void)a, (void)l;
    return no_rs();
}
ssize_t rsendmsg(int s, const struct msghdr *m, int f)
{
    (void)s, (void)m, (void)f;
    return no_rs();
}
ssize_t rread(int s, void *b, size_t n)
{
    (void)s, (void)b, (void)n;
    return no_rs();
}
ssize_t rreadv(int s, const struct iovec *v, int n)
{
    (void)s, (void)v, (void)n;
    return no_rs();
}
ssize_t rwrite(int s, const void *b, size_t n)
{
    (void)s, (void)b, (void)n;
    return no_rs();
}
ssize_t rwritev(int s, const struct iovec *v, int n)
{
    (void)s, (void)v, (void)n;
    return no_rs();
}
int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
    return poll(fds, nfds, timeout);
}
int rselect(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *t)
{
    return select(nfds, r, w, e, t);
}
int rgetpeername(int s, struct sockaddr *a, socklen_t *l)
{
    (void)s, (void)a, (void)l;
    return no_rs();
}
int rgetsockname(int s, struct sockaddr *a, socklen_t *l)
{
    (void)s, (void)a, (void)l;
    return no_rs();
}
int rsetsockopt(int s, int level, int name, const void *v, socklen_t l)
{
    (void)s, (void)level, (void)name, (void)v, (void)l;
    return no_rs();
}
int rgetsockopt(int s, int level, int name, void *v, socklen_t *l)
{
    (void)s, (void)level, (void)name, (void)v, (void)l;
    return no_rs();
}
int rfcntl(int s, int cmd, ...)
{
    (void)s, (void)cmd;
    return no_rs();
}
off_t riomap(int s, void *b, size_t n, int prot, int flags, off_t off)
{
    (void)s, (void)b, (void)n, (void)prot, (void)flags, (void)off;
    return no_rs();
}
int riounmap(int s, void *b, size_t n)
{
    (void)s, (void)b, (void)n;
    return no_rs();
}
size_t riowrite(int s, const void *b, size_t n, off_t off, int flags)
{
    (void)s, (void)b, (void)n, (void)off, (void)flags;
    no_rs();
    return 0;
}

int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr,
                        void *context)
{
    (void)id, (void)addr, (void)context;
    say("multicast");
    return cm_err(EOPNOTSUPP);
}
int rdma_join_multicast_ex(struct rdma_cm_id *id,
                           struct rdma_cm_join_mc_attr_ex *attr, void *context)
{
    (void)id, (void)attr, (void)context;
    say("multicast");
    return cm_err(EOPNOTSUPP);
}
int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
    (void)id, (void)addr;
    return cm_err(EOPNOTSUPP);
}

int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
                    struct ibv_srq_init_attr *attr)
{
    (void)id, (void)pd, (void)attr;
    return cm_err(EOPNOTSUPP); /* our libibverbs has no SRQs */
}
int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *a)
{
    (void)id, (void)a;
    return cm_err(EOPNOTSUPP);
}
void rdma_destroy_srq(struct rdma_cm_id *id)
{
    (void)id;
}

int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
    (void)id, (void)ece;
    return cm_err(EOPNOTSUPP);
}
int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
    (void)id, (void)ece;
    return cm_err(EOPNOTSUPP);
}
