/*
 * The referee: an independent allocation counter, preloaded instead of libchurn, that
 * t_referee.sh compares libchurn's figures with.  It shares no code with libchurn: one global
 * mutex around all bookkeeping, a hash map address -> requested size in its own mmap'd
 * memory, every count kept in the order the mutex grants, and one JSON file at exit
 * ($REFEREE_OUT; a forked child writes $REFEREE_OUT.<pid>).
 *
 * What counts, chosen to be what libchurn's trace records (shim/ways/interpose.c, cxx.c, event.c):
 *  - an allocation: a non-NULL result of malloc (also of size 0), calloc (n * size bytes),
 *    memalign, posix_memalign (result 0), aligned_alloc, valloc (the size asked), pvalloc (the
 *    size rounded up to whole pages), and of every C++ operator new (plain, array, nothrow,
 *    aligned), counted once: what operator new calls underneath (libstdc++'s malloc) is not;
 *  - a free: free, cfree or any operator delete of an address the referee holds; a free of any
 *    other address is an unknown free, counted apart and not among the frees (the analyzer's
 *    totals.frees counts no FREE_UNKNOWN either); free(NULL) and delete of NULL are nothing;
 *  - realloc(p, n) and reallocarray: a free of p, then an allocation of the result, as two
 *    events back to back (also when the block stays where it was); realloc(NULL, n) is only the
 *    allocation, realloc(p, 0) that returns NULL only the free, a failed realloc nothing;
 *  - a temporary (heaptrack's definition): an allocation whose free is the very next heap
 *    event of the process, in the mutex's order; an unknown free is an event too;
 *  - the peak: the highest requested bytes live after any event, first reached, with the
 *    count live at that moment.
 * dlopen(..., RTLD_DEEPBIND) loses the flag (and says so), so that a deep-bound library's
 * calls reach the referee: the referee may change a program's behaviour, libchurn may not.
 * dlsym's own calloc, while the next functions are looked up, is served from a static buffer
 * that is never counted and never handed to the real free.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

/* ---- the functions next in line ---- */

static void *(*next_malloc)(size_t);
static void (*next_free)(void *);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static void *(*next_memalign)(size_t, size_t);
static int (*next_posix_memalign)(void **, size_t, size_t);
static void *(*next_aligned_alloc)(size_t, size_t);
static void *(*next_valloc)(size_t);
static void *(*next_pvalloc)(size_t);
static void *(*next_dlopen)(const char *, int);
static void (*next_exit)(int);
static void (*next_Exit)(int);

static char boot[65536] __attribute__((aligned(64)));
static size_t boot_used;
static int resolving;

static int from_boot(const void *p)
{
    return (const char *)p >= boot && (const char *)p < boot + sizeof boot;
}

static void *boot_alloc(size_t n)
{
    size_t at = (boot_used + 15) & ~(size_t)15;
    if (at + n > sizeof boot)
        return NULL;
    boot_used = at + n;
    return boot + at;
}

static void resolve(void)
{
    if (next_free || resolving)
        return;
    resolving = 1;
    next_malloc = dlsym(RTLD_NEXT, "malloc");
    next_calloc = dlsym(RTLD_NEXT, "calloc");
    next_realloc = dlsym(RTLD_NEXT, "realloc");
    next_memalign = dlsym(RTLD_NEXT, "memalign");
    next_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
    next_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
    next_valloc = dlsym(RTLD_NEXT, "valloc");
    next_pvalloc = dlsym(RTLD_NEXT, "pvalloc");
    next_dlopen = dlsym(RTLD_NEXT, "dlopen");
    next_exit = dlsym(RTLD_NEXT, "_exit");
    next_Exit = dlsym(RTLD_NEXT, "_Exit");
    __atomic_store_n(&next_free, (void (*)(void *))dlsym(RTLD_NEXT, "free"), __ATOMIC_RELEASE);
    resolving = 0;
}

/* ---- the books, under one mutex ---- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Set while this thread is inside the referee: whatever the next allocator calls back into
   (operator new's malloc, an allocation in a signal handler meanwhile) is not counted. */
static __thread int busy __attribute__((tls_model("initial-exec")));

typedef struct {
    uintptr_t addr;
    uint64_t size;
} slot;

static slot *table;
static size_t cap, used; /* cap a power of two, used < cap / 2 */

static uint64_t allocs, frees, unknown_frees, alloc_bytes, temporaries;
static uint64_t live_count, live_bytes, peak_bytes, peak_count;
static uintptr_t last_alloc; /* the address of the last event if it was an allocation, else 0 */
static int written, is_child;

static size_t hash(uintptr_t a)
{
    a ^= a >> 33;
    a *= 0xff51afd7ed558ccdull;
    a ^= a >> 33;
    return (size_t)a & (cap - 1);
}

static void put(uintptr_t a, uint64_t size);

static void grow(void)
{
    size_t old_cap = cap;
    slot *old = table;
    cap = old_cap ? old_cap * 2 : (size_t)1 << 16;
    void *m = mmap(NULL, cap * sizeof(slot), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        static const char msg[] = "referee: out of memory for its map\n";
        ssize_t w = write(2, msg, sizeof msg - 1);
        (void)w;
        abort();
    }
    table = m;
    used = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].addr)
            put(old[i].addr, old[i].size);
    if (old)
        munmap(old, old_cap * sizeof(slot));
}

/* An address already held (its free was missed) is replaced, its old size dropped. */
static void put(uintptr_t a, uint64_t size)
{
    if ((used + 1) * 2 > cap)
        grow();
    size_t i = hash(a);
    while (table[i].addr && table[i].addr != a)
        i = (i + 1) & (cap - 1);
    if (table[i].addr == a) {
        live_count--;
        live_bytes -= table[i].size;
    } else
        used++;
    table[i].addr = a;
    table[i].size = size;
}

/* Linear probing with backward-shift deletion: no tombstones. */
static int take(uintptr_t a, uint64_t *size)
{
    if (!cap)
        return 0;
    size_t i = hash(a);
    while (table[i].addr != a) {
        if (!table[i].addr)
            return 0;
        i = (i + 1) & (cap - 1);
    }
    *size = table[i].size;
    size_t hole = i;
    for (size_t j = (i + 1) & (cap - 1); table[j].addr; j = (j + 1) & (cap - 1)) {
        size_t home = hash(table[j].addr);
        /* the entry at j may move to the hole if its home is not in (hole, j] */
        if ((j > hole && (home <= hole || home > j)) || (j < hole && home <= hole && home > j)) {
            table[hole] = table[j];
            hole = j;
        }
    }
    table[hole].addr = 0;
    used--;
    return 1;
}

static void on_alloc(void *p, uint64_t size)
{
    put((uintptr_t)p, size);
    allocs++;
    alloc_bytes += size;
    live_count++;
    live_bytes += size;
    if (live_bytes > peak_bytes) {
        peak_bytes = live_bytes;
        peak_count = live_count;
    }
    last_alloc = (uintptr_t)p;
}

static void on_free(void *p)
{
    uint64_t size;
    if (take((uintptr_t)p, &size)) {
        frees++;
        live_count--;
        live_bytes -= size;
        if (last_alloc == (uintptr_t)p)
            temporaries++;
    } else
        unknown_frees++;
    last_alloc = 0;
}

static int enter(void)
{
    if (busy)
        return 0;
    busy = 1;
    pthread_mutex_lock(&lock);
    return 1;
}

static void leave(void)
{
    pthread_mutex_unlock(&lock);
    busy = 0;
}

static void record_alloc(void *p, uint64_t size)
{
    if (p && enter()) {
        on_alloc(p, size);
        leave();
    }
}

static void record_free(void *p)
{
    if (p && enter()) {
        on_free(p);
        leave();
    }
}

/* ---- the report ---- */

static void write_report(void)
{
    const char *out = getenv("REFEREE_OUT");
    if (written || !out || !*out)
        return;
    written = 1;
    char path[4096], buf[1024];
    if (is_child)
        snprintf(path, sizeof path, "%s.%d", out, (int)getpid());
    else
        snprintf(path, sizeof path, "%s", out);
    int n = snprintf(buf, sizeof buf,
                     "{\"pid\": %d, \"allocs\": %llu, \"frees\": %llu, \"unknown_frees\": %llu, "
                     "\"alloc_bytes\": %llu, \"temporary\": %llu, "
                     "\"peak\": {\"bytes\": %llu, \"count\": %llu}, "
                     "\"live_at_exit\": {\"count\": %llu, \"bytes\": %llu}}\n",
                     (int)getpid(), (unsigned long long)allocs, (unsigned long long)frees,
                     (unsigned long long)unknown_frees, (unsigned long long)alloc_bytes,
                     (unsigned long long)temporaries, (unsigned long long)peak_bytes,
                     (unsigned long long)peak_count, (unsigned long long)live_count,
                     (unsigned long long)live_bytes);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    ssize_t w = write(fd, buf, (size_t)n);
    (void)w;
    close(fd);
}

static void finish(void)
{
    int mine = enter();
    write_report();
    if (mine)
        leave();
}

static void before_fork(void) { pthread_mutex_lock(&lock); }
static void after_fork_parent(void) { pthread_mutex_unlock(&lock); }

/* The child starts its own books on the objects it inherited. */
static void after_fork_child(void)
{
    pthread_mutex_unlock(&lock);
    is_child = 1;
    written = 0;
    allocs = frees = unknown_frees = alloc_bytes = temporaries = 0;
    peak_bytes = live_bytes;
    peak_count = live_count;
    last_alloc = 0;
}

/* Registered from the constructor, before __libc_start_main registers the loader's
   finalizer, so exit() runs it after every ELF destructor (atexit handlers run in reverse):
   as late as the process's own code can still allocate. */
__attribute__((constructor)) static void referee_init(void)
{
    resolve();
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    atexit(finish);
}

/* ---- the C family ---- */

API void *malloc(size_t n)
{
    if (!next_free) {
        resolve();
        if (!next_free)
            return boot_alloc(n);
    }
    void *p = next_malloc(n);
    record_alloc(p, n);
    return p;
}

API void free(void *p)
{
    if (!p || from_boot(p))
        return;
    if (!next_free)
        resolve();
    record_free(p);
    next_free(p);
}

API void cfree(void *p) { free(p); }

API void *calloc(size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    if (!next_free) {
        resolve();
        if (!next_free) {
            void *p = boot_alloc(total);
            if (p)
                memset(p, 0, total);
            return p;
        }
    }
    void *p = next_calloc(n, size);
    record_alloc(p, total);
    return p;
}

/* The free and the allocation are booked back to back under the mutex held across the real
   realloc, so the old address cannot be handed out in between. */
API void *realloc(void *p, size_t n)
{
    if (p && from_boot(p)) {
        void *q = malloc(n);
        if (q)
            memcpy(q, p, n < (size_t)(boot + sizeof boot - (char *)p) ? n : (size_t)(boot + sizeof boot - (char *)p));
        return q;
    }
    if (!next_free) {
        resolve();
        if (!next_free)
            return p ? NULL : boot_alloc(n);
    }
    if (!enter())
        return next_realloc(p, n);
    void *q = next_realloc(p, n);
    if (p && (q || !n))
        on_free(p);
    if (q)
        on_alloc(q, n);
    leave();
    return q;
}

API void *reallocarray(void *p, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, total);
}

API void *memalign(size_t align, size_t n)
{
    resolve();
    void *p = next_memalign(align, n);
    record_alloc(p, n);
    return p;
}

API void *aligned_alloc(size_t align, size_t n)
{
    resolve();
    void *p = next_aligned_alloc(align, n);
    record_alloc(p, n);
    return p;
}

API int posix_memalign(void **out, size_t align, size_t n)
{
    resolve();
    int rc = next_posix_memalign(out, align, n);
    if (!rc)
        record_alloc(*out, n);
    return rc;
}

API void *valloc(size_t n)
{
    resolve();
    void *p = next_valloc(n);
    record_alloc(p, n);
    return p;
}

API void *pvalloc(size_t n)
{
    resolve();
    void *p = next_pvalloc(n);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    record_alloc(p, (n + page - 1) / page * page);
    return p;
}

/* ---- C++ operators: each forwards to the next definition, counted once ---- */

static void *next_op(void **slot, const char *name)
{
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!f) {
        f = dlsym(RTLD_NEXT, name);
        __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    }
    return f;
}

static void unbusy(int *was) { busy = *was; }
#define INSIDE() int was_ __attribute__((cleanup(unbusy))) = busy; busy = 1

typedef struct { int dummy; } nothrow_tag;

#define NEW(sym, params, args, fallback)                                                   \
    API void *sym params                                                                   \
    {                                                                                      \
        static void *next;                                                                 \
        void *f = next_op(&next, #sym);                                                    \
        void *p;                                                                           \
        int outer = !busy;                                                                 \
        {                                                                                  \
            INSIDE();                                                                      \
            p = f ? ((void *(*)params)f) args : fallback;                                  \
        }                                                                                  \
        if (outer)                                                                         \
            record_alloc(p, size);                                                         \
        return p;                                                                          \
    }

NEW(_Znwm, (size_t size), (size), malloc(size))
NEW(_Znam, (size_t size), (size), malloc(size))
NEW(_ZnwmRKSt9nothrow_t, (size_t size, const nothrow_tag *t), (size, t), malloc(size))
NEW(_ZnamRKSt9nothrow_t, (size_t size, const nothrow_tag *t), (size, t), malloc(size))
NEW(_ZnwmSt11align_val_t, (size_t size, size_t al), (size, al), aligned_alloc(al, size))
NEW(_ZnamSt11align_val_t, (size_t size, size_t al), (size, al), aligned_alloc(al, size))
NEW(_ZnwmSt11align_val_tRKSt9nothrow_t, (size_t size, size_t al, const nothrow_tag *t),
    (size, al, t), aligned_alloc(al, size))
NEW(_ZnamSt11align_val_tRKSt9nothrow_t, (size_t size, size_t al, const nothrow_tag *t),
    (size, al, t), aligned_alloc(al, size))

/* The delete is booked before the next one frees, so its address cannot come back first. */
#define DELETE(sym)                                                                        \
    API void sym(void *p, uintptr_t a, uintptr_t b)                                        \
    {                                                                                      \
        static void *next;                                                                 \
        if (!p)                                                                            \
            return;                                                                        \
        void *f = next_op(&next, #sym);                                                    \
        record_free(p);                                                                    \
        INSIDE();                                                                          \
        if (f)                                                                             \
            ((void (*)(void *, uintptr_t, uintptr_t))f)(p, a, b);                          \
        else                                                                               \
            next_free(p);                                                                  \
    }

DELETE(_ZdlPv)
DELETE(_ZdaPv)
DELETE(_ZdlPvm)
DELETE(_ZdaPvm)
DELETE(_ZdlPvRKSt9nothrow_t)
DELETE(_ZdaPvRKSt9nothrow_t)
DELETE(_ZdlPvSt11align_val_t)
DELETE(_ZdaPvSt11align_val_t)
DELETE(_ZdlPvmSt11align_val_t)
DELETE(_ZdaPvmSt11align_val_t)
DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t)
DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t)

/* ---- leaving, and libraries loaded deep ---- */

API void _exit(int status)
{
    resolve();
    finish();
    next_exit(status);
    __builtin_unreachable();
}

API void _Exit(int status)
{
    resolve();
    finish();
    next_Exit(status);
    __builtin_unreachable();
}

API void *dlopen(const char *file, int flags)
{
    resolve();
    if (file && (flags & RTLD_DEEPBIND)) {
        static const char msg[] = "referee: dlopen: RTLD_DEEPBIND dropped so the library's "
                                  "allocations are counted\n";
        ssize_t w = write(2, msg, sizeof msg - 1);
        (void)w;
        flags &= ~RTLD_DEEPBIND;
    }
    return next_dlopen(file, flags);
}
