/*
 * The blind-spot detector: memory a program holds through an allocator libchurn does not
 * know (its own on mmap, one in a stripped executable) grows RSS while the trace shows nothing.
 * Twice a second (less often where reading takes long: SAMPLE_SHARE) the writer compares the
 * growth of the process's anonymous resident memory (/proc/self/smaps_rollup) since a
 * baseline taken once the program runs with the growth of
 * what explains it: the traced heap's high-water mark, the pages of objects already live at
 * the baseline that were not resident yet (a buffer allocated at start and filled later:
 * mincore), and libchurn's own memory.  Under CHURN_SAMPLE_BYTES the live heap is the
 * sampled objects' weighted sum, the analyzer's estimate, and four of its standard errors
 * are taken as explained too.  When what is
 * left grows three samples running and is over UNTRACED_MIN and over the traced growth,
 * stderr says so once, with the anonymous mappings that grew most (from /proc/self/smaps) and
 * the likely culprit: a loaded object that calls mmap and has the most allocator-like names.
 *
 * When the culprit carries a collected runtime (include/churn/engines.h: a JS engine, Ruby's,
 * Go's; a function of its collector in its symbols, or stripped, a string of its collector
 * among its bytes) or the mapping that grew most carries the engine's name, the growth is
 * named as that runtime's own heap: outside malloc by design, and what is not traced is the
 * objects on it.  Otherwise, when the culprit carries an allocator libchurn knows by
 * name but none of the names (include/churn/allocators.h: mimalloc or jemalloc, by their
 * warnings among its bytes), stderr says which: libchurn cannot trace it.  A culprit with a
 * language runtime's own allocator (include/churn/runtime_heaps.h: PHP's _emalloc, CPython's
 * PyObject_Malloc) is named so, with the setting that sends the runtime's objects to malloc
 * instead.
 *
 * When most of the growth is in a file's private mapping the program writes (copy-on-write
 * pages), stderr names the file instead of a culprit: no allocator holds that memory.
 *
 * The figures reach the trace as eight counters after the allocator's own
 * (libchurn.untraced_bytes, an estimate; libchurn.untraced_warned; libchurn.untraced_module,
 * the culprit's module id + 1; libchurn.untraced_engine, include/churn/engines.h's index + 1;
 * libchurn.own_resident_bytes, libchurn's own resident memory; libchurn.untraced_allocator,
 * include/churn/allocators.h's index + 1; libchurn.untraced_runtime, runtime_heaps.h's
 * index + 1; libchurn.untraced_file, 1 when the growth is a written file mapping's), and one
 * of stop.c's (libchurn.stop_signal) travels with them, so the analyzer can warn and split
 * RSS.  Everything here runs
 * on the writer thread outside its final pass: reading smaps walks page tables, and the exit
 * path must not wait for it.
 */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "churn/allocators.h"
#include "churn/engines.h"
#include "churn/own_libraries.h"
#include "churn/runtime_heaps.h"
#include "walk/elfsyms.h"
#include "shim.h"

#define SAMPLE_NS 500000000u
/* Reading smaps_rollup walks the page tables of every mapping: workerd at 200 MB resident
   takes 9 to 27 ms a read in this VM (median 18), twice a second 4 % of a core its own threads
   share on two cores.  So the next sample comes no sooner than SAMPLE_SHARE times the last
   one's duration: the detector takes at most 1 % of a core, and a program whose reading is
   that slow is warned of that much later (three rising samples). */
#define SAMPLE_SHARE 100u
#define STEADY_SAMPLES 3
#define STEP_MIN ((uint64_t)256 << 10)   /* growth per sample that counts as growing */
#define UNTRACED_MIN ((uint64_t)8 << 20)
#define MAX_BASE 1024
#define TOP 3

static _Atomic uint64_t untraced_now;
static _Atomic uint64_t warned, culprit_id, engine_id, hidden_id, runtime_id, file_id;
/* Bit i: the runtime_heaps.h allocator i is traced in this process (way_pymalloc.c). */
static _Atomic unsigned runtimes_traced;

void churn_blind_runtime_traced(int runtime)
{
    atomic_fetch_or(&runtimes_traced, 1u << runtime);
}
/* libchurn's own resident bytes, for the RSS split: refreshed every OWN_NS by the writer, so
   that a reading of the counters at the tick (on the program's thread) only loads it; less
   often when counting takes longer than OWN_SHARE of that (thousands of threads' rings), so
   that it never takes more of the writer's time.  The writer's CPU time is what is compared,
   not the wall's: mincore waits for the program's mmap lock, and on python3 growing its heap
   a count of 0.1 ms of CPU took 20 ms of wall, which left the count a second old. */
#define OWN_NS 10000000u
#define OWN_SHARE 50u
static _Atomic uint64_t own_resident;
static uint64_t own_next_ns;

static struct {
    int started;
    uint64_t next_ns, base_ns;
    uint64_t base_anon, base_own, base_live, base_untouched, live_peak, last_untraced;
    int rising;
    _Atomic int fd; /* smaps_rollup, kept open (a high descriptor of ours) */
    size_t nbase;
    uintptr_t base_lo[MAX_BASE];
    uint64_t base_kb[MAX_BASE];
} b = {.fd = -1};

static const char *const names[] = {
    "libchurn.untraced_bytes",   "libchurn.untraced_warned",    "libchurn.untraced_module",
    "libchurn.untraced_engine",  "libchurn.own_resident_bytes", "libchurn.untraced_allocator",
    "libchurn.untraced_runtime", "libchurn.untraced_file",      "libchurn.stop_signal"};

static void counters(uint64_t *values, int fresh)
{
    (void)fresh; /* atomics: always current */
    values[0] = atomic_load_explicit(&untraced_now, memory_order_relaxed);
    values[1] = atomic_load_explicit(&warned, memory_order_relaxed);
    values[2] = atomic_load_explicit(&culprit_id, memory_order_relaxed);
    values[3] = atomic_load_explicit(&engine_id, memory_order_relaxed);
    values[4] = atomic_load_explicit(&own_resident, memory_order_relaxed);
    values[5] = atomic_load_explicit(&hidden_id, memory_order_relaxed);
    values[6] = atomic_load_explicit(&runtime_id, memory_order_relaxed);
    values[7] = atomic_load_explicit(&file_id, memory_order_relaxed);
    values[8] = churn_stop_caught(); /* stop.c's, with libchurn's other figures */
}

void churn_blind_register(void)
{
    churn_os_list_own_image();
    atomic_store(&own_resident, churn_os_own_resident());
    if (!churn_allocator_add_counters(names, sizeof names / sizeof *names, counters))
        churn_log("no room in the trace for the blind-spot detector's counters");
}

/* ---- /proc/self/smaps, a line at a time through a stack buffer ---- */

typedef void (*line_fn)(const char *line, void *ctx);

static void each_line(_Atomic int *kept, line_fn fn, void *ctx)
{
    int fd = churn_fd_use(kept);
    if (fd < 0)
        return;
    char buf[8192], line[512];
    size_t len = 0;
    ssize_t n;
    off_t off = 0;
    while ((n = pread(fd, buf, sizeof buf, off)) > 0) {
        off += n;
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] == '\n') {
                line[len] = 0;
                fn(line, ctx);
                len = 0;
            } else if (len < sizeof line - 1) {
                line[len++] = buf[i];
            }
        }
    }
    churn_fd_done(kept);
}

static uint64_t number_after(const char *s)
{
    while (*s && (*s < '0' || *s > '9'))
        s++;
    uint64_t v = 0;
    while (*s >= '0' && *s <= '9')
        v = v * 10 + (uint64_t)(*s++ - '0');
    return v;
}

void churn_blind_reset(void)
{
    churn_fd_drop(&b.fd); /* it reads the parent's figures */
    b.started = 0;
    atomic_store(&untraced_now, 0);
    atomic_store(&warned, 0);
    atomic_store(&culprit_id, 0);
    atomic_store(&engine_id, 0);
    own_next_ns = 0;
    atomic_store(&hidden_id, 0);
    atomic_store(&runtime_id, 0);
    atomic_store(&file_id, 0);
}

static void rollup_line(const char *line, void *ctx)
{
    if (!strncmp(line, "Anonymous:", 10))
        *(uint64_t *)ctx = number_after(line + 10) << 10;
}

static uint64_t anon_bytes(void)
{
    uint64_t v = 0;
    each_line(&b.fd, rollup_line, &v);
    return v;
}

/* The engine (index + 1) whose name for its mappings a header line's "[anon:name]" carries. */
static int named_engine(const char *line)
{
    const char *name = strstr(line, "[anon:");
    for (size_t i = 0; name && i < CHURN_N_ENGINES; i++)
        if (churn_engines[i].mapping && strstr(name, churn_engines[i].mapping))
            return (int)i + 1;
    return 0;
}

/* A mapping's header line: "lo-hi perms offset dev inode [path]". */
static int header(const char *line, uintptr_t *lo, uintptr_t *hi)
{
    uintptr_t v[2] = {0, 0};
    int k = 0, digits = 0;
    for (const char *p = line; *p && k < 2; p++) {
        int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
        if (d >= 0) {
            v[k] = v[k] << 4 | (uintptr_t)d;
            digits++;
        } else if ((*p == '-' && k == 0 && digits) || (*p == ' ' && k == 1 && digits)) {
            k++;
            digits = 0;
        } else {
            return 0;
        }
    }
    *lo = v[0];
    *hi = v[1];
    return k == 2;
}

typedef struct walk {
    int baseline;
    uintptr_t lo, hi;
    int engine;             /* the current mapping's, from its name */
    char file[160];         /* the current mapping's file, "" for none */
    char top_file[160];     /* the file of the mapping that grew most, "" for none */
    /* the mappings that grew most, at the warning */
    uintptr_t top_lo[TOP], top_hi[TOP];
    int64_t top_growth[TOP];
    int top_engine[TOP];
} walk;

static uint64_t base_of(uintptr_t lo)
{
    for (size_t i = 0; i < b.nbase; i++)
        if (b.base_lo[i] == lo)
            return b.base_kb[i];
    return 0;
}

static void smaps_line(const char *line, void *ctx)
{
    walk *w = ctx;
    uintptr_t lo, hi;
    if (header(line, &lo, &hi)) {
        w->lo = lo;
        w->hi = hi;
        w->engine = named_engine(line);
        /* a file's private mapping grows anonymous pages where the program writes it */
        const char *path = strchr(line, '/');
        size_t n = path ? strlen(path) : 0;
        if (n >= sizeof w->file)
            n = sizeof w->file - 1;
        memcpy(w->file, path ? path : "", n);
        w->file[n] = 0;
        return;
    }
    if (strncmp(line, "Anonymous:", 10))
        return;
    uint64_t kb = number_after(line + 10);
    if (w->baseline) {
        if (kb && b.nbase < MAX_BASE) {
            b.base_lo[b.nbase] = w->lo;
            b.base_kb[b.nbase++] = kb;
        }
        return;
    }
    int64_t growth = (int64_t)((kb - base_of(w->lo)) << 10);
    for (int i = 0; i < TOP; i++)
        if (growth > w->top_growth[i]) {
            for (int j = TOP - 1; j > i; j--) {
                w->top_lo[j] = w->top_lo[j - 1];
                w->top_hi[j] = w->top_hi[j - 1];
                w->top_growth[j] = w->top_growth[j - 1];
                w->top_engine[j] = w->top_engine[j - 1];
            }
            w->top_lo[i] = w->lo;
            w->top_hi[i] = w->hi;
            w->top_growth[i] = growth;
            w->top_engine[i] = w->engine;
            if (i == 0)
                memcpy(w->top_file, w->file, sizeof w->file);
            break;
        }
}

static void read_smaps(walk *w)
{
    _Atomic int fd = -1;
    if (churn_fd_keep(&fd, open("/proc/self/smaps", O_RDONLY | O_CLOEXEC)) < 0)
        return;
    each_line(&fd, smaps_line, w);
    churn_fd_drop(&fd);
}

/* ---- the likely culprit ---- */

typedef struct suspect {
    size_t allocator_names;
    int calls_mmap;
    int engine;             /* a collected runtime's collector is in its symbols: index + 1 */
    unsigned named;         /* bit i: a symbol names churn_hidden_allocators[i] */
    int runtime;            /* a runtime's own allocator is in its symbols: index + 1 */
} suspect;

static int ends_with(const char *s, const char *end)
{
    size_t n = strlen(s), m = strlen(end);
    return n >= m && !memcmp(s + n - m, end, m);
}

static int allocator_like(const char *n)
{
    return strstr(n, "alloc") || strstr(n, "arena") || strstr(n, "heap") || strstr(n, "pool") ||
           strstr(n, "chunk") || strstr(n, "segment") || strstr(n, "slab");
}

static void suspect_symbol(const char *name, uintptr_t addr, void *ctx)
{
    (void)addr;
    suspect *s = ctx;
    if (allocator_like(name))
        s->allocator_names++;
    /* a runtime allocator libchurn traces is no more a culprit than malloc */
    for (size_t i = 0; !s->runtime && i < CHURN_N_RUNTIME_HEAPS; i++)
        if (!strcmp(name, churn_runtime_heaps[i].symbol) &&
            !(atomic_load_explicit(&runtimes_traced, memory_order_relaxed) >> i & 1))
            s->runtime = (int)i + 1;
    for (size_t i = 0; !s->engine && i < CHURN_N_ENGINES; i++)
        if (!strncmp(name, churn_engines[i].gc_prefix, strlen(churn_engines[i].gc_prefix)))
            s->engine = (int)i + 1;
    for (size_t i = 0; i < CHURN_N_HIDDEN_ALLOCATORS; i++)
        if (ends_with(name, churn_hidden_allocators[i].named_by))
            s->named |= 1u << i;
}

typedef struct culprit {
    int first;
    size_t module;          /* dl_iterate_phdr order: the executable first */
    size_t best, best_names;
    int found;
    char path[256];
    int stripped;
    int engine;
    unsigned named;
    int runtime;
} culprit;

/* Objects that are not the program's: the C runtime, and the libraries libchurn loads for
   itself (libunwind maps its caches and has allocator-like names). */
static int ours_or_libc(const char *path)
{
    static const char *const skip[] = {"/libc.so", "/ld-linux", "/libm.so", "/libstdc++.so",
                                       "/libgcc_s.so", "/libpthread.so", "/libdl.so", "linux-vdso"};
    for (size_t i = 0; i < sizeof skip / sizeof *skip; i++)
        if (strstr(path, skip[i]))
            return 1;
    return churn_own_library(path);
}

static int holds_self(const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && churn_self_lo >= lo && churn_self_lo < lo + ph->p_memsz)
            return 1;
    }
    return 0;
}

static int each_suspect(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    culprit *c = arg;
    int exe = c->first;
    c->first = 0;
    size_t module = c->module++;
    const char *path = exe ? "/proc/self/exe" : info->dlpi_name;
    if (!exe && (!path || !*path || ours_or_libc(path) || holds_self(info)))
        return 0;
    suspect s = {0};
    s.calls_mmap = churn_file_refers(path, "mmap") || churn_file_refers(path, "mmap64");
    churn_file_symbols(path, info->dlpi_addr, suspect_symbol, &s);
    int stripped = exe && !churn_file_has_symtab(path);
    /* A stripped executable cannot show allocator names: its calls of mmap are enough. */
    if (!s.calls_mmap && !stripped)
        return 0;
    if (!c->found || s.allocator_names > c->best_names || (stripped && !c->best_names)) {
        c->found = 1;
        c->best = module;
        c->best_names = s.allocator_names;
        c->stripped = stripped;
        c->engine = s.engine;
        c->named = s.named;
        c->runtime = s.runtime;
        if (exe) {
            ssize_t n = readlink("/proc/self/exe", c->path, sizeof c->path - 1);
            c->path[n > 0 ? n : 0] = 0;
        } else {
            size_t n = strlen(path);
            if (n >= sizeof c->path)
                n = sizeof c->path - 1;
            memcpy(c->path, path, n);
            c->path[n] = 0;
        }
    }
    return 0;
}

/* The first of n messages (index + 1) that is among a file's bytes, skipping those whose bit
   is set in skip.  The file is mapped privately and read-only with a raw system call for the
   search only. */
static int message_among(const char *path, const char *const *messages, size_t n, unsigned skip)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    long p = -1;
    if (!fstat(fd, &st) && st.st_size > 0)
        p = syscall(SYS_mmap, NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == -1 || (unsigned long)p > -4096UL)
        return 0;
    int found = 0;
    for (size_t i = 0; !found && i < n; i++)
        if (messages[i] && !(skip >> i & 1) &&
            memmem((const void *)p, (size_t)st.st_size, messages[i], strlen(messages[i])))
            found = (int)i + 1;
    syscall(SYS_munmap, p, (size_t)st.st_size);
    return found;
}

/* The engine (index + 1) whose collector's message is among a stripped file's bytes. */
static int message_engine(const char *path)
{
    const char *messages[CHURN_N_ENGINES];
    for (size_t i = 0; i < CHURN_N_ENGINES; i++)
        messages[i] = churn_engines[i].message;
    return message_among(path, messages, CHURN_N_ENGINES, 0);
}

/* The allocator (index + 1) whose warnings are among the file's bytes while none of its
   symbols names that allocator for the named way in. */
static int message_allocator(const char *path, unsigned named)
{
    const char *messages[CHURN_N_HIDDEN_ALLOCATORS];
    for (size_t i = 0; i < CHURN_N_HIDDEN_ALLOCATORS; i++)
        messages[i] = churn_hidden_allocators[i].message;
    return message_among(path, messages, CHURN_N_HIDDEN_ALLOCATORS, named);
}

/* The module id the trace gives the object the loader names path (churn_module), or none. */
static uint64_t module_id(const char *path)
{
    for (size_t i = 0; i < churn_modules_count(); i++) {
        const churn_module *m = churn_module_get(i);
        if (m && m->path && !strcmp(churn_module_loader_name(m), path))
            return i + 1;
    }
    return 0;
}

static void warn(uint64_t untraced, uint64_t heap_growth, uint64_t now)
{
    walk w;
    memset(&w, 0, sizeof w);
    read_smaps(&w);
    culprit c;
    memset(&c, 0, sizeof c);
    c.first = 1;
    dl_iterate_phdr(each_suspect, &c);
    char top[200] = "";
    size_t len = 0;
    for (int i = 0; i < TOP && w.top_growth[i] >= (64 << 10) && len < sizeof top; i++)
        len += (size_t)snprintf(top + len, sizeof top - len, "%s%lx-%lx +%.1f MiB",
                                i ? ", " : "", (unsigned long)w.top_lo[i],
                                (unsigned long)w.top_hi[i], (double)w.top_growth[i] / 1048576.0);
    /* A collected runtime's heap is its own mappings, outside malloc by design: what is not
       traced is the objects on it, not an allocator that a way in could reach. */
    if (c.found && !c.engine && c.stripped)
        c.engine = message_engine(c.path);
    int engine = w.top_engine[0] ? w.top_engine[0] : c.found ? c.engine : 0;
    /* Found by no name, a known allocator cannot be traced: saying which tells the user what
       the report misses, where "an allocator libchurn does not know" would be wrong. */
    int hidden = c.found && !engine ? message_allocator(c.path, c.named) : 0;
    const char *hname = hidden ? churn_hidden_allocators[hidden - 1].name : "";
    /* Most of the growth in a file's private mapping: pages the program wrote there, copied
       from the file (copy-on-write), which no allocator holds. */
    int cow = !engine && w.top_file[0] && w.top_growth[0] * 2 >= (int64_t)untraced;
    double mib = (double)untraced / 1048576.0, secs = (double)(now - b.base_ns) / 1e9;
    if (engine)
        churn_log("anonymous memory grew %.1f MiB in %.1f s in mappings of %s's own heap "
                  "(outside malloc by design: the 'outside' part of the RSS split; traced heap "
                  "+%.1f MiB); not traced: objects on %s; the largest growth: %s", mib,
                  secs, churn_engines[engine - 1].name, (double)heap_growth / 1048576.0,
                  churn_engines[engine - 1].heap,
                  *top ? top : "none in a single mapping");
    else
        churn_log("anonymous memory grew %.1f MiB in %.1f s that nothing traced explains (traced "
                  "heap +%.1f MiB): it is not traced; the largest growth: %s", mib, secs,
                  (double)heap_growth / 1048576.0, *top ? top : "none in a single mapping");
    if (cow)
        churn_log("the mapping that grew most is one of %s, mapped privately and written: its "
                  "copy-on-write pages are the file's data changed in memory, not an "
                  "allocator's", w.top_file);
    else if (engine && w.top_engine[0])
        churn_log("the mapping that grew most is named by %s", churn_engines[engine - 1].name);
    else if (engine)
        churn_log("likely culprit: %s, which calls mmap and carries %s (its garbage collector's "
                  "%s)", c.path, churn_engines[engine - 1].name,
                  c.stripped ? "messages are in its bytes: it is stripped"
                             : "functions are in its symbols");
    else if (c.found && c.runtime) {
        /* PHP's and CPython's objects live in chunks and arenas of their own, and each has a
           switch to malloc instead; CPython's is traced where libchurn could hook it */
        const churn_runtime_heap *r = &churn_runtime_heaps[c.runtime - 1];
        churn_log("likely culprit: %s, %s (%s, on memory it maps)%s%s%s: %s in the environment "
                  "sends %s to malloc, traced",
                  c.path, r->name, r->symbol, r->traced ? ", not traced in this process (" : "",
                  r->traced ? r->traced : "", r->traced ? ")" : "", r->setting, r->objects);
    } else if (c.found && c.stripped)
        churn_log("likely culprit: the executable %s, which calls mmap and is stripped (no "
                  ".symtab)%s%s%s: libchurn cannot see an allocator linked into it", c.path,
                  hidden ? ", carrying " : "", hname,
                  hidden ? " (its warnings are among its bytes)" : "");
    else if (c.found && hidden)
        churn_log("likely culprit: %s, which calls mmap and carries %s without the names "
                  "libchurn traces it by (its warnings are among its bytes, and no symbol ends "
                  "in %s): libchurn cannot find its functions, so it is not traced", c.path,
                  hname, churn_hidden_allocators[hidden - 1].named_by);
    else if (c.found)
        churn_log("likely culprit: %s, which calls mmap and has %zu allocator-like function "
                  "names; an allocator libchurn does not know", c.path, c.best_names);
    uint64_t id = 0;
    if (c.found && !cow) {
        churn_modules_scan();
        id = module_id(c.path);
        if (!id && c.best == 0)
            id = 1; /* the executable is the first module found */
    }
    atomic_store(&culprit_id, id);
    atomic_store(&engine_id, (uint64_t)engine);
    atomic_store(&hidden_id, (uint64_t)hidden);
    atomic_store(&runtime_id, (uint64_t)(c.found && !engine && !cow ? c.runtime : 0));
    atomic_store(&file_id, (uint64_t)cow);
    atomic_store(&warned, 1);
}

/* ---- the traced heap, as the check needs it ---- */

typedef struct {
    uint64_t untouched;     /* bytes of whole pages inside live objects not resident */
    uintptr_t page;
    double weighted, variance;
} heap_walk;

/* Pages of [lo, hi) that are not resident, by mincore a stack buffer at a time.  A range the
   program unmapped since (the live map lags its frees) counts as resident: nothing to add. */
static uint64_t untouched(uintptr_t lo, uintptr_t hi, uintptr_t page)
{
    unsigned char vec[1024];
    uint64_t absent = 0;
    while (lo < hi) {
        size_t pages = (hi - lo) / page;
        if (pages > sizeof vec)
            pages = sizeof vec;
        if (!syscall(SYS_mincore, lo, pages * page, vec))
            for (size_t i = 0; i < pages; i++)
                absent += !(vec[i] & 1);
        lo += pages * page;
    }
    return absent * page;
}

static void each_live(uintptr_t addr, const churn_live *v, void *ctx)
{
    heap_walk *h = ctx;
    if (h->untouched != UINT64_MAX) {
        uintptr_t page = h->page;
        uintptr_t lo = (addr + page - 1) & ~(page - 1), hi = (addr + v->size) & ~(page - 1);
        if (hi > lo)
            h->untouched += untouched(lo, hi, page);
    }
    if (churn_opt.sample_bytes) {
        double var, w = churn_sample_weight(v->size, &var);
        h->weighted += w * (double)v->size;
        h->variance += var;
    }
}

/* sqrt by Newton's method: libm is not a dependency of the shim. */
static double root(double x)
{
    if (x <= 0.0)
        return 0.0;
    double r = x > 1.0 ? x : 1.0;
    for (int i = 0; i < 200; i++) {
        double next = 0.5 * (r + x / r);
        if (next >= r)
            break;
        r = next;
    }
    return r;
}

/* One sample; returns how long its recurring part took (the live map's walk, the rollup),
   leaving out the baseline's and the warning's full smaps, read once. */
static uint64_t sample(uint64_t now, uint64_t live_bytes)
{
    uint64_t start = churn_now_ns();
    /* Sampled, the live map holds the sampled objects only: the writer's sum of their sizes
       is a fraction of the heap.  Their weighted sum estimates it (a few thousand objects at
       the sampling rates that pay, walked twice a second). */
    heap_walk h = {.untouched = b.started ? UINT64_MAX : 0,
                   .page = (uintptr_t)sysconf(_SC_PAGESIZE)};
    if (!b.started || churn_opt.sample_bytes)
        churn_livemap_each(each_live, &h);
    uint64_t margin = 0;
    if (churn_opt.sample_bytes) {
        live_bytes = (uint64_t)h.weighted;
        margin = (uint64_t)(4.0 * root(h.variance));
    }
    if (!b.started) {
        if (!churn_main_started())
            return 0;
        churn_fd_keep(&b.fd, open("/proc/self/smaps_rollup", O_RDONLY | O_CLOEXEC));
        b.started = 1;
        b.base_ns = now;
        b.base_anon = anon_bytes();
        b.base_own = atomic_load(&own_resident);
        b.base_live = b.live_peak = live_bytes;
        b.base_untouched = h.untouched;
        b.last_untraced = 0;
        b.rising = 0;
        b.nbase = 0;
        uint64_t took = churn_now_ns() - start;
        walk w;
        memset(&w, 0, sizeof w);
        w.baseline = 1;
        read_smaps(&w);
        return took;
    }
    /* the program took its number over past libc (fds.c): opened again */
    if (b.fd < 0)
        churn_fd_keep(&b.fd, open("/proc/self/smaps_rollup", O_RDONLY | O_CLOEXEC));
    if (b.fd < 0)
        return 0;
    if (live_bytes > b.live_peak)
        b.live_peak = live_bytes;
    uint64_t anon = anon_bytes(), own = atomic_load(&own_resident);
    uint64_t heap_growth = b.live_peak - b.base_live;
    uint64_t explained = heap_growth + b.base_untouched + margin +
                         (own > b.base_own ? own - b.base_own : 0);
    uint64_t grown = anon > b.base_anon ? anon - b.base_anon : 0;
    uint64_t untraced = grown > explained ? grown - explained : 0;
    atomic_store_explicit(&untraced_now, untraced, memory_order_relaxed);
    b.rising = untraced >= b.last_untraced + STEP_MIN ? b.rising + 1 : 0;
    b.last_untraced = untraced;
    uint64_t took = churn_now_ns() - start;
    if (!atomic_load(&warned) && b.rising >= STEADY_SAMPLES && untraced >= UNTRACED_MIN &&
        untraced > heap_growth)
        warn(untraced, heap_growth, now);
    return took;
}

void churn_blind_check(uint64_t now, uint64_t live_bytes)
{
    /* A sample compares anonymous memory read now with libchurn's own read now: its live
       map grows with the program's live objects (tens of MiB for a python3 keeping millions
       of small ones), and a count left older by a slow refresh would leave that growth
       unexplained. */
    if (now >= own_next_ns || now >= b.next_ns) {
        uint64_t cpu = churn_thread_cpu_ns();
        atomic_store_explicit(&own_resident, churn_os_own_resident(), memory_order_relaxed);
        uint64_t took = churn_thread_cpu_ns() - cpu;
        own_next_ns = now + (took * OWN_SHARE > OWN_NS ? took * OWN_SHARE : OWN_NS);
    }
    if (now < b.next_ns)
        return;
    uint64_t took = sample(now, live_bytes);
    b.next_ns = now + (took * SAMPLE_SHARE > SAMPLE_NS ? took * SAMPLE_SHARE : SAMPLE_NS);
}
