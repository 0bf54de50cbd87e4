/*
 * test_rdmacm_api.c - librdmacm over MetaRoCE in one process, over two
 * devices (mroce0 on 127.0.0.1, mroce1 on 127.0.0.2), asynchronous ids on
 * two event channels:
 *   - the channel fd is quiet with nothing queued and readable under
 *     poll() once an event is; O_NONBLOCK with none queued gives EAGAIN;
 *   - ADDR_RESOLVED binds the id to the source address' device, then
 *     ROUTE_RESOLVED; CONNECT_REQUEST names the listener and a new id on
 *     the device the peer reached, with the REQ's 56 bytes of private
 *     data; ESTABLISHED brings the REP's 196 bytes to the active side and
 *     comes to the passive side too; a SEND crosses the connected QPs
 *     (CQs the library created);
 *   - rdma_reject gives the peer REJECTED, status 28, with its private
 *     data; a port nobody listens on gives REJECTED, status 8;
 *   - an accept after the active side went gives CONNECT_ERROR;
 *   - rdma_disconnect gives DISCONNECTED on both sides and flushes;
 *   - ADDR_ERROR (-ENODEV) for a destination no device's family reaches;
 *   - the CM timeouts (MROCE_CM_TIMEOUT_MS 300 here): a listener whose CM
 *     never answers the REQ gives UNREACHABLE, -ETIMEDOUT; an accept
 *     three timeouts after the request still connects (the passive CM's
 *     MRA extended the wait); a DREQ the peer's CM never answers ends in
 *     DISCONNECTED (the peer here is a bare TCP socket speaking cm_msg.h);
 *   - refused: a bind to an address without a device (ENODEV), a UDP port
 *     space (EOPNOTSUPP), private data over the limit and a connect with
 *     neither QP nor parameters (EINVAL).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../cm_msg.h"

static int failures;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                  \
            failures++;                                                      \
        }                                                                    \
    } while (0)

#define PORT 5381

static struct sockaddr_in sin_of(const char *a, int port)
{
    struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, a, &s.sin_addr);
    return s;
}

static int readable(struct rdma_event_channel *ch, int ms)
{
    struct pollfd p = {.fd = ch->fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* The next event on CH, which must be WANT (NULL otherwise). */
static struct rdma_cm_event *next(struct rdma_event_channel *ch,
                                  enum rdma_cm_event_type want)
{
    struct rdma_cm_event *e = NULL;
    if (!readable(ch, 5000) || rdma_get_cm_event(ch, &e)) {
        fprintf(stderr, "no event (wanted %s)\n", rdma_event_str(want));
        failures++;
        return NULL;
    }
    if (e->event != want) {
        fprintf(stderr, "got %s status %d, wanted %s\n",
                rdma_event_str(e->event), e->status, rdma_event_str(want));
        failures++;
        rdma_ack_cm_event(e);
        return NULL;
    }
    return e;
}

static void make_qp(struct rdma_cm_id *id)
{
    struct ibv_qp_init_attr a = {.qp_type = IBV_QPT_RC};
    a.cap.max_send_wr = a.cap.max_recv_wr = 8;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    CHECK(rdma_create_qp(id, NULL, &a) == 0);
    CHECK(id->qp && id->send_cq && id->recv_cq && id->send_cq_channel);
}

static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        int n = ibv_poll_cq(cq, 1, wc);
        if (n)
            return n;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (t.tv_sec - t0.tv_sec < 10);
    return 0;
}

/* An active id on CH resolved from 127.0.0.2 to 127.0.0.1:port. */
static struct rdma_cm_id *resolved(struct rdma_event_channel *ch, int port)
{
    struct rdma_cm_id *id;
    struct sockaddr_in src = sin_of("127.0.0.2", 0),
                       dst = sin_of("127.0.0.1", port);
    CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_resolve_addr(id, (struct sockaddr *)&src,
                            (struct sockaddr *)&dst, 2000) == 0);
    struct rdma_cm_event *e = next(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
    if (e)
        rdma_ack_cm_event(e);
    CHECK(rdma_resolve_route(id, 2000) == 0);
    if ((e = next(ch, RDMA_CM_EVENT_ROUTE_RESOLVED)))
        rdma_ack_cm_event(e);
    return id;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* A TCP socket listening on 127.0.0.1:port (a CM that never answers). */
static int bare_listener(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = sin_of("127.0.0.1", port);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
          listen(fd, 4) == 0);
    return fd;
}

/* One whole CM message from FD (blocking); its type, or -1. */
static int read_msg(int fd, struct cm_msg *m)
{
    uint8_t buf[CM_MSG_MAX];
    size_t n = 0;
    for (;;) {
        int k = cm_msg_parse(buf, n, m);
        if (k)
            return k > 0 ? m->type : -1;
        ssize_t r = read(fd, buf + n, sizeof(buf) - n);
        if (r <= 0)
            return -1;
        n += (size_t)r;
    }
}

static void timeouts(struct rdma_event_channel *sc,
                     struct rdma_event_channel *cc)
{
    /* The REQ unanswered: UNREACHABLE, -ETIMEDOUT, after the timeout. */
    int lfd = bare_listener(PORT + 2);
    struct rdma_cm_id *c = resolved(cc, PORT + 2);
    struct rdma_conn_param cp = {.qp_num = 77};
    double t0 = now_s();
    CHECK(rdma_connect(c, &cp) == 0);
    struct rdma_cm_event *e = next(cc, RDMA_CM_EVENT_UNREACHABLE);
    if (e) {
        CHECK(e->id == c && e->status == -ETIMEDOUT);
        CHECK(now_s() - t0 >= 0.25); /* not before the timeout */
        rdma_ack_cm_event(e);
    }
    CHECK(rdma_destroy_id(c) == 0);
    close(accept(lfd, NULL, NULL)); /* that connection, from the backlog */

    /* A slow accept: the MRA keeps the active side waiting. */
    c = resolved(cc, PORT);
    make_qp(c);
    CHECK(rdma_connect(c, NULL) == 0);
    if ((e = next(sc, RDMA_CM_EVENT_CONNECT_REQUEST))) {
        struct rdma_cm_id *ch = e->id;
        rdma_ack_cm_event(e);
        CHECK(!readable(cc, 900)); /* three timeouts: no event */
        make_qp(ch);
        CHECK(rdma_accept(ch, NULL) == 0);
        if ((e = next(cc, RDMA_CM_EVENT_ESTABLISHED)))
            rdma_ack_cm_event(e);
        if ((e = next(sc, RDMA_CM_EVENT_ESTABLISHED)))
            rdma_ack_cm_event(e);
        CHECK(rdma_disconnect(c) == 0);
        if ((e = next(sc, RDMA_CM_EVENT_DISCONNECTED)))
            rdma_ack_cm_event(e);
        if ((e = next(cc, RDMA_CM_EVENT_DISCONNECTED)))
            rdma_ack_cm_event(e);
        rdma_destroy_qp(ch);
        CHECK(rdma_destroy_id(ch) == 0);
    }
    rdma_destroy_qp(c);
    CHECK(rdma_destroy_id(c) == 0);

    /* A peer CM that answers the REQ with a REP and then goes silent:
     * the DREQ's timeout ends the connection with DISCONNECTED. */
    c = resolved(cc, PORT + 2);
    CHECK(rdma_connect(c, &cp) == 0);
    int fd = accept(lfd, NULL, NULL);
    struct cm_msg m;
    CHECK(fd >= 0 && read_msg(fd, &m) == CM_REQ && m.qpn == 77);
    struct cm_msg rep = {.type = CM_REP, .qpn = 88};
    rep.gid[10] = rep.gid[11] = 0xff;
    rep.gid[12] = 127;
    rep.gid[15] = 1;
    uint8_t out[CM_MSG_MAX];
    size_t n = cm_msg_encode(&rep, out);
    CHECK(write(fd, out, n) == (ssize_t)n);
    if ((e = next(cc, RDMA_CM_EVENT_CONNECT_RESPONSE))) {
        CHECK(e->param.conn.qp_num == 88);
        rdma_ack_cm_event(e);
    }
    CHECK(rdma_establish(c) == 0);
    CHECK(read_msg(fd, &m) == CM_RTU);
    t0 = now_s();
    CHECK(rdma_disconnect(c) == 0);
    CHECK(read_msg(fd, &m) == CM_DREQ);
    if ((e = next(cc, RDMA_CM_EVENT_DISCONNECTED))) {
        CHECK(now_s() - t0 >= 0.25);
        rdma_ack_cm_event(e);
    }
    CHECK(rdma_destroy_id(c) == 0);
    close(fd);
    close(lfd);
}

int main(void)
{
    setenv("MROCE_CM_TIMEOUT_MS", "300", 1);
    setenv("MROCE_IBV_DEVICES", "mroce0=127.0.0.1:5380,mroce1=127.0.0.2:5380",
           1);
    struct rdma_event_channel *sc = rdma_create_event_channel();
    struct rdma_event_channel *cc = rdma_create_event_channel();
    if (!sc || !cc) {
        perror("rdma_create_event_channel");
        return 1;
    }
    int nd = 0;
    struct ibv_context **devs = rdma_get_devices(&nd);
    CHECK(devs && nd == 2);
    CHECK(!readable(cc, 0)); /* nothing queued: quiet */

    struct rdma_cm_id *bad;
    CHECK(rdma_create_id(sc, &bad, NULL, RDMA_PS_UDP) == -1 &&
          errno == EOPNOTSUPP);
    CHECK(rdma_create_id(sc, &bad, NULL, RDMA_PS_TCP) == 0);
    struct sockaddr_in none = sin_of("10.255.255.1", PORT);
    CHECK(rdma_bind_addr(bad, (struct sockaddr *)&none) == -1 &&
          errno == ENODEV);
    /* No device of the destination's family: ADDR_ERROR, -ENODEV. */
    struct sockaddr_in6 d6 = {.sin6_family = AF_INET6,
                              .sin6_port = htons(PORT),
                              .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    CHECK(rdma_resolve_addr(bad, NULL, (struct sockaddr *)&d6, 2000) == 0);
    struct rdma_cm_event *ae = next(sc, RDMA_CM_EVENT_ADDR_ERROR);
    if (ae) {
        CHECK(ae->id == bad && ae->status == -ENODEV);
        rdma_ack_cm_event(ae);
    }
    CHECK(rdma_destroy_id(bad) == 0);

    struct rdma_cm_id *ls;
    struct sockaddr_in la = sin_of("127.0.0.1", PORT);
    CHECK(rdma_create_id(sc, &ls, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_bind_addr(ls, (struct sockaddr *)&la) == 0);
    CHECK(ls->verbs == devs[0]);
    CHECK(rdma_listen(ls, 4) == 0);
    CHECK(ntohs(rdma_get_src_port(ls)) == PORT);

    /* Resolution: the event makes the fd readable, its ack quiet again. */
    struct rdma_cm_id *c;
    struct sockaddr_in src = sin_of("127.0.0.2", 0),
                       dst = sin_of("127.0.0.1", PORT);
    CHECK(rdma_create_id(cc, &c, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_resolve_addr(c, (struct sockaddr *)&src, (struct sockaddr *)&dst,
                            2000) == 0);
    CHECK(readable(cc, 1000));
    struct rdma_cm_event *e = next(cc, RDMA_CM_EVENT_ADDR_RESOLVED);
    if (e) {
        CHECK(e->id == c && e->status == 0);
        rdma_ack_cm_event(e);
    }
    CHECK(!readable(cc, 0));
    CHECK(c->verbs == devs[1]);
    CHECK(rdma_resolve_route(c, 2000) == 0);
    if ((e = next(cc, RDMA_CM_EVENT_ROUTE_RESOLVED)))
        rdma_ack_cm_event(e);

    uint8_t p1[57], p2[197], got_rep[196];
    for (int i = 0; i < 57; i++)
        p1[i] = (uint8_t)(i + 1);
    for (int i = 0; i < 197; i++)
        p2[i] = (uint8_t)(255 - i);
    CHECK(rdma_connect(c, NULL) == -1 && errno == EINVAL); /* no QP */
    make_qp(c);
    struct rdma_conn_param cp = {.private_data = p1,
                                 .private_data_len = 57,
                                 .responder_resources = 1,
                                 .initiator_depth = 1,
                                 .retry_count = 7,
                                 .rnr_retry_count = 7};
    CHECK(rdma_connect(c, &cp) == -1 && errno == EINVAL); /* 57 > 56 */
    cp.private_data_len = 56;
    CHECK(rdma_connect(c, &cp) == 0);

    struct rdma_cm_id *child = NULL;
    if ((e = next(sc, RDMA_CM_EVENT_CONNECT_REQUEST))) {
        child = e->id;
        CHECK(e->listen_id == ls && child != ls);
        CHECK(e->param.conn.private_data_len == 56 &&
              memcmp(e->param.conn.private_data, p1, 56) == 0);
        CHECK(e->param.conn.qp_num == c->qp->qp_num);
        rdma_ack_cm_event(e);
    }
    if (!child)
        return 1;
    CHECK(child->verbs == devs[0]);
    struct sockaddr_in *pa = (struct sockaddr_in *)rdma_get_peer_addr(child);
    CHECK(pa->sin_addr.s_addr == src.sin_addr.s_addr);
    make_qp(child);
    uint8_t *rbuf = calloc(1, 4096), *sbuf = calloc(1, 4096);
    struct ibv_mr *rmr = ibv_reg_mr(child->pd, rbuf, 4096,
                                    IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mr *smr = ibv_reg_mr(c->pd, sbuf, 4096, IBV_ACCESS_LOCAL_WRITE);
    CHECK(rmr && smr);
    struct ibv_sge rs = {.addr = (uintptr_t)rbuf,
                         .length = 4096,
                         .lkey = rmr->lkey};
    struct ibv_recv_wr rw = {.wr_id = 7, .sg_list = &rs, .num_sge = 1}, *brw;
    CHECK(ibv_post_recv(child->qp, &rw, &brw) == 0);
    struct rdma_conn_param ap = {.private_data = p2,
                                 .private_data_len = 197,
                                 .responder_resources = 1,
                                 .initiator_depth = 1};
    CHECK(rdma_accept(child, &ap) == -1 && errno == EINVAL); /* 197 > 196 */
    ap.private_data_len = 196;
    CHECK(rdma_accept(child, &ap) == 0);
    if ((e = next(cc, RDMA_CM_EVENT_ESTABLISHED))) {
        CHECK(e->id == c && e->param.conn.private_data_len == 196);
        memcpy(got_rep, e->param.conn.private_data, 196);
        CHECK(memcmp(got_rep, p2, 196) == 0);
        CHECK(e->param.conn.qp_num == child->qp->qp_num);
        rdma_ack_cm_event(e);
    }
    if ((e = next(sc, RDMA_CM_EVENT_ESTABLISHED))) {
        CHECK(e->id == child);
        rdma_ack_cm_event(e);
    }

    /* A SEND over the connection. */
    for (int i = 0; i < 1000; i++)
        sbuf[i] = (uint8_t)(i * 13);
    struct ibv_sge ss = {.addr = (uintptr_t)sbuf,
                         .length = 1000,
                         .lkey = smr->lkey};
    struct ibv_send_wr sw = {.wr_id = 9,
                             .sg_list = &ss,
                             .num_sge = 1,
                             .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED},
                       *bsw;
    CHECK(ibv_post_send(c->qp, &sw, &bsw) == 0);
    struct ibv_wc wc;
    CHECK(poll_one(child->recv_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
          wc.wr_id == 7 && wc.byte_len == 1000);
    CHECK(memcmp(rbuf, sbuf, 1000) == 0);
    CHECK(poll_one(c->send_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
          wc.wr_id == 9);

    /* Rejected with private data; refused where nobody listens. */
    struct rdma_cm_id *c2 = resolved(cc, PORT);
    make_qp(c2);
    CHECK(rdma_connect(c2, NULL) == 0);
    if ((e = next(sc, RDMA_CM_EVENT_CONNECT_REQUEST))) {
        struct rdma_cm_id *ch2 = e->id;
        rdma_ack_cm_event(e);
        CHECK(rdma_reject(ch2, "no thanks", 9) == 0);
        CHECK(rdma_destroy_id(ch2) == 0);
    }
    if ((e = next(cc, RDMA_CM_EVENT_REJECTED))) {
        CHECK(e->id == c2 && e->status == 28);
        CHECK(e->param.conn.private_data_len == 9 &&
              memcmp(e->param.conn.private_data, "no thanks", 9) == 0);
        rdma_ack_cm_event(e);
    }
    rdma_destroy_qp(c2);
    CHECK(rdma_destroy_id(c2) == 0);
    struct rdma_cm_id *c3 = resolved(cc, PORT + 1);
    make_qp(c3);
    CHECK(rdma_connect(c3, NULL) == 0);
    if ((e = next(cc, RDMA_CM_EVENT_REJECTED))) {
        CHECK(e->id == c3 && e->status == 8);
        rdma_ack_cm_event(e);
    }
    rdma_destroy_qp(c3);
    CHECK(rdma_destroy_id(c3) == 0);

    /* The active side gone before the accept: CONNECT_ERROR there. */
    struct rdma_cm_id *c4 = resolved(cc, PORT);
    make_qp(c4);
    CHECK(rdma_connect(c4, NULL) == 0);
    if ((e = next(sc, RDMA_CM_EVENT_CONNECT_REQUEST))) {
        struct rdma_cm_id *ch4 = e->id;
        rdma_ack_cm_event(e);
        rdma_destroy_qp(c4);
        CHECK(rdma_destroy_id(c4) == 0);
        make_qp(ch4);
        CHECK(rdma_accept(ch4, NULL) == 0);
        if ((e = next(sc, RDMA_CM_EVENT_CONNECT_ERROR))) {
            CHECK(e->id == ch4 && e->status == -ECONNRESET);
            rdma_ack_cm_event(e);
        }
        rdma_destroy_qp(ch4);
        CHECK(rdma_destroy_id(ch4) == 0);
    }

    timeouts(sc, cc);

    /* Disconnect: both sides told, the posted receive flushed. */
    CHECK(ibv_post_recv(child->qp, &rw, &brw) == 0);
    CHECK(rdma_disconnect(c) == 0);
    if ((e = next(sc, RDMA_CM_EVENT_DISCONNECTED))) {
        CHECK(e->id == child);
        rdma_ack_cm_event(e);
    }
    if ((e = next(cc, RDMA_CM_EVENT_DISCONNECTED))) {
        CHECK(e->id == c);
        rdma_ack_cm_event(e);
    }
    CHECK(rdma_disconnect(child) == 0);
    CHECK(poll_one(child->recv_cq, &wc) == 1 &&
          wc.status == IBV_WC_WR_FLUSH_ERR);

    /* Non-blocking channel, nothing queued: EAGAIN. */
    CHECK(fcntl(cc->fd, F_SETFL, fcntl(cc->fd, F_GETFL) | O_NONBLOCK) == 0);
    CHECK(rdma_get_cm_event(cc, &e) == -1 && errno == EAGAIN);

    ibv_dereg_mr(rmr);
    ibv_dereg_mr(smr);
    free(rbuf);
    free(sbuf);
    rdma_destroy_qp(child);
    rdma_destroy_qp(c);
    CHECK(rdma_destroy_id(child) == 0);
    CHECK(rdma_destroy_id(c) == 0);
    CHECK(rdma_destroy_id(ls) == 0);
    rdma_free_devices(devs);
    rdma_destroy_event_channel(sc);
    rdma_destroy_event_channel(cc);
    if (failures) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
