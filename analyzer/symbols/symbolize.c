/*
 * Offline symbolization with elfutils.  Each file the trace's module map names gets its own
 * Dwfl session, opened the first time an ip falls into a module of it, with the file at its
 * link-time addresses: the trace describes several moments of one process, and a library
 * unloaded and another loaded at the same addresses would collide inside a single Dwfl
 * address space.  Modules of one file (a library loaded again and again, each time a module
 * of its own, or a crafted trace naming one file 4,096 times) share its session, debug info,
 * symbol table and call frame entries, each looking its addresses up less its own bias, and
 * share the symbol cache file of their build id: what is read is bounded by the files, not
 * by the module records.
 *
 * libdw answers "which scopes contain this pc" (dwarf_getscopes) by walking the compile
 * unit's DIE tree from its root, and dwfl_module_addrname scans the whole symbol table, on
 * every call: tens of microseconds per ip in libc, far worse in a large C++ binary.  So the
 * first ip that falls into a compile unit walks that unit once into a sorted index of its
 * functions and inlined calls (dwarfindex.c), and the symbol table is sorted once per
 * module.
 *
 * Opening a module with debug info means inflating its compressed sections (tens of
 * milliseconds for libc), so modules that recorded stacks run through are opened on a
 * thread of their own while the trace is still being analyzed (churn_symbolizer_prefetch).
 * Every other use of elfutils waits until that thread is done, and what it found is
 * reported when the module is first used, as if it had been opened then.
 *
 * What modules with debug info resolve to is kept across runs (symcache.h): a module whose
 * build id has a cache file is not prefetched, its ips come from the file, and it is opened
 * only for an ip the file lacks.
 *
 * A module recorded by a relative path (a program's dlopen("./lib.so") in a trace without
 * the absolute path) cannot be found, since the trace does not say relative to which
 * directory: a warning says so.  A name without a directory is the vdso's, which has no
 * file.
 */
#include "symbols/symbolize.h"
#include "base/util.h"
#include "symbols/debugfile.h"
#include "symbols/dwarfindex.h"
#include "symbols/perfmap.h"
#include "symbols/symcache.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <uthash.h>

/* From the C++ runtime (libstdc++), linked into churn-analyze for demangling. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* Deeper inline chains than this are cut at their innermost frames. */
#define MAX_INLINE_FRAMES 64
#define ARENA_BLOCK_BYTES (64u * 1024u)

typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    max_align_t data[];
} arena_block;

typedef struct interned {
    UT_hash_handle hh;
    char text[];
} interned;

typedef struct elf_symbol {
    uint64_t addr, size;
    const char *name;       /* in the module's string table, alive while its Dwfl is */
    int rank;               /* of aliases, the lowest names the address: global, weak, local */
} elf_symbol;

/* The code range [start, end) one call frame information entry (FDE) describes: one
   function's, or one part's of a function split by the compiler (foo.cold).  Link-time
   addresses of the module's main file. */
typedef struct fde_range {
    uint64_t start, end;
} fde_range;

/* A file on disk, whatever path names it. */
typedef struct image_key {
    dev_t dev;
    ino_t ino;
    off_t size;
    time_t mtime;
    long mtime_ns;
} image_key;
_Static_assert(sizeof(image_key) == 5 * 8, "a key's bytes are hashed: no padding");

/* One file modules name, opened once for all of them at its link-time addresses: a module's
   run-time address less the module's bias is one here (image_addr). */
typedef struct image {
    image_key key;
    UT_hash_handle hh;
    char *path; /* the path of the module that opened it */
    Dwfl *dwfl;
    Dwfl_Module *dwmod;
    bool dwarf_read;          /* its debug info was looked for */
    Dwarf *dwarf;             /* NULL: no debug info */
    char *places;             /* without debug info: where it was looked for */
    char *debug_file;         /* with debug info: the file it is in (its own, or another) */
    bool from_debuginfod;     /* that file came from a debuginfod server */
    char *debuginfod_why;     /* what asking debuginfod for it found, when that failed */
    churn_dwarf_index *index; /* made on the first ip resolved with DWARF */
    elf_symbol *symbols;      /* function symbols by address, built on first use */
    size_t symbol_count;
    bool symbols_built;
    fde_range *fdes; /* call frame information entries by start, built on first use */
    size_t fde_count;
    bool fdes_built;
} image;

/* The frames at each offset of the binary of one build id: read from its symbol cache file
   once for all the modules of that build id, with what they resolved with DWARF, and
   written back once. */
typedef struct cached_offset {
    uint64_t offset;
    UT_hash_handle hh;
    size_t count;
    churn_frame frames[]; /* module fields unset */
} cached_offset;

typedef struct cache_file {
    UT_hash_handle hh; /* by build id */
    uint8_t *build_id;
    size_t build_id_len;
    bool read;  /* the file was looked for */
    bool found; /* and read: its offsets resolve from it, with the debug info they had */
    bool dirty; /* offsets resolved with DWARF that the file lacks */
    cached_offset *offsets;
} cache_file;

enum module_state { MODULE_UNOPENED, MODULE_OPEN, MODULE_UNUSABLE };

typedef struct module {
    uint64_t id, bias, start, end;
    uint64_t unloaded;  /* 0, or the generation at which it was found unloaded */
    char *path;
    uint8_t *build_id;
    size_t build_id_len;
    const char *name;   /* interned basename, what frames report */
    uint64_t order;     /* registration order: the newest of overlapping modules wins */
    enum module_state state;
    image *image;       /* MODULE_OPEN: its file */
    cache_file *cache;  /* NULL: no symbol cache, or no build id */
    bool prefetch;      /* queued for (or done by) the prefetch thread */
    char *open_warning; /* what opening it on that thread found, to report on first use */
    UT_hash_handle hh;  /* by id */
} module;

/* An ip is cached per module it was resolved in: the same address can be in a library that
   was unloaded and in another loaded there later (stacks recorded at different generations). */
typedef struct ip_key {
    uint64_t addr;      /* the looked-up address: ip, or ip - 1 for a return address */
    uint64_t order;     /* of its module; UINT64_MAX outside every module */
} ip_key;

typedef struct cached_ip {
    ip_key key;
    UT_hash_handle hh;
    size_t count;
    churn_frame frames[];
} cached_ip;

struct churn_symbolizer {
    char *cache_dir;    /* NULL: no symbol cache */
    arena_block *arena;
    interned *strings;
    module *modules;    /* by id */
    /* Files opened, by identity: touched only where modules are opened (the prefetch thread
       while it runs, else the analysis's thread), freed with the symbolizer. */
    image *images;
    cache_file *cache_files; /* by build id; the analysis's thread's */
    uint64_t next_order;
    /* Modules sorted by start, with the running maximum of their ends, for lookups that
       must also find an earlier-starting module overlapping a later one. */
    module **by_start;
    uint64_t *max_end;
    size_t by_start_len;
    bool by_start_stale;
    cached_ip *cache;
    churn_codes *codes; /* generated code's names; NULL until the first */
    const char **warnings;
    size_t warning_count, warning_cap;
    /* Modules to open ahead, in order; the thread has opened those before next_prefetch. */
    module **prefetch;
    size_t prefetch_count, prefetch_cap, next_prefetch;
    bool prefetch_closed;
    bool thread_running;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
};

static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p) {
        fputs("churn-analyze: out of memory\n", stderr);
        exit(1);
    }
    return p;
}

/* Doubles a dynamic array's capacity. */
static void *grow(void *array, size_t *cap, size_t elem)
{
    *cap = *cap ? 2 * *cap : 64;
    void *p = realloc(array, *cap * elem);
    if (!p) {
        fputs("churn-analyze: out of memory\n", stderr);
        exit(1);
    }
    return p;
}

static void *arena_alloc(churn_symbolizer *s, size_t n)
{
    size_t align = sizeof(max_align_t);
    n = (n + align - 1) & ~(align - 1);
    arena_block *b = s->arena;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > ARENA_BLOCK_BYTES ? n : ARENA_BLOCK_BYTES;
        b = xmalloc(sizeof *b + cap);
        b->next = s->arena;
        b->used = 0;
        b->cap = cap;
        s->arena = b;
    }
    void *p = (char *)b->data + b->used;
    b->used += n;
    return p;
}

/* Frames of many ips share a handful of file and function names: store each once. */
static const char *intern(churn_symbolizer *s, const char *text)
{
    if (!text)
        return NULL;
    size_t len = strlen(text);
    interned *e;
    HASH_FIND(hh, s->strings, text, len, e);
    if (e)
        return e->text;
    e = arena_alloc(s, sizeof *e + len + 1);
    memcpy(e->text, text, len + 1);
    HASH_ADD_KEYPTR(hh, s->strings, e->text, len, e);
    return e->text;
}

static const char *intern_demangled(churn_symbolizer *s, const char *name)
{
    if (!name || strncmp(name, "_Z", 2) != 0)
        return intern(s, name);
    int status = -1;
    char *plain = __cxa_demangle(name, NULL, NULL, &status);
    const char *r = intern(s, status == 0 && plain ? plain : name);
    free(plain);
    return r;
}

__attribute__((format(printf, 2, 3)))
static void warn(churn_symbolizer *s, const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    const char *text = intern(s, line);
    for (size_t i = 0; i < s->warning_count; i++)
        if (s->warnings[i] == text)
            return;
    if (s->warning_count == s->warning_cap)
        s->warnings = grow(s->warnings, &s->warning_cap, sizeof *s->warnings);
    s->warnings[s->warning_count++] = text;
}

static void prefetch_finish(churn_symbolizer *s);
static void cache_save(churn_symbolizer *s, cache_file *f);

churn_symbolizer *churn_symbolizer_new(void)
{
    churn_symbolizer *s = xmalloc(sizeof *s);
    memset(s, 0, sizeof *s);
    s->cache_dir = churn_symcache_dir();
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->changed, NULL);
    return s;
}

static void image_free(image *img)
{
    churn_dwarf_index_free(img->index);
    free(img->symbols);
    free(img->fdes);
    if (img->dwfl)
        dwfl_end(img->dwfl);
    free(img->places);
    free(img->debug_file);
    free(img->debuginfod_why);
    free(img->path);
    free(img);
}

static void module_free(module *m)
{
    free(m->open_warning);
    free(m->path);
    free(m->build_id);
    free(m);
}

static void cache_clear(churn_symbolizer *s)
{
    cached_ip *c, *tmp;
    HASH_ITER(hh, s->cache, c, tmp) {
        HASH_DEL(s->cache, c);
        free(c);
    }
}

static void cache_files_free(churn_symbolizer *s)
{
    cache_file *f, *tmp;
    HASH_ITER(hh, s->cache_files, f, tmp) {
        if (f->dirty)
            cache_save(s, f);
        cached_offset *o, *next;
        HASH_ITER(hh, f->offsets, o, next) {
            HASH_DEL(f->offsets, o);
            free(o);
        }
        HASH_DEL(s->cache_files, f);
        free(f->build_id);
        free(f);
    }
}

void churn_symbolizer_free(churn_symbolizer *s)
{
    if (!s)
        return;
    prefetch_finish(s);
    churn_codes_free(s->codes);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->changed);
    free(s->prefetch);
    cache_files_free(s);
    cache_clear(s);
    module *m, *tmp;
    HASH_ITER(hh, s->modules, m, tmp) {
        HASH_DEL(s->modules, m);
        module_free(m);
    }
    image *img, *next;
    HASH_ITER(hh, s->images, img, next) {
        HASH_DEL(s->images, img);
        image_free(img);
    }
    HASH_CLEAR(hh, s->strings);
    while (s->arena) {
        arena_block *next = s->arena->next;
        free(s->arena);
        s->arena = next;
    }
    free(s->by_start);
    free(s->max_end);
    free(s->warnings);
    free(s->cache_dir);
    free(s);
}

/* The symbol cache file of a build id, shared by every module of that build id; NULL when
   there is no cache. */
static cache_file *cache_file_of(churn_symbolizer *s, const uint8_t *build_id, size_t len)
{
    if (!s->cache_dir)
        return NULL;
    cache_file *f;
    HASH_FIND(hh, s->cache_files, build_id, len, f);
    if (f)
        return f;
    f = xmalloc(sizeof *f);
    memset(f, 0, sizeof *f);
    f->build_id = xmalloc(len);
    memcpy(f->build_id, build_id, len);
    f->build_id_len = len;
    HASH_ADD_KEYPTR(hh, s->cache_files, f->build_id, len, f);
    return f;
}

static bool module_same(const module *m, const char *path, uint64_t bias, uint64_t start,
                        uint64_t end, const uint8_t *build_id, size_t build_id_len)
{
    return m->bias == bias && m->start == start && m->end == end &&
           strcmp(m->path, path) == 0 && m->build_id_len == build_id_len &&
           (build_id_len == 0 || memcmp(m->build_id, build_id, build_id_len) == 0);
}

void churn_symbolizer_add_module(churn_symbolizer *s, uint64_t id, const char *path,
                                 uint64_t bias, uint64_t start, uint64_t end, uint64_t unloaded,
                                 const uint8_t *build_id, size_t build_id_len)
{
    if (!build_id)
        build_id_len = 0;
    if (!path)
        path = "";
    module *m;
    HASH_FIND(hh, s->modules, &id, sizeof id, m);
    if (m && module_same(m, path, bias, start, end, build_id, build_id_len)) {
        m->unloaded = unloaded;
        return;
    }
    if (m) {
        /* A reused id with new fields (not from libchurn, which never reuses one) replaces
           the old module; what it resolved stays cached under the old module's order. */
        if (m->prefetch)
            prefetch_finish(s);
        HASH_DEL(s->modules, m);
        module_free(m);
    }
    m = xmalloc(sizeof *m);
    memset(m, 0, sizeof *m);
    m->id = id;
    m->bias = bias;
    m->start = start;
    m->end = end;
    size_t path_len = strlen(path);
    m->path = xmalloc(path_len + 1);
    memcpy(m->path, path, path_len + 1);
    if (build_id_len) {
        m->build_id = xmalloc(build_id_len);
        memcpy(m->build_id, build_id, build_id_len);
        m->build_id_len = build_id_len;
        m->cache = cache_file_of(s, build_id, build_id_len);
    }
    const char *slash = strrchr(path, '/');
    m->name = intern(s, slash ? slash + 1 : path);
    m->order = s->next_order++;
    m->unloaded = unloaded;
    m->state = MODULE_UNOPENED;
    HASH_ADD(hh, s->modules, id, sizeof m->id, m);
    s->by_start_stale = true;
}

static int by_start_cmp(const void *a, const void *b)
{
    const module *x = *(module *const *)a, *y = *(module *const *)b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static void by_start_rebuild(churn_symbolizer *s)
{
    size_t n = HASH_COUNT(s->modules);
    free(s->by_start);
    free(s->max_end);
    s->by_start = xmalloc((n ? n : 1) * sizeof *s->by_start);
    s->max_end = xmalloc((n ? n : 1) * sizeof *s->max_end);
    size_t i = 0;
    for (module *m = s->modules; m; m = m->hh.next)
        s->by_start[i++] = m;
    qsort(s->by_start, n, sizeof *s->by_start, by_start_cmp);
    for (i = 0; i < n; i++) {
        uint64_t e = s->by_start[i]->end;
        s->max_end[i] = i && s->max_end[i - 1] > e ? s->max_end[i - 1] : e;
    }
    s->by_start_len = n;
    s->by_start_stale = false;
}

/* Of the modules covering addr that were not unloaded at `generation` (format.h): the newest
   found before it, else the first found after it (the stack was recorded before its module
   was scanned).  With generation UINT64_MAX, the newest. */
static module *module_at(churn_symbolizer *s, uint64_t addr, uint64_t generation)
{
    if (s->by_start_stale)
        by_start_rebuild(s);
    size_t lo = 0, hi = s->by_start_len; /* first module starting after addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->by_start[mid]->start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    module *before = NULL, *after = NULL;
    for (size_t i = lo; i-- > 0 && s->max_end[i] > addr;) {
        module *m = s->by_start[i];
        if (addr >= m->end || (m->unloaded && m->unloaded <= generation))
            continue;
        if (m->id < generation) {
            if (!before || m->id > before->id)
                before = m;
        } else if (!after || m->id < after->id) {
            after = m;
        }
    }
    return before ? before : after;
}

/* Whether a local debug file may exist for file_name: under /usr/lib/debug by build id, or
   by its .gnu_debuglink name (NAME.debug without one) where elfutils' default path looks
   (next to the file, in its .debug directory, under /usr/lib/debug).  When none does, the
   standard lookup would end in elfutils' debuginfod client: with no DEBUGINFOD_URLS it finds
   nothing, but loading it loads some 30 libraries (curl, gnutls, kerberos, ...), 16 M
   instructions of a cold analysis of python3, which has no debug file on Debian by default;
   with DEBUGINFOD_URLS, churn_debugfile_fetch asks instead, and the report says what it
   found. */
/* A candidate that exists but is not a regular file (a FIFO, a device: the debuglink name
   and the directory come from the trace and the module file) makes the whole standard
   lookup be skipped, since it opens its candidates by path and would block on one. */
static int candidate(const char *path)
{
    struct stat st;
    return stat(path, &st) != 0 ? 0 : S_ISREG(st.st_mode) ? 1 : -1;
}

static bool local_debug_file_may_exist(const unsigned char *bits, int len, const char *file_name,
                                       const char *debuglink_file)
{
    char path[4096];
    int found = 0;
    if (len > 1) {
        int n = snprintf(path, sizeof path, "/usr/lib/debug/.build-id/%02x/", bits[0]);
        for (int i = 1; i < len && n < (int)sizeof path - 8; i++)
            n += snprintf(path + n, sizeof path - (size_t)n, "%02x", bits[i]);
        snprintf(path + n, sizeof path - (size_t)n, ".debug");
        if ((found = candidate(path)) < 0)
            return false;
    }
    if (!file_name)
        return found || !debuglink_file; /* no name to look for: the standard lookup decides */
    char own[256];
    if (!debuglink_file) { /* without a .gnu_debuglink, elfutils looks for NAME.debug */
        const char *base = strrchr(file_name, '/');
        snprintf(own, sizeof own, "%s.debug", base ? base + 1 : file_name);
        debuglink_file = own;
    }
    if (debuglink_file[0] == '/') {
        int c = candidate(debuglink_file);
        return c >= 0 && (found || c);
    }
    const char *slash = strrchr(file_name, '/');
    int dir = slash ? (int)(slash - file_name) : 0;
    const char *forms[] = {"%.*s/%s", "%.*s/.debug/%s", "/usr/lib/debug%.*s/%s"};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        snprintf(path, sizeof path, forms[i], dir, file_name, debuglink_file);
        int c = candidate(path);
        if (c < 0)
            return false;
        found |= c;
    }
    return found;
}

/* The standard lookup, except that a debug file found by build id is read from its inflated
   copy (debugfile.h), and one found nowhere here is asked of debuginfod when DEBUGINFOD_URLS
   is set (churn_debugfile_fetch; *userdata is the image, which keeps the answer).  libdwfl
   also asks here for a dwz file (.gnu_debugaltlink), with the link's name and a CRC of 0 (a
   real .gnu_debuglink names the debug file by name and CRC): that lookup, by the dwz file's
   own build id, is left to the standard one, which asks debuginfod itself. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                          Dwarf_Addr base, const char *file_name, const char *debuglink_file,
                          GElf_Word debuglink_crc, char **debuginfo_file_name)
{
    const unsigned char *bits = NULL;
    GElf_Addr vaddr;
    int len = dwfl_module_build_id(mod, &bits, &vaddr);
    int dwz = debuglink_file && debuglink_crc == 0;
    if (!dwz && len > 0) {
        int fd = churn_debugfile_open(bits, (size_t)len, debuginfo_file_name);
        if (fd >= 0)
            return fd;
    }
    const char *urls = getenv("DEBUGINFOD_URLS");
    if ((dwz && urls && *urls) ||
        local_debug_file_may_exist(bits, len, file_name, debuglink_file)) {
        int fd =
            dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name,
                                         debuglink_file, debuglink_crc, debuginfo_file_name);
        if (fd >= 0 || dwz)
            return fd;
    }
    char why[512];
    int fd =
        len > 0 ? churn_debugfile_fetch(bits, (size_t)len, debuginfo_file_name, why, sizeof why)
                : -1;
    image *img = *userdata;
    if (img && fd >= 0)
        img->from_debuginfod = true;
    else if (img && why[0] && !img->debuginfod_why)
        img->debuginfod_why = churn_xstrdup(why);
    return fd;
}

static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = find_debuginfo, /* .gnu_debuglink, /usr/lib/debug */
    .section_address = dwfl_offline_section_address,
};

static bool build_id_matches(const module *m, const image *img)
{
    if (!m->build_id_len)
        return true; /* nothing recorded to compare against */
    const unsigned char *bits;
    GElf_Addr vaddr;
    int len = dwfl_module_build_id(img->dwmod, &bits, &vaddr);
    return len == (int)m->build_id_len && memcmp(bits, m->build_id, m->build_id_len) == 0;
}

/* A line to report (malloc'd). */
__attribute__((format(printf, 1, 2)))
static char *open_problem(const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    char *copy = xmalloc(strlen(line) + 1);
    strcpy(copy, line);
    return copy;
}

/* Where the standard lookup looked for an image's debug file (local_debug_file_may_exist's
   places): "/usr/lib/debug/.build-id/ab/cdef.debug, or NAME.debug in DIR, DIR/.debug,
   /usr/lib/debug/DIR", as far as the file names them. */
static void debug_places(const image *img, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = 0;
    const unsigned char *bits = NULL;
    GElf_Addr vaddr;
    int len = dwfl_module_build_id(img->dwmod, &bits, &vaddr);
    if (len > 1) {
        n += (size_t)snprintf(buf + n, size - n, "/usr/lib/debug/.build-id/%02x/", bits[0]);
        for (int i = 1; i < len && n + 8 < size; i++)
            n += (size_t)snprintf(buf + n, size - n, "%02x", bits[i]);
        if (n + 8 < size)
            n += (size_t)snprintf(buf + n, size - n, ".debug");
    }
    GElf_Addr bias;
    Elf *elf = dwfl_module_getelf(img->dwmod, &bias);
    GElf_Word crc;
    const char *link = elf ? dwelf_elf_gnu_debuglink(elf, &crc) : NULL;
    if (link && n + 1 < size) {
        const char *slash = strrchr(img->path, '/');
        int dir = slash ? (int)(slash - img->path) : 1;
        const char *d = slash ? img->path : ".";
        if (link[0] == '/')
            snprintf(buf + n, size - n, "%s%s", n ? ", or " : "", link);
        else
            snprintf(buf + n, size - n, "%s%s in %.*s, %.*s/.debug, /usr/lib/debug%.*s",
                     n ? ", or " : "", link, dir, d, dir, d, dir, d);
    }
}

/* The image of the file open at fd (path names it), opened with the first module that names
   it; fd is the image's or closed.  NULL, with *why, when libdwfl cannot read it. */
static image *image_get(churn_symbolizer *s, int fd, const char *path, char **why)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        *why = open_problem("module %s: %s; not symbolized", path, strerror(errno));
        close(fd);
        return NULL;
    }
    image_key key;
    memset(&key, 0, sizeof key);
    key.dev = st.st_dev;
    key.ino = st.st_ino;
    key.size = st.st_size;
    key.mtime = st.st_mtim.tv_sec;
    key.mtime_ns = st.st_mtim.tv_nsec;
    image *img;
    HASH_FIND(hh, s->images, &key, sizeof key, img);
    if (img) {
        close(fd);
        return img;
    }
    img = xmalloc(sizeof *img);
    memset(img, 0, sizeof *img);
    img->key = key;
    size_t len = strlen(path);
    img->path = xmalloc(len + 1);
    memcpy(img->path, path, len + 1);
    img->dwfl = dwfl_begin(&offline_callbacks);
    if (img->dwfl) {
        dwfl_report_begin(img->dwfl);
        /* At address 0 with add_p_vaddr: the session's addresses are the file's link-time
           ones.  On success the module owns fd; on failure it is still ours. */
        const char *slash = strrchr(path, '/');
        img->dwmod = dwfl_report_elf(img->dwfl, slash ? slash + 1 : path, path, fd, 0, true);
        dwfl_report_end(img->dwfl, NULL, NULL);
    }
    if (img->dwmod) {
        void **userdata;
        dwfl_module_info(img->dwmod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
        *userdata = img; /* for find_debuginfo */
    }
    if (!img->dwmod) {
        *why = open_problem("module %s: %s; not symbolized", path, dwfl_errmsg(-1));
        close(fd);
        image_free(img);
        return NULL;
    }
    HASH_ADD(hh, s->images, key, sizeof img->key, img);
    return img;
}

/* Reads an image's debug info, the first time a module of its build id is opened. */
static void image_dwarf(image *img)
{
    if (img->dwarf_read)
        return;
    img->dwarf_read = true;
    Dwarf_Addr dwarf_bias;
    img->dwarf = dwfl_module_getdwarf(img->dwmod, &dwarf_bias);
    if (!img->dwarf) {
        char places[1024];
        debug_places(img, places, sizeof places);
        img->places = open_problem("%s", places[0] ? places : "no debug file: it names none");
        return;
    }
    const char *main_file, *debug_file;
    dwfl_module_info(img->dwmod, NULL, NULL, NULL, NULL, NULL, &main_file, &debug_file);
    img->debug_file = churn_xstrdup(debug_file  ? debug_file
                                    : main_file ? main_file
                                                : img->path);
}

/* Opens a module's file (on either thread, see the images' comment), setting its state;
   returns NULL or a line to report. */
static char *module_load(churn_symbolizer *s, module *m)
{
    m->state = MODULE_UNUSABLE;
    if (m->path[0] != '/')
        return strchr(m->path, '/')
                   ? open_problem("module %s: recorded by a relative path, and the trace does "
                                  "not say relative to which directory; not symbolized",
                                  m->path)
                   : NULL; /* the vdso, an unload's own entry: no file */
    /* The path comes from the trace: a FIFO or a device there must not block or be read,
       so the file is opened here and libdwfl gets the descriptor. */
    int fd = churn_open_regular(m->path);
    if (fd < 0)
        return open_problem("module %s: %s; not symbolized", m->path,
                            errno == EINVAL ? "not a regular file" : strerror(errno));
    char *why = NULL;
    image *img = image_get(s, fd, m->path, &why);
    if (!img)
        return why;
    if (!build_id_matches(m, img))
        return open_problem("module %s: build id differs from the traced binary (rebuilt?); "
                            "not symbolized", m->path);
    image_dwarf(img);
    m->image = img;
    m->state = MODULE_OPEN;
    if (!img->dwarf)
        return open_problem("module %s: no debug info (looked for %s%s%s); function names from "
                            "its symbol table, no file:line",
                            m->path, img->places, img->debuginfod_why ? "; " : "",
                            img->debuginfod_why ? img->debuginfod_why : "");
    return NULL;
}

/* Opens a module the first time one of its ips is resolved, never again after. */
static bool module_open(churn_symbolizer *s, module *m)
{
    if (m->state == MODULE_UNOPENED && !m->prefetch)
        m->open_warning = module_load(s, m);
    if (m->open_warning) {
        warn(s, "%s", m->open_warning);
        free(m->open_warning);
        m->open_warning = NULL;
    }
    return m->state == MODULE_OPEN;
}

/* Where a run-time address of module m is in its image. */
static uint64_t image_addr(const module *m, uint64_t addr)
{
    return addr - m->bias;
}

static const char *intern_for_index(void *ctx, const char *text, int demangle)
{
    return demangle ? intern_demangled(ctx, text) : intern(ctx, text);
}

/* addr: an address of the image, as are those of every function below that takes one. */
static size_t dwarf_frames(churn_symbolizer *s, image *img, uint64_t addr, churn_frame *out,
                           size_t max)
{
    if (!img->dwarf)
        return 0;
    if (!img->index)
        img->index = churn_dwarf_index_new(intern_for_index, s);
    return churn_dwarf_index_frames(img->index, img->dwmod, addr, out, max);
}

static int symbol_cmp(const void *a, const void *b)
{
    const elf_symbol *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->size > y->size ? -1 : x->size < y->size;
}

/* Reading the symbol table brought its pages into RSS (16 MiB of workerd's), and the copy
   above is all that is read of it again.  Reclaiming them (MADV_PAGEOUT) loses nothing: a page
   libelf holds in memory of its own (a decompressed section) stays, a page of the file is
   read from it again if it is ever needed; where the kernel cannot, they just stay. */
static void release_symtab_pages(image *img)
{
    GElf_Addr bias;
    Elf *elf = dwfl_module_getelf(img->dwmod, &bias);
    Elf_Scn *scn = NULL;
    while (elf && (scn = elf_nextscn(elf, scn))) {
        GElf_Shdr shdr;
        if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_SYMTAB)
            continue;
        Elf_Data *data = elf_getdata(scn, NULL);
        if (!data || !data->d_buf || !data->d_size)
            return;
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        uintptr_t from = (uintptr_t)data->d_buf & ~(page - 1);
        uintptr_t to = ((uintptr_t)data->d_buf + data->d_size + page - 1) & ~(page - 1);
        madvise((void *)from, to - from, MADV_PAGEOUT);
        return;
    }
}

static void symbols_build(image *img)
{
    img->symbols_built = true;
    int count = dwfl_module_getsymtab(img->dwmod);
    if (count <= 1)
        return;
    img->symbols = xmalloc((size_t)count * sizeof *img->symbols);
    size_t n = 0;
    for (int i = 1; i < count; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        const char *name =
            dwfl_module_getsym_info(img->dwmod, i, &sym, &addr, &shndx, NULL, NULL);
        int type = GELF_ST_TYPE(sym.st_info);
        /* st_name 0 is the empty name; reading the names themselves would bring the whole
           string table (37 MiB in workerd) into RSS, when only the symbols a report shows
           are ever read */
        if (!name || !sym.st_name || (type != STT_FUNC && type != STT_GNU_IFUNC) ||
            shndx == SHN_UNDEF || shndx == (GElf_Word)-1)
            continue;
        int bind = GELF_ST_BIND(sym.st_info);
        int rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
        img->symbols[n++] = (elf_symbol){addr, sym.st_size, name, rank};
    }
    release_symtab_pages(img);
    qsort(img->symbols, n, sizeof *img->symbols, symbol_cmp);
    size_t kept = 0; /* one symbol per address */
    for (size_t i = 0; i < n; i++)
        if (kept == 0 || img->symbols[kept - 1].addr != img->symbols[i].addr)
            img->symbols[kept++] = img->symbols[i];
    img->symbol_count = kept;
}

/* Call frame information names where each function of the module starts even where no
   symbol does (a stripped library's internal functions): an FDE covers [initial_location,
   + address_range).  libdw frames the entries (dwarf_next_cfi) but hands out only the
   encoded fields of an FDE, and dwarf_cfi_addrframe's range is that of one row of the
   unwind table, not the FDE's: the two fields are decoded here with the pointer encoding
   the FDE's CIE names ('R' in its augmentation; .debug_frame: absolute, address-sized). */
typedef struct cie_encoding {
    uint64_t offset;
    int encoding; /* DW_EH_PE_*; -1: one this reader does not decode */
} cie_encoding;

typedef struct cfi_reader {
    const uint8_t *p, *end;
    bool big_endian;
    unsigned address_size;
} cfi_reader;

static bool read_fixed(cfi_reader *r, unsigned size, uint64_t *out)
{
    if ((size_t)(r->end - r->p) < size)
        return false;
    uint64_t v = 0;
    for (unsigned i = 0; i < size; i++)
        v |= (uint64_t)r->p[r->big_endian ? size - 1 - i : i] << (8 * i);
    r->p += size;
    *out = v;
    return true;
}

static bool read_leb(cfi_reader *r, bool is_signed, uint64_t *out)
{
    uint64_t v = 0;
    unsigned shift = 0;
    for (;;) {
        if (r->p >= r->end || shift >= 64)
            return false;
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80)) {
            if (is_signed && shift < 64 && (b & 0x40))
                v |= ~(uint64_t)0 << shift;
            *out = v;
            return true;
        }
    }
}

/* One value of a DW_EH_PE encoding; field_addr: the link-time address of its first byte
   (for pcrel).  Only absolute and pc-relative values are decoded. */
static bool read_encoded(cfi_reader *r, int encoding, uint64_t field_addr, uint64_t *out)
{
    if (encoding < 0 || encoding == DW_EH_PE_omit)
        return false;
    uint64_t v;
    bool ok;
    switch (encoding & 0x0f) {
    case DW_EH_PE_absptr: ok = read_fixed(r, r->address_size, &v); break;
    case DW_EH_PE_uleb128: ok = read_leb(r, false, &v); break;
    case DW_EH_PE_udata2: ok = read_fixed(r, 2, &v); break;
    case DW_EH_PE_udata4: ok = read_fixed(r, 4, &v); break;
    case DW_EH_PE_udata8: ok = read_fixed(r, 8, &v); break;
    case DW_EH_PE_sleb128: ok = read_leb(r, true, &v); break;
    case DW_EH_PE_sdata2: ok = read_fixed(r, 2, &v), v = (uint64_t)(int64_t)(int16_t)v; break;
    case DW_EH_PE_sdata4: ok = read_fixed(r, 4, &v), v = (uint64_t)(int64_t)(int32_t)v; break;
    case DW_EH_PE_sdata8: ok = read_fixed(r, 8, &v); break;
    default: return false;
    }
    if (!ok)
        return false;
    switch (encoding & 0x70) {
    case DW_EH_PE_absptr: break;
    case DW_EH_PE_pcrel: v += field_addr; break;
    default: return false;
    }
    if (r->address_size == 4)
        v &= 0xffffffffu;
    *out = v;
    return true;
}

/* The FDE pointer encoding of a CIE: 'R' of its augmentation ("zR", "zPLR", ...). */
static int cie_fde_encoding(const Dwarf_CIE *cie, bool eh_frame, cfi_reader base)
{
    if (!eh_frame)
        return DW_EH_PE_absptr;
    const char *aug = cie->augmentation;
    if (!aug || aug[0] != 'z')
        return aug && !aug[0] ? DW_EH_PE_absptr : -1;
    cfi_reader r = base;
    r.p = cie->augmentation_data;
    r.end = r.p + cie->augmentation_data_size;
    if (!r.p)
        return -1;
    for (const char *a = aug + 1; *a; a++) {
        if (r.p >= r.end && *a != 'S')
            return -1;
        if (*a == 'R')
            return *r.p;
        if (*a == 'L') {
            r.p++;
        } else if (*a == 'P') {
            int enc = *r.p++;
            uint64_t ignored;
            /* the personality routine's address: only its size matters here */
            if (!read_encoded(&r, enc & 0x7f, 0, &ignored))
                return -1;
        } else if (*a != 'S' && *a != 'B') {
            return -1;
        }
    }
    return DW_EH_PE_absptr;
}

static int fde_cmp(const void *a, const void *b)
{
    const fde_range *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static int cie_cmp(const void *a, const void *b)
{
    const cie_encoding *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Adds the FDEs of one CFI section to img->fdes; returns how many it added. */
static size_t fdes_of_section(image *img, Elf *elf, Elf_Scn *scn, bool eh_frame, size_t *cap)
{
    GElf_Shdr shdr;
    Elf_Data *data = gelf_getshdr(scn, &shdr) ? elf_getdata(scn, NULL) : NULL;
    if (!data || !data->d_buf || shdr.sh_type == SHT_NOBITS)
        return 0;
    const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
    if (!ident)
        return 0;
    cfi_reader base = {NULL, NULL, ident[EI_DATA] == ELFDATA2MSB,
                       ident[EI_CLASS] == ELFCLASS32 ? 4u : 8u};
    cie_encoding *cies = NULL;
    size_t ncies = 0, cies_cap = 0;
    /* CIEs first: an FDE may name a CIE that comes after it */
    for (int pass = 0; pass < 2; pass++) {
        Dwarf_Off off = 0, next;
        Dwarf_CFI_Entry e;
        int rc;
        while ((rc = dwarf_next_cfi(ident, data, eh_frame, off, &next, &e)) != 1) {
            if (rc < 0) {
                if (next == (Dwarf_Off)-1 || next <= off)
                    break;
                off = next;
                continue;
            }
            if (dwarf_cfi_cie_p(&e)) {
                if (pass == 0) {
                    if (ncies == cies_cap)
                        cies = grow(cies, &cies_cap, sizeof *cies);
                    cies[ncies++] = (cie_encoding){off, cie_fde_encoding(&e.cie, eh_frame, base)};
                }
            } else if (pass == 1) {
                cie_encoding key = {e.fde.CIE_pointer, 0};
                cie_encoding *c = bsearch(&key, cies, ncies, sizeof *cies, cie_cmp);
                cfi_reader r = base;
                r.p = e.fde.start;
                r.end = (const uint8_t *)data->d_buf + data->d_size;
                uint64_t start, range;
                uint64_t field = shdr.sh_addr + (uint64_t)(e.fde.start - (const uint8_t *)data->d_buf);
                if (c && read_encoded(&r, c->encoding, field, &start) &&
                    read_encoded(&r, c->encoding & 0x0f, 0, &range) && range) {
                    if (img->fde_count == *cap)
                        img->fdes = grow(img->fdes, cap, sizeof *img->fdes);
                    img->fdes[img->fde_count++] = (fde_range){start, start + range};
                }
            }
            off = next;
        }
        if (pass == 0)
            qsort(cies, ncies, sizeof *cies, cie_cmp);
    }
    free(cies);
    return img->fde_count;
}

/* .eh_frame, else .debug_frame, of the image's main file. */
static void fdes_build(image *img)
{
    img->fdes_built = true;
    GElf_Addr bias;
    Elf *elf = dwfl_module_getelf(img->dwmod, &bias);
    size_t shstrndx, cap = 0;
    if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
        return;
    for (int eh = 1; eh >= 0 && !img->fde_count; eh--) {
        Elf_Scn *scn = NULL;
        while ((scn = elf_nextscn(elf, scn))) {
            GElf_Shdr shdr;
            const char *name = gelf_getshdr(scn, &shdr) ? elf_strptr(elf, shstrndx, shdr.sh_name) : NULL;
            if (name && !strcmp(name, eh ? ".eh_frame" : ".debug_frame")) {
                fdes_of_section(img, elf, scn, eh, &cap);
                break;
            }
        }
    }
    qsort(img->fdes, img->fde_count, sizeof *img->fdes, fde_cmp);
}

/* The FDE covering addr, or NULL. */
static const fde_range *fde_at(image *img, uint64_t addr)
{
    if (!img->fdes_built)
        fdes_build(img);
    GElf_Addr bias;
    if (!img->fde_count || !dwfl_module_getelf(img->dwmod, &bias) || addr < bias)
        return NULL;
    uint64_t a = addr - bias;
    size_t lo = 0, hi = img->fde_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (img->fdes[mid].start <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo && a < img->fdes[lo - 1].end ? &img->fdes[lo - 1] : NULL;
}

/* The start of the function holding addr, by its FDE; 0: none. */
static uint64_t function_start(image *img, uint64_t addr)
{
    const fde_range *f = fde_at(img, addr);
    GElf_Addr bias;
    return f && dwfl_module_getelf(img->dwmod, &bias) ? f->start + bias : 0;
}

static const char *symbol_name(image *img, uint64_t addr)
{
    if (!img->symbols_built)
        symbols_build(img);
    size_t lo = 0, hi = img->symbol_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (img->symbols[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const elf_symbol *sym = &img->symbols[lo - 1];
    if (sym->size)
        return addr < sym->addr + sym->size ? sym->name : NULL;
    /* A sizeless symbol (hand-written assembly) is taken to reach the next one, unless a
       function the call frame information knows starts after it and before addr. */
    uint64_t start = function_start(img, addr);
    return start > sym->addr ? NULL : sym->name;
}

/* Whether a compile unit's own address ranges hold addr.  libdwfl finds the line of an
   address outside every unit (startup code from crt1.o, say) in a unit whose overall span
   merely encloses it, and would print a line of unrelated code. */
static bool unit_covers(image *img, uint64_t addr)
{
    Dwarf_Addr bias;
    Dwarf_Die *cudie = dwfl_module_addrdie(img->dwmod, addr, &bias);
    if (!cudie)
        return false;
    Dwarf_Addr base, lo, hi;
    for (ptrdiff_t off = 0; (off = dwarf_ranges(cudie, off, &base, &lo, &hi)) > 0;)
        if (addr - bias >= lo && addr - bias < hi)
            return true;
    return false;
}

/* Without a DWARF function for addr: the ELF symbol table names the function, and the line
   table still gives file:line when addr lies inside a unit (assembly sources have lines but
   no functions). */
static void symtab_frame(churn_symbolizer *s, image *img, uint64_t addr, churn_frame *f)
{
    f->function = intern_demangled(s, symbol_name(img, addr));
    Dwfl_Line *dl =
        img->dwarf && unit_covers(img, addr) ? dwfl_module_getsrc(img->dwmod, addr) : NULL;
    int line = 0;
    if (dl)
        f->file = intern(s, dwfl_lineinfo(dl, NULL, &line, NULL, NULL, NULL));
    f->line = line > 0 ? (unsigned)line : 0;
}

/* Keeps frames (module fields unset) as those of offset in f, unless it has them. */
static void cache_offset(cache_file *f, uint64_t offset, const churn_frame *frames, size_t n)
{
    cached_offset *o;
    HASH_FIND(hh, f->offsets, &offset, sizeof offset, o);
    if (o)
        return;
    o = xmalloc(sizeof *o + n * sizeof o->frames[0]);
    o->offset = offset;
    o->count = n;
    memcpy(o->frames, frames, n * sizeof frames[0]);
    HASH_ADD(hh, f->offsets, offset, sizeof o->offset, o);
}

typedef struct cache_loading {
    churn_symbolizer *s;
    cache_file *f;
} cache_loading;

static void cache_entry(void *ctx, uint64_t offset, const churn_frame *frames, size_t n)
{
    cache_loading *l = ctx;
    churn_frame kept[MAX_INLINE_FRAMES];
    if (n > MAX_INLINE_FRAMES)
        n = MAX_INLINE_FRAMES;
    for (size_t i = 0; i < n; i++) {
        kept[i] = frames[i];
        kept[i].function = intern(l->s, frames[i].function);
        kept[i].file = intern(l->s, frames[i].file);
    }
    cache_offset(l->f, offset, kept, n);
}

/* Once per build id: what earlier runs resolved in a binary of it. */
static void cache_read(churn_symbolizer *s, cache_file *f)
{
    f->read = true;
    cache_loading l = {s, f};
    f->found = churn_symcache_load(s->cache_dir, f->build_id, f->build_id_len, cache_entry, &l);
}

static void cache_save(churn_symbolizer *s, cache_file *f)
{
    size_t n = HASH_COUNT(f->offsets), i = 0;
    churn_symcache_item *items = xmalloc((n ? n : 1) * sizeof *items);
    for (cached_offset *o = f->offsets; o; o = o->hh.next)
        items[i++] = (churn_symcache_item){o->offset, o->frames, o->count};
    churn_symcache_save(s->cache_dir, f->build_id, f->build_id_len, items, n);
    free(items);
}

/* Caches the frames of addr in module m (NULL: outside every module), filling in the
   module's fields. */
static cached_ip *cache_ip(churn_symbolizer *s, uint64_t addr, module *m,
                           const churn_frame *frames, size_t n)
{
    cached_ip *c = xmalloc(sizeof *c + n * sizeof c->frames[0]);
    c->key = (ip_key){addr, m ? m->order : UINT64_MAX};
    c->count = n;
    for (size_t i = 0; i < n; i++) {
        c->frames[i] = frames[i];
        c->frames[i].module = m ? m->name : NULL;
        c->frames[i].module_id = m ? m->id : 0;
        c->frames[i].bias = m ? m->bias : 0;
    }
    HASH_ADD(hh, s->cache, key, sizeof c->key, c);
    return c;
}

/* addr's frames from the symbol cache file of its module's build id, or NULL. */
static cached_ip *resolve_from_file(churn_symbolizer *s, uint64_t addr, module *m)
{
    if (!m || !m->cache)
        return NULL;
    if (!m->cache->read)
        cache_read(s, m->cache);
    uint64_t offset = addr - m->bias;
    cached_offset *o;
    HASH_FIND(hh, m->cache->offsets, &offset, sizeof offset, o);
    return o ? cache_ip(s, addr, m, o->frames, o->count) : NULL;
}

static cached_ip *resolve_uncached(churn_symbolizer *s, uint64_t addr, module *m)
{
    churn_frame frames[MAX_INLINE_FRAMES];
    memset(frames, 0, sizeof frames);
    size_t n = 0;
    if (m && module_open(s, m)) {
        image *img = m->image;
        uint64_t a = image_addr(m, addr);
        n = dwarf_frames(s, img, a, frames, MAX_INLINE_FRAMES);
        if (n == 0 || !frames[n - 1].function) {
            /* No DWARF, or a subprogram DIE without a name: ask the symbol table. */
            churn_frame f = {0};
            symtab_frame(s, img, a, &f);
            if (n == 0)
                frames[n++] = f;
            else
                frames[n - 1].function = f.function;
        }
        /* Nothing names it: its function is still known by where it starts (an address of
           the image, at the offset from the module's bias it has in the module). */
        if (!frames[n - 1].function)
            frames[n - 1].entry = function_start(img, a);
        if (img->dwarf && m->cache) {
            cache_offset(m->cache, addr - m->bias, frames, n);
            m->cache->dirty = true;
        }
    }
    if (n == 0)
        n = 1; /* outside every module, or a module that cannot be read */
    return cache_ip(s, addr, m, frames, n);
}

/* The analysis does not wait for this thread, and its other threads do: on a busy machine
   they go first. */
#define PREFETCH_NICE 5

static void *prefetch_thread(void *arg)
{
    churn_symbolizer *s = arg;
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), PREFETCH_NICE);
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (s->next_prefetch == s->prefetch_count && !s->prefetch_closed)
            pthread_cond_wait(&s->changed, &s->lock);
        if (s->next_prefetch == s->prefetch_count)
            break;
        module *m = s->prefetch[s->next_prefetch];
        pthread_mutex_unlock(&s->lock);
        m->open_warning = module_load(s, m);
        /* without DWARF, the symbol table names every function of the module */
        if (m->state == MODULE_OPEN && !m->image->dwarf && !m->image->symbols_built)
            symbols_build(m->image);
        pthread_mutex_lock(&s->lock);
        s->next_prefetch++;
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

void churn_symbolizer_prefetch(churn_symbolizer *s, uint64_t id)
{
    module *m;
    HASH_FIND(hh, s->modules, &id, sizeof id, m);
    if (s->prefetch_closed || !m || m->prefetch || m->state != MODULE_UNOPENED)
        return;
    if (m->cache && !m->cache->read)
        cache_read(s, m->cache);
    if (m->cache && m->cache->offsets)
        return; /* opened only if the cache lacks an ip */
    if (!s->thread_running) {
        if (pthread_create(&s->thread, NULL, prefetch_thread, s) != 0)
            return; /* the module is opened when first used, as without prefetching */
        s->thread_running = true;
    }
    m->prefetch = true;
    pthread_mutex_lock(&s->lock);
    if (s->prefetch_count == s->prefetch_cap)
        s->prefetch = grow(s->prefetch, &s->prefetch_cap, sizeof *s->prefetch);
    s->prefetch[s->prefetch_count++] = m;
    pthread_cond_signal(&s->changed);
    pthread_mutex_unlock(&s->lock);
}

/* Waits for the modules queued so far and ends prefetching: from here on one thread uses
   elfutils. */
static void prefetch_finish(churn_symbolizer *s)
{
    pthread_mutex_lock(&s->lock);
    s->prefetch_closed = true;
    pthread_cond_signal(&s->changed);
    pthread_mutex_unlock(&s->lock);
    if (s->thread_running)
        pthread_join(s->thread, NULL);
    s->thread_running = false;
}

void churn_symbolizer_settle(churn_symbolizer *s)
{
    if (!s->prefetch_closed)
        prefetch_finish(s);
}

size_t churn_symbolizer_resolve(churn_symbolizer *s, uint64_t ip, int is_return_address,
                                uint64_t generation, churn_frame *out, size_t max)
{
    if (!s->prefetch_closed)
        prefetch_finish(s);
    if (max == 0)
        return 0;
    /* A return address points after the call, possibly at the next line or function. */
    uint64_t addr = is_return_address && ip ? ip - 1 : ip;
    module *m = module_at(s, addr, generation);
    if (!m && churn_codes_frame(s->codes, addr, out))
        return 1;
    ip_key key = {addr, m ? m->order : UINT64_MAX};
    cached_ip *c;
    HASH_FIND(hh, s->cache, &key, sizeof key, c);
    if (!c)
        c = resolve_from_file(s, addr, m);
    if (!c)
        c = resolve_uncached(s, addr, m);
    size_t n = c->count < max ? c->count : max;
    memcpy(out, c->frames, n * sizeof out[0]);
    return n;
}

void churn_symbolizer_add_code(churn_symbolizer *s, uint64_t start, uint64_t size,
                               const char *name)
{
    if (!s->codes)
        s->codes = churn_codes_new();
    churn_codes_add(s->codes, start, size, name);
}

void churn_symbolizer_add_py_code(churn_symbolizer *s, uint64_t id, const char *name)
{
    if (!s->codes)
        s->codes = churn_codes_new();
    churn_codes_add_py(s->codes, id, name);
}

size_t churn_symbolizer_function_code(churn_symbolizer *s, uint64_t ip, uint64_t generation,
                                      uint64_t *start, uint8_t *buf, size_t len)
{
    if (!s->prefetch_closed)
        prefetch_finish(s);
    module *m = module_at(s, ip, generation);
    const fde_range *f = m && module_open(s, m) ? fde_at(m->image, image_addr(m, ip)) : NULL;
    GElf_Addr bias;
    if (!f || !dwfl_module_getelf(m->image->dwmod, &bias))
        return 0;
    *start = f->start + bias + m->bias; /* the image's address, then the module's */
    size_t want = f->end - f->start < len ? (size_t)(f->end - f->start) : len;
    return churn_symbolizer_code(s, *start, generation, buf, want);
}

size_t churn_symbolizer_warnings(churn_symbolizer *s, const char *const **lines)
{
    *lines = (const char *const *)s->warnings;
    return s->warning_count;
}

size_t churn_symbolizer_code(churn_symbolizer *s, uint64_t ip, uint64_t generation,
                             uint8_t *buf, size_t len)
{
    if (!s->prefetch_closed)
        prefetch_finish(s);
    module *m = module_at(s, ip, generation);
    if (!m || !module_open(s, m))
        return 0;
    Dwarf_Addr address = image_addr(m, ip), bias;
    Elf_Scn *scn = dwfl_module_address_section(m->image->dwmod, &address, &bias);
    Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
    if (!data || !data->d_buf || address >= data->d_size)
        return 0;
    size_t n = data->d_size - address < len ? data->d_size - address : len;
    memcpy(buf, (const uint8_t *)data->d_buf + address, n);
    return n;
}

static int debug_info_by_id(const void *a, const void *b)
{
    const churn_module_debug *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* By path; of one path's modules, an opened one before one read from the symbol cache, then
   the first registered: the row kept for the path. */
static int debug_info_by_path(const void *a, const void *b)
{
    const churn_module_debug *x = a, *y = b;
    int c = strcmp(x->path, y->path);
    if (c)
        return c;
    int xc = x->from == CHURN_DEBUG_FROM_CACHE, yc = y->from == CHURN_DEBUG_FROM_CACHE;
    return xc != yc ? xc - yc : debug_info_by_id(a, b);
}

churn_module_debug *churn_symbolizer_debug_info(churn_symbolizer *s, size_t *n)
{
    if (!s->prefetch_closed)
        prefetch_finish(s);
    churn_module_debug *out = xmalloc((HASH_COUNT(s->modules) + 1) * sizeof *out);
    size_t count = 0;
    for (module *m = s->modules; m; m = m->hh.next) {
        bool open = m->state == MODULE_OPEN;
        if (m->path[0] != '/' || (!open && !(m->cache && m->cache->found)))
            continue;
        const image *img = open ? m->image : NULL;
        churn_module_debug *d = &out[count++];
        d->id = m->id;
        d->path = m->path;
        d->debug_file = img ? img->debug_file : NULL;
        d->from = !img                   ? CHURN_DEBUG_FROM_CACHE
                  : !img->debug_file     ? CHURN_DEBUG_NONE
                  : img->from_debuginfod ? CHURN_DEBUG_FROM_DEBUGINFOD
                                         : CHURN_DEBUG_FROM_FILE;
    }
    /* Records naming one file (a library loaded again and again) are one row. */
    qsort(out, count, sizeof *out, debug_info_by_path);
    *n = 0;
    for (size_t i = 0; i < count; i++)
        if (!*n || strcmp(out[*n - 1].path, out[i].path))
            out[(*n)++] = out[i];
    qsort(out, *n, sizeof *out, debug_info_by_id);
    return out;
}
