/*
 * Every way a program sets and reads the dispositions of the signals libchurn keeps a
 * flushing handler for, printed one line per call so that a run under the shim can be
 * compared with a run without it: the previous handler each call returns, the handler,
 * flags and mask read back after it (glibc's sigset, sysv_signal and bsd_signal install
 * through its internal sigaction), an SA_SIGINFO handler's si_code, write's EPIPE with SIGPIPE
 * ignored, a handler taking a signal raised 10000 times.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The old interfaces are the point here. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
extern sighandler_t bsd_signal(int sig, sighandler_t handler); /* declared for XPG4 only */

static volatile sig_atomic_t last, code, count;

static void one(int sig) { last = sig; }
static void two(int sig) { last = -sig; }
static void counting(int sig) { (void)sig; count++; }
static void with_info(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    last = sig;
    code = si->si_code;
}

static const char *name(sighandler_t f)
{
    if (f == SIG_DFL)
        return "SIG_DFL";
    if (f == SIG_IGN)
        return "SIG_IGN";
    if (f == SIG_ERR)
        return "SIG_ERR";
    if (f == one)
        return "one";
    if (f == two)
        return "two";
    if (f == counting)
        return "counting";
    if ((void *)f == (void *)with_info)
        return "with_info";
    return "a handler the program never set";
}

static void read_back(const char *after, int sig)
{
    struct sigaction now;
    memset(&now, 0, sizeof now);
    int rc = sigaction(sig, NULL, &now);
    printf("  after %s: rc=%d %s flags=%#x mask has USR1=%d, has %d=%d\n", after, rc,
           name(now.sa_handler), (unsigned)now.sa_flags, sigismember(&now.sa_mask, SIGUSR1),
           sig, sigismember(&now.sa_mask, sig));
}

#define SET(call, sig)                                                                       \
    do {                                                                                     \
        printf("%s -> %s\n", #call, name(call));                                             \
        read_back(#call, sig);                                                               \
    } while (0)

int main(void)
{
    read_back("start", SIGTERM);
    SET(signal(SIGTERM, one), SIGTERM);
    SET(signal(SIGTERM, two), SIGTERM);
    SET(signal(SIGTERM, SIG_DFL), SIGTERM);
    SET(signal(SIGTERM, SIG_IGN), SIGTERM);
    SET(signal(SIGTERM, one), SIGTERM);
    kill(getpid(), SIGTERM);
    printf("SIGTERM taken by %d\n", (int)last);

    SET(sigset(SIGQUIT, one), SIGQUIT);
    SET(sysv_signal(SIGALRM, one), SIGALRM);
    SET(bsd_signal(SIGSEGV, one), SIGSEGV);
    printf("siginterrupt(SIGBUS, 1) -> %d\n", siginterrupt(SIGBUS, 1));
    read_back("siginterrupt", SIGBUS);

    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_handler = SIG_DFL;
    act.sa_flags = SA_RESTART;
    sigaddset(&act.sa_mask, SIGUSR1);
    printf("sigaction(SIGFPE, default with SA_RESTART and USR1 masked) -> %d\n",
           sigaction(SIGFPE, &act, NULL));
    read_back("sigaction", SIGFPE);
    SET(signal(SIGILL, SIG_DFL), SIGILL);

    memset(&act, 0, sizeof act);
    act.sa_sigaction = with_info;
    act.sa_flags = SA_SIGINFO;
    struct sigaction old;
    printf("sigaction(SIGHUP, with_info) -> %d\n", sigaction(SIGHUP, &act, &old));
    printf("  previous: %s\n", name(old.sa_handler));
    read_back("sigaction", SIGHUP);
    raise(SIGHUP);
    printf("SIGHUP taken by %d, si_code %d\n", (int)last, (int)code);

    SET(signal(SIGPIPE, SIG_IGN), SIGPIPE);
    int fds[2];
    if (pipe(fds))
        return 1;
    close(fds[0]);
    errno = 0;
    ssize_t n = write(fds[1], "x", 1);
    printf("write to a closed pipe: %zd errno=%d\n", n, errno);

    SET(signal(SIGINT, counting), SIGINT);
    for (int i = 0; i < 10000; i++)
        raise(SIGINT);
    printf("SIGINT taken %d times\n", (int)count);
    return 0;
}
