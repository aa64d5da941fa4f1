/*
 * A program whose perf map (/tmp/perf-<pid>.map, read by libchurn's codemap.c to name code
 * in no module) is hostile, as anyone on the machine could make it before the program
 * starts: MODE fifo (a FIFO nobody writes), zero (a symlink to /dev/zero), or long (a
 * regular file: a line naming the generated code "real_code", then a line of 64 KiB of junk
 * whose rest after the first 64 KiB reads as an entry naming the same code "bogus_code").
 * Then it allocates ROUNDS times through a few bytes of generated code (an executable
 * mapping, no module's) and as often directly, and removes the map.  Prints `allocations N`.
 * Usage: perfmap_hostile MODE ROUNDS
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jit_stub.h"

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    long rounds = atol(argv[2]);
    void *(*generated)(size_t) = jit_stub();
    if (!generated)
        return 1;
    uintptr_t code = (uintptr_t)generated;

    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    unlink(path);
    if (!strcmp(argv[1], "fifo")) {
        if (mkfifo(path, 0600))
            return 1;
    } else if (!strcmp(argv[1], "zero")) {
        if (symlink("/dev/zero", path))
            return 1;
    } else if (!strcmp(argv[1], "long")) {
        FILE *f = fopen(path, "w");
        if (!f)
            return 1;
        fprintf(f, "%lx 1000 real_code\n", (unsigned long)code);
        for (int i = 0; i < 65536; i++)
            fputc('Z', f);
        fprintf(f, "%lx 1000 bogus_code\n", (unsigned long)code);
        fclose(f);
    } else {
        return 2;
    }
    long made = 0;
    for (long i = 0; i < rounds; i++) {
        char *volatile p = generated(32);
        char *volatile q = malloc(48);
        free(p);
        free(q);
        made += 2;
        if (i % 1000 == 0)
            usleep(1000); /* the writer's passes come meanwhile */
    }
    unlink(path);
    printf("allocations %ld\n", made);
    return 0;
}
