/*
 * Choosing the way in (way.h).  The question that decides it: does the malloc that the
 * program's calls bind to belong to libchurn?  If something earlier in the lookup scope (the
 * executable, or a library preloaded before libchurn) defines malloc, the ELF way is blind.
 */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "walk/elfsyms.h"
#include "shim.h"
#include "ways/way.h"

/* The first object dl_iterate_phdr reports is the executable. */
static int first_object_holds(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uintptr_t *a = arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && *a >= lo && *a < lo + ph->p_memsz)
            return 2;
    }
    return 1;
}

/* A non-PIE executable that takes malloc's address gets a canonical PLT stub named malloc in
   its dynamic symbols, so dlsym answers with an address in the executable although the
   executable defines nothing: there, only a defined symbol in its own file counts. */
static int malloc_ahead(void)
{
    uintptr_t m = (uintptr_t)dlsym(RTLD_DEFAULT, "malloc");
    if (!m || (m >= churn_self_lo && m < churn_self_hi))
        return 0;
    if (dl_iterate_phdr(first_object_holds, &m) == 2 && !churn_exe_symbol("malloc"))
        return 0;
    return 1;
}

/* Answered once, at start-up: the answer cannot change, and the executable's symbols are
   released after start-up (a later dlopen asks too). */
int churn_malloc_is_ahead(void)
{
    static _Atomic int known = -1;
    int k = atomic_load(&known);
    if (k < 0) {
        k = malloc_ahead();
        atomic_store(&known, k);
    }
    return k;
}

/* Which object defines the malloc that wins, for the message. */
static const char *winner_name(void)
{
    Dl_info info;
    void *m = dlsym(RTLD_DEFAULT, "malloc");
    if (m && dladdr(m, &info) && info.dli_fname && *info.dli_fname)
        return info.dli_fname;
    return "the executable";
}

static const churn_way *const ways[] = {&churn_way_tcmalloc, &churn_way_patch, &churn_way_elf};

const churn_way *churn_way_choose(void)
{
    int ahead = churn_malloc_is_ahead();
    for (size_t i = 0; i < sizeof ways / sizeof *ways; i++) {
        const churn_way *w = ways[i];
        if (!w->applies())
            continue;
        if (w->install())
            return NULL;
        churn_named_install();
        /* After the way is in place, so dlsym finds the allocator the program really uses
           (a way that knows better, like tcmalloc's, has named it already). */
        churn_allocator_detect(NULL);
        churn_blind_register();
        churn_named_describe(w->name);
        /* Quiet in the ordinary case; say it when the program carries its own allocator. */
        if (ahead && w != &churn_way_elf)
            churn_log("%s defines malloc itself; tracing it through the %s way in", winner_name(),
                      w->name);
        return w;
    }
    return NULL;
}

/* The ELF way needs no installing: the exported functions of interpose.c and cxx.c are it.
   It is blind when malloc is defined ahead of libchurn by something no other way handles. */
static int elf_applies(void)
{
    return 1;
}

static int elf_install(void)
{
    if (churn_malloc_is_ahead())
        churn_log("%s defines malloc ahead of libchurn and no other way in applies: its "
                  "allocations are not traced (put libchurn.so first in LD_PRELOAD)",
                  winner_name());
    return 0;
}

const churn_way churn_way_elf = {"elf", elf_applies, elf_install};
