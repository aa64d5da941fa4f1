/*
 * Every CHURN_* environment variable, in one table: name, default, meaning, and the `churn
 * run` flag that sets it.  This table is the one source of the README's option table, the
 * man pages and CHURN_HELP=1 (cli/docgen.c and cli/churn.c include this file; `make docs`
 * regenerates, test/t_options_doc.sh compares).  Meanings are markdown (`code` spans).  Read
 * once at start-up with getenv only (no allocation), so it is safe inside the first
 * intercepted malloc.
 */
#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

churn_options churn_opt;

/* OPT_ANALYZER and later are not the shim's: they are in the table so that every CHURN_*
   variable is documented from one place; the shim reads and ignores them.  OPT_CHOICE takes
   one of the row's names and stores its index; OPT_HELP prints the table and exits. */
typedef enum { OPT_PATH, OPT_STRING, OPT_UINT, OPT_BOOL, OPT_SIGNAL, OPT_CHOICE, OPT_HELP,
               OPT_ANALYZER, OPT_TESTS, OPT_SET_BY_SHIM } opt_type;

typedef struct {
    const char *name;
    opt_type type;
    const char *def;
    uint64_t min, max;  /* for OPT_UINT and OPT_BOOL */
    /* Where the value goes: a field of churn_opt (a string's array, or a 32- or 64-bit
       number), 0 bytes for nowhere; a number is stored shifted left by `shift` (MiB and KiB
       to bytes). */
    size_t at, size;
    unsigned shift;
    const char *const *choices; /* OPT_CHOICE: the names, each stored as its index */
    const char *help;
    const char *flag;   /* the `churn run` option that sets it, with its argument */
} opt_row;

#define AT(field, shift) \
    offsetof(churn_options, field), sizeof(((churn_options *)0)->field), shift, NULL
#define CHOICE(field, names) \
    offsetof(churn_options, field), sizeof(((churn_options *)0)->field), 0, names
#define NOWHERE 0, 0, 0, NULL

/* In the order of enum churn_unwind_mode, and fork_follow's 0 and 1. */
static const char *const unwind_names[] = {"cfi", "libunwind", "fp", "verify", NULL};
static const char *const fork_names[] = {"stop", "follow", NULL};

static const opt_row table[] = {
    {"CHURN_OUT", OPT_PATH, "churn-<pid>.zst", 0, 0, AT(out, 0),
     "trace file; a forked child or an exec'd descendant writes `NAME.<pid>.zst` beside it "
     "(`NAME.<pid>-ns<inode>.zst` in another pid namespace than the first process's), the "
     "image after the n-th exec of a process `NAME.<pid>.<n>.zst`, and `NAME.index` lists "
     "them all (`churn analyze --list`); a name too long to leave 36 characters for those "
     "(4,059 and more) is refused", "-o FILE"},
    {"CHURN_RING_MB", OPT_UINT, "256", 1, 1u << 20, AT(ring_bytes, 20),
     "bound of the trace file in MiB; when full, the oldest segments are overwritten; a disk "
     "(or file size limit) that holds less cuts it to what it holds, said once", NULL},
    {"CHURN_EVENTS", OPT_BOOL, "1", 0, 1, AT(events, 0),
     "0 keeps only the per-epoch histograms, not every allocation event", "--events=N"},
    {"CHURN_EPOCH_SIGNAL", OPT_SIGNAL, "", 0, 0, AT(epoch_signal, 0),
     "signal that begins a new epoch: `USR1`, `USR2`, `HUP`, `URG`, `WINCH`, `PROF`, `VTALRM` "
     "(optionally `SIG`-prefixed), their numbers (`12`), or a real-time signal's number "
     "(`SIGRTMIN`..`SIGRTMAX`, 34..64 on Linux); any other signal is refused",
     "--epoch-signal SIG"},
    {"CHURN_EPOCH_AT", OPT_STRING, "", 0, 0, AT(epoch_at, 0),
     "functions of the executable (mangled, C, or `ns::Class::Class`; comma-separated) whose "
     "every call begins a new epoch", "--epoch-at F"},
    {"CHURN_EPOCH_MS", OPT_UINT, "0", 0, 86400000, AT(epoch_ms, 0),
     "begin a new epoch every N milliseconds; 0 = only on `churn_epoch()` or the signal",
     "--epoch-ms N"},
    {"CHURN_STACK_DEPTH", OPT_UINT, "64", 1, CHURN_STACK_MAX_DEPTH, AT(stack_depth, 0),
     "frames kept per stack", NULL},
    {"CHURN_STACK_SAMPLE", OPT_UINT, "1", 1, 1u << 30, AT(stack_sample, 0),
     "walk the stack of one allocation in N, at random (1 = every one); all allocations are "
     "still traced and counted, the others without a callsite, and `churn-analyze` scales "
     "callsite figures by N (estimates; see docs/analyzer.md)", "--sample-stacks N"},
    {"CHURN_SAMPLE_BYTES", OPT_UINT, "0", 0, 1ull << 40, AT(sample_bytes, 0),
     "record only sampled allocations and their frees: a Poisson process over the bytes "
     "allocated, one sample every N bytes on average, so an allocation of s bytes is sampled "
     "with probability 1 - exp(-s/N) (0 = every allocation); every allocation and free is "
     "still counted, so totals of allocations, frees and bytes allocated stay exact, and "
     "`churn-analyze` weights each sample by its probability's inverse: callsite, function "
     "and type figures are estimates with their standard error (docs/analyzer.md); needs "
     "`CHURN_EVENTS=1`, and `CHURN_STACK_SAMPLE` is ignored under it", "--sample-bytes N"},
    {"CHURN_UNWIND", OPT_CHOICE, "cfi", 0, 0, CHOICE(unwind, unwind_names),
     "`cfi` (cached DWARF CFI, libunwind where it cannot go on), `libunwind`, `fp` (frame "
     "pointers: needs them), `verify` (test mode: cfi and libunwind on every stack, abort if "
     "they differ)", NULL},
    {"CHURN_RUNTIME_FRAMES", OPT_BOOL, "1", 0, 1, AT(runtime_frames, 0),
     "`churn run` of `node` or `python*` switches the runtime's perf map on for the tree "
     "(`NODE_OPTIONS` gets `--perf-basic-prof --interpreted-frames-native-stack`; "
     "`PYTHONPERFSUPPORT=1`, CPython 3.12 and later), and libchurn names CPython 3.11 to "
     "3.13's Python frames with their lines from the interpreter's frame chain, so that the "
     "trace names JavaScript and Python frames (docs/runtimes.md); 0 leaves the environment "
     "as it is and reads no frame chain",
     "--runtime-frames=N"},
    {"CHURN_FORK", OPT_CHOICE, "follow", 0, 0, CHOICE(fork_follow, fork_names),
     "follow: a forked child traces into its own file; stop: the child is not traced", NULL},
    {"CHURN_SEGMENT_KB", OPT_UINT, "4096", 16, 32768, AT(segment_bytes, 10),
     "raw size of a trace segment before compression (the unit that is kept or dropped); "
     "cut, with one line at start-up, where four of them at their worst would not fit in "
     "`CHURN_RING_MB`", NULL},
    {"CHURN_FLUSH_MS", OPT_UINT, "1000", 10, 3600000, AT(flush_ms, 0),
     "longest time a segment stays open before it is closed (until then it is in the file "
     "up to its last checkpoint, 10 ms apart, which bound what a `kill -9` loses)", NULL},
    {"CHURN_ZSTD_LEVEL", OPT_UINT, "1", 1, 19, AT(zstd_level, 0), "zstd compression level of segments", NULL},
    {"CHURN_QUIET", OPT_BOOL, "0", 0, 1, AT(quiet, 0), "1 silences libchurn's own messages on stderr", NULL},
    {"CHURN_HELP", OPT_HELP, "0", 0, 1, NOWHERE,
     "1 prints this table (less the rows for tests and builds) on stderr and exits with "
     "status 0: the program does not run and no trace is written", NULL},
    {"CHURN_SYMBOL_CACHE", OPT_ANALYZER, "$XDG_CACHE_HOME/libchurn/symbols", 0, 0, NOWHERE,
     "read by `churn-analyze`, not the shim: directory of the symbol cache (`~/.cache` when "
     "`XDG_CACHE_HOME` is unset; frames of modules "
     "with debug info, by build id, so a second analysis of the same binaries reads no debug "
     "info); `off` disables it", NULL},
    {"CHURN_TEST_TIMEOUT", OPT_TESTS, "300", 0, 0, NOWHERE,
     "tests only (`test/run.sh`): seconds each test may run", NULL},
    {"CHURN_TEST_DECODER", OPT_TESTS, "fast", 0, 0, NOWHERE,
     "tests only (`test/lib.sh`): `slow` runs a test against `build/slow/churn-analyze`, the "
     "analyzer built without its decoding shortcuts (`make slow`); `test/run.sh` sets it for "
     "the tests marked `# decoders: fast and slow`", NULL},
    {"CHURN_WORKERD_CACHE", OPT_TESTS, "build/cache/workerd", 0, 0, NOWHERE,
     "tests and benchmarks only: where the pinned workerd build is kept between runs", NULL},
    {"CHURN_NODE_CACHE", OPT_TESTS, "build/cache/node", 0, 0, NOWHERE,
     "tests and benchmarks only: where the pinned node build is kept between runs", NULL},
    {"CHURN_XSNAP_CACHE", OPT_TESTS, "build/cache/xsnap", 0, 0, NOWHERE,
     "tests and benchmarks only: where the pinned XS build is kept between runs", NULL},
    {"CHURN_HEAPTRACK_SRC", OPT_TESTS, "", 0, 0, NOWHERE,
     "tests only (`test/t_referee.sh`): heaptrack's sources (a checkout, or a git directory "
     "holding the installed version's tag) to build its `tests/manual` programs from; unset, "
     "the test takes them once with `apt-get source` into `build/cache/heaptrack-src`", NULL},
    {"CHURN_BUN_CACHE", OPT_TESTS, "build/cache/bun", 0, 0, NOWHERE,
     "tests only: where the pinned Bun build is kept between runs", NULL},
    {"CHURN_ASTGREP_CACHE", OPT_TESTS, "build/cache/ast-grep", 0, 0, NOWHERE,
     "tests only (`test/t_rust_cli.sh`): where the pinned ast-grep build is kept between runs",
     NULL},
    {"CHURN_BIOME_CACHE", OPT_TESTS, "build/cache/biome", 0, 0, NOWHERE,
     "tests only (`test/t_rust_cli.sh`): where the pinned Biome build is kept between runs",
     NULL},
    {"CHURN_DENO_CACHE", OPT_TESTS, "build/cache/deno", 0, 0, NOWHERE,
     "tests only (`test/t_deno.sh`): where the pinned deno build is kept between runs", NULL},
    {"CHURN_PRELOAD_EXTRA", OPT_TESTS, "", 0, 0, NOWHERE,
     "tests only (`test/lib.sh`): allocator libraries preloaded after the shim", NULL},
    {"CHURN_FRAG_OBJECTS", OPT_TESTS, "2000000", 0, 0, NOWHERE,
     "tests only (`test/t_fragmentation.sh`): objects of the fragmentation workload", NULL},
    {"CHURN_PACKAGES", OPT_TESTS, "set by the Makefile", 0, 0, NOWHERE,
     "build only (`test/ensure-packages.sh`): the Debian packages to install or ask for", NULL},
    {"CHURN_ROOT_PID", OPT_SET_BY_SHIM, "set by libchurn", 0, 0, NOWHERE,
     "not an option: the traced tree's first pid and its pid namespace "
     "(`<pid>:<inode of /proc/self/ns/pid>`), so that descendants take names of their own",
     NULL},
    {"CHURN_EXEC_OF", OPT_SET_BY_SHIM, "set by libchurn", 0, 0, NOWHERE,
     "not an option: `<pid>.<n>` for the image an exec starts, so that it takes a name of "
     "its own", NULL},
};

static int parse_uint(const char *s, uint64_t *out)
{
    char *end;
    /* digits only: strtoull would take a sign and leading blanks too */
    if (*s < '0' || *s > '9')
        return -1;
    int saved = errno; /* read inside the program's first malloc: its errno stays */
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    int range = errno;
    errno = saved;
    if (*end || range)
        return -1;
    *out = v;
    return 0;
}

/* The signals an epoch may be begun by: ones a program can spare and libchurn can catch.
   The others cannot be caught (KILL, STOP), report a fault that would re-fault forever once
   handled as a tick (SEGV, BUS, ILL, FPE, TRAP, SYS), end the process through fatal.c (ABRT),
   or are glibc's own (32 and 33, below SIGRTMIN: thread cancellation and setxid). */
static int parse_signal(const char *s)
{
    static const struct { const char *name; int sig; } names[] = {
        {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP}, {"URG", SIGURG},
        {"WINCH", SIGWINCH}, {"PROF", SIGPROF}, {"VTALRM", SIGVTALRM},
    };
    uint64_t v;
    int number = !parse_uint(s, &v);
    if (!number && !strncmp(s, "SIG", 3))
        s += 3;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (number ? v == (uint64_t)names[i].sig : !strcmp(s, names[i].name))
            return names[i].sig;
    /* real-time signals by number: no name stands for them */
    if (number && v >= (uint64_t)SIGRTMIN && v <= (uint64_t)SIGRTMAX)
        return (int)v;
    return -1;
}

/* A number into its field: each is 32 or 64 bits (a signed field takes the same bits). */
_Static_assert(sizeof(int) == sizeof(uint32_t) && sizeof(unsigned) == sizeof(uint32_t),
               "the option fields are 32 or 64 bits");
static void store(const opt_row *row, uint64_t v)
{
    char *field = (char *)&churn_opt + row->at;
    if (row->size == sizeof(uint64_t)) {
        memcpy(field, &v, sizeof v);
    } else {
        uint32_t narrow = (uint32_t)v;
        memcpy(field, &narrow, sizeof narrow);
    }
}

static int apply(const opt_row *row, const char *value)
{
    uint64_t v = 0;
    switch (row->type) {
    case OPT_PATH:
    case OPT_STRING:
        if (strlen(value) >= row->size || (row->type == OPT_PATH && !*value))
            return -1;
        strcpy((char *)&churn_opt + row->at, value);
        return 0;
    case OPT_SIGNAL: {
        if (!*value)
            return 0;
        int sig = parse_signal(value);
        store(row, (uint64_t)(int64_t)sig);
        return sig < 0 ? -1 : 0;
    }
    case OPT_CHOICE:
        for (size_t i = 0; row->choices[i]; i++)
            if (!strcmp(value, row->choices[i])) {
                store(row, i);
                return 0;
            }
        return -1;
    case OPT_ANALYZER:
    case OPT_TESTS:
    case OPT_SET_BY_SHIM:
        return 0;
    case OPT_BOOL:
    case OPT_UINT:
    case OPT_HELP:
        if (parse_uint(value, &v) || v < row->min || v > row->max)
            return -1;
        break;
    }
    if (row->type == OPT_HELP && v) {
        /* Before the trace file is created: asking for help neither runs nor traces. */
        churn_options_print_help();
        syscall(SYS_exit_group, 0);
    }
    if (row->size)
        store(row, v << row->shift);
    return 0;
}

/* What one option makes of another, once all are read. */
static void settle(void)
{
    if (!churn_opt.events)
        churn_opt.sample_bytes = 0; /* histograms only: there is nothing to sample */
    if (churn_opt.sample_bytes)
        churn_opt.stack_sample = 1; /* every sampled allocation has its stack */
}

int churn_options_load(void)
{
    int bad = 0;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const opt_row *row = &table[i];
        if (row->type == OPT_PATH) {
            snprintf((char *)&churn_opt + row->at, row->size, "churn-%d.zst", (int)getpid());
        } else if (apply(row, row->def)) {
            bad = 1; /* a wrong default is a bug; say so like a bad value */
        }
        const char *v = getenv(row->name);
        if (v && apply(row, v)) {
            churn_log("bad value %s=%s (%s); tracing disabled", row->name, v, row->help);
            return -1;
        }
    }
    settle();
    return bad ? -1 : 0;
}

/* churn attach's options (the process's environment cannot be changed): NAME=VALUE lines,
   over the defaults; the environment is not read. */
int churn_options_load_config(const char *config)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].type == OPT_PATH)
            snprintf(churn_opt.out, sizeof churn_opt.out, "churn-%d.zst", (int)getpid());
        else if (apply(&table[i], table[i].def))
            return -1;
    for (const char *line = config; *line;) {
        size_t len = strcspn(line, "\n"), name = strcspn(line, "=");
        char value[sizeof churn_opt.out];
        const opt_row *row = NULL;
        for (size_t i = 0; name < len && i < sizeof table / sizeof table[0]; i++)
            if (strlen(table[i].name) == name && !strncmp(table[i].name, line, name))
                row = &table[i];
        if (!row || len - name - 1 >= sizeof value || !strcmp(row->name, "CHURN_HELP")) {
            churn_log("bad option line %.*s", (int)len, line);
            return -1;
        }
        memcpy(value, line + name + 1, len - name - 1);
        value[len - name - 1] = '\0';
        if (apply(row, value)) {
            churn_log("bad value %s=%s (%s)", row->name, value, row->help);
            return -1;
        }
        line += len + (line[len] == '\n');
    }
    settle();
    return 0;
}

void churn_options_print_help(void)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].type < OPT_TESTS)
            churn_log("%-19s default %-16s %s", table[i].name,
                      table[i].def[0] ? table[i].def : "unset", table[i].help);
}
