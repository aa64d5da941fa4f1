/*
 * churn: the one command a person types.  `churn run PROGRAM` preloads the libchurn.so that
 * was installed with this churn, runs PROGRAM, passes its exit status through and says where
 * the trace is; `churn analyze` is churn-analyze.
 *
 * Written in C, not sh: it finds its own location through /proc/self/exe (symlinks resolved
 * by the kernel, whatever the working directory), checks every option value with the shim's
 * own parser (it includes shim/options.c, so a value churn accepts is one the shim accepts),
 * forwards signals sent to it with kill but not those the terminal sends to the whole group
 * (only siginfo tells them apart), and re-raises the program's fatal signal on itself.  It
 * runs outside the traced process, so none of the shim's constraints apply here.
 */
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
#include <sys/wait.h>
#include <unistd.h>

#include "churn/version.h"
#include "commands.h"
#include "options.c"

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

static char *absolute(const char *path)
{
    if (path[0] == '/')
        return strdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return NULL;
    char *out;
    return asprintf(&out, "%s/%s", cwd, path) < 0 ? NULL : out;
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
static const int forwarded[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};

static void forward(int sig, siginfo_t *info, void *ctx)
{
    (void)ctx;
    /* si_code > 0: sent by the kernel (the terminal's ^C reaches the whole foreground group,
       the program included); a child that signals its parent is not sent its own signal. */
    pid_t c = child;
    if (c > 0 && info->si_code <= 0 && info->si_pid != c)
        kill(c, sig);
}

static void set_forwarding(sigset_t *set, int epoch_signal)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = forward;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigemptyset(set);
    for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++) {
        sigaction(forwarded[i], &sa, NULL);
        sigaddset(set, forwarded[i]);
    }
    if (epoch_signal > 0) {
        sigaction(epoch_signal, &sa, NULL);
        sigaddset(set, epoch_signal);
    }
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

/* ---- the tree's index (shim/index.c): which image wrote which trace ---- */

typedef struct image {
    long pid, ppid;
    int n;              /* execs of pid before this image */
    char *trace, *exe, *argv0, *command;
    int ended, how, detail;
} image;

typedef struct tree {
    image *v;
    size_t n;
} tree;

static char *index_of(const char *trace)
{
    size_t len = strlen(trace);
    if (len > 6 && !strcmp(trace + len - 6, ".index"))
        return strdup(trace);
    size_t stem = len > 4 && !strcmp(trace + len - 4, ".zst") ? len - 4 : len;
    char *out;
    return asprintf(&out, "%.*s.index", (int)stem, trace) < 0 ? NULL : out;
}

/* Undoes the index's escapes in place; given first_word_end, it is set where the first bare
   space (the end of argv[0]) lands. */
static char *unescape(char *s, char **first_word_end)
{
    char *o = s;
    if (first_word_end)
        *first_word_end = NULL;
    for (char *p = s; *p; p++) {
        if (*p == ' ' && first_word_end && !*first_word_end)
            *first_word_end = o;
        if (*p == '\\' && p[1]) {
            p++;
            *o++ = *p == 't' ? '\t' : *p == 'n' ? '\n' : *p == 's' ? ' ' : *p;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return s;
}

static image *find_image(const tree *t, long pid, int n)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].pid == pid && t->v[i].n == n)
            return &t->v[i];
    return NULL;
}

/* The last image of pid: the program a script in front of it exec'd, or pid's only one. */
static image *last_image(const tree *t, long pid)
{
    image *best = NULL;
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].pid == pid && (!best || t->v[i].n > best->n))
            best = &t->v[i];
    return best;
}

static int tree_load(const char *path, tree *t)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0, alloc = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, f)) > 0) {
        if (line[got - 1] == '\n')
            line[--got] = '\0';
        char *field[7] = {0};
        size_t nf = 0;
        for (char *p = line, *tab; nf < 7; p = tab + 1) {
            field[nf++] = p;
            if (!(tab = strchr(p, '\t')))
                break;
            *tab = '\0';
        }
        if (nf == 7 && !strcmp(field[0], "start")) {
            if (t->n == alloc) {
                alloc = alloc ? alloc * 2 : 16;
                image *v = realloc(t->v, alloc * sizeof *v);
                if (!v)
                    break;
                t->v = v;
            }
            image *im = &t->v[t->n++];
            memset(im, 0, sizeof *im);
            im->pid = atol(field[1]);
            im->ppid = atol(field[2]);
            im->n = atoi(field[3]);
            im->trace = strdup(unescape(field[4], NULL));
            im->exe = strdup(unescape(field[5], NULL));
            char *end0;
            unescape(field[6], &end0);
            im->command = strdup(field[6]);
            im->argv0 = end0 ? strndup(field[6], (size_t)(end0 - field[6])) : strdup(field[6]);
        } else if (nf == 5 && !strcmp(field[0], "end")) {
            image *im = find_image(t, atol(field[1]), atoi(field[2]));
            if (im) {
                im->ended = 1;
                im->how = atoi(field[3]);
                im->detail = atoi(field[4]);
            }
        }
    }
    free(line);
    fclose(f);
    return t->n ? 0 : -1;
}

static void tree_free(tree *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].trace);
        free(t->v[i].exe);
        free(t->v[i].argv0);
        free(t->v[i].command);
    }
    free(t->v);
}

static const char *end_of(const tree *t, const image *im, char *buf, size_t size)
{
    if (!im->ended)
        return find_image(t, im->pid, im->n + 1) ? "exec" : "no end";
    switch (im->how) {
    case CHURN_EXIT_NORMAL:
        snprintf(buf, size, "exit %d", im->detail);
        return buf;
    case CHURN_EXIT_QUICK:
        snprintf(buf, size, "quick_exit %d", im->detail);
        return buf;
    case CHURN_EXIT_THREADS:
        snprintf(buf, size, "threads %d", im->detail);
        return buf;
    case CHURN_EXIT_UNDERSCORE:
        snprintf(buf, size, "_exit %d", im->detail);
        return buf;
    case CHURN_EXIT_SIGNAL:
        snprintf(buf, size, "signal %d", im->detail);
        return buf;
    case CHURN_EXIT_EXEC:
        return "exec";
    }
    return "?";
}

static void print_image_header(FILE *out)
{
    fprintf(out, "churn:   %-9s %-8s %-10s %s\n", "PID", "PARENT", "END", "COMMAND (TRACE)");
}

static void print_image(FILE *out, const tree *t, const image *im)
{
    char pid[32], end[32];
    snprintf(pid, sizeof pid, im->n ? "%ld.%d" : "%ld", im->pid, im->n);
    const char *file = strrchr(im->trace, '/');
    fprintf(out, "churn:   %-9s %-8ld %-10s %.60s%s (%s)\n", pid, im->ppid,
            end_of(t, im, end, sizeof end), im->command, strlen(im->command) > 60 ? "..." : "",
            file ? file + 1 : im->trace);
}

/* After a run: the program's own trace (the last image of the first pid, past any script
   in front of it), the command that analyzes it, and what else the tree traced. */
static void report_traces(const char *out, pid_t pid)
{
    char *index = index_of(out);
    tree t;
    if (!index || tree_load(index, &t)) {
        if (access(out, F_OK) == 0) {
            fprintf(stderr, "churn: trace in %s\n", out);
            fprintf(stderr, "churn: analyze it with: ");
            put_shell_word(stderr, self_name);
            fputs(" analyze ", stderr);
            put_shell_word(stderr, out);
            fputc('\n', stderr);
        } else {
            fprintf(stderr, "churn: no trace was written: libchurn said why above, or it "
                            "never ran in the program (a static or setuid executable)\n");
        }
        free(index);
        return;
    }
    image *own = last_image(&t, pid);
    const char *trace = own ? own->trace : out;
    if (own && own->n > 0)
        fprintf(stderr, "churn: pid %d exec'd %d time(s) (a script in front of the program?); "
                        "the trace below is of its last image, %s\n",
                (int)pid, own->n, own->exe);
    fprintf(stderr, "churn: trace in %s\n", trace);
    fprintf(stderr, "churn: analyze it with: ");
    put_shell_word(stderr, self_name);
    fputs(" analyze ", stderr);
    put_shell_word(stderr, trace);
    fputc('\n', stderr);
    if (t.n > 1) {
        size_t others = 0, shown = 0;
        fprintf(stderr, "churn: %zu process image(s) traced, listed in %s:\n", t.n, index);
        print_image_header(stderr);
        for (size_t i = 0; i < t.n; i++) {
            if (t.v[i].pid != pid)
                continue;
            print_image(stderr, &t, &t.v[i]);
            shown++;
        }
        for (size_t i = 0; i < t.n; i++) {
            if (t.v[i].pid == pid)
                continue;
            if (shown < LIST_MAX) {
                print_image(stderr, &t, &t.v[i]);
                shown++;
            } else {
                others++;
            }
        }
        if (others) {
            fprintf(stderr, "churn:   ... and %zu more: ", others);
            put_shell_word(stderr, self_name);
            fputs(" analyze --list ", stderr);
            put_shell_word(stderr, out);
            fputc('\n', stderr);
        }
    }
    tree_free(&t);
    free(index);
}

static int run(int argc, char **argv)
{
    enum { OPT_FLAG = 256 };
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"epoch-at", required_argument, NULL, OPT_FLAG},
        {"epoch-ms", required_argument, NULL, OPT_FLAG},
        {"epoch-signal", required_argument, NULL, OPT_FLAG},
        {"sample-stacks", required_argument, NULL, OPT_FLAG},
        {"events", required_argument, NULL, OPT_FLAG},
        {NULL, 0, NULL, 0},
    };
    const char *out_opt = NULL;
    int c, index;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+o:", longopts, &index)) != -1) {
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
       table and exits, as it does in the shim). */
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const char *v = getenv(table[i].name);
        if (v && apply(&table[i], v))
            return usage_error("bad value %s=%s (%s)", table[i].name, v, table[i].help);
    }
    char **program = argv + optind;

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
    if (out_opt || (getenv("CHURN_OUT") && *getenv("CHURN_OUT"))) {
        if (!(out = absolute(out_opt ? out_opt : getenv("CHURN_OUT"))))
            return EXIT_SETUP;
        setenv("CHURN_OUT", out, 1);
    }

    /* exec failure comes back over a close-on-exec pipe: then there is no trace to name. */
    int report[2];
    if (pipe2(report, O_CLOEXEC)) {
        fprintf(stderr, "churn: pipe: %s\n", strerror(errno));
        return EXIT_SETUP;
    }
    sigset_t fwd, old_mask;
    set_forwarding(&fwd, churn_opt.epoch_signal);
    sigprocmask(SIG_BLOCK, &fwd, &old_mask);
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
        /* exec sets caught signals back to their default; the mask it keeps. */
        sigprocmask(SIG_SETMASK, &old_mask, NULL);
        execvp(program[0], program);
        int err = errno;
        ssize_t w = write(report[1], &err, sizeof err);
        (void)w;
        _exit(err == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
    }
    child = pid;
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    close(report[1]);
    int err = 0;
    ssize_t got;
    while ((got = read(report[0], &err, sizeof err)) < 0 && errno == EINTR)
        ;
    close(report[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            fprintf(stderr, "churn: waitpid: %s\n", strerror(errno));
            return EXIT_SETUP;
        }
    child = 0; /* its pid may be reused now */
    if (got == (ssize_t)sizeof err) {
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
    if (out)
        report_traces(out, pid);
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
static const image *select_image(const tree *t, const char *pid, const char *exe)
{
    if (pid) {
        char *end;
        long p = strtol(pid, &end, 10);
        const image *im = NULL;
        if (end != pid && !*end)
            im = last_image(t, p);
        else if (end != pid && *end == '.' && end[1])
            im = find_image(t, p, atoi(end + 1));
        if (!im)
            fprintf(stderr, "churn: no traced process image %s in the index (--list lists "
                            "them)\n", pid);
        return im;
    }
    const image *found = NULL;
    size_t matches = 0;
    for (size_t i = 0; i < t->n; i++) {
        const image *im = &t->v[i];
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
        print_image_header(stderr);
        for (size_t i = 0; i < t->n; i++)
            if (!strcmp(base_name(t->v[i].exe), exe) || !strcmp(t->v[i].exe, exe) ||
                !strcmp(base_name(t->v[i].argv0), exe) || !strcmp(t->v[i].argv0, exe))
                print_image(stderr, t, &t->v[i]);
    }
    return NULL;
}

/* churn analyze [--list | --pid P | --exe NAME] [churn-analyze's options] TRACE: the options
   of the tree are churn's, the rest goes to churn-analyze with TRACE, or the trace chosen
   from the index beside it, last. */
static int analyze(int argc, char **argv)
{
    const char *pid = NULL, *exe = NULL;
    int list = 0;
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
            rest[n++] = argv[i];
        }
    }
    if ((pid != NULL) + (exe != NULL) + list > 1)
        return usage_error("analyze: choose one of --list, --pid, --exe");
    const char *trace = n > 1 ? rest[n - 1] : NULL;
    char *index = trace && strcmp(trace, "-") ? index_of(trace) : NULL;
    tree t;
    int have = index && tree_load(index, &t) == 0;
    if ((pid || exe || list) && !have)
        return usage_error("analyze: --list, --pid and --exe want a trace with its index "
                           "(%s) beside it", index ? index : "NAME.index");
    const image *chosen = NULL;
    if (list) {
        printf("churn: %zu process image(s) in %s:\n", t.n, index);
        print_image_header(stdout);
        for (size_t i = 0; i < t.n; i++)
            print_image(stdout, &t, &t.v[i]);
        return fflush(stdout) ? 1 : 0;
    }
    if (pid || exe) {
        if (!(chosen = select_image(&t, pid, exe)))
            return EXIT_USAGE;
        fprintf(stderr, "churn: analyzing pid %ld%s (%.60s): %s\n", chosen->pid,
                chosen->n ? " after its exec" : "", chosen->command, chosen->trace);
        rest[n - 1] = chosen->trace;
    } else if (have && !strcmp(trace, index)) {
        rest[n - 1] = t.v[0].trace; /* the index itself names the first process's trace */
    } else if (have && t.n > 1) {
        fprintf(stderr, "churn: %s is one of %zu traced process images (%s); --list lists "
                        "them, --pid or --exe picks another\n", trace, t.n, index);
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
    return usage_error("unknown command: %s (run, analyze, help, --version)", cmd);
}
