/*
 * An allocator libchurn cannot know: a pool on one big mapping, carved by bumping a pointer,
 * never through malloc.  The program allocates POOL_STEP bytes every 100 ms for about four
 * seconds and touches them, so its RSS grows steadily while the traced heap stays flat; the
 * blind-spot detector (shim/record/blind.c) must say so.  With the argument `malloc` the same
 * growth comes from malloc, which libchurn traces: the detector must stay quiet.  Prints a sum
 * of the bytes so the work cannot be dropped, and the bytes it allocated.  With `fork` the
 * process forks once it has grown, and the child only waits a moment: the child's trace must
 * carry none of the parent's warning.  With `late` the same bytes come from malloc at once,
 * before the detector's baseline, and are filled a step at a time (a buffer allocated at
 * start and used later): traced, quiet.  With `small` each step is 2048 objects of 512 bytes
 * from malloc, kept: traced, quiet, also when only a sample of them is recorded.  With `cow
 * FILE` each step writes 1 MiB of FILE (40 MiB at least), mapped privately: copy-on-write
 * pages that no allocator holds, which the detector must name by the file.  Built with -DENGINE_V8 it also defines a function under
 * the name of one of V8's collector (v8::internal::Heap::MarkCompact()), and holds the message
 * V8's heap prints when it runs out of memory, so the detector takes the pool for a JS engine's
 * own heap, by the name or (stripped) by the message.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define POOL_BYTES ((size_t)256 << 20)
#define POOL_STEP ((size_t)1 << 20)

#ifdef ENGINE_V8
void v8_mark_compact(void) __asm__("_ZN2v88internal4Heap11MarkCompactEv");
__attribute__((noinline, used)) void v8_mark_compact(void)
{
}
__attribute__((used)) const char v8_heap_message[] = "Ineffective mark-compacts near heap limit";
#endif

static char *pool_base;
static size_t pool_used;

__attribute__((noinline)) static void pool_arena_init(void)
{
    pool_base = mmap(NULL, POOL_BYTES, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (pool_base == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
}

__attribute__((noinline)) static void *pool_alloc(size_t n)
{
    if (pool_used + n > POOL_BYTES)
        return NULL;
    void *p = pool_base + pool_used;
    pool_used += (n + 15) & ~(size_t)15;
    return p;
}

#define SMALL 512

/* One step's bytes as SMALL-byte objects from malloc, each filled; the first of them. */
static char *small_objects(int fill)
{
    char *first = NULL;
    for (size_t k = 0; k < POOL_STEP / SMALL; k++) {
        char *q = malloc(SMALL);
        if (!q)
            return NULL;
        memset(q, fill, SMALL);
        first = first ? first : q;
    }
    return first;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "pool";
    int steps = 40, forks = !strcmp(mode, "fork"), late = !strcmp(mode, "late");
    int small = !strcmp(mode, "small"), cow = !strcmp(mode, "cow") && argc > 2;
    int traced = !strcmp(mode, "malloc") || late || small;
    pool_arena_init();
    if (cow) {
        /* the pool becomes the file's private mapping: pool_alloc carves it the same way */
        int fd = open(argv[2], O_RDONLY);
        pool_base = fd < 0 ? MAP_FAILED : mmap(NULL, (size_t)steps * POOL_STEP,
                                               PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (pool_base == MAP_FAILED) {
            perror(argv[2]);
            return 1;
        }
    }
    char *buffer = late ? malloc(steps * POOL_STEP) : NULL;
    unsigned long sum = 0;
    for (int i = 0; i < steps; i++) {
        char *p = late    ? buffer + i * POOL_STEP
                  : small ? small_objects(i + 1)
                  : traced ? malloc(POOL_STEP)
                           : pool_alloc(POOL_STEP);
        if (!p) {
            fprintf(stderr, "pool exhausted\n");
            return 1;
        }
        if (!small)
            memset(p, i + 1, POOL_STEP);
        sum += (unsigned char)p[small ? SMALL / 2 : POOL_STEP / 2];
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (forks) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            struct timespec ts = {1, 200 * 1000 * 1000};
            nanosleep(&ts, NULL);
            _exit(0);
        }
        int status;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
            return 1;
    }
    printf("%s allocated %zu bytes, sum %lu\n", traced ? "malloc" : "pool",
           traced ? steps * POOL_STEP : pool_used, sum);
    return 0;
}
