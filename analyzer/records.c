#include "records.h"

#include <stdlib.h>
#include <string.h>

#include "churn/format.h"
#include "util.h"

typedef struct cursor {
    const uint8_t *p;
    const uint8_t *end;
    int ok;
} cursor;

static uint64_t get_v_slow(cursor *c)
{
    uint64_t v = 0;
    const uint8_t *p = c->p;
    if (!c->ok || !churn_get_varint(&p, c->end, &v)) {
        c->ok = 0;
        return 0;
    }
    c->p = p;
    return v;
}

/* Most fields of event records are below 128: one byte, no loop.  After a failure values
   are still read but never used, as every caller checks ok before relying on them. */
static inline uint64_t get_v(cursor *c)
{
    if (__builtin_expect(c->end - c->p >= 2, 1)) {
        const uint8_t *p = c->p;
        if (p[0] < 0x80) {
            c->p = p + 1;
            return p[0];
        }
        if (p[1] < 0x80) { /* addresses deltas and distances: often two bytes */
            c->p = p + 2;
            return (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
        }
    }
    return get_v_slow(c);
}

/* A count of items that each take at least min_bytes cannot exceed what is left. */
static size_t get_count(cursor *c, size_t min_bytes)
{
    uint64_t n = get_v(c);
    if (c->ok && n > (uint64_t)(c->end - c->p) / min_bytes)
        c->ok = 0;
    return c->ok ? (size_t)n : 0;
}

static const uint8_t *get_bytes(cursor *c, size_t *len)
{
    *len = get_count(c, 1);
    if (!c->ok)
        return NULL;
    const uint8_t *s = c->p;
    c->p += *len;
    return s;
}

/* Strings are copied, NUL-terminated, into the decoder's text buffer, so the stream itself
   is never written and two decoders can read one buffer at once.  Returns the string's
   offset in that buffer (pointers are taken once the record is complete, as the buffer may
   move while it grows). */
static size_t get_string(churn_decoder *d, cursor *c)
{
    size_t len;
    const uint8_t *s = get_bytes(c, &len);
    if (!s)
        return 0;
    if (memchr(s, '\0', len))
        c->ok = 0; /* an embedded NUL would silently shorten the name */
    churn_reserve(&d->text, &d->text_cap, d->text_len + len + 1, 1);
    size_t off = d->text_len;
    memcpy(d->text + off, s, len);
    d->text[off + len] = '\0';
    d->text_len += len + 1;
    return off;
}

static int get_module_path(churn_decoder *d, cursor *c, churn_record *r)
{
    size_t path = get_string(d, c); /* before d->text is read: it may move */
    r->u.module.path = d->text + path;
    return c->ok;
}

static int decode_stack(churn_decoder *d, cursor *c, churn_record *r)
{
    r->u.stack.id = get_v(c);
    size_t depth = get_count(c, 1);
    if (!c->ok)
        return 0;
    churn_reserve(&d->ips, &d->ips_cap, depth, sizeof *d->ips);
    uint64_t ip = 0;
    for (size_t i = 0; i < depth; i++) {
        ip += (uint64_t)churn_unzigzag(get_v(c));
        d->ips[i] = ip;
    }
    r->u.stack.depth = depth;
    r->u.stack.ips = d->ips;
    return c->ok && r->u.stack.id != 0;
}

static int decode_allocator(churn_decoder *d, cursor *c, churn_record *r)
{
    d->text_len = 0;
    size_t name = get_string(d, c);
    r->u.allocator.page_size = get_v(c);
    size_t n = get_count(c, 1);
    if (!c->ok)
        return 0;
    churn_reserve(&d->names, &d->names_cap, n, sizeof *d->names);
    churn_reserve(&d->offsets, &d->offsets_cap, n, sizeof *d->offsets);
    for (size_t i = 0; i < n && c->ok; i++)
        d->offsets[i] = get_string(d, c);
    if (!c->ok)
        return 0;
    r->u.allocator.name = d->text + name;
    for (size_t i = 0; i < n; i++)
        d->names[i] = d->text + d->offsets[i];
    r->u.allocator.n_counters = n;
    r->u.allocator.counters = d->names;
    return c->ok;
}

static int decode_carry(churn_decoder *d, cursor *c, churn_record *r)
{
    r->u.carry.live_count = get_v(c);
    r->u.carry.live_bytes = get_v(c);
    size_t n = get_count(c, 3);
    if (!c->ok)
        return 0;
    churn_reserve(&d->carry, &d->carry_cap, n, sizeof *d->carry);
    for (size_t i = 0; i < n; i++) {
        d->carry[i].stack = get_v(c);
        d->carry[i].live_count = get_v(c);
        d->carry[i].live_bytes = get_v(c);
    }
    r->u.carry.n = n;
    r->u.carry.entries = d->carry;
    return c->ok;
}

static int decode_epoch_end(churn_decoder *d, cursor *c, churn_record *r)
{
    churn_epoch_summary *s = &r->u.epoch_end;
    uint64_t *head[] = {&s->epoch, &s->start_ns, &s->wall_ns, &s->cpu_ns, &s->rss_bytes,
                        &s->allocs, &s->frees, &s->alloc_bytes, &s->free_bytes,
                        &s->late_events, &s->live_count, &s->live_bytes};
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
        *head[i] = get_v(c);

    size_t n = get_count(c, 5);
    if (!c->ok)
        return 0;
    churn_reserve(&d->classes, &d->classes_cap, n, sizeof *d->classes);
    for (size_t i = 0; i < n; i++) {
        churn_class_entry *e = &d->classes[i];
        e->cls = get_v(c);
        e->allocs = get_v(c);
        e->frees = get_v(c);
        e->alloc_bytes = get_v(c);
        e->free_bytes = get_v(c);
    }
    s->n_classes = n;
    s->classes = d->classes;

    n = get_count(c, 7);
    if (!c->ok)
        return 0;
    churn_reserve(&d->callsites, &d->callsites_cap, n, sizeof *d->callsites);
    for (size_t i = 0; i < n; i++) {
        churn_callsite_entry *e = &d->callsites[i];
        e->stack = get_v(c);
        e->allocs = get_v(c);
        e->frees = get_v(c);
        e->alloc_bytes = get_v(c);
        e->free_bytes = get_v(c);
        e->live_count = get_v(c);
        e->live_bytes = get_v(c);
    }
    s->n_callsites = n;
    s->callsites = d->callsites;

    n = get_count(c, 1);
    if (!c->ok)
        return 0;
    churn_reserve(&d->counters, &d->counters_cap, n, sizeof *d->counters);
    for (size_t i = 0; i < n; i++)
        d->counters[i] = get_v(c);
    s->n_counters = n;
    s->counters = d->counters;
    return c->ok;
}

/* Stream state of format.h besides the coder: thread and epoch, zero at segment start. */
typedef struct stream_state {
    uint64_t tid, epoch;
} stream_state;

static void reset_segment_state(churn_decoder *d)
{
    churn_coder_reset(d->coder);
    d->ninfos = 0;
    if (d->spilled_count)
        memset(d->spilled, 0, (d->spilled_mask + 1) * sizeof *d->spilled);
    d->spilled_count = 0;
}

static size_t spill_home(const churn_decoder *d, uint64_t key)
{
    return (size_t)((key * 0x9e3779b97f4a7c15u) >> 20) & d->spilled_mask;
}

static churn_spilled_alloc *spill_find(const churn_decoder *d, uint64_t key)
{
    size_t i = spill_home(d, key);
    while (d->spilled[i].key && d->spilled[i].key != key)
        i = (i + 1) & d->spilled_mask;
    return &d->spilled[i];
}

static void spill_grow(churn_decoder *d)
{
    churn_spilled_alloc *old = d->spilled;
    size_t old_n = old ? d->spilled_mask + 1 : 0, n = old_n ? old_n * 2 : 4096;
    d->spilled = churn_xcalloc(n, sizeof *d->spilled);
    d->spilled_mask = n - 1;
    for (size_t i = 0; i < old_n; i++)
        if (old[i].key)
            *spill_find(d, old[i].key) = old[i];
    free(old);
}

static void spill_add(churn_decoder *d, uint64_t number, const churn_segment_alloc *a)
{
    if (!d->spilled || (d->spilled_count + 1) * 2 > d->spilled_mask + 1)
        spill_grow(d);
    churn_spilled_alloc *e = spill_find(d, number + 1);
    *e = (churn_spilled_alloc){number + 1, *a};
    d->spilled_count++;
}

/* Takes the allocation of that number out of the table (backward-shift deletion, no
   tombstones); 0 when it is not there. */
static int spill_take(churn_decoder *d, uint64_t number, churn_segment_alloc *out)
{
    if (!d->spilled_count)
        return 0;
    churn_spilled_alloc *e = spill_find(d, number + 1);
    if (!e->key)
        return 0;
    *out = e->a;
    size_t i = (size_t)(e - d->spilled), j = i, mask = d->spilled_mask;
    for (;;) {
        j = (j + 1) & mask;
        if (!d->spilled[j].key)
            break;
        size_t home = spill_home(d, d->spilled[j].key);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            d->spilled[i] = d->spilled[j];
            i = j;
        }
    }
    d->spilled[i].key = 0;
    d->spilled_count--;
    return 1;
}

static uint64_t delta_addr(cursor *c, uint64_t prev)
{
    return prev + (uint64_t)churn_unzigzag(get_v(c));
}

static int decode_alloc_info(churn_decoder *d, cursor *c)
{
    churn_alloc_info info;
    info.size = get_v(c);
    info.slack = get_v(c);
    info.stack = get_v(c);
    if (!c->ok)
        return 0;
    churn_reserve(&d->infos, &d->infos_cap, d->ninfos + 1, sizeof *d->infos);
    d->infos[d->ninfos++] = info;
    return 1;
}

static int decode_alloc(churn_decoder *d, cursor *c, const stream_state *st, churn_record *r)
{
    uint64_t index = get_v(c), code = get_v(c), addr;
    if (!c->ok || index >= d->ninfos || r->kind >= CHURN_ALLOC_KINDS)
        return 0;
    const churn_alloc_info *info = &d->infos[index];
    uint64_t usable = info->size + info->slack;
    if (!churn_decode_alloc_addr(d->coder, code, usable, &addr))
        return 0;
    uint64_t number = churn_coder_allocated(d->coder, addr, usable, code);
    churn_segment_alloc *slot = &d->recent[number % CHURN_RECENT_ALLOCS];
    /* The slot was last written CHURN_RECENT_ALLOCS allocations ago in this segment, or in
       an earlier segment when the number is lower, which it no longer concerns. */
    if (number >= CHURN_RECENT_ALLOCS && slot->addr)
        spill_add(d, number - CHURN_RECENT_ALLOCS, slot);
    *slot = (churn_segment_alloc){addr, st->epoch, (uint32_t)index};
    r->u.alloc.addr = addr;
    r->u.alloc.size = info->size;
    r->u.alloc.slack = info->slack;
    r->u.alloc.stack = info->stack;
    return 1;
}

static int decode_free(churn_decoder *d, cursor *c, churn_record *r)
{
    r->u.free.addr = delta_addr(c, d->coder->prev_addr);
    r->u.free.size = get_v(c);
    r->u.free.slack = get_v(c);
    r->u.free.stack = get_v(c);
    r->u.free.age = get_v(c);
    if (!c->ok || r->kind >= CHURN_FREE_KINDS)
        return 0;
    churn_coder_freed(d->coder, r->u.free.addr, r->u.free.size + r->u.free.slack);
    return 1;
}

static int decode_free_short(churn_decoder *d, cursor *c, const stream_state *st,
                             churn_record *r)
{
    uint64_t distance = get_v(c);
    if (!c->ok || r->kind >= CHURN_FREE_KINDS || distance < 1 || distance > d->coder->allocs)
        return 0;
    /* The encoder writes a short free only for an allocation of this segment that its live
       map still held; a stream naming one twice is damaged. */
    uint64_t number = d->coder->allocs - distance;
    churn_segment_alloc spilled, *e = &d->recent[number % CHURN_RECENT_ALLOCS];
    if (distance > CHURN_RECENT_ALLOCS) {
        if (!spill_take(d, number, &spilled))
            return 0;
        e = &spilled;
    } else if (!e->addr) {
        return 0;
    }
    uint64_t addr = e->addr;
    e->addr = 0;
    const churn_alloc_info *info = &d->infos[e->info];
    r->tag = CHURN_REC_FREE;
    r->u.free.addr = addr;
    r->u.free.size = info->size;
    r->u.free.slack = info->slack;
    r->u.free.stack = info->stack;
    /* an allocation drained after its free (another thread) would look younger than zero */
    r->u.free.age = st->epoch >= e->epoch ? st->epoch - e->epoch : 0;
    churn_coder_freed(d->coder, addr, info->size + info->slack);
    return 1;
}

/* Returns 1 with *r filled for a record the visitor sees, 0 for state-only records, -1 when
   the record is malformed. */
static int decode_one(churn_decoder *d, cursor *c, stream_state *st, unsigned tag,
                      churn_record *r)
{
    unsigned cls = tag & CHURN_REC_CLASS_MASK, kind = tag & CHURN_REC_KIND_MASK;
    r->tag = cls ? cls : tag;
    r->kind = cls ? kind : 0;
    r->tid = st->tid;
    r->epoch = st->epoch;
    int ok;
    switch (cls ? cls : tag) {
    case CHURN_REC_SEGMENT_START:
        reset_segment_state(d);
        r->u.segment_start.seq = get_v(c);
        r->u.segment_start.epoch = get_v(c);
        r->u.segment_start.ns = get_v(c);
        ok = c->ok;
        break;
    case CHURN_REC_MODULE:
        r->u.module.id = get_v(c);
        r->u.module.bias = get_v(c);
        r->u.module.start = get_v(c);
        r->u.module.end = get_v(c);
        r->u.module.build_id = get_bytes(c, &r->u.module.build_id_len);
        d->text_len = 0;
        ok = get_module_path(d, c, r);
        break;
    case CHURN_REC_STACK:
        ok = decode_stack(d, c, r);
        break;
    case CHURN_REC_THREAD:
        st->tid = get_v(c);
        return c->ok ? 0 : -1;
    case CHURN_REC_EPOCH_TAG:
        st->epoch = get_v(c);
        return c->ok ? 0 : -1;
    case CHURN_REC_ALLOCATOR:
        ok = decode_allocator(d, c, r);
        break;
    case CHURN_REC_CARRY:
        ok = decode_carry(d, c, r);
        break;
    case CHURN_REC_DROPPED:
        r->u.dropped.count = get_v(c);
        r->u.dropped.reason = get_v(c);
        ok = c->ok;
        break;
    case CHURN_REC_EXIT:
        r->u.exit.how = get_v(c);
        r->u.exit.detail = get_v(c);
        ok = c->ok;
        break;
    case CHURN_REC_ALLOC_INFO:
        return decode_alloc_info(d, c) ? 0 : -1;
    case CHURN_REC_ALLOC:
        ok = decode_alloc(d, c, st, r);
        break;
    case CHURN_REC_FREE:
        ok = decode_free(d, c, r);
        break;
    case CHURN_REC_FREE_SHORT:
        ok = decode_free_short(d, c, st, r);
        break;
    case CHURN_REC_FREE_UNKNOWN:
        r->u.free_unknown.addr = delta_addr(c, d->coder->prev_addr);
        d->coder->prev_addr = r->u.free_unknown.addr;
        ok = c->ok && kind == 0;
        break;
    case CHURN_REC_MAP:
        r->kind = kind & ~CHURN_MAP_INTERNAL;
        r->u.map.internal = (kind & CHURN_MAP_INTERNAL) != 0;
        r->u.map.addr = delta_addr(c, d->coder->prev_map_addr);
        d->coder->prev_map_addr = r->u.map.addr;
        r->u.map.length = get_v(c);
        r->u.map.a = get_v(c);
        r->u.map.b = get_v(c);
        r->u.map.stack = get_v(c);
        ok = c->ok && r->kind < CHURN_MAP_KINDS;
        break;
    case CHURN_REC_EPOCH_END:
        ok = kind == 0 && decode_epoch_end(d, c, r);
        break;
    default:
        ok = 0;
    }
    return ok ? 1 : -1;
}

int churn_decode_records(churn_decoder *d, const uint8_t *buf, size_t len, churn_record_fn fn,
                         void *ctx, size_t *bad_offset, unsigned *bad_tag)
{
    cursor c = {buf, buf + len, 1};
    stream_state st = {0, 0};
    if (!d->coder) {
        d->coder = churn_xmalloc(sizeof *d->coder);
        d->recent = churn_xmalloc(CHURN_RECENT_ALLOCS * sizeof *d->recent);
    }
    reset_segment_state(d);
    churn_record r;
    while (c.p < c.end) {
        const uint8_t *start = c.p;
        unsigned tag = *c.p++;
        int res = decode_one(d, &c, &st, tag, &r);
        if (res < 0) {
            *bad_offset = (size_t)(start - buf);
            *bad_tag = tag;
            return -1;
        }
        if (res > 0)
            fn(ctx, &r);
    }
    return 0;
}

void churn_decoder_free(churn_decoder *d)
{
    free(d->coder);
    free(d->infos);
    free(d->recent);
    free(d->spilled);
    free(d->ips);
    free(d->carry);
    free(d->classes);
    free(d->callsites);
    free(d->counters);
    free(d->names);
    free(d->offsets);
    free(d->text);
    *d = (churn_decoder){0};
}
