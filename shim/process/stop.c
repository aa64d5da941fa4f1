/*
 * Signals that ask a program to stop (TERM, INT, QUIT), caught by a handler of the program's
 * own: a server stopped with `kill` usually catches TERM and then returns from main, and what
 * it still holds then was not leaked, it was live when it was asked to stop.  So that the
 * trace can tell (docs/analyzer.md, Retention), a handler the program installs for one of
 * them through sigaction() or signal() goes in behind ours: ours notes the signal (counter
 * libchurn.stop_signal, read by the writer at every epoch's end, the exit's too) and calls
 * the program's with what the kernel gave it.  It stays invisible: it is installed with the
 * program's flags and mask, and a program that reads the disposition back (sigaction, signal)
 * gets its own handler.  Handlers set through sigset, sysv_signal or bsd_signal, which glibc
 * installs without calling sigaction, are not seen.
 */
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "shim.h"

static const int stop_signals[] = {SIGTERM, SIGINT, SIGQUIT};
#define STOP_COUNT (sizeof stop_signals / sizeof *stop_signals)

/* The program's action for each stop signal while ours is installed in front of it. */
static struct {
    struct sigaction act;  /* as the program gave it, read back by sigaction */
    void *_Atomic handler; /* the function ours calls */
    _Atomic int siginfo;   /* it takes (int, siginfo_t *, void *) */
} programs[STOP_COUNT];

static _Atomic uint64_t caught;

static int stop_index(int sig)
{
    for (size_t i = 0; i < STOP_COUNT; i++)
        if (stop_signals[i] == sig)
            return (int)i;
    return -1;
}

static void on_stop(int sig, siginfo_t *info, void *ctx)
{
    atomic_store(&caught, (uint64_t)sig);
    int i = stop_index(sig);
    void *h = i >= 0 ? atomic_load(&programs[i].handler) : NULL;
    if (!h)
        return;
    if (atomic_load(&programs[i].siginfo))
        ((void (*)(int, siginfo_t *, void *))h)(sig, info, ctx);
    else
        ((void (*)(int))h)(sig);
}

int churn_stop_wants(int sig, const struct sigaction *act)
{
    if (stop_index(sig) < 0 || !act)
        return 0;
    if (act->sa_flags & SA_SIGINFO)
        return act->sa_sigaction != NULL;
    return act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN;
}

int churn_stop_install(int sig, const struct sigaction *act,
                       int (*set)(int, const struct sigaction *, struct sigaction *))
{
    int i = stop_index(sig);
    programs[i].act = *act;
    int siginfo = (act->sa_flags & SA_SIGINFO) != 0;
    atomic_store(&programs[i].handler,
                 siginfo ? (void *)act->sa_sigaction : (void *)act->sa_handler);
    atomic_store(&programs[i].siginfo, siginfo);
    struct sigaction ours = *act;
    ours.sa_sigaction = on_stop;
    ours.sa_flags |= SA_SIGINFO;
    int rc = set(sig, &ours, NULL);
    /* What reads back is what the kernel holds (glibc adds SA_RESTORER and its restorer to
       every disposition it sets), with the program's handler and SA_SIGINFO in ours' place. */
    struct sigaction now;
    if (!rc && !set(sig, NULL, &now)) {
        now.sa_flags = (now.sa_flags & ~SA_SIGINFO) | (act->sa_flags & SA_SIGINFO);
        if (siginfo)
            now.sa_sigaction = act->sa_sigaction;
        else
            now.sa_handler = act->sa_handler;
        programs[i].act = now;
    }
    return rc;
}

int churn_stop_shown(int sig, const struct sigaction *installed, struct sigaction *act)
{
    int i = stop_index(sig);
    if (i < 0 || !(installed->sa_flags & SA_SIGINFO) || installed->sa_sigaction != on_stop)
        return 0;
    *act = programs[i].act;
    return 1;
}

sighandler_t churn_stop_previous(int sig, sighandler_t previous)
{
    int i = stop_index(sig);
    if (i < 0 || previous != (sighandler_t)(void *)on_stop)
        return previous;
    return programs[i].act.sa_flags & SA_SIGINFO
               ? (sighandler_t)(void *)programs[i].act.sa_sigaction
               : programs[i].act.sa_handler;
}

uint64_t churn_stop_caught(void)
{
    return atomic_load_explicit(&caught, memory_order_relaxed);
}

void churn_stop_reset(void)
{
    atomic_store(&caught, 0);
}
