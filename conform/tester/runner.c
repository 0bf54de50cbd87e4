/*
 * runner.c - the case registry and the runner.  Cases register themselves
 * (CT_CASE's constructor) into one table, which the runner sorts by file and
 * line so the order is stable.  Each selected case runs on fresh state: the
 * agent is RESET (every IUT QP and region destroyed), the tester's sockets
 * are drained, and the case gets its own context, random stream and
 * connections.  ct_fail()/ct_skip() jump back here with the reason.  Results
 * go out three ways: TAP on a stream (one line per case, reasons as
 * comments), a JUnit XML file (one testsuite per spec section), and a
 * summary per section (the prefix of the first requirement a case cites).
 */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ct_int.h"

#define CT_MAX_CASES 1024

static const struct ct_case *registry[CT_MAX_CASES];
static int nregistry;

void ct_register(const struct ct_case *c)
{
    if (nregistry < CT_MAX_CASES)
        registry[nregistry++] = c;
}

static int case_cmp(const void *a, const void *b)
{
    const struct ct_case *x = *(const struct ct_case *const *)a;
    const struct ct_case *y = *(const struct ct_case *const *)b;
    int r = strcmp(x->file, y->file);
    return r ? r : x->line - y->line;
}

const struct ct_case *const *ct_cases(int *n)
{
    static int sorted;
    if (!sorted) {
        qsort(registry, (size_t)nregistry, sizeof(registry[0]), case_cmp);
        sorted = 1;
    }
    *n = nregistry;
    return registry;
}

/* ---- helpers for cases ---- */

uint64_t ct_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int ct_ms(const struct ct *t, int ms)
{
    return (int)(ms * t->run->slow);
}

int ct_atomic_be(const struct ct *t)
{
    return t->run->atomic_be;
}

uint64_t ct_rand(struct ct *t)
{
    /* splitmix64 */
    uint64_t z = (t->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void ct_pattern(uint8_t *buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(seed * 31u + i * 7u + (i >> 8) + 1u);
}

void ct_log(struct ct *t, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (t->run->verbose)
        fprintf(stderr, "  %s\n", line);
    /* keep the tail: drop the oldest half when full */
    if (t->loglen + strlen(line) + 2 > sizeof(t->log)) {
        size_t keep = t->loglen / 2;
        memmove(t->log, t->log + t->loglen - keep, keep);
        t->loglen = keep;
    }
    t->loglen += (size_t)snprintf(t->log + t->loglen,
                                  sizeof(t->log) - t->loglen, "%s\n", line);
}

__attribute__((noreturn)) static void finish(struct ct *t, enum ct_result r,
                                             const char *fmt, va_list ap)
{
    t->result = r;
    vsnprintf(t->msg, sizeof(t->msg), fmt, ap);
    longjmp(t->jb, 1);
}

void ct_fail(struct ct *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    finish(t, CT_FAIL, fmt, ap);
}

void ct_skip(struct ct *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    finish(t, CT_SKIP, fmt, ap);
}

void ct_check_eq(struct ct *t, const char *what, uint64_t expected,
                 uint64_t got)
{
    if (expected != got)
        ct_fail(t, "%s: expected %llu (0x%llx), got %llu (0x%llx)", what,
                (unsigned long long)expected, (unsigned long long)expected,
                (unsigned long long)got, (unsigned long long)got);
}

/* ---- running ---- */

struct ct_outcome {
    const struct ct_case *cs;
    enum ct_result r;
    char *msg;
    double secs;
    char section[8];
};

/* 1 if NAME matches one of FILTER's comma-separated globs. */
static int matches(const char *filter, const char *name)
{
    char glob[128];
    const char *p = filter;

    while (*p) {
        size_t n = strcspn(p, ",");
        if (n && n < sizeof(glob)) {
            memcpy(glob, p, n);
            glob[n] = 0;
            if (fnmatch(glob, name, 0) == 0)
                return 1;
        }
        p += n;
        p += strspn(p, ",");
    }
    return 0;
}

static int selected(const struct ct_case *c, const char *filter)
{
    char req[32];
    const char *p = c->reqs;

    if (!filter || matches(filter, c->id))
        return 1;
    while (*p) {
        size_t n = strcspn(p, " ");
        if (n && n < sizeof(req)) {
            memcpy(req, p, n);
            req[n] = 0;
            if (matches(filter, req))
                return 1;
        }
        p += n;
        p += strspn(p, " ");
    }
    return 0;
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s)
        h = (h ^ (uint8_t)*s++) * 1099511628211ull;
    return h;
}

static void run_one(struct ct_run *run, const struct ct_case *cs,
                    struct ct_outcome *o)
{
    struct ct *t = calloc(1, sizeof(*t));
    volatile uint64_t t0 = ct_now_ns();

    if (!t) {
        o->r = CT_FAIL;
        o->msg = strdup("out of memory");
        return;
    }
    t->run = run;
    t->cs = cs;
    t->rng = run->seed ^ hash_str(cs->id);
    t->result = CT_PASS;
    if (run->verbose)
        fprintf(stderr, "--- %s (%s)\n", cs->id, cs->reqs);
    if (setjmp(t->jb) == 0) {
        ct_agent(t, "RESET");
        ct_net_drain(&run->net);
        cs->fn(t);
    }
    /* Leave nothing behind for the next case. */
    if (run->ctl.fd >= 0 && ct_ctl_cmd(&run->ctl, "RESET") == 0 &&
        strncmp(run->ctl.line, "OK", 2) != 0 && t->result == CT_PASS) {
        t->result = CT_FAIL;
        snprintf(t->msg, sizeof(t->msg), "agent: RESET answered \"%.200s\"",
                 run->ctl.line);
    }
    o->r = t->result;
    o->msg = strdup(t->result == CT_PASS ? "" : t->msg);
    o->secs = (double)(ct_now_ns() - t0) / 1e9;
    if (t->result == CT_FAIL && !run->verbose && t->loglen)
        fprintf(stderr, "--- %s failed; recent tester log:\n%s", cs->id,
                t->log);
    for (int i = 0; i < t->nconns; i++)
        free(t->conns[i]);
    free(t);
}

static void xml_esc(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\n')
                fputc(*s, f);
        }
    }
}

static const char *const section_order[] = {"WIRE", "REL",  "LOSS", "PATH",
                                            "CC",   "CONN", "SEM",  "SEC"};
#define NSECT (sizeof(section_order) / sizeof(section_order[0]))

static int section_index(const char *s)
{
    for (size_t i = 0; i < NSECT; i++)
        if (strcmp(s, section_order[i]) == 0)
            return (int)i;
    return (int)NSECT;
}

static void write_junit(const char *path, struct ct_outcome *o, int n)
{
    FILE *f = fopen(path, "w");
    int tot[3] = {0};

    if (!f) {
        perror(path);
        return;
    }
    for (int i = 0; i < n; i++)
        tot[o[i].r]++;
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<testsuites name=\"mroce-conform\" tests=\"%d\" "
            "failures=\"%d\" skipped=\"%d\">\n",
            n, tot[CT_FAIL], tot[CT_SKIP]);
    for (size_t s = 0; s <= NSECT; s++) {
        int cnt[3] = {0}, any = 0;
        double secs = 0;
        for (int i = 0; i < n; i++)
            if (section_index(o[i].section) == (int)s) {
                cnt[o[i].r]++;
                secs += o[i].secs;
                any = 1;
            }
        if (!any)
            continue;
        fprintf(f,
                "  <testsuite name=\"%s\" tests=\"%d\" failures=\"%d\" "
                "skipped=\"%d\" errors=\"0\" time=\"%.3f\">\n",
                s < NSECT ? section_order[s] : "OTHER",
                cnt[0] + cnt[1] + cnt[2], cnt[CT_FAIL], cnt[CT_SKIP], secs);
        for (int i = 0; i < n; i++) {
            if (section_index(o[i].section) != (int)s)
                continue;
            fprintf(f,
                    "    <testcase classname=\"mroce-conform.%s\" "
                    "name=\"%s\" time=\"%.3f\">\n",
                    o[i].section, o[i].cs->id, o[i].secs);
            fputs("      <properties><property name=\"requirements\" "
                  "value=\"",
                  f);
            xml_esc(f, o[i].cs->reqs);
            fputs("\"/></properties>\n", f);
            if (o[i].r == CT_FAIL) {
                fputs("      <failure message=\"", f);
                xml_esc(f, o[i].msg);
                fputs("\">", f);
                xml_esc(f, o[i].cs->desc);
                fputs("</failure>\n", f);
            } else if (o[i].r == CT_SKIP) {
                fputs("      <skipped message=\"", f);
                xml_esc(f, o[i].msg);
                fputs("\"/>\n", f);
            }
            fputs("    </testcase>\n", f);
        }
        fputs("  </testsuite>\n", f);
    }
    fputs("</testsuites>\n", f);
    fclose(f);
}

static void write_summary(FILE *f, struct ct_outcome *o, int n)
{
    int tot[3] = {0};

    fprintf(f, "\nmroce-conform summary by spec section:\n");
    fprintf(f, "  %-8s %6s %6s %6s\n", "section", "pass", "fail", "skip");
    for (size_t s = 0; s <= NSECT; s++) {
        int cnt[3] = {0}, any = 0;
        for (int i = 0; i < n; i++)
            if (section_index(o[i].section) == (int)s) {
                cnt[o[i].r]++;
                any = 1;
            }
        if (any)
            fprintf(f, "  %-8s %6d %6d %6d\n",
                    s < NSECT ? section_order[s] : "OTHER", cnt[CT_PASS],
                    cnt[CT_FAIL], cnt[CT_SKIP]);
        for (int k = 0; k < 3; k++)
            tot[k] += cnt[k];
    }
    fprintf(f, "  %-8s %6d %6d %6d\n", "total", tot[CT_PASS], tot[CT_FAIL],
            tot[CT_SKIP]);
    for (int i = 0; i < n; i++)
        if (o[i].r == CT_FAIL)
            fprintf(f, "  FAIL %s (%s): %s\n", o[i].cs->id, o[i].cs->reqs,
                    o[i].msg);
}

int ct_run_all(struct ct_run *run, const char *filter, FILE *tap,
               const char *junit_path, FILE *sum)
{
    int n, nsel = 0, fails = 0;
    const struct ct_case *const *cases = ct_cases(&n);
    struct ct_outcome *o = calloc((size_t)(n ? n : 1), sizeof(*o));

    if (!o)
        return 1;
    for (int i = 0; i < n; i++)
        if (selected(cases[i], filter))
            o[nsel++].cs = cases[i];
    if (tap) {
        fprintf(tap, "TAP version 13\n1..%d\n", nsel);
        fprintf(tap, "# mroce-conform against %s, seed %llu\n", run->impl,
                (unsigned long long)run->seed);
        fflush(tap);
    }
    for (int i = 0; i < nsel; i++) {
        size_t sl = strcspn(o[i].cs->reqs, "-");
        snprintf(o[i].section, sizeof(o[i].section), "%.*s",
                 (int)(sl < 7 ? sl : 7), o[i].cs->reqs);
        run_one(run, o[i].cs, &o[i]);
        if (o[i].r == CT_FAIL)
            fails++;
        if (tap) {
            if (o[i].r == CT_SKIP)
                fprintf(tap, "ok %d - %s # SKIP %s\n", i + 1, o[i].cs->id,
                        o[i].msg);
            else
                fprintf(tap, "%sok %d - %s\n", o[i].r == CT_FAIL ? "not " : "",
                        i + 1, o[i].cs->id);
            if (o[i].r == CT_FAIL)
                fprintf(tap, "  # %s\n  # requirements: %s\n  # case: %s\n",
                        o[i].msg, o[i].cs->reqs, o[i].cs->desc);
            fflush(tap);
        }
    }
    if (junit_path)
        write_junit(junit_path, o, nsel);
    if (sum)
        write_summary(sum, o, nsel);
    for (int i = 0; i < nsel; i++)
        free(o[i].msg);
    free(o);
    return fails;
}
