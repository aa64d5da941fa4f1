/*
 * Every CHURN_* environment variable, in one table: name, default, meaning.  The README's
 * option table is this table; CHURN_HELP=1 prints it.  Read once at start-up with getenv
 * only (no allocation), so it is safe inside the first intercepted malloc.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

churn_options churn_opt;

typedef enum { OPT_PATH, OPT_STRING, OPT_UINT, OPT_BOOL, OPT_SIGNAL, OPT_UNWIND, OPT_FORK } opt_type;

typedef struct {
    const char *name;
    opt_type type;
    const char *def;
    uint64_t min, max;  /* for OPT_UINT */
    const char *help;
} opt_row;

static const opt_row table[] = {
    {"CHURN_OUT", OPT_PATH, "churn-<pid>.zst", 0, 0,
     "trace file; a forked child writes NAME.<pid>.zst beside it"},
    {"CHURN_RING_MB", OPT_UINT, "256", 1, 1u << 20,
     "bound of the trace file in MiB; when full, the oldest segments are overwritten"},
    {"CHURN_EVENTS", OPT_BOOL, "1", 0, 1,
     "0 keeps only the per-epoch histograms, not every allocation event"},
    {"CHURN_EPOCH_SIGNAL", OPT_SIGNAL, "", 0, 0,
     "signal (USR2, 12, ...) that begins a new epoch; unset = none"},
    {"CHURN_EPOCH_AT", OPT_STRING, "", 0, 0,
     "functions of the executable (mangled, C, or ns::Class::Class; comma-separated) whose "
     "every call begins a new epoch"},
    {"CHURN_EPOCH_MS", OPT_UINT, "0", 0, 86400000,
     "begin a new epoch every N milliseconds; 0 = only on churn_epoch() or the signal"},
    {"CHURN_STACK_DEPTH", OPT_UINT, "64", 1, CHURN_STACK_MAX_DEPTH, "frames kept per stack"},
    {"CHURN_STACK_SAMPLE", OPT_UINT, "1", 1, 1u << 30,
     "walk the stack of one allocation in N, at random (1 = every one); the others are traced "
     "and counted without a callsite, and churn-analyze scales callsite figures by N"},
    {"CHURN_UNWIND", OPT_UNWIND, "cfi", 0, 0,
     "cfi (cached DWARF CFI, libunwind where it cannot), libunwind, fp (frame pointers: "
     "needs them), verify (test mode: cfi and libunwind on every stack, abort if they differ)"},
    {"CHURN_FORK", OPT_FORK, "follow", 0, 0,
     "follow: a forked child traces into its own file; stop: the child is not traced"},
    {"CHURN_SEGMENT_KB", OPT_UINT, "4096", 16, 32768,
     "raw size of a trace segment before compression (the unit that is kept or dropped)"},
    {"CHURN_FLUSH_MS", OPT_UINT, "1000", 10, 3600000,
     "longest time events wait in memory; what a kill -9 can lose at most"},
    {"CHURN_ZSTD_LEVEL", OPT_UINT, "1", 1, 19, "zstd compression level of segments"},
    {"CHURN_QUIET", OPT_BOOL, "0", 0, 1, "1 silences libchurn's own messages on stderr"},
    {"CHURN_HELP", OPT_BOOL, "0", 0, 1, "1 prints this table on stderr at start-up"},
};

static int parse_uint(const char *s, uint64_t *out)
{
    char *end;
    if (!*s || *s == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end)
        return -1;
    *out = v;
    return 0;
}

static int parse_signal(const char *s)
{
    static const struct { const char *name; int sig; } names[] = {
        {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP}, {"URG", SIGURG},
        {"WINCH", SIGWINCH}, {"PROF", SIGPROF}, {"VTALRM", SIGVTALRM},
    };
    if (!strncmp(s, "SIG", 3))
        s += 3;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(s, names[i].name))
            return names[i].sig;
    uint64_t v;
    if (!parse_uint(s, &v) && v > 0 && v < (uint64_t)SIGRTMAX + 1)
        return (int)v;
    return -1;
}

static int apply(const opt_row *row, const char *value)
{
    uint64_t v = 0;
    switch (row->type) {
    case OPT_PATH:
        if (strlen(value) >= sizeof churn_opt.out || !*value)
            return -1;
        strcpy(churn_opt.out, value);
        return 0;
    case OPT_STRING:
        if (strlen(value) >= sizeof churn_opt.epoch_at)
            return -1;
        strcpy(churn_opt.epoch_at, value);
        return 0;
    case OPT_SIGNAL:
        if (!*value)
            return 0;
        churn_opt.epoch_signal = parse_signal(value);
        return churn_opt.epoch_signal < 0 ? -1 : 0;
    case OPT_UNWIND:
        if (!strcmp(value, "cfi"))
            churn_opt.unwind = CHURN_UNWIND_CFI;
        else if (!strcmp(value, "libunwind"))
            churn_opt.unwind = CHURN_UNWIND_LIBUNWIND;
        else if (!strcmp(value, "fp"))
            churn_opt.unwind = CHURN_UNWIND_FP;
        else if (!strcmp(value, "verify"))
            churn_opt.unwind = CHURN_UNWIND_VERIFY;
        else
            return -1;
        return 0;
    case OPT_FORK:
        if (!strcmp(value, "follow"))
            churn_opt.fork_follow = 1;
        else if (!strcmp(value, "stop"))
            churn_opt.fork_follow = 0;
        else
            return -1;
        return 0;
    case OPT_BOOL:
    case OPT_UINT:
        if (parse_uint(value, &v) || v < row->min || v > row->max)
            return -1;
        break;
    }
    const char *n = row->name;
    if (!strcmp(n, "CHURN_RING_MB"))
        churn_opt.ring_bytes = v << 20;
    else if (!strcmp(n, "CHURN_EVENTS"))
        churn_opt.events = (int)v;
    else if (!strcmp(n, "CHURN_EPOCH_MS"))
        churn_opt.epoch_ms = v;
    else if (!strcmp(n, "CHURN_STACK_DEPTH"))
        churn_opt.stack_depth = (unsigned)v;
    else if (!strcmp(n, "CHURN_STACK_SAMPLE"))
        churn_opt.stack_sample = (uint32_t)v;
    else if (!strcmp(n, "CHURN_SEGMENT_KB"))
        churn_opt.segment_bytes = v << 10;
    else if (!strcmp(n, "CHURN_FLUSH_MS"))
        churn_opt.flush_ms = v;
    else if (!strcmp(n, "CHURN_ZSTD_LEVEL"))
        churn_opt.zstd_level = (int)v;
    else if (!strcmp(n, "CHURN_QUIET"))
        churn_opt.quiet = (int)v;
    else if (!strcmp(n, "CHURN_HELP") && v)
        churn_options_print_help();
    return 0;
}

int churn_options_load(void)
{
    int bad = 0;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const opt_row *row = &table[i];
        if (row->type == OPT_PATH) {
            snprintf(churn_opt.out, sizeof churn_opt.out, "churn-%d.zst", (int)getpid());
        } else if (apply(row, row->def)) {
            bad = 1; /* a wrong default is a bug; say so like a bad value */
        }
        const char *v = getenv(row->name);
        if (v && apply(row, v)) {
            churn_log("bad value %s=%s (%s); tracing disabled", row->name, v, row->help);
            return -1;
        }
    }
    return bad ? -1 : 0;
}

void churn_options_print_help(void)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        churn_log("%-19s default %-16s %s", table[i].name, table[i].def, table[i].help);
}
