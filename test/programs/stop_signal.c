/*
 * How a process ends decides what its live objects are called: `stop_signal MODE` keeps one
 * 64-byte session record per epoch for ten epochs (keep_session), then ends:
 *   exit      returns from main: the records are leaked;
 *   default   raises SIGTERM with its default action: killed by the signal;
 *   sigaction raises SIGTERM caught by a handler installed with sigaction, which asks the
 *             main loop to stop, and main returns, as a server stopping on SIGTERM does;
 *   siginfo   the same with an SA_SIGINFO handler;
 *   signal    the same with a handler installed with signal().
 * After any signal the records are live at the end, not leaked: the process did not end of
 * its own accord.  The handled modes check that the handler ran with the signal and its
 * information, and that sigaction reads the program's own handler back.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "churn.h"

static volatile sig_atomic_t stop, seen_code;
static void *sessions[10];

static void on_term(int sig)
{
    stop = sig;
}

static void on_term_info(int sig, siginfo_t *info, void *ctx)
{
    (void)ctx;
    stop = sig;
    seen_code = info ? info->si_code : -1;
}

__attribute__((noinline)) static void keep_session(int i)
{
    sessions[i] = malloc(64);
    if (!sessions[i])
        exit(1);
    memset(sessions[i], i, 64);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    for (int i = 0; i < 10; i++) {
        churn_epoch_begin();
        keep_session(i);
    }
    churn_epoch_begin();
    if (!strcmp(mode, "exit"))
        return 0;
    if (!strcmp(mode, "default")) {
        raise(SIGTERM);
        return 3; /* not reached */
    }
    struct sigaction sa, back;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    if (!strcmp(mode, "sigaction")) {
        sa.sa_handler = on_term;
        sigaction(SIGTERM, &sa, NULL);
    } else if (!strcmp(mode, "siginfo")) {
        sa.sa_sigaction = on_term_info;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGTERM, &sa, NULL);
    } else if (!strcmp(mode, "signal")) {
        signal(SIGTERM, on_term);
    } else {
        fprintf(stderr, "usage: stop_signal exit|default|sigaction|siginfo|signal\n");
        return 2;
    }
    if (sigaction(SIGTERM, NULL, &back) != 0 ||
        (!strcmp(mode, "siginfo") ? back.sa_sigaction != on_term_info
                                  : back.sa_handler != on_term)) {
        fprintf(stderr, "stop_signal: sigaction does not read back the program's handler\n");
        return 1;
    }
    raise(SIGTERM);
    if (stop != SIGTERM || (!strcmp(mode, "siginfo") && seen_code != SI_TKILL)) {
        fprintf(stderr, "stop_signal: the handler did not run as installed (%d, code %d)\n",
                (int)stop, (int)seen_code);
        return 1;
    }
    return 0;
}
