/*
 * churn: the one command a person types.  `churn run PROGRAM` preloads the libchurn.so that
 * was installed with this churn, runs PROGRAM, passes its exit status through and says where
 * the trace is, and which processes of its tree still run (a daemon); `churn analyze` is
 * churn-analyze.
 *
 * Written in C, not sh: it finds its own location through /proc/self/exe (symlinks resolved
 * by the kernel, whatever the working directory), checks every option value with the shim's
 * own parser (it includes shim/base/options.c, so a value churn accepts is one the shim
 * accepts), forwards every signal a process sends it but not those the terminal sends to the
 * whole group (only siginfo tells them apart), stops when the program stops, and re-raises
 * the program's fatal signal on itself.  It runs outside the traced process, so none of the
 * shim's constraints apply here.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/options.c"
#include "base/util.h"
#include "churn/version.h"
#include "commands.h"
#include "live/serve.h"
#include "live/watch.h"
#include "read/reader.h"
#include "report/proctree.h"

#define EXIT_USAGE 2
#define LIST_MAX 8 /* descendants' traces named at the end of a run */
#define EXIT_SETUP 125
#define EXIT_NOEXEC 126
#define EXIT_NOTFOUND 127

static const char *self_name = "churn"; /* as typed, for the commands churn prints */

/* options.c reports through churn_log; here that is churn's own stderr line. */
void churn_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("churn: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("churn: ", stderr);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see `%s help`)\n", self_name);
    va_end(ap);
    return EXIT_USAGE;
}

/* The directory this executable is in. */
static int self_dir(char *dir, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", dir, size - 1);
    if (n <= 0 || (size_t)n >= size - 1)
        return -1;
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    return 0;
}

static int is_file(const char *path)
{
    return access(path, R_OK) == 0;
}

/* build/libchurn.so next to build/churn, or PREFIX/lib/libchurn.so for PREFIX/bin/churn. */
static int find_library(char *out, size_t size, const char *dir)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/libchurn.so", dir);
    if (!is_file(path))
        snprintf(path, sizeof path, "%s/../lib/libchurn.so", dir);
    if (!is_file(path) || !realpath(path, out) || strlen(out) >= size)
        return -1;
    return 0;
}

/* text from column col on, continuation lines at indent. */
static void print_wrapped(FILE *out, const char *text, int col, int indent, int width)
{
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        size_t len = strcspn(p, " ");
        if (!len)
            break;
        if (col > indent && col + 1 + (int)len > width) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', out);
            col++;
        }
        /* `code` spans are markdown in the tables; a terminal shows the words plain. */
        for (size_t i = 0; i < len; i++)
            if (p[i] != '`')
                fputc(p[i], out), col++;
        p += len;
    }
    fputc('\n', out);
}

static void help(FILE *out)
{
    fprintf(out, "churn %s: traces a program's allocations by epoch (libchurn)\n\n", CHURN_VERSION);
    for (size_t i = 0; i < sizeof churn_commands / sizeof churn_commands[0]; i++) {
        fprintf(out, "churn %s\n      ", churn_commands[i].usage);
        print_wrapped(out, churn_commands[i].help, 6, 6, 80);
    }
    fputs("\nrun OPTIONS (each sets a variable; `CHURN_HELP=1 churn run true` lists them all):\n",
          out);
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (!table[i].flag)
            continue;
        int col = fprintf(out, "  %-19s %s:", table[i].flag, table[i].name);
        print_wrapped(out, table[i].help, col, 22, 80);
    }
}

/* The table row a `churn run` option sets, by its flag's name (up to ' ' or '='). */
static const opt_row *row_of_flag(const char *name)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const char *f = table[i].flag;
        if (!f)
            continue;
        while (*f == '-')
            f++;
        size_t len = strcspn(f, " =");
        if (strlen(name) == len && !strncmp(f, name, len))
            return &table[i];
    }
    return NULL;
}

/* PATH from the root, its directory resolved (no "..", ".", or symlinked directory in what
   churn prints); a directory that does not exist is only joined to the working directory. */
static char *absolute(const char *path)
{
    char *out, dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (*base && strcmp(base, ".") && strcmp(base, "..")) {
        char *d = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
        int ok = d && realpath(d, dir);
        free(d);
        if (ok)
            return asprintf(&out, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", base) < 0 ? NULL
                                                                                    : out;
    }
    if (path[0] == '/')
        return strdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return NULL;
    return asprintf(&out, "%s/%s", cwd, path) < 0 ? NULL : out;
}

/* Why libchurn cannot write its trace at path (an absolute path), or NULL: it replaces a
   regular file there and refuses anything else (shim/record/outfile.c), and a file cannot be
   made in a directory that is missing or not writable.  Said before the program runs, not
   found out once it ran untraced. */
static const char *unwritable(const char *path, char *why, size_t size)
{
    struct stat st;
    if (!lstat(path, &st)) {
        const char *kind =
            S_ISREG(st.st_mode)    ? NULL
            : S_ISDIR(st.st_mode)  ? "a directory: the trace is a file; name one in it"
            : S_ISLNK(st.st_mode)  ? "a symbolic link: libchurn writes through none"
            : S_ISFIFO(st.st_mode) ? "a FIFO: a trace is written in place, not streamed"
                                   : "not a regular file but a device or a socket";
        if (!kind)
            return NULL;
        snprintf(why, size, "is %s", kind);
        return why;
    }
    if (errno != ENOENT) {
        snprintf(why, size, "cannot be created: %s", strerror(errno));
        return why;
    }
    const char *slash = strrchr(path, '/');
    char *dir = strndup(path, slash && slash != path ? (size_t)(slash - path) : 1);
    if (!dir)
        return NULL;
    int err = stat(dir, &st)             ? errno
              : !S_ISDIR(st.st_mode)     ? ENOTDIR
              : access(dir, W_OK | X_OK) ? errno
                                         : 0;
    if (err)
        snprintf(why, size, "cannot be created: %s: %s", dir, strerror(err));
    free(dir);
    return err ? why : NULL;
}

/* A shell or a script language's interpreter (by the executable's name, versions such as
   python3.11 included): a first image that exec'd a program, or started the one that
   allocated most, is then a script in front of it. */
static int is_interpreter(const char *exe)
{
    const char *base = exe ? strrchr(exe, '/') : NULL;
    base = base ? base + 1 : exe;
    if (!base)
        return 0;
    static const char *const names[] = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "busybox",
                                        "env", "python", "perl", "ruby", "node", "tclsh",
                                        "lua", "php"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        size_t n = strlen(names[i]);
        if (!strncmp(base, names[i], n) && (!base[n] || strspn(base + n, "0123456789.") ==
                                                             strlen(base + n)))
            return 1;
    }
    return 0;
}

/* A word for a shell command line: quoted unless it is plainly safe. */
static void put_shell_word(FILE *out, const char *w)
{
    if (*w && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                        "/._-+=:,@%") == strlen(w)) {
        fputs(w, out);
        return;
    }
    fputc('\'', out);
    for (; *w; w++)
        if (*w == '\'')
            fputs("'\\''", out);
        else
            fputc(*w, out);
    fputc('\'', out);
}

/* ---- signals: those sent to churn are the program's ---- */

static volatile pid_t child;
static struct sigaction started_with[NSIG]; /* churn's dispositions before set_forwarding */

/* A fault the kernel raises for the instruction that caused it. */
static int is_fault(int sig)
{
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL ||
           sig == SIGTRAP || sig == SIGSYS;
}

/* /proc/PID/stat from the state letter on (past the command name, which may hold anything),
   in buf; NULL when it cannot be read.  No stdio: the signal handler reads it too. */
static const char *proc_stat(long pid, char *buf, size_t size)
{
    char path[40] = "/proc/", digits[24], *p = path + 6;
    int n = 0;
    do
        digits[n++] = (char)('0' + pid % 10);
    while ((pid /= 10) > 0);
    while (n)
        *p++ = digits[--n];
    memcpy(p, "/stat", sizeof "/stat");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t len = fd >= 0 ? read(fd, buf, size - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (len <= 0)
        return NULL;
    buf[len] = '\0';
    const char *s = strrchr(buf, ')');
    return s && s[1] == ' ' && s[2] ? s + 2 : NULL;
}

/* Whether pid is root or one of its descendants (the parent of each, up to root, still
   there to be read). */
static int in_tree(long pid, long root)
{
    char buf[512];
    for (int depth = 0; pid > 1 && depth < 64; depth++) {
        if (pid == root)
            return 1;
        const char *s = proc_stat(pid, buf, sizeof buf);
        if (!s || s[1] != ' ')
            return 0;
        for (pid = 0, s += 2; *s >= '0' && *s <= '9'; s++) /* the parent, after the state */
            pid = pid * 10 + (*s - '0');
    }
    return 0;
}

static void forward(int sig, siginfo_t *info, void *ctx)
{
    (void)ctx;
    int saved = errno;
    pid_t c = child;
    /* Sent by a process (kill, sigqueue, tgkill): the program's.  Not one the program or a
       process it started sent: to churn, its parent, or to the whole process group, which
       the program is in, nor churn's own SIGPIPE (the kernel sends it as from churn).
       Whatever the kernel sends is left alone: the terminal's ^C, ^Z or hangup reach the
       whole foreground group, the program included; a fault of churn's own takes its
       default action when the faulting instruction runs again.  A sender already reaped
       is gone from /proc: it is passed on, as a `kill` command's would be, so a group
       signal from a child the program reaped at once can arrive twice (docs/reliability.md). */
    int sent =
        info->si_code == SI_USER || info->si_code == SI_QUEUE || info->si_code == SI_TKILL;
    if (sent && c > 0 && info->si_pid != getpid() && !in_tree(info->si_pid, c)) {
        if (info->si_code == SI_QUEUE)
            sigqueue(c, sig, info->si_value);
        else
            kill(c, sig);
    } else if (info->si_code > 0 && is_fault(sig)) {
        signal(sig, SIG_DFL);
    }
    errno = saved;
}

/* Every signal a process can catch is caught, and set contains them (glibc keeps two for
   itself, which sigaction refuses). */
static void set_forwarding(sigset_t *set)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = forward;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigemptyset(set);
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP && !sigaction(sig, &sa, &started_with[sig]))
            sigaddset(set, sig);
}

/* The dispositions churn started with, on every signal in set but keep. */
static void set_back(const sigset_t *set, int keep)
{
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != keep && sigismember(set, sig) == 1)
            sigaction(sig, &started_with[sig], NULL);
}

/* The state letter of /proc/PID/stat ('R', 'S', 'T'...), 0 when it cannot be read; with
   start, when the process started (field 22, clock ticks since boot). */
static char proc_state(long pid, long long *start)
{
    char buf[1024];
    const char *p = proc_stat(pid, buf, sizeof buf);
    if (!p)
        return 0;
    char state = *p;
    for (int field = 3; start && field < 22 && p; field++) /* the space before the next */
        p = strchr(p + 1, ' ');
    if (start)
        *start = p ? strtoll(p + 1, NULL, 10) : -1;
    return state;
}

/* The program stopped for job control (^Z, or TSTP, TTIN, TTOU sent to churn and passed
   on): churn stops too, so that the shell that ran churn sees the job stopped, and the
   shell's fg or bg, which continues the whole group, continues both (a CONT sent to churn
   alone is passed on).  Not when the program was continued meanwhile, nor for a SIGSTOP
   sent to the program's own pid (a debugger, cpulimit): what continues the program then
   would not continue churn. */
static void follow_stop(pid_t pid, int sig)
{
    if ((sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) && proc_state(pid, NULL) == 'T')
        kill(getpid(), SIGSTOP);
}

/* Dies of sig, as the program did: the shell that ran churn sees what it would have seen. */
static void die_of(int sig)
{
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none); /* the program dumped its own core, if any; not churn's */
    signal(sig, SIG_DFL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    sigprocmask(SIG_UNBLOCK, &s, NULL);
    raise(sig);
    exit(128 + sig);
}

/* ---- the tree's index (shim/record/index.c, read by analyzer/report/proctree.c) ---- */

static void print_image_header(FILE *out, int allocated)
{
    fprintf(out, "churn:   %-9s %-8s %-16s %s%s\n", "PID", "PARENT", "END",
            allocated ? "ALLOCATED  " : "", "COMMAND (TRACE)");
}

/* With f, the bytes the image allocated, in binary units as the reports print them; running:
   its process still runs (its end is not yet known). */
static void print_image(FILE *out, const churn_proctree *t, const churn_proc *im,
                        const churn_proc_figures *f, int running)
{
    char pid[32], end[48], bytes[32] = "-";
    snprintf(pid, sizeof pid, im->n ? "%ld.%d" : "%ld", im->pid, im->n);
    const char *file = strrchr(im->trace, '/');
    fprintf(out, "churn:   %-9s %-8ld %-16s ", pid, im->ppid,
            running ? "running" : churn_proc_end(t, im, end, sizeof end));
    if (f) {
        if (f->analyzed)
            churn_proc_bytes((double)f->alloc_bytes, bytes, sizeof bytes);
        fprintf(out, "%-10s ", bytes);
    }
    churn_proc_command(out, im->command, 60);
    fprintf(out, " (%s)\n", file ? file + 1 : im->trace);
}

static void print_command(const char *what, const char *option, const char *path)
{
    fprintf(stderr, "churn: %s: ", what);
    put_shell_word(stderr, self_name);
    fprintf(stderr, " analyze %s", option);
    put_shell_word(stderr, path);
    fputc('\n', stderr);
}

/* ---- what still runs when the process churn started has ended ---- */

static long long churn_started; /* when churn started, as proc_state reads it */

static int is_running(long pid, long long *start)
{
    char state = proc_state(pid, start);
    return state && state != 'Z' && state != 'X';
}

/* An image with no end line and no exec after it whose process runs: it daemonized, or was
   left running in the background, and goes on writing its trace.  (A process that started
   before churn has the number of another, ended, used again.) */
static int still_runs(const churn_proctree *t, const churn_proc *im)
{
    long long start;
    return !im->ended && !churn_proctree_find(t, im->pid, im->n + 1) &&
           is_running(im->pid, &start) && start >= churn_started;
}

/* Whether the environment pid was exec'd with holds entry; *image, which image of pid that
   exec began (the shim's CHURN_EXEC_OF=<pid>.<n>; 0 without one of pid's: a fork). */
static int environ_holds(long pid, const char *entry, int *image)
{
    char path[64], *word = NULL;
    size_t cap = 0;
    int found = 0;
    *image = 0;
    snprintf(path, sizeof path, "/proc/%ld/environ", pid);
    FILE *f = fopen(path, "re");
    while (f && getdelim(&word, &cap, '\0', f) > 0) {
        long of;
        int n;
        if (!strcmp(word, entry))
            found = 1;
        else if (sscanf(word, "CHURN_EXEC_OF=%ld.%d", &of, &n) == 2 && of == pid)
            *image = n;
    }
    free(word);
    if (f)
        fclose(f);
    return found;
}

/* A process forked just before the process churn started ended, or that exec'd then, may not
   have run since, and so not yet written its image's start line in the index: found by its
   environment, still the one churn passed (CHURN_OUT=out), it is waited for, 2 s at most,
   until that line is there or it has ended.  (A process whose parent wrote over that
   environment, as one that sets its title, cannot be found so; its line is there unless it
   was forked at that very moment.) */
static void wait_for_lines(const char *out, const char *index)
{
    char *entry;
    if (!churn_opt.fork_follow || asprintf(&entry, "CHURN_OUT=%s", out) < 0)
        return;
    long *v = NULL;
    size_t n = 0, cap = 0;
    DIR *d = opendir("/proc");
    struct dirent *de;
    while (d && (de = readdir(d))) {
        char *end;
        long long start;
        int image;
        long p = strtol(de->d_name, &end, 10);
        if (*end || p <= 0 || p == getpid() || !is_running(p, &start) ||
            start < churn_started || !environ_holds(p, entry, &image))
            continue;
        if (n == cap)
            v = churn_xrealloc(v, (cap = cap ? 2 * cap : 64) * sizeof *v);
        v[n++] = p;
    }
    if (d)
        closedir(d);
    /* Each round asks each process which image it runs: a child of a shell that has just
       written its line may exec the next moment.  Done after two rounds in a row, 10 ms
       apart, find every image in the index. */
    for (int round = 0, calm = 0; n && calm < 2 && round < 200; round++) {
        churn_proctree t;
        int have = !churn_proctree_load(index, &t), image;
        size_t kept = 0, missing = 0;
        for (size_t i = 0; i < n; i++) {
            if (!is_running(v[i], NULL) || !environ_holds(v[i], entry, &image))
                continue;
            v[kept++] = v[i];
            missing += !(have && churn_proctree_find(&t, v[i], image));
        }
        if (have)
            churn_proctree_free(&t);
        n = kept;
        calm = missing ? 0 : calm + 1;
        if (n && calm < 2)
            usleep(10000);
    }
    free(entry);
    free(v);
}

/* After the table: the images whose processes still run, where their traces go on, and how
   to follow them. */
static void report_running(const churn_proctree *t, const char *runs, pid_t pid,
                           const char *out)
{
    size_t n = 0;
    const churn_proc *first = NULL;
    for (size_t i = 0; i < t->n; i++)
        if (runs[i] && !n++)
            first = &t->v[i];
    if (!n)
        return;
    fprintf(stderr,
            "churn: pid %d that churn started has ended, and %zu process%s of its tree "
            "still run%s (%s daemonized, or %s left running); %s traced until it ends:\n",
            (int)pid, n, n > 1 ? "es" : "", n > 1 ? "" : "s", n > 1 ? "they" : "it",
            n > 1 ? "were" : "was", n > 1 ? "each is" : "it is");
    for (size_t i = 0, shown = 0; i < t->n && shown < LIST_MAX; i++) {
        if (!runs[i])
            continue;
        shown++;
        fprintf(stderr, "churn:   pid %ld (", t->v[i].pid);
        churn_proc_command(stderr, t->v[i].command, 60);
        fprintf(stderr, "), traced into %s\n", t->v[i].trace);
    }
    if (n > LIST_MAX) {
        fprintf(stderr, "churn:   ... and %zu more: ", n - LIST_MAX);
        put_shell_word(stderr, self_name);
        fputs(" analyze --list ", stderr);
        put_shell_word(stderr, out);
        fputc('\n', stderr);
    }
    fprintf(stderr, "churn: analyze what %s traced so far with: ", n > 1 ? "one" : "it");
    put_shell_word(stderr, self_name);
    fputs(" analyze ", stderr);
    put_shell_word(stderr, first->trace);
    fprintf(stderr, "; its trace is complete once it ends (kill %ld)\n", first->pid);
}

static const churn_proc_figures *by_bytes_figures;

static int by_bytes(const void *x, const void *y)
{
    size_t i = *(const size_t *)x, j = *(const size_t *)y;
    const churn_proc_figures *f = by_bytes_figures;
    uint64_t a = f[i].analyzed ? f[i].alloc_bytes : 0, b = f[j].analyzed ? f[j].alloc_bytes : 0;
    if (a != b)
        return a < b ? 1 : -1;
    return i < j ? -1 : i > j;
}

/* After a run: the trace of the image that allocated most (the program, past a script in
   front of it that exec'd it or ran it as a child), the command that analyzes it and the one
   that analyzes the whole tree, and the images that allocated most. */
/* How long before end_ns (CLOCK_MONOTONIC, when churn saw the process end) the trace's last
   checkpoint was made, in ms; -1 when the trace does not end with an open segment. */
static double checkpoint_before(const char *trace, uint64_t end_ns)
{
    churn_warnings w = {0};
    char err[256];
    churn_trace *t = churn_trace_open(trace, &w, err, sizeof err);
    double ms = -1;
    uint8_t *buf = NULL;
    size_t cap = 0, len;
    size_t last = t ? churn_trace_segments(t) - 1 : 0;
    if (t && churn_trace_info_of(t)->ends_open &&
        !churn_trace_decompress(t, last, &buf, &cap, &len, err, sizeof err)) {
        uint64_t at = churn_trace_info_of(t)->checkpoint_ns;
        ms = end_ns > at ? (double)(end_ns - at) / 1e6 : 0;
    }
    free(buf);
    churn_trace_close(t);
    churn_warnings_free(&w);
    return ms;
}

/* The last image ended without an exit libchurn saw: what its trace holds, and, measured
   against when churn saw the end, the most it lacks. */
static void say_unseen_end(const char *trace, int status, uint64_t end_ns)
{
    char how[96];
    if (WIFEXITED(status))
        snprintf(how, sizeof how, "ended (status %d) by an exit_group system call made inline, "
                 "which libchurn cannot see", WEXITSTATUS(status));
    else
        snprintf(how, sizeof how, "was killed (signal %d), which libchurn cannot see",
                 WTERMSIG(status));
    double ms = checkpoint_before(trace, end_ns);
    if (ms >= 0)
        fprintf(stderr, "churn: the process %s: the trace has no exit record; it holds "
                        "everything up to its last checkpoint, %.1f ms before the process "
                        "ended, and lacks what came after it\n", how, ms);
    else
        fprintf(stderr, "churn: the process %s: the trace has no exit record and lacks what "
                        "came after its last segment was written\n", how);
}

/* The file at path is not the one before was taken of: it was made or written since. */
static int changed_since(const char *path, const struct stat *before)
{
    struct stat now;
    if (stat(path, &now))
        return 0;
    return !before || now.st_dev != before->st_dev || now.st_ino != before->st_ino ||
           now.st_ctim.tv_sec != before->st_ctim.tv_sec ||
           now.st_ctim.tv_nsec != before->st_ctim.tv_nsec;
}

/* before: what out was before the run, NULL when there was nothing. */
static void report_traces(const char *out, const struct stat *before, pid_t pid, int status,
                          uint64_t end_ns)
{
    char *index = churn_proctree_index_of(out);
    churn_proctree t;
    wait_for_lines(out, index);
    if (churn_proctree_load(index, &t)) {
        if (changed_since(out, before)) {
            fprintf(stderr, "churn: trace in %s\n", out);
            print_command("analyze it with", "", out);
        } else {
            fprintf(stderr, "churn: no trace was written: libchurn said why above, or it "
                            "never ran in the program (a static or setuid executable)\n");
        }
        free(index);
        return;
    }
    const churn_proc *own = churn_proctree_last(&t, pid);
    char *runs = churn_xcalloc(t.n, 1);
    churn_proc_figures *f = NULL;
    const churn_proc *most = NULL;
    if (t.n > 1 || !own) {
        /* Every image is read once to find the one that allocated most: what a shell
           script in front of the program cannot tell us otherwise (nor, when the process
           churn started is not traced, which of its descendants' traces to name). */
        f = churn_xcalloc(t.n, sizeof *f);
        for (size_t i = 0; i < t.n; i++) {
            churn_proc_measure(t.v[i].trace, &f[i]);
            churn_proc_take_exit(&t.v[i], &f[i]);
        }
        for (size_t i = 0; i < t.n; i++)
            runs[i] = (char)still_runs(&t, &t.v[i]);
        long m = churn_proctree_most_allocated(&t, f);
        most = m >= 0 ? &t.v[m] : NULL;
    }
    const churn_proc *chosen = most ? most : own;
    const churn_proc *first = churn_proctree_find(&t, pid, 0);
    /* only a script interpreter's first image makes the question worth asking */
    const char *script = first && is_interpreter(first->exe) ? " (a script in front of the "
                                                               "program?)"
                                                             : "";
    if (own && own->n > 0 && chosen == own)
        fprintf(stderr, "churn: pid %d exec'd %d time(s)%s; the trace below is of its last "
                        "image, %s\n",
                (int)pid, own->n, script, own->exe);
    if (most && !own) {
        char p[32];
        snprintf(p, sizeof p, most->n ? "%ld.%d" : "%ld", most->pid, most->n);
        fprintf(stderr, "churn: pid %d that churn started is not traced (libchurn said why "
                        "above); the trace below is of pid %s, in its tree: %.60s%s\n",
                (int)pid, p, most->command, strlen(most->command) > 60 ? "..." : "");
    }
    if (most && own && most != own) {
        char bytes[32], p[32];
        snprintf(p, sizeof p, most->n ? "%ld.%d" : "%ld", most->pid, most->n);
        churn_proc_bytes((double)f[most - t.v].alloc_bytes, bytes, sizeof bytes);
        fprintf(stderr, "churn: the image that allocated most is pid %s (%s), not pid %d "
                        "that churn started%s: %.60s%s\n",
                p, bytes, (int)pid, *script ? script : " (one of the processes it started)",
                most->command, strlen(most->command) > 60 ? "..." : "");
    }
    const char *trace = chosen ? chosen->trace : out;
    fprintf(stderr, "churn: trace in %s\n", trace);
    /* Its last image recorded no end: it left by an exit_group libchurn could not see, or a
       signal no process sees (SIGKILL), and what came after the last checkpoint is lost. */
    if (own && !own->ended && own->trace)
        say_unseen_end(own->trace, status, end_ns);
    print_command("analyze it with", "", trace);
    if (t.n > 1) {
        print_command("the whole tree", "--tree ", index);
        fprintf(stderr, "churn: %zu process image(s) traced, listed in %s:\n", t.n, index);
        size_t *order = churn_xcalloc(t.n, sizeof *order);
        for (size_t i = 0; i < t.n; i++)
            order[i] = i;
        by_bytes_figures = f;
        qsort(order, t.n, sizeof *order, by_bytes);
        print_image_header(stderr, 1);
        size_t shown = t.n < LIST_MAX ? t.n : LIST_MAX;
        for (size_t i = 0; i < shown; i++)
            print_image(stderr, &t, &t.v[order[i]], &f[order[i]], runs[order[i]]);
        if (t.n > shown) {
            fprintf(stderr, "churn:   ... and %zu more: ", t.n - shown);
            put_shell_word(stderr, self_name);
            fputs(" analyze --list ", stderr);
            put_shell_word(stderr, out);
            fputc('\n', stderr);
        }
        free(order);
    }
    report_running(&t, runs, pid, out);
    free(runs);
    free(f);
    churn_proctree_free(&t);
    free(index);
}

/* The options run and attach share: each but -o and --help sets the CHURN_* variable of
   its table row (OPT_FLAG); OPT_FOR is attach's --for. */
enum { OPT_FLAG = 256, OPT_FOR };
#define TRACE_OPTIONS                                                                      \
    {"output", required_argument, NULL, 'o'},                                              \
    {"epoch-at", required_argument, NULL, OPT_FLAG},                                       \
    {"epoch-ms", required_argument, NULL, OPT_FLAG},                                       \
    {"epoch-signal", required_argument, NULL, OPT_FLAG},                                   \
    {"sample-stacks", required_argument, NULL, OPT_FLAG},                                  \
    {"sample-bytes", required_argument, NULL, OPT_FLAG},                                   \
    {"events", required_argument, NULL, OPT_FLAG}, {"help", no_argument, NULL, 'h'}

/* node and CPython name their generated code in a perf map (/tmp/perf-<pid>.map) when told
   to; the shim copies the entries its stacks use into the trace (shim/record/codemap.c).
   Set for the whole tree (descendants inherit the environment), unless CHURN_RUNTIME_FRAMES
   is 0, when the program is one of them by name.  Returns 1 when it switched maps on that
   the environment did not ask for already: their files are then churn's to remove. */
static int runtime_frames(const char *program)
{
    const char *v = getenv("CHURN_RUNTIME_FRAMES");
    if (v && !strcmp(v, "0"))
        return 0;
    const char *base = strrchr(program, '/');
    base = base ? base + 1 : program;
    if (!strcmp(base, "node") || !strcmp(base, "nodejs")) {
        static const char flags[] = "--perf-basic-prof --interpreted-frames-native-stack";
        const char *old = getenv("NODE_OPTIONS");
        int asked = old && strstr(old, "--perf-basic-prof");
        char *opts;
        if (asprintf(&opts, "%s%s%s", old && *old ? old : "", old && *old ? " " : "", flags) <
            0)
            return 0;
        setenv("NODE_OPTIONS", opts, 1);
        free(opts);
        return !asked;
    }
    if (!strncmp(base, "python", 6)) {
        const char *old = getenv("PYTHONPERFSUPPORT");
        int asked = old && *old && strcmp(old, "0");
        setenv("PYTHONPERFSUPPORT", "1", 1);
        return !asked;
    }
    return 0;
}

/* What the tree's images wrote because churn asked (runtime_frames), since `since`: their
   perf maps, whose entries the traces hold for the stacks that used them, and the small V8
   log (isolate-0x<address>-<pid>-v8.log) that --perf-basic-prof has node write in its
   working directory, looked for in churn's own, which node starts in. */
static int removable(const char *path, time_t since)
{
    struct stat st;
    return !lstat(path, &st) && S_ISREG(st.st_mode) && st.st_uid == getuid() &&
           st.st_mtime >= since;
}

static void remove_maps(const char *out, pid_t pid, time_t since)
{
    char *index = churn_proctree_index_of(out);
    churn_proctree t = {0};
    int have = churn_proctree_load(index, &t) == 0;
    free(index);
    size_t n = have ? t.n : 0;
    DIR *cwd = opendir(".");
    struct dirent *e;
    while (cwd && (e = readdir(cwd))) {
        /* isolate-0xADDRESS-PID-v8.log: the pid between the last two dashes */
        const char *end = strrchr(e->d_name, '-'), *at = end;
        if (strncmp(e->d_name, "isolate-0x", 10) || !end || strcmp(end, "-v8.log"))
            continue;
        while (at > e->d_name && at[-1] != '-')
            at--;
        char *stop;
        long p = strtol(at, &stop, 10);
        for (size_t i = 0; stop == end && i <= n; i++)
            if (p == (i < n ? t.v[i].pid : (long)pid) && removable(e->d_name, since))
                unlink(e->d_name);
    }
    if (cwd)
        closedir(cwd);
    for (size_t i = 0; i <= n; i++) {
        char path[64];
        snprintf(path, sizeof path, "/tmp/perf-%ld.map", i < n ? t.v[i].pid : (long)pid);
        if (removable(path, since))
            unlink(path);
    }
    if (have)
        churn_proctree_free(&t);
}

static int run(int argc, char **argv)
{
    static const struct option longopts[] = {
        TRACE_OPTIONS,
        {"runtime-frames", required_argument, NULL, OPT_FLAG},
        {NULL, 0, NULL, 0},
    };
    const char *out_opt = NULL;
    int c, index;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+ho:", longopts, &index)) != -1) {
        if (c == 'h') {
            help(stdout);
            return 0;
        }
        const char *flag = c == 'o' ? "o" : c == OPT_FLAG ? longopts[index].name : NULL;
        const opt_row *row = flag ? row_of_flag(flag) : NULL;
        if (!row)
            return usage_error("run: unknown option or missing value: %s", argv[optind - 1]);
        if (apply(row, optarg))
            return usage_error("run: bad value for %s: %s (%s: %s)", row->flag, optarg,
                               row->name, row->help);
        if (c == 'o')
            out_opt = optarg;
        else
            setenv(row->name, optarg, 1);
    }
    if (optind >= argc)
        return usage_error("run: no program given");
    /* What the shim will read, checked here as it will check it (CHURN_HELP=1 prints the
       table and exits, as it does in the shim), over the defaults: churn_opt is then what
       the program is traced with. */
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const char *v = getenv(table[i].name);
        if (table[i].type != OPT_PATH)
            apply(&table[i], table[i].def);
        if (v && apply(&table[i], v))
            return usage_error("bad value %s=%s (%s)", table[i].name, v, table[i].help);
    }
    char **program = argv + optind;
    proc_state(getpid(), &churn_started); /* before any process of the tree */
    int maps = runtime_frames(program[0]);
    time_t started = time(NULL);

    char dir[PATH_MAX], lib[PATH_MAX];
    if (self_dir(dir, sizeof dir) || find_library(lib, sizeof lib, dir)) {
        fprintf(stderr, "churn: libchurn.so is neither %s/libchurn.so nor %s/../lib/libchurn.so\n",
                dir, dir);
        return EXIT_SETUP;
    }
    if (strpbrk(lib, " :")) {
        fprintf(stderr, "churn: %s cannot be preloaded: LD_PRELOAD splits paths at spaces and "
                        "colons\n", lib);
        return EXIT_SETUP;
    }
    /* The library first, so it answers malloc; a preload the user had goes on after it. */
    const char *old = getenv("LD_PRELOAD");
    char *preload;
    if (asprintf(&preload, "%s%s%s", lib, old && *old ? " " : "", old ? old : "") < 0)
        return EXIT_SETUP;
    setenv("LD_PRELOAD", preload, 1);
    free(preload);
    /* A new tree: names inherited from a traced parent would make PROGRAM a descendant. */
    unsetenv("CHURN_ROOT_PID");
    unsetenv("CHURN_EXEC_OF");
    char *out = NULL;
    struct stat before;
    int existed = 0;
    if (out_opt || (getenv("CHURN_OUT") && *getenv("CHURN_OUT"))) {
        if (!(out = absolute(out_opt ? out_opt : getenv("CHURN_OUT"))))
            return EXIT_SETUP;
        char why[PATH_MAX + 128];
        if (unwritable(out, why, sizeof why))
            return usage_error("run: %s %s", out, why);
        setenv("CHURN_OUT", out, 1);
        existed = !stat(out, &before);
    }

    /* exec failure comes back over a close-on-exec pipe: then there is no trace to name. */
    int report[2];
    if (pipe2(report, O_CLOEXEC)) {
        fprintf(stderr, "churn: pipe: %s\n", strerror(errno));
        return EXIT_SETUP;
    }
    /* Blocked before they are caught: a signal that comes before the fork waits for it. */
    sigset_t all, fwd, old_mask;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old_mask);
    set_forwarding(&fwd);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "churn: fork: %s\n", strerror(errno));
        return EXIT_SETUP;
    }
    if (pid == 0) {
        close(report[0]);
        if (!out) {
            char name[64];
            snprintf(name, sizeof name, "churn-%d.zst", (int)getpid());
            char *abs = absolute(name);
            if (abs)
                setenv("CHURN_OUT", abs, 1);
        }
        /* The program starts with the dispositions and the mask churn started with (a
           signal the shell or nohup ignored stays ignored).  exec sets caught signals back
           to their default; a signal churn forwarded before the exec is pending here and
           must act on the program as it would (churn's handler in this process knows no
           child and would lose it), so the dispositions are set back before the mask.  The
           epoch signal keeps the handler: one that comes before the program runs begins no
           epoch, and must not end it. */
        set_back(&fwd, churn_opt.epoch_signal);
        sigprocmask(SIG_SETMASK, &old_mask, NULL);
        execvp(program[0], program);
        int err = errno;
        ssize_t w = write(report[1], &err, sizeof err);
        (void)w;
        _exit(err == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
    }
    child = pid;
    /* A signal blocked when churn started is the program's to block: churn passes it on. */
    sigprocmask(SIG_UNBLOCK, &all, NULL);
    close(report[1]);
    int err = 0;
    ssize_t got;
    while ((got = read(report[0], &err, sizeof err)) < 0 && errno == EINTR)
        ;
    close(report[0]);
    int status;
    for (;;) {
        if (waitpid(pid, &status, WUNTRACED) < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "churn: waitpid: %s\n", strerror(errno));
            return EXIT_SETUP;
        }
        if (!WIFSTOPPED(status))
            break;
        follow_stop(pid, WSTOPSIG(status));
    }
    struct timespec ended;
    clock_gettime(CLOCK_MONOTONIC, &ended);
    child = 0; /* its pid may be reused now */
    /* The signals are churn's own again: a TTOU for its lines on a terminal stops it.  But
       its lines on a closed pipe are lost without its status, which is the program's. */
    set_back(&fwd, 0);
    signal(SIGPIPE, SIG_IGN);
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    if (got == (ssize_t)sizeof err) {
        struct stat st;
        /* execve says EACCES of a directory; the shell's word for it is the clearer one */
        if (err == EACCES && strchr(program[0], '/') && stat(program[0], &st) == 0 &&
            S_ISDIR(st.st_mode))
            fprintf(stderr, "churn: cannot run %s: Is a directory\n", program[0]);
        else
            fprintf(stderr, "churn: cannot run %s: %s\n", program[0], strerror(err));
        return err == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC;
    }
    if (!out && asprintf(&out, "churn-%d.zst", (int)pid) >= 0) {
        char *abs = absolute(out);
        free(out);
        out = abs;
    }
    if (WIFSIGNALED(status))
        fprintf(stderr, "churn: %s was killed by signal %d (SIG%s)\n", program[0],
                WTERMSIG(status), sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status))
                                                                  : "?");
    else if (WEXITSTATUS(status))
        fprintf(stderr, "churn: %s exited with status %d\n", program[0], WEXITSTATUS(status));
    if (maps && out)
        remove_maps(out, pid, started);
    if (out)
        report_traces(out, existed ? &before : NULL, pid, status,
                      (uint64_t)ended.tv_sec * 1000000000u + (uint64_t)ended.tv_nsec);
    free(out);
    if (WIFSIGNALED(status))
        die_of(WTERMSIG(status));
    return WEXITSTATUS(status);
}

static const char *base_name(const char *p)
{
    const char *slash = strrchr(p, '/');
    return slash ? slash + 1 : p;
}

/* --pid P (its last image) or P.N (the image after its N-th exec), --exe NAME (the one image
   whose executable or argv[0] is NAME): the trace to analyze, or NULL after a line. */
static const churn_proc *select_image(const churn_proctree *t, const char *pid, const char *exe)
{
    if (pid) {
        char *end;
        long p = strtol(pid, &end, 10);
        const churn_proc *im = NULL;
        if (end != pid && !*end)
            im = churn_proctree_last(t, p);
        else if (end != pid && *end == '.' && end[1])
            im = churn_proctree_find(t, p, atoi(end + 1));
        if (!im)
            fprintf(stderr, "churn: no traced process image %s in the index (--list lists "
                            "them)\n", pid);
        return im;
    }
    const churn_proc *found = NULL;
    size_t matches = 0;
    for (size_t i = 0; i < t->n; i++) {
        const churn_proc *im = &t->v[i];
        if (!strcmp(base_name(im->exe), exe) || !strcmp(im->exe, exe) ||
            !strcmp(base_name(im->argv0), exe) || !strcmp(im->argv0, exe)) {
            found = im;
            matches++;
        }
    }
    if (matches == 1)
        return found;
    if (!matches)
        fprintf(stderr, "churn: no traced process image runs %s (--list lists them)\n", exe);
    else {
        fprintf(stderr, "churn: %zu traced process images run %s; choose one with --pid:\n",
                matches, exe);
        print_image_header(stderr, 0);
        for (size_t i = 0; i < t->n; i++)
            if (!strcmp(base_name(t->v[i].exe), exe) || !strcmp(t->v[i].exe, exe) ||
                !strcmp(base_name(t->v[i].argv0), exe) || !strcmp(t->v[i].argv0, exe))
                print_image(stderr, t, &t->v[i], NULL, 0);
    }
    return NULL;
}

/* churn analyze [--list | --pid P | --exe NAME | --tree] [churn-analyze's options] TRACE: the
   options of the tree are churn's but --tree, which churn-analyze reads; the rest goes to
   churn-analyze with TRACE, or the trace chosen from the index beside it, last. */
static int analyze(int argc, char **argv)
{
    const char *pid = NULL, *exe = NULL;
    int list = 0, whole = 0;
    char **rest = calloc((size_t)argc + 2, sizeof *rest);
    if (!rest)
        return EXIT_SETUP;
    int n = 0;
    rest[n++] = "churn-analyze";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = !strncmp(a, "--pid", 5) ? &pid : !strncmp(a, "--exe", 5) ? &exe : NULL;
        if (slot && (a[5] == '=' || !a[5])) {
            if (a[5] == '=')
                *slot = a + 6;
            else if (i + 1 < argc)
                *slot = argv[++i];
            else
                return usage_error("analyze: %s wants a value", a);
        } else if (!strcmp(a, "--list")) {
            list = 1;
        } else {
            whole = whole || !strcmp(a, "--tree");
            rest[n++] = argv[i];
        }
    }
    if ((pid != NULL) + (exe != NULL) + list + whole > 1)
        return usage_error("analyze: choose one of --list, --pid, --exe, --tree");
    const char *trace = n > 1 ? rest[n - 1] : NULL;
    char *index = trace && strcmp(trace, "-") ? churn_proctree_index_of(trace) : NULL;
    churn_proctree t;
    int have = index && churn_proctree_load(index, &t) == 0;
    if ((pid || exe || list) && !have)
        return usage_error("analyze: --list, --pid and --exe want a trace with its index "
                           "(%s) beside it", index ? index : "NAME.index");
    const churn_proc *chosen = NULL;
    if (list) {
        printf("churn: %zu process image(s) in %s:\n", t.n, index);
        print_image_header(stdout, 0);
        for (size_t i = 0; i < t.n; i++)
            print_image(stdout, &t, &t.v[i], NULL, 0);
        return fflush(stdout) ? 1 : 0;
    }
    if (pid || exe) {
        if (!(chosen = select_image(&t, pid, exe)))
            return EXIT_USAGE;
        fprintf(stderr, "churn: analyzing pid %ld%s (%.60s): %s\n", chosen->pid,
                chosen->n ? " after its exec" : "", chosen->command, chosen->trace);
        rest[n - 1] = chosen->trace;
    } else if (whole) {
        /* churn-analyze reads the index itself */
    } else if (have && !strcmp(trace, index)) {
        rest[n - 1] = t.v[0].trace; /* the index itself names the first process's trace */
    } else if (have && t.n > 1) {
        fprintf(stderr, "churn: %s is one of %zu traced process images (%s); --list lists "
                        "them, --pid or --exe picks another, --tree analyzes them all\n",
                trace, t.n, index);
    }
    char dir[PATH_MAX], path[PATH_MAX + 32];
    if (self_dir(dir, sizeof dir)) {
        fprintf(stderr, "churn: cannot find its own location in /proc/self/exe\n");
        return EXIT_SETUP;
    }
    snprintf(path, sizeof path, "%s/churn-analyze", dir);
    execv(path, rest);
    fprintf(stderr, "churn: cannot run %s: %s\n", path, strerror(errno));
    return errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC;
}

#include "attach.c"

int main(int argc, char **argv)
{
    if (argv[0] && strchr(argv[0], '/'))
        self_name = argv[0];
    if (argc < 2)
        return usage_error("no command given");
    const char *cmd = argv[1];
    if (!strcmp(cmd, "run"))
        return run(argc - 1, argv + 1);
    if (!strcmp(cmd, "analyze"))
        return analyze(argc - 1, argv + 1);
    if (!strcmp(cmd, "attach"))
        return attach_command(argc - 1, argv + 1);
    if (!strcmp(cmd, "detach"))
        return detach_command(argc - 1, argv + 1);
    if (!strcmp(cmd, "watch"))
        return churn_watch_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "serve"))
        return churn_serve_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        if (argc > 2)
            return usage_error("help takes no arguments");
        help(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        puts("churn " CHURN_VERSION);
        return 0;
    }
    return usage_error("unknown command: %s (run, analyze, attach, detach, watch, serve, help, "
                       "--version)",
                       cmd);
}
