/*
 * Google tcmalloc's hooks in an executable of our own (workerd's case; no package provides
 * that tcmalloc): malloc and its family are defined here, over glibc's __libc_malloc, and
 * report every allocation and free to the hooks registered with
 * tcmalloc::MallocHook::AddNewHook / AddDeleteHook, under their mangled names and with NewInfo
 * and DeleteInfo laid out as tcmalloc's, so that libchurn takes its tcmalloc way in
 * (shim/ways/way_tcmalloc.c).  A block's allocated size is its requested size rounded up to
 * 16, as a size class would; the sizes below are rarely multiples of 16.
 *
 * In the "work" epoch THREADS threads (started before it, so that their start allocates
 * nothing in it) each run ROUNDS allocations through malloc, calloc and realloc over SLOTS
 * live blocks, a few of them larger than any sampling interval of the test, and free all but
 * the last SLOTS, which the main thread frees.  The program counts what it called and prints
 * "expect ALLOCS FREES BYTES" for that epoch once it is over.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "probe.h"

void *__libc_malloc(size_t size);
void __libc_free(void *p);
void *__libc_memalign(size_t align, size_t size);

typedef struct {
    void *ptr;
    size_t requested_size;
    size_t allocated_size;
    bool is_mutable;
} new_info;

typedef struct {
    void *ptr;
    size_t deallocated_size; /* std::optional<size_t>: the value, then its flag */
    bool deallocated_size_engaged;
    size_t allocated_size;
    bool is_mutable;
} delete_info;

typedef void (*new_hook)(const new_info *);
typedef void (*delete_hook)(const delete_info *);

#define MAX_HOOKS 4
static _Atomic(new_hook) new_hooks[MAX_HOOKS];
static _Atomic(delete_hook) delete_hooks[MAX_HOOKS];

bool add_new_hook(new_hook h) __asm__(
    "_ZN8tcmalloc10MallocHook10AddNewHookEPFvRKNS0_7NewInfoEE");
bool add_delete_hook(delete_hook h) __asm__(
    "_ZN8tcmalloc10MallocHook13AddDeleteHookEPFvRKNS0_10DeleteInfoEE");

bool add_new_hook(new_hook h)
{
    for (unsigned i = 0; i < MAX_HOOKS; i++) {
        new_hook none = NULL;
        if (atomic_compare_exchange_strong(&new_hooks[i], &none, h))
            return true;
    }
    return false;
}

bool add_delete_hook(delete_hook h)
{
    for (unsigned i = 0; i < MAX_HOOKS; i++) {
        delete_hook none = NULL;
        if (atomic_compare_exchange_strong(&delete_hooks[i], &none, h))
            return true;
    }
    return false;
}

/* Before every block: where glibc's block begins, and the allocated size. */
typedef struct {
    void *base;
    size_t allocated;
} header;

static size_t class_of(size_t size)
{
    return (size + 15) & ~(size_t)15;
}

static void *place(void *base, size_t offset, size_t size)
{
    if (!base)
        return NULL;
    char *p = (char *)base + offset;
    header *h = (header *)p - 1;
    h->base = base;
    h->allocated = class_of(size);
    new_info info = {p, size, h->allocated, true};
    for (unsigned i = 0; i < MAX_HOOKS; i++) {
        new_hook hook = atomic_load(&new_hooks[i]);
        if (hook)
            hook(&info);
    }
    return p;
}

static void *aligned(size_t align, size_t size)
{
    if (size > SIZE_MAX / 2 || align > SIZE_MAX / 4)
        return NULL;
    if (align <= sizeof(header))
        return place(__libc_malloc(sizeof(header) + class_of(size)), sizeof(header), size);
    return place(__libc_memalign(align, align + class_of(size)), align, size);
}

void *malloc(size_t size)
{
    return aligned(16, size);
}

void free(void *p)
{
    if (!p)
        return;
    header *h = (header *)p - 1;
    delete_info info = {p, 0, false, h->allocated, true};
    for (unsigned i = 0; i < MAX_HOOKS; i++) {
        delete_hook hook = atomic_load(&delete_hooks[i]);
        if (hook)
            hook(&info);
    }
    __libc_free(h->base);
}

void *calloc(size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total))
        return NULL;
    void *p = malloc(total);
    if (p)
        memset(p, 0, total);
    return p;
}

void *realloc(void *p, size_t size)
{
    if (!p)
        return malloc(size);
    if (!size) {
        free(p);
        return NULL;
    }
    void *q = malloc(size);
    if (q) {
        size_t old = ((header *)p - 1)->allocated;
        memcpy(q, p, old < size ? old : size);
        free(p);
    }
    return q;
}

void *memalign(size_t align, size_t size)
{
    return aligned(align, size);
}

void *aligned_alloc(size_t align, size_t size)
{
    return aligned(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
    void *p = aligned(align, size);
    if (!p)
        return 12; /* ENOMEM */
    *out = p;
    return 0;
}

void *valloc(size_t size)
{
    return aligned(4096, size);
}

void *pvalloc(size_t size)
{
    return aligned(4096, (size + 4095) & ~(size_t)4095);
}

size_t malloc_usable_size(void *p)
{
    return p ? ((header *)p - 1)->allocated : 0;
}

#define THREADS 2
#define ROUNDS 100000
#define SLOTS 64
#define LARGE (600u << 10) /* over every sampling interval of the test */

typedef struct {
    unsigned id;
    void *block[SLOTS];
    size_t size[SLOTS];
    uint64_t allocs, frees, bytes;
} worker_state;

static pthread_barrier_t go, done;

static size_t size_of(unsigned id, unsigned r)
{
    if (r % 5000 == 4999)
        return LARGE + r % 7;
    return 24 + (r * 37u + id * 11u) % 1000;
}

static void *worker(void *arg)
{
    worker_state *w = arg;
    pthread_barrier_wait(&go);
    for (unsigned r = 0; r < ROUNDS; r++) {
        unsigned slot = r % SLOTS;
        size_t size = size_of(w->id, r);
        void *p = w->block[slot];
        if (p && !filled(p, w->size[slot] < 64 ? w->size[slot] : 64, slot))
            die("thread %u: block %u broken", w->id, slot);
        if (p && r % 3 == 0) {
            p = realloc(p, size); /* a free and an allocation */
            w->frees++;
        } else {
            if (p) {
                free(p);
                w->frees++;
            }
            p = r % 3 == 1 ? calloc(1, size) : malloc(size);
        }
        if (!p)
            die("thread %u: allocation of %zu bytes failed", w->id, size);
        w->allocs++;
        w->bytes += size;
        fill(p, size < 64 ? size : 64, slot);
        w->block[slot] = p;
        w->size[slot] = size;
    }
    pthread_barrier_wait(&done);
    return NULL;
}

int main(void)
{
    static worker_state w[THREADS];
    pthread_t t[THREADS];
    if (pthread_barrier_init(&go, NULL, THREADS + 1) ||
        pthread_barrier_init(&done, NULL, THREADS + 1))
        die("pthread setup failed");
    for (unsigned i = 0; i < THREADS; i++) {
        w[i].id = i;
        if (pthread_create(&t[i], NULL, worker, &w[i]))
            die("pthread_create failed");
    }
    phase("work");
    pthread_barrier_wait(&go);
    pthread_barrier_wait(&done);
    uint64_t allocs = 0, frees = 0, bytes = 0;
    for (unsigned i = 0; i < THREADS; i++) {
        for (unsigned s = 0; s < SLOTS; s++) {
            free(w[i].block[s]); /* another thread's */
            frees++;
        }
        allocs += w[i].allocs;
        frees += w[i].frees;
        bytes += w[i].bytes;
    }
    phase("end");
    for (unsigned i = 0; i < THREADS; i++)
        if (pthread_join(t[i], NULL))
            die("pthread_join failed");
    phases_print();
    printf("expect %llu %llu %llu\n", (unsigned long long)allocs, (unsigned long long)frees,
           (unsigned long long)bytes);
    return 0;
}
