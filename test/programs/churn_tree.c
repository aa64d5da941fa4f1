/* Run by test/t_churn_run.sh under `churn run`.  Each image leaks blocks from a function of
   its own, so the test can tell whose trace a file is:
     churn_tree exit N      parent_alloc x 100, prints LD_PRELOAD, exits with status N
     churn_tree signal N    parent_alloc x 100, then dies of signal N
     churn_tree tree        parent_alloc x 100, forks a child that execs `churn_tree leaf`
     churn_tree leaf        leaf_alloc x 37 */
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

int main(int argc, char **argv)
{
    if (argc < 2)
        return 100;
    if (!strcmp(argv[1], "leaf")) {
        leaf_alloc(37);
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
    if (!strcmp(argv[1], "tree")) {
        pid_t c = fork();
        if (c == 0) {
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
