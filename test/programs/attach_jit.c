/*
 * A program with generated code named by its perf map, to be attached to more than once
 * (t_attach_code_names.sh): prints its pid, then until its stdin ends allocates through a few
 * bytes of generated code (an executable mapping, no module's), and every 100 ms appends the
 * entry naming that code "jit_alloc" to /tmp/perf-<pid>.map, as a runtime adds entries while
 * it runs (libchurn skips a map older than its start).  Then removes the map and prints
 * `allocations N`.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static atomic_int done;

static void *call_malloc(size_t size)
{
    return malloc(size);
}

static void *wait_stdin(void *arg)
{
    (void)arg;
    char buf[256];
    while (fread(buf, 1, sizeof buf, stdin) > 0)
        ;
    atomic_store(&done, 1);
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
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
    printf("%d\n", (int)getpid());
    fflush(stdout);
    pthread_t t;
    if (pthread_create(&t, NULL, wait_stdin, NULL))
        return 1;
    long made = 0;
    double next = 0;
    while (!atomic_load(&done)) {
        if (now_s() >= next) {
            FILE *f = fopen(path, "a");
            if (!f)
                return 1;
            fprintf(f, "%lx 40 jit_alloc\n", (unsigned long)(uintptr_t)code);
            fclose(f);
            next = now_s() + 0.1;
        }
        char *volatile p = generated(32);
        free(p);
        made++;
        usleep(100);
    }
    pthread_join(t, NULL);
    unlink(path);
    printf("allocations %ld\n", made);
    return 0;
}
