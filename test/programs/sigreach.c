/*
 * Where the epoch signal (CHURN_EPOCH_SIGNAL=USR2) lands, for test/t_epoch_signal_reach.sh:
 *   sigreach self          raises the signal three times, prints `survived EPOCH`
 *   sigreach fork          a forked child raises the signal; prints `child STATUS`
 *   sigreach exec PRELOAD  a forked child execs `sigreach self` with LD_PRELOAD=PRELOAD
 *                          ("" removes it); prints `child STATUS`
 *   sigreach wait          prints `ready`, waits (at most 30 s) for the epoch to move, prints
 *                          `survived EPOCH`
 * STATUS is `exit N` or `signal N`.  The signal raised is CHURN_EPOCH_SIGNAL's: USR2 or WINCH.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "churn.h"

static void *volatile keep;

static int epoch_signal(void)
{
    const char *s = getenv("CHURN_EPOCH_SIGNAL");
    return s && !strcmp(s, "WINCH") ? SIGWINCH : SIGUSR2;
}

static void report_child(pid_t pid)
{
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) {
        printf("child lost\n");
        return;
    }
    if (WIFSIGNALED(st))
        printf("child signal %d\n", WTERMSIG(st));
    else
        printf("child exit %d\n", WEXITSTATUS(st));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    keep = malloc(100);
    if (!strcmp(mode, "self")) {
        for (int i = 0; i < 3; i++) {
            raise(epoch_signal());
            keep = malloc(100 + i);
        }
        printf("survived %llu\n", (unsigned long long)(churn_epoch_current ? churn_epoch_current() : 0));
        return 0;
    }
    if (!strcmp(mode, "fork")) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            raise(epoch_signal());
            _exit(0);
        }
        report_child(pid);
        return 0;
    }
    if (!strcmp(mode, "exec") && argc > 2) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            if (argv[2][0])
                setenv("LD_PRELOAD", argv[2], 1);
            else
                unsetenv("LD_PRELOAD");
            execl("/proc/self/exe", argv[0], "self", (char *)NULL);
            _exit(127);
        }
        report_child(pid);
        return 0;
    }
    if (!strcmp(mode, "wait")) {
        printf("ready\n");
        fflush(stdout);
        for (int i = 0; i < 3000 && !(churn_epoch_current && churn_epoch_current() > 0); i++) {
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
            keep = malloc(64);
        }
        printf("survived %llu\n", (unsigned long long)(churn_epoch_current ? churn_epoch_current() : 0));
        return 0;
    }
    return 2;
}
