/*
 * mroce_eq.c - event queues.  An RDM endpoint of this provider raises no
 * events of its own (AV inserts complete synchronously, connections are
 * made inside the data path), but applications open an EQ anyway (fi_pingpong
 * does for every endpoint type) and may bind it.  So this is a plain FIFO
 * of what fi_eq_write puts in, with fi_eq_sread polling it.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mroce_fi.h"

struct mfi_eq_ent {
    struct mfi_eq_ent *next;
    uint32_t event;
    size_t len;
    unsigned char data[];
};

struct mfi_eq {
    struct fid_eq eq;
    pthread_mutex_t lock;
    struct mfi_eq_ent *head, *tail;
};

static ssize_t eq_read(struct fid_eq *feq, uint32_t *event, void *buf,
                       size_t len, uint64_t flags)
{
    struct mfi_eq *eq = (struct mfi_eq *)feq;
    pthread_mutex_lock(&eq->lock);
    struct mfi_eq_ent *e = eq->head;
    if (!e) {
        pthread_mutex_unlock(&eq->lock);
        return -FI_EAGAIN;
    }
    size_t n = e->len < len ? e->len : len;
    if (event)
        *event = e->event;
    memcpy(buf, e->data, n);
    if (!(flags & FI_PEEK)) {
        eq->head = e->next;
        if (!eq->head)
            eq->tail = NULL;
        free(e);
    }
    pthread_mutex_unlock(&eq->lock);
    return (ssize_t)n;
}

static ssize_t eq_readerr(struct fid_eq *feq, struct fi_eq_err_entry *buf,
                          uint64_t flags)
{
    return -FI_EAGAIN; /* nothing ever fails asynchronously here */
}

static ssize_t eq_write(struct fid_eq *feq, uint32_t event, const void *buf,
                        size_t len, uint64_t flags)
{
    struct mfi_eq *eq = (struct mfi_eq *)feq;
    struct mfi_eq_ent *e = malloc(sizeof(*e) + len);
    if (!e)
        return -FI_ENOMEM;
    e->next = NULL;
    e->event = event;
    e->len = len;
    memcpy(e->data, buf, len);
    pthread_mutex_lock(&eq->lock);
    if (eq->tail)
        eq->tail->next = e;
    else
        eq->head = e;
    eq->tail = e;
    pthread_mutex_unlock(&eq->lock);
    return (ssize_t)len;
}

static ssize_t eq_sread(struct fid_eq *feq, uint32_t *event, void *buf,
                        size_t len, int timeout, uint64_t flags)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        ssize_t rc = eq_read(feq, event, buf, len, flags);
        if (rc != -FI_EAGAIN)
            return rc;
        clock_gettime(CLOCK_MONOTONIC, &t);
        long ms = (t.tv_sec - t0.tv_sec) * 1000 +
                  (t.tv_nsec - t0.tv_nsec) / 1000000;
        if (timeout >= 0 && ms >= timeout)
            return -FI_EAGAIN;
        sched_yield();
    }
}

static const char *eq_strerror(struct fid_eq *feq, int prov_errno,
                               const void *err_data, char *buf, size_t len)
{
    const char *s = "no provider detail";
    if (buf && len) {
        strncpy(buf, s, len - 1);
        buf[len - 1] = 0;
        return buf;
    }
    return s;
}

static int eq_close(struct fid *fid)
{
    struct mfi_eq *eq = (struct mfi_eq *)fid;
    while (eq->head) {
        struct mfi_eq_ent *e = eq->head;
        eq->head = e->next;
        free(e);
    }
    pthread_mutex_destroy(&eq->lock);
    free(eq);
    return 0;
}

static struct fi_ops eq_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = eq_close,
    .bind = mfi_no_bind,
    .control = mfi_no_control,
    .ops_open = mfi_no_ops_open,
    .tostr = mfi_no_tostr,
    .ops_set = mfi_no_ops_set,
};

static struct fi_ops_eq eq_ops = {
    .size = sizeof(struct fi_ops_eq),
    .read = eq_read,
    .readerr = eq_readerr,
    .write = eq_write,
    .sread = eq_sread,
    .strerror = eq_strerror,
};

int mfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
                struct fid_eq **feq, void *context)
{
    struct mfi_eq *eq = calloc(1, sizeof(*eq));
    if (!eq)
        return -FI_ENOMEM;
    pthread_mutex_init(&eq->lock, NULL);
    eq->eq.fid.fclass = FI_CLASS_EQ;
    eq->eq.fid.context = context;
    eq->eq.fid.ops = &eq_fi_ops;
    eq->eq.ops = &eq_ops;
    *feq = &eq->eq;
    return 0;
}
