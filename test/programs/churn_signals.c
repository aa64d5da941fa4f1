/*
 * Run by test/t_churn_signals.sh, natively and under `churn run`:
 *   churn_signals catch         a handler for every signal a process can catch; prints
 *                               "ready PID", then "got SIG VALUE" for each signal it takes
 *                               (VALUE: sigqueue's integer, "-" for a plain kill) until its
 *                               stdin ends, then exits with status 3
 *   churn_signals wait          no handler: prints "ready PID" and reads stdin to its end,
 *                               then exits with status 3 (a signal acts as by default)
 *   churn_signals dispositions  prints the signals it started with ignored, and those it
 *                               started with blocked, one line each
 *   churn_signals group         counts SIGRTMIN+2; a child sends it to the whole process
 *                               group (kill(0, ...)) and exits, left unreaped (a zombie
 *                               whose parent /proc still names) until stdin ends, so that
 *                               churn can tell it is the program's; then "sent", and at each
 *                               SIGRTMIN+3 "count N": how many SIGRTMIN+2 it took until
 *                               then (real-time signals queue, so none merges); exits with
 *                               status 3 when stdin ends
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void put_int(char **p, long v)
{
    char digits[24];
    int n = 0;
    do
        digits[n++] = (char)('0' + v % 10);
    while ((v /= 10) > 0);
    while (n)
        *(*p)++ = digits[--n];
}

/* write(2) only: a handler may run inside stdio. */
static void on_signal(int sig, siginfo_t *info, void *ctx)
{
    (void)ctx;
    char line[64], *p = line;
    memcpy(p, "got ", 4);
    p += 4;
    put_int(&p, sig);
    *p++ = ' ';
    if (info->si_code == SI_QUEUE)
        put_int(&p, info->si_value.sival_int);
    else
        *p++ = '-';
    *p++ = '\n';
    ssize_t w = write(1, line, (size_t)(p - line));
    (void)w;
}

static volatile sig_atomic_t counted;

static void on_count(int sig)
{
    if (sig == SIGRTMIN + 2) {
        counted++;
        return;
    }
    char line[32] = "count ", *p = line + 6;
    put_int(&p, counted);
    *p++ = '\n';
    ssize_t w = write(1, line, (size_t)(p - line));
    (void)w;
}

static int read_to_end(void)
{
    char buf[256];
    for (;;) {
        ssize_t n = read(0, buf, sizeof buf);
        if (n == 0)
            return 3;
        if (n < 0)
            perror("read");
    }
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    if (!strcmp(argv[1], "dispositions")) {
        sigset_t blocked;
        sigprocmask(SIG_BLOCK, NULL, &blocked);
        fputs("ignored", stdout);
        for (int sig = 1; sig < NSIG; sig++) {
            struct sigaction sa;
            if (!sigaction(sig, NULL, &sa) && sa.sa_handler == SIG_IGN)
                printf(" %d", sig);
        }
        fputs("\nblocked", stdout);
        for (int sig = 1; sig < NSIG; sig++)
            if (sigismember(&blocked, sig) == 1)
                printf(" %d", sig);
        putchar('\n');
        return 0;
    }
    if (!strcmp(argv[1], "catch")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        /* glibc keeps two signals below SIGRTMIN for itself: sigaction refuses them */
        for (int sig = 1; sig < NSIG; sig++)
            if (sig != SIGKILL && sig != SIGSTOP)
                sigaction(sig, &sa, NULL);
    } else if (!strcmp(argv[1], "group")) {
        signal(SIGRTMIN + 2, on_count);
        signal(SIGRTMIN + 3, on_count);
        printf("ready %d\n", (int)getpid());
        fflush(stdout);
        pid_t c = fork();
        if (c == 0) {
            kill(0, SIGRTMIN + 2);
            _exit(0);
        }
        /* WNOWAIT: the child ended and stays in /proc, a zombie of the program, until the
           program ends; a sender already reaped when churn looks cannot be told from one
           outside the tree (docs/reliability.md) */
        siginfo_t si;
        if (c < 0 || waitid(P_PID, (id_t)c, &si, WEXITED | WNOWAIT))
            return 2;
        printf("sent\n");
        fflush(stdout);
        return read_to_end();
    } else if (strcmp(argv[1], "wait")) {
        return 2;
    }
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    return read_to_end();
}
