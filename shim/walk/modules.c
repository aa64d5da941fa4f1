/*
 * The module map: every loaded object's path, load bias, executable range and GNU build id,
 * read from the loader with dl_iterate_phdr.  The analyzer symbolizes offline from it and
 * checks build ids, so nothing is resolved in the traced process.  Modules are never removed
 * from the list: stacks recorded before a dlclose still need them.  An unloaded one is marked
 * with how many modules were known when its absence was noticed (the unload itself taking an
 * id, see scan_locked), and every stack with how many were known when it was first seen, so
 * that the analyzer can tell a library from one loaded later at its addresses.
 *
 * A library loaded by a relative path (dlopen("./lib.so")) is known to the loader by that
 * path, which the analyzer, reading the trace elsewhere and later, cannot resolve: the module
 * records the absolute path of the file mapped there, from /proc/self/maps.
 */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

#define MAX_MODULES 4096

static churn_module modules[MAX_MODULES];
static _Atomic size_t nmodules;      /* entries below it are complete */
static unsigned long long seen_adds = ~0ull, seen_subs = ~0ull;
/* The writer scans at each pass and dlclose (unwind.c) before a library goes: one at a time,
   and modules found by either are news for the writer's next look. */
static churn_spinlock scan_lock;
static _Atomic int unseen;
static char exe_path[4096];

uintptr_t churn_self_lo, churn_self_hi;

static void read_build_id(struct dl_phdr_info *info, churn_module *m)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
            const uint8_t *name = p + sizeof *n;
            const uint8_t *desc = name + ((n->n_namesz + 3) & ~3u);
            if (desc + n->n_descsz > end)
                break;
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
                n->n_descsz <= sizeof m->build_id) {
                memcpy(m->build_id, desc, n->n_descsz);
                m->build_id_len = n->n_descsz;
                return;
            }
            p = desc + ((n->n_descsz + 3) & ~3u);
        }
    }
}

static int exec_range(struct dl_phdr_info *info, uint64_t *lo, uint64_t *hi)
{
    *lo = UINT64_MAX;
    *hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uint64_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < *lo)
            *lo = a;
        if (a + ph->p_memsz > *hi)
            *hi = a + ph->p_memsz;
    }
    return *hi > *lo;
}

typedef struct scan {
    int changed;
    uint8_t present[MAX_MODULES / 8];
} scan;

/* Paths are packed into blocks of libchurn's own heap, never freed (modules stay listed): one
   mapping for a process's modules rather than one each, which would be a system call, a page
   fault and one more range for the writer's count of libchurn's resident pages
   (churn_os_own_resident) per module.  Under scan_lock. */
#define PATH_BLOCK (16384u - 16u) /* with churn_mem_alloc's header, four pages */
static char *path_free;
static size_t path_left;

static char *path_space(size_t bytes)
{
    if (bytes > path_left) {
        size_t block = bytes > PATH_BLOCK ? bytes : PATH_BLOCK;
        char *p = churn_mem_alloc(block);
        if (!p)
            return NULL;
        path_free = p;
        path_left = block;
    }
    char *at = path_free;
    path_free += bytes;
    path_left -= bytes;
    return at;
}

/* Kept after the path's NUL (see add_module). */
const char *churn_module_loader_name(const churn_module *m)
{
    return m->path + strlen(m->path) + 1;
}

static int add_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    scan *sc = arg;
    const char *path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : exe_path;
    uint64_t lo, hi;
    if (!exec_range(info, &lo, &hi))
        return 0;
    for (size_t i = 0; i < nmodules; i++)
        if (modules[i].bias == info->dlpi_addr && modules[i].start == lo &&
            !strcmp(churn_module_loader_name(&modules[i]), path) &&
            !atomic_load_explicit(&modules[i].unloaded_at, memory_order_relaxed)) {
            sc->present[i / 8] |= (uint8_t)(1u << (i % 8));
            return 0;
        }
    size_t n = atomic_load_explicit(&nmodules, memory_order_relaxed);
    if (n == MAX_MODULES)
        return 0;
    /* The path the trace records, then the loader's name of the module, which the scans
       match: the same but for a relative one (the vdso's name has no directory at all). */
    char file[4096];
    const char *recorded = path;
    if (path[0] != '/' && strchr(path, '/') && !churn_os_vma_path(lo, file, sizeof file) &&
        file[0] == '/')
        recorded = file;
    size_t rlen = strlen(recorded), len = strlen(path);
    char *copy = path_space(rlen + 1 + len + 1);
    if (!copy)
        return 0;
    memcpy(copy, recorded, rlen + 1);
    memcpy(copy + rlen + 1, path, len + 1);
    churn_module *m = &modules[n];
    memset(m, 0, sizeof *m);
    m->path = copy;
    m->bias = info->dlpi_addr;
    m->start = lo;
    m->end = hi;
    read_build_id(info, m);
    atomic_store_explicit(&nmodules, n + 1, memory_order_release);
    sc->present[n / 8] |= (uint8_t)(1u << (n % 8));
    sc->changed = 1;
    return 0;
}

static int read_counters(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    unsigned long long *c = arg;
    c[0] = info->dlpi_adds;
    c[1] = info->dlpi_subs;
    return 1;
}

static void scan_locked(void)
{
    unsigned long long c[2] = {0, 0};
    dl_iterate_phdr(read_counters, c);
    if (c[0] != seen_adds || c[1] != seen_subs) {
        seen_adds = c[0];
        seen_subs = c[1];
        if (!exe_path[0]) {
            ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
            exe_path[n > 0 ? n : 0] = 0;
        }
        scan sc;
        memset(&sc, 0, sizeof sc);
        dl_iterate_phdr(add_module, &sc);
        /* What the loader no longer lists was unloaded since the previous scan.  The unload
           takes an id of its own, an entry that covers no address, and the unloaded modules
           are marked with the count that includes it: a stack first seen before the unload
           counts fewer modules, one first seen after it as many.  (Without it both count
           the same modules when nothing was loaded in between, and a stack that ran in the
           library would read as one seen after it went.) */
        size_t n = atomic_load_explicit(&nmodules, memory_order_relaxed);
        int gone = 0;
        for (size_t i = 0; i < n && !gone; i++)
            gone = !(sc.present[i / 8] & (1u << (i % 8))) &&
                   !atomic_load_explicit(&modules[i].unloaded_at, memory_order_relaxed);
        size_t marked = n;
        if (gone && n < MAX_MODULES) {
            static char no_path[2]; /* its path, and its loader's name: both empty */
            churn_module *m = &modules[n];
            memset(m, 0, sizeof *m);
            m->path = no_path;
            marked = n + 1;
            atomic_store_explicit(&m->unloaded_at, (uint32_t)marked, memory_order_relaxed);
            atomic_store_explicit(&nmodules, marked, memory_order_release);
        }
        for (size_t i = 0; i < n; i++)
            if (!(sc.present[i / 8] & (1u << (i % 8))) &&
                !atomic_load_explicit(&modules[i].unloaded_at, memory_order_relaxed)) {
                atomic_store_explicit(&modules[i].unloaded_at, (uint32_t)marked,
                                      memory_order_relaxed);
                sc.changed = 1;
            }
        if (sc.changed)
            atomic_store(&unseen, 1);
    }
}

void churn_modules_scan(void)
{
    churn_spin_lock(&scan_lock);
    scan_locked();
    churn_spin_unlock(&scan_lock);
}

int churn_modules_refresh(void)
{
    churn_modules_scan();
    return churn_modules_news();
}

int churn_modules_try_refresh(void)
{
    if (!atomic_exchange_explicit(&scan_lock.held, 1, memory_order_acquire)) {
        scan_locked();
        churn_spin_unlock(&scan_lock);
    }
    return churn_modules_news();
}

int churn_modules_news(void)
{
    return atomic_exchange(&unseen, 0);
}

size_t churn_modules_count(void) { return atomic_load_explicit(&nmodules, memory_order_acquire); }
const churn_module *churn_module_get(size_t id)
{
    return id < churn_modules_count() ? &modules[id] : NULL;
}

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uintptr_t me = (uintptr_t)arg;
    uint64_t lo, hi;
    if (exec_range(info, &lo, &hi) && me >= lo && me < hi) {
        churn_self_lo = lo;
        churn_self_hi = hi;
        return 1;
    }
    return 0;
}

void churn_modules_find_self(void)
{
    dl_iterate_phdr(find_self, (void *)(uintptr_t)churn_modules_find_self);
}
