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
#include <time.h>
#include <unistd.h>

#include "jit_stub.h"

static atomic_int done;

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
    void *(*generated)(size_t) = jit_stub();
    if (!generated)
        return 1;
    uintptr_t code = (uintptr_t)generated;
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
            fprintf(f, "%lx 40 jit_alloc\n", (unsigned long)code);
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
