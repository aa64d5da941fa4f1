/*
 * The index of a traced tree: with CHURN_OUT=NAME.zst, NAME.index beside the first process's
 * trace gets a line when a process image starts tracing and one when it ends, so that
 * `churn run` and `churn analyze` can say which file is which process (a script in front of
 * the program, a shell's subshells, a server's workers):
 *
 *   start TAB pid TAB ppid TAB n TAB trace TAB exe TAB argv
 *   end TAB pid TAB n TAB how TAB detail TAB argv
 *
 * n counts the execs of pid that led to the image (0: the image the tree or a fork started
 * with); an image followed by a start of the same pid with n + 1 ended in that exec.  how is
 * the trace's CHURN_EXIT_* number, detail its status or signal.  The end line's argv is the
 * command line at the end: a server's processes name themselves after the fork (nginx's
 * "nginx: worker process", postgres's "postgres: checkpointer") by writing over their argv,
 * trailing spaces and NULs of that title left out.  The words of argv are
 * separated by spaces; in every field a backslash, tab, newline or (in argv) space is written
 * \\, \t, \n, \s.  argv is cut at LINE_MAX bytes with a final "...".
 *
 * Each line is one write with O_APPEND, so the lines of concurrent processes never mix.  The
 * descriptor the start line opened is kept (one of libchurn's own, shim/base/fds.c) for the end
 * line: a process that changes user after it starts (nginx's workers run as nobody) could
 * not open the index again.  Only under a descriptor limit of 1024 or more: under a low one
 * a traced process keeps at most the trace's own descriptors (test/t_low_fds.sh), and the
 * end line opens the index again.  No
 * allocation: start runs once per image (in the bring-up or in a fork child, one thread) and
 * end once (churn_finish), each with static buffers and plain system calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim.h"

#define LINE_MAX_BYTES 4000

static char line[LINE_MAX_BYTES + 64];
static size_t len;
static char path[sizeof churn_opt.out + 8];
static int image = -1; /* this image's n; -1: no start line was written */
static _Atomic int kept = -1; /* the index, open since the start line */

static void put_char(char c)
{
    if (len < sizeof line)
        line[len++] = c;
}

static void put(const char *s, size_t n, int word)
{
    for (size_t i = 0; i < n && len < LINE_MAX_BYTES; i++) {
        char c = s[i];
        if (c == '\\' || c == '\t' || c == '\n' || (word && c == ' ')) {
            put_char('\\');
            put_char(c == '\\' ? '\\' : c == '\t' ? 't' : c == '\n' ? 'n' : 's');
        } else {
            put_char(c);
        }
    }
}

static void put_str(const char *s)
{
    put(s, strlen(s), 0);
}

static void put_num(long long v)
{
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%lld", v);
    put(buf, (size_t)n, 0);
}

/* argv from /proc/self/cmdline: NUL-separated words.  With title set, a program's own title
   written over its argv: its padding (NULs, spaces) is not words. */
static void put_argv(int title)
{
    static char cmd[LINE_MAX_BYTES];
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, cmd, sizeof cmd) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return;
    if (title && n < (ssize_t)sizeof cmd) {
        while (n > 0 && (cmd[n - 1] == '\0' || cmd[n - 1] == ' '))
            n--;
        if (!n)
            return;
        cmd[n++] = '\0';
    }
    size_t start = 0;
    for (size_t i = 0; i < (size_t)n; i++)
        if (!cmd[i]) {
            if (start)
                put_char(' ');
            put(cmd + start, i - start, 1);
            start = i + 1;
        }
    if (start < (size_t)n || n == (ssize_t)sizeof cmd || len >= LINE_MAX_BYTES)
        put_str(" ...");
}

void churn_index_close(void)
{
    churn_fd_drop(&kept);
}

/* The start line opens the index (a fork child's copy of its parent's descriptor goes) and
   keeps it; the end line writes there, or opens it when there is none. */
static void append(int truncate, int start)
{
    put_char('\n');
    if (truncate)
        unlink(path); /* a previous run's index, by the same name */
    if (start)
        churn_index_close();
    /* the kept one, unless the program took its number over past libc (fds.c): then again */
    int fd = churn_fd_use(&kept);
    if (fd < 0) {
        churn_fd_keep(&kept,
                      open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
        fd = churn_fd_use(&kept);
    }
    ssize_t w = fd >= 0 ? write(fd, line, len) : -1;
    int err = fd < 0 || w < 0 ? errno : ENOSPC;
    if (fd >= 0)
        churn_fd_done(&kept);
    if (w != (ssize_t)len) {
        static int said;
        if (!said++)
            churn_log("cannot write the index %s: %s; the traces do not depend on it", path,
                      strerror(err));
    }
    struct rlimit r;
    if (!start || getrlimit(RLIMIT_NOFILE, &r) || r.rlim_cur < 1024)
        churn_index_close();
}

void churn_index_start(void)
{
    /* The tree's name: CHURN_OUT as the first process left it (absolute) for everyone. */
    const char *out = getenv("CHURN_OUT");
    if (!out || !*out)
        return;
    size_t n = strlen(out);
    size_t stem = n > 4 && !strcmp(out + n - 4, ".zst") ? n - 4 : n;
    if (snprintf(path, sizeof path, "%.*s.index", (int)stem, out) >= (int)sizeof path)
        return;
    pid_t me = getpid();
    const char *exec_of = getenv("CHURN_EXEC_OF");
    long pid_of = 0;
    int count = 0;
    image = exec_of && sscanf(exec_of, "%ld.%d", &pid_of, &count) == 2 && pid_of == me ? count
                                                                                          : 0;
    const char *root = getenv("CHURN_ROOT_PID");
    int first = image == 0 && root && atoi(root) == me;
    char exe[sizeof churn_opt.out];
    ssize_t e = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[e > 0 ? e : 0] = '\0';
    len = 0;
    put_str("start");
    put_char('\t');
    put_num(me);
    put_char('\t');
    put_num(getppid());
    put_char('\t');
    put_num(image);
    put_char('\t');
    put_str(churn_opt.out);
    put_char('\t');
    put_str(exe);
    put_char('\t');
    put_argv(0);
    append(first, 1);
}

void churn_index_end(int how, int detail)
{
    if (image < 0)
        return;
    len = 0;
    put_str("end");
    put_char('\t');
    put_num(getpid());
    put_char('\t');
    put_num(image);
    put_char('\t');
    put_num(how);
    put_char('\t');
    put_num(detail);
    put_char('\t');
    put_argv(1);
    append(0, 0);
    churn_index_close();
}
