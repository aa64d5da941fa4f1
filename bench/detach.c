/*
 * detach PROGRAM [ARG...]: starts PROGRAM as a child, writes its pid as a decimal line to
 * file descriptor 3, and exits at once without waiting for it.
 *
 * Why: Linux carries a process's peak RSS (ru_maxrss) across exec, and a child forked or
 * vforked by the benchmark starts from the Python interpreter's address space, so every
 * direct child of bench.py reports at least bench.py's own ~13 MiB.  A child forked by this
 * small program starts with a fresh peak.  bench.py is a child subreaper
 * (PR_SET_CHILD_SUBREAPER), so PROGRAM is reparented to it when this program exits, and
 * bench.py reaps PROGRAM itself with os.wait4 to read its rusage.
 *
 * The preload for PROGRAM comes as DETACH_LD_PRELOAD and becomes LD_PRELOAD only in the child,
 * so that a tracer is not loaded into this launcher too (libchurn would trace the launcher and
 * follow its fork into a second trace file).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: detach PROGRAM [ARG...]  (pid written to fd 3)\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "detach: fork: %s\n", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        close(3);
        const char *preload = getenv("DETACH_LD_PRELOAD");
        if (preload) {
            if (setenv("LD_PRELOAD", preload, 1) != 0 || unsetenv("DETACH_LD_PRELOAD") != 0) {
                fprintf(stderr, "detach: cannot set LD_PRELOAD: %s\n", strerror(errno));
                _exit(127);
            }
        }
        execv(argv[1], argv + 1);
        fprintf(stderr, "detach: cannot run %s: %s\n", argv[1], strerror(errno));
        _exit(127);
    }
    if (dprintf(3, "%ld\n", (long)pid) < 0) {
        fprintf(stderr, "detach: cannot report the pid on fd 3: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}
