/*
 * A program that changes directory (to argv[1]) before it forks and before it starts another
 * program: with a relative CHURN_OUT, the child's and the started program's traces belong
 * beside the parent's, in the directory the parent started in, not in the new one.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"

int main(int argc, char **argv)
{
    if (argc < 2 || chdir(argv[1]))
        die("usage: chdir_fork DIR (an existing directory)");
    keep(malloc(100));
    pid_t pid = fork();
    if (pid == 0) {
        keep(malloc(200));
        _exit(0);
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || status)
        die("the forked child failed");
    if (system("/bin/true"))
        die("system failed");
    printf("child %d\n", (int)pid);
    return 0;
}
