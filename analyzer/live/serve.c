#include "live/serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "live/find.h"
#include "live/follow.h"
#include "live/profile.h"
#include "live/prom.h"
#include "live/view.h"

#define DEFAULT_LISTEN "127.0.0.1:6065"
#define MAX_PROCS 256   /* traces followed at once */
#define MAX_JOBS 16     /* profile requests waiting for the follower */
#define MAX_SECONDS 300 /* the longest delta profile */
#define CONNECTIONS 128 /* connections at once, each its own thread */
#define CONNECTIONS_PER_IP 64
#define IDLE_TIMEOUT_S 10       /* a connection that sends nothing this long is closed */
#define HEADER_BYTES (32 << 10) /* a request's line and headers must fit in this */
#define READ_BUDGET (8u << 20)  /* raw bytes one trace is read before the next gets a turn */
#define VIEW_WANTED_S 60.0      /* views are made while someone asked for one this recently */
#define VIEW_WAIT_S 5.0         /* how long /metrics waits for a process's first view */
#define VIEW_CHILDREN 4         /* views computed at once, each in a child process */
#define ENDED_KEEP_S 300.0      /* an image that ended is served this long, then let go */

typedef struct proc {
    uint64_t id; /* handlers find a process again by it after a wait */
    char *trace;
    churn_follow *f;       /* the follower thread's alone, with job and job_gen */
    churn_follow_job *job; /* its view being computed */
    uint64_t job_gen;
    /* What the handlers read, under the server's lock. */
    enum churn_follow_state state;
    char why[256], end[512], exe[256];
    uint64_t pid, restarts, lost, alloc_bytes;
    int readable, exec_done;
    double ended_at; /* when its end was seen; 0 while it runs */
    int retire;      /* replaced by a new run's follower: let go now */
    uint64_t gen;    /* the follower's generation, as of its last read */
    churn_view view;
    int has_view;
    uint64_t view_gen;
    double view_at;
    char view_err[256];
} proc;

typedef struct job {
    int base_only; /* take a delta's baseline, not a profile */
    proc *p;
    int allocs;
    churn_profile_base *base;
    int done, failed;
    char *body;
    size_t len;
    char err[256];
    struct job *next;
} job;

typedef struct server {
    char **paths;
    size_t npaths, top;
    double interval;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    proc **procs;
    size_t nprocs;
    uint64_t next_id;
    int full_said;
    /* The files of the images let go, so that a directory's old traces are not followed
       again (the follower thread's alone). */
    struct file_id {
        uint64_t dev, ino;
    } * done;
    size_t ndone, done_cap;
    job *jobs, *last_job;
    size_t njobs;
    double wanted_at;
    int stopping;
    size_t children; /* view jobs running (the follower thread's) */
} server;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct timespec deadline(double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double t = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + seconds;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - floor(t)) * 1e9);
    return ts;
}

/* ---- the follower thread ---- */

/* With the lock held: the newest process following trace, or NULL. */
static proc *find_proc(server *s, const char *trace)
{
    for (size_t i = s->nprocs; i-- > 0;)
        if (!s->procs[i]->retire && !strcmp(s->procs[i]->trace, trace))
            return s->procs[i];
    return NULL;
}

/* With the lock held. */
static proc *proc_by_id(server *s, uint64_t id)
{
    for (size_t i = 0; i < s->nprocs; i++)
        if (s->procs[i]->id == id)
            return s->procs[i];
    return NULL;
}

static int let_go_before(const server *s, const char *trace)
{
    struct stat st;
    if (stat(trace, &st) != 0)
        return 0;
    for (size_t i = 0; i < s->ndone; i++)
        if (s->done[i].dev == (uint64_t)st.st_dev && s->done[i].ino == (uint64_t)st.st_ino)
            return 1;
    return 0;
}

static void add_proc(void *ctx, const char *trace)
{
    server *s = ctx;
    if (let_go_before(s, trace))
        return;
    pthread_mutex_lock(&s->lock);
    if (!find_proc(s, trace)) {
        if (s->nprocs == MAX_PROCS) {
            if (!s->full_said++)
                fprintf(stderr,
                        "churn serve: following %d traces already; %s and later ones "
                        "are not\n",
                        MAX_PROCS, trace);
        } else {
            proc *p = churn_xcalloc(1, sizeof *p);
            p->id = ++s->next_id;
            p->trace = churn_xstrdup(trace);
            p->f = churn_follow_new(trace);
            p->state = CHURN_FOLLOW_WAITING;
            snprintf(p->why, sizeof p->why, "not read yet");
            s->procs = churn_xrealloc(s->procs, (s->nprocs + 1) * sizeof *s->procs);
            s->procs[s->nprocs++] = p;
        }
    }
    pthread_mutex_unlock(&s->lock);
}

static void discover(server *s)
{
    for (size_t i = 0; i < s->npaths; i++)
        churn_find_traces(s->paths[i], add_proc, s);
}

/* Reads what is new in p's trace, and publishes its state. */
static void read_proc(server *s, proc *p)
{
    double t0 = now_s();
    while (churn_follow_poll(p->f, READ_BUDGET) && now_s() - t0 < 0.2)
        ;
    const churn_analysis *a = churn_follow_analysis(p->f);
    const churn_trace_info *info = churn_follow_info(p->f);
    enum churn_follow_state st = churn_follow_state_of(p->f);
    const churn_follow_end *end = churn_follow_end_of(p->f);
    char buf[512];
    /* after an exec, the next image's trace, once the index lists it */
    char *next = NULL;
    if (st == CHURN_FOLLOW_ENDED && end->kind == CHURN_FOLLOW_EXIT &&
        end->how == CHURN_EXIT_EXEC && !p->exec_done) {
        next = churn_find_next_image(p->trace);
        p->exec_done = next != NULL;
    }
    pthread_mutex_lock(&s->lock);
    p->state = st;
    snprintf(p->why, sizeof p->why, "%s", churn_follow_why(p->f));
    if (st == CHURN_FOLLOW_ENDED) {
        snprintf(p->end, sizeof p->end, "%s", churn_follow_end_text(p->f, buf, sizeof buf));
        if (!p->ended_at)
            p->ended_at = now_s();
    }
    /* a new run took the path: its own follower replaces this one */
    p->retire = st == CHURN_FOLLOW_ENDED && end->kind == CHURN_FOLLOW_REPLACED;
    snprintf(p->exe, sizeof p->exe, "%s", churn_follow_exe(p->f));
    p->pid = info ? info->pid : 0;
    p->readable = a != NULL;
    p->alloc_bytes = a ? a->totals.alloc_bytes : 0;
    p->restarts = churn_follow_restarts(p->f);
    p->lost = churn_follow_lost(p->f);
    p->gen = churn_follow_generation(p->f);
    pthread_mutex_unlock(&s->lock);
    if (p->retire)
        add_proc(s, p->trace);
    if (next) {
        add_proc(s, next);
        free(next);
    }
}

/* Lets go of the images that ended a while ago and of those a new run replaced, unless a
   queued job still names them; handlers waiting for a delta find theirs again by its id. */
static void retire(server *s)
{
    for (size_t i = 0; i < s->nprocs;) {
        proc *p = s->procs[i];
        pthread_mutex_lock(&s->lock);
        int go = p->retire || (p->ended_at && now_s() - p->ended_at > ENDED_KEEP_S);
        for (job *j = s->jobs; go && j; j = j->next)
            go = j->p != p;
        if (go) {
            memmove(s->procs + i, s->procs + i + 1, (s->nprocs - i - 1) * sizeof *s->procs);
            s->nprocs--;
        }
        pthread_mutex_unlock(&s->lock);
        if (!go) {
            i++;
            continue;
        }
        uint64_t dev, ino;
        churn_follow_file(p->f, &dev, &ino);
        if (ino && !p->retire) {
            churn_reserve(&s->done, &s->done_cap, s->ndone + 1, sizeof *s->done);
            s->done[s->ndone++] = (struct file_id){dev, ino};
        }
        if (p->job) {
            churn_follow_finish_cancel(p->job);
            s->children--;
        }
        churn_follow_free(p->f);
        free(p->trace);
        free(p);
    }
}

/* Takes p's view once its child computed it, and starts the next when p's trace moved on
   since the last and a child is free. */
static void refresh_view(server *s, proc *p, int wanted)
{
    char err[256];
    if (p->job) {
        churn_view *v = churn_xmalloc(sizeof *v);
        int rc = churn_view_done(p->job, 0, v, err, sizeof err);
        if (rc != 0) {
            p->job = NULL;
            s->children--;
            pthread_mutex_lock(&s->lock);
            p->view_at = now_s();
            if (rc > 0) {
                p->view = *v;
                p->has_view = 1;
                p->view_gen = p->job_gen;
                p->view_err[0] = '\0';
            } else {
                snprintf(p->view_err, sizeof p->view_err, "%s", err);
            }
            pthread_cond_broadcast(&s->changed);
            pthread_mutex_unlock(&s->lock);
        }
        free(v);
        if (p->job)
            return;
    }
    if (!wanted || !churn_follow_analysis(p->f) || s->children >= VIEW_CHILDREN)
        return;
    uint64_t gen = churn_follow_generation(p->f);
    pthread_mutex_lock(&s->lock);
    int due = (!p->has_view || p->view_gen != gen) && now_s() - p->view_at >= s->interval;
    pthread_mutex_unlock(&s->lock);
    if (!due)
        return;
    p->job_gen = gen;
    /* the child has this thread alone: no follower's symbolizer may have one of its own */
    for (size_t i = 0; i < s->nprocs; i++)
        churn_follow_settle(s->procs[i]->f);
    p->job = churn_view_start(p->f, s->top, err, sizeof err);
    if (p->job) {
        s->children++;
    } else {
        pthread_mutex_lock(&s->lock);
        p->view_at = now_s();
        snprintf(p->view_err, sizeof p->view_err, "%s", err);
        pthread_cond_broadcast(&s->changed);
        pthread_mutex_unlock(&s->lock);
    }
}

static void run_job(job *j)
{
    if (j->base_only) {
        j->failed = churn_profile_base_take(j->p->f, j->base) != 0;
        if (j->failed)
            snprintf(j->err, sizeof j->err, "nothing read yet");
        return;
    }
    FILE *out = open_memstream(&j->body, &j->len);
    if (!out) {
        j->failed = 1;
        snprintf(j->err, sizeof j->err, "out of memory");
        return;
    }
    j->failed = churn_profile_write(j->p->f, j->allocs, j->base, out, j->err, sizeof j->err);
    if (fclose(out) != 0 && !j->failed) {
        j->failed = 1;
        snprintf(j->err, sizeof j->err, "out of memory");
    }
    if (j->failed) {
        free(j->body);
        j->body = NULL;
        j->len = 0;
    }
}

static void run_jobs(server *s)
{
    for (;;) {
        pthread_mutex_lock(&s->lock);
        job *j = s->jobs;
        if (j) {
            s->jobs = j->next;
            if (!s->jobs)
                s->last_job = NULL;
        }
        pthread_mutex_unlock(&s->lock);
        if (!j)
            return;
        run_job(j);
        pthread_mutex_lock(&s->lock);
        j->done = 1;
        s->njobs--;
        pthread_cond_broadcast(&s->changed);
        pthread_mutex_unlock(&s->lock);
    }
}

static void *follower(void *arg)
{
    server *s = arg;
    double next_discovery = 0;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        int stopping = s->stopping;
        size_t n = s->nprocs;
        int wanted = now_s() - s->wanted_at < VIEW_WANTED_S;
        pthread_mutex_unlock(&s->lock);
        if (stopping)
            break;
        if (now_s() >= next_discovery) {
            discover(s);
            next_discovery = now_s() + 1.0;
        }
        for (size_t i = 0; i < n; i++) {
            read_proc(s, s->procs[i]);
            run_jobs(s);
            refresh_view(s, s->procs[i], wanted);
        }
        run_jobs(s);
        retire(s);
        pthread_mutex_lock(&s->lock);
        if (!s->jobs && !s->stopping) {
            struct timespec ts = deadline(0.1);
            pthread_cond_timedwait(&s->changed, &s->lock, &ts);
        }
        pthread_mutex_unlock(&s->lock);
    }
    return NULL;
}

/* ---- requests ---- */

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *type,
                               char *body, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result error(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static enum MHD_Result error(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *body = NULL;
    int n = vasprintf(&body, fmt, ap);
    va_end(ap);
    if (n < 0)
        return MHD_NO;
    char *line = NULL;
    n = asprintf(&line, "%s\n", body);
    free(body);
    if (n < 0)
        return MHD_NO;
    return respond(c, status, "text/plain; charset=utf-8", line, (size_t)n);
}

/* A query value made of digits only (at most max), or -1; 0 when absent.  Its length is
   the decoded value's own: a %00 inside it does not cut it short. */
static int number_arg(struct MHD_Connection *c, const char *key, unsigned long long max,
                      unsigned long long *out)
{
    const char *v;
    size_t len;
    if (MHD_lookup_connection_value_n(c, MHD_GET_ARGUMENT_KIND, key, strlen(key), &v, &len) !=
            MHD_YES ||
        !v)
        return 0;
    if (!len || len > 19 || strspn(v, "0123456789") != len)
        return -1;
    *out = strtoull(v, NULL, 10);
    return *out <= max ? 1 : -1;
}

/* With the lock held: the process of ?pid= (its newest trace), or the readable one that
   allocated most. */
static proc *pick(server *s, int has_pid, unsigned long long pid)
{
    proc *best = NULL;
    for (size_t i = 0; i < s->nprocs; i++) {
        proc *p = s->procs[i];
        if (has_pid ? p->pid == pid && (p->readable || !best)
                    : p->readable && (!best || p->alloc_bytes > best->alloc_bytes))
            best = p;
    }
    return best;
}

/* Queues j for the follower and waits until it is done; with the lock held.  -1 when it
   cannot be queued (too many waiting, or the server is stopping). */
static int wait_job(server *s, job *j)
{
    if (s->njobs >= MAX_JOBS || s->stopping)
        return -1;
    s->njobs++;
    if (s->last_job)
        s->last_job->next = j;
    else
        s->jobs = j;
    s->last_job = j;
    pthread_cond_broadcast(&s->changed);
    /* the follower, or at the end the main thread, runs every job queued */
    while (!j->done)
        pthread_cond_wait(&s->changed, &s->lock);
    return 0;
}

static enum MHD_Result proc_unavailable(struct MHD_Connection *c, const proc *p)
{
    if (p->state == CHURN_FOLLOW_FAILED)
        return error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s: cannot be read: %s", p->trace,
                     p->why);
    return error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "%s: nothing read yet: %s", p->trace, p->why);
}

static enum MHD_Result pprof(server *s, struct MHD_Connection *c, int allocs)
{
    unsigned long long pid = 0, seconds = 0;
    int has_pid = number_arg(c, "pid", UINT64_MAX >> 1, &pid);
    int has_seconds = number_arg(c, "seconds", MAX_SECONDS, &seconds);
    if (has_pid < 0)
        return error(c, MHD_HTTP_BAD_REQUEST, "pid wants a process id (digits)");
    if (has_seconds < 0 || (has_seconds && seconds == 0))
        return error(c, MHD_HTTP_BAD_REQUEST, "seconds wants 1 to %d", MAX_SECONDS);
    pthread_mutex_lock(&s->lock);
    proc *p = pick(s, has_pid, pid);
    if (!p || !p->readable) {
        enum MHD_Result rc =
            p         ? proc_unavailable(c, p)
            : has_pid ? error(c, MHD_HTTP_NOT_FOUND, "no process %llu is followed", pid)
                      : error(c, MHD_HTTP_NOT_FOUND, "no process is followed yet");
        pthread_mutex_unlock(&s->lock);
        return rc;
    }
    churn_profile_base base = {0};
    job j = {.p = p, .allocs = allocs};
    int busy = 0;
    if (has_seconds) {
        job b = {.base_only = 1, .p = p, .base = &base};
        busy = wait_job(s, &b) != 0;
        if (!busy && b.failed) {
            pthread_mutex_unlock(&s->lock);
            return error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "%s", b.err);
        }
        /* Go's delta profiles: the difference over the next N seconds */
        uint64_t id = p->id;
        struct timespec ts = deadline((double)seconds);
        while (!busy && !s->stopping &&
               pthread_cond_timedwait(&s->changed, &s->lock, &ts) != ETIMEDOUT)
            ;
        j.p = p = proc_by_id(s, id);
        j.base = &base;
        if (!p && !busy) {
            pthread_mutex_unlock(&s->lock);
            churn_profile_base_free(&base);
            return error(c, MHD_HTTP_NOT_FOUND, "the process is no longer followed");
        }
    }
    if (!busy && !s->stopping)
        busy = wait_job(s, &j) != 0;
    int stopping = s->stopping;
    pthread_mutex_unlock(&s->lock);
    churn_profile_base_free(&base);
    if (busy || stopping)
        return error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "%s",
                     stopping ? "the server is stopping" : "too many profiles asked at once");
    if (j.failed)
        return error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s", j.err);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(j.len, j.body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(j.body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION,
                            allocs ? "attachment; filename=\"allocs\""
                                   : "attachment; filename=\"heap\"");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return rc;
}

/* With the lock held: waits (a while) until every readable process has a view, and every
   one that ended the view of all its trace. */
static void wait_views(server *s)
{
    s->wanted_at = now_s();
    pthread_cond_broadcast(&s->changed);
    struct timespec ts = deadline(VIEW_WAIT_S);
    for (;;) {
        int missing = 0;
        for (size_t i = 0; i < s->nprocs; i++) {
            const proc *p = s->procs[i];
            missing |=
                p->readable && !p->view_err[0] &&
                (!p->has_view || (p->state == CHURN_FOLLOW_ENDED && p->view_gen != p->gen));
        }
        if (!missing || s->stopping ||
            pthread_cond_timedwait(&s->changed, &s->lock, &ts) == ETIMEDOUT)
            return;
    }
}

static enum MHD_Result metrics(server *s, struct MHD_Connection *c)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return MHD_NO;
    pthread_mutex_lock(&s->lock);
    wait_views(s);
    churn_prom_proc *pp = churn_xcalloc(s->nprocs ? s->nprocs : 1, sizeof *pp);
    size_t n = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        const proc *p = s->procs[i];
        if (p->retire)
            continue; /* replaced by a new run's follower */
        pp[n++] = (churn_prom_proc){p->trace,
                                    p->exe,
                                    p->pid,
                                    p->readable,
                                    p->state != CHURN_FOLLOW_ENDED,
                                    p->restarts,
                                    p->lost,
                                    p->has_view ? &p->view : NULL};
    }
    churn_prom_write(out, pp, n);
    pthread_mutex_unlock(&s->lock);
    free(pp);
    if (fclose(out) != 0) {
        free(text);
        return MHD_NO;
    }
    return respond(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text, len);
}

static enum MHD_Result index_page(server *s, struct MHD_Connection *c)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return MHD_NO;
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>churn serve</title>"
          "</head><body>\n<h1>churn serve</h1>\n<p><a href=\"/metrics\">/metrics</a> "
          "(Prometheus)</p>\n<table border=\"1\" cellpadding=\"4\">\n<tr><th>pid</th>"
          "<th>executable</th><th>state</th><th>live</th><th>rss</th><th>profiles</th>"
          "<th>trace</th></tr>\n",
          out);
    pthread_mutex_lock(&s->lock);
    s->wanted_at = now_s();
    for (size_t i = 0; i < s->nprocs; i++) {
        const proc *p = s->procs[i];
        if (p->retire)
            continue;
        char b1[32], b2[32];
        fprintf(out, "<tr><td>%llu</td><td>", (unsigned long long)p->pid);
        churn_html_escape(out, p->exe[0] ? p->exe : "?");
        fputs("</td><td>", out);
        churn_html_escape(out, p->state == CHURN_FOLLOW_RUNNING ? "running"
                  : p->state == CHURN_FOLLOW_ENDED ? p->end
                                                   : p->why);
        fprintf(out, "</td><td>%s</td><td>%s</td><td>",
                p->has_view ? churn_view_bytes((double)p->view.live_bytes, b1, sizeof b1) : "-",
                p->has_view && p->view.has_rss
                    ? churn_view_bytes((double)p->view.rss, b2, sizeof b2)
                    : "-");
        if (p->readable)
            fprintf(out,
                    "<a href=\"/debug/pprof/heap?pid=%llu\">heap</a> "
                    "<a href=\"/debug/pprof/allocs?pid=%llu\">allocs</a>",
                    (unsigned long long)p->pid, (unsigned long long)p->pid);
        fputs("</td><td>", out);
        churn_html_escape(out, p->trace);
        fputs("</td></tr>\n", out);
    }
    pthread_mutex_unlock(&s->lock);
    fputs("</table>\n</body></html>\n", out);
    if (fclose(out) != 0) {
        free(text);
        return MHD_NO;
    }
    return respond(c, MHD_HTTP_OK, "text/html; charset=utf-8", text, len);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state)
{
    (void)version;
    (void)upload;
    server *s = cls;
    static int headers_done;
    /* the first call has the headers; a body, which no GET needs, is taken and dropped */
    if (!*state) {
        *state = &headers_done;
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
        return error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD");
    if (!strcmp(url, "/metrics"))
        return metrics(s, c);
    if (!strcmp(url, "/debug/pprof/heap"))
        return pprof(s, c, 0);
    if (!strcmp(url, "/debug/pprof/allocs"))
        return pprof(s, c, 1);
    if (!strcmp(url, "/") || !strcmp(url, "/debug/pprof/"))
        return index_page(s, c);
    return error(c, MHD_HTTP_NOT_FOUND,
                 "not found: /, /metrics, /debug/pprof/heap and /debug/pprof/allocs are");
}

/* ---- the command ---- */

/* ADDR:PORT, [ADDR6]:PORT or :PORT (the loopback address). */
static int parse_listen(const char *arg, struct sockaddr_storage *sa, socklen_t *len)
{
    char host[256];
    const char *colon = strrchr(arg, ':');
    if (!colon || (size_t)(colon - arg) >= sizeof host || !colon[1])
        return -1;
    memcpy(host, arg, (size_t)(colon - arg));
    host[colon - arg] = '\0';
    if (host[0] == '[') {
        size_t n = strlen(host);
        if (n < 2 || host[n - 1] != ']')
            return -1;
        memmove(host, host + 1, n - 2);
        host[n - 2] = '\0';
    }
    if (!host[0])
        snprintf(host, sizeof host, "127.0.0.1");
    const char *port = colon + 1;
    if (strspn(port, "0123456789") != strlen(port) || strlen(port) > 5 || atoi(port) > 65535)
        return -1;
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
                             .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai;
    if (getaddrinfo(host, port, &hints, &ai) != 0)
        return -1;
    memcpy(sa, ai->ai_addr, ai->ai_addrlen);
    *len = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

static int usage(const char *fmt, const char *arg)
{
    fputs("churn serve: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs(" (see `churn help`)\n", stderr);
    return 2;
}

int churn_serve_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"listen", required_argument, NULL, 'l'},
        {"top", required_argument, NULL, 't'},
        {NULL, 0, NULL, 0},
    };
    const char *listen = DEFAULT_LISTEN;
    server s = {.top = 20, .interval = 1.0};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+l:t:", longopts, NULL)) != -1) {
        switch (c) {
        case 'l':
            listen = optarg;
            break;
        case 't': {
            char *end;
            errno = 0;
            unsigned long v = strtoul(optarg, &end, 10);
            if (errno || *end || end == optarg || optarg[0] == '-' || v < 1 ||
                v > CHURN_VIEW_TOP_MAX)
                return usage("--top wants 1 to 100: %s", optarg);
            s.top = v;
            break;
        }
        default:
            return usage("unknown or incomplete option %s", argv[optind - 1]);
        }
    }
    if (optind == argc)
        return usage("give a trace, a tree's index or a directory of traces%s", "");
    struct sockaddr_storage sa;
    socklen_t salen;
    if (parse_listen(listen, &sa, &salen) != 0)
        return usage(
            "--listen wants ADDR:PORT, [ADDR]:PORT or :PORT with a numeric address: %s",
            listen);
    s.paths = argv + optind;
    s.npaths = (size_t)(argc - optind);
    pthread_mutex_init(&s.lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_cond_init(&s.changed, &ca);
    /* Signals are taken by this thread alone, with sigwait. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    unsigned flags = MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_THREAD_PER_CONNECTION |
                     (sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    uint16_t port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                                   : ((struct sockaddr_in *)&sa)->sin_port);
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, port, NULL, NULL, handle, &s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned)CONNECTIONS_PER_IP, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HEADER_BYTES, MHD_OPTION_THREAD_STACK_SIZE,
        (size_t)(1 << 20), MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "churn serve: cannot listen on %s: %s\n", listen,
                errno ? strerror(errno) : "libmicrohttpd refused");
        return 1;
    }
    discover(&s);
    pthread_t thread;
    if (pthread_create(&thread, NULL, follower, &s) != 0) {
        fputs("churn serve: cannot start a thread\n", stderr);
        MHD_stop_daemon(d);
        return 1;
    }
    fprintf(stderr, "churn serve: listening on http://%s/ (%zu trace%s to follow so far)\n",
            listen, s.nprocs, s.nprocs == 1 ? "" : "s");
    int sig = 0;
    sigwait(&set, &sig);
    pthread_mutex_lock(&s.lock);
    s.stopping = 1;
    pthread_cond_broadcast(&s.changed);
    pthread_mutex_unlock(&s.lock);
    pthread_join(thread, NULL);
    run_jobs(&s); /* handlers still waiting get their answers */
    MHD_stop_daemon(d);
    for (size_t i = 0; i < s.nprocs; i++) {
        churn_follow_finish_cancel(s.procs[i]->job);
        churn_follow_free(s.procs[i]->f);
        free(s.procs[i]->trace);
        free(s.procs[i]);
    }
    free(s.procs);
    free(s.done);
    return 0;
}
