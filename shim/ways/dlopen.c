/*
 * dlopen(..., RTLD_DEEPBIND): the library and the dependencies that call loads look symbols
 * up in their own tree first, so their malloc and free bind to libc's and skip libchurn,
 * while what libc or libstdc++ allocate for them (strdup, operator new) still comes through
 * libchurn: their frees are missed and their objects look leaked.
 *
 * Dropping the flag would let the library's other symbols bind to the program's definitions,
 * which is what the flag was there to prevent.  So the flag is kept and, once the library is
 * loaded, each of its allocator bindings that resolved (or, lazily, would resolve) to the very
 * function libchurn forwards to is pointed at libchurn's instead: the call ends in the same
 * function as before, traced, and nothing is said.  A binding to another allocator (the
 * library's own) is left alone and named on stderr.  What the library's constructors
 * allocated during the dlopen is not traced (it ran before the rewrite); its later frees
 * count as frees of unknown objects.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ways/cxx_ops.h"
#include "shim.h"
#include "ways/way.h"

#define NAME(sym, ...) #sym,
static const char *const names[] = {
    "malloc", "free", "calloc", "realloc", "reallocarray", "memalign", "posix_memalign",
    "aligned_alloc", "valloc", "pvalloc", "malloc_usable_size",
    CHURN_CXX_NEWS(NAME) CHURN_CXX_DELETES(NAME)};
#undef NAME
#define NNAMES (sizeof names / sizeof *names)

#define MAX_OBJECTS 64

typedef struct {
    void *ours[NNAMES], *next[NNAMES], *local[NNAMES];
    uintptr_t bases[MAX_OBJECTS];
    const char *paths[MAX_OBJECTS];
    size_t nobjects;
    uintptr_t page;
    unsigned redirected, foreign;
    const char *foreign_name, *foreign_object;
} rebind;

static int lookup(const char *name)
{
    for (size_t i = 0; i < NNAMES; i++)
        if (!strcmp(names[i], name))
            return (int)i;
    return -1;
}

static uintptr_t dyn_ptr(uintptr_t base, ElfW(Addr) v)
{
    /* glibc relocates these entries in place on x86-64; a vDSO-like object would not */
    return v < base ? base + v : v;
}

#if defined(__x86_64__)
static void rebind_relocs(rebind *rb, struct dl_phdr_info *info, const ElfW(Rela) *rel,
                          size_t n, const ElfW(Sym) *symtab, const char *strtab, uintptr_t lo,
                          uintptr_t hi, uintptr_t relro_lo, uintptr_t relro_hi)
{
    for (size_t k = 0; k < n; k++) {
        unsigned type = ELF64_R_TYPE(rel[k].r_info), sym = ELF64_R_SYM(rel[k].r_info);
        if (!sym || (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT &&
                     !(type == R_X86_64_64 && rel[k].r_addend == 0)))
            continue;
        int i = lookup(strtab + symtab[sym].st_name);
        if (i < 0 || !rb->ours[i] || !rb->next[i] || rb->ours[i] == rb->next[i])
            continue;
        void **slot = (void **)(info->dlpi_addr + rel[k].r_offset);
        uintptr_t now = (uintptr_t)*slot;
        int lazy = type == R_X86_64_JUMP_SLOT && now >= lo && now < hi;
        if (*slot == rb->ours[i])
            continue;
        if (*slot != rb->next[i] && !(lazy && rb->local[i] == rb->next[i])) {
            if (!rb->foreign++) {
                rb->foreign_name = names[i];
                rb->foreign_object = info->dlpi_name;
            }
            continue;
        }
        uintptr_t page = (uintptr_t)slot & ~(rb->page - 1);
        int ro = (uintptr_t)slot >= relro_lo && (uintptr_t)slot < relro_hi;
        if (ro && syscall(SYS_mprotect, page, rb->page, PROT_READ | PROT_WRITE))
            continue;
        __atomic_store_n(slot, rb->ours[i], __ATOMIC_RELEASE);
        if (ro)
            syscall(SYS_mprotect, page, rb->page, PROT_READ);
        rb->redirected++;
    }
}
#endif

static int rebind_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    rebind *rb = arg;
    size_t j = 0;
    while (j < rb->nobjects && !(rb->bases[j] == info->dlpi_addr && info->dlpi_name &&
                                 !strcmp(rb->paths[j], info->dlpi_name)))
        j++;
    if (j == rb->nobjects)
        return 0;
#if defined(__x86_64__)
    const ElfW(Dyn) *dyn = NULL;
    uintptr_t lo = UINTPTR_MAX, hi = 0, relro_lo = 0, relro_hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)start;
        else if (ph->p_type == PT_GNU_RELRO) {
            /* as the loader protects it: the last partial page stays writable */
            relro_lo = start & ~(rb->page - 1);
            relro_hi = (start + ph->p_memsz) & ~(rb->page - 1);
        } else if (ph->p_type == PT_LOAD) {
            lo = start < lo ? start : lo;
            hi = start + ph->p_memsz > hi ? start + ph->p_memsz : hi;
        }
    }
    if (!dyn)
        return 0;
    const ElfW(Rela) *rela = NULL, *jmprel = NULL;
    size_t relasz = 0, pltsz = 0;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        uintptr_t p = dyn_ptr(info->dlpi_addr, dyn->d_un.d_ptr);
        switch (dyn->d_tag) {
        case DT_RELA: rela = (const ElfW(Rela) *)p; break;
        case DT_RELASZ: relasz = dyn->d_un.d_val; break;
        case DT_JMPREL: jmprel = (const ElfW(Rela) *)p; break;
        case DT_PLTRELSZ: pltsz = dyn->d_un.d_val; break;
        case DT_SYMTAB: symtab = (const ElfW(Sym) *)p; break;
        case DT_STRTAB: strtab = (const char *)p; break;
        }
    }
    if (!symtab || !strtab)
        return 0;
    if (rela)
        rebind_relocs(rb, info, rela, relasz / sizeof *rela, symtab, strtab, lo, hi, relro_lo,
                      relro_hi);
    if (jmprel)
        rebind_relocs(rb, info, jmprel, pltsz / sizeof *jmprel, symtab, strtab, lo, hi, relro_lo,
                      relro_hi);
#endif
    return 0;
}

/* The library loaded by this call and what it brought along come after it in the loader's
   list; objects loaded before (libc) already bind to libchurn or were not loaded deep. */
static void rebind_deep(void *handle, const char *file)
{
    struct link_map *lm = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) || !lm)
        return;
    rebind rb; /* on the stack: two threads may come back from dlopen at once */
    memset(&rb, 0, sizeof rb);
    rb.page = (uintptr_t)sysconf(_SC_PAGESIZE);
    Dl_info self;
    void *me = NULL;
    if (dladdr((void *)rebind_deep, &self) && self.dli_fname)
        me = dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!me)
        return;
    for (size_t i = 0; i < NNAMES; i++) {
        rb.ours[i] = dlsym(me, names[i]);
        rb.next[i] = dlsym(RTLD_NEXT, names[i]);
        rb.local[i] = dlsym(handle, names[i]);
    }
    dlclose(me);
    for (; lm && rb.nobjects < MAX_OBJECTS; lm = lm->l_next) {
        rb.bases[rb.nobjects] = lm->l_addr;
        rb.paths[rb.nobjects++] = lm->l_name ? lm->l_name : "";
    }
    dl_iterate_phdr(rebind_object, &rb);
    /* Silent when every binding reaches libchurn: php-cli loads its twenty extensions this
       way on every run, and a line each would be noise on every script's stderr. */
    if (rb.foreign)
        churn_log("dlopen(%s, RTLD_DEEPBIND): %u allocator binding(s) that skipped libchurn "
                  "now reach it through the same functions (the flag is kept); not traced: its "
                  "%s binds to another allocator in %s",
                  file, rb.redirected, rb.foreign_name, rb.foreign_object);
}

/* ---- the entry ----

   glibc's dlopen looks a name without a slash up in the directories of the object that called
   it (its RUNPATH and RPATH), and expands $ORIGIN in a name as that object's directory: it
   takes the caller from its own return address.  Called from a wrapper here, it would search
   as libchurn and fail where the program succeeds.  So the exported dlopen is a stub that
   jumps to glibc's with the program's return address in place, the call then glibc's own;
   only a deep-bound load, which libchurn must follow up (rebind_deep), is made here, opening
   its file as the caller's would (open_as). */

static void *(*real)(const char *, int);

/* The stub's choice: glibc's dlopen, or deep_open. */
__attribute__((used)) void *churn_dlopen_route(const char *file, int flags);

__asm__(".text\n"
        ".globl dlopen\n"
        ".type dlopen, @function\n"
        "dlopen:\n"
        ".cfi_startproc\n"
        "    endbr64\n"
        "    push %rdi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    push %rsi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    sub $8, %rsp\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    call churn_dlopen_route\n"
        "    add $8, %rsp\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    pop %rsi\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    pop %rdi\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    jmp *%rax\n"
        ".cfi_endproc\n"
        ".size dlopen, .-dlopen\n");

/* The search directories of the object map (its RPATH, LD_LIBRARY_PATH, its RUNPATH, the
   system's; glibc asks its cache between the last two), in libchurn's memory; NULL if
   unknown. */
static Dl_serinfo *search_path(struct link_map *map)
{
    Dl_serinfo size;
    if (dlinfo(map, RTLD_DI_SERINFOSIZE, &size))
        return NULL;
    Dl_serinfo *info = churn_mem_alloc(size.dls_size);
    if (!info)
        return NULL;
    memcpy(info, &size, sizeof size);
    if (dlinfo(map, RTLD_DI_SERINFO, info)) {
        churn_mem_free(info);
        return NULL;
    }
    return info;
}

/* How many directories at the end of a are the same as at the end of b. */
static unsigned same_tail(const Dl_serinfo *a, const Dl_serinfo *b)
{
    unsigned n = 0;
    while (n < a->dls_cnt && n < b->dls_cnt &&
           !strcmp(a->dls_serpath[a->dls_cnt - 1 - n].dls_name,
                   b->dls_serpath[b->dls_cnt - 1 - n].dls_name))
        n++;
    return n;
}

/* file (no slash, no $) opened as glibc opens it for a call from caller: an object loaded
   under that name already; else the first file of that name in the directories the caller's
   search has before those it shares with libchurn's (its RPATH and RUNPATH; between them
   LD_LIBRARY_PATH, which both have); else libchurn's own search, which goes on as the
   caller's would (the cache, the system's directories). */
static void *open_as(const void *caller, const char *file, int flags)
{
    void *h = real(file, flags | RTLD_NOLOAD);
    Dl_info where;
    struct link_map *theirs = NULL, *mine = NULL;
    if (h || !dladdr1(caller, &where, (void **)&theirs, RTLD_DL_LINKMAP) || !theirs ||
        !dladdr1((void *)open_as, &where, (void **)&mine, RTLD_DL_LINKMAP) || !mine ||
        theirs == mine)
        return h ? h : real(file, flags);
    Dl_serinfo *their_path = search_path(theirs), *my_path = search_path(mine);
    if (their_path && my_path) {
        unsigned own = their_path->dls_cnt - same_tail(their_path, my_path);
        for (unsigned i = 0; i < own; i++) {
            char path[4096];
            const char *dir = their_path->dls_serpath[i].dls_name;
            if (snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path ||
                access(path, F_OK))
                continue;
            churn_mem_free(their_path);
            churn_mem_free(my_path);
            return real(path, flags);
        }
    }
    churn_mem_free(their_path);
    churn_mem_free(my_path);
    return real(file, flags);
}

/* Where glibc's dlopen cannot be found: no library can be opened. */
static void *no_dlopen(const char *file, int flags)
{
    (void)file;
    (void)flags;
    return NULL;
}

/* Reached from the stub with the program's return address in place. */
static __attribute__((noinline)) void *deep_open(const char *file, int flags)
{
    void *h = open_as(__builtin_return_address(0), file, flags);
    if (h) {
        int saved_errno = errno;
        churn_in_shim++;
        rebind_deep(h, file);
        /* the failed lookups of names the library lacks are not the program's errors */
        dlerror();
        churn_in_shim--;
        errno = saved_errno;
    }
    return h;
}

void *churn_dlopen_route(const char *file, int flags)
{
    int saved_errno = errno;
    if (!real) {
        int saved = churn_in_shim;
        churn_in_shim = 1;
        real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
        churn_in_shim = saved;
    }
    void *to = real ? (void *)real : (void *)no_dlopen;
#ifdef RTLD_DEEPBIND
    if (file && (flags & RTLD_DEEPBIND)) {
        if (atomic_load(&churn_state) == CHURN_OFF)
            churn_ensure_init();
        if (real && atomic_load(&churn_state) == CHURN_ON && !churn_malloc_is_ahead()) {
            if (!strchr(file, '$'))
                to = (void *)deep_open;
            else
                churn_log("dlopen(%s, RTLD_DEEPBIND): a name with $ in it is expanded from "
                          "the caller's place, so glibc opens it: allocator bindings that skip "
                          "libchurn are not redirected, what it allocates itself is not traced",
                          file);
        }
    }
#endif
    errno = saved_errno;
    return to;
}
