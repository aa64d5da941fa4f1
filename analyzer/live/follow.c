#include "live/follow.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analyze/fragment.h"
#include "base/util.h"
#include "heap/livepass.h"
#include "heap/model.h"
#include "heap/spans.h"
#include "read/pipeline.h"
#include "read/records.h"
#include "symbols/symbolize.h"

/* A trace without an EXIT record whose file has not changed for this long, and whose pid no
   longer holds it open, belongs to a process that is gone.  A running process writes a
   segment at least every CHURN_FLUSH_MS (1 s by default), idle or not. */
#define GONE_NS 4000000000ull
/* A child that finishes the state gets this long before it is ended. */
#define FINISH_SECONDS 300

struct churn_follow {
    churn_tail *tail;
    churn_tail_sink sink;
    churn_warnings warnings;
    churn_symbolizer *sym;
    enum churn_follow_state state;
    char why[256];
    churn_follow_end end;
    int has_exit; /* the newest EXIT record (an exec's may be followed by more) */
    uint64_t exit_how, exit_detail;
    char exe[1024];
    uint64_t generation, restarts, gone_checked_ns;
    /* The state, made at the first segment and again at every restart. */
    int have;
    churn_analysis a;
    churn_decoder decoder;
    int live_on, spans_on;
    churn_live_pass live;
    churn_spans spans;
    churn_model model;
    churn_live_ops ops;
    churn_live_sink live_sink;
    int decoding, seg_bad; /* the segment's records began to be decoded; are damaged */
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the state ---- */

static void start_live(churn_follow *f, const char *allocator, uint64_t page)
{
    if (f->live_on)
        return;
    churn_model_for_allocator(allocator, page, &f->model);
    /* span occupancy needs addresses: traces with events only (as session.c) */
    f->spans_on = f->model.kind != CHURN_MODEL_NONE && (f->a.info->flags & CHURN_FILE_EVENTS);
    if (f->spans_on)
        churn_spans_init(&f->spans, &f->model);
    churn_live_pass_init(&f->live, 0, 0, f->spans_on ? &f->spans : NULL);
    f->live.peak = &f->a.peak;
    f->live_sink.epoch_marks = f->spans_on;
    f->live_on = 1;
}

/* The decoder's operations go to the live set as soon as a chunk is full, and at the end of
   every piece of records: nothing waits between polls. */
static void apply_ops(void *ctx)
{
    churn_follow *f = ctx;
    if (!f->live_on)
        start_live(f, "", f->a.info->page_size);
    churn_live_pass_apply(&f->live, &f->ops);
    f->ops.first += f->ops.len;
    f->ops.len = 0;
}

static void drop_state(churn_follow *f)
{
    if (!f->have)
        return;
    if (f->live_on) {
        churn_live_pass_free(&f->live);
        if (f->spans_on)
            churn_spans_free(&f->spans);
    }
    churn_decoder_free(&f->decoder);
    churn_analysis_free(&f->a);
    f->have = f->live_on = f->spans_on = 0;
}

static void make_state(churn_follow *f, const churn_segment_info *s)
{
    churn_window all = {0};
    churn_analysis_init(&f->a, churn_tail_info(f->tail), all, s->first_epoch, &f->warnings,
                        f->sym);
    memset(&f->decoder, 0, sizeof f->decoder);
    f->decoder.peak = &f->a.peak;
    f->ops.len = 0;
    f->ops.first = 0;
    f->live_sink = (churn_live_sink){.chunk = &f->ops, .full = apply_ops, .ctx = f};
    f->have = 1;
}

/* ---- the tail's sink ---- */

static void on_record(void *ctx, const churn_record *r)
{
    churn_follow *f = ctx;
    /* records after an exec's EXIT: the exec failed, and the image goes on */
    if (f->has_exit && f->exit_how == CHURN_EXIT_EXEC && r->tag != CHURN_REC_EXIT)
        f->has_exit = 0;
    switch (r->tag) {
    case CHURN_REC_ALLOCATOR:
        start_live(f, r->u.allocator.name, r->u.allocator.page_size);
        break;
    case CHURN_REC_MODULE:
        if (r->u.module.id == 0 && !f->exe[0])
            snprintf(f->exe, sizeof f->exe, "%s", r->u.module.path);
        break;
    case CHURN_REC_EXIT:
        f->has_exit = 1;
        f->exit_how = r->u.exit.how;
        f->exit_detail = r->u.exit.detail;
        break;
    }
    churn_analysis_record(&f->a, r);
}

static void seg_begin(void *ctx, const churn_segment_info *s, int restart)
{
    churn_follow *f = ctx;
    if (restart && f->have) {
        f->restarts++;
        drop_state(f);
    }
    if (!f->have)
        make_state(f, s);
    churn_analysis_segment(&f->a, s);
    f->decoding = f->seg_bad = 0;
    f->state = CHURN_FOLLOW_RUNNING;
}

static void seg_records(void *ctx, const uint8_t *raw, size_t len)
{
    churn_follow *f = ctx;
    if (f->seg_bad)
        return;
    f->decoder.version = f->a.info->version;
    size_t bad_off;
    unsigned bad_tag;
    int rc = f->decoding ? churn_decode_more(&f->decoder, raw, len, on_record, f, &f->live_sink,
                                             &bad_off, &bad_tag)
                         : churn_decode_records(&f->decoder, raw, len, on_record, f,
                                                &f->live_sink, &bad_off, &bad_tag);
    f->decoding = 1;
    apply_ops(f);
    if (rc != 0) {
        churn_warn(&f->warnings,
                   "segment %llu: malformed record (tag 0x%02x); rest of the segment ignored",
                   (unsigned long long)f->a.segment_seq, bad_tag);
        f->seg_bad = 1;
    }
    f->generation++;
}

/* ---- the process ---- */

/* Whether pid holds the file (dev, ino) open: 1, 0, or -1 when that cannot be seen (another
   user's process). */
static int holds(uint64_t pid, uint64_t dev, uint64_t ino)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%llu/fd", (unsigned long long)pid);
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        char path[320];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        found = e->d_name[0] != '.' && stat(path, &st) == 0 && (uint64_t)st.st_dev == dev &&
                (uint64_t)st.st_ino == ino;
    }
    closedir(d);
    return found;
}

static void check_gone(churn_follow *f)
{
    uint64_t now = now_ns();
    if (now - churn_tail_changed_ns(f->tail) < GONE_NS || now - f->gone_checked_ns < 1000000000)
        return;
    f->gone_checked_ns = now;
    uint64_t dev, ino;
    churn_tail_file_id(f->tail, &dev, &ino);
    if (holds(churn_tail_info(f->tail)->pid, dev, ino) == 0) {
        f->state = CHURN_FOLLOW_ENDED;
        f->end = (churn_follow_end){CHURN_FOLLOW_GONE, 0, 0};
    }
}

churn_follow *churn_follow_new(const char *trace)
{
    churn_follow *f = churn_xcalloc(1, sizeof *f);
    f->tail = churn_tail_open(trace);
    f->sym = churn_symbolizer_new();
    f->sink = (churn_tail_sink){seg_begin, seg_records, f};
    f->ops.cap = CHURN_PIPELINE_CHUNK_OPS;
    f->ops.objects = churn_xmalloc(f->ops.cap * sizeof *f->ops.objects);
    f->ops.kinds = churn_xmalloc(f->ops.cap);
    f->state = CHURN_FOLLOW_WAITING;
    return f;
}

void churn_follow_free(churn_follow *f)
{
    if (!f)
        return;
    drop_state(f);
    churn_tail_close(f->tail);
    churn_symbolizer_free(f->sym);
    churn_warnings_free(&f->warnings);
    free(f->ops.objects);
    free(f->ops.kinds);
    free(f);
}

int churn_follow_poll(churn_follow *f, size_t budget)
{
    if (f->state == CHURN_FOLLOW_FAILED)
        return 0;
    if (f->state == CHURN_FOLLOW_ENDED && f->end.kind != CHURN_FOLLOW_EXIT)
        return 0; /* gone or replaced: nothing more can come */
    char err[256];
    enum churn_tail_result r =
        churn_tail_poll(f->tail, &f->sink, budget, &f->warnings, err, sizeof err);
    if (r == CHURN_TAIL_FAILED) {
        f->state = CHURN_FOLLOW_FAILED;
        snprintf(f->why, sizeof f->why, "%s", err);
        return 0;
    }
    if (r == CHURN_TAIL_REPLACED) {
        f->state = CHURN_FOLLOW_ENDED;
        f->end = (churn_follow_end){CHURN_FOLLOW_REPLACED, 0, 0};
        return 0;
    }
    if (!f->have) {
        snprintf(f->why, sizeof f->why, "%s", churn_tail_waiting(f->tail));
        return 0;
    }
    if (f->has_exit) {
        f->state = CHURN_FOLLOW_ENDED;
        f->end = (churn_follow_end){CHURN_FOLLOW_EXIT, f->exit_how, f->exit_detail};
    } else {
        f->state = CHURN_FOLLOW_RUNNING;
        if (r == CHURN_TAIL_IDLE)
            check_gone(f);
    }
    return r == CHURN_TAIL_READ;
}

enum churn_follow_state churn_follow_state_of(const churn_follow *f)
{
    return f->state;
}

const char *churn_follow_why(const churn_follow *f)
{
    return f->why;
}

const churn_follow_end *churn_follow_end_of(const churn_follow *f)
{
    return &f->end;
}

const char *churn_follow_end_text(const churn_follow *f, char *buf, size_t len)
{
    const churn_follow_end *e = &f->end;
    if (e->kind == CHURN_FOLLOW_REPLACED)
        return "its trace file was replaced by another run's";
    if (e->kind == CHURN_FOLLOW_GONE) {
        const churn_trace_info *i = churn_tail_info(f->tail);
        if (i && i->ends_open && f->have && f->a.trace_start_ns)
            snprintf(buf, len,
                     "gone without an exit libchurn saw (kill -9, the OOM killer, an inline "
                     "exit_group): the trace holds what it had at its last checkpoint, %.3f s "
                     "in",
                     (double)(i->checkpoint_ns - f->a.trace_start_ns) / 1e9);
        else
            snprintf(buf, len,
                     "gone without an exit libchurn saw (kill -9, the OOM killer, "
                     "an inline exit_group)");
        return buf;
    }
    const char *sig = e->detail > 0 && e->detail < NSIG ? sigabbrev_np((int)e->detail) : NULL;
    switch (e->how) {
    case CHURN_EXIT_NORMAL:
        snprintf(buf, len, "exit %llu", (unsigned long long)e->detail);
        break;
    case CHURN_EXIT_UNDERSCORE:
        snprintf(buf, len, "_exit %llu", (unsigned long long)e->detail);
        break;
    case CHURN_EXIT_QUICK:
        snprintf(buf, len, "quick_exit %llu", (unsigned long long)e->detail);
        break;
    case CHURN_EXIT_THREADS:
        snprintf(buf, len, "exit %llu (by its last thread)", (unsigned long long)e->detail);
        break;
    case CHURN_EXIT_SIGNAL:
        snprintf(buf, len, "signal %llu%s%s%s", (unsigned long long)e->detail, sig ? " (" : "",
                 sig ? sig : "", sig ? ")" : "");
        break;
    case CHURN_EXIT_EXEC:
        snprintf(buf, len, "exec");
        break;
    case CHURN_EXIT_DETACH:
        snprintf(buf, len, "detached (churn detach): the process runs on untraced");
        break;
    default:
        snprintf(buf, len, "an exit of unknown kind %llu", (unsigned long long)e->how);
    }
    return buf;
}

const char *churn_follow_trace(const churn_follow *f)
{
    return churn_tail_path(f->tail);
}

const char *churn_follow_exe(const churn_follow *f)
{
    return f->exe;
}

void churn_follow_file(const churn_follow *f, uint64_t *dev, uint64_t *ino)
{
    churn_tail_file_id(f->tail, dev, ino);
}

churn_analysis *churn_follow_analysis(churn_follow *f)
{
    return f->have ? &f->a : NULL;
}

const churn_trace_info *churn_follow_info(const churn_follow *f)
{
    return churn_tail_info(f->tail);
}

const churn_warnings *churn_follow_warnings(const churn_follow *f)
{
    return &f->warnings;
}

uint64_t churn_follow_generation(const churn_follow *f)
{
    return f->generation;
}

uint64_t churn_follow_restarts(const churn_follow *f)
{
    return f->restarts;
}

uint64_t churn_follow_lost(const churn_follow *f)
{
    return churn_tail_lost(f->tail);
}

/* ---- figures of the end of a trace, in a child ---- */

/* In the child: what churn-analyze does once the last segment is read (session.c). */
static void finish_child(churn_follow *f, churn_follow_fn fn, void *ctx, int fd)
{
    alarm(FINISH_SECONDS);
    FILE *out = fdopen(fd, "w");
    if (!out)
        _exit(3);
    if (!f->live_on)
        start_live(f, "", f->a.info->page_size);
    churn_live_pass_settle(&f->live);
    churn_analysis_finish(&f->a, &f->live);
    churn_fragment_build(&f->a.frag, &f->model, 0, f->spans_on ? &f->spans : NULL, &f->live,
                         &f->a);
    fn(ctx, &f->a, out);
    _exit(fflush(out) != 0 || ferror(out) ? 4 : 0);
}

void churn_follow_settle(churn_follow *f)
{
    churn_symbolizer_settle(f->sym);
}

struct churn_follow_job {
    pid_t pid;
    FILE *tmp;
};

churn_follow_job *churn_follow_finish_start(churn_follow *f, churn_follow_fn fn, void *ctx,
                                            char *err, size_t errlen)
{
    if (!f->have) {
        snprintf(err, errlen, "nothing read yet: %s", f->why);
        return NULL;
    }
    FILE *tmp = tmpfile();
    if (!tmp) {
        snprintf(err, errlen, "no temporary file: %s", strerror(errno));
        return NULL;
    }
    /* The child has only this thread: the symbolizer's must be done, and buffered output
       must not be written twice. */
    churn_follow_settle(f);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        fclose(tmp);
        return NULL;
    }
    if (pid == 0)
        finish_child(f, fn, ctx, dup(fileno(tmp)));
    churn_follow_job *j = churn_xmalloc(sizeof *j);
    j->pid = pid;
    j->tmp = tmp;
    return j;
}

int churn_follow_finish_done(churn_follow_job *j, int wait, char **buf, size_t *len, char *err,
                             size_t errlen)
{
    *buf = NULL;
    *len = 0;
    int status;
    pid_t got;
    while ((got = waitpid(j->pid, &status, wait ? 0 : WNOHANG)) < 0 && errno == EINTR)
        ;
    if (got == 0)
        return 0;
    int rc = -1;
    struct stat st;
    if (got < 0) {
        snprintf(err, errlen, "waitpid: %s", strerror(errno));
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (WIFSIGNALED(status))
            snprintf(err, errlen, "the analysis of the state ended by signal %d%s",
                     WTERMSIG(status),
                     WTERMSIG(status) == SIGALRM ? " (it took too long)" : "");
        else
            snprintf(err, errlen, "the analysis of the state failed (status %d)",
                     WEXITSTATUS(status));
    } else if (fstat(fileno(j->tmp), &st) != 0) {
        snprintf(err, errlen, "%s", strerror(errno));
    } else {
        *len = (size_t)st.st_size;
        *buf = churn_xmalloc(*len + 1);
        rc = pread(fileno(j->tmp), *buf, *len, 0) == (ssize_t)*len ? 0 : -1;
        (*buf)[*len] = '\0';
        if (rc)
            snprintf(err, errlen, "reading the analysis back failed");
    }
    fclose(j->tmp);
    free(j);
    if (rc) {
        free(*buf);
        *buf = NULL;
        *len = 0;
    }
    return rc ? -1 : 1;
}

void churn_follow_finish_cancel(churn_follow_job *j)
{
    if (!j)
        return;
    kill(j->pid, SIGKILL);
    char *buf;
    size_t len;
    char err[64];
    churn_follow_finish_done(j, 1, &buf, &len, err, sizeof err);
    free(buf);
}
