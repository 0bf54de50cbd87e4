/*
 * threads.h - the threads of this process that carry a given name
 * (pthread_setname_np), found in /proc/self/task: the tests that check a
 * library's helper threads (libmroce's ACK watchdog "mroce-ackwd", the
 * provider's keeper "mroce-keeper") look them up this way.  Header-only
 * and static like testutil.h.
 */
#ifndef MROCE_TESTS_THREADS_H
#define MROCE_TESTS_THREADS_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* Fills tids with the ids of up to max threads named name; returns how
 * many there are (possibly more than max), or -1 if /proc cannot be read. */
static inline int threads_named(const char *name, pid_t *tids, int max)
{
    DIR *dir = opendir("/proc/self/task");
    if (!dir)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (de->d_name[0] == '.')
            continue;
        char path[300], comm[32] = {0};
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        int ok = fgets(comm, sizeof(comm), f) != NULL;
        fclose(f);
        comm[strcspn(comm, "\n")] = 0;
        if (!ok || strcmp(comm, name))
            continue;
        if (n < max)
            tids[n] = (pid_t)atoi(de->d_name);
        n++;
    }
    closedir(dir);
    return n;
}

#endif
