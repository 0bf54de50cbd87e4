/*
 * corpus_emit.h - the seed-corpus writer shared by the fuzz targets'
 * generators (each target built with -DGEN_CORPUS has its own main() that
 * writes its seeds).  corpus_dir names the output folder; corpus_emit()
 * writes one seed as DIR/NAME.bin and exits on any error, since a
 * generator that silently drops a seed would shrink the replayed corpus.
 */
#ifndef MROCE_FUZZ_CORPUS_EMIT_H
#define MROCE_FUZZ_CORPUS_EMIT_H

#include <stdio.h>
#include <stdlib.h>

static const char *corpus_dir;

static void corpus_emit(const char *name, const void *p, size_t len)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s.bin", corpus_dir, name);
    f = fopen(path, "wb");
    if (!f || fwrite(p, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

#endif
