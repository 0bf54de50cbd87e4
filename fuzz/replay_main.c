/*
 * replay_main.c - a stand-in for libFuzzer's main() so every fuzz target
 * doubles as a plain regression test.
 *
 * Without clang's -fsanitize=fuzzer the fuzz_*.c targets are linked with
 * this file; CTest runs them on their seed corpus (fuzz/corpus/<name>/),
 * and the same binary replays a crash reproducer given as a file.  Each
 * argument is a file or a directory (whose regular files are replayed in
 * name order, not recursively); every input goes to LLVMFuzzerTestOneInput,
 * which aborts on a bug.  Finding no input at all is an error: an empty or
 * mistyped corpus path must not pass silently.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;

    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    for (;;) {
        size_t got;
        if (len == cap) {
            uint8_t *nb;
            cap = cap ? cap * 2 : 4096;
            nb = realloc(buf, cap);
            if (!nb) {
                fprintf(stderr, "replay: out of memory\n");
                exit(2);
            }
            buf = nb;
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    fclose(f);
    /* Exact-size copy so ASan sees reads past the input, as under
     * libFuzzer. */
    {
        uint8_t *exact = malloc(len ? len : 1);
        if (!exact)
            exit(2);
        memcpy(exact, buf, len);
        free(buf);
        LLVMFuzzerTestOneInput(exact, len);
        free(exact);
    }
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replays the regular files in dir and returns how many; sets *failed if
 * the directory or one of its files could not be read. */
static long replay_dir(const char *dir, int *failed)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0, i;
    long count = 0;

    if (!d) {
        fprintf(stderr, "replay: cannot open directory %s\n", dir);
        *failed = 1;
        return 0;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **nn;
            cap = cap ? cap * 2 : 64;
            nn = realloc(names, cap * sizeof *names);
            if (!nn)
                exit(2);
            names = nn;
        }
        names[n] = malloc(strlen(dir) + strlen(e->d_name) + 2);
        if (!names[n])
            exit(2);
        sprintf(names[n], "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_names);
    for (i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
            if (replay_file(names[i]) == 0)
                count++;
            else
                *failed = 1; /* keep going: report every bad input */
        }
        free(names[i]);
    }
    free(names);
    return count;
}

int main(int argc, char **argv)
{
    long total = 0;
    int failed = 0, i;

    for (i = 1; i < argc; i++) {
        struct stat st;
        if (argv[i][0] == '-')
            continue; /* libFuzzer-style flags: ignored when replaying */
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: no such file or directory: %s\n", argv[i]);
            failed = 1;
        } else if (S_ISDIR(st.st_mode)) {
            total += replay_dir(argv[i], &failed);
        } else if (replay_file(argv[i]) == 0) {
            total++;
        } else {
            failed = 1;
        }
    }
    printf("replayed %ld inputs\n", total);
    if (total == 0) {
        fprintf(stderr, "replay: no inputs found\n");
        return 1;
    }
    return failed;
}
