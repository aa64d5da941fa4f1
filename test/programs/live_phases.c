/*
 * A program that `churn watch` follows through an exec (test/t_watch.sh): `live_phases N MS`
 * serves N requests, one epoch each, MS milliseconds apart, keeping 64 bytes of each in
 * first_image_keep, then execs itself as `live_phases N MS second`, which does the same
 * keeping 128 bytes of each in second_image_keep and exits 0.  Each image checks what it
 * kept before it goes on.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "churn.h"

struct kept {
    struct kept *next;
    uint64_t request;
};

static struct kept *kept;

static __attribute__((noreturn)) void die(const char *what)
{
    fprintf(stderr, "live_phases: %s\n", what);
    exit(1);
}

static void link_kept(struct kept *k, size_t size, uint64_t request)
{
    if (!k)
        die("out of memory");
    memset(k, 0x5a, size);
    k->request = request;
    k->next = kept;
    kept = k;
}

/* Each calls malloc itself: the function the analyzer names is the one that allocates. */
static __attribute__((noinline)) void first_image_keep(uint64_t request)
{
    link_kept(malloc(64), 64, request);
}

static __attribute__((noinline)) void second_image_keep(uint64_t request)
{
    link_kept(malloc(128), 128, request);
}

static void check(uint64_t n)
{
    for (struct kept *k = kept; k; k = k->next, n--)
        if (k->request != n - 1)
            die("a kept object was overwritten");
    if (n)
        die("kept objects are missing");
}

int main(int argc, char **argv)
{
    if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "second")))
        die("usage: live_phases N MS [second]");
    uint64_t n = strtoull(argv[1], NULL, 10);
    long ms = atol(argv[2]);
    int second = argc == 4;
    struct timespec pause = {ms / 1000, (ms % 1000) * 1000000};
    for (uint64_t i = 0; i < n; i++) {
        churn_epoch_begin();
        if (second)
            second_image_keep(i);
        else
            first_image_keep(i);
        nanosleep(&pause, NULL);
    }
    check(n);
    if (second)
        return 0;
    execl("/proc/self/exe", argv[0], argv[1], argv[2], "second", (char *)NULL);
    die("exec failed");
}
