/*
 * case_table.h - named cases for the tests/test_*.c programs, so one case
 * runs alone while a bug is chased (picoquic's test runner is the model).
 *
 * A program lists its cases once, in the order a full run takes them, and
 * hands the table to test_cases_main(), which ends with TESTUTIL_SUMMARY's
 * line ("NAME: N passed, M failed") as before:
 *
 *   static const struct test_case cases[] = {
 *       {"rnr", case_rnr},
 *       {"bad_api", test_bad_api},
 *   };
 *   int main(int argc, char **argv)
 *   {
 *       return TEST_CASES_MAIN("test_engine_errors", cases, argc, argv);
 *   }
 *
 * Command line: no argument runs every case in table order; names run those
 * cases, in the order given; -l lists the names.  An unknown name or option
 * prints the reason and exits 2 before any case runs.
 */
#ifndef MROCE_CASE_TABLE_H
#define MROCE_CASE_TABLE_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"

struct test_case {
    const char *name; /* [a-z0-9_], unique in its table */
    void (*fn)(void); /* records its checks with CHECK() and friends */
};

/* Runs one case; a program passes its own to test_cases_main() to print or
 * time around each case. */
typedef void (*test_case_each_fn)(const struct test_case *c);

static inline const struct test_case *
test_case_find(const struct test_case *cases, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(cases[i].name, name))
            return &cases[i];
    return NULL;
}

static inline void test_cases_usage(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: %s [-l] [CASE...]\n"
            "  no CASE: run every case; -l: list the case names\n",
            prog);
}

/* Parses argv (see the top of the file), runs the selected cases through
 * each (NULL: call the case's fn) and returns the exit status: that of
 * testutil_summary(prog), 0 after -l or -h, 2 for a bad argument. */
static inline int test_cases_main(const char *prog,
                                  const struct test_case *cases, size_t n,
                                  int argc, char **argv, test_case_each_fn each)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-l")) {
            for (size_t k = 0; k < n; k++)
                printf("%s\n", cases[k].name);
            return 0;
        }
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            test_cases_usage(stdout, prog);
            return 0;
        }
        if (argv[i][0] == '-') {
            fprintf(stderr, "%s: unknown option %s\n", prog, argv[i]);
            test_cases_usage(stderr, prog);
            return 2;
        }
        if (!test_case_find(cases, n, argv[i])) {
            fprintf(stderr, "%s: no case named %s (-l lists them)\n", prog,
                    argv[i]);
            return 2;
        }
    }
    for (size_t k = 0; k < (argc > 1 ? (size_t)argc - 1 : n); k++) {
        const struct test_case *c = argc > 1
                                        ? test_case_find(cases, n, argv[k + 1])
                                        : &cases[k];
        if (each)
            each(c);
        else
            c->fn();
    }
    return testutil_summary(prog);
}

#define TEST_CASES_MAIN(prog, cases, argc, argv)                           \
    test_cases_main(prog, cases, sizeof(cases) / sizeof((cases)[0]), argc, \
                    argv, NULL)

#endif /* MROCE_CASE_TABLE_H */
