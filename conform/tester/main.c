/*
 * main.c - mroce-conform's command line.  Connects to the test agent
 * (--agent HOST:PORT), greets it (HELLO, which also names the IUT's UDP
 * port when --udp is not given), opens the tester's UDP sockets and runs
 * the selected cases.  Exit status: 0 when no case failed, 1 when one did,
 * 2 for usage or set-up errors (agent unreachable, sockets).
 *
 * --spawn AGENT starts the agent itself (for CTest): it finds a free TCP
 * and a free UDP port on 127.0.0.1, runs "AGENT --control 127.0.0.1:P
 * --udp 127.0.0.1:Q", waits for its control port, and stops that child
 * (by its pid) when the run ends.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ct_int.h"

static void usage(FILE *f)
{
    fprintf(
        f, "usage: mroce-conform --agent HOST:PORT | --spawn AGENT [--udp "
           "HOST:PORT] "
           "[--local ADDR]\n"
           "                     [--tap] [--junit FILE] [--filter GLOB[,GLOB]] "
           "[--list]\n"
           "                     [--seed N] [--slow X] [-v]\n"
           "  --agent HOST:PORT  the test agent's control address (TCP)\n"
           "  --udp HOST:PORT    the IUT's MetaRoCE address (default: the "
           "agent's host\n"
           "                     and the udp_port its HELLO reports)\n"
           "  --local ADDR       local IP for the tester's UDP sockets\n"
           "  --tap              TAP on stdout (the default output)\n"
           "  --junit FILE       also write JUnit XML to FILE\n"
           "  --filter GLOB[,GLOB...]  run cases whose name or any "
           "cited requirement\n"
           "                     matches one of the globs\n"
           "  --list             list cases (name, requirements, "
           "description) and exit\n"
           "  --spawn \"AGENT [ARGS]\"  start the agent on free loopback "
           "ports (AGENT\n"
           "                     --control 127.0.0.1:P --udp 127.0.0.1:Q "
           "ARGS) and stop it\n"
           "  --seed N           seed for tokens, PSNs and patterns\n"
           "  --slow X           multiply every wait by X (default 1)\n"
           "  -v                 log every packet and agent command\n");
}

/* A port that is free now on 127.0.0.1 for the socket type, or 0. */
static unsigned free_port(int type)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, type, 0);
    unsigned p = 0;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0)
        return 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        p = ntohs(a.sin_port);
    close(fd);
    return p;
}

static pid_t spawned;

/* Starts the agent binary; writes its control address to agent (cap). */
static int spawn_agent(const char *bin, char *agent, size_t cap, double slow)
{
    unsigned cp = free_port(SOCK_STREAM), up = free_port(SOCK_DGRAM);
    char ctl[64], udp[64];

    if (!cp || !up)
        return -1;
    snprintf(ctl, sizeof(ctl), "127.0.0.1:%u", cp);
    snprintf(udp, sizeof(udp), "127.0.0.1:%u", up);
    spawned = fork();
    if (spawned < 0)
        return -1;
    if (spawned == 0) {
        /* "BIN [ARG...]": extra words go after --control and --udp. */
        char *argv[32], *copy = strdup(bin), *save = NULL, *w;
        int argc = 0;

        if (!copy)
            _exit(127);
        w = strtok_r(copy, " ", &save);
        argv[argc++] = w;
        argv[argc++] = "--control";
        argv[argc++] = ctl;
        argv[argc++] = "--udp";
        argv[argc++] = udp;
        while (argc < 31 && (w = strtok_r(NULL, " ", &save)) != NULL)
            argv[argc++] = w;
        argv[argc] = NULL;
        /* stdout is the TAP stream: the agent's own output goes to stderr */
        dup2(2, 1);
        execv(argv[0], argv);
        fprintf(stderr, "mroce-conform: exec %s: %s\n", argv[0],
                strerror(errno));
        _exit(127);
    }
    snprintf(agent, cap, "%s", ctl);
    /* Wait for the control port (up to 10 s). */
    for (int i = 0; i < (int)(1000 * slow); i++) {
        struct ct_ctl probe;
        int st;
        if (waitpid(spawned, &st, WNOHANG) == spawned) {
            spawned = 0;
            return -1;
        }
        if (ct_ctl_open(&probe, ctl, 1000) == 0) {
            ct_ctl_close(&probe);
            return 0;
        }
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    return -1;
}

static void stop_agent(void)
{
    int st;

    if (spawned <= 0)
        return;
    kill(spawned, SIGTERM);
    for (int i = 0; i < 200; i++) {
        if (waitpid(spawned, &st, WNOHANG) == spawned) {
            spawned = 0;
            return;
        }
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    kill(spawned, SIGKILL);
    waitpid(spawned, &st, 0);
    spawned = 0;
}

static void list_cases(const char *filter)
{
    int n;
    const struct ct_case *const *c = ct_cases(&n);

    for (int i = 0; i < n; i++) {
        (void)filter;
        printf("%s\t%s\t%s\n", c[i]->id, c[i]->reqs, c[i]->desc);
    }
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"agent", required_argument, NULL, 'a'},
        {"udp", required_argument, NULL, 'u'},
        {"local", required_argument, NULL, 'l'},
        {"tap", no_argument, NULL, 't'},
        {"junit", required_argument, NULL, 'j'},
        {"filter", required_argument, NULL, 'f'},
        {"list", no_argument, NULL, 'L'},
        {"seed", required_argument, NULL, 's'},
        {"slow", required_argument, NULL, 'S'},
        {"verbose", no_argument, NULL, 'v'},
        {"spawn", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static struct ct_run run;
    const char *agent = NULL, *udp = NULL, *local = NULL, *junit = NULL;
    const char *filter = NULL, *spawn = NULL;
    char host[256], err[256], uhost[256], spawned_ctl[64];
    unsigned uport, aport;
    int opt, list = 0, fails;

    run.slow = 1.0;
    run.seed = (uint64_t)time(NULL);
    while ((opt = getopt_long(argc, argv, "v", opts, NULL)) != -1) {
        switch (opt) {
        case 'a':
            agent = optarg;
            break;
        case 'u':
            udp = optarg;
            break;
        case 'l':
            local = optarg;
            break;
        case 't':
            break;
        case 'j':
            junit = optarg;
            break;
        case 'f':
            filter = optarg;
            break;
        case 'L':
            list = 1;
            break;
        case 's':
            run.seed = strtoull(optarg, NULL, 0);
            break;
        case 'S':
            run.slow = atof(optarg);
            break;
        case 'v':
            run.verbose = 1;
            break;
        case 'P':
            spawn = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (run.slow <= 0)
        run.slow = 1.0;
    if (list) {
        list_cases(filter);
        return 0;
    }
    if (spawn) {
        if (spawn_agent(spawn, spawned_ctl, sizeof(spawned_ctl), run.slow) <
            0) {
            fprintf(stderr, "mroce-conform: could not start %s\n", spawn);
            stop_agent();
            return 2;
        }
        atexit(stop_agent);
        agent = spawned_ctl;
    }
    if (!agent || optind != argc) {
        usage(stderr);
        return 2;
    }
    if (ct_split_hostport(agent, host, sizeof(host), &aport) < 0) {
        fprintf(stderr, "mroce-conform: bad --agent %s\n", agent);
        return 2;
    }
    run.ctl.verbose = run.verbose;
    if (ct_ctl_open(&run.ctl, agent, (int)(5000 * run.slow)) < 0) {
        fprintf(stderr, "mroce-conform: cannot reach the agent at %s\n", agent);
        return 2;
    }
    if (ct_ctl_cmd(&run.ctl, "HELLO") < 0 ||
        strncmp(run.ctl.line, "OK", 2) != 0) {
        fprintf(stderr, "mroce-conform: HELLO: %s\n", run.ctl.line);
        return 2;
    }
    if (ct_kv_str(run.ctl.line, "impl", run.impl, sizeof(run.impl)) < 0)
        snprintf(run.impl, sizeof(run.impl), "?");
    {
        char o[8];
        run.atomic_be = -1; /* an older agent: cases infer it */
        if (ct_kv_str(run.ctl.line, "atomic_order", o, sizeof(o)) == 0) {
            if (strcmp(o, "le") != 0 && strcmp(o, "be") != 0) {
                fprintf(stderr,
                        "mroce-conform: HELLO: atomic_order=%s is "
                        "neither le nor be (AGENT-18)\n",
                        o);
                return 2;
            }
            run.atomic_be = o[0] == 'b';
        }
    }
    if (udp) {
        if (ct_split_hostport(udp, uhost, sizeof(uhost), &uport) < 0) {
            fprintf(stderr, "mroce-conform: bad --udp %s\n", udp);
            return 2;
        }
    } else {
        char p[16];
        if (ct_kv_str(run.ctl.line, "udp_port", p, sizeof(p)) < 0) {
            fprintf(stderr, "mroce-conform: HELLO gave no udp_port; use "
                            "--udp\n");
            return 2;
        }
        snprintf(uhost, sizeof(uhost), "%s", host);
        uport = (unsigned)strtoul(p, NULL, 0); /* decimal or 0x (AGENT-19) */
    }
    if (ct_net_open(&run.net, local, uhost, uport, 8, err, sizeof(err)) < 0) {
        fprintf(stderr, "mroce-conform: %s\n", err);
        return 2;
    }
    run.next_qpn = 0x100 + (uint32_t)(run.seed % 0x10000);
    fails = ct_run_all(&run, filter, stdout, junit, stderr);
    ct_ctl_close(&run.ctl);
    ct_net_close(&run.net);
    return fails ? 1 : 0;
}
