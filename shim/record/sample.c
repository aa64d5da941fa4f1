/*
 * CHURN_SAMPLE_BYTES=N: allocations are sampled as a Poisson process over the bytes
 * allocated, with a mean of N bytes between two samples.  Each thread counts down the bytes
 * until its next sample point, drawn from an exponential distribution of mean N, so an
 * allocation of s bytes is sampled with probability p(s) = 1 - exp(-s/N), independently of
 * every other allocation; the analyzer weights each sampled object by 1/p(s), which makes
 * its callsite figures unbiased estimates (docs/analyzer.md, "Sampled traces").  Only sampled
 * allocations are walked and recorded (event.c), and only their frees: a free looks its
 * address up in the set of sampled live addresses below, which for the common free of an
 * unsampled object is one byte read.  Every allocation and free is still counted, per
 * thread, and the writer sums the counts into each epoch's EPOCH_END.
 */
#include <pthread.h>
#include <string.h>

#include "shim.h"

/* epoch UINT64_MAX: no counts yet, which keeps the fast path off (shim.h) */
__thread churn_sample_thread churn_sample_self = {.epoch = UINT64_MAX};

/* ---- the gap to the next sample ---- */

/* xorshift64*: a few instructions, and only on sampled allocations. */
static uint64_t next_random(churn_sample_thread *t)
{
    uint64_t x = t->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    t->rng = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* ln(x) for x in (0, 1]: x = m 2^e with m in [1, 2), ln m = 2 atanh((m - 1) / (m + 1)) from
   its series (|t| <= 1/3, five terms: a relative error below 1e-6, far below what the
   sampling itself varies by).  libm is not a dependency of the shim. */
static double log_unit(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    int e = (int)((bits >> 52) & 0x7ff) - 1023;
    bits = (bits & ((1ull << 52) - 1)) | (1023ull << 52);
    double m;
    memcpy(&m, &bits, sizeof m);
    double t = (m - 1.0) / (m + 1.0), t2 = t * t;
    double s = t * (1.0 + t2 * (1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7 + t2 * (1.0 / 9)))));
    return (double)e * 0.69314718055994530942 + 2.0 * s;
}

/* Bytes until the next sample point: exponential with mean N, at least 1. */
static uint64_t draw_gap(churn_sample_thread *t)
{
    t->mean = churn_opt.sample_bytes;
    /* 53 random bits as a uniform in (0, 1]: never 0, whose logarithm is not finite */
    double u = (double)((next_random(t) >> 11) + 1) * (1.0 / 9007199254740992.0);
    double gap = -log_unit(u) * (double)churn_opt.sample_bytes;
    return gap < 1.0 ? 1 : gap > 1e18 ? (uint64_t)1e18 : (uint64_t)gap;
}

/* ---- per-thread counts, summed by the writer ---- */

/* Blocks are never unmapped: the writer reads them without a lock.  A thread claims a free
   one on its first allocation and gives it back at its exit; the counts stay in it, as they
   are running totals the writer takes differences of.  The writer reads the blocks ever
   claimed (all_blocks), once an epoch: blocks not claimed yet wait apart (fresh). */
#define BLOCKS_PER_MAP 64
static churn_sample_counts *_Atomic all_blocks;
static churn_sample_counts *fresh;      /* under blocks_lock */
static size_t fresh_left;
static churn_spinlock blocks_lock;
static pthread_key_t release_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
/* The counts of a thread that could not get a block (libchurn's memory ran out). */
static churn_sample_counts shared_block;

static void release_block(void *arg)
{
    churn_sample_counts *b = arg;
    churn_sample_self.counts = NULL; /* a later TLS destructor's free claims one again */
    churn_sample_self.epoch = UINT64_MAX; /* and starts its history there */
    atomic_store_explicit(&b->in_use, 0, memory_order_release);
}

static void make_key(void)
{
    pthread_key_create(&release_key, release_block);
}

static churn_sample_counts *claim_block(void)
{
    churn_sample_counts *b = NULL;
    churn_spin_lock(&blocks_lock);
    for (churn_sample_counts *c = atomic_load(&all_blocks); c; c = c->next)
        if (!atomic_load_explicit(&c->in_use, memory_order_acquire)) {
            b = c;
            break;
        }
    if (!b) {
        if (!fresh_left && (fresh = churn_os_map(BLOCKS_PER_MAP * sizeof *fresh)))
            fresh_left = BLOCKS_PER_MAP;
        if (fresh_left) {
            b = fresh++;
            fresh_left--;
            b->next = atomic_load(&all_blocks);
            atomic_store_explicit(&all_blocks, b, memory_order_release);
        }
    }
    if (b)
        atomic_store(&b->in_use, 1);
    churn_spin_unlock(&blocks_lock);
    return b;
}

churn_sample_counts *churn_sample_counts_slow(void)
{
    churn_sample_thread *t = &churn_sample_self;
    if (!t->rng) {
        t->rng = ((uint64_t)churn_gettid() * 0x9e3779b97f4a7c15ull) ^ churn_now_ns() ^
                 (uint64_t)(uintptr_t)t;
        t->rng |= !t->rng;
        t->left = draw_gap(t);
    }
    churn_sample_counts *b = claim_block();
    if (!b) {
        t->counts = &shared_block; /* counted, if racily among such threads */
        return t->counts;
    }
    pthread_once(&key_once, make_key);
    pthread_setspecific(release_key, b);
    t->counts = b;
    return b;
}

/* How long a thread whose history is full waits for the writer before it overwrites the
   oldest entry (its counts then go to a later epoch): the writer is stuck, and the program
   must not be.  The same bound as a full ring's (thread.c). */
#define FULL_WAIT_NS 2000000000u

/* The history is full: waits for the writer to take entries, as a full ring does (the ways
   in call this where they may wait for the writer's room, event.c). */
static void wait_for_writer(churn_sample_counts *b, uint64_t head)
{
    static _Atomic uint32_t never;
    uint64_t deadline = churn_now_ns() + FULL_WAIT_NS;
    while (head - atomic_load_explicit(&b->read, memory_order_acquire) >= CHURN_SAMPLE_HISTORY &&
           churn_now_ns() < deadline) {
        churn_writer_poke();
        churn_futex_wait(&never, 0, 200000u);
    }
}

void churn_sample_alloc_uncommit(size_t size)
{
    churn_sample_thread *t = &churn_sample_self;
    churn_sample_counts *b = t->counts;
    t->left += size;
    churn_sample_add(b, CHURN_SAMPLE_ALLOCS, (uint64_t)-1);
    churn_sample_add(b, CHURN_SAMPLE_ALLOC_BYTES, -(uint64_t)size);
}

void churn_sample_new_epoch(uint64_t epoch)
{
    churn_sample_thread *t = &churn_sample_self;
    churn_sample_counts *b = t->counts ? t->counts : churn_sample_counts_slow();
    t->epoch = epoch;
    /* A trace of a copy attached again may sample at another N (every trace starts in an
       epoch of its own, so each thread passes here first).  At the same N the gap left is
       kept: what remains of an exponential gap is exponential with the same mean. */
    if (CHURN_UNLIKELY(t->mean != churn_opt.sample_bytes))
        t->left = draw_gap(t);
    if (b == &shared_block)
        return; /* counted without a history: the epoch the writer closes next takes it */
    uint64_t i = atomic_load_explicit(&b->hist_head, memory_order_relaxed);
    if (CHURN_UNLIKELY(i - atomic_load_explicit(&b->read, memory_order_acquire) >=
                       CHURN_SAMPLE_HISTORY) && churn_writer_running())
        wait_for_writer(b, i);
    __typeof__(b->hist[0]) *h = &b->hist[i % CHURN_SAMPLE_HISTORY];
    atomic_store_explicit(&h->epoch, epoch, memory_order_relaxed);
    for (int k = 0; k < CHURN_SAMPLE_COUNTERS; k++)
        atomic_store_explicit(&h->start[k],
                              atomic_load_explicit(&b->total[k], memory_order_relaxed),
                              memory_order_relaxed);
    atomic_store_explicit(&b->hist_head, i + 1, memory_order_release);
    /* Epochs come faster than the writer's passes (thousands a second): a quarter of the
       history filled asks for a pass, as a ring half full does (thread.c). */
    if (i + 1 - atomic_load_explicit(&b->read, memory_order_relaxed) == CHURN_SAMPLE_HISTORY / 4)
        churn_writer_poke();
}

/* What a block holds of epochs up to `epoch`: the totals where its first epoch after that
   one began, or all of them when it has not counted in a later one.  A thread whose
   history the writer fell more than CHURN_SAMPLE_HISTORY epochs behind on gives its counts
   to the oldest epoch it still has, as late events go to the open epoch (writer.c). */
static void block_upto(churn_sample_counts *b, uint64_t epoch, uint64_t *out)
{
    uint64_t head = atomic_load_explicit(&b->hist_head, memory_order_acquire);
    uint64_t read = atomic_load_explicit(&b->read, memory_order_relaxed);
    if (head - read > CHURN_SAMPLE_HISTORY)
        read = head - CHURN_SAMPLE_HISTORY;
    int found = 0;
    for (; read < head; read++) {
        __typeof__(b->hist[0]) *h = &b->hist[read % CHURN_SAMPLE_HISTORY];
        if (atomic_load_explicit(&h->epoch, memory_order_relaxed) <= epoch)
            continue; /* that epoch is closing or closed: its counts are taken below */
        for (int k = 0; k < CHURN_SAMPLE_COUNTERS; k++)
            out[k] = atomic_load_explicit(&h->start[k], memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        /* overwritten while read: the owner is far ahead, everything so far is old */
        found = atomic_load_explicit(&b->hist_head, memory_order_relaxed) - read <=
                CHURN_SAMPLE_HISTORY;
        break;
    }
    atomic_store_explicit(&b->read, read, memory_order_release);
    if (found)
        return;
    for (int k = 0; k < CHURN_SAMPLE_COUNTERS; k++)
        out[k] = atomic_load_explicit(&b->total[k], memory_order_relaxed);
}

static void credit(churn_sample_counts *b, uint64_t epoch, uint64_t *sum)
{
    uint64_t now[CHURN_SAMPLE_COUNTERS];
    block_upto(b, epoch, now);
    for (int i = 0; i < CHURN_SAMPLE_COUNTERS; i++) {
        /* running totals only grow; a racy read of the shared block may not */
        if (now[i] > b->credited[i]) {
            sum[i] += now[i] - b->credited[i];
            b->credited[i] = now[i];
        }
    }
}

void churn_sample_collect(uint64_t epoch, uint64_t *allocs, uint64_t *alloc_bytes,
                          uint64_t *frees)
{
    uint64_t sum[CHURN_SAMPLE_COUNTERS] = {0};
    for (churn_sample_counts *b = atomic_load(&all_blocks); b; b = b->next)
        credit(b, epoch, sum);
    credit(&shared_block, epoch, sum);
    *allocs = sum[CHURN_SAMPLE_ALLOCS];
    *alloc_bytes = sum[CHURN_SAMPLE_ALLOC_BYTES];
    *frees = sum[CHURN_SAMPLE_FREES];
}

/* ---- the set of sampled live addresses ----

   A table of addresses under a spinlock, with a filter in front of it that the free path
   reads without the lock: a bit per bucket of addresses, set while the bucket holds a
   sampled live address (how many it holds is counted under the lock).  A free whose bit is
   clear is of an unsampled object; the bit was set before the allocation returned the
   address, so whatever handed the object to the freeing thread made it visible there. */
#define TABLE_MIN 4096u

static churn_spinlock set_lock;
static uintptr_t *table;   /* 0: empty slot */
static size_t table_cap, table_count;
_Atomic uint64_t churn_sample_filter[CHURN_SAMPLE_FILTER / 64];
static uint32_t bucket_count[CHURN_SAMPLE_FILTER]; /* under set_lock */

static size_t home(uintptr_t p, size_t cap)
{
    return (size_t)(((uint64_t)p * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

static int table_grow(void)
{
    size_t cap = table_cap ? table_cap * 2 : TABLE_MIN;
    uintptr_t *t = churn_os_map(cap * sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < table_cap; i++)
        if (table[i]) {
            size_t j = home(table[i], cap);
            while (t[j])
                j = (j + 1) & (cap - 1);
            t[j] = table[i];
        }
    if (table)
        churn_os_unmap(table, table_cap * sizeof *table);
    table = t;
    table_cap = cap;
    return 0;
}

/* Under set_lock, which every writer of the filter holds: plain stores of its words. */
static void filter_add(uintptr_t p)
{
    unsigned b = churn_sample_bucket(p);
    if (bucket_count[b]++)
        return;
    _Atomic uint64_t *word = &churn_sample_filter[b / 64];
    atomic_store_explicit(word, atomic_load_explicit(word, memory_order_relaxed) | 1ull << (b % 64),
                          memory_order_relaxed);
}

static void filter_remove(uintptr_t p)
{
    unsigned b = churn_sample_bucket(p);
    if (--bucket_count[b])
        return;
    _Atomic uint64_t *word = &churn_sample_filter[b / 64];
    atomic_store_explicit(word,
                          atomic_load_explicit(word, memory_order_relaxed) & ~(1ull << (b % 64)),
                          memory_order_relaxed);
}

int churn_sample_insert(uintptr_t p)
{
    int ok = 0;
    churn_spin_lock(&set_lock);
    if ((table_count + 1) * 2 <= table_cap || !table_grow()) {
        size_t i = home(p, table_cap);
        while (table[i] && table[i] != p)
            i = (i + 1) & (table_cap - 1);
        if (!table[i]) {
            table[i] = p;
            table_count++;
            filter_add(p);
        }
        ok = 1;
    }
    churn_spin_unlock(&set_lock);
    return ok;
}

int churn_sample_take_slow(uintptr_t p)
{
    int found = 0;
    churn_spin_lock(&set_lock);
    if (table_count) {
        size_t mask = table_cap - 1, i = home(p, table_cap);
        while (table[i] && table[i] != p)
            i = (i + 1) & mask;
        if (table[i]) {
            found = 1;
            table_count--;
            filter_remove(p);
            /* backward-shift deletion: no tombstones, lookups stop at the first empty slot */
            for (size_t j = i;;) {
                j = (j + 1) & mask;
                if (!table[j])
                    break;
                size_t h = home(table[j], table_cap);
                if (((j - h) & mask) >= ((j - i) & mask)) {
                    table[i] = table[j];
                    i = j;
                }
            }
            table[i] = 0;
        }
    }
    churn_spin_unlock(&set_lock);
    return found;
}

int churn_sample_alloc_slow(uintptr_t p, uint64_t size)
{
    (void)size; /* sampled once whatever its size: p(s) is the chance of one point or more */
    churn_sample_thread *t = &churn_sample_self;
    t->left = draw_gap(t);
    /* An address the set cannot hold (libchurn's memory ran out) is not sampled: its free
       could not be told from an unsampled one. */
    return churn_sample_insert(p);
}

void churn_sample_lock(void)
{
    churn_spin_lock(&set_lock);
    churn_spin_lock(&blocks_lock);
}

void churn_sample_unlock(void)
{
    churn_spin_unlock(&blocks_lock);
    churn_spin_unlock(&set_lock);
}

/* The child's trace starts at the fork: the counts so far are the parent's, and the blocks
   of the threads that did not come along are free. */
void churn_sample_after_fork_child(void)
{
    churn_sample_counts *mine = churn_sample_self.counts;
    for (churn_sample_counts *b = atomic_load(&all_blocks); b; b = b->next) {
        for (int i = 0; i < CHURN_SAMPLE_COUNTERS; i++)
            b->credited[i] = atomic_load_explicit(&b->total[i], memory_order_relaxed);
        b->read = atomic_load(&b->hist_head);
        if (b != mine)
            atomic_store(&b->in_use, 0);
    }
    for (int i = 0; i < CHURN_SAMPLE_COUNTERS; i++)
        shared_block.credited[i] = atomic_load(&shared_block.total[i]);
    shared_block.read = atomic_load(&shared_block.hist_head);
}

/* The next trace of a copy attached again (attach.c, reset): its set of sampled addresses
   knows nothing of the last trace's (a free of an object sampled then is not a sampled
   object's free now), and the counts so far are the last trace's, as a fork child's are its
   parent's.  The program's calls no longer reach the hooks; one that entered them before the
   detach takes the locks as always. */
void churn_sample_reset(void)
{
    churn_spin_lock(&set_lock);
    if (table)
        churn_os_unmap(table, table_cap * sizeof *table);
    table = NULL;
    table_cap = table_count = 0;
    memset(bucket_count, 0, sizeof bucket_count);
    for (size_t i = 0; i < CHURN_SAMPLE_FILTER / 64; i++)
        atomic_store_explicit(&churn_sample_filter[i], 0, memory_order_relaxed);
    churn_spin_unlock(&set_lock);
    /* credited and read are the writer's, which is not running */
    for (churn_sample_counts *b = atomic_load(&all_blocks); b; b = b->next) {
        for (int i = 0; i < CHURN_SAMPLE_COUNTERS; i++)
            b->credited[i] = atomic_load_explicit(&b->total[i], memory_order_relaxed);
        atomic_store(&b->read, atomic_load(&b->hist_head));
    }
    for (int i = 0; i < CHURN_SAMPLE_COUNTERS; i++)
        shared_block.credited[i] = atomic_load(&shared_block.total[i]);
    atomic_store(&shared_block.read, atomic_load(&shared_block.hist_head));
}

/* ---- what a sampled object stands for ---- */

/* e^-x for x >= 0: x = k ln 2 + r with |r| <= ln 2 / 2, e^-r from 14 terms of its series (a
   relative error far below 1e-12), times 2^-k built in the exponent bits.  libm is not a
   dependency of the shim. */
static double exp_neg(double x)
{
    if (x > 700.0)
        return 0.0;
    int k = (int)(x / 0.69314718055994530942 + 0.5);
    double r = x - (double)k * 0.69314718055994530942, term = 1.0, sum = 1.0;
    for (int n = 1; n <= 14; n++) {
        term *= -r / n;
        sum += term;
    }
    uint64_t bits = (uint64_t)(1023 - k) << 52;
    double scale;
    memcpy(&scale, &bits, sizeof scale);
    return sum * scale;
}

/* An allocation of size bytes was sampled with probability p = 1 - e^(-size/N): it stands for
   1/p objects (the analyzer's weight, docs/analyzer.md), and *variance gets what its size
   adds to the variance of a sum of sampled sizes weighted so, size^2 (1 - p) / p^2. */
double churn_sample_weight(uint64_t size, double *variance)
{
    double q = exp_neg((double)size / (double)churn_opt.sample_bytes), p = 1.0 - q;
    if (!size || p <= 0.0) {
        *variance = 0.0;
        return 1.0;
    }
    *variance = (double)size * (double)size * q / (p * p);
    return 1.0 / p;
}
