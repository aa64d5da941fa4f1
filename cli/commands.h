/*
 * The `churn` command line as data: `churn help` prints it (cli/churn.c) and the man page
 * churn.1 is generated from it (cli/docgen.c).  The options of `churn run` are not here: each
 * sets one CHURN_* variable and is the `flag` of that variable's row in shim/base/options.c.
 */
#ifndef CHURN_CLI_COMMANDS_H
#define CHURN_CLI_COMMANDS_H

typedef struct churn_command {
    const char *usage; /* after "churn " */
    const char *help;
} churn_command;

static const churn_command churn_commands[] = {
    {"run [OPTIONS] [--] PROGRAM [ARGS...]",
     "runs PROGRAM with libchurn preloaded (the library installed with this churn, found "
     "from its own location), passes its exit status through (a death by signal is "
     "re-raised), and prints on stderr where the trace is and the command that analyzes it; "
     "of a tree, the trace of the image that allocated most (the program, behind a script "
     "in front of it) and the command that analyzes the whole tree.  When PROGRAM has ended "
     "and processes of its tree still run (it daemonized, or left them in the background), "
     "churn returns as the shell would and names each with the trace it goes on writing, "
     "the command that analyzes what it traced so far, and how to end it. "
     "Every signal sent to churn that a process can catch (with kill, timeout, or sigqueue, "
     "its value kept) is passed on to PROGRAM; those the terminal sends reach PROGRAM "
     "directly.  When PROGRAM stops for job control (^Z, TSTP, TTIN, TTOU), churn stops with "
     "it, and CONT continues both; a SIGSTOP sent to PROGRAM's own pid (a debugger) leaves "
     "churn waiting.  PROGRAM starts with the signal dispositions and mask churn started with "
     "(what nohup or a shell ignored stays ignored)."},
    {"analyze [--list | --pid PID[.N] | --exe NAME | --tree] [ANALYZE OPTIONS] TRACE",
     "runs churn-analyze, installed next to churn, with these arguments (churn-analyze(1)). "
     "A trace of a tree has an index beside it (NAME.index for CHURN_OUT=NAME.zst, one line "
     "per process image): --list lists the images (pid, parent, how each ended, command "
     "line, trace file), --pid PID analyzes the last image of PID (the program a script in "
     "front of it exec'd), PID.N the image after its N-th exec, --exe NAME the one image "
     "whose executable or argv[0] is NAME, and --tree all of them: a summary of the tree "
     "(each image's end, allocations, peak, live at exit and growth, the totals, which "
     "image allocated and which grew most), then each image's report.  TRACE may be the "
     "index itself."},
    {"attach [-o FILE] [--epoch-ms N] [--epoch-at F] [--epoch-signal SIG] [--sample-stacks N] "
     "[--sample-bytes N] [--events=0] [--for SECONDS] PID",
     "loads libchurn into the running process PID with ptrace and traces its allocations "
     "from then on into FILE (default churn-PID.zst here), epochs as the options of run "
     "say; the malloc family the program uses (glibc's, or an allocator linked in) and the "
     "C++ operators are patched at their entry while "
     "every thread is stopped.  Objects allocated before the attach are not in the trace: "
     "their frees are counted as frees of objects allocated before the attach (under "
     "--sample-bytes, with the frees, as an unsampled object's are).  With --for, "
     "detaches after SECONDS (or at ^C).  Refused, in one line with status 1, where ptrace "
     "is not allowed (kernel.yama.ptrace_scope, another user, another tracer), for a "
     "process that has ended or whose main thread has, one suspended in vfork or a vfork "
     "child not yet exec'd, and for a static or non-glibc program (docs/attach.md)."},
    {"detach PID",
     "puts the entries back, finishes the trace (an EXIT of kind detach: churn analyze reads "
     "it) and leaves PID running untraced, its allocator untouched; libchurn stays loaded, "
     "idle, and a later attach starts a new trace."},
    {"watch [--interval SECONDS] [--top N] TRACE|PID",
     "shows a running process in the terminal, drawn again every interval (1 s): its epochs, "
     "RSS and its parts (live, slack, pinned, free-resident, outside, not traced) with a "
     "sparkline each, and the top N functions by growth (10) with their growth per epoch, live "
     "bytes, retention and type, as churn analyze ranks them; a last line says how the "
     "process ended, and an exec is followed into the next image.  PID: the trace the process "
     "holds open.  q quits.  Without a terminal, one line per interval."},
    {"serve [--listen ADDR:PORT] [--top N] PATH...",
     "follows the traces PATH names (a trace, a tree's index, a directory of traces; images "
     "and files that appear later too) and serves them over HTTP, on 127.0.0.1:6065 unless "
     "--listen says otherwise: /metrics (Prometheus: RSS and its parts, live bytes and "
     "objects, allocation counters, growth, the top N functions by growth (20)), "
     "/debug/pprof/heap and /debug/pprof/allocs (gzipped pprof as Go serves it; ?pid=, "
     "?seconds=N for a delta) and an index at /.  Runs until SIGINT or SIGTERM "
     "(docs/live.md, docs/fleet.md)."},
    {"help", "prints the commands and the options of run"},
    {"--version", "prints the version"},
};

/* Exit statuses of churn itself, beside the program's own. */
static const churn_command churn_exit_statuses[] = {
    {"1",
     "attach or detach refused or failed (one line on stderr says why; the process goes on "
     "as it was); watch: the trace cannot be followed, or the pid holds none; serve: it "
     "cannot listen"},
    {"2", "bad usage (one line on stderr says what), -o or CHURN_OUT naming what cannot "
          "become a trace included (a directory, a FIFO, a symlink, a file in a missing or "
          "read-only directory): then PROGRAM is not run"},
    {"125", "churn could not set up the run (libchurn.so not found, fork failed)"},
    {"126", "PROGRAM was found but could not be executed"},
    {"127", "PROGRAM was not found"},
};

#endif
