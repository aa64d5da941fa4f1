/*
 * Address prediction for event records, shared by the shim's encoder and the analyzer's
 * decoder so both sides run the very same state machine (docs/format.md, "Event coding").
 *
 * Allocators hand out the block freed last for the same size (glibc's tcache, tcmalloc's and
 * jemalloc's per-class free lists are LIFO), and programs free what they allocated last.  So
 * an allocation's address is usually one of the few most recently freed addresses, or the
 * end of the previous one; and a free names its object by how many allocations ago it was
 * made.  Small codes instead of addresses, in sequences that repeat when the program's loop
 * repeats, which is what zstd compresses well.
 *
 * The state is per segment: churn_coder_reset() at every CHURN_REC_SEGMENT_START.
 */
#ifndef CHURN_CODING_H
#define CHURN_CODING_H

#include <stdint.h>
#include <string.h>

#include "format.h" /* churn_zigzag */

#define CHURN_LIFO_BUCKETS 1024u
#define CHURN_LIFO_DEPTH 4u      /* ALLOC codes 0..3: a slot of the usable size's LIFO */
#define CHURN_FREED 1024u        /* ALLOC codes 4..1027: the address freed j frees ago */
#define CHURN_FREED_CACHE 4096u  /* address -> free number, to find j without a search */
#define CHURN_ADJACENT 4u        /* then 4 codes: right after the previous allocation,
                                    4 more: right after the previous fresh one */
#define CHURN_ALLOC_EXPLICIT (CHURN_LIFO_DEPTH + CHURN_FREED + 2 * CHURN_ADJACENT)

typedef struct churn_coder {
    uint64_t prev_addr;          /* address of the previous heap event */
    uint64_t prev_map_addr;      /* address of the previous page-level event */
    uint64_t prev_alloc_end;     /* address + usable size of the previous allocation */
    uint64_t prev_fresh_end;     /* the same for the previous one not found in a free list */
    uint64_t allocs;             /* allocations so far in this segment: the next one's number */
    uint64_t freed[CHURN_FREED];
    unsigned freed_pos;
    /* Where in freed[] an address was last put, by address hash; a stale or overwritten
       entry only costs an explicit code.  The decoder keeps it too but never needs it. */
    unsigned freed_cache[CHURN_FREED_CACHE];
    uint64_t lifo[CHURN_LIFO_BUCKETS][CHURN_LIFO_DEPTH];
} churn_coder;

static inline void churn_coder_reset(churn_coder *c)
{
    memset(c, 0, sizeof *c);
}

/* The LIFO is four words: moves written out, because a memmove of a variable few bytes is a
   real library call on both sides' hottest path, and GCC turns a loop from slot k to the end
   back into one. */
static inline void churn_lifo_push(uint64_t *l, uint64_t addr)
{
    for (unsigned i = CHURN_LIFO_DEPTH - 1; i > 0; i--)
        l[i] = l[i - 1];
    l[0] = addr;
}

static inline void churn_lifo_take(uint64_t *l, unsigned k)
{
    _Static_assert(CHURN_LIFO_DEPTH == 4, "churn_lifo_take moves four slots");
    l[0] = k < 1 ? l[1] : l[0];
    l[1] = k < 2 ? l[2] : l[1];
    l[2] = k < 3 ? l[3] : l[2];
    l[3] = 0;
}

static inline unsigned churn_lifo_bucket(uint64_t usable)
{
    return (unsigned)(((uint32_t)usable * 2654435761u) >> 22) & (CHURN_LIFO_BUCKETS - 1);
}

/* The LIFO of a usable size.  A decoder may keep it per allocation info. */
static inline uint64_t *churn_coder_lifo(churn_coder *c, uint64_t usable)
{
    return c->lifo[churn_lifo_bucket(usable)];
}

/* What a free changes that decoding reads, with lifo = churn_coder_lifo(c, usable): its
   address becomes the newest of its LIFO and of the freed ring. */
static inline void churn_coder_freed_to(churn_coder *c, uint64_t *lifo, uint64_t addr)
{
    churn_lifo_push(lifo, addr);
    c->freed[c->freed_pos++ % CHURN_FREED] = addr;
    c->prev_addr = addr;
}

/* After every free (short or full), on both sides; freed_cache only serves the encoder. */
static inline void churn_coder_freed(churn_coder *c, uint64_t addr, uint64_t usable)
{
    c->freed_cache[(addr * 0x9e3779b97f4a7c15u) >> 52] = c->freed_pos;
    churn_coder_freed_to(c, churn_coder_lifo(c, usable), addr);
}

/* After every allocation, with its code.  Returns the allocation's number in this segment,
   which a later FREE_SHORT names by distance. */
static inline uint64_t churn_coder_allocated(churn_coder *c, uint64_t addr, uint64_t usable,
                                             uint64_t code)
{
    c->prev_alloc_end = addr + usable;
    if (code >= CHURN_LIFO_DEPTH + CHURN_FREED)
        c->prev_fresh_end = addr + usable;
    c->prev_addr = addr;
    return c->allocs++;
}


static inline int churn_adjacent(uint64_t end, uint64_t addr, uint64_t *gap)
{
    if (!end || addr < end || addr - end >= 8 * CHURN_ADJACENT || ((addr - end) & 7))
        return 0;
    *gap = (addr - end) / 8;
    return 1;
}

/* ALLOC address code, tried in this order: a LIFO slot of the same usable size (taken out of
   the LIFO), an address freed recently, the end of the previous allocation or of the previous
   fresh one plus 0..24 bytes (memory carved in order), else
   CHURN_ALLOC_EXPLICIT + zigzag(address - prev_addr). */
static inline uint64_t churn_encode_alloc_addr(churn_coder *c, uint64_t addr, uint64_t usable)
{
    uint64_t *l = c->lifo[churn_lifo_bucket(usable)];
    for (unsigned k = 0; k < CHURN_LIFO_DEPTH; k++)
        if (l[k] == addr) {
            churn_lifo_take(l, k);
            return k;
        }
    unsigned at = c->freed_cache[(addr * 0x9e3779b97f4a7c15u) >> 52];
    if (c->freed_pos - at <= CHURN_FREED && c->freed[at % CHURN_FREED] == addr)
        return CHURN_LIFO_DEPTH + (c->freed_pos - 1 - at);
    uint64_t gap;
    if (churn_adjacent(c->prev_alloc_end, addr, &gap))
        return CHURN_LIFO_DEPTH + CHURN_FREED + gap;
    if (churn_adjacent(c->prev_fresh_end, addr, &gap))
        return CHURN_LIFO_DEPTH + CHURN_FREED + CHURN_ADJACENT + gap;
    return CHURN_ALLOC_EXPLICIT + churn_zigzag((int64_t)(addr - c->prev_addr));
}

/* With lifo = churn_coder_lifo(c, usable).  Returns 0 on a code that names an empty slot
   (a corrupt stream). */
static inline int churn_decode_alloc_addr(churn_coder *c, uint64_t *lifo, uint64_t code,
                                          uint64_t *addr)
{
    const uint64_t adjacent = CHURN_LIFO_DEPTH + CHURN_FREED;
    if (code < CHURN_LIFO_DEPTH) {
        *addr = lifo[code];
        churn_lifo_take(lifo, (unsigned)code);
    } else if (code < adjacent) {
        unsigned j = (unsigned)(code - CHURN_LIFO_DEPTH);
        *addr = c->freed[(c->freed_pos - 1 - j) % CHURN_FREED];
    } else if (code < adjacent + CHURN_ADJACENT) {
        *addr = c->prev_alloc_end ? c->prev_alloc_end + 8 * (code - adjacent) : 0;
    } else if (code < CHURN_ALLOC_EXPLICIT) {
        uint64_t gap = code - adjacent - CHURN_ADJACENT;
        *addr = c->prev_fresh_end ? c->prev_fresh_end + 8 * gap : 0;
    } else {
        *addr = c->prev_addr + (uint64_t)churn_unzigzag(code - CHURN_ALLOC_EXPLICIT);
    }
    return *addr != 0;
}

#endif
