/*
 * mroce_coll.c - the endpoint's collective operations table.  FI_COLLECTIVE
 * is not offered (no AV sets, no multicast), but libfabric's fi_barrier,
 * fi_allreduce and the rest jump through the endpoint's table without a
 * check, so every entry is here and answers -FI_ENOSYS.
 */
#include "mroce_fi.h"

#include <rdma/fi_collective.h>

static ssize_t coll_barrier(struct fid_ep *ep, fi_addr_t coll_addr,
                            void *context)
{
    return -FI_ENOSYS;
}

static ssize_t coll_broadcast(struct fid_ep *ep, void *buf, size_t count,
                              void *desc, fi_addr_t coll_addr,
                              fi_addr_t root_addr, enum fi_datatype datatype,
                              uint64_t flags, void *context)
{
    return -FI_ENOSYS;
}

/* alltoall, allgather: the same shape. */
static ssize_t coll_all(struct fid_ep *ep, const void *buf, size_t count,
                        void *desc, void *result, void *result_desc,
                        fi_addr_t coll_addr, enum fi_datatype datatype,
                        uint64_t flags, void *context)
{
    return -FI_ENOSYS;
}

/* allreduce, reduce_scatter: the same shape. */
static ssize_t coll_all_op(struct fid_ep *ep, const void *buf, size_t count,
                           void *desc, void *result, void *result_desc,
                           fi_addr_t coll_addr, enum fi_datatype datatype,
                           enum fi_op op, uint64_t flags, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t coll_reduce(struct fid_ep *ep, const void *buf, size_t count,
                           void *desc, void *result, void *result_desc,
                           fi_addr_t coll_addr, fi_addr_t root_addr,
                           enum fi_datatype datatype, enum fi_op op,
                           uint64_t flags, void *context)
{
    return -FI_ENOSYS;
}

/* scatter, gather: the same shape. */
static ssize_t coll_rooted(struct fid_ep *ep, const void *buf, size_t count,
                           void *desc, void *result, void *result_desc,
                           fi_addr_t coll_addr, fi_addr_t root_addr,
                           enum fi_datatype datatype, uint64_t flags,
                           void *context)
{
    return -FI_ENOSYS;
}

static ssize_t coll_msg(struct fid_ep *ep, const struct fi_msg_collective *msg,
                        struct fi_ioc *resultv, void **result_desc,
                        size_t result_count, uint64_t flags)
{
    return -FI_ENOSYS;
}

static ssize_t coll_barrier2(struct fid_ep *ep, fi_addr_t coll_addr,
                             uint64_t flags, void *context)
{
    return -FI_ENOSYS;
}

struct fi_ops_collective mfi_coll_ops = {
    .size = sizeof(struct fi_ops_collective),
    .barrier = coll_barrier,
    .broadcast = coll_broadcast,
    .alltoall = coll_all,
    .allreduce = coll_all_op,
    .allgather = coll_all,
    .reduce_scatter = coll_all_op,
    .reduce = coll_reduce,
    .scatter = coll_rooted,
    .gather = coll_rooted,
    .msg = coll_msg,
    .barrier2 = coll_barrier2,
};
