/*
 * What a program sees of the dispositions of SEGV, BUS, ILL, FPE and ABRT, where libchurn
 * keeps a handler that flushes the trace: the default, exactly as without libchurn, through
 * sigaction and signal alike; its own handler once it sets one; the default again once it
 * sets that.  `sighide abort` then sets SIGABRT to the default itself and aborts: the process
 * must still die of SIGABRT.
 */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "probe.h"

static const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

static void mine(int sig) { (void)sig; }

static void expect_default(int sig, const char *when)
{
    struct sigaction old;
    memset(&old, 0xff, sizeof old);
    if (sigaction(sig, NULL, &old))
        die("sigaction(%d) failed", sig);
    if (old.sa_handler != SIG_DFL)
        die("signal %d %s: handler %p, not the default", sig, when, (void *)old.sa_handler);
}

int main(int argc, char **argv)
{
    keep(malloc(100));
    if (argc > 1 && !strcmp(argv[1], "abort")) {
        signal(SIGABRT, SIG_DFL);
        abort();
    }
    for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++) {
        int sig = fatal[i];
        expect_default(sig, "at start");
        if (signal(sig, SIG_DFL) != SIG_DFL)
            die("signal(%d, SIG_DFL) did not return the default", sig);
        expect_default(sig, "after signal(SIG_DFL)");
        if (signal(sig, mine) != SIG_DFL)
            die("signal(%d, handler) did not return the default", sig);
        struct sigaction now;
        if (sigaction(sig, NULL, &now) || now.sa_handler != mine)
            die("signal %d: the program's handler is not in place", sig);
        struct sigaction dfl, old;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        if (sigaction(sig, &dfl, &old) || old.sa_handler != mine)
            die("signal %d: sigaction did not return the program's handler", sig);
        expect_default(sig, "after the program set it back");
    }
    printf("every fatal signal looked untouched\n");
    return 0;
}
