#include "records.h"

#include <stdlib.h>
#include <string.h>

#include "churn/format.h"
#include "util.h"

typedef struct cursor {
    uint8_t *p;
    uint8_t *end;
    int ok;
} cursor;

static uint64_t get_v(cursor *c)
{
    uint64_t v = 0;
    const uint8_t *p = c->p;
    if (!c->ok || !churn_get_varint(&p, c->end, &v)) {
        c->ok = 0;
        return 0;
    }
    c->p = (uint8_t *)p;
    return v;
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

/* The length prefix is at least one byte and already consumed, so the string can slide back
   one byte and take a terminating NUL where its last byte was, without touching unread data. */
static const char *get_string(cursor *c)
{
    size_t len;
    const uint8_t *s = get_bytes(c, &len);
    if (!s)
        return NULL;
    char *dst = (char *)s - 1;
    memmove(dst, s, len);
    dst[len] = '\0';
    if (memchr(dst, '\0', len))
        c->ok = 0; /* an embedded NUL would silently shorten the name */
    return dst;
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
    r->u.allocator.name = get_string(c);
    r->u.allocator.page_size = get_v(c);
    size_t n = get_count(c, 1);
    if (!c->ok)
        return 0;
    churn_reserve(&d->names, &d->names_cap, n, sizeof *d->names);
    for (size_t i = 0; i < n && c->ok; i++)
        d->names[i] = get_string(c);
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
    churn_reserve(&d->allocs, &d->allocs_cap, (size_t)number + 1, sizeof *d->allocs);
    d->allocs[number] = (churn_segment_alloc){addr, index, st->epoch, 0};
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
    churn_segment_alloc *e = &d->allocs[d->coder->allocs - distance];
    if (e->freed)
        return 0;
    e->freed = 1;
    uint64_t addr = e->addr;
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
        r->u.module.path = get_string(c);
        ok = c->ok;
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

int churn_decode_records(churn_decoder *d, uint8_t *buf, size_t len, churn_record_fn fn,
                         void *ctx, size_t *bad_offset, unsigned *bad_tag)
{
    cursor c = {buf, buf + len, 1};
    stream_state st = {0, 0};
    if (!d->coder)
        d->coder = churn_xmalloc(sizeof *d->coder);
    reset_segment_state(d);
    churn_record r;
    while (c.p < c.end) {
        uint8_t *start = c.p;
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
    free(d->allocs);
    free(d->ips);
    free(d->carry);
    free(d->classes);
    free(d->callsites);
    free(d->counters);
    free(d->names);
    *d = (churn_decoder){0};
}
