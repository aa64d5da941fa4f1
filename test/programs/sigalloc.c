/*
 * Signal handlers that allocate, and epoch signals that land anywhere.  The main thread maps
 * and unmaps a page MAPS times (calls libchurn records with a stack, outside the allocator's
 * locks, so a handler may call malloc without deadlocking glibc); a 10 kHz SIGALRM handler
 * mallocs and frees a block each time it runs, so some runs interrupt libchurn's own work on
 * that thread.  Another thread sends the epoch signal (USR2) to the whole process the whole
 * time, so it lands on whichever program thread does not block it (never libchurn's writer,
 * which blocks every signal), and keeps sending while the process exits (during the final
 * flush).  Prints `runs N traced_maps M`.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

#define MAPS 100000

static volatile sig_atomic_t runs, failures;

static __attribute__((noinline)) void on_alarm(int sig)
{
    (void)sig;
    unsigned char *p = malloc(72);
    if (!p) {
        failures++;
        return;
    }
    memset(p, 0x5a, 72);
    if (p[71] != 0x5a)
        failures++;
    free(p);
    runs++;
}

static void *fire(void *arg)
{
    (void)arg;
    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &usr2, NULL); /* aimed at the other threads */
    for (;;) {
        kill(getpid(), SIGUSR2);
        usleep(50);
    }
    return NULL;
}

static __attribute__((noinline)) void map_round(size_t page, unsigned i)
{
    unsigned char *m = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                            -1, 0);
    if (m == MAP_FAILED) {
        fprintf(stderr, "mmap failed in round %u\n", i);
        exit(1);
    }
    m[i % page] = (unsigned char)i;
    if (m[i % page] != (unsigned char)i || munmap(m, page)) {
        fprintf(stderr, "page broken in round %u\n", i);
        exit(1);
    }
}

int main(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    pthread_t t;
    if (pthread_create(&t, NULL, fire, NULL))
        return 1;
    struct itimerval every = {{0, 100}, {0, 100}};
    setitimer(ITIMER_REAL, &every, NULL);
    for (unsigned i = 0; i < MAPS; i++)
        map_round(page, i);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    if (failures) {
        fprintf(stderr, "%d handler allocations failed or were corrupted\n", (int)failures);
        return 1;
    }
    printf("runs %d maps %d\n", (int)runs, MAPS);
    fflush(stdout);
    exit(0); /* the signal thread is still firing */
}
