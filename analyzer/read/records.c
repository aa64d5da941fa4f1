#include "read/records.h"

#include "base/hash.h"

#include <stdlib.h>
#include <string.h>

#include "churn/format.h"
#include "read/modules.h"
#include "base/util.h"

/* Two shortcuts stand beside the general decoding: decode_common for runs of events, and the
   inline varint reads.  A build with -DCHURN_DECODE_SLOW (build/slow/churn-analyze, `make
   slow`) takes neither: every event goes through decode_event and every varint through
   format.h's churn_get_varint.  The tests run over both builds and test/t_decoders.sh
   compares their reports, so a shortcut that stops agreeing with the general path fails. */
#ifdef CHURN_DECODE_SLOW
enum { decode_fast = 0 };
#else
enum { decode_fast = 1 };
#endif

/* A varint read: the value and where the next field starts, NULL when the varint is
   truncated or overlong.  Returned by value so that the hot loop's position stays in a
   register. */
typedef struct vread {
    const uint8_t *p;
    uint64_t v;
} vread;

/* For events, in the padding's shelter (CHURN_RECORDS_PADDING): the caller checks that
   the record ended before the end of the stream.  NULL for a varint longer than ten bytes
   or past 64 bits, which churn_get_varint refuses too. */
static inline vread read_v_padded(const uint8_t *p)
{
    if (p[0] < 0x80)
        return (vread){p + 1, p[0]};
    uint64_t v = (uint64_t)(p[0] & 0x7f) | (uint64_t)(p[1] & 0x7f) << 7;
    if (p[1] < 0x80)
        return (vread){p + 2, v};
    v |= (uint64_t)(p[2] & 0x7f) << 14;
    if (p[2] < 0x80)
        return (vread){p + 3, v};
    /* explicit address codes: up to ten bytes, all inside the padding */
    for (unsigned k = 3, shift = 21; k < CHURN_VARINT_MAX; k++, shift += 7) {
        if (k == CHURN_VARINT_MAX - 1 && p[k] > 1)
            break;
        v |= (uint64_t)(p[k] & 0x7f) << shift;
        if (p[k] < 0x80)
            return (vread){p + k + 1, v};
    }
    return (vread){NULL, 0};
}

static vread read_v_slow(const uint8_t *p, const uint8_t *end)
{
    if (decode_fast && end - p >= CHURN_VARINT_MAX)
        return read_v_padded(p);
    vread r = {NULL, 0};
    if (churn_get_varint(&p, end, &r.v))
        r.p = p;
    return r;
}

/* Most fields of event records are below 128: one byte; address codes and distances often
   take two or three. */
static inline vread read_v(const uint8_t *p, const uint8_t *end)
{
    if (decode_fast && __builtin_expect(end - p >= 3, 1)) {
        if (p[0] < 0x80)
            return (vread){p + 1, p[0]};
        uint64_t v = (uint64_t)(p[0] & 0x7f) | (uint64_t)(p[1] & 0x7f) << 7;
        if (p[1] < 0x80)
            return (vread){p + 2, v};
        if (p[2] < 0x80)
            return (vread){p + 3, v | (uint64_t)p[2] << 14};
    }
    return read_v_slow(p, end);
}

/* The other records are read through a cursor that remembers a failure: every caller
   checks ok before relying on what it read. */
typedef struct cursor {
    const uint8_t *p;
    const uint8_t *end;
    int ok;
} cursor;

static uint64_t get_v(cursor *c)
{
    vread r = c->ok ? read_v(c->p, c->end) : (vread){NULL, 0};
    if (!r.p) {
        c->ok = 0;
        return 0;
    }
    c->p = r.p;
    return r.v;
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

/* The stack named as a STACK record's ref, among the segment's latest definitions. */
static const churn_recent_stack *recent_stack(const churn_decoder *d, uint64_t id)
{
    size_t n = d->recent_stack_count < CHURN_STACK_REFS ? d->recent_stack_count : CHURN_STACK_REFS;
    for (size_t k = 0; k < n; k++) {
        const churn_recent_stack *s =
            &d->recent_stacks[(d->recent_stack_count - 1 - k) % CHURN_STACK_REFS];
        if (s->id == id)
            return s;
    }
    return NULL;
}

static int decode_stack(churn_decoder *d, cursor *c, churn_record *r)
{
    int v1 = d->version == 1;
    r->u.stack.id = get_v(c);
    size_t depth = v1 ? get_count(c, 1) : (size_t)get_v(c), shared = 0;
    r->u.stack.generation = v1 ? UINT64_MAX : get_v(c);
    const churn_recent_stack *ref = NULL;
    if (!v1) {
        uint64_t ref_id = get_v(c);
        if (ref_id) {
            shared = (size_t)get_v(c);
            ref = recent_stack(d, ref_id);
            if (!ref || shared == 0 || shared > depth || shared > ref->depth)
                return c->ok = 0;
        }
        if (depth > CHURN_STACK_MAX_DEPTH || depth - shared > (size_t)(c->end - c->p))
            return c->ok = 0;
    }
    if (!c->ok)
        return 0;
    churn_reserve(&d->ips, &d->ips_cap, depth, sizeof *d->ips);
    uint64_t ip = 0;
    for (size_t i = 0; i < depth - shared; i++) {
        vread delta = read_v(c->p, c->end);
        if (!delta.p)
            return c->ok = 0;
        c->p = delta.p;
        ip += (uint64_t)churn_unzigzag(delta.v);
        d->ips[i] = ip;
    }
    if (shared)
        memcpy(d->ips + depth - shared, ref->ips + ref->depth - shared, shared * sizeof *d->ips);
    if (!v1) {
        if (!d->recent_stacks)
            d->recent_stacks = churn_xmalloc(CHURN_STACK_REFS * sizeof *d->recent_stacks);
        churn_recent_stack *s = &d->recent_stacks[d->recent_stack_count++ % CHURN_STACK_REFS];
        s->id = r->u.stack.id;
        s->depth = depth;
        if (depth)
            memcpy(s->ips, d->ips, depth * sizeof *d->ips);
    }
    r->u.stack.depth = depth;
    r->u.stack.ips = d->ips;
    r->u.stack.ref = ref ? ref->id : 0;
    r->u.stack.shared = shared;
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

static int decode_size_classes(churn_decoder *d, cursor *c, churn_record *r)
{
    size_t n = get_count(c, 2);
    if (!c->ok)
        return 0;
    churn_reserve(&d->pairs, &d->pairs_cap, 2 * n, sizeof *d->pairs);
    for (size_t i = 0; i < n; i++) {
        d->pairs[i] = get_v(c);
        d->pairs[n + i] = get_v(c);
    }
    r->u.size_classes.n = n;
    r->u.size_classes.sizes = d->pairs;
    r->u.size_classes.span_bytes = d->pairs + n;
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
    uint64_t prev = 0; /* version 7: ids less the previous one */
    for (size_t i = 0; i < n; i++) {
        prev = d->carry[i].stack = get_v(c) + (d->version >= 7 ? prev : 0);
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
    uint64_t prev = 0; /* version 7: ids less the previous one, zigzagged */
    for (size_t i = 0; i < n; i++) {
        churn_callsite_entry *e = &d->callsites[i];
        prev = e->stack =
            d->version >= 7 ? prev + (uint64_t)churn_unzigzag(get_v(c)) : get_v(c);
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
    d->recent_stack_count = 0;
    /* A table grown for one long segment is let go rather than cleared for every later
       one: clearing costs its size, letting go and regrowing what is spilled. */
    if (d->spilled && d->spilled_mask + 1 > 4096 && d->spilled_count * 8 < d->spilled_mask + 1) {
        free(d->spilled);
        d->spilled = NULL;
        d->spilled_mask = 0;
    } else if (d->spilled_count) {
        memset(d->spilled, 0, (d->spilled_mask + 1) * sizeof *d->spilled);
    }
    d->spilled_count = 0;
}

/* Keys are allocation numbers, and objects are freed in runs of neighbouring numbers: each
   run of 64 numbers starts at a hashed place and takes consecutive slots from there, so a run
   of frees walks one cache line after another instead of one per free. */
static size_t spill_home(const churn_decoder *d, uint64_t key)
{
    return (size_t)(churn_hash64(key >> 6) + (key & 63)) & d->spilled_mask;
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
    churn_need_memory((uint64_t)n * sizeof *d->spilled, d->spilled_count,
                      "live allocations of one segment");
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
    churn_alloc_info info = {0};
    info.size = get_v(c);
    info.usable = info.size + get_v(c);
    if (d->version >= 7) /* less the segment's previous info's */
        info.stack = (d->ninfos ? d->infos[d->ninfos - 1].stack : 0) +
                     (uint64_t)churn_unzigzag(get_v(c));
    else
        info.stack = get_v(c);
    if (!c->ok || info.stack > UINT32_MAX)
        return 0;
    info.slack = churn_slack32(info.usable - info.size);
    info.lifo = churn_coder_lifo(d->coder, info.usable);
    info.peak_site = churn_peak_site_of(d->peak, info.stack);
    churn_reserve(&d->infos, &d->infos_cap, d->ninfos + 1, sizeof *d->infos);
    d->infos[d->ninfos++] = info;
    return 1;
}

/* Hands the counted events of the current epoch over as CHURN_REC_COUNTS records. */
static void hand_counts(churn_decoder *d, const stream_state *st, churn_record_fn fn,
                        void *ctx)
{
    churn_record r;
    r.tag = CHURN_REC_COUNTS;
    r.kind = 0;
    r.tid = st->tid;
    r.epoch = st->epoch;
    for (size_t k = 0; k < d->ncounted; k++) {
        churn_alloc_info *info = &d->infos[d->counted[k]];
        r.u.counts.size = info->size;
        r.u.counts.slack = info->usable - info->size;
        r.u.counts.stack = info->stack;
        r.u.counts.allocs = info->allocs;
        r.u.counts.reallocs = info->reallocs;
        r.u.counts.frees = info->frees;
        r.u.counts.temporary = info->temporary;
        info->allocs = info->reallocs = info->frees = info->temporary = 0;
        fn(ctx, &r);
    }
    d->ncounted = 0;
}

/* The first event of an info since the last hand-over puts it on the list to hand over. */
static inline void count_info(churn_decoder *d, churn_alloc_info *info, uint32_t index)
{
    if (info->allocs | info->frees)
        return;
    churn_reserve(&d->counted, &d->counted_cap, d->ncounted + 1, sizeof *d->counted);
    d->counted[d->ncounted++] = index;
}

static inline int live_applies(const churn_live_sink *s, uint64_t epoch)
{
    return !(s->has_last && epoch > s->last);
}

/* The chunk being filled, as the general paths append to it. */
typedef struct out_chunk {
    churn_object *objects;
    uint8_t *kinds;
    size_t len, cap;
    uint32_t first;
} out_chunk;

static inline out_chunk out_open(const churn_live_sink *s)
{
    const churn_live_ops *o = s->chunk;
    return (out_chunk){o->objects, o->kinds, o->len, o->cap, (uint32_t)o->first};
}

static inline void out_close(churn_live_sink *s, const out_chunk *out)
{
    s->chunk->len = out->len;
}

/* Appends an operation; returns the low bits of its serial number. */
static inline uint32_t out_put(churn_live_sink *s, out_chunk *out, unsigned kind,
                               uint64_t addr, uint64_t size, uint32_t stack, uint32_t slack,
                               uint64_t epoch)
{
    if (__builtin_expect(out->len == out->cap, 0)) {
        out_close(s, out);
        s->full(s->ctx);
        *out = out_open(s);
    }
    size_t at = out->len++;
    out->objects[at] = (churn_object){addr, size, stack, slack, epoch};
    out->kinds[at] = (uint8_t)kind;
    return out->first + (uint32_t)at;
}

/* A short free may cancel its allocation's insertion only when no epoch's end was marked in
   between: the live pass snapshots the set there (livepass.h). */
static inline int after_fence(const churn_live_sink *s, uint32_t op)
{
    return !s->epoch_marks || (int32_t)(op - s->fence) >= 0;
}

/* The allocation is now the stream's previous heap event. */
static inline void note_alloc(churn_decoder *d, uint64_t addr, const churn_alloc_info *info,
                              uint64_t epoch)
{
    d->prev_addr = addr;
    d->prev_size = info->size;
    d->prev_stack = info->stack;
    d->prev_epoch = epoch;
}

/* One heap event, epoch or thread tag, in every case: returns where the next record
   starts, p itself when the record is of another kind, or NULL after setting *bad when it
   is malformed.

   An allocation's address is decoded against the segment's coder (coding.h) and its
   insertion goes to the live pass.  A short free of an object allocated in the current
   epoch is counted; one of an older object goes to fn as a full free.  A short free's
   removal cancels the allocation's insertion when that is still in the chunk being filled
   (livepass.h). */
static const uint8_t *decode_event(churn_decoder *d, const uint8_t *p, const uint8_t *end,
                                   stream_state *st, churn_live_sink *live,
                                   churn_record_fn fn, void *ctx, const uint8_t **bad)
{
    churn_coder *const coder = d->coder;
    const uint8_t *start = p;
    unsigned tag = *p++;
    if ((tag & CHURN_REC_CLASS_MASK) == CHURN_REC_ALLOC) {
        vread index = read_v(p, end);
        if (!index.p)
            goto malformed;
        vread code = read_v(index.p, end);
        if (!code.p || index.v >= d->ninfos || (tag & CHURN_REC_KIND_MASK) >= CHURN_ALLOC_KINDS)
            goto malformed;
        churn_alloc_info *info = &d->infos[index.v];
        uint64_t addr;
        if (!churn_decode_alloc_addr(coder, info->lifo, code.v, &addr))
            goto malformed;
        uint64_t number = churn_coder_allocated(coder, addr, info->usable, code.v);
        churn_segment_alloc *slot = &d->recent[number % CHURN_RECENT_ALLOCS];
        /* The slot was last written CHURN_RECENT_ALLOCS allocations ago in this segment, or
           in an earlier segment when the number is lower, which it no longer concerns. */
        if (number >= CHURN_RECENT_ALLOCS && slot->addr)
            spill_add(d, number - CHURN_RECENT_ALLOCS, slot);
        count_info(d, info, (uint32_t)index.v);
        info->allocs++;
        info->reallocs += tag == (CHURN_REC_ALLOC | CHURN_ALLOC_REALLOC);
        churn_peak_apply(d->peak, info->peak_site, info->size, 0, st->epoch);
        note_alloc(d, addr, info, st->epoch);
        out_chunk out = out_open(live);
        uint32_t op = out_put(live, &out, CHURN_LIVE_INSERT, addr, info->size,
                              (uint32_t)info->stack, info->slack, st->epoch);
        out_close(live, &out);
        *slot = (churn_segment_alloc){addr, st->epoch, (uint32_t)index.v, op};
        return code.p;
    }
    if ((tag & CHURN_REC_CLASS_MASK) == CHURN_REC_FREE_SHORT) {
        vread distance = read_v(p, end);
        if (!distance.p || (tag & CHURN_REC_KIND_MASK) >= CHURN_FREE_KINDS ||
            distance.v - 1 >= coder->allocs)
            goto malformed;
        /* The encoder writes a short free only for an allocation of this segment that its
           live map still held; a stream naming one twice is damaged. */
        uint64_t number = coder->allocs - distance.v;
        churn_segment_alloc spilled, *e = &d->recent[number % CHURN_RECENT_ALLOCS];
        if (distance.v > CHURN_RECENT_ALLOCS) {
            if (!spill_take(d, number, &spilled))
                goto malformed;
            e = &spilled;
        } else if (!e->addr) {
            goto malformed;
        }
        uint64_t addr = e->addr, epoch = st->epoch, alloc_epoch = e->epoch;
        e->addr = 0;
        churn_alloc_info *info = &d->infos[e->info];
        churn_coder_freed_to(coder, info->lifo, addr);
        int temporary = distance.v == 1 && d->prev_addr;
        d->prev_addr = 0;
        churn_peak_apply(d->peak, info->peak_site, info->size, 1, epoch);
        if (live_applies(live, epoch)) {
            out_chunk out = out_open(live);
            uint32_t at = e->op - out.first;
            if (at < out.len && live_applies(live, alloc_epoch) && after_fence(live, e->op))
                out.kinds[at] = CHURN_LIVE_VACATE;
            else
                out_put(live, &out, CHURN_LIVE_REMOVE, addr, info->size, (uint32_t)info->stack,
                        info->slack, alloc_epoch < epoch ? alloc_epoch : epoch);
            out_close(live, &out);
        }
        if (alloc_epoch >= epoch) {
            /* an allocation drained after its free (another thread) would look younger than
               zero: age 0 */
            count_info(d, info, e->info);
            info->frees++;
            info->temporary += temporary;
            return distance.p;
        }
        churn_record r;
        r.tag = CHURN_REC_FREE;
        r.kind = tag & CHURN_REC_KIND_MASK;
        r.tid = st->tid;
        r.epoch = epoch;
        r.u.free.addr = addr;
        r.u.free.size = info->size;
        r.u.free.slack = info->usable - info->size;
        r.u.free.stack = info->stack;
        r.u.free.age = epoch - alloc_epoch;
        r.u.free.temporary = temporary;
        fn(ctx, &r);
        return distance.p;
    }
    if (tag == CHURN_REC_EPOCH_TAG || tag == CHURN_REC_THREAD) {
        vread v = read_v(p, end);
        if (!v.p)
            goto malformed;
        if (tag == CHURN_REC_THREAD) {
            st->tid = v.v;
            if (d->peak)
                churn_peak_thread(d->peak, v.v);
        } else if (v.v != st->epoch) {
            hand_counts(d, st, fn, ctx);
            st->epoch = v.v;
        }
        return v.p;
    }
    return start;
malformed:
    *bad = start;
    return NULL;
}

/* The common case of decode_event, for runs of events: without a single call, so that the
   loop's state stays in registers.  Returns where it stopped: at a record of another kind,
   at the end, at an event it leaves to decode_event (an epoch tag, an allocation that
   spills, a free of an older object or of one long ago, an info's first event since the
   last hand-over, a full chunk), or NULL after setting *bad when a record is malformed.
   Nothing of a record it leaves is applied. */
__attribute__((noinline))
static const uint8_t *decode_common(churn_decoder *d, const uint8_t *p, const uint8_t *end,
                                    stream_state *st, churn_live_sink *live,
                                    const uint8_t **bad)
{
    churn_coder *const coder = d->coder;
    churn_segment_alloc *const recent = d->recent;
    churn_alloc_info *const infos = d->infos;
    churn_peak *const peak = d->peak;
    const uint64_t ninfos = d->ninfos, epoch = st->epoch;
    if (live->has_last && epoch > live->last)
        return p; /* frees not applied: decode_event */
    const uint64_t vacate_max = live->has_last ? live->last : UINT64_MAX;
    churn_live_ops *const o = live->chunk;
    churn_object *const objects = o->objects;
    uint8_t *const kinds = o->kinds;
    const uint32_t first = (uint32_t)o->first;
    size_t len = o->len;
    /* Each record here takes two bytes or more and adds one operation at most: up to limit,
       the chunk cannot fill. */
    const uint8_t *limit = (size_t)(end - p) / 2 < o->cap - len ? end : p + 2 * (o->cap - len);
    while (p < limit) {
        unsigned tag = *p;
        if ((tag & CHURN_REC_CLASS_MASK) == CHURN_REC_ALLOC) {
            vread index = read_v_padded(p + 1);
            if (!index.p)
                break;
            vread code = read_v_padded(index.p);
            if (!code.p || code.p > end || index.v >= ninfos ||
                (tag & CHURN_REC_KIND_MASK) >= CHURN_ALLOC_KINDS)
                break;
            churn_alloc_info *info = &infos[index.v];
            uint64_t number = coder->allocs;
            churn_segment_alloc *slot = &recent[number % CHURN_RECENT_ALLOCS];
            if ((number >= CHURN_RECENT_ALLOCS && slot->addr) || !(info->allocs | info->frees))
                break;
            uint64_t addr;
            if (!churn_decode_alloc_addr(coder, info->lifo, code.v, &addr)) {
                o->len = len;
                *bad = p;
                return NULL;
            }
            churn_coder_allocated(coder, addr, info->usable, code.v);
            info->allocs++;
            info->reallocs += tag == (CHURN_REC_ALLOC | CHURN_ALLOC_REALLOC);
            churn_peak_apply(peak, info->peak_site, info->size, 0, epoch);
            note_alloc(d, addr, info, epoch);
            objects[len] = (churn_object){addr, info->size, (uint32_t)info->stack, info->slack,
                                          epoch};
            kinds[len] = CHURN_LIVE_INSERT;
            *slot = (churn_segment_alloc){addr, epoch, (uint32_t)index.v, first + (uint32_t)len};
            len++;
            p = code.p;
        } else if ((tag & CHURN_REC_CLASS_MASK) == CHURN_REC_FREE_SHORT) {
            vread distance = read_v_padded(p + 1);
            if (!distance.p || distance.p > end ||
                (tag & CHURN_REC_KIND_MASK) >= CHURN_FREE_KINDS ||
                distance.v - 1 >= CHURN_RECENT_ALLOCS || distance.v > coder->allocs)
                break;
            churn_segment_alloc *e = &recent[(coder->allocs - distance.v) % CHURN_RECENT_ALLOCS];
            if (!e->addr || e->epoch < epoch)
                break;
            churn_alloc_info *info = &infos[e->info];
            if (!(info->allocs | info->frees))
                break;
            uint32_t at = e->op - first;
            int vacate = at < len && e->epoch <= vacate_max && after_fence(live, e->op);
            uint64_t addr = e->addr;
            e->addr = 0;
            churn_coder_freed_to(coder, info->lifo, addr);
            info->temporary += distance.v == 1 && d->prev_addr;
            d->prev_addr = 0;
            churn_peak_apply(peak, info->peak_site, info->size, 1, epoch);
            if (vacate) {
                kinds[at] = CHURN_LIVE_VACATE;
            } else {
                objects[len] = (churn_object){addr, info->size, (uint32_t)info->stack,
                                              info->slack, epoch};
                kinds[len++] = CHURN_LIVE_REMOVE;
            }
            info->frees++;
            p = distance.p;
        } else if (tag == CHURN_REC_THREAD) {
            vread v = read_v_padded(p + 1);
            if (!v.p || v.p > end)
                break;
            st->tid = v.v;
            if (peak)
                churn_peak_thread(peak, v.v);
            p = v.p;
        } else {
            break;
        }
    }
    o->len = len;
    return p; /* a record left to decode_event was not read past */
}

/* A full free: the live pass gets its removal. */
static int decode_free(churn_decoder *d, cursor *c, churn_record *r, churn_live_sink *live)
{
    r->u.free.addr = delta_addr(c, d->coder->prev_addr);
    r->u.free.size = get_v(c);
    r->u.free.slack = get_v(c);
    r->u.free.stack = get_v(c);
    r->u.free.age = get_v(c);
    if (!c->ok || r->kind >= CHURN_FREE_KINDS || r->u.free.stack > UINT32_MAX)
        return 0;
    uint64_t alloc_epoch = r->u.free.age > r->epoch ? 0 : r->epoch - r->u.free.age;
    r->u.free.temporary = d->prev_addr && d->prev_addr == r->u.free.addr &&
                          d->prev_size == r->u.free.size && d->prev_stack == r->u.free.stack &&
                          d->prev_epoch == alloc_epoch;
    d->prev_addr = 0;
    churn_peak_apply(d->peak, churn_peak_site_of(d->peak, r->u.free.stack), r->u.free.size, 1,
                     r->epoch);
    churn_coder_freed_to(d->coder, churn_coder_lifo(d->coder, r->u.free.size + r->u.free.slack),
                         r->u.free.addr);
    if (r->u.free.addr && live_applies(live, r->epoch)) {
        uint64_t age = r->u.free.age > r->epoch ? r->epoch : r->u.free.age;
        out_chunk out = out_open(live);
        out_put(live, &out, CHURN_LIVE_REMOVE, r->u.free.addr, r->u.free.size,
                (uint32_t)r->u.free.stack, churn_slack32(r->u.free.slack), r->epoch - age);
        out_close(live, &out);
    }
    return 1;
}

/* Records other than those of decode_event.  Returns 1 with *r filled for a record
   the visitor sees, 0 for state-only records, -1 when the record is malformed. */
static int decode_one(churn_decoder *d, cursor *c, const stream_state *st, unsigned tag,
                      churn_record *r, churn_live_sink *live)
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
        r->u.module.unloaded = d->version == 1 ? 0 : get_v(c);
        r->u.module.build_id = get_bytes(c, &r->u.module.build_id_len);
        d->text_len = 0;
        /* ids are below what libchurn can record: the map of one process stays small */
        ok = get_module_path(d, c, r) && r->u.module.id < CHURN_MODULES_MAX;
        break;
    case CHURN_REC_STACK:
        ok = decode_stack(d, c, r);
        break;
    case CHURN_REC_ALLOCATOR:
        ok = decode_allocator(d, c, r);
        break;
    case CHURN_REC_SIZE_CLASSES:
        ok = decode_size_classes(d, c, r);
        break;
    case CHURN_REC_CARRY:
        ok = decode_carry(d, c, r);
        break;
    case CHURN_REC_STACK_SAMPLE:
        r->u.stack_sample.n = get_v(c);
        ok = c->ok && d->version >= 3 && r->u.stack_sample.n >= 2;
        break;
    case CHURN_REC_SAMPLE_BYTES:
        r->u.sample_bytes.n = get_v(c);
        ok = c->ok && kind == 0 && r->u.sample_bytes.n >= 1;
        break;
    case CHURN_REC_CODE: {
        if (kind == CHURN_CODE_PY) {
            r->u.py_code.id = get_v(c);
            d->text_len = 0;
            size_t name = get_string(d, c);
            r->u.py_code.name = d->text + name;
            ok = c->ok && d->version >= 7 && d->text[name] &&
                 r->u.py_code.id <= churn_py_frame_code(~0ull);
            break;
        }
        r->u.code.start = get_v(c);
        r->u.code.size = get_v(c);
        d->text_len = 0;
        size_t name = get_string(d, c); /* before d->text is read: it may move */
        r->u.code.name = d->text + name;
        ok = c->ok && kind == CHURN_CODE_RANGE && d->version >= 6 && r->u.code.size &&
             r->u.code.start + r->u.code.size > r->u.code.start;
        break;
    }
    case CHURN_REC_SHORT_STACKS:
        r->u.short_stacks.n = get_v(c);
        ok = c->ok && r->u.short_stacks.n >= 1;
        break;
    case CHURN_REC_COUNTERS_STALE:
        r->u.counters_stale.epoch = get_v(c);
        r->u.counters_stale.age_ns = get_v(c);
        ok = c->ok;
        break;
    case CHURN_REC_DROPPED:
        r->u.dropped.count = get_v(c);
        r->u.dropped.reason = get_v(c);
        ok = c->ok;
        break;
    case CHURN_REC_UNORDERED:
        r->u.unordered.count = get_v(c);
        ok = c->ok && d->version >= 4;
        break;
    case CHURN_REC_EXIT:
        r->u.exit.how = get_v(c);
        r->u.exit.detail = get_v(c);
        ok = c->ok;
        break;
    case CHURN_REC_ALLOC_INFO:
        return decode_alloc_info(d, c) ? 0 : -1;
    case CHURN_REC_FREE:
        ok = decode_free(d, c, r, live);
        break;
    case CHURN_REC_FREE_UNKNOWN:
        d->prev_addr = 0;
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
        ok = c->ok && r->kind < (d->version >= 6 ? CHURN_MAP_KINDS : CHURN_MAP_ARENA);
        break;
    case CHURN_REC_EPOCH_END:
        ok = kind == 0 && decode_epoch_end(d, c, r);
        break;
    default:
        ok = 0;
    }
    return ok ? 1 : -1;
}


/* Counts are handed over when the epoch changes, at the end, and before the records whose
   handling reads what they change (see records.h). */
static int hands_counts_before(unsigned tag)
{
    return tag == CHURN_REC_SEGMENT_START || tag == CHURN_REC_CARRY ||
           tag == CHURN_REC_DROPPED || tag == CHURN_REC_EXIT || tag == CHURN_REC_EPOCH_END;
}

int churn_decode_records(churn_decoder *d, const uint8_t *buf, size_t len, churn_record_fn fn,
                         void *ctx, churn_live_sink *live, size_t *bad_offset,
                         unsigned *bad_tag)
{
    if (!d->coder) {
        d->coder = churn_xmalloc(sizeof *d->coder);
        d->recent = churn_xmalloc(CHURN_RECENT_ALLOCS * sizeof *d->recent);
    }
    reset_segment_state(d);
    d->tid = d->epoch = 0;
    return churn_decode_more(d, buf, len, fn, ctx, live, bad_offset, bad_tag);
}

int churn_decode_more(churn_decoder *d, const uint8_t *buf, size_t len, churn_record_fn fn,
                      void *ctx, churn_live_sink *live, size_t *bad_offset, unsigned *bad_tag)
{
    if (!d->peak)
        d->peak = &d->own_peak;
    stream_state st = {d->tid, d->epoch};
    const uint8_t *p = buf, *end = buf + len, *bad = NULL;
    while (p < end) {
        if (decode_fast) {
            p = decode_common(d, p, end, &st, live, &bad);
            if (!p || p == end)
                break;
        }
        const uint8_t *next = decode_event(d, p, end, &st, live, fn, ctx, &bad);
        if (next != p) {
            if (!next)
                break;
            p = next;
            continue;
        }
        unsigned tag = *p;
        if (hands_counts_before(tag))
            hand_counts(d, &st, fn, ctx);
        cursor c = {p + 1, end, 1};
        churn_record r;
        int res = decode_one(d, &c, &st, tag, &r, live);
        if (res < 0) {
            bad = p;
            break;
        }
        if (res > 0)
            fn(ctx, &r);
        if (tag == CHURN_REC_EPOCH_END && live->epoch_marks) {
            out_chunk out = out_open(live);
            uint32_t op = out_put(live, &out, CHURN_LIVE_EPOCH, 0, 0, 0, 0, r.u.epoch_end.epoch);
            out_close(live, &out);
            live->fence = op + 1;
        }
        if ((tag & CHURN_REC_CLASS_MASK) == CHURN_REC_MAP && r.kind == CHURN_MAP_ARENA &&
            live->epoch_marks) {
            out_chunk out = out_open(live);
            out_put(live, &out, CHURN_LIVE_ARENA, r.u.map.addr, r.u.map.length, 0, 0,
                    r.u.map.a);
            out_close(live, &out);
        }
        p = c.p;
    }
    hand_counts(d, &st, fn, ctx);
    d->tid = st.tid;
    d->epoch = st.epoch;
    if (bad) {
        *bad_offset = (size_t)(bad - buf);
        *bad_tag = *bad;
        return -1;
    }
    return 0;
}

void churn_decoder_free(churn_decoder *d)
{
    churn_peak_free(&d->own_peak);
    free(d->coder);
    free(d->infos);
    free(d->counted);
    free(d->recent);
    free(d->spilled);
    free(d->ips);
    free(d->carry);
    free(d->classes);
    free(d->callsites);
    free(d->counters);
    free(d->names);
    free(d->offsets);
    free(d->pairs);
    free(d->recent_stacks);
    free(d->text);
    *d = (churn_decoder){0};
}
