/*
 * A program that blocks its signals and takes them with sigwait (the usual way a daemon
 * handles SIGTERM and SIGHUP).  A signal sent to the process goes to a thread that does not
 * block it, so a thread libchurn adds must block every signal, or the default action (here:
 * terminate) runs on that thread instead of the program's sigwait seeing the signal.
 */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "probe.h"

#define ROUNDS 200

int main(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGALRM);
    sigprocmask(SIG_BLOCK, &set, NULL);
    for (int i = 0; i < ROUNDS; i++) {
        int want = i % 2 ? SIGHUP : SIGTERM;
        keep(malloc(64 + (size_t)i));
        kill(getpid(), want);
        int got = 0;
        if (sigwait(&set, &got) || got != want)
            die("sigwait returned signal %d, not %d\n", got, want);
    }
    alarm(1);
    int got = 0;
    if (sigwait(&set, &got) || got != SIGALRM)
        die("sigwait returned signal %d, not SIGALRM\n", got);
    printf("took %d signals with sigwait\n", ROUNDS + 1);
    return 0;
}
