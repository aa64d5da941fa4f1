/*
 * The fast DWARF-CFI walker (see cfi.h) and its table of rules.
 *
 * Per return address, the CFI of the calling function at (return address - 1) is reduced to
 * one 32-bit rule (cfi_rule.h; cfi_parse.c reads the CFI): the CFA is rsp or rbp plus an
 * offset, the return address sits at CFA-8, the caller's rbp is either unchanged or saved at
 * CFA-8k.  Rules live in one process-wide
 * direct-mapped table read without locks: each slot is {sequence<<32 | rule, ip}, and a
 * reader accepts a slot only if it read the same even sequence word before and after the
 * ip (a seqlock whose sequence shares the word with the data, so a racy fill can never be
 * read half-written).  Frames that need more (expressions, other CFA registers, signal
 * frames, code without CFI) get the rule "slow", cached too, and make the walk give up.
 *
 * In front of that table each thread keeps a small two-way cache indexed by return address,
 * reset when the generation moves.  Behind both, each thread keeps its previous walk, whose
 * outer part a new walk reuses once it reaches one of its frames unchanged (see "the last
 * walk" below).
 */
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "walk/cfi.h"
#include "walk/cfi_rule.h"

/* ---- the rule cache ---- */

#define SLOTS_LOG 15
#define SLOTS (1u << SLOTS_LOG)
#define BIG_SLOTS_LOG 17
#define SEQ_ONE (1ull << 32)

typedef struct {
    _Atomic uint64_t word; /* sequence << 32 | rule; an odd sequence means "being written" */
    _Atomic uintptr_t ip;  /* the return address the rule is for; 0 = none */
} rule_slot;

/* Static zero pages: only the slots in use become resident, none of it is the traced heap. */
static rule_slot slots[SLOTS] __attribute__((aligned(64)));

/* The shared table starts with `slots` and moves once to one of 2^BIG_SLOTS_LOG when return
   addresses keep evicting each other.  workerd's do, and a rule computed again is a search of
   the module's CFI under the loader's lock: the move took its main thread 0.957 of the time
   (a big table from the start, 0.92 to 0.94).  python3 never gets there, which keeps small
   programs' RSS where it was (a big table from the start cost them 1.5 MiB).  A thread that
   still holds the small table reads and fills it: rules are the same wherever they are kept. */
typedef struct {
    rule_slot *slots;
    unsigned log;
} rule_table;
static const rule_table small_table = {slots, SLOTS_LOG};
static rule_table big_table;
static _Atomic(const rule_table *) table = &small_table;
/* Rules that evicted another address's rule: past GROW_EVICTIONS the table moves. */
#define GROW_EVICTIONS (SLOTS / 32)
static _Atomic uint32_t evictions;
static _Atomic int growing;
static _Atomic uint32_t forgets; /* churn_cfi_forget calls begun */

/* Bumped after churn_cfi_forget has emptied the table: threads then empty their caches. */
static _Atomic uint32_t generation;

/* The per-thread cache in front of `slots`, by return address, two ways a set: 32 KiB,
   resident as used.  Keyed by stack position, the allocation sites called at one depth
   would evict each other: 54 % of python3's frames and 41 % of workerd's missed such a
   cache even at 64 KiB; keyed by address, 0 % and 3.6 % (1.1 % at 64 KiB, 23 % at 8 KiB). */
#define NEAR_LOG 11
#define NEAR (1u << NEAR_LOG)
typedef struct {
    uintptr_t ip;
    uint32_t cfa_off; /* RULE_CFA_OFF(rule), unpacked to keep a shift off the critical path */
    uint32_t rule;
} near_slot;

static inline size_t slot_index(uintptr_t ip, unsigned log)
{
    return (size_t)((ip * 0x9e3779b97f4a7c15ull) >> (64 - log));
}

static inline rule_slot *slot_of(uintptr_t ip)
{
    const rule_table *t = atomic_load_explicit(&table, memory_order_acquire);
    return &t->slots[slot_index(ip, t->log)];
}

/* The return address a slot holds a whole rule for, with the rule; 0 when it holds none or is
   being written. */
static inline uintptr_t slot_read(const rule_slot *s, uint32_t *rule)
{
    uint64_t w1 = atomic_load_explicit(&s->word, memory_order_acquire);
    uintptr_t ip = atomic_load_explicit(&s->ip, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    uint64_t w2 = atomic_load_explicit(&s->word, memory_order_relaxed);
    if (w1 != w2 || (w1 & SEQ_ONE))
        return 0;
    *rule = (uint32_t)w1;
    return ip;
}

static inline int cached_rule(uintptr_t ip, uint32_t *rule)
{
    return slot_read(slot_of(ip), rule) == ip;
}

/* Claims the slot by making its sequence odd; returns 0 if another thread holds it. */
static int slot_claim(rule_slot *s, uint64_t *w)
{
    *w = atomic_load_explicit(&s->word, memory_order_relaxed);
    if (*w & SEQ_ONE)
        return 0;
    if (!atomic_compare_exchange_strong_explicit(&s->word, w, *w + SEQ_ONE, memory_order_relaxed,
                                                 memory_order_relaxed))
        return 0;
    atomic_thread_fence(memory_order_release);
    return 1;
}

static void slot_publish(rule_slot *s, uint64_t w, uintptr_t ip, uint32_t rule)
{
    atomic_store_explicit(&s->ip, ip, memory_order_relaxed);
    uint64_t seq = ((w >> 32) + 2) << 32;
    atomic_store_explicit(&s->word, seq | rule, memory_order_release);
}

static void forget_in(const rule_table *t)
{
    for (size_t i = 0; i < (size_t)1 << t->log; i++) {
        rule_slot *s = &t->slots[i];
        if (!atomic_load_explicit(&s->ip, memory_order_relaxed))
            continue;
        uint64_t w;
        while (!slot_claim(s, &w))
            __builtin_ia32_pause();
        slot_publish(s, w, 0, KIND_EMPTY);
    }
}

/* Called by the thread whose store made the count pass the mark, so once. */
static __attribute__((noinline, cold)) void grow_table(void)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&growing, &expected, 1))
        return;
    /* A system call of its own, as libchurn's other mappings: never the traced heap, and
       never the exported mmap, which would record it. */
    long p = syscall(SYS_mmap, NULL, sizeof(rule_slot) << BIG_SLOTS_LOG, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == -1)
        return; /* no memory: the small table goes on serving */
    rule_slot *bigger = (rule_slot *)p;
    uint32_t begun = atomic_load(&forgets);
    /* The rules known so far come along, so the move does not cost every address a search
       again; the new table is not yet seen by anyone, so its slots need no claim. */
    for (unsigned i = 0; i < SLOTS; i++) {
        uint32_t rule;
        uintptr_t ip = slot_read(&slots[i], &rule);
        if (ip)
            slot_publish(&bigger[slot_index(ip, BIG_SLOTS_LOG)], 0, ip, rule);
    }
    big_table = (rule_table){bigger, BIG_SLOTS_LOG};
    atomic_store(&table, &big_table);
    /* A module unloaded meanwhile (churn_cfi_forget emptied the small table as the copy read
       it): the copy may hold its rules.  A forget that began before the table was published
       and looked for it too early is seen here (both sides store, then load, sequentially
       consistent), and one that began after empties the big table itself. */
    if (atomic_load(&forgets) != begun)
        forget_in(&big_table);
}

/* A slot being filled by another thread is left alone: this rule is computed again the next
   time the address is seen. */
static void store_rule(uintptr_t ip, uint32_t rule)
{
    rule_slot *s = slot_of(ip);
    uint64_t w;
    if (!slot_claim(s, &w))
        return;
    uintptr_t old = atomic_load_explicit(&s->ip, memory_order_relaxed);
    slot_publish(s, w, ip, rule);
    if (old && old != ip &&
        atomic_fetch_add_explicit(&evictions, 1, memory_order_relaxed) + 1 == GROW_EVICTIONS)
        grow_table();
}

void churn_cfi_forget(void)
{
    atomic_fetch_add(&forgets, 1);
    forget_in(&small_table);
    const rule_table *t = atomic_load(&table);
    if (t != &small_table)
        forget_in(t);
    atomic_fetch_add_explicit(&generation, 1, memory_order_release);
}

int churn_cfi_function_extent(uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
    int unloaded;
    int rc = churn_cfi_read_extent(addr, lo, hi, &unloaded);
    if (unloaded)
        churn_cfi_forget();
    return rc;
}

static __attribute__((noinline)) uint32_t fill(uintptr_t ra)
{
    int unloaded;
    uint32_t rule = churn_cfi_read_rule(ra - 1, &unloaded);
    if (unloaded)
        churn_cfi_forget();
    store_rule(ra, rule);
    return rule;
}

/* ---- the last walk, for the next one ---- */

/* A walk is a function of its starting state (sp, rbp, ip), the rules (fixed until the
   generation moves) and the stack words it loads.  So once a walk reaches a frame whose state
   equals a frame of this thread's previous walk, and every word the previous walk loaded from
   there outwards still holds the value it read, the rest of the walk is the previous one's:
   that is checked with independent loads instead of the chain of dependent ones a walk is.
   Stacks of one thread share their outer frames, so most walks stop a few frames in.

   The previous walk is kept outermost frame first, so a walk that reuses its outer part only
   writes its own inner frames. */
#define MEMO_FRAMES CHURN_CFI_MEMO_FRAMES
/* A frame of the previous walk is kept in two parts.  Every walk reads the first of the frames
   it passes (the scan for its own stack pointer) and of every frame outside a match (the check
   that their return addresses are still in place); the second only at a match and when it
   writes its own frames.  Apart, the first takes 16 bytes a frame, where the whole took 48:
   the words python3's walks read to check 14 frames and workerd's 39 fit in a third of the
   cache lines. */
typedef struct {
    uintptr_t sp, ip;       /* the state on reaching the frame; ip was loaded at sp - 8 */
} memo_hot;

typedef struct {
    uintptr_t bp;           /* rbp on reaching the frame */
    uintptr_t needs_bp;     /* the walk from here on reads bp as it was here */
    uint64_t chain;         /* churn_chain_step over the frames from the outermost to here */
    uint32_t nbp;           /* bp checks made by the steps out of the frames up to this one */
} memo_cold;

/* The step out of frame `frame` (an index of memo->h and memo->c) loaded the caller's saved rbp from
   `load`, and the walk outside used it.  Few frames need one (only where a frame that keeps
   rbp is called by one that uses it as its CFA), so they are kept apart from the return
   addresses, which every frame checks. */
typedef struct {
    const uintptr_t *load;
    uintptr_t value;
    uint32_t frame;
} bp_check;

typedef struct {
    uint32_t n;           /* frames; 0 = nothing to reuse */
    uint32_t generation;
    uintptr_t stack_hi; /* the top of its stack: another stack's words are not read */
    /* Frame 0 is the state after the outermost frame (ip 0: the walk ended on a zero return
       address; a dummy whose return-address word is zero_word when the rule ended it), frame
       p+1 the frame at outer position p. */
    memo_hot h[MEMO_FRAMES + 1];
    memo_cold c[MEMO_FRAMES + 1];
    bp_check bp[MEMO_FRAMES + 1]; /* ordered by frame; c[i].nbp of them belong to frames 0..i */
} memo_walk;

/* A thread's walking state, in the caller's churn_cfi_thread: not in TLS, as a preloaded
   library's TLS is taken from every thread's stack, and a program that starts a thread with a
   small stack (node does) would have pthread_create fail with EINVAL.  A walk is never
   interrupted by another walk on the same thread (the shim's re-entrancy guard keeps signal
   handlers' allocations untraced). */
/* The frames this walk did itself, innermost first, before it knew where it would end. */
typedef struct {
    uintptr_t sp, bp, ip;
    uint32_t rule;
} own_frame;

typedef struct {
    near_slot near[NEAR];
    uint32_t near_generation;
    memo_walk memo;
    /* The walk's own frames, here rather than on the stack: 3 KiB of frame on the allocation
       path is more than a signal handler on a small sigaltstack has to spare. */
    own_frame own[MEMO_FRAMES];
} thread_state;
_Static_assert(sizeof(thread_state) <= sizeof(churn_cfi_thread), "CHURN_CFI_THREAD_BYTES");
_Static_assert(_Alignof(thread_state) <= _Alignof(churn_cfi_thread), "churn_cfi_thread alignment");

static const uintptr_t zero_word;

/* The outermost frame at or outside q whose step would now differ, the slow way. */
static __attribute__((noinline)) int memo_first_change(const memo_walk *memo, int q)
{
    const memo_hot *h = memo->h;
    int p = 0;
    while (p <= q && ((const uintptr_t *)h[p].sp)[-1] == h[p].ip)
        p++;
    for (uint32_t i = 0; i < memo->c[q + 1].nbp; i++) {
        const bp_check *c = &memo->bp[i];
        if ((int)c->frame - 1 >= p)
            break;
        if (*c->load != c->value)
            return (int)c->frame - 1;
    }
    return p <= q ? p : -1;
}

/* The words the previous walk loaded from frame q outwards, compared with what they hold now:
   the outermost frame whose step would now differ, or -1 when none does.  Nearly always none
   does, so every word is compared without a branch per frame, two frames a round. */
static inline __attribute__((always_inline)) int memo_changed(const memo_walk *memo, int q)
{
    const memo_hot *h = memo->h;
    uintptr_t diff = 0, diff2 = 0;
    int p = 0;
    for (; p < q; p += 2) {
        diff |= ((const uintptr_t *)h[p].sp)[-1] ^ h[p].ip;
        diff2 |= ((const uintptr_t *)h[p + 1].sp)[-1] ^ h[p + 1].ip;
    }
    if (p == q)
        diff |= ((const uintptr_t *)h[p].sp)[-1] ^ h[p].ip;
    /* The saved rbp words two a round too: workerd's walks compare about 27, and one a round
       took 7 instructions each. */
    const bp_check *b = memo->bp;
    uint32_t i = 0, n = memo->c[q + 1].nbp;
    for (; i + 1 < n; i += 2) {
        diff |= *b[i].load ^ b[i].value;
        diff2 |= *b[i + 1].load ^ b[i + 1].value;
    }
    if (i < n)
        diff |= *b[i].load ^ b[i].value;
    return (diff | diff2) ? memo_first_change(memo, q) : -1;
}

/* One frame this walk did itself, frame i (i = p + 1 for outer position p), whose outer frame
   is in place. */
static inline __attribute__((always_inline)) void memo_put(memo_walk *memo, unsigned i,
                                                          uintptr_t sp, uintptr_t bp,
                                                          uintptr_t ip, uint32_t rule)
{
    memo_cold *f = &memo->c[i];
    const memo_cold *outer = f - 1;
    memo->h[i] = (memo_hot){sp, ip};
    f->bp = bp;
    f->chain = churn_chain_step(outer->chain, ip);
    f->nbp = outer->nbp;
    /* The saved rbp is checked only where the walk outside reads it. */
    if (RULE_KIND(rule) != KIND_STEP) {
        f->needs_bp = 0;
    } else if (rule & RULE_RBP_SAVED) {
        if (outer->needs_bp) {
            const uintptr_t *at =
                (const uintptr_t *)(memo->h[i - 1].sp - 8 * RULE_RBP_SLOT(rule));
            memo->bp[f->nbp++] = (bp_check){at, outer->bp, i};
        }
        f->needs_bp = (rule & RULE_CFA_RBP) != 0;
    } else {
        f->needs_bp = (rule & RULE_CFA_RBP) || outer->needs_bp;
    }
}


/* ---- the walk ---- */

static uintptr_t skip_lo, skip_hi;

void churn_cfi_skip_frames_of(uintptr_t lo, uintptr_t hi)
{
    skip_lo = lo;
    skip_hi = hi;
}

/* The walk from the frame of the exported function it is inlined into. */
static __attribute__((always_inline)) inline int walk(thread_state *ts,
                                                     const uintptr_t *frame, uintptr_t *ips,
                                                     unsigned max, uintptr_t stack_lo,
                                                     uintptr_t stack_hi, uint64_t *chain,
                                                     int lazy)
{
    memo_walk *const memo = &ts->memo;
    *chain = 0;
    uintptr_t sp = (uintptr_t)(frame + 2), bp = frame[0], ip = frame[1];
    unsigned n = 0;
    int at_top = 0;
    if (sp < stack_lo || sp >= stack_hi)
        return -1;
    /* The caller's own frames all keep rbp as frame pointer (CFA = rbp + 16, the caller's rbp
       at rbp), which is what their CFI says at every call site: two loads a frame, no rule,
       and the walks of different ways in start at the same frame. */
    while (ip >= skip_lo && ip < skip_hi) {
        if (bp < sp || bp > stack_hi - 16 || (bp & 7))
            return -1;
        const uintptr_t *f = (const uintptr_t *)bp;
        sp = bp + 16;
        ip = f[1];
        bp = f[0];
    }
    /* As the walk below treats a return address it steps to; once, after the loop, as an
       address that low is never ours (nor is our own return address, where it did not step). */
    if (ip < 0x4000)
        return ip ? -1 : 0;
    uint32_t gen = atomic_load_explicit(&generation, memory_order_acquire);
    if (__builtin_expect(gen != ts->near_generation, 0)) {
        memset(ts->near, 0, sizeof ts->near);
        ts->near_generation = gen;
    }
    if (memo->generation != gen || memo->stack_hi != stack_hi) {
        memo->n = 0;
        memo->generation = gen;
        memo->stack_hi = stack_hi;
    }
    own_frame *const own = ts->own;
    /* m walks the previous walk from its innermost frame outwards as this walk's stack
       pointer grows: one step per frame finds the match.  Frames at or inside a changed
       word can never match again in this walk; frames up to `checked` are known unchanged.
       A pointer, not an index: the thread-local base is not recomputed each frame. */
    const memo_hot *mf = memo->h + 1, *m = mf + (int)memo->n - 1, *checked = mf - 1;
    near_slot *sets = ts->near;
    while (n < max) {
        while (m >= mf && m->sp < sp)
            m--;
        if (m >= mf && m->sp == sp && m->ip == ip) {
            const memo_cold *mc = memo->c + (m - memo->h);
            if (mc->bp == bp || !mc->needs_bp) {
                if (m <= checked)
                    goto reuse;
                int changed = memo_changed(memo, (int)(m - mf));
                if (changed < 0)
                    goto reuse;
                /* Frames outside the change were checked on the way: a match there needs no
                   more. */
                m = checked = mf + changed - 1;
            }
        }
        ips[n] = ip;
        near_slot *set = sets + 2 * ((ip * 0x9e3779b97f4a7c15ull) >> (64 - (NEAR_LOG - 1)));
        uint32_t rule = set[0].rule, off = set[0].cfa_off;
        if (__builtin_expect(set[0].ip != ip, 0)) {
            rule = set[1].rule;
            off = set[1].cfa_off;
            if (set[1].ip != ip) {
                if (!cached_rule(ip, &rule))
                    rule = fill(ip);
                off = RULE_CFA_OFF(rule);
                set[1] = set[0];
                set[0] = (near_slot){ip, off, rule};
            }
        }
        /* Kept once the rule is known: a walk that gives up never reads it. */
        if (n < MEMO_FRAMES)
            own[n] = (own_frame){sp, bp, ip, rule};
        n++;
        if (RULE_KIND(rule) != KIND_STEP) {
            if (RULE_KIND(rule) != KIND_END)
                return -1;
            goto remember;
        }
        uintptr_t cfa = ((rule & RULE_CFA_RBP) ? bp : sp) + off;
        /* Every load stays between the current stack pointer and the stack's top. */
        if (cfa < sp + 8 || (cfa & 7))
            return -1;
        /* A caller past the top: the frame is the stack's first (a coroutine's function,
           which makecontext's trampoline "returns" to, with no frame of its own there). */
        if (cfa > stack_hi) {
            at_top = 1;
            goto remember;
        }
        uintptr_t ra = ((const uintptr_t *)cfa)[-1];
        if (rule & RULE_RBP_SAVED) {
            uintptr_t at = cfa - 8 * RULE_RBP_SLOT(rule);
            if (at < sp)
                return -1;
            bp = *(const uintptr_t *)at;
        }
        sp = cfa;
        if (!ra)
            goto remember;
        /* libunwind's fast path stops below 0x4000 and its slow path does not: let it say. */
        if (ra < 0x4000)
            return -1;
        ip = ra;
    }
    return (int)n; /* cut short: not a whole walk to remember */
reuse: {
        /* The previous walk's frames q, q-1, .. 0 are this walk's frames n, n+1, ... */
        int q = (int)(m - mf);
        unsigned rest = (unsigned)q + 1, take = rest < max - n ? rest : max - n;
        /* Only a walk whose chain is returned may leave these frames to churn_cfi_last_walk */
        if (!lazy || take != rest || n + rest > MEMO_FRAMES)
            for (unsigned i = 0; i < take; i++)
                ips[n + i] = mf[q - (int)i].ip;
        if (take != rest || n + rest > MEMO_FRAMES)
            return (int)(n + take); /* cut short: the previous walk stays the one to keep */
        /* The frames outside q stay; bp as this walk has it is the one its own frames saw. */
        memo->c[q + 1].bp = bp;
        unsigned f = (unsigned)q + 2;
        for (unsigned i = n; i-- > 0; f++)
            memo_put(memo, f, own[i].sp, own[i].bp, own[i].ip, own[i].rule);
        memo->n = (uint32_t)(q + 1) + n;
        *chain = memo->c[memo->n].chain;
        return (int)(n + take);
    }
remember:
    /* A whole walk (it ended on its own): keep it for the next one.  sp, bp are the state
       after the last step when that step found a zero return address; a walk that ended at
       the stack's top read nothing past its last frame, whose state decided it. */
    if (n <= MEMO_FRAMES) {
        if (RULE_KIND(own[n - 1].rule) == KIND_STEP && !at_top) {
            memo->h[0] = (memo_hot){sp, 0};
            memo->c[0] = (memo_cold){bp, 0, CHURN_CHAIN_SEED, 0};
        } else {
            memo->h[0] = (memo_hot){(uintptr_t)(&zero_word + 1), 0};
            memo->c[0] = (memo_cold){0, 0, CHURN_CHAIN_SEED, 0};
        }
        unsigned f = 1;
        for (unsigned i = n; i-- > 0; f++)
            memo_put(memo, f, own[i].sp, own[i].bp, own[i].ip, own[i].rule);
        memo->n = n;
        *chain = memo->c[n].chain;
    }
    return (int)n;
}

/* Our own frame has a frame pointer (this file is built with -fno-omit-frame-pointer, and
   __builtin_frame_address forces one), so the caller's registers at the moment it resumes are
   exact: rsp just above our return address, rbp as we saved it. */
__attribute__((noinline)) int churn_cfi_backtrace(churn_cfi_thread *ct, uintptr_t *ips,
                                                  unsigned max, uintptr_t stack_lo,
                                                  uintptr_t stack_hi, uint64_t *chain)
{
    return walk((thread_state *)ct, __builtin_frame_address(0), ips, max, stack_lo, stack_hi,
                chain, 0);
}

__attribute__((noinline)) int churn_cfi_backtrace_lazy(churn_cfi_thread *ct, uintptr_t *ips,
                                                       unsigned max, uintptr_t stack_lo,
                                                       uintptr_t stack_hi, uint64_t *chain)
{
    return walk((thread_state *)ct, __builtin_frame_address(0), ips, max, stack_lo, stack_hi,
                chain, 1);
}

void churn_cfi_thread_reset(churn_cfi_thread *ct)
{
    ((thread_state *)ct)->memo.n = 0;
}

void churn_cfi_thread_forget(churn_cfi_thread *ct)
{
    thread_state *ts = (thread_state *)ct;
    ts->memo.n = 0;
    /* a generation that has passed: the next walk empties the cache */
    ts->near_generation = atomic_load_explicit(&generation, memory_order_relaxed) - 1;
}

/* After a walk that returned its chain, the thread's memo is that walk, outermost first:
   frame i from the innermost is memo->h[memo->n - i] (and memo->c). */
unsigned churn_cfi_last_walk(const churn_cfi_thread *ct, uintptr_t *ips)
{
    const memo_walk *memo = &((const thread_state *)ct)->memo;
    unsigned n = memo->n;
    for (unsigned i = 0; i < n; i++)
        ips[i] = memo->h[n - i].ip;
    return n;
}

uintptr_t churn_cfi_last_ip(const churn_cfi_thread *ct, unsigned i)
{
    const memo_walk *memo = &((const thread_state *)ct)->memo;
    return i < memo->n ? memo->h[memo->n - i].ip : 0;
}

uint64_t churn_cfi_last_chain(const churn_cfi_thread *ct, unsigned i)
{
    const memo_walk *memo = &((const thread_state *)ct)->memo;
    return i < memo->n ? memo->c[memo->n - i].chain : 0;
}
