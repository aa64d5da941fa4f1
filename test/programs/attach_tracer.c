/* For test/t_churn_attach.sh: holds a process as its tracer (PTRACE_SEIZE, which leaves it
 * running) until stdin ends, so that churn attach meets a process that another tracer has.
 *
 *   attach_tracer PID   prints "tracing" once seized, detaches at the end of stdin
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    pid_t pid = (pid_t)atoi(argv[1]);
    if (ptrace(PTRACE_SEIZE, pid, NULL, NULL)) {
        fprintf(stderr, "PTRACE_SEIZE %d: %s\n", (int)pid, strerror(errno));
        return 1;
    }
    printf("tracing\n");
    fflush(stdout);
    char line[16];
    while (fgets(line, sizeof line, stdin))
        ;
    /* detaching needs a stopped tracee */
    if (ptrace(PTRACE_INTERRUPT, pid, NULL, NULL) == 0) {
        int status;
        waitpid(pid, &status, __WALL);
        ptrace(PTRACE_DETACH, pid, NULL, NULL);
    }
    return 0;
}
