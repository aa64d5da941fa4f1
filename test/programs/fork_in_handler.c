/*
 * fork() from a signal handler that interrupted an allocation.  A 2 kHz SIGALRM handler forks
 * FORKS times; each child leaves at once with _exit(3).  Meanwhile the main thread allocates
 * and frees without pause: small blocks, from many distinct stacks (libchurn's stack table
 * takes its lock for each new one), and blocks past glibc's thread cache (glibc's malloc
 * takes its arena lock for them once the process has a second thread, as libchurn's writer
 * makes it).  So most forks interrupt libchurn or the allocator on the forking thread.
 * Natively the program is single-threaded and glibc's fork takes no lock.  Prints `child
 * PID` for each child, then `FORKS forks, BAD bad, N allocations`; exits 1 if a child did not
 * end with status 3.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define FORKS 60

static volatile sig_atomic_t forks;
static pid_t kids[FORKS];

static void on_alarm(int sig)
{
    (void)sig;
    int saved = errno;
    if (forks < FORKS) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(3);
        if (pid > 0)
            kids[forks++] = pid;
    }
    errno = saved;
}

/* Two functions calling each other by the bits of k: up to 2^depth distinct stacks. */
typedef void *(*step_fn)(unsigned depth, unsigned k);
static void *step_a(unsigned depth, unsigned k);
static void *step_b(unsigned depth, unsigned k);
static step_fn steps[2] = {step_a, step_b};

static __attribute__((noinline)) void *step_a(unsigned depth, unsigned k)
{
    if (!depth)
        return malloc(16 + (k & 255));
    void *p = steps[k & 1](depth - 1, k >> 1);
    __asm__ volatile("" ::: "memory"); /* not a tail call: the frame stays on the stack */
    return p;
}

static __attribute__((noinline)) void *step_b(unsigned depth, unsigned k)
{
    if (!depth)
        return malloc(2000 + (k & 4095));
    void *p = steps[(k >> 1) & 1](depth - 1, k >> 1);
    __asm__ volatile("" ::: "memory");
    return p;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval every = {{0, 500}, {0, 500}};
    setitimer(ITIMER_REAL, &every, NULL);
    unsigned long n = 0;
    while (forks < FORKS) {
        free(steps[n & 1](12, (unsigned)(n * 2654435761u)));
        n++;
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    int bad = 0;
    for (int i = 0; i < FORKS; i++) {
        int status;
        if (waitpid(kids[i], &status, 0) != kids[i] || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 3)
            bad++;
        printf("child %d\n", (int)kids[i]);
    }
    printf("%d forks, %d bad, %lu allocations\n", FORKS, bad, n);
    return bad != 0;
}
