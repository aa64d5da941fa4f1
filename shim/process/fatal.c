/*
 * Fatal signals: on SEGV, BUS, ILL, FPE and ABRT, and on the signals whose default ends the
 * process (TERM, INT, HUP, QUIT, PIPE, ALRM: `kill`, Ctrl-C, a closed pipe), the last pass
 * runs before the process goes, then the signal does what it would have done.  Without it a
 * server stopped with `kill` lost what it had not flushed yet (CHURN_FLUSH_MS), and a short
 * run its whole trace.  Our handler is installed only where the
 * program has none, and it stays invisible: a program that asks sees the default it would see
 * without us (python reports a handler it does not know as None, and a program that chains to
 * the previous handler must not find ours), setting the default keeps ours (it does the
 * default once the trace is flushed), and the program's own handler replaces ours (behind
 * stop.c's, for the signals that ask to stop).
 */
#include <dlfcn.h>
#include <signal.h>
#include <string.h>

#include "shim.h"

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT,
                                    SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGALRM};
#define FATAL_COUNT (sizeof fatal_signals / sizeof *fatal_signals)

/* Which of fatal_signals still have our handler. */
static _Atomic int ours[FATAL_COUNT];

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef sighandler_t (*signal_fn)(int, sighandler_t);

static sigaction_fn next_sigaction(void)
{
    static void *_Atomic next;
    return (sigaction_fn)churn_next_of(&next, "sigaction");
}

static signal_fn next_signal(void)
{
    static void *_Atomic next;
    return (signal_fn)churn_next_of(&next, "signal");
}

static void on_fatal(int sig);

/* Our slot for sig while our handler is the one installed.  sigset, sysv_signal, bsd_signal
   and siginterrupt install through glibc's internal sigaction, which passes by ours: the
   kernel's answer is what says whether the program took the signal over. */
static int slot(int sig)
{
    for (size_t i = 0; i < FATAL_COUNT; i++) {
        if (fatal_signals[i] != sig || !atomic_load(&ours[i]))
            continue;
        struct sigaction now;
        if (!next_sigaction()(sig, NULL, &now) && now.sa_handler == on_fatal)
            return (int)i;
        atomic_store(&ours[i], 0);
    }
    return -1;
}

/* What the program would read back while our handler stands in for the default: the
   default with the flags and mask it last set along with it (glibc adds SA_RESTORER to
   every disposition it sets; none at all before the first). */
static struct sigaction shown[FATAL_COUNT];

#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000 /* the kernel's (asm/signal.h clashes with signal.h) */
#endif

static void show_default(int i, const struct sigaction *act)
{
    shown[i] = *act;
    shown[i].sa_handler = SIG_DFL;
    shown[i].sa_flags |= SA_RESTORER;
    shown[i].sa_restorer = NULL;
}

static void on_fatal(int sig)
{
    /* SA_RESETHAND already restored the default; raising again applies it. */
    int i = slot(sig);
    if (i >= 0)
        atomic_store(&ours[i], 0);
    if (!churn_writer_is_self())
        churn_finish(CHURN_EXIT_SIGNAL, sig);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    next_sigaction()(sig, &dfl, NULL);
    raise(sig);
}

void churn_fatal_install(void)
{
    /* Looked up now: dlsym is no call for a signal handler to make. */
    next_signal();
    for (size_t i = 0; i < FATAL_COUNT; i++) {
        struct sigaction old;
        if (next_sigaction()(fatal_signals[i], NULL, &old) || old.sa_handler != SIG_DFL)
            continue; /* the program's own handler stays in charge */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal;
        sa.sa_flags = SA_RESETHAND | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        if (!next_sigaction()(fatal_signals[i], &sa, NULL))
            atomic_store(&ours[i], 1);
    }
}

void churn_fatal_uninstall(void)
{
    for (size_t i = 0; i < FATAL_COUNT; i++)
        if (slot(fatal_signals[i]) == (int)i &&
            !next_sigaction()(fatal_signals[i], &shown[i], NULL))
            atomic_store(&ours[i], 0);
}

static int asks_default(const struct sigaction *act)
{
    return !(act->sa_flags & SA_SIGINFO) && act->sa_handler == SIG_DFL;
}

CHURN_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    int i = slot(sig);
    int stop = churn_stop_wants(sig, act);
    struct sigaction before;
    if (i >= 0) {
        before = shown[i];
    } else {
        /* what is installed, read back as the program's own when ours is in front of it */
        struct sigaction installed;
        int rc = next_sigaction()(sig, NULL, &installed);
        if (rc)
            return rc;
        if (!churn_stop_shown(sig, &installed, &before)) {
            if (!stop)
                return next_sigaction()(sig, act, old);
            before = installed;
        }
    }
    if (stop) {
        int rc = churn_stop_install(sig, act, next_sigaction());
        if (rc)
            return rc;
        if (i >= 0)
            atomic_store(&ours[i], 0);
    } else if (act && i >= 0 && asks_default(act)) {
        show_default(i, act);
    } else if (act) {
        int rc = next_sigaction()(sig, act, NULL);
        if (rc)
            return rc;
        if (i >= 0)
            atomic_store(&ours[i], 0);
    }
    if (old)
        *old = before;
    return 0;
}

/* Signals siginterrupt made interrupt system calls (glibc keeps its own set for signal). */
static _Atomic uint64_t interrupting;

/* glibc's siginterrupt reads the disposition and sets it back with SA_RESTART changed,
   through its internal sigaction: over ours, whose flags the program must not see, the
   change goes to the disposition shown instead. */
CHURN_API int siginterrupt(int sig, int interrupt)
{
    static void *_Atomic next;
    int (*real)(int, int) = (int (*)(int, int))churn_next_of(&next, "siginterrupt");
    int i = slot(sig);
    int rc = real(sig, interrupt);
    if (rc || sig < 1 || sig > 63)
        return rc;
    if (interrupt)
        atomic_fetch_or(&interrupting, (uint64_t)1 << sig);
    else
        atomic_fetch_and(&interrupting, ~((uint64_t)1 << sig));
    if (i >= 0) {
        struct sigaction act = shown[i];
        act.sa_flags = interrupt ? act.sa_flags & ~SA_RESTART : act.sa_flags | SA_RESTART;
        show_default(i, &act);
    }
    return rc;
}

/* glibc's signal(): the signal blocked in its handler, calls restarted unless siginterrupt
   said otherwise. */
static void as_signal_sets(struct sigaction *act, int sig, sighandler_t handler)
{
    memset(act, 0, sizeof *act);
    act->sa_handler = handler;
    sigaddset(&act->sa_mask, sig);
    act->sa_flags = atomic_load(&interrupting) >> sig & 1 ? 0 : SA_RESTART;
}

CHURN_API sighandler_t signal(int sig, sighandler_t handler)
{
    struct sigaction act, old;
    as_signal_sets(&act, sig, handler);
    if (churn_stop_wants(sig, &act)) { /* ours in front of it, through sigaction above */
        if (sigaction(sig, &act, &old))
            return SIG_ERR;
        return old.sa_flags & SA_SIGINFO ? (sighandler_t)(void *)old.sa_sigaction
                                         : old.sa_handler;
    }
    int i = slot(sig);
    if (i < 0)
        return churn_stop_previous(sig, next_signal()(sig, handler));
    if (handler != SIG_DFL) {
        if (next_signal()(sig, handler) == SIG_ERR)
            return SIG_ERR;
        atomic_store(&ours[i], 0);
    } else {
        show_default(i, &act);
    }
    return SIG_DFL;
}

/* The other ways to set a handler: the program's call goes through as it is, and only the
   previous handler, when it was ours, reads as the default. */
#define HIDDEN_PREVIOUS(name)                                                                  \
    CHURN_API sighandler_t name(int sig, sighandler_t handler)                                 \
    {                                                                                          \
        static void *_Atomic next;                                                             \
        sighandler_t previous = ((signal_fn)churn_next_of(&next, #name))(sig, handler);        \
        return previous == on_fatal ? SIG_DFL : churn_stop_previous(sig, previous);            \
    }

HIDDEN_PREVIOUS(sigset)
HIDDEN_PREVIOUS(sysv_signal)
HIDDEN_PREVIOUS(bsd_signal)
