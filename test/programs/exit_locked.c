/*
 * A process that ends while one of its threads is inside malloc or free, holding the
 * allocator's own locks.  `exit_locked MODE`:
 *   busy        allocates and frees blocks of 16 bytes to 64 KiB forever (most sizes take
 *               glibc's arena lock) on the main thread and two others, printing "ready" once
 *               it is at it; the test sends SIGTERM, which any of the three may take.
 *   alarm_exit  the same loop, and a SIGALRM handler of its own, armed at a random 0.2-5 ms,
 *               that calls _exit(9) wherever the loop is.
 *   alarm_term  the same with raise(SIGTERM) in the handler (no SIGTERM handler of its own).
 *   double_free frees a 4000-byte block twice: glibc sees it with the arena lock held and
 *               aborts.
 * The loops start with SLOTS blocks of 100 bytes, so every trace holds at least those.
 * Natively each ends at once (143, 9, 143, 134); under the shim it must end the same way,
 * never hang, and leave a trace that says how it ended.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

#define SLOTS 64

static void *slot[SLOTS];
static __thread void *own[SLOTS]; /* the other threads' blocks */

static void on_alarm_exit(int sig)
{
    (void)sig;
    _exit(9);
}

static void on_alarm_term(int sig)
{
    (void)sig;
    raise(SIGTERM);
}

static void arm(void (*handler)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    srand((unsigned)(ts.tv_nsec ^ getpid()));
    struct itimerval it;
    memset(&it, 0, sizeof it);
    it.it_value.tv_usec = 200 + rand() % 4800;
    setitimer(ITIMER_REAL, &it, NULL);
}

static void churn_forever(void **blocks, int announce)
{
    unsigned x = 12345;
    for (unsigned long i = 0;; i++) {
        x = x * 1103515245u + 12345u;
        unsigned k = (x >> 8) % SLOTS;
        free(blocks[k]);
        size_t size = 16 + ((x >> 12) % 65536);
        blocks[k] = malloc(size);
        if (!blocks[k])
            die("malloc failed");
        ((char *)blocks[k])[0] = (char)i;
        if (announce && i == 20000) {
            printf("ready\n");
            fflush(stdout);
        }
    }
}

static void *other_thread(void *arg)
{
    (void)arg;
    churn_forever(own, 0);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        die("usage: exit_locked busy|alarm_exit|alarm_term|double_free");
    if (!strcmp(argv[1], "double_free")) {
        char *p = malloc(4000);
        char *fence = malloc(100); /* keeps p from merging into the top chunk */
        keep(fence);
        char *volatile again = p; /* the compiler must not see the second free coming */
        free(p);
        free(again);
        die("the double free went unnoticed");
    }
    for (unsigned k = 0; k < SLOTS; k++) /* every trace holds at least these */
        slot[k] = malloc(100);
    if (!strcmp(argv[1], "alarm_exit"))
        arm(on_alarm_exit);
    else if (!strcmp(argv[1], "alarm_term"))
        arm(on_alarm_term);
    else if (strcmp(argv[1], "busy"))
        die("unknown mode %s", argv[1]);
    else
        for (int n = 0; n < 2; n++) {
            pthread_t t;
            if (pthread_create(&t, NULL, other_thread, NULL))
                die("pthread_create failed");
        }
    churn_forever(slot, 1);
}
