/*
 * The record encoder: every record of a segment's stream is written here, one function per
 * record type, as docs/format.md lays them out; analyzer/read/records.c is the decoder of the same
 * stream.  The writer thread (writer.c) calls it with the figures it keeps and compresses
 * what it wrote.
 *
 * Every put goes through a reserve of the largest record part; on failure (libchurn's own
 * memory exhausted) the byte stream stays consistent because nothing partial is kept.
 */
#include <stdio.h>
#include <string.h>

#include "record/encode.h"
#include "record/segstate.h"

churn_encoder churn_enc;
static churn_encoder *const enc = &churn_enc;

__attribute__((noinline)) int churn_buf_grow(churn_buf *b, size_t more)
{
    size_t cap = b->cap ? b->cap : 1u << 20;
    while (cap < b->len + more)
        cap *= 2;
    uint8_t *p = churn_mem_realloc(b->buf, cap);
    if (!p)
        return -1;
    b->buf = p;
    b->cap = cap;
    return 0;
}

static inline uint8_t *room(size_t n)
{
    return churn_buf_reserve(&enc->raw, n) ? NULL : enc->raw.buf + enc->raw.len;
}

static inline void put_u(uint64_t v)
{
    enc->raw.len += churn_put_varint(enc->raw.buf + enc->raw.len, v);
}
static void put_z(int64_t v) { put_u(churn_zigzag(v)); }
static void put_tag(uint8_t t) { enc->raw.buf[enc->raw.len++] = t; }
static void put_bytes(const void *p, size_t n)
{
    put_u(n);
    memcpy(enc->raw.buf + enc->raw.len, p, n);
    enc->raw.len += n;
}

void churn_enc_segment_begin(int key)
{
    ++enc->segments;
    enc->key = key;
    if (key)
        enc->key_in = enc->segments;
    enc->raw.len = 0;
    enc->recent_count = 0;
    enc->info_stack = 0;
    churn_coder_reset(&enc->coder);
    enc->cur_epoch = 0;
    enc->cur_tid = 0;
}

int churn_emit_segment_start(uint64_t seq, uint64_t first_epoch, uint64_t open_ns)
{
    if (!room(1 + 3 * CHURN_VARINT_MAX))
        return 0;
    put_tag(CHURN_REC_SEGMENT_START);
    put_u(seq);
    put_u(first_epoch);
    put_u(open_ns);
    return 1;
}

/* The common case, already written in this segment, is the inline test in
   churn_emit_stack. */
__attribute__((noinline)) void churn_define_stack(churn_site *sites, uint32_t id)
{
    churn_site *s = &sites[id];
    unsigned depth;
    const uintptr_t *ips = churn_stack_get(id, &depth);
    if (!ips)
        return;
    churn_codemap_stack(ips, depth); /* the names of its generated code, first */
    if (!room(1 + 5 * CHURN_VARINT_MAX + depth * CHURN_VARINT_MAX))
        return;
    /* Stacks of one program share their outer frames (main, the event loop, the
       interpreter): the recent definition sharing the most is named instead of repeated. */
    uint32_t ref = 0;
    unsigned shared = 0;
    unsigned n = enc->recent_count < CHURN_STACK_REFS ? enc->recent_count : CHURN_STACK_REFS;
    const uintptr_t *outer = ips + depth; /* frames counted from the outermost */
    for (unsigned k = 0; k < n; k++) {
        uint32_t cand = enc->recent_stacks[(enc->recent_count - 1 - k) % CHURN_STACK_REFS];
        unsigned cdepth;
        const uintptr_t *cips = churn_stack_get(cand, &cdepth);
        unsigned most = cdepth < depth ? cdepth : depth;
        if (!cips || most <= shared)
            continue;
        const uintptr_t *couter = cips + cdepth;
        /* Sharing more than the best so far needs its next frame shared too: most candidates
           fail that one test, and the full walk is kept for the others. */
        if (outer[-1 - (long)shared] != couter[-1 - (long)shared])
            continue;
        unsigned same = 0;
        while (same < most && outer[-1 - (long)same] == couter[-1 - (long)same])
            same++;
        if (same > shared) {
            shared = same;
            ref = cand;
        }
    }
    if (shared < 2)
        ref = 0, shared = 0;
    put_tag(CHURN_REC_STACK);
    put_u(id);
    put_u(depth);
    put_u(churn_stack_generation(id));
    put_u(ref);
    if (ref)
        put_u(shared);
    uintptr_t prev = 0;
    for (unsigned i = 0; i < depth - shared; i++) {
        put_z((int64_t)(ips[i] - prev));
        prev = ips[i];
    }
    s->emitted_in = enc->segments;
    enc->recent_stacks[enc->recent_count++ % CHURN_STACK_REFS] = id;
}

int churn_emit_py_code(uint32_t code, const char *name, size_t len)
{
    if (!room(1 + 2 * CHURN_VARINT_MAX + len))
        return 0;
    put_tag(CHURN_REC_CODE | CHURN_CODE_PY);
    put_u(code);
    put_bytes(name, len);
    return 1;
}

int churn_emit_code(uint64_t start, uint64_t size, const char *name, size_t len)
{
    if (!room(1 + 3 * CHURN_VARINT_MAX + len))
        return 0;
    put_tag(CHURN_REC_CODE | CHURN_CODE_RANGE);
    put_u(start);
    put_u(size);
    put_bytes(name, len);
    return 1;
}

void churn_emit_modules(void)
{
    for (size_t i = 0; i < churn_modules_count(); i++) {
        const churn_module *m = churn_module_get(i);
        size_t plen = strlen(m->path);
        if (!room(1 + 6 * CHURN_VARINT_MAX + m->build_id_len + plen))
            return;
        put_tag(CHURN_REC_MODULE);
        put_u(i);
        put_u(m->bias);
        put_u(m->start);
        put_u(m->end);
        put_u(atomic_load_explicit(&m->unloaded_at, memory_order_relaxed));
        put_bytes(m->build_id, m->build_id_len);
        put_bytes(m->path, plen);
    }
}

void churn_emit_allocator(void)
{
    const churn_allocator_info *a = churn_allocator();
    size_t need = 1 + 3 * CHURN_VARINT_MAX + 64;
    for (size_t i = 0; i < a->ncounters; i++)
        need += CHURN_VARINT_MAX + strlen(a->counter_names[i]);
    if (!room(need))
        return;
    put_tag(CHURN_REC_ALLOCATOR);
    put_bytes(a->name, strlen(a->name));
    put_u(a->page_size);
    put_u(a->ncounters);
    for (size_t i = 0; i < a->ncounters; i++)
        put_bytes(a->counter_names[i], strlen(a->counter_names[i]));
}

void churn_emit_stack_sample(uint32_t every)
{
    if (room(1 + CHURN_VARINT_MAX)) {
        put_tag(CHURN_REC_STACK_SAMPLE);
        put_u(every);
    }
}

void churn_emit_sample_bytes(uint64_t mean)
{
    if (room(1 + CHURN_VARINT_MAX)) {
        put_tag(CHURN_REC_SAMPLE_BYTES);
        put_u(mean);
    }
}

void churn_emit_size_classes(int final_path)
{
    if (final_path && !enc->classes_in)
        return; /* never asked yet: asking would call the allocator */
    const churn_size_classes *c = churn_allocator_classes();
    if (!c || enc->classes_in == enc->segments || !room(1 + (1 + 2 * c->n) * CHURN_VARINT_MAX))
        return;
    put_tag(CHURN_REC_SIZE_CLASSES);
    put_u(c->n);
    for (size_t i = 0; i < c->n; i++) {
        put_u(c->size[i]);
        put_u(c->span_bytes[i]);
    }
    enc->classes_in = enc->segments;
}

/* A key segment is self-contained: who is live per callsite when it opens, with those
   stacks' definitions, so a reader that starts here can carry on.  A delta segment's totals
   let a reader check that no events were lost between segments. */
void churn_emit_carry(churn_site *sites, size_t nsites, uint64_t live_count,
                      uint64_t live_bytes)
{
    size_t n = 0;
    for (size_t id = 1; enc->key && id < nsites; id++)
        if (sites[id].live_count) {
            churn_emit_stack(sites, nsites, (uint32_t)id);
            n++;
        }
    if (!room(1 + 3 * CHURN_VARINT_MAX + n * 3 * CHURN_VARINT_MAX))
        return;
    put_tag(CHURN_REC_CARRY);
    put_u(live_count);
    put_u(live_bytes);
    put_u(n);
    size_t prev = 0; /* ids ascend: each less the previous one */
    for (size_t id = 1; n && id < nsites; id++)
        if (sites[id].live_count) {
            put_u(id - prev);
            prev = id;
            put_u(sites[id].live_count);
            put_u(sites[id].live_bytes);
        }
}

uint64_t churn_emit_drop(uint64_t count, unsigned reason)
{
    if (!count || !room(1 + 2 * CHURN_VARINT_MAX))
        return 0;
    put_tag(CHURN_REC_DROPPED);
    put_u(count);
    put_u(reason);
    return count;
}

void churn_emit_short_stacks(uint64_t cut)
{
    if (cut && room(1 + CHURN_VARINT_MAX)) {
        put_tag(CHURN_REC_SHORT_STACKS);
        put_u(cut);
    }
}

/* An event's records are written through a local pointer, stored back once the event is
   whole: the stream's bytes may alias anything, so every put through enc->raw would load the
   buffer and its length again and store the length back, a third of the encoder's work. */
static inline uint8_t *at_u(uint8_t *p, uint64_t v)
{
    if (CHURN_LIKELY(v < 0x80)) {
        *p = (uint8_t)v;
        return p + 1;
    }
    return p + churn_put_varint(p, v);
}
static inline uint8_t *at_z(uint8_t *p, int64_t v)
{
    return at_u(p, churn_zigzag(v));
}

/* Returns the end of what it wrote, NULL when the event is not written.  The allocation's
   entry in the live map is noted with its segment and number there. */
static inline uint8_t *encode_alloc(uint8_t *p, const churn_event *ev, churn_live *note)
{
    uint64_t slack = ev->usable > ev->size ? ev->usable - ev->size : 0;
    int is_new;
    long info = churn_seg_info_index(ev->size, slack, ev->stack, &is_new);
    if (info < 0)
        return NULL; /* libchurn's memory ran out: the trace says so */
    if (is_new) {
        *p++ = CHURN_REC_ALLOC_INFO;
        p = at_u(p, ev->size);
        p = at_u(p, slack);
        p = at_z(p, (int64_t)ev->stack - enc->info_stack);
        enc->info_stack = ev->stack;
    }
    *p++ = (uint8_t)(CHURN_REC_ALLOC | ev->kind);
    p = at_u(p, (uint64_t)info);
    uint64_t code = churn_encode_alloc_addr(&enc->coder, ev->addr, ev->size + slack);
    p = at_u(p, code);
    note->number =
        (uint32_t)churn_coder_allocated(&enc->coder, ev->addr, ev->size + slack, code);
    note->seg = churn_seg_current();
    return p;
}

/* Short form when the allocation was written in this segment with the slack the free has
   (an allocator's hook may say another usable size at the free); otherwise the free
   describes itself.  live is the allocation's entry in the live map, which gave the free
   its size, stack and age. */
static inline uint8_t *encode_free(uint8_t *p, const churn_event *ev, const churn_live *live)
{
    uint64_t slack = ev->usable > ev->size ? ev->usable - ev->size : 0;
    uint64_t alloc_slack = live->slack == CHURN_SLACK_UNKNOWN ? 0 : live->slack;
    if (live->seg == churn_seg_current() && alloc_slack == slack) {
        *p++ = (uint8_t)(CHURN_REC_FREE_SHORT | ev->kind);
        p = at_u(p, enc->coder.allocs - live->number);
        churn_coder_freed(&enc->coder, ev->addr, ev->size + slack);
        return p;
    }
    *p++ = (uint8_t)(CHURN_REC_FREE | ev->kind);
    p = at_z(p, (int64_t)(ev->addr - enc->coder.prev_addr));
    p = at_u(p, ev->size);
    p = at_u(p, slack);
    p = at_u(p, ev->stack);
    p = at_u(p, ev->aux);
    churn_coder_freed(&enc->coder, ev->addr, ev->size + slack);
    return p;
}

/* Room for an event's records and its thread and epoch tags, when they change; NULL when
   there is no room. */
static inline uint8_t *event_begin(pid_t tid, uint64_t epoch)
{
    uint8_t *p = room(2 + 12 * CHURN_VARINT_MAX);
    if (!p)
        return NULL;
    if (tid != enc->cur_tid) {
        *p++ = CHURN_REC_THREAD;
        p = at_u(p, (uint64_t)tid);
        enc->cur_tid = tid;
    }
    if (epoch != enc->cur_epoch) {
        *p++ = CHURN_REC_EPOCH_TAG;
        p = at_u(p, epoch);
        enc->cur_epoch = epoch;
    }
    return p;
}

static inline void event_end(uint8_t *p)
{
    enc->raw.len = (size_t)(p - enc->raw.buf);
}

int churn_encode_alloc(const churn_event *ev, pid_t tid, uint64_t epoch, churn_live *note)
{
    uint8_t *p = event_begin(tid, epoch);
    if (!p)
        return 0;
    uint8_t *end = encode_alloc(p, ev, note);
    /* None: the tags are written, the event is counted as dropped, not one of the segment. */
    event_end(end ? end : p);
    return end != NULL;
}

int churn_encode_free(const churn_event *ev, pid_t tid, uint64_t epoch, const churn_live *live)
{
    uint8_t *p = event_begin(tid, epoch);
    if (!p)
        return 0;
    event_end(encode_free(p, ev, live));
    return 1;
}

int churn_encode_other(const churn_event *ev, pid_t tid, uint64_t epoch)
{
    uint8_t *p = event_begin(tid, epoch);
    if (!p)
        return 0;
    if (ev->type == CHURN_EV_FREE_UNKNOWN) {
        *p++ = CHURN_REC_FREE_UNKNOWN;
        p = at_z(p, (int64_t)(ev->addr - enc->coder.prev_addr));
        enc->coder.prev_addr = ev->addr;
    } else if (ev->type == CHURN_EV_MAP) {
        *p++ = (uint8_t)(CHURN_REC_MAP | ev->kind);
        p = at_z(p, (int64_t)(ev->addr - enc->coder.prev_map_addr));
        p = at_u(p, ev->size);
        p = at_u(p, ev->usable);
        p = at_u(p, ev->aux);
        p = at_u(p, ev->stack);
        enc->coder.prev_map_addr = ev->addr;
    }
    event_end(p);
    return 1;
}

void churn_emit_counters_stale(uint64_t epoch, uint64_t age_ns)
{
    if (room(1 + 2 * CHURN_VARINT_MAX)) {
        put_tag(CHURN_REC_COUNTERS_STALE);
        put_u(epoch);
        put_u(age_ns);
    }
}

void churn_emit_epoch_end(const churn_epoch_end *x)
{
    size_t nclasses = 0;
    for (unsigned c = 0; c < CHURN_SIZE_CLASSES; c++)
        nclasses += x->class_dirty[c];
    for (size_t i = 0; i < x->ndirty; i++)
        churn_emit_stack(x->sites, x->nsites, x->dirty[i]);
    size_t need = 1 + 16 * CHURN_VARINT_MAX + nclasses * 5 * CHURN_VARINT_MAX +
                  x->ndirty * 7 * CHURN_VARINT_MAX + x->ncounters * CHURN_VARINT_MAX;
    if (!room(need))
        return;
    put_tag(CHURN_REC_EPOCH_END);
    put_u(x->epoch);
    put_u(x->start_ns);
    put_u(x->duration_ns);
    put_u(x->cpu_ns);
    put_u(x->rss);
    put_u(x->totals->allocs);
    put_u(x->totals->frees);
    put_u(x->totals->alloc_bytes);
    put_u(x->totals->free_bytes);
    put_u(x->late);
    put_u(x->live_count);
    put_u(x->live_bytes);
    put_u(nclasses);
    for (unsigned c = 0; c < CHURN_SIZE_CLASSES; c++) {
        if (!x->class_dirty[c])
            continue;
        put_u(c);
        put_u(x->classes[c].allocs);
        put_u(x->classes[c].frees);
        put_u(x->classes[c].alloc_bytes);
        put_u(x->classes[c].free_bytes);
    }
    put_u(x->ndirty);
    uint32_t prev = 0; /* ids less the previous one: the dirty list ascends mostly */
    for (size_t i = 0; i < x->ndirty; i++) {
        const churn_site *s = &x->sites[x->dirty[i]];
        put_z((int64_t)x->dirty[i] - prev);
        prev = x->dirty[i];
        put_u(s->epoch.allocs);
        put_u(s->epoch.frees);
        put_u(s->epoch.alloc_bytes);
        put_u(s->epoch.free_bytes);
        put_u(s->live_count);
        put_u(s->live_bytes);
    }
    put_u(x->ncounters);
    for (size_t i = 0; i < x->ncounters; i++)
        put_u(x->counters[i]);
}

int churn_emit_unordered(uint64_t count)
{
    if (!room(1 + CHURN_VARINT_MAX))
        return 0;
    put_tag(CHURN_REC_UNORDERED);
    put_u(count);
    return 1;
}

void churn_emit_exit(uint64_t how, int64_t detail)
{
    if (room(1 + 2 * CHURN_VARINT_MAX)) {
        put_tag(CHURN_REC_EXIT);
        put_u(how);
        put_u((uint64_t)detail);
    }
}
