/*
 * The tcmalloc way in: Google tcmalloc linked into the executable (workerd).  Its malloc and
 * operator new never reach a preloaded library, but it reports every allocation and free to
 * hooks registered with tcmalloc::MallocHook::AddNewHook / AddDeleteHook, which are in the
 * executable's .symtab only (dlsym cannot see them).  Facts: ../shared/guide/allocators.md and
 * docs/workerd-notes.md.
 *
 * The hooks run inside tcmalloc's slow path, so they take the guard (whatever libchurn does
 * underneath is not traced) and never allocate: threads get their ring when they start
 * (thread.c), and a hook on a thread without one records nothing rather than register.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "walk/elfsyms.h"
#include "shim.h"
#include "ways/way.h"

/* The executable's functions this way in calls, found in one pass over its symbol tables
   (find_symbols): a pass over workerd's reads 280,000 symbols. */
enum { ADD_NEW_HOOK, ADD_DELETE_HOOK, NUMERIC_PROPERTY, SET_PROFILE_SAMPLING,
       SET_GUARDED_SAMPLING, GET_STATS, NSYMBOLS };
static const char *const symbol_names[NSYMBOLS] = {
    [ADD_NEW_HOOK] = "_ZN8tcmalloc10MallocHook10AddNewHookEPFvRKNS0_7NewInfoEE",
    [ADD_DELETE_HOOK] = "_ZN8tcmalloc10MallocHook13AddDeleteHookEPFvRKNS0_10DeleteInfoEE",
    [NUMERIC_PROPERTY] = "MallocExtension_Internal_GetNumericProperty",
    [SET_PROFILE_SAMPLING] = "MallocExtension_Internal_SetProfileSamplingInterval",
    [SET_GUARDED_SAMPLING] = "MallocExtension_Internal_SetGuardedSamplingInterval",
    [GET_STATS] = "TCMalloc_Internal_GetStats",
};
static uintptr_t symbols[NSYMBOLS];

/* Once: the executable's symbols do not change, and the way in is chosen once, at start-up. */
static void find_symbols(void)
{
    static int found;
    if (!found)
        churn_exe_symbols(symbol_names, symbols, NSYMBOLS);
    found = 1;
}

/* tcmalloc::MallocHook::NewInfo and DeleteInfo (tcmalloc/malloc_hook.h), as laid out by the
   compiler: DeleteInfo's std::optional<size_t> is a value followed by its engaged flag. */
typedef struct {
    void *ptr;
    size_t requested_size;
    size_t allocated_size;
    bool is_mutable;
} new_info;

typedef struct {
    void *ptr;
    size_t deallocated_size;
    bool deallocated_size_engaged;
    size_t allocated_size;
    bool is_mutable;
} delete_info;

_Static_assert(offsetof(delete_info, allocated_size) == 24, "DeleteInfo layout");

typedef bool (*add_hook_fn)(void (*)(const void *));
typedef bool (*numeric_property_fn)(const char *name, size_t len, size_t *value);

static numeric_property_fn numeric_property;
static size_t (*get_stats)(char *buf, size_t len);

static const char *const counter_names[] = {
    "generic.current_allocated_bytes", "generic.heap_size", "generic.physical_memory_used",
    "generic.virtual_memory_used",     "tcmalloc.page_heap_free",
    "tcmalloc.page_heap_unmapped",     "tcmalloc.central_cache_free",
    "tcmalloc.cpu_free",               "tcmalloc.transfer_cache_free",
    "tcmalloc.thread_cache_free",      "tcmalloc.metadata_bytes",
    "tcmalloc.external_fragmentation_bytes", "tcmalloc.required_bytes",
};

static int hook_may_record(void)
{
    return !churn_in_shim &&
           atomic_load_explicit(&churn_state, memory_order_relaxed) == CHURN_ON &&
           churn_thread_current() && !churn_stack_short();
}

/* Under CHURN_SAMPLE_BYTES an unsampled call is counted and goes no further, as
   interpose.c's fast path does (shim.h, churn_sample_*_room): tcmalloc has already answered
   when the hook runs, so room and commit come together.  A thread's first call, a new epoch
   and a sample go the traced way, which counts them. */
static void on_new(const void *arg)
{
    const new_info *i = arg;
    if (churn_sample_epoch_current() && churn_sample_alloc_counted(i->requested_size))
        return;
    if (!hook_may_record())
        return;
    CHURN_GUARD();
    churn_record_alloc_usable(i->ptr, i->requested_size, i->allocated_size, CHURN_ALLOC_MALLOC);
}

static void on_delete(const void *arg)
{
    const delete_info *i = arg;
    if (i->ptr && CHURN_LIKELY(churn_sample_free_quick(i->ptr)))
        return;
    if (!hook_may_record())
        return;
    CHURN_GUARD();
    churn_record_free_usable(i->ptr, i->allocated_size, CHURN_FREE_FREE);
}

/* tcmalloc initialises itself in the executable's static constructors, which run after ours;
   asking for a counter before main crashes in PageAllocator::stats (docs/workerd-notes.md).
   Every counter read extracts tcmalloc's statistics anew, and workerd begins an epoch per
   subrequest: the first counter (generic.current_allocated_bytes, the one the trace is checked
   against) is read at every call, the others at most once a millisecond.  The writer reads
   them every millisecond while the program is busy (writer.c), so the program's thread, which
   ends the epochs, only copies them: doing it there took ten ExtractStats a millisecond and a
   mincore (half of workerd's main-thread ExtractStats samples, and its mincore calls).  It
   reads them itself only when the writer has not for PROGRAM_READ_NS (an idle writer looks
   every 50 ms). */
#define FULL_READ_NS 1000000u
#define PROGRAM_READ_NS 5000000u

/* The lock covers only copies of the cache: a reading of the slower counters (eleven
   ExtractStats) under it kept the program's thread spinning when its tick came meanwhile. */
static churn_spinlock cache_lock;
static uint64_t cache[sizeof counter_names / sizeof *counter_names];
static _Atomic uint64_t cache_ns;

static uint64_t counter(size_t i)
{
    size_t v = 0;
    return numeric_property(counter_names[i], strlen(counter_names[i]), &v) ? v : 0;
}

static void read_counters(uint64_t *values)
{
    const size_t n = sizeof counter_names / sizeof *counter_names;
    if (!churn_main_started() || !numeric_property) {
        memset(values, 0, n * sizeof *values);
        return;
    }
    values[0] = counter(0);
    uint64_t now = churn_now_ns();
    uint64_t last = atomic_load_explicit(&cache_ns, memory_order_relaxed);
    if (now - last >= (churn_writer_is_self() ? FULL_READ_NS : PROGRAM_READ_NS)) {
        for (size_t i = 1; i < n; i++)
            values[i] = counter(i);
        churn_spin_lock(&cache_lock);
        memcpy(cache + 1, values + 1, (n - 1) * sizeof *values);
        atomic_store_explicit(&cache_ns, now, memory_order_relaxed);
        churn_spin_unlock(&cache_lock);
        return;
    }
    churn_spin_lock(&cache_lock);
    memcpy(values + 1, cache + 1, (n - 1) * sizeof *values);
    churn_spin_unlock(&cache_lock);
}

/* The size classes come from tcmalloc's stats text, the only ABI-free account of them:
   lines "class N [ S bytes ] : ... K objs/span;".  The table repeats for other partitions;
   the first line of a size wins.  A span holds K objects rounded up to whole pages. */
static const char *parse_class(const char *line, const char *end, churn_size_classes *out)
{
    const char *nl = memchr(line, '\n', (size_t)(end - line));
    if (!nl)
        nl = end;
    unsigned long size = 0, objs = 0;
    const char *bracket = memchr(line, '[', (size_t)(nl - line));
    const char *per = memmem(line, (size_t)(nl - line), " objs/span", 10);
    if (bracket && per && !strncmp(line, "class", 5)) {
        size = strtoul(bracket + 1, NULL, 10);
        const char *q = per;
        while (q > line && q[-1] >= '0' && q[-1] <= '9')
            q--;
        objs = strtoul(q, NULL, 10);
    }
    if (size && objs && out->n < CHURN_MAX_SIZE_CLASSES) {
        int seen = 0;
        for (size_t i = 0; i < out->n; i++)
            seen |= out->size[i] == size;
        uint64_t span = ((uint64_t)size * objs + 8191) / 8192 * 8192;
        if (!seen && size <= UINT32_MAX && span <= UINT32_MAX) {
            out->size[out->n] = (uint32_t)size;
            out->span_bytes[out->n++] = (uint32_t)span;
        }
    }
    return nl < end ? nl + 1 : end;
}

/* Runs on the writer thread once main has started (asking earlier crashes, see above); the
   text goes to pages of our own, never to the heap we trace. */
static int load_classes(churn_size_classes *out)
{
    if (!get_stats)
        return 0;
    size_t cap = 4u << 20;
    char *buf = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED)
        return 0;
    size_t len = get_stats(buf, cap);
    if (len > cap)
        len = cap;
    out->n = 0;
    for (const char *p = buf, *end = buf + len; p < end && *p;)
        p = parse_class(p, end, out);
    munmap(buf, cap);
    return out->n > 0;
}

static int tcmalloc_applies(void)
{
    if (!churn_malloc_is_ahead())
        return 0;
    find_symbols();
    return symbols[ADD_NEW_HOOK] && symbols[ADD_DELETE_HOOK];
}

/* libchurn's own fallbacks (bootstrap copies, usable sizes) must use the executable's
   allocator, which dlsym(RTLD_DEFAULT) names because it is first in the lookup scope. */
static void use_executable_allocator(void)
{
#define EXE(field, name)                                                                    \
    do {                                                                                     \
        void *f = dlsym(RTLD_DEFAULT, name);                                                 \
        if (f)                                                                               \
            memcpy(&churn_next.field, &f, sizeof f);                                         \
    } while (0)
    EXE(malloc, "malloc");
    EXE(calloc, "calloc");
    EXE(realloc, "realloc");
    EXE(memalign, "memalign");
    EXE(posix_memalign, "posix_memalign");
    EXE(aligned_alloc, "aligned_alloc");
    EXE(valloc, "valloc");
    EXE(pvalloc, "pvalloc");
    EXE(usable_size, "malloc_usable_size");
    EXE(free, "free");
#undef EXE
}

static int tcmalloc_install(void)
{
    find_symbols();
    add_hook_fn add_new = (add_hook_fn)symbols[ADD_NEW_HOOK];
    add_hook_fn add_delete = (add_hook_fn)symbols[ADD_DELETE_HOOK];
    numeric_property = (numeric_property_fn)symbols[NUMERIC_PROPERTY];
    get_stats = (size_t (*)(char *, size_t))symbols[GET_STATS];
    use_executable_allocator();
    /* tcmalloc keeps its code in sections of its own; its frames between our hook and the
       program's call are dropped from stacks like libchurn's own. */
    static const char *const sections[] = {"google_malloc", "malloc_hook"};
    for (unsigned i = 0; i < 2; i++) {
        uintptr_t lo, hi;
        if (churn_exe_section(sections[i], &lo, &hi))
            churn_unwind_skip_allocator(i, lo, hi);
    }
    static churn_allocator_info info = {"tcmalloc (Google, in the executable)", 8192, 1, 0, {0},
                                        load_classes};
    info.ncounters = numeric_property ? sizeof counter_names / sizeof *counter_names : 0;
    for (size_t i = 0; i < info.ncounters; i++)
        info.counter_names[i] = counter_names[i];
    churn_allocator_set(&info, read_counters);
    /* A sampled allocation is accounted by tcmalloc with its own span, not the size the hook
       reports, so with sampling on the counters and the trace disagree by the sampled
       objects' slack.  libchurn sees every allocation anyway: sampling (for heap profiles)
       and guarded sampling are turned off. */
    void (*set_sampling)(int64_t) = (void (*)(int64_t))symbols[SET_PROFILE_SAMPLING];
    void (*set_guarded)(int64_t) = (void (*)(int64_t))symbols[SET_GUARDED_SAMPLING];
    if (set_sampling)
        set_sampling(0);
    if (set_guarded)
        set_guarded(-1);
    /* Registering clears this thread's fast-path word only; installed from the constructor,
       before the program starts any thread, every thread takes the hooked path. */
    if (!add_new(on_new) || !add_delete(on_delete)) {
        churn_log("tcmalloc refused libchurn's allocation hooks; not tracing");
        return -1;
    }
    return 0;
}

const churn_way churn_way_tcmalloc = {"tcmalloc", tcmalloc_applies, tcmalloc_install};
