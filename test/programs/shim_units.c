/*
 * The shim's data structures driven hard outside any traced program, for a build with
 * AddressSanitizer and UndefinedBehaviorSanitizer (Makefile: build/sanitize/shim-units): an
 * ASan-built libchurn.so cannot be preloaded under ASan's own malloc, so the structures are
 * linked in directly instead.  libchurn's page source (churn_os_map) is replaced here by
 * calloc, so every table the shim maps gets ASan's red zones, and it can be told to fail, as
 * when the traced program has exhausted its address space.  Checked against plain reference
 * models: the live map (two threads, 2 M operations), the stack table (100 k stacks, then
 * 200 k more while the table cannot grow), the segment tables, the address coder (encode and
 * decode in lockstep), varints, and a thread ring carrying 3 M events to a consumer.
 * Exit 0 when every check held; one line on stderr and exit 1 otherwise.
 */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/futex.h>

#include "churn/coding.h"
#include "record/segstate.h"
#include "shim.h"

/* ---- what the structures need from the rest of the shim ---- */

churn_options churn_opt;
_Atomic int churn_state = CHURN_ON;
__thread int churn_in_shim;
_Atomic uint64_t churn_epoch_now; /* the live map reads the epoch under its lock */
void churn_writer_poke(void) {} /* no writer thread here: the tests drain the rings themselves */
static _Atomic size_t map_limit = SIZE_MAX; /* larger maps fail, as under `ulimit -v` */

void *churn_os_map(size_t bytes)
{
    return bytes > atomic_load(&map_limit) ? NULL : calloc(1, bytes);
}
void churn_os_unmap(void *p, size_t bytes)
{
    (void)bytes;
    free(p);
}
uint64_t churn_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
pid_t churn_gettid(void) { return (pid_t)syscall(SYS_gettid); }
/* every thread's stack from pthread_getattr_np, the main thread's too */
int churn_os_main_stack(uintptr_t *lo, uintptr_t *hi)
{
    (void)lo;
    (void)hi;
    return -1;
}
void churn_futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
    struct timespec ts = {(time_t)(timeout_ns / 1000000000u), (long)(timeout_ns % 1000000000u)};
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, &ts, NULL, 0);
}
int churn_writer_running(void) { return 1; }
size_t churn_modules_count(void) { return 1; } /* stacks note the module generation */
int churn_writer_is_self(void) { return 0; }
void churn_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("FAIL: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* ---- live map: each thread owns a set of addresses and a model of which are live ---- */

#define LIVE_SLOTS (1u << 16)
#define LIVE_OPS 1000000u

typedef struct {
    uintptr_t base;
    uint64_t seed;
    uint8_t live[LIVE_SLOTS];
    uint64_t size[LIVE_SLOTS];
    uint32_t number[LIVE_SLOTS];
} live_model;

/* The slack the model gives a size: small (packed with it), past the packed field, or
   unknown. */
static uint64_t slack_of(uint64_t size)
{
    switch (size % 5) {
    case 0: return CHURN_SLACK_UNKNOWN;
    case 1: return 0x8000u + size % 1000;
    case 2: return (uint64_t)1 << 40;
    default: return size % 0x8000u;
    }
}

/* The writer hands the live map the shard its merge hashed; the tests hash it here. */
static churn_live *live_put(uintptr_t addr, uint64_t size, uint64_t slack, uint32_t stack,
                            uint32_t epoch)
{
    return churn_livemap_insert(churn_livemap_shard(addr), addr, size, slack, stack, epoch);
}

static int live_take(uintptr_t addr, churn_live *v)
{
    return churn_livemap_remove(churn_livemap_shard(addr), addr, v);
}

static void *drive_livemap(void *arg)
{
    live_model *m = arg;
    for (unsigned op = 0; op < LIVE_OPS; op++) {
        unsigned i = (unsigned)(rng(&m->seed) % LIVE_SLOTS);
        uintptr_t addr = m->base + (uintptr_t)i * 48;
        churn_live v;
        if (m->live[i]) {
            if (!live_take(addr, &v))
                fail("live map lost 0x%lx", (unsigned long)addr);
            if (v.size != m->size[i] || v.stack != i || v.epoch != (uint32_t)(m->size[i] ^ i) ||
                v.seg != i + 1 || v.number != m->number[i])
                fail("live map returned another object for 0x%lx", (unsigned long)addr);
            /* The slack comes back exact or unknown (the free then asks the allocator), and
               exact whenever it and the size are small. */
            uint64_t slack = slack_of(m->size[i]);
            if (v.slack != slack &&
                (v.slack != CHURN_SLACK_UNKNOWN || (m->size[i] < (1ull << 32) && slack < 4096)))
                fail("live map changed the slack of 0x%lx", (unsigned long)addr);
            m->live[i] = 0;
        } else {
            if (live_take(addr, &v))
                fail("live map holds 0x%lx, which is not live", (unsigned long)addr);
            m->size[i] = rng(&m->seed) % 100000;
            if (op % 97 == 0)
                m->size[i] += (uint64_t)op << 40; /* past the packed size's 48 bits at times */
            churn_live *note =
                live_put(addr, m->size[i], slack_of(m->size[i]), i, (uint32_t)(m->size[i] ^ i));
            if (note->seg || note->number)
                fail("live map: a new entry of 0x%lx came with a note", (unsigned long)addr);
            note->seg = i + 1; /* the encoder's note goes with the entry, into the table too */
            note->number = (uint32_t)op;
            m->number[i] = (uint32_t)op;
            m->live[i] = 1;
        }
    }
    return NULL;
}

static void count_live(uintptr_t addr, const churn_live *v, void *ctx)
{
    (void)addr;
    (void)v;
    ++*(size_t *)ctx;
}

static void test_livemap(void)
{
    /* The map is the writer's alone: the two models run one after the other, on addresses
       that share 64 KiB regions, so they meet on shards. */
    static live_model models[2];
    for (int k = 0; k < 2; k++) {
        models[k].base = 0x7f0000000000u + (uintptr_t)k * 16;
        models[k].seed = 0x9e3779b97f4a7c15u + (uint64_t)k;
        drive_livemap(&models[k]);
    }
    size_t want = 0, got = 0;
    for (int k = 0; k < 2; k++)
        for (unsigned i = 0; i < LIVE_SLOTS; i++)
            want += models[k].live[i];
    churn_livemap_each(count_live, &got);
    if (got != want)
        fail("live map holds %zu objects, the model %zu", got, want);

    /* An address inserted again without a remove between (a free the shim did not see).  The
       newest entry is given first.  Where the older one had been moved to the table by the
       crowd inserted after it (in its 64 KiB region, so in its shard: 2000 addresses leave
       none of the 128 nursery slots untouched but once in 10^7), the next remove is given
       the older one, and then nothing; once the newer one is moved to the table too, it
       replaces the older: one remove, then nothing. */
    for (unsigned round = 0; round < 3; round++) {
        unsigned crowd = round ? 2000 : 0, crowds = round == 2 ? 2 : 1;
        uintptr_t addr = 0x6f0000000000u + (uintptr_t)round * 0x10000;
        churn_live out;
        live_put(addr, 100, 0, 1, 1);
        for (unsigned i = 0; i < crowd; i++)
            live_put(addr + 16 + (uintptr_t)i * 16, 100, 0, 1, 1);
        live_put(addr, 200, 8, 2, 2);
        for (unsigned i = 0; crowds == 2 && i < crowd; i++)
            live_put(addr + 0x8000 + (uintptr_t)i * 16, 100, 0, 1, 1);
        if (!live_take(addr, &out) || out.size != 200 || out.stack != 2)
            fail("live map: a re-inserted address (round %u) did not give its newest entry", round);
        if (round == 1 && (!live_take(addr, &out) || out.size != 100 || out.stack != 1))
            fail("live map: the older entry of a re-inserted address was lost");
        if (live_take(addr, &out))
            fail("live map: a re-inserted address (round %u) was found once too often", round);
        for (unsigned c = 0; c < crowds; c++)
            for (unsigned i = 0; i < crowd; i++)
                if (!live_take(addr + (c ? 0x8000 : 16) + (uintptr_t)i * 16, &out) ||
                    out.size != 100)
                    fail("live map lost crowd entry %u", i);
    }
}

/* ---- the order of events: each shard numbers its operations ---- */

/* Four threads take numbers for an insert and a remove of addresses of one 64 KiB region (one
   shard), with epochs that a fifth thread advances meanwhile: every number from the shard's
   first to its last is taken once, each address's insert has a lower number than its remove,
   and the epochs never go backwards along the numbers. */
#define ORDER_THREADS 4
#define ORDER_OPS 20000
#define ORDER_BASE ((uintptr_t)0x6e0000000000u)

typedef struct {
    unsigned id;
    uint32_t insert_seq[ORDER_OPS], remove_seq[ORDER_OPS];
    uint32_t insert_epoch[ORDER_OPS], remove_epoch[ORDER_OPS];
} order_worker;

static _Atomic uint32_t order_epoch;
static _Atomic int order_done;

static void *order_work(void *arg)
{
    order_worker *w = arg;
    for (unsigned i = 0; i < ORDER_OPS; i++) {
        uintptr_t addr = ORDER_BASE + ((uintptr_t)(w->id * ORDER_OPS + i) % 4000) * 16;
        uint32_t e = atomic_load(&order_epoch);
        if (i % 16 == 0)
            sched_yield(); /* preempted between reading the epoch and taking the number */
        w->insert_seq[i] = churn_order_take(addr, &e);
        w->insert_epoch[i] = e;
        e = atomic_load(&order_epoch);
        w->remove_seq[i] = churn_order_take(addr, &e);
        w->remove_epoch[i] = e;
    }
    return NULL;
}

static void *order_ticker(void *arg)
{
    (void)arg;
    while (!atomic_load(&order_done))
        atomic_fetch_add(&order_epoch, 1);
    return NULL;
}

static void test_order(void)
{
    static order_worker w[ORDER_THREADS];
    static uint32_t epoch_of[2u * ORDER_THREADS * ORDER_OPS];
    unsigned shard = churn_livemap_shard(ORDER_BASE);
    for (unsigned k = 1; k < 4000; k++)
        if (churn_livemap_shard(ORDER_BASE + k * 16) != shard)
            fail("one 64 KiB region spans several shards");
    uint32_t next[CHURN_LIVEMAP_SHARDS];
    churn_order_next(next);
    uint32_t first = next[shard];
    pthread_t t[ORDER_THREADS], ticker;
    if (pthread_create(&ticker, NULL, order_ticker, NULL))
        fail("pthread_create failed");
    for (unsigned i = 0; i < ORDER_THREADS; i++) {
        w[i].id = i;
        if (pthread_create(&t[i], NULL, order_work, &w[i]))
            fail("pthread_create failed");
    }
    for (unsigned i = 0; i < ORDER_THREADS; i++)
        pthread_join(t[i], NULL);
    atomic_store(&order_done, 1);
    pthread_join(ticker, NULL);
    const uint32_t total = 2u * ORDER_THREADS * ORDER_OPS;
    static uint8_t seen[2u * ORDER_THREADS * ORDER_OPS];
    for (unsigned i = 0; i < ORDER_THREADS; i++)
        for (unsigned k = 0; k < ORDER_OPS; k++) {
            uint32_t a = w[i].insert_seq[k] - first, b = w[i].remove_seq[k] - first;
            if (a >= total || b >= total || seen[a]++ || seen[b]++)
                fail("shard number taken twice or out of range");
            if (a >= b)
                fail("an insert numbered after the remove that followed it");
            epoch_of[a] = w[i].insert_epoch[k];
            epoch_of[b] = w[i].remove_epoch[k];
        }
    for (uint32_t n = 1; n < total; n++)
        if ((int32_t)(epoch_of[n] - epoch_of[n - 1]) < 0)
            fail("epoch %u at number %u after epoch %u", epoch_of[n], n, epoch_of[n - 1]);
    if (epoch_of[total - 1] == epoch_of[0])
        fail("the epoch never moved during the test");
    churn_order_next(next);
    if (next[shard] - first != total)
        fail("the shard took %u numbers for %u operations", next[shard] - first, total);
}

/* ---- stack table ---- */

#define STACKS 100000u
#define STARVED_STACKS 200000u
/* Room for the stack arena's 4 MiB chunks and the 64 KiB id chunks, none for the 8 MiB the
   table needs to grow past 262,144 slots: 300,000 stacks would fill it. */
#define STARVED_LIMIT (6u << 20)

static unsigned make_stack(uint32_t n, uintptr_t *ips)
{
    uint64_t s = 0x1234567u + n * 0x9e3779b97f4a7c15u;
    unsigned depth = 1 + (unsigned)(rng(&s) % 64);
    for (unsigned i = 0; i < depth; i++)
        ips[i] = 0x400000u + (rng(&s) & 0xffffff);
    ips[0] = n; /* distinct */
    return depth;
}

static void test_stacks(void)
{
    static uint32_t ids[STACKS];
    uintptr_t ips[64];
    churn_stacks_init();
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t n = 0; n < STACKS; n++) {
            unsigned depth = make_stack(n, ips);
            uint32_t id = churn_stack_intern(ips, depth, churn_stack_hash(ips, depth));
            if (!id || (pass && id != ids[n]))
                fail("stack %u got id %u (first time %u)", n, id, ids[n]);
            ids[n] = id;
            unsigned got_depth;
            const uintptr_t *got = churn_stack_get(id, &got_depth);
            if (!got || got_depth != depth || memcmp(got, ips, depth * sizeof *ips))
                fail("stack %u reads back wrong", n);
        }
    /* Memory short: new stacks get no id (0) or a valid one, old ones are still found, and
       nothing spins on a table that cannot grow. */
    atomic_store(&map_limit, STARVED_LIMIT);
    uint32_t named = 0;
    for (uint32_t n = STACKS; n < STACKS + STARVED_STACKS; n++) {
        unsigned depth = make_stack(n, ips);
        uint32_t id = churn_stack_intern(ips, depth, churn_stack_hash(ips, depth));
        named += id != 0;
        unsigned got_depth;
        if (id && (!churn_stack_get(id, &got_depth) || got_depth != depth))
            fail("a stack interned without memory reads back wrong");
    }
    atomic_store(&map_limit, SIZE_MAX);
    for (uint32_t n = 0; n < STACKS; n++) {
        unsigned depth = make_stack(n, ips);
        if (churn_stack_intern(ips, depth, churn_stack_hash(ips, depth)) != ids[n])
            fail("stack %u lost after memory ran out", n);
    }
    printf("stacks: %u interned, %u of %u more while the table could not grow\n", STACKS, named,
           STARVED_STACKS);
}

/* ---- segment tables ---- */

#define SEG_OBJECTS 200000u

static void test_segstate(void)
{
    /* A small segment between two large ones: the table shrinks at the reset after it and
       grows again.  An info's index is its order of first use in the segment, and each
       segment has a generation of its own, which the live map's notes name. */
    static const uint32_t objects[] = {SEG_OBJECTS, 1000, SEG_OBJECTS, 10};
    uint32_t gen = 0;
    for (unsigned round = 0; round < sizeof objects / sizeof *objects; round++) {
        uint32_t n = objects[round];
        churn_seg_reset();
        if (!churn_seg_current() || churn_seg_current() == gen)
            fail("segment %u: generation %u after %u", round, churn_seg_current(), gen);
        gen = churn_seg_current();
        for (uint32_t i = 0; i < n; i++) {
            int is_new;
            long info = churn_seg_info_index(i % 5000, i % 5000 % 7, i % 5000 + 1, &is_new);
            if (info < 0)
                fail("segment info table refused an entry");
            if (is_new != (i < 5000))
                fail("info %u: is_new %d", i, is_new);
            if ((uint32_t)info != i % 5000)
                fail("info %u: index %ld", i, info);
        }
    }
}

/* ---- address coder and varints: the writer's encoder and a decoder in lockstep ---- */

#define CODER_OPS 2000000u
#define CODER_LIVE 4096u

static void test_coding(void)
{
    static churn_coder enc, dec;
    static uint64_t live[CODER_LIVE], usable_of[CODER_LIVE];
    churn_coder_reset(&enc);
    churn_coder_reset(&dec);
    uint64_t s = 42, next_fresh = 0x100000;
    for (unsigned op = 0; op < CODER_OPS; op++) {
        unsigned k = (unsigned)(rng(&s) % CODER_LIVE);
        if (live[k]) {
            churn_coder_freed(&enc, live[k], usable_of[k]);
            churn_coder_freed(&dec, live[k], usable_of[k]);
            live[k] = 0;
            continue;
        }
        uint64_t usable = 16 * (1 + rng(&s) % 64);
        /* Mostly what an allocator does: reuse a recent free of this size, else carve. */
        uint64_t *l = churn_coder_lifo(&enc, usable), addr = 0;
        if (rng(&s) % 4 && l[0]) {
            addr = l[0];
            for (unsigned j = 0; j < CODER_LIVE; j++)
                if (live[j] == addr)
                    addr = 0;
        }
        if (!addr) {
            addr = next_fresh;
            next_fresh += usable + 8 * (rng(&s) % 3);
        }
        uint64_t code = churn_encode_alloc_addr(&enc, addr, usable);
        uint8_t buf[CHURN_VARINT_MAX];
        size_t n = churn_put_varint(buf, code);
        const uint8_t *p = buf;
        uint64_t read, got;
        if (!churn_get_varint(&p, buf + n, &read) || read != code || p != buf + n)
            fail("varint %llu does not round-trip", (unsigned long long)code);
        if (!churn_decode_alloc_addr(&dec, churn_coder_lifo(&dec, usable), read, &got) ||
            got != addr)
            fail("op %u: address 0x%llx coded %llu decodes to 0x%llx", op,
                 (unsigned long long)addr, (unsigned long long)code, (unsigned long long)got);
        churn_coder_allocated(&enc, addr, usable, code);
        churn_coder_allocated(&dec, got, usable, read);
        live[k] = addr;
        usable_of[k] = usable;
    }
}

/* ---- a thread ring: a producer that waits for room, a consumer that drains in order ---- */

#define RING_EVENTS 3000000u
static _Atomic int producer_done;

/* Event i of the stream: mostly heap events that fit one slot, with every kind of wide value
   among them (slack or age past the narrow fields, usable below size, sizes past 4 GiB or
   2^48, an address past 2^48, map events with a full address in aux), and the shard number
   of every heap event, which shares the top bits of the address and size when narrow. */
static void ring_event(uint64_t i, churn_event *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->type = (uint8_t)(CHURN_EV_ALLOC + i % 3);
    ev->kind = (uint8_t)(i % 16);
    ev->addr = i;
    ev->size = i * 3 + (i % 11 == 0 ? (uint64_t)5 << 32 : 0);
    ev->usable = ev->size + i % 24;
    ev->stack = (uint32_t)(i * 7);
    ev->epoch = (uint32_t)(i / 5);
    ev->aux = ev->type == CHURN_EV_FREE ? i % 1000 : 0;
    ev->seq = (uint32_t)(i * 2654435761u);
    switch (i % 13) {
    case 1: ev->usable = ev->size + ((uint64_t)1 << 32); break;
    case 2: ev->usable = ev->size ? ev->size - 1 : 0; break;
    case 3: if (ev->type == CHURN_EV_FREE) ev->aux = CHURN_SLOT_AGE_MAX + i; break;
    case 4:
        ev->type = CHURN_EV_MAP;
        ev->usable = i << 8 | 3;
        ev->aux = 0x7f0000000000u + i * 4096;
        ev->seq = 0;
        break;
    case 5: ev->addr |= (uint64_t)1 << 50; break;
    case 6: ev->size = (uint64_t)1 << 48 | i; ev->usable = ev->size; break;
    }
}

static void *produce(void *arg)
{
    (void)arg;
    churn_in_shim = 1;
    churn_thread *t = churn_thread_self();
    churn_in_shim = 0;
    if (!t)
        fail("no ring for the producer");
    for (uint64_t i = 0; i < RING_EVENTS; i++) {
        churn_event ev;
        ring_event(i, &ev);
        churn_thread_push(t, ev, 1);
    }
    atomic_store(&producer_done, 1);
    return NULL;
}

typedef struct {
    uint64_t seen;
} consumer_t;

static void drain(churn_thread *t, void *ctx)
{
    consumer_t *c = ctx;
    uint64_t tail = atomic_load(&t->tail), head = atomic_load_explicit(&t->head, memory_order_acquire);
    while (tail < head) {
        churn_event ev, want;
        uint64_t at = tail;
        tail += churn_ring_read(t, at, &ev);
        ring_event(c->seen, &want);
        if (ev.addr != want.addr || ev.size != want.size || ev.usable != want.usable ||
            ev.aux != want.aux || ev.stack != want.stack || ev.epoch != want.epoch ||
            ev.type != want.type || ev.kind != want.kind || ev.seq != want.seq)
            fail("ring delivered event %llu (type %u) where %llu was due, or changed it",
                 (unsigned long long)ev.addr, ev.type, (unsigned long long)c->seen);
        c->seen++;
        if ((at ^ tail) & ~(uint64_t)1023) {
            atomic_store_explicit(&t->tail, tail, memory_order_release);
            churn_threads_room_made();
        }
    }
    atomic_store_explicit(&t->tail, tail, memory_order_release);
}

static void test_ring(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, produce, NULL))
        fail("pthread_create");
    consumer_t c = {0};
    for (;;) {
        int done = atomic_load(&producer_done);
        churn_threads_each(drain, &c);
        churn_threads_room_made();
        if (done)
            break;
        usleep(100);
    }
    churn_threads_each(drain, &c);
    pthread_join(t, NULL);
    if (c.seen + atomic_load(&churn_dropped_events) != RING_EVENTS || atomic_load(&churn_dropped_events))
        fail("ring: %llu events delivered, %llu dropped, of %u", (unsigned long long)c.seen,
             (unsigned long long)atomic_load(&churn_dropped_events), RING_EVENTS);
}

int main(void)
{
    churn_opt.stack_depth = 64;
    test_livemap();
    test_order();
    test_stacks();
    test_segstate();
    test_coding();
    test_ring();
    printf("shim units: live map, stacks, segment tables, coder, ring all held\n");
    return 0;
}
