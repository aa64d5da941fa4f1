/*
 * Four threads that take libchurn's descriptor numbers over again and again while they
 * allocate: each dup2s its data file onto one of the lowest numbers of the range libchurn
 * keeps its own at (from 992, fds.c: the trace lands on the lowest free one each time it is
 * moved or opened again), writes a line there, mallocs and frees, and closes the number;
 * every other time through raw system calls (dup3, close) that libchurn cannot see.  Run
 * with CHURN_EPOCH_MS=1 and CHURN_FLUSH_MS=1, the writer writes the trace, and opens it
 * again, all along.  Any call failing ends the program with status 1.  Prints `allocations
 * N`: the mallocs it made, which the trace must hold or count as dropped.
 * Usage: fd_storm DATAFILE [ROUNDS]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define THREADS 4
#define LOW 992
#define NUMBERS 8 /* 992..999, two a thread */

static int data;
static long rounds = 8000;
static atomic_long allocations;

static void die(const char *what, int n)
{
    fprintf(stderr, "fd_storm: %s %d: %s\n", what, n, strerror(errno));
    exit(1);
}

static void *storm(void *arg)
{
    long me = (long)arg;
    long made = 0;
    for (long r = 0; r < rounds; r++) {
        /* each thread its own numbers (the takeovers are libchurn's trouble, not each
           other's), both taken both ways in turn */
        int n = LOW + (int)(me + THREADS * ((r + r / 2) % (NUMBERS / THREADS)));
        int raw = r % 2;
        /* A raw dup3 onto a number libchurn's F_DUPFD has taken and not yet filled fails
           with EBUSY, which the libc wrapper waits out and a raw call cannot
           (docs/reliability.md, Open): the raw way tries again, libc's never needs to. */
        long got;
        int tries = 0;
        do
            got = raw ? syscall(SYS_dup3, data, n, 0) : dup2(data, n);
        while (raw && got < 0 && errno == EBUSY && ++tries < 1000);
        if (got != n)
            die("dup onto", n);
        char line[32];
        int len = snprintf(line, sizeof line, "%ld %ld\n", me, r);
        if (write(n, line, (size_t)len) != len)
            die("write to", n);
        for (int i = 0; i < 5; i++) {
            char *volatile p = malloc(16 + (size_t)(i % 64) * 8);
            free(p);
            made++;
        }
        if (raw ? syscall(SYS_close, n) : close(n))
            die("close", n);
    }
    atomic_fetch_add(&allocations, made);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    if (argc > 2)
        rounds = atol(argv[2]);
    data = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
    if (data < 0)
        die("open", 0);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, storm, (void *)i))
            die("pthread_create", (int)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    close(data);
    printf("allocations %ld\n", atomic_load(&allocations));
    return 0;
}
