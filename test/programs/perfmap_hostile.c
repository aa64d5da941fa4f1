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
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void *call_malloc(size_t size)
{
    return malloc(size);
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    long rounds = atol(argv[2]);
    uint8_t *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED)
        return 1;
    /* push %rbp; mov %rsp,%rbp; mov $call_malloc,%rax; call *%rax; pop %rbp; ret */
    static const uint8_t head[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0xb8};
    static const uint8_t tail[] = {0xff, 0xd0, 0x5d, 0xc3};
    uintptr_t target = (uintptr_t)call_malloc;
    memcpy(code, head, sizeof head);
    memcpy(code + sizeof head, &target, 8);
    memcpy(code + sizeof head + 8, tail, sizeof tail);
    void *(*generated)(size_t) = (void *(*)(size_t))(uintptr_t)code;

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
        fprintf(f, "%lx 1000 real_code\n", (unsigned long)(uintptr_t)code);
        for (int i = 0; i < 65536; i++)
            fputc('Z', f);
        fprintf(f, "%lx 1000 bogus_code\n", (unsigned long)(uintptr_t)code);
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
