/*
 * fork while other threads allocate (issue #8): two threads malloc and free as fast as they
 * can while the main thread forks 100 times, so forks land while another thread is inside
 * malloc or inside libchurn (its live map, a ring, the writer's locks).  Each child allocates,
 * frees and leaves (exit or _exit, alternately); a child that hangs is killed by its own alarm
 * and fails the run, and so does a parent that hangs.
 *
 * usage: fork_threads   prints "forks N" when every child finished cleanly
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define FORKS 100

static atomic_int stop;

static void *churn(void *arg)
{
    unsigned seed = (unsigned)(size_t)arg;
    void *keep[64] = {0};
    while (!atomic_load(&stop)) {
        unsigned i = (seed = seed * 1103515245u + 12345u) >> 16 & 63;
        free(keep[i]);
        keep[i] = malloc(16 + (seed >> 8) % 2000);
        if (!keep[i])
            abort();
    }
    for (int i = 0; i < 64; i++)
        free(keep[i]);
    return NULL;
}

int main(void)
{
    alarm(120); /* a parent that hangs dies of SIGALRM: the test sees the signal */
    pthread_t t[2];
    for (size_t i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, churn, (void *)(i + 1)))
            return 1;
    for (int n = 0; n < FORKS; n++) {
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0) {
            alarm(20);
            char *p = malloc(100);
            char *q = strdup("child");
            if (!p || !q)
                _exit(3);
            free(p);
            free(q);
            if (n % 2)
                _exit(0);
            exit(0);
        }
        int status;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
            fprintf(stderr, "fork_threads: child %d (fork %d) ended with status %#x%s\n", (int)pid,
                    n, status, WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? " (hung)" : "");
            return 1;
        }
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("forks %d\n", FORKS);
    return 0;
}
