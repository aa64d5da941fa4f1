/*
 * Choosing the way in (way.h).  The question that decides it: does the malloc that the
 * program's calls bind to belong to libchurn?  If something earlier in the lookup scope (the
 * executable, or a library preloaded before libchurn) defines malloc, the ELF way is blind.
 */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "shim.h"
#include "way.h"

int churn_malloc_is_ahead(void)
{
    uintptr_t m = (uintptr_t)dlsym(RTLD_DEFAULT, "malloc");
    return m && !(m >= churn_self_lo && m < churn_self_hi);
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
        /* After the way is in place, so dlsym finds the allocator the program really uses
           (a way that knows better, like tcmalloc's, has named it already). */
        churn_allocator_detect();
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
