#include "read/pipeline.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

typedef struct slot {
    uint8_t *buf;
    size_t cap, len;
    size_t segment;
    int ready;       /* decompressed (or failed) and not yet decoded */
    int ok;
    char why[160];   /* when not ok */
} slot;

typedef struct pipeline {
    churn_trace *t;
    size_t nsegs;
    churn_live_pass *live;
    slot slots[CHURN_PIPELINE_SLOTS];
    /* Chunks of live-set operations: the main thread fills one, the worker applies the
       full ones in order and gives them back. */
    churn_live_ops chunks[CHURN_PIPELINE_CHUNKS];
    churn_live_ops *full[CHURN_PIPELINE_CHUNKS];   /* FIFO of chunks to apply */
    size_t full_head, full_count;
    churn_live_ops *empty[CHURN_PIPELINE_CHUNKS];
    size_t empty_count;
    int applying;    /* a thread is applying the chunk it took from full */
    int decoded;     /* the main thread is done: no more chunks */
    churn_live_sink sink;
    pthread_mutex_t lock;
    pthread_cond_t changed;
} pipeline;

static slot *slot_of(pipeline *p, size_t segment)
{
    return &p->slots[segment % CHURN_PIPELINE_SLOTS];
}

/* With p->lock held: applies the oldest full chunk unless there is none or another thread
   is applying one (chunks must be applied in order); returns whether it did. */
static int apply_oldest(pipeline *p)
{
    if (!p->full_count || p->applying)
        return 0;
    churn_live_ops *ops = p->full[p->full_head];
    p->full_head = (p->full_head + 1) % CHURN_PIPELINE_CHUNKS;
    p->full_count--;
    p->applying = 1;
    pthread_mutex_unlock(&p->lock);
    churn_live_pass_apply(p->live, ops);
    pthread_mutex_lock(&p->lock);
    p->applying = 0;
    p->empty[p->empty_count++] = ops;
    pthread_cond_broadcast(&p->changed);
    return 1;
}

/* Main thread: hands the current chunk to the worker and takes an empty one.  When the
   worker is behind (busy decompressing, or not running on a busy machine), the main
   thread applies chunks itself rather than wait. */
static void hand_chunk(void *ctx)
{
    pipeline *p = ctx;
    churn_live_ops *done = p->sink.chunk;
    pthread_mutex_lock(&p->lock);
    p->full[(p->full_head + p->full_count++) % CHURN_PIPELINE_CHUNKS] = done;
    pthread_cond_broadcast(&p->changed);
    while (!p->empty_count)
        if (!apply_oldest(p))
            pthread_cond_wait(&p->changed, &p->lock);
    churn_live_ops *next = p->empty[--p->empty_count];
    pthread_mutex_unlock(&p->lock);
    next->first = done->first + done->len;
    next->len = 0;
    p->sink.chunk = next;
}

/* Decompressing ahead comes first: the main thread, which has more to do per event, waits
   for nothing else.  In between, the worker applies the chunks the main thread handed over. */
static void *worker(void *arg)
{
    pipeline *p = arg;
    size_t next = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        if (next < p->nsegs && !slot_of(p, next)->ready) {
            slot *s = slot_of(p, next);
            pthread_mutex_unlock(&p->lock);
            s->ok = churn_trace_decompress(p->t, next, &s->buf, &s->cap, &s->len, s->why,
                                           sizeof s->why) == 0;
            pthread_mutex_lock(&p->lock);
            s->segment = next++;
            s->ready = 1;
            pthread_cond_broadcast(&p->changed);
        } else if (apply_oldest(p)) {
            continue;
        } else if (p->decoded && !p->full_count) {
            break;
        } else {
            pthread_cond_wait(&p->changed, &p->lock);
        }
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static void pipeline_init(pipeline *p, churn_trace *t, churn_live_pass *live)
{
    p->t = t;
    p->nsegs = churn_trace_segments(t);
    p->live = live;
    for (size_t k = 0; k < CHURN_PIPELINE_CHUNKS; k++) {
        churn_live_ops *c = &p->chunks[k];
        c->cap = CHURN_PIPELINE_CHUNK_OPS;
        c->objects = churn_xmalloc(c->cap * sizeof *c->objects);
        c->kinds = churn_xmalloc(c->cap);
        if (k)
            p->empty[p->empty_count++] = c;
    }
    p->sink = (churn_live_sink){.chunk = &p->chunks[0], .has_last = live->has_last,
                                .last = live->last, .epoch_marks = live->spans != NULL,
                                .full = hand_chunk, .ctx = p};
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->changed, NULL);
}

static void pipeline_free(pipeline *p)
{
    for (size_t k = 0; k < CHURN_PIPELINE_SLOTS; k++)
        free(p->slots[k].buf);
    for (size_t k = 0; k < CHURN_PIPELINE_CHUNKS; k++) {
        free(p->chunks[k].objects);
        free(p->chunks[k].kinds);
    }
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->changed);
    free(p);
}

/* After a segment that could not be read whole, the delta segments up to the next key one
   (format.h): they may name stacks that only the unread part defined. */
typedef struct skipping {
    int after_damage;
    uint64_t damaged; /* its sequence number */
    size_t count;     /* delta segments skipped since */
    uint64_t first_epoch, last_epoch;
} skipping;

/* Whether segment i (p->nsegs: the end) is skipped; says how many were once it is past. */
static int skip_delta(skipping *k, churn_trace *t, size_t i, churn_warnings *w)
{
    const churn_segment_info *s =
        i < churn_trace_segments(t) ? churn_trace_segment(t, i) : NULL;
    if (k->after_damage && s && s->delta) {
        if (!k->count++)
            k->first_epoch = s->first_epoch;
        k->last_epoch = s->last_epoch;
        return 1;
    }
    if (k->count)
        churn_warn(w,
                   "%zu delta segment(s) (seq %llu..%llu, epochs %llu..%llu) skipped after "
                   "damaged segment %llu: %s",
                   k->count, (unsigned long long)k->damaged + 1,
                   (unsigned long long)k->damaged + k->count,
                   (unsigned long long)k->first_epoch, (unsigned long long)k->last_epoch,
                   (unsigned long long)k->damaged,
                   s ? "reading goes on at the next key segment" : "no key segment follows");
    k->after_damage = 0;
    k->count = 0;
    return 0;
}

void churn_pipeline_run(churn_trace *t, churn_warnings *w, churn_record_fn fn, void *ctx,
                        churn_segment_fn seg, void *seg_ctx, churn_live_pass *live)
{
    pipeline *p = churn_xcalloc(1, sizeof *p);
    pipeline_init(p, t, live);
    pthread_t thread;
    if (pthread_create(&thread, NULL, worker, p) != 0) {
        fputs("churn-analyze: cannot start a thread\n", stderr);
        exit(1);
    }
    churn_decoder decoder = {.peak = live->peak};
    skipping skip = {0};
    for (size_t i = 0; i < p->nsegs; i++) {
        slot *s = slot_of(p, i);
        pthread_mutex_lock(&p->lock);
        while (!(s->ready && s->segment == i))
            pthread_cond_wait(&p->changed, &p->lock);
        pthread_mutex_unlock(&p->lock);
        if (!skip_delta(&skip, t, i, w)) {
            seg(seg_ctx, i, 0);
            if (!s->ok)
                churn_warn(w, "segment %llu: %s; skipped",
                           (unsigned long long)churn_trace_segment(t, i)->seq, s->why);
            skip.after_damage = !s->ok || churn_trace_decode(t, i, s->buf, s->len, &decoder, fn,
                                                             ctx, &p->sink, w);
            skip.damaged = churn_trace_segment(t, i)->seq;
            seg(seg_ctx, i, 1);
        }
        pthread_mutex_lock(&p->lock);
        s->ready = 0;
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
    }
    skip_delta(&skip, t, p->nsegs, w);
    pthread_mutex_lock(&p->lock);
    p->full[(p->full_head + p->full_count++) % CHURN_PIPELINE_CHUNKS] = p->sink.chunk;
    p->decoded = 1;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    pthread_join(thread, NULL);
    churn_live_pass_settle(live);
    churn_decoder_free(&decoder);
    pipeline_free(p);
}
