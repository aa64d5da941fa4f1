/*
 * How many files the program can still open: opens /dev/null until the descriptor limit says
 * no and prints the count ("count N").  With argv[1] = "fork" a forked child counts first
 * ("child N"), then the parent.  A tracer that is not tracing a process must leave it every
 * descriptor.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int count(void)
{
    int n = 0;
    while (open("/dev/null", O_RDONLY) >= 0)
        n++;
    return n;
}

int main(int argc, char **argv)
{
    for (int i = 0; i < 100; i++)
        free(malloc(24 + i));
    if (argc > 1 && !strcmp(argv[1], "fork")) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
            return 2;
        if (!pid) {
            for (int i = 0; i < 100; i++)
                free(malloc(24 + i));
            printf("child %d\n", count());
            return 0;
        }
        int status;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
            return 3;
    }
    printf("count %d\n", count());
    return 0;
}
