/*
 * qp.c - libmroce queue pairs: creation over the engine's QP (with the
 * device's source-port pool as the entropy range and GSO-sized path
 * bursts), blocking and non-blocking connection set-up and close, posting
 * work (transmitting in the caller's thread at once), attribute changes,
 * and counters.
 *
 * Reply address of a connection.  The UDP source port of a MetaRoCE packet
 * is a path entropy, so it cannot tell a listener where to answer.  The
 * library therefore sends CONNECT_REQ from the device's receive socket: the
 * source address of a CONNECT_REQ is the requester's MetaRoCE address, which
 * the engine records as the peer (CONN-13).  When every endpoint uses the
 * same port this is exactly CONN-13's "source IP with the listener's own
 * port"; it also lets endpoints on different ports (several processes on
 * one host, tests) talk.  It is the one packet whose source port is not its
 * entropy (WIRE-10 lets receivers ignore the difference).  A bonus: an ICMP
 * "port unreachable" for the CONNECT_REQ comes back to the receive socket,
 * so connecting to a dead port fails at once with MROCE_EUNREACH.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mroce/wire.h>

#include "lib_int.h"

void mroce_qp_init_attr_default(struct mroce_qp_init_attr *attr)
{
    if (!attr)
        return;
    memset(attr, 0, sizeof(*attr));
    mre_qp_attr_default(&attr->eng);
    attr->eng.path_burst = LIB_PATH_BURST;
    /* PATH-16: kernel UDP over a few spines (the namespace fabric's
     * scenario 2) gains from sending on a slot whose ACK came back clean;
     * the simulator's 100 Gbit/s fabric loses slightly with it, so the
     * engine's default leaves it off and libmroce turns it on
     * (docs/LOG.md). */
    attr->eng.path_reuse = 1;
    /* Kernel UDP endpoints are software: a peer process can be descheduled
     * for milliseconds, and RTT jitter is tens of microseconds.  The
     * engine's defaults (min_rto 200 us, delay target 5 us) suit NIC-like
     * timing; with them a loaded host times out spuriously (7 doubling
     * retries are ~25 ms) and the delay CC collapses cwnd.  These values
     * allow for that; one process driving both ends does not need them
     * (docs/LOG.md). */
    attr->eng.min_rto = LIB_MIN_RTO;
    attr->eng.target_qdelay = LIB_TARGET_QDELAY;
}

int mroce_create_qp(mroce_pd *pd, const struct mroce_qp_init_attr *attr,
                    mroce_qp **pqp)
{
    int rc = lib_check(pd, MAGIC_PD);
    if (rc < 0)
        return rc;
    if (!attr || !pqp)
        return MROCE_EINVAL;
    mroce_cq *scq = attr->send_cq, *rcq = attr->recv_cq;
    if ((rc = lib_check(scq, MAGIC_CQ)) < 0 ||
        (rc = lib_check(rcq, MAGIC_CQ)) < 0)
        return rc;
    mroce_device *dev = pd->dev;
    if (scq->dev != dev || rcq->dev != dev)
        return MROCE_EINVAL;
    mroce_qp *qp = calloc(1, sizeof(*qp));
    if (!qp)
        return MROCE_ENOMEM;
    struct mre_qp_attr a = attr->eng;
    lib_lock(dev);
    a.send_cq = scq->eng;
    a.recv_cq = rcq->eng;
    a.pd = pd->num;
    /* Entropies are the device's source ports, so each path has its own
     * socket and keeps its own 5-tuple through the network. */
    a.entropy_base = mroce_udp_src_base(dev->udp);
    a.entropy_span = mroce_udp_src_count(dev->udp);
    rc = mre_qp_new(dev->ep, &a, &qp->eng);
    if (rc < 0) {
        lib_unlock(dev);
        free(qp);
        return rc;
    }
    qp->h.magic = MAGIC_QP;
    qp->dev = dev;
    qp->pd = pd;
    qp->scq = scq;
    qp->rcq = rcq;
    qp->qpn = mre_qp_num(qp->eng);
    pd->users++;
    scq->users++;
    rcq->users++;
    lib_list_add(&dev->qps, &qp->h);
    lib_unlock(dev);
    *pqp = qp;
    return 0;
}

static void qp_dump(const mroce_qp *qp, FILE *f, int take_lock);

/* Device close: the lock is held, the engine QP still exists. */
void lib_qp_release(mroce_qp *qp)
{
    if (qp->dev->dump_counters)
        qp_dump(qp, stderr, 0);
    lib_bury(qp);
}

int mroce_destroy_qp(mroce_qp *qp)
{
    int rc = lib_check(qp, MAGIC_QP);
    if (rc < 0)
        return rc;
    mroce_device *dev = qp->dev;
    /* Counters are read under the lock inside the dump. */
    if (dev->dump_counters)
        mroce_qp_dump_counters(qp, stderr);
    lib_lock(dev);
    mre_qp_del(qp->eng);
    qp->pd->users--;
    qp->scq->users--;
    qp->rcq->users--;
    lib_list_del(&dev->qps, &qp->h);
    lib_bury(qp);
    lib_unlock(dev);
    return 0;
}

uint32_t mroce_qp_num(const mroce_qp *qp)
{
    return lib_check(qp, MAGIC_QP) < 0 ? 0 : qp->qpn;
}

enum mroce_qp_state mroce_qp_get_state(const mroce_qp *qp)
{
    if (lib_check(qp, MAGIC_QP) < 0)
        return MROCE_QPS_ERROR;
    mroce_device *dev = qp->dev;
    lib_lock(dev);
    enum mroce_qp_state st = mre_qp_state(qp->eng);
    lib_unlock(dev);
    return st;
}

/* --- connection set-up --- */

int mroce_connect_start(mroce_qp *qp, const char *host, uint16_t port,
                        uint32_t remote_qpn)
{
    int rc = lib_check(qp, MAGIC_QP);
    if (rc < 0)
        return rc;
    if (!host)
        return MROCE_EADDR;
    mroce_device *dev = qp->dev;
    struct sockaddr_storage ss;
    struct mre_addr to;
    if (mroce_udp_resolve(host, port ? port : MROCE_UDP_PORT,
                          mroce_udp_family(dev->udp), &ss) < 0 ||
        mroce_udp_addr_from_sa(&to, (struct sockaddr *)&ss, sizeof(ss)) < 0)
        return MROCE_EADDR;
    lib_lock(dev);
    if (mre_qp_state(qp->eng) != MROCE_QPS_RESET) {
        lib_unlock(dev);
        return MROCE_ESTATE;
    }
    qp->peer = to;
    qp->conn_err = 0;
    mroce_tstamp now = lib_now();
    rc = mre_qp_connect(qp->eng, &to, remote_qpn, now);
    if (rc == 0)
        lib_after_call_locked(dev, now); /* CONNECT_REQ leaves now */
    lib_unlock(dev);
    return rc;
}

static int qp_not_connecting(void *arg)
{
    return mre_qp_state(((mroce_qp *)arg)->eng) != MROCE_QPS_CONNECTING;
}

int mroce_connect(mroce_qp *qp, const char *host, uint16_t port,
                  uint32_t remote_qpn, int timeout_ms)
{
    int rc = lib_check(qp, MAGIC_QP);
    if (rc < 0)
        return rc;
    mroce_device *dev = qp->dev;
    if (timeout_ms >= 0) {
        /* The engine gives up the handshake at the same moment. */
        lib_lock(dev);
        struct mre_qp_attr a = *mre_qp_get_attr(qp->eng);
        a.handshake_timeout = (mroce_tstamp)(timeout_ms > 0 ? timeout_ms : 1) *
                              1000000ull;
        rc = mre_qp_modify(qp->eng, &a, MROCE_QP_MOD_TIMEOUT);
        lib_unlock(dev);
        if (rc < 0)
            return rc;
    }
    rc = mroce_connect_start(qp, host, port, remote_qpn);
    if (rc < 0)
        return rc;
    int done = lib_wait(dev, qp_not_connecting, qp, lib_deadline(timeout_ms));
    lib_lock(dev);
    enum mroce_qp_state st = mre_qp_state(qp->eng);
    if (!done && st == MROCE_QPS_CONNECTING) {
        mre_qp_set_error(qp->eng);
        lib_signal_cqs_locked(dev);
        st = MROCE_QPS_ERROR;
    }
    rc = st == MROCE_QPS_RTS ? 0
         : qp->conn_err      ? qp->conn_err
                             : MROCE_ETIMEDOUT;
    lib_unlock(dev);
    return rc;
}

int mroce_listen(mroce_qp *qp)
{
    int rc = lib_check(qp, MAGIC_QP);
    if (rc < 0)
        return rc;
    lib_lock(qp->dev);
    rc = mre_qp_listen(qp->eng, lib_now());
    lib_unlock(qp->dev);
    return rc;
}

static int qp_not_listening(void *arg)
{
    return mre_qp_state(((mroce_qp *)arg)->eng) != MROCE_QPS_LISTEN;
}

int mroce_accept(mroce_qp *qp, int timeout_ms)
{
    int rc = lib_check(qp, MAGIC_QP);
    if (rc < 0)
        return rc;
    mroce_device *dev = qp->dev;
    lib_lock(dev);
    enum mroce_qp_state st = mre_qp_state(qp->eng);
    if (st == MROCE_QPS_RESET)
        rc = mre_qp_listen(qp->eng, lib_now());
    else if (st != MROCE_QPS_LISTEN && st != MROCE_QPS_RTS)
        rc = MROCE_ESTATE;
    lib_unlock(dev);
    if (rc < 0)
        return rc;
    lib_wait(dev, qp_not_listening, qp, lib_deadline(timeout_ms));
    lib_lock(dev);
    st = mre_qp_state(qp->eng);
    /* On timeout the QP keeps listening: a later accept goes on waiting. */
    rc = st == MROCE_QPS_RTS      ? 0
         : st == MROCE_QPS_LISTEN ? MROCE_ETIMEDOUT
                                  : MROCE_ESTATE;
    lib_unlock(dev);
    return rc;
}

static int qp_closed(void *arg)
{
    enum mroce_qp_state st = mre_qp_state(((mroce_qp *)arg)->eng);
    return st == MROCE_QPS_CLOSED || st == MROCE_QPS_ERROR;
}

int mroce_disconnect(mroce_qp *qp, int timeout_ms)
{
    int rc = lib_check(qp, MAGIC_QP);
    if (rc < 0)
        return rc;
    mroce_device *dev = qp->dev;
    lib_lock(dev);
    enum mroce_qp_state st = mre_qp_state(qp->eng);
    if (st == MROCE_QPS_RTS) {
        mroce_tstamp now = lib_now();
        rc = mre_qp_disconnect(qp->eng, now);
        if (rc == 0)
            lib_after_call_locked(dev, now);
    } else if (st != MROCE_QPS_CLOSING && st != MROCE_QPS_CLOSED) {
        rc = MROCE_ESTATE;
    }
    lib_unlock(dev);
    if (rc < 0)
        return rc;
    if (!lib_wait(dev, qp_closed, qp, lib_deadline(timeout_ms)))
        return MROCE_ETIMEDOUT;
    return mroce_qp_get_state(qp) == MROCE_QPS_CLOSED ? 0 : MROCE_ESTATE;
}

/* mroce_qp_linger: what the wait watches. */
struct linger_watch {
    mroce_qp *qp;
    uint64_t rx_pkts; /* the QP's count when the quiet period began */
};

/* Lock held: something arrived for the QP, or it left RTS. */
static int linger_event(void *arg)
{
    struct linger_watch *w = arg;
    struct mroce_qp_counters c;
    mre_qp_get_counters(w->qp->eng, &c);
    return c.rx_pkts != w->rx_pkts || mre_qp_state(w->qp->eng) != MROCE_QPS_RTS;
}

int mroce_qp_linger(mroce_qp *qp, int max_ms)
{
    int rc = lib_check(qp, MAGIC_QP);
    if (rc < 0)
        return rc;
    if (max_ms < 0)
        return MROCE_EINVAL;
    if (max_ms == 0)
        return 0;
    mroce_device *dev = qp->dev;
    struct linger_watch w = {qp, 0};
    mroce_tstamp now = lib_now(), end = lib_deadline(max_ms);
    for (;;) {
        lib_lock(dev);
        struct mroce_qp_counters c;
        mre_qp_get_counters(qp->eng, &c);
        int live = mre_qp_state(qp->eng) == MROCE_QPS_RTS;
        mroce_tstamp max_rto = mre_qp_get_attr(qp->eng)->max_rto;
        lib_unlock(dev);
        if (!live)
            return 0;
        /* Quiet period (REL-41): the longest gap between a peer's
         * retransmissions (max_rto, its backed-off RTO) plus 8 smoothed
         * RTTs, 10 ms at least. */
        mroce_tstamp quiet = max_rto + 8 * c.srtt;
        if (quiet < LIB_LINGER_MIN_NS)
            quiet = LIB_LINGER_MIN_NS;
        mroce_tstamp until = now + quiet < end ? now + quiet : end;
        w.rx_pkts = c.rx_pkts;
        if (!lib_wait(dev, linger_event, &w, until))
            return 0; /* quiet that long, or the bound reached */
        now = lib_now();
        if (now >= end)
            return 0;
    }
}

int mroce_modify_qp_error(mroce_qp *qp)
{
    int rc = lib_check(qp, MAGIC_QP);
    if (rc < 0)
        return rc;
    lib_lock(qp->dev);
    rc = mre_qp_set_error(qp->eng);
    lib_signal_cqs_locked(qp->dev);
    lib_unlock(qp->dev);
    return rc;
}

int mroce_query_qp(const mroce_qp *qp, struct mre_qp_attr *attr)
{
    int rc = lib_check(qp, MAGIC_QP);
    if (rc < 0)
        return rc;
    if (!attr)
        return MROCE_EINVAL;
    lib_lock(qp->dev);
    *attr = *mre_qp_get_attr(qp->eng);
    lib_unlock(qp->dev);
    /* Engine CQ handles mean nothing to the caller: use qp->scq/rcq. */
    attr->send_cq = NULL;
    attr->recv_cq = NULL;
    return 0;
}

int mroce_modify_qp(mroce_qp *qp, const struct mre_qp_attr *attr, unsigned mask)
{
    int rc = lib_check(qp, MAGIC_QP);
    if (rc < 0)
        return rc;
    if (!attr)
        return MROCE_EINVAL;
    /* enum mroce_qp_attr_mask has the engine's enum mre_qp_mod values. */
    lib_lock(qp->dev);
    rc = mre_qp_modify(qp->eng, attr, mask);
    lib_unlock(qp->dev);
    return rc;
}

/* --- work --- */

int mroce_post_send(mroce_qp *qp, struct mroce_send_wr *wr,
                    struct mroce_send_wr **bad_wr)
{
    if (bad_wr)
        *bad_wr = wr;
    int rc = lib_check(qp, MAGIC_QP);
    if (rc < 0)
        return rc;
    if (!wr)
        return MROCE_EINVAL;
    mroce_device *dev = qp->dev;
    lib_lock(dev);
    /* One clock read for both: the engine's work between them takes well
     * under a microsecond, and a read costs ~40 ns in a VM. */
    mroce_tstamp now = lib_now();
    rc = mre_qp_post_send(qp->eng, wr, bad_wr, now);
    /* Doorbell: send what can go now from this thread (also when a later
     * WR of the chain was refused: the earlier ones are queued). */
    lib_after_call_locked(dev, now);
    lib_unlock(dev);
    return rc;
}

int mroce_post_recv(mroce_qp *qp, struct mroce_recv_wr *wr,
                    struct mroce_recv_wr **bad_wr)
{
    if (bad_wr)
        *bad_wr = wr;
    int rc = lib_check(qp, MAGIC_QP);
    if (rc < 0)
        return rc;
    if (!wr)
        return MROCE_EINVAL;
    lib_lock(qp->dev);
    rc = mre_qp_post_recv(qp->eng, wr, bad_wr);
    lib_unlock(qp->dev);
    return rc;
}

/* --- counters --- */

int mroce_qp_get_counters(const mroce_qp *qp, struct mroce_qp_counters *c)
{
    int rc = lib_check(qp, MAGIC_QP);
    if (rc < 0)
        return rc;
    if (!c)
        return MROCE_EINVAL;
    lib_lock(qp->dev);
    mre_qp_get_counters(qp->eng, c);
    lib_unlock(qp->dev);
    return 0;
}

int mroce_qp_path_stats(const mroce_qp *qp, struct mroce_path_stats *ps, int n)
{
    int rc = lib_check(qp, MAGIC_QP);
    if (rc < 0)
        return rc;
    if (n < 0 || (n && !ps))
        return MROCE_EINVAL;
    lib_lock(qp->dev);
    rc = mre_qp_path_stats(qp->eng, ps, n);
    lib_unlock(qp->dev);
    return rc;
}

static void addr_str(const struct mre_addr *a, char *buf, size_t n)
{
    struct sockaddr_storage ss;
    char ip[INET6_ADDRSTRLEN];
    if (!mroce_udp_addr_to_sa(a, &ss)) {
        snprintf(buf, n, "-");
        return;
    }
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &s->sin_addr, ip, sizeof(ip));
        snprintf(buf, n, "%s:%u", ip, ntohs(s->sin_port));
    } else {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof(ip));
        snprintf(buf, n, "[%s]:%u", ip, ntohs(s->sin6_port));
    }
}

void mroce_qp_dump_counters(const mroce_qp *qp, void *file)
{
    FILE *f = file ? file : stderr;
    if (lib_check(qp, MAGIC_QP) < 0) {
        fprintf(f, "qp: invalid or destroyed\n");
        return;
    }
    qp_dump(qp, f, 1);
}

static void qp_dump(const mroce_qp *qp, FILE *f, int take_lock)
{
    struct mroce_qp_counters c;
    struct mroce_path_stats *ps = calloc(256, sizeof(*ps));
    if (take_lock)
        lib_lock(qp->dev);
    mre_qp_get_counters(qp->eng, &c);
    int np = ps ? mre_qp_path_stats(qp->eng, ps, 256) : 0;
    enum mroce_qp_state st = mre_qp_state(qp->eng);
    uint32_t rqpn = mre_qp_remote_qpn(qp->eng);
    if (take_lock)
        lib_unlock(qp->dev);
    char peer[80];
    addr_str(&qp->peer, peer, sizeof(peer));
    fprintf(f, "qp 0x%x state %s remote_qpn 0x%x%s%s\n", qp->qpn,
            mroce_qp_state_str(st), rqpn, qp->peer.len ? " peer " : "",
            qp->peer.len ? peer : "");
    int col = 0;
#define MROCE_X_PRINT(name)                                     \
    fprintf(f, "%s%-14s %12llu", col == 0 ? "  " : "  ", #name, \
            (unsigned long long)c.name);                        \
    if (++col == 3) {                                           \
        fputc('\n', f);                                         \
        col = 0;                                                \
    }
    MROCE_QP_COUNTERS(MROCE_X_PRINT)
#undef MROCE_X_PRINT
    if (col)
        fputc('\n', f);
    fprintf(f, "  %4s %7s %6s %10s %10s %8s %8s %10s\n", "path", "entropy",
            "weight", "tx_pkts", "acked", "lost", "ecn", "srtt_us");
    for (int i = 0; i < np; i++) {
        if (!ps[i].active && !ps[i].tx_pkts)
            continue;
        fprintf(f, "  %4d %7u %6u %10llu %10llu %8llu %8llu %10.1f\n", i,
                ps[i].entropy, ps[i].weight, (unsigned long long)ps[i].tx_pkts,
                (unsigned long long)ps[i].acked_pkts,
                (unsigned long long)ps[i].lost_pkts,
                (unsigned long long)ps[i].ecn_marks, (double)ps[i].srtt / 1e3);
    }
    free(ps);
}
