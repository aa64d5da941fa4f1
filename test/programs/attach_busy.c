/* For test/t_churn_attach.sh: a busy multithreaded program that churn attaches to and
 * detaches from while it runs.
 *
 *   attach_busy busy ROUNDS    4 threads malloc/realloc/calloc/free blocks of varying sizes
 *                              (aligned ones too) in rounds of 20,000 operations, every block
 *                              filled with a pattern checked before it is freed or moved,
 *                              until stdin ends and each thread has done ROUNDS rounds; prints
 *                              a checksum of their first ROUNDS rounds (it depends only on the
 *                              threads' seeds) and exits 0, or 3 when a block's contents were
 *                              wrong.
 *   attach_busy leak MS N      frees 100 blocks allocated before "go", then N times: calls
 *                              tick(), leaks 1,000 bytes (10 blocks of 100), frees 50 blocks
 *                              it allocates, sleeps MS ms; prints "done" and exits when stdin
 *                              ends.
 *   attach_busy hold           a line at a time from stdin: "alloc N" allocates N blocks of
 *                              100 bytes and keeps them, "free" frees every block kept; "ok"
 *                              on stdout after each; exits 0 when stdin ends.  Nothing else
 *                              allocates after its first line, so a trace of an attach
 *                              around commands holds exactly their allocations and frees.
 *                              It allocates through pointers to malloc and free, as a
 *                              program's table of allocator functions does (python's): built
 *                              without PIE, its executable then has canonical PLT entries for
 *                              them (test/t_attach_nonpie.sh).
 *
 * All write their pid to stdout first; busy and leak then wait for a line on stdin ("go"),
 * so the test can attach before the measured part.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
#define SLOTS 512

static long rounds;
static volatile int stop;
static int bad;

typedef struct worker {
    uint64_t rng, sum, first_sum, ops;
    unsigned id;
} worker;

static uint64_t next(worker *w)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return w->rng;
}

static void fill(unsigned char *p, size_t n, uint64_t tag)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(tag + i * 31);
}

static int intact(const unsigned char *p, size_t n, uint64_t tag)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(tag + i * 31))
            return 0;
    return 1;
}

static void *work(void *arg)
{
    worker *w = arg;
    unsigned char *slot[SLOTS] = {0};
    size_t size[SLOTS] = {0};
    uint64_t tag[SLOTS] = {0};
    for (long round = 0; round < rounds || !stop; round++) {
        for (int k = 0; k < 20000; k++) {
            unsigned i = (unsigned)(next(w) % SLOTS);
            uint64_t r = next(w);
            if (slot[i]) {
                if (!intact(slot[i], size[i], tag[i]))
                    __atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
                w->sum = w->sum * 31 + size[i] * 7 + tag[i];
                if (r % 4 == 0) {
                    size_t n = 1 + (size_t)(r >> 8) % 4096;
                    unsigned char *q = realloc(slot[i], n);
                    if (!q)
                        abort();
                    size_t keep = n < size[i] ? n : size[i];
                    if (!intact(q, keep, tag[i]))
                        __atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
                    slot[i] = q;
                    size[i] = n;
                    fill(q, n, tag[i]);
                    continue;
                }
                free(slot[i]);
                slot[i] = NULL;
                continue;
            }
            size_t n = 1 + (size_t)(r >> 8) % ((r & 0x30) == 0x30 ? 65536 : 512);
            unsigned char *p;
            switch (r % 5) {
            case 0:
                p = calloc(1, n);
                if (p)
                    for (size_t j = 0; j < n; j++)
                        if (p[j])
                            __atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
                break;
            case 1:
                if (posix_memalign((void **)&p, 64, n))
                    p = NULL;
                break;
            case 2:
                p = aligned_alloc(32, (n + 31) & ~(size_t)31);
                break;
            default:
                p = malloc(n);
            }
            if (!p)
                abort();
            slot[i] = p;
            size[i] = n;
            tag[i] = r >> 32;
            fill(p, n, tag[i]);
        }
        if (++w->ops == (uint64_t)rounds)
            w->first_sum = w->sum;
    }
    for (unsigned i = 0; i < SLOTS; i++)
        if (slot[i]) {
            if (!intact(slot[i], size[i], tag[i]))
                __atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
            free(slot[i]);
        }
    return NULL;
}

static void wait_go(void)
{
    printf("%d\n", (int)getpid());
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof line, stdin))
        exit(2);
}

/* An allocation the compiler may not take out (an unused malloc, or a malloc freed at once,
   is removed at -O2). */
static void *used(void *p)
{
    if (!p)
        abort();
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

static void *(*volatile alloc_fn)(size_t);
static void (*volatile free_fn)(void *);

static void wait_eof(void)
{
    char line[16];
    while (fgets(line, sizeof line, stdin))
        ;
}

/* CHURN_EPOCH_AT=tick: one epoch per turn of the leak loop (a body longer than the jmp
   that hooks it) */
static volatile unsigned long ticks;
__attribute__((noinline)) void tick(void)
{
    ticks = ticks + 1;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "busy")) {
        rounds = atol(argv[2]);
        wait_go();
        pthread_t t[THREADS];
        worker w[THREADS];
        for (unsigned i = 0; i < THREADS; i++) {
            w[i] = (worker){.rng = 0x9e3779b97f4a7c15ull * (i + 1), .id = i};
            pthread_create(&t[i], NULL, work, &w[i]);
        }
        wait_eof();
        stop = 1;
        uint64_t sum = 0;
        for (unsigned i = 0; i < THREADS; i++) {
            pthread_join(t[i], NULL);
            sum ^= w[i].first_sum * (i + 1);
        }
        if (bad) {
            fprintf(stderr, "a block's contents were wrong\n");
            return 3;
        }
        printf("checksum %016llx\n", (unsigned long long)sum);
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "leak")) {
        long ms = atol(argv[2]), n = atol(argv[3]);
        void *old[100];
        for (int j = 0; j < 100; j++)
            old[j] = used(malloc(300));
        wait_go();
        for (int j = 0; j < 100; j++)
            free(old[j]);
        static void *kept[1 << 16];
        size_t nkept = 0;
        for (long i = 0; i < n; i++) {
            tick();
            for (int j = 0; j < 10 && nkept < sizeof kept / sizeof *kept; j++)
                kept[nkept++] = used(malloc(100));
            for (int j = 0; j < 50; j++)
                free(used(malloc(200)));
            struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
            while (nanosleep(&ts, &ts))
                ;
        }
        printf("done\n");
        fflush(stdout);
        wait_eof();
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "hold")) {
        static void *kept[1 << 16];
        size_t nkept = 0;
        char line[64];
        alloc_fn = malloc;
        free_fn = free;
        printf("%d\n", (int)getpid());
        fflush(stdout);
        while (fgets(line, sizeof line, stdin)) {
            long n;
            if (sscanf(line, "alloc %ld", &n) == 1)
                for (long j = 0; j < n && nkept < sizeof kept / sizeof *kept; j++)
                    kept[nkept++] = used(alloc_fn(100));
            else if (!strcmp(line, "free\n"))
                while (nkept)
                    free_fn(kept[--nkept]);
            printf("ok\n");
            fflush(stdout);
        }
        return 0;
    }
    fprintf(stderr, "usage: attach_busy busy ROUNDS | leak MS N | hold\n");
    return 2;
}
