/*
 * memcheck.c - the library's half of the registration checks (SEM-28 (d),
 * (e)): every byte of a range handed to mroce_reg_mr() must be mapped
 * readable, and writable as well when the registration grants a write
 * right, or a peer's packet would later fault inside the engine.
 *
 * The engine makes no OS calls, so this lives here.  A software NIC does
 * not pin pages (SEM-29); the check asks the kernel which mappings cover
 * the range, walking them from its start and accepting adjacent mappings
 * that cover it together.  Where the kernel answers PROCMAP_QUERY (an ioctl
 * on /proc/self/maps, Linux 6.11 and later) each mapping is one lookup, so
 * the cost is a few microseconds however many mappings the process has and
 * however large the region.  Elsewhere the check reads the text of
 * /proc/self/maps, whose lines are sorted by address, a page at a time up
 * to the first line past the range: its cost grows with the number of
 * mappings below the range's end.  Where /proc is not mounted the check
 * cannot be made and registration relies on the engine's arithmetic alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "lib_int.h"

/* Walk state: [next, last] is the part of the range not yet covered. */
struct walk {
    uintptr_t next, last;
    int want_write;
    int rc;   /* MROCE_EACCESS once a covering mapping lacks 'w' */
    int done; /* 1: covered; -1: a hole or an unreadable mapping */
};

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Parses a hex number at *p, advancing past it; 0 if none. */
static int parse_hex(const char **p, const char *end, uintptr_t *v)
{
    const char *s = *p;
    uintptr_t x = 0;
    int n = 0, d;
    while (s < end && (d = hexval((unsigned char)*s)) >= 0) {
        x = x << 4 | (uintptr_t)d;
        s++;
        n++;
    }
    *p = s;
    *v = x;
    return n > 0;
}

/* The mapping [lo, hi) with its read and write permissions, met in
 * address order. */
static void walk_map(struct walk *w, uintptr_t lo, uintptr_t hi, int r, int wr)
{
    if (hi - 1 < w->next)
        return; /* wholly below what is left */
    if (lo > w->next || !r) {
        w->done = -1; /* a hole, or PROT_NONE (or write/exec only) */
        return;
    }
    if (w->want_write && !wr)
        w->rc = MROCE_EACCESS;
    if (hi - 1 >= w->last)
        w->done = 1;
    else
        w->next = hi;
}

/* One line "start-end perms ..."; [start, end) is the mapping. */
static void walk_line(struct walk *w, const char *s, const char *end)
{
    uintptr_t lo, hi;
    if (!parse_hex(&s, end, &lo) || s >= end || *s++ != '-' ||
        !parse_hex(&s, end, &hi) || s + 3 > end || *s++ != ' ' || hi <= lo)
        return; /* not a mapping line: ignore */
    walk_map(w, lo, hi, s[0] == 'r', s[1] == 'w');
}

/* PROCMAP_QUERY of <linux/fs.h> (Linux 6.11), declared here for older
 * headers: the mapping covering query_addr, or ENOENT. */
struct lib_procmap_query {
    uint64_t size, query_flags, query_addr;
    uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
    uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
    uint64_t vma_name_addr, build_id_addr;
};
#define LIB_PROCMAP_QUERY _IOWR('f', 17, struct lib_procmap_query)
#define LIB_PROCMAP_READABLE 1u
#define LIB_PROCMAP_WRITABLE 2u

/* Walks by lookups; 0 if the kernel has no PROCMAP_QUERY (w untouched
 * then), 1 once the walk is decided. */
static int walk_query(struct walk *w, int fd)
{
    struct walk try = *w;
    while (!try.done) {
        struct lib_procmap_query q;
        memset(&q, 0, sizeof(q));
        q.size = sizeof(q);
        q.query_addr = try.next;
        if (ioctl(fd, LIB_PROCMAP_QUERY, &q) < 0) {
            if (errno != ENOENT)
                return 0;
            try.done = -1; /* nothing maps try.next */
            break;
        }
        if (q.vma_end <= q.vma_start || q.vma_start > try.next)
            return 0; /* not the answer expected: read the text instead */
        walk_map(&try, (uintptr_t)q.vma_start, (uintptr_t)q.vma_end,
                 !!(q.vma_flags & LIB_PROCMAP_READABLE),
                 !!(q.vma_flags & LIB_PROCMAP_WRITABLE));
    }
    *w = try;
    return 1;
}

static int mem_check(const void *addr, size_t len, int want_write, int query)
{
    struct walk w = {(uintptr_t)addr, (uintptr_t)addr + (len - 1), want_write,
                     0, 0};
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    if (query && walk_query(&w, fd)) {
        close(fd);
        return w.done == 1 ? w.rc : MROCE_EFAULT;
    }
    /* Reads a page at a time, so the kernel formats no more lines than the
     * walk needs; a line cut by the buffer's end is carried over. */
    char buf[4096 + 512];
    size_t have = 0;
    while (!w.done) {
        ssize_t n = read(fd, buf + have, sizeof(buf) - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        have += (size_t)n;
        char *s = buf, *end = buf + have, *nl;
        while (!w.done && (nl = memchr(s, '\n', (size_t)(end - s)))) {
            walk_line(&w, s, nl);
            s = nl + 1;
        }
        have = (size_t)(end - s);
        if (have == sizeof(buf)) {
            /* A line longer than the buffer (a very long path): its start
             * has been read; skip the rest of it. */
            walk_line(&w, buf, buf + have);
            have = 0;
            char c;
            while (!w.done && read(fd, &c, 1) == 1 && c != '\n') {
            }
            continue;
        }
        memmove(buf, s, have);
    }
    close(fd);
    return w.done == 1 ? w.rc : MROCE_EFAULT;
}

int lib_mem_check(const void *addr, size_t len, int want_write)
{
    return mem_check(addr, len, want_write, 1);
}

int lib_mem_check_text(const void *addr, size_t len, int want_write)
{
    return mem_check(addr, len, want_write, 0);
}
