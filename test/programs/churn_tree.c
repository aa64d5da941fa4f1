/* Run by test/t_churn_run.sh under `churn run`.  Each image leaks blocks from a function of
   its own, so the test can tell whose trace a file is:
     churn_tree exit N      parent_alloc x 100, prints LD_PRELOAD, exits with status N
     churn_tree signal N    parent_alloc x 100, then dies of signal N
     churn_tree tree        parent_alloc x 100, forks a child that execs `churn_tree leaf`
     churn_tree leaf [N]    leaf_alloc x 37 (or N, at most 128)
     churn_tree bigtree     as tree, the child's leaf_alloc x 120: it allocates more
     churn_tree forks       parent_alloc x 100, then forks four children, each leaking
                            blocks of its own size: 10 x 1000 bytes (exits 0), 20 x 3000
                            (exits 7), 3 x 700 (dies of SIGTERM), 5 x 500 (waits until the
                            parent kills it with SIGKILL), and prints each child's pid
     churn_tree daemon      parent_alloc x 100, then daemonizes as daemon(3) does and more:
                            a child starts a session of its own, forks the daemon and exits 0;
                            the daemon leaks leaf_alloc x 37, tells the parent its pid and
                            waits for a signal; the parent prints "daemon PID" and exits 0
     churn_tree leave [N]   parent_alloc x 100, forks a child (or N) that leaks leaf_alloc x 37
                            and waits for a signal, prints "child PID" for each and exits 0
                            at once */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile keep[128];

__attribute__((noinline)) static void parent_alloc(int n)
{
    for (int i = 0; i < n; i++)
        keep[i] = malloc(4242);
}

__attribute__((noinline)) static void leaf_alloc(int n)
{
    for (int i = 0; i < n; i++)
        keep[i] = malloc(4243);
}

/* A forked child's leak: n blocks of size bytes, nothing else allocated. */
__attribute__((noinline)) static void child_leak(int n, size_t size)
{
    for (int i = 0; i < n; i++)
        keep[i] = malloc(size);
}

static int forks(void)
{
    /* status: >= 0 the exit status, else minus the signal it dies of */
    static const struct { int n; size_t size; int status; } kids[] = {
        {10, 1000, 0}, {20, 3000, 7}, {3, 700, -SIGTERM}, {5, 500, -SIGKILL},
    };
    enum { KIDS = sizeof kids / sizeof kids[0] };
    pid_t pid[KIDS];
    int ready[2];
    if (pipe(ready))
        return 105;
    for (int k = 0; k < KIDS; k++) {
        pid[k] = fork();
        if (pid[k] < 0)
            return 106;
        if (pid[k] == 0) {
            child_leak(kids[k].n, kids[k].size);
            if (kids[k].status >= 0)
                _exit(kids[k].status);
            if (kids[k].status != -SIGKILL) {
                raise(-kids[k].status);
                _exit(111);
            }
            /* Told its leak is in the trace's ring by now, then killed: it waits on a read
               that never returns. */
            char c = 1;
            if (write(ready[1], &c, 1) != 1)
                _exit(108);
            for (;;)
                pause();
        }
    }
    char c;
    if (read(ready[0], &c, 1) != 1)
        return 107;
    /* The killed child's writer flushes the ring on its own timer: give it that long. */
    usleep(300000);
    kill(pid[KIDS - 1], SIGKILL);
    for (int k = 0; k < KIDS; k++) {
        int st;
        if (waitpid(pid[k], &st, 0) != pid[k])
            return 109;
        if (kids[k].status >= 0 ? !WIFEXITED(st) || WEXITSTATUS(st) != kids[k].status
                                : !WIFSIGNALED(st) || WTERMSIG(st) != -kids[k].status)
            return 110;
        printf("child%d %d\n", k, (int)pid[k]);
    }
    return 0;
}

static int daemon_mode(void)
{
    int ready[2];
    if (pipe(ready))
        return 112;
    pid_t c = fork();
    if (c < 0)
        return 113;
    if (c == 0) {
        close(ready[0]);
        if (setsid() < 0)
            _exit(114);
        pid_t d = fork();
        if (d != 0)
            _exit(d < 0 ? 115 : 0);
        leaf_alloc(37);
        pid_t me = getpid();
        if (write(ready[1], &me, sizeof me) != sizeof me)
            _exit(116);
        close(ready[1]);
        for (;;)
            pause();
    }
    close(ready[1]);
    pid_t d;
    int st;
    if (read(ready[0], &d, sizeof d) != sizeof d || waitpid(c, &st, 0) != c ||
        !WIFEXITED(st) || WEXITSTATUS(st))
        return 117;
    printf("daemon %d\n", (int)d);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 100;
    if (!strcmp(argv[1], "leaf")) {
        int n = argc > 2 ? atoi(argv[2]) : 37;
        leaf_alloc(n > 0 && n <= 128 ? n : 37);
        return 0;
    }
    parent_alloc(100);
    printf("preload %s\n", getenv("LD_PRELOAD") ? getenv("LD_PRELOAD") : "");
    printf("pid %d\n", (int)getpid());
    fflush(stdout);
    if (!strcmp(argv[1], "exit") && argc > 2)
        return atoi(argv[2]);
    if (!strcmp(argv[1], "signal") && argc > 2) {
        raise(atoi(argv[2]));
        return 101;
    }
    if (!strcmp(argv[1], "forks"))
        return forks();
    if (!strcmp(argv[1], "daemon"))
        return daemon_mode();
    if (!strcmp(argv[1], "leave")) {
        for (int k = argc > 2 ? atoi(argv[2]) : 1; k > 0; k--) {
            pid_t c = fork();
            if (c == 0) {
                leaf_alloc(37);
                for (;;)
                    pause();
            }
            if (c < 0)
                return 118;
            printf("child %d\n", (int)c);
        }
        return 0;
    }
    if (!strcmp(argv[1], "tree") || !strcmp(argv[1], "bigtree")) {
        pid_t c = fork();
        if (c == 0) {
            if (argv[1][0] == 'b')
                execl("/proc/self/exe", argv[0], "leaf", "120", (char *)NULL);
            else
                execl("/proc/self/exe", argv[0], "leaf", (char *)NULL);
            _exit(102);
        }
        int st;
        if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st))
            return 103;
        printf("child %d\n", (int)c);
        return 0;
    }
    return 104;
}
