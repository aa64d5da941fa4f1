/*
 * Which allocator answers our calls to the next malloc, and its own books: the counters that
 * tell free-but-resident memory apart from live data (glibc mallinfo2, gperftools
 * MallocExtension, jemalloc mallctl).  Looked up with dlsym, so none is a link dependency.
 */
#include <dlfcn.h>
#include <link.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "walk/elfsyms.h"
#include "shim.h"
#include "ways/way.h"

static churn_allocator_info info;
static void (*way_counters)(uint64_t *values);
static int (*gperf_property)(const char *, size_t *);
static int (*je_mallctl)(const char *, void *, size_t *, void *, size_t);
static struct mallinfo2 (*glibc_mallinfo2)(void);

static const char *const gperf_names[] = {
    "generic.current_allocated_bytes", "generic.heap_size", "generic.total_physical_bytes",
    "tcmalloc.pageheap_free_bytes", "tcmalloc.pageheap_unmapped_bytes",
    "tcmalloc.central_cache_free_bytes", "tcmalloc.transfer_cache_free_bytes",
    "tcmalloc.thread_cache_free_bytes",
};
/* stats.arenas.4096.pdirty (4096: MALLCTL_ARENAS_ALL, every arena merged) counts pages, the
   free but resident ones: resident - active - metadata is not that figure, since metadata
   counts jemalloc's internal allocations, which active counts too.  Last, so that a jemalloc
   without it (4.x names the merged arena otherwise) records the others. */
static const char *const je_names[] = {
    "stats.allocated", "stats.active", "stats.metadata", "stats.resident", "stats.mapped",
    "stats.retained", "stats.arenas.4096.pdirty",
};
static const char *const glibc_names[] = {
    "mallinfo2.arena", "mallinfo2.hblkhd", "mallinfo2.uordblks", "mallinfo2.fordblks",
    "mallinfo2.keepcost",
};

static void set_names(const char *const *names, size_t n)
{
    info.ncounters = n;
    for (size_t i = 0; i < n; i++)
        info.counter_names[i] = names[i];
}

/* Counters of other sources after the allocator's own: libchurn's blind-spot detector
   (blind.c), the allocators traced beside the one behind malloc (way_named.c). */
#define MAX_EXTRA 3
static struct {
    size_t first;
    void (*fill)(uint64_t *values, int fresh);
} extra[MAX_EXTRA];
static size_t nextra;

/* The malloc whose calls are traced: the one ahead of libchurn in the lookup scope (the
   executable's, traced through the patch way), or else the next one after libchurn. */
static void *traced_malloc(void)
{
    churn_real_resolve();
    return churn_malloc_is_ahead() ? dlsym(RTLD_DEFAULT, "malloc") : (void *)churn_next.malloc;
}

/* An entry point of the allocator that defines the traced malloc: in the executable's own
   symbols when the executable defines it (a static library's are mostly not exported; an
   executable that forwards to a library's allocator finds it in the global scope), else in
   the library that does, itself. */
static void *allocator_symbol(const Dl_info *owner, int in_exe, const char *name)
{
    if (in_exe) {
        uintptr_t a = churn_exe_symbol(name);
        return a ? (void *)a : dlsym(RTLD_DEFAULT, name);
    }
    void *p = dlsym(RTLD_DEFAULT, name);
    Dl_info at;
    return p && dladdr(p, &at) && at.dli_fbase == owner->dli_fbase ? p : NULL;
}

static int exe_holds(struct dl_phdr_info *i, size_t size, void *arg)
{
    (void)size;
    *(uintptr_t *)arg = i->dlpi_addr;
    return 1; /* the first object reported is the executable */
}

/* The allocator is named by what defines the malloc that is traced, never by what else the
   process has loaded: glibc only when that malloc is glibc's own, and its counters (mallinfo2)
   only then, since they describe glibc's heap alone. */
void churn_allocator_detect(void *traced)
{
    if (way_counters)
        return; /* named by the way in */
    void *m = traced ? traced : traced_malloc();
    Dl_info owner = {0}, glibc;
    uintptr_t exe_base = 0;
    dl_iterate_phdr(exe_holds, &exe_base);
    int known = m && dladdr(m, &owner) && owner.dli_fname;
    int in_exe = known && (uintptr_t)owner.dli_fbase == exe_base;
    /* glibc's malloc is one in the object that defines gnu_get_libc_version: an allocator that
       replaces malloc often defines __libc_malloc and the like too (mimalloc does). */
    void *libc_version = dlsym(RTLD_DEFAULT, "gnu_get_libc_version");
    int is_glibc = known && !in_exe && libc_version && dladdr(libc_version, &glibc) &&
                   glibc.dli_fbase == owner.dli_fbase;
    info.page_size = 4096;
    info.ncounters = 0;
    nextra = 0; /* a copy attached again adds the other sources' counters again */
    if (is_glibc) {
        info.name = "glibc";
        glibc_mallinfo2 = (struct mallinfo2 (*)(void))dlsym(RTLD_DEFAULT, "mallinfo2");
        if (glibc_mallinfo2)
            set_names(glibc_names, sizeof glibc_names / sizeof *glibc_names);
        return;
    }
    if (known) {
        gperf_property = (int (*)(const char *, size_t *))allocator_symbol(
            &owner, in_exe, "MallocExtension_GetNumericProperty");
        je_mallctl = (int (*)(const char *, void *, size_t *, void *, size_t))allocator_symbol(
            &owner, in_exe, "mallctl");
    }
    if (gperf_property) {
        info.name = "gperftools";
        info.page_size = 8192;
        set_names(gperf_names, sizeof gperf_names / sizeof *gperf_names);
    } else if (je_mallctl) {
        info.name = "jemalloc";
        size_t page = 4096, len = sizeof page;
        je_mallctl("arenas.page", &page, &len, NULL, 0);
        info.page_size = (uint32_t)page;
        size_t n = sizeof je_names / sizeof *je_names, pdirty = 0;
        len = sizeof pdirty;
        if (je_mallctl(je_names[n - 1], &pdirty, &len, NULL, 0))
            n--;
        set_names(je_names, n);
    } else if (known && allocator_symbol(&owner, in_exe, "mi_malloc")) {
        info.name = "mimalloc"; /* no books read: its statistics are not free-but-resident */
    } else {
        /* The analyzer falls back to its page model for a name it does not know. */
        static char name[96];
        const char *base = known && !in_exe ? strrchr(owner.dli_fname, '/') : NULL;
        snprintf(name, sizeof name, "unknown (%s)",
                 known && !in_exe ? (base ? base + 1 : owner.dli_fname) : "the executable's own");
        info.name = name;
    }
}

const churn_allocator_info *churn_allocator(void) { return &info; }

void churn_allocator_set(const churn_allocator_info *known, void (*counters)(uint64_t *values))
{
    info = *known;
    way_counters = counters;
}

size_t churn_allocator_add_counters(const char *const *names, size_t n,
                                    void (*fill)(uint64_t *values, int fresh))
{
    if (nextra == MAX_EXTRA || info.ncounters + n > CHURN_MAX_COUNTERS)
        return 0;
    extra[nextra].first = info.ncounters;
    extra[nextra++].fill = fill;
    for (size_t i = 0; i < n; i++)
        info.counter_names[info.ncounters++] = names[i];
    return n;
}

/* The allocators traced beside the one behind malloc, and their ways in, after its name. */
void churn_allocator_set_ways(const char *ways)
{
    static char label[512];
    snprintf(label, sizeof label, "%s [%s]", info.name ? info.name : "?", ways);
    info.name = label;
}

/* Asked once the program runs: allocators set themselves up in the executable's own
   constructors, after ours. */
const churn_size_classes *churn_allocator_classes(void)
{
    static churn_size_classes classes;
    static int state; /* 0 not asked yet, 1 known, -1 unavailable */
    if (state == 0 && info.load_classes && churn_main_started())
        state = info.load_classes(&classes) ? 1 : -1;
    return state == 1 ? &classes : NULL;
}

/* Called by the writer only: these functions may take the allocator's own locks. */
void churn_allocator_counters(uint64_t *values)
{
    memset(values, 0, info.ncounters * sizeof *values);
    size_t own = nextra ? extra[0].first : info.ncounters; /* the allocator's own names */
    if (way_counters) {
        way_counters(values);
    } else if (gperf_property) {
        for (size_t i = 0; i < own; i++) {
            size_t v = 0;
            if (gperf_property(info.counter_names[i], &v))
                values[i] = v;
        }
    } else if (je_mallctl) {
        uint64_t epoch = 1;
        size_t len = sizeof epoch;
        je_mallctl("epoch", &epoch, &len, &epoch, len);
        for (size_t i = 0; i < own; i++) {
            size_t v = 0;
            len = sizeof v;
            if (!je_mallctl(info.counter_names[i], &v, &len, NULL, 0))
                values[i] = v;
        }
    } else if (glibc_mallinfo2) {
        struct mallinfo2 m = glibc_mallinfo2();
        values[0] = m.arena;
        values[1] = m.hblkhd;
        values[2] = m.uordblks;
        values[3] = m.fordblks;
        values[4] = m.keepcost;
    }
    for (size_t i = 0; i < nextra; i++)
        extra[i].fill(values + extra[i].first, 1);
}

/* Safe on any thread, under the writer's lock and on the exit path: a source that would take
   an allocator's locks gives its last reading instead (way_named.c, blind.c). */
void churn_allocator_extra_counters(uint64_t *values)
{
    for (size_t i = 0; i < nextra; i++)
        extra[i].fill(values + extra[i].first, 0);
}
