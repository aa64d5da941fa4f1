/* Part of t_unwind: allocations from many differently shaped stacks, for CHURN_UNWIND=verify
   (the shim compares its CFI walker with libunwind on every stack and aborts on a difference).
   Plain, large, alloca'd and variable-length frames, recursion through function pointers, a
   shared library, libc's qsort calling back, threads, and a dlopen/dlclose/dlopen cycle.
   usage: unwind_shapes LIBRARY */
#include <alloca.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*unwind_cb)(int depth);
typedef int (*descend_fn)(int depth, unwind_cb cb);

static __thread void *volatile keep; /* per thread: the workers allocate at once */
static descend_fn lib_descend;

static __attribute__((noinline)) void allocate(int depth)
{
    free(keep);
    keep = malloc(16 + (size_t)depth);
    void *c = calloc(2, 24);
    c = realloc(c, 200);
    free(c);
}

static int shape(int depth, unsigned seed);

static __attribute__((noinline)) int plain(int depth, unsigned seed)
{
    int r = shape(depth - 1, seed * 7 + 1);
    __asm__ volatile("" ::: "memory");
    return r + 1;
}

static __attribute__((noinline)) int big(int depth, unsigned seed)
{
    volatile char buf[3000];
    buf[seed % sizeof buf] = (char)seed;
    int r = shape(depth - 1, seed * 5 + 2);
    return r + buf[seed % sizeof buf];
}

static __attribute__((noinline)) int dynamic(int depth, unsigned seed)
{
    volatile char *p = alloca(8 + (size_t)(seed % 200));
    p[0] = (char)seed;
    int r = shape(depth - 1, seed * 3 + 3);
    return r + p[0];
}

static __attribute__((noinline)) int vla(int depth, unsigned seed)
{
    volatile char v[1 + seed % 77];
    v[0] = (char)depth;
    int r = shape(depth - 1, seed * 11 + 4);
    return r + v[0];
}

static int compare(const void *a, const void *b)
{
    allocate(*(const int *)a);
    return *(const int *)a - *(const int *)b;
}

static __attribute__((noinline)) int through_qsort(int depth, unsigned seed)
{
    int v[3] = {(int)(seed % 5), 3, depth};
    qsort(v, 3, sizeof v[0], compare);
    int r = shape(depth - 1, seed + 5);
    __asm__ volatile("" ::: "memory");
    return r + v[0];
}

static __attribute__((noinline)) int through_library(int depth, unsigned seed)
{
    int r = lib_descend(seed % 6, allocate);
    r += shape(depth - 1, seed + 6);
    __asm__ volatile("" ::: "memory");
    return r;
}

static int (*const shapes[])(int, unsigned) = {plain, big, dynamic, vla, through_qsort,
                                          through_library};

static int shape(int depth, unsigned seed)
{
    if (depth <= 0) {
        allocate((int)(seed % 1000));
        return 0;
    }
    if (seed % 4 == 0)
        allocate(depth);
    unsigned pick = seed % (sizeof shapes / sizeof shapes[0]);
    int r = shapes[pick](depth, seed);
    __asm__ volatile("" ::: "memory");
    return r;
}

static void *worker(void *arg)
{
    int base = (int)(long)arg, sum = 0;
    for (int i = 0; i < 300; i++)
        sum += shape(i % 90, (unsigned)(base + i));
    return (void *)(long)sum;
}

static descend_fn open_library(const char *path, void **handle)
{
    *handle = dlopen(path, RTLD_NOW);
    descend_fn f = *handle ? (descend_fn)dlsym(*handle, "unwind_lib_descend") : NULL;
    if (!f) {
        fprintf(stderr, "unwind_shapes: cannot load %s: %s\n", path, dlerror());
        exit(1);
    }
    return f;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: unwind_shapes LIBRARY\n");
        return 2;
    }
    void *handle;
    lib_descend = open_library(argv[1], &handle);
    int sum = 0;
    for (int i = 0; i < 600; i++)
        sum += shape(i % 130, (unsigned)i);
    /* Unloading drops the walker's cached rules; the reloaded library is walked afresh. */
    dlclose(handle);
    lib_descend = open_library(argv[1], &handle);
    for (int i = 0; i < 200; i++)
        sum += shape(i % 40, (unsigned)i * 13);
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(i * 1000))) {
            fprintf(stderr, "unwind_shapes: pthread_create failed\n");
            return 1;
        }
    for (int i = 0; i < 2; i++) {
        void *r;
        pthread_join(t[i], &r);
        sum += (int)(long)r;
    }
    free(keep);
    printf("%d\n", sum);
    return 0;
}
