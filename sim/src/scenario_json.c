/*
 * scenario_json.c - scenarios as JSON, the second format scenario_load()
 * accepts (a file whose first non-blank character is '{').
 *
 * One JSON object whose members are the plain format's keys; each member
 * becomes one scenario_set() call, so both formats mean the same thing and
 * share their defaults and checks:
 *   - a string or a number is the value as written in the plain format
 *     ("buffer": "1M", "hosts": 128, "delay": "1us"); true/false are 1/0;
 *   - an array repeats the key once per element ("workload": [...],
 *     "fault": [...]); for "transports" the elements are the list;
 *   - a workload may be an object: {"kind": "alltoall", "bytes": "1M",
 *     "active": 8} is "alltoall bytes=1M active=8";
 *   - a fault may be an object: {"time": "5ms", "kind": "down", "a":
 *     "leaf0", "b": "spine0", "value": 0.01, "detect": "1ms"}.
 * No nesting beyond that.  Errors name the file and the byte offset.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

struct jp {
    const char *s;    /* the whole text */
    size_t i, n;      /* cursor, length */
    const char *path; /* for messages */
};

static void ws(struct jp *p)
{
    while (p->i < p->n && isspace((unsigned char)p->s[p->i]))
        p->i++;
}

static int fail(struct jp *p, const char *what)
{
    fprintf(stderr, "%s: JSON offset %zu: %s\n", p->path, p->i, what);
    return -1;
}

static int expect(struct jp *p, char c)
{
    ws(p);
    if (p->i >= p->n || p->s[p->i] != c) {
        char m[32];
        snprintf(m, sizeof(m), "expected '%c'", c);
        return fail(p, m);
    }
    p->i++;
    return 0;
}

/* A string (escapes \" \\ \/ \n \t only) into out[cap]. */
static int jstring(struct jp *p, char *out, size_t cap)
{
    size_t k = 0;
    if (expect(p, '"') < 0)
        return -1;
    while (p->i < p->n && p->s[p->i] != '"') {
        char c = p->s[p->i++];
        if (c == '\\') {
            if (p->i >= p->n)
                break;
            c = p->s[p->i++];
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
        }
        if (k + 1 >= cap)
            return fail(p, "string too long");
        out[k++] = c;
    }
    if (p->i >= p->n)
        return fail(p, "unterminated string");
    p->i++;
    out[k] = 0;
    return 0;
}

/* A scalar (string, number, true/false) as text into out[cap]. */
static int jscalar(struct jp *p, char *out, size_t cap)
{
    ws(p);
    if (p->i < p->n && p->s[p->i] == '"')
        return jstring(p, out, cap);
    if (!strncmp(p->s + p->i, "true", 4)) {
        p->i += 4;
        snprintf(out, cap, "1");
        return 0;
    }
    if (!strncmp(p->s + p->i, "false", 5)) {
        p->i += 5;
        snprintf(out, cap, "0");
        return 0;
    }
    size_t k = 0;
    while (p->i < p->n &&
           (isalnum((unsigned char)p->s[p->i]) || strchr("+-.", p->s[p->i]))) {
        if (k + 1 >= cap)
            return fail(p, "number too long");
        out[k++] = p->s[p->i++];
    }
    out[k] = 0;
    return k ? 0 : fail(p, "expected a value");
}

/* prefix + v into dst (cap bytes); too long is a scenario error. */
static int field(struct jp *p, char *dst, size_t cap, const char *prefix,
                 const char *v)
{
    size_t lp = strlen(prefix), lv = strlen(v);
    if (lp + lv >= cap)
        return fail(p, "value too long");
    memcpy(dst, prefix, lp);
    memcpy(dst + lp, v, lv + 1);
    return 0;
}

/* An object of scalars into "kind opt=val ..." (workload) or "time kind a
 * b [value] [detect=t] [local]" (fault; "local": 1 or true). */
static int jobject_line(struct jp *p, const char *key, char *out, size_t cap)
{
    char k[64], v[256], kind[64] = "", time[64] = "", a[64] = "", b[64] = "";
    char value[64] = "", detect[64] = "", opts[512] = "", local[8] = "";
    if (expect(p, '{') < 0)
        return -1;
    ws(p);
    if (p->i < p->n && p->s[p->i] == '}') {
        p->i++;
        return fail(p, "empty object");
    }
    for (;;) {
        if (jstring(p, k, sizeof(k)) < 0 || expect(p, ':') < 0 ||
            jscalar(p, v, sizeof(v)) < 0)
            return -1;
        int rc = 0;
        if (!strcmp(k, "kind"))
            rc = field(p, kind, sizeof(kind), "", v);
        else if (!strcmp(key, "fault") && !strcmp(k, "time"))
            rc = field(p, time, sizeof(time), "", v);
        else if (!strcmp(key, "fault") && !strcmp(k, "a"))
            rc = field(p, a, sizeof(a), "", v);
        else if (!strcmp(key, "fault") && !strcmp(k, "b"))
            rc = field(p, b, sizeof(b), "", v);
        else if (!strcmp(key, "fault") && !strcmp(k, "value"))
            rc = field(p, value, sizeof(value), "", v);
        else if (!strcmp(key, "fault") && !strcmp(k, "detect"))
            rc = field(p, detect, sizeof(detect), " detect=", v);
        else if (!strcmp(key, "fault") && !strcmp(k, "local"))
            rc = field(p, local, sizeof(local), "",
                       strcmp(v, "0") && strcmp(v, "false") ? " local" : "");
        else if (!strcmp(key, "workload")) {
            size_t l = strlen(opts);
            snprintf(opts + l, sizeof(opts) - l, " %s=%s", k, v);
        } else
            return fail(p, "unknown member in a fault object");
        if (rc < 0)
            return -1;
        ws(p);
        if (p->i < p->n && p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        if (expect(p, '}') < 0)
            return -1;
        break;
    }
    if (!strcmp(key, "workload"))
        snprintf(out, cap, "%s%s", kind, opts);
    else
        snprintf(out, cap, "%s %s %s %s %s%s%s", time, kind, a, b, value,
                 detect, local);
    return 0;
}

static int jvalue_set(struct jp *p, struct scenario *sc, const char *key)
{
    char v[1024], where[300];
    snprintf(where, sizeof(where), "%s: \"%s\"", p->path, key);
    ws(p);
    if (p->i < p->n && p->s[p->i] == '{') {
        if (strcmp(key, "workload") && strcmp(key, "fault"))
            return fail(p, "only workload and fault take objects");
        if (jobject_line(p, key, v, sizeof(v)) < 0)
            return -1;
    } else if (jscalar(p, v, sizeof(v)) < 0) {
        return -1;
    }
    return scenario_set(sc, key, v, where);
}

int scenario_load_json(struct scenario *sc, const char *path, const char *text,
                       size_t len)
{
    struct jp p = {text, 0, len, path};
    char key[64];
    if (expect(&p, '{') < 0)
        return -1;
    ws(&p);
    if (p.i < p.n && p.s[p.i] == '}') {
        p.i++;
        return 0;
    }
    for (;;) {
        if (jstring(&p, key, sizeof(key)) < 0 || expect(&p, ':') < 0)
            return -1;
        ws(&p);
        if (p.i < p.n && p.s[p.i] == '[') {
            p.i++;
            ws(&p);
            if (!strcmp(key, "transports")) {
                char list[256] = "", one[64];
                while (p.i < p.n && p.s[p.i] != ']') {
                    size_t l = strlen(list);
                    if (jscalar(&p, one, sizeof(one)) < 0)
                        return -1;
                    snprintf(list + l, sizeof(list) - l, "%s%s", l ? "," : "",
                             one);
                    ws(&p);
                    if (p.i < p.n && p.s[p.i] == ',')
                        p.i++;
                    ws(&p);
                }
                if (scenario_set(sc, key, list, path) < 0)
                    return -1;
            } else {
                while (p.i < p.n && p.s[p.i] != ']') {
                    if (jvalue_set(&p, sc, key) < 0)
                        return -1;
                    ws(&p);
                    if (p.i < p.n && p.s[p.i] == ',')
                        p.i++;
                    ws(&p);
                }
            }
            if (expect(&p, ']') < 0)
                return -1;
        } else if (jvalue_set(&p, sc, key) < 0) {
            return -1;
        }
        ws(&p);
        if (p.i < p.n && p.s[p.i] == ',') {
            p.i++;
            continue;
        }
        if (expect(&p, '}') < 0)
            return -1;
        break;
    }
    ws(&p);
    return p.i == p.n ? 0 : fail(&p, "text after the object");
}
