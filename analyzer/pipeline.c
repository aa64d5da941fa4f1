#include "pipeline.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct slot {
    uint8_t *buf;
    size_t cap, len;
    size_t segment;
    int ready;       /* decompressed (or failed) and not yet released by both threads */
    int users;       /* threads still to read it */
    int ok;
    char why[160];   /* when not ok */
} slot;

typedef struct pipeline {
    churn_trace *t;
    size_t nsegs;
    churn_live_pass *live;
    churn_decoder decoder;   /* the worker's */
    slot slots[CHURN_PIPELINE_SLOTS];
    pthread_mutex_t lock;
    pthread_cond_t changed;
} pipeline;

static slot *slot_of(pipeline *p, size_t segment)
{
    return &p->slots[segment % CHURN_PIPELINE_SLOTS];
}

static void release(pipeline *p, slot *s)
{
    pthread_mutex_lock(&p->lock);
    if (--s->users == 0) {
        s->ready = 0;
        pthread_cond_broadcast(&p->changed);
    }
    pthread_mutex_unlock(&p->lock);
}

static void live_decode(pipeline *p, size_t i)
{
    slot *s = slot_of(p, i);
    if (s->ok)
        churn_trace_decode(p->t, i, s->buf, s->len, &p->decoder, churn_live_pass_record,
                           p->live, NULL);
    release(p, s);
}

/* Decompressing segment i + 1 before the live pass over segment i keeps the main thread,
   which has more to do per record, from ever waiting for the worker once started. */
static void *worker(void *arg)
{
    pipeline *p = arg;
    for (size_t i = 0; i < p->nsegs; i++) {
        slot *s = slot_of(p, i);
        pthread_mutex_lock(&p->lock);
        while (s->ready)
            pthread_cond_wait(&p->changed, &p->lock);
        pthread_mutex_unlock(&p->lock);
        s->ok = churn_trace_decompress(p->t, i, &s->buf, &s->cap, &s->len, s->why,
                                       sizeof s->why) == 0;
        pthread_mutex_lock(&p->lock);
        s->segment = i;
        s->users = 2;
        s->ready = 1;
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
        if (i > 0)
            live_decode(p, i - 1);
    }
    if (p->nsegs)
        live_decode(p, p->nsegs - 1);
    return NULL;
}

void churn_pipeline_run(churn_trace *t, churn_warnings *w, churn_record_fn fn, void *ctx,
                        churn_segment_fn seg, void *seg_ctx, churn_live_pass *live)
{
    pipeline *p = calloc(1, sizeof *p);
    if (!p) {
        fputs("churn-analyze: out of memory\n", stderr);
        exit(1);
    }
    p->t = t;
    p->nsegs = churn_trace_segments(t);
    p->live = live;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->changed, NULL);
    pthread_t thread;
    if (pthread_create(&thread, NULL, worker, p) != 0) {
        fputs("churn-analyze: cannot start a thread\n", stderr);
        exit(1);
    }
    churn_decoder decoder = {0};
    for (size_t i = 0; i < p->nsegs; i++) {
        slot *s = slot_of(p, i);
        pthread_mutex_lock(&p->lock);
        while (!(s->ready && s->segment == i))
            pthread_cond_wait(&p->changed, &p->lock);
        pthread_mutex_unlock(&p->lock);
        seg(seg_ctx, i, 0);
        if (s->ok)
            churn_trace_decode(t, i, s->buf, s->len, &decoder, fn, ctx, w);
        else
            churn_warn(w, "segment %llu: %s; skipped",
                       (unsigned long long)churn_trace_segment(t, i)->seq, s->why);
        release(p, s);
        seg(seg_ctx, i, 1);
    }
    pthread_join(thread, NULL);
    churn_decoder_free(&decoder);
    churn_decoder_free(&p->decoder);
    for (size_t k = 0; k < CHURN_PIPELINE_SLOTS; k++)
        free(p->slots[k].buf);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->changed);
    free(p);
}
