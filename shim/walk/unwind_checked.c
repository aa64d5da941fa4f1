/*
 * libunwind for the stacks the CFI walker gives up on (expression rules, signal frames, code
 * whose CFI it does not reduce), over an address space of its own whose every memory read is
 * checked first.  libunwind's local unwinder trusts the CFI: a rule that dereferences a
 * register holding garbage (hand-written assembly's CFI escapes) makes it read wherever that
 * points, and the traced program dies.  Here a read is made only inside
 *   - the stack the walk runs on, from its stack pointer up to its top,
 *   - for a handler on the sigaltstack, the stacks its signal frame may lead to (the
 *     thread's own, a coroutine's it ran on), page by page where the kernel has them mapped,
 *   - the readable segments of the loaded objects (the CFI itself, code bytes);
 * any other read fails the step, and the walk ends at that frame.
 *
 * The walk runs on libunwind's remote interface (libunwind-x86_64), with the caller's
 * registers from unw_getcontext; finding and parsing the CFI is libunwind's local code, whose
 * answers are kept here by return address (find_proc_info), so that a walk takes no lock
 * and masks no signal for a frame it has seen: it is the default's walk on every stack the
 * CFI walker gives up on.
 */
#include <libunwind.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "shim.h"

#define SEGMENTS 8
#define STACK_PAGES 8
#define OUTSIDE_PAGES 8

typedef struct {
    uintptr_t lo, hi;
} segment;

typedef struct proc_info_cache proc_info_cache;

typedef struct {
    unw_context_t context;
    unw_cursor_t cursor;
    segment stacks[CHURN_UNWIND_STACKS]; /* [0]: the walk's own, from its stack pointer */
    unsigned nstacks;
    segment modules[SEGMENTS]; /* readable segments of loaded objects found so far */
    unsigned nmodules, next_module;
    uintptr_t mapped[STACK_PAGES]; /* pages of the other stacks found mapped */
    unsigned nmapped;
    /* Pages found outside every loaded object, this walk: libunwind's guesses through code
       without CFI read at JIT code and at wild frame pointers, often the same pages again, and
       each such question is a walk of the loader's list under its lock (deno: 317,000 a run,
       75,000 with these kept).  Kept for one walk only, as a dlopen may map an object there. */
    uintptr_t outside[OUTSIDE_PAGES];
    unsigned noutside, next_outside;
    uint32_t generation;
    proc_info_cache *infos; /* the thread's, mapped at its first walk; kept with the ring */
} walk_state;
_Static_assert(sizeof(walk_state) <= sizeof(churn_unwind_checked_state),
               "churn_unwind_checked_state");
_Static_assert(_Alignof(walk_state) <= _Alignof(churn_unwind_checked_state), "alignment");

static unw_addr_space_t space;
static _Atomic uint32_t generation;

static int (*search_proc_info)(unw_addr_space_t, unw_word_t, unw_proc_info_t *, int, void *);

/* libunwind's search for an address's unwind information is what costs.  In an object
   without an .eh_frame_hdr (deno's executable, 95 MB, has no unwind tables at all) it maps
   the whole file again to look for an .eh_frame, every time, and keeps no answer.  Where it
   finds one, it searches under the loader's lock with every signal masked, and allocates the
   CIE's reading from its pool under another lock, masking them again: each of those is two
   system calls.  Its own cache of register states would save the search, but it takes a lock
   and masks signals at every step (libunwind 1.6 has no lock-free per-thread cache), so the
   address space keeps none (UNW_CACHE_NONE) and the answers are kept here instead: the
   addresses with none in a table shared by every thread, the others in the thread's own. */

/* Return addresses libunwind found no unwind information for, by address (0: none).  Static
   zero pages. */
#define NOINFO_LOG 12
static _Atomic uintptr_t noinfo[1u << NOINFO_LOG];

static _Atomic uintptr_t *noinfo_slot(uintptr_t ip)
{
    return &noinfo[(ip * 0x9e3779b97f4a7c15ull) >> (64 - NOINFO_LOG)];
}

/* What libunwind's search gives for an address: its proc info, and the reading of the CIE it
   points to (libunwind's dwarf_cie_info_t, 72 bytes, unchanged since libunwind 1.3), copied.
   Handed back with the format UNW_INFO_FORMAT_REMOTE_TABLE, which libunwind parses as it
   does its own TABLE but never frees into its pool: the copy stays the thread's, and is
   overwritten only by the thread's next search, after libunwind has let go of the last. */
#define CIE_INFO_BYTES 72
#define INFOS_LOG 9
typedef struct {
    uintptr_t ip; /* 0: none */
    uint32_t generation;
    unw_proc_info_t pi;
    _Alignas(8) unsigned char cie[CIE_INFO_BYTES];
} proc_info;
struct proc_info_cache {
    proc_info e[1u << INFOS_LOG];
};

static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
                          int need_unwind_info, void *arg)
{
    walk_state *w = arg;
    _Atomic uintptr_t *slot = noinfo_slot(ip);
    /* 0 marks an empty entry in both tables; no code is there */
    if (!ip || atomic_load_explicit(slot, memory_order_relaxed) == ip)
        return -UNW_ENOINFO;
    size_t i = (size_t)((ip * 0x9e3779b97f4a7c15ull) >> (64 - INFOS_LOG));
    proc_info *e = w->infos ? &w->infos->e[i] : NULL;
    if (e && need_unwind_info && e->ip == ip && e->generation == w->generation) {
        *pi = e->pi;
        return 0;
    }
    uint32_t gen = atomic_load(&generation);
    int rc = search_proc_info(as, ip, pi, need_unwind_info, arg);
    if (rc == -UNW_ENOINFO) {
        /* an answer found before a dlclose emptied the table is not kept */
        atomic_store(slot, ip);
        uintptr_t stale = ip;
        if (atomic_load(&generation) != gen)
            atomic_compare_exchange_strong(slot, &stale, 0);
    } else if (!rc && e && need_unwind_info && pi->format == UNW_INFO_FORMAT_TABLE &&
               pi->unwind_info && gen == w->generation) {
        e->ip = ip;
        e->generation = gen;
        e->pi = *pi;
        e->pi.format = UNW_INFO_FORMAT_REMOTE_TABLE;
        e->pi.unwind_info = e->cie;
        memcpy(e->cie, pi->unwind_info, CIE_INFO_BYTES);
    }
    return rc;
}

typedef struct {
    uintptr_t addr;
    segment found;
} segment_query;

static int find_segment(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    segment_query *q = arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R) && q->addr - lo < ph->p_memsz) {
            q->found = (segment){lo, lo + ph->p_memsz};
            return 1;
        }
    }
    return 0;
}

/* Whether the word at addr lies inside r. */
static int inside(const segment *r, uintptr_t addr)
{
    return r->hi - r->lo >= 8 && addr - r->lo <= r->hi - r->lo - 8;
}

static int in_module(walk_state *w, uintptr_t addr)
{
    for (unsigned i = 0; i < w->nmodules; i++)
        if (inside(&w->modules[i], addr))
            return 1;
    uintptr_t page = addr & ~(uintptr_t)4095;
    for (unsigned i = 0; i < w->noutside; i++)
        if (w->outside[i] == page)
            return 0;
    segment_query q = {addr, {0, 0}};
    if (!dl_iterate_phdr(find_segment, &q) || !inside(&q.found, addr)) {
        w->outside[w->next_outside] = page;
        w->next_outside = (w->next_outside + 1) % OUTSIDE_PAGES;
        if (w->noutside < OUTSIDE_PAGES)
            w->noutside++;
        return 0;
    }
    w->modules[w->next_module] = q.found;
    w->next_module = (w->next_module + 1) % SEGMENTS;
    if (w->nmodules < SEGMENTS)
        w->nmodules++;
    return 1;
}

/* A page of another stack: mapped is readable there (a thread's stack range has no guard
   page; the main thread's reaches below what the kernel has mapped yet). */
static int stack_page_mapped(walk_state *w, uintptr_t addr)
{
    uintptr_t page = addr & ~(uintptr_t)4095;
    for (unsigned i = 0; i < w->nmapped; i++)
        if (w->mapped[i] == page)
            return 1;
    unsigned char in_core;
    if (mincore((void *)page, 4096, &in_core))
        return 0;
    if (w->nmapped < STACK_PAGES)
        w->mapped[w->nmapped++] = page;
    return 1;
}

static int readable(walk_state *w, uintptr_t addr)
{
    if (addr & 7)
        return 0;
    if (inside(&w->stacks[0], addr))
        return 1;
    for (unsigned i = 1; i < w->nstacks; i++)
        if (inside(&w->stacks[i], addr))
            return stack_page_mapped(w, addr);
    return in_module(w, addr);
}

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write,
                      void *arg)
{
    (void)as;
    if (write || !readable(arg, addr))
        return -UNW_EINVAL;
    *val = *(const unw_word_t *)addr;
    return 0;
}

/* libunwind's x86-64 register numbers, in ucontext's order */
static const int gregs[17] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
                              REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
                              REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};

static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write,
                      void *arg)
{
    (void)as;
    const walk_state *w = arg;
    if (write || reg < 0 || reg > 16)
        return -UNW_EBADREG;
    *val = (unw_word_t)w->context.uc_mcontext.gregs[gregs[reg]];
    return 0;
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write,
                        void *arg)
{
    (void)as, (void)reg, (void)val, (void)write, (void)arg;
    return -UNW_EBADREG;
}

static int resume(unw_addr_space_t as, unw_cursor_t *cursor, void *arg)
{
    (void)as, (void)cursor, (void)arg;
    return -UNW_EINVAL;
}

void churn_unwind_checked_init(void)
{
    if (space)
        return;
    /* libunwind's generic library is another object than its local one: its pipe is one of
       our descriptors too (fds.c), the files it opens and closes stay its own */
    churn_fd_guard_unwinder((const void *)unw_create_addr_space);
    unw_accessors_t a = *unw_get_accessors(unw_local_addr_space);
    search_proc_info = a.find_proc_info;
    a.find_proc_info = find_proc_info;
    a.access_mem = access_mem;
    a.access_reg = access_reg;
    a.access_fpreg = access_fpreg;
    a.resume = resume;
    space = unw_create_addr_space(&a, 0);
    if (space)
        unw_set_caching_policy(space, UNW_CACHE_NONE);
}

void churn_unwind_checked_forget(void)
{
    if (space)
        unw_flush_cache(space, 0, 0);
    atomic_fetch_add(&generation, 1);
    for (unsigned i = 0; i < 1u << NOINFO_LOG; i++)
        atomic_store_explicit(&noinfo[i], 0, memory_order_relaxed);
}

unsigned churn_unwind_checked(churn_unwind_checked_state *state, uintptr_t *ips, unsigned max,
                              const churn_stack_range *stacks, unsigned nstacks)
{
    walk_state *w = (walk_state *)state;
    if (!space || !nstacks || nstacks > CHURN_UNWIND_STACKS)
        return 0;
    uint32_t gen = atomic_load_explicit(&generation, memory_order_acquire);
    if (w->generation != gen) {
        w->nmodules = w->next_module = 0;
        w->generation = gen;
    }
    w->nmapped = w->noutside = w->next_outside = 0;
    if (!w->infos)
        w->infos = churn_os_map(sizeof *w->infos);
    if (unw_getcontext(&w->context))
        return 0;
    for (unsigned i = 0; i < nstacks; i++)
        w->stacks[i] = (segment){stacks[i].lo, stacks[i].hi};
    w->nstacks = nstacks;
    w->stacks[0].lo = (uintptr_t)w->context.uc_mcontext.gregs[REG_RSP];
    if (unw_init_remote(&w->cursor, space, w) < 0)
        return 0;
    unsigned n = 0;
    while (n < max && unw_step(&w->cursor) > 0) {
        unw_word_t ip;
        if (unw_get_reg(&w->cursor, UNW_REG_IP, &ip) < 0 || !ip)
            break;
        ips[n++] = ip;
    }
    return n;
}
