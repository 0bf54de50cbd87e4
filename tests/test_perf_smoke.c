/*
 * test_perf_smoke.c - runs the mroce-perf tool the way a user would, so CI
 * exercises it: a server and a client process on 127.0.0.1 for every test
 * type, briefly (small -n), with --verify, once with --fault loss and
 * reordering, once bidirectional, once with a progress thread, once with
 * --json (whose file must say "status": "ok"), and once against a server
 * that is not there (must fail, quickly).
 *
 * The binary comes from MROCE_PERF_BIN (set by CMake to the built target);
 * argv[1] overrides it.  Each run starts the server, waits for its "Waiting
 * for client" line (so the client never races the server's socket), then
 * runs the client; both must exit 0 within the deadline and the client must
 * print perftest's table header; with --x-corrupt (one byte spoiled at the
 * source) both must exit 1 instead.  Every child is killed on any failure, and
 * children die with the test (PR_SET_PDEATHSIG) and carry --timeout.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#ifndef MROCE_PERF_BIN
#define MROCE_PERF_BIN "build/tools/mroce-perf"
#endif

#define MAX_ARGS 40
#define OUT_MAX 65536

static const char *g_bin = MROCE_PERF_BIN;
static pid_t g_kids[2] = {-1, -1};
static unsigned g_port;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void kill_kids(void)
{
    for (int i = 0; i < 2; i++)
        if (g_kids[i] > 0) {
            kill(g_kids[i], SIGKILL);
            waitpid(g_kids[i], NULL, 0);
            g_kids[i] = -1;
        }
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "test_perf_smoke: timed out\n";
    for (int i = 0; i < 2; i++)
        if (g_kids[i] > 0)
            kill(g_kids[i], SIGKILL);
    ssize_t r = write(2, msg, sizeof(msg) - 1);
    (void)r;
    _exit(1);
}

/* A child running mroce-perf with its stdout on a pipe we read. */
struct proc {
    pid_t pid;
    int out; /* read end of its stdout */
    char buf[OUT_MAX];
    size_t len;
    int status; /* exit status, -1 = killed / not exited */
};

static int spawn(struct proc *p, char *const argv[])
{
    int fd[2];
    memset(p, 0, sizeof(*p));
    p->status = -1;
    if (pipe(fd) < 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execv(argv[0], argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fd[1]);
    p->pid = pid;
    p->out = fd[0];
    return 0;
}

/* Reads what is available within timeout_ms; 0 at EOF. */
static int drain(struct proc *p, int timeout_ms)
{
    struct pollfd pf = {.fd = p->out, .events = POLLIN};
    if (p->out < 0 || poll(&pf, 1, timeout_ms) <= 0)
        return p->out >= 0;
    char tmp[4096];
    ssize_t n = read(p->out, tmp, sizeof(tmp));
    if (n <= 0) {
        close(p->out);
        p->out = -1;
        return 0;
    }
    size_t room = OUT_MAX - 1 - p->len;
    size_t k = (size_t)n < room ? (size_t)n : room;
    memcpy(p->buf + p->len, tmp, k);
    p->len += k;
    p->buf[p->len] = 0;
    return 1;
}

/* Waits for the process to exit, collecting its output; kills it after
 * deadline (absolute ms).  Returns its exit status or -1. */
static int finish(struct proc *p, uint64_t deadline)
{
    while (now_ms() < deadline) {
        drain(p, 50);
        int st;
        pid_t r = waitpid(p->pid, &st, WNOHANG);
        if (r == p->pid) {
            while (drain(p, 0) > 0)
                ;
            if (p->out >= 0)
                close(p->out);
            p->out = -1;
            p->pid = -1;
            p->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
            return p->status;
        }
    }
    kill(p->pid, SIGKILL);
    waitpid(p->pid, NULL, 0);
    if (p->out >= 0)
        close(p->out);
    p->out = -1;
    p->pid = -1;
    return -1;
}

static int split(char *line, char **argv, int max)
{
    int n = 0;
    for (char *t = strtok(line, " "); t && n < max - 1; t = strtok(NULL, " "))
        argv[n++] = t;
    argv[n] = NULL;
    return n;
}

/* What a session must end with. */
enum want { WANT_OK, WANT_MISMATCH };

/* One mroce-perf session: "server options" | "client options" (the test
 * name first in both; the client's host and the ports are added here).
 * WANT_OK: both exit 0 with a table; WANT_MISMATCH: both exit 1 and the
 * client reports the mismatch the server found.  Returns the client's
 * output (static buffer). */
static const char *session(const char *srv_args, const char *cli_args,
                           enum want want)
{
    static struct proc S, C;
    char sline[512], cline[512], port[16], lport[16];
    char *sargv[MAX_ARGS], *cargv[MAX_ARGS];
    g_port += 2;
    snprintf(port, sizeof(port), "%u", g_port);
    snprintf(lport, sizeof(lport), "%u", g_port + 1);
    snprintf(sline, sizeof(sline), "%s %s -p %s --timeout 20", g_bin, srv_args,
             port);
    int n = split(sline, sargv, MAX_ARGS);
    (void)n;
    /* The client: test name, then the host, then the rest. */
    char ctmp[512];
    snprintf(ctmp, sizeof(ctmp), "%s", cli_args);
    char *test = strtok(ctmp, " ");
    char *rest = strtok(NULL, "");
    int v6 = rest && strstr(rest, "-6") != NULL;
    snprintf(cline, sizeof(cline),
             "%s %s %s -p %s --local-port %s "
             "--timeout 20 %s",
             g_bin, test ? test : "", v6 ? "::1" : "127.0.0.1", port, lport,
             rest ? rest : "");
    split(cline, cargv, MAX_ARGS);

    printf("  %s  |  %s\n", srv_args, cli_args);
    uint64_t t0 = now_ms();
    if (!CHECK(spawn(&S, sargv) == 0))
        return "";
    g_kids[0] = S.pid;
    /* Wait for the server to listen. */
    while (!strstr(S.buf, "Waiting for client") && now_ms() - t0 < 10000)
        if (!drain(&S, 100))
            break;
    if (!CHECK_MSG(strstr(S.buf, "Waiting for client") != NULL,
                   "server did not start: %s", S.buf)) {
        kill_kids();
        return "";
    }
    if (!CHECK(spawn(&C, cargv) == 0)) {
        kill_kids();
        return "";
    }
    g_kids[1] = C.pid;
    uint64_t deadline = now_ms() + 60000;
    int cst = finish(&C, deadline);
    g_kids[1] = -1;
    int sst = finish(&S, now_ms() + 5000);
    g_kids[0] = -1;
    if (want == WANT_OK) {
        CHECK_MSG(cst == 0, "client exit %d:\n%s", cst, C.buf);
        CHECK_MSG(sst == 0, "server exit %d:\n%s", sst, S.buf);
        CHECK_MSG(strstr(C.buf, "#bytes") != NULL, "no table:\n%s", C.buf);
        CHECK_MSG(strstr(C.buf, "mismatch") == NULL ||
                      strstr(C.buf, " 0 mismatches here, 0 at the peer"),
                  "mismatch reported:\n%s", C.buf);
    } else {
        CHECK_MSG(cst == 1, "client exit %d, want 1:\n%s", cst, C.buf);
        CHECK_MSG(sst == 1, "server exit %d, want 1:\n%s", sst, S.buf);
        CHECK_MSG(strstr(C.buf, " 0 at the peer") == NULL,
                  "the client does not report the mismatch:\n%s", C.buf);
    }
    printf("    client %d, server %d, %" PRIu64 " ms\n", cst, sst,
           now_ms() - t0);
    return C.buf;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1)
        g_bin = argv[1];
    if (access(g_bin, X_OK) != 0) {
        fprintf(stderr, "test_perf_smoke: %s not found\n", g_bin);
        return 1;
    }
    signal(SIGALRM, on_alarm);
    alarm(240);
    atexit(kill_kids);
    /* Below 32768, where the kernel hands out ephemeral ports (to every
     * device and agent of other tests that binds port 0) and, above 49152,
     * libmroce picks its source (entropy) ports.  A run uses up to ~160
     * ports above its base. */
    g_port = 20000 + (unsigned)(getpid() % 250) * 50;

    /* Every test type, verified. */
    session("write_bw", "write_bw -n 300 --verify", WANT_OK);
    session("send_bw", "send_bw -n 300 -q 2 --verify", WANT_OK);
    session("read_bw", "read_bw -n 200 -s 16384 --verify", WANT_OK);
    session("write_lat", "write_lat -n 200 -s 5000 --verify", WANT_OK);
    session("send_lat", "send_lat -n 200 --verify", WANT_OK);
    session("read_lat", "read_lat -n 200 -s 100 --verify", WANT_OK);
    session("atomic_lat", "atomic_lat -n 200 --verify", WANT_OK);
    session("atomic_lat", "atomic_lat -n 100 -A CMP_AND_SWAP --verify",
            WANT_OK);
    /* Loss and reordering on both sides; the data must still verify and the
     * client must have retransmitted. */
    const char *out = session(
        "write_bw --fault tx:drop=0.01,reorder=0.01",
        "write_bw -n 300 --verify --fault tx:drop=0.01,dup=0.01,reorder=0.01",
        WANT_OK);
    unsigned long long retx = 0;
    const char *r = strstr(out, "retransmissions : ");
    CHECK(r && sscanf(r, "retransmissions : %llu", &retx) == 1 && retx > 0);
    session("send_bw --fault drop=0.02", "send_bw -n 200 -b --verify", WANT_OK);
    session("write_bw --progress thread",
            "write_bw -n 200 -b --verify --progress thread -q 2", WANT_OK);
    /* IPv6 loopback. */
    session("send_bw -6", "send_bw -n 100 -6 --verify", WANT_OK);
    /* -D (duration) and a short sweep. */
    session("write_bw", "write_bw -D 0.3 --verify", WANT_OK);
    session("read_lat", "read_lat -a -n 3 --verify", WANT_OK);
    /* --verify must catch a spoiled message (both sides exit 1). */
    session("write_bw", "write_bw -n 100 --verify --x-corrupt", WANT_MISMATCH);
    session("send_bw", "send_bw -n 100 --verify --x-corrupt -q 2",
            WANT_MISMATCH);
    /* JSON. */
    char json[64];
    snprintf(json, sizeof(json), "/tmp/mroce_perf_smoke_%d.json",
             (int)getpid());
    char cargs[160];
    snprintf(cargs, sizeof(cargs), "write_lat -n 100 --verify --json %s", json);
    session("write_lat", cargs, WANT_OK);
    FILE *f = fopen(json, "r");
    if (CHECK(f != NULL)) {
        char buf[8192];
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = 0;
        fclose(f);
        CHECK(strstr(buf, "\"status\": \"ok\"") != NULL);
        CHECK(strstr(buf, "\"t_typical_us\"") != NULL);
        unlink(json);
    }
    /* Nobody listening: the client fails, within its timeout. */
    {
        struct proc C;
        char line[256], *cargv[MAX_ARGS];
        snprintf(line, sizeof(line),
                 "%s write_bw 127.0.0.1 -p %u --local-port %u"
                 " --timeout 2",
                 g_bin, g_port + 100, g_port + 101);
        split(line, cargv, MAX_ARGS);
        uint64_t t0 = now_ms();
        if (CHECK(spawn(&C, cargv) == 0)) {
            g_kids[1] = C.pid;
            int st = finish(&C, now_ms() + 10000);
            g_kids[1] = -1;
            CHECK(st == 1);
            CHECK(now_ms() - t0 < 5000);
            printf("  no server: exit %d after %" PRIu64 " ms\n", st,
                   now_ms() - t0);
        }
    }
    /* Usage errors exit 2. */
    {
        struct proc C;
        char line[256], *cargv[MAX_ARGS];
        snprintf(line, sizeof(line), "%s no_such_test", g_bin);
        split(line, cargv, MAX_ARGS);
        if (CHECK(spawn(&C, cargv) == 0)) {
            g_kids[1] = C.pid;
            CHECK_EQ_INT(finish(&C, now_ms() + 5000), 2);
            g_kids[1] = -1;
        }
    }
    return TESTUTIL_SUMMARY("test_perf_smoke");
}
