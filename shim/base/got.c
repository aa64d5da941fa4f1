/*
 * A loaded object's imports, by the slots its code calls them through (the GOT): each slot
 * that the loader fills with a symbol's address (JUMP_SLOT, GLOB_DAT, or a 64-bit word without
 * addend), and a way to point one elsewhere through the object's RELRO protection.  dlopen.c
 * points a deep-bound library's allocator calls at libchurn's; fds.c points libunwind's
 * descriptor calls at its own.  x86-64.
 */
#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/got.h"
#include "shim.h"

typedef struct {
    uintptr_t base;
    const char *name;
    churn_got_fn fn;
    void *ctx;
} each_t;

static uintptr_t dyn_ptr(uintptr_t base, ElfW(Addr) v)
{
    /* glibc relocates these entries in place on x86-64; a vDSO-like object would not */
    return v < base ? base + v : v;
}

#if defined(__x86_64__)
static void each_reloc(const each_t *e, const ElfW(Rela) * rel, size_t n,
                       const ElfW(Sym) * symtab, const char *strtab, churn_got_slot *s,
                       uintptr_t lo, uintptr_t hi)
{
    for (size_t k = 0; k < n; k++) {
        unsigned type = ELF64_R_TYPE(rel[k].r_info), sym = ELF64_R_SYM(rel[k].r_info);
        if (!sym || (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT &&
                     !(type == R_X86_64_64 && rel[k].r_addend == 0)))
            continue;
        s->name = strtab + symtab[sym].st_name;
        s->slot = (void **)(e->base + rel[k].r_offset);
        uintptr_t now = (uintptr_t)*s->slot;
        s->lazy = type == R_X86_64_JUMP_SLOT && now >= lo && now < hi;
        e->fn(s, e->ctx);
    }
}
#endif

static int each_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    const each_t *e = arg;
    if (info->dlpi_addr != e->base || !info->dlpi_name || strcmp(info->dlpi_name, e->name))
        return 0;
#if defined(__x86_64__)
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const ElfW(Dyn) *dyn = NULL;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    churn_got_slot s = {0};
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)start;
        else if (ph->p_type == PT_GNU_RELRO) {
            /* as the loader protects it: the last partial page stays writable */
            s.relro_lo = start & ~(page - 1);
            s.relro_hi = (start + ph->p_memsz) & ~(page - 1);
        } else if (ph->p_type == PT_LOAD) {
            lo = start < lo ? start : lo;
            hi = start + ph->p_memsz > hi ? start + ph->p_memsz : hi;
        }
    }
    if (!dyn)
        return 1;
    const ElfW(Rela) *rela = NULL, *jmprel = NULL;
    size_t relasz = 0, pltsz = 0;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        uintptr_t p = dyn_ptr(info->dlpi_addr, dyn->d_un.d_ptr);
        switch (dyn->d_tag) {
        case DT_RELA:
            rela = (const ElfW(Rela) *)p;
            break;
        case DT_RELASZ:
            relasz = dyn->d_un.d_val;
            break;
        case DT_JMPREL:
            jmprel = (const ElfW(Rela) *)p;
            break;
        case DT_PLTRELSZ:
            pltsz = dyn->d_un.d_val;
            break;
        case DT_SYMTAB:
            symtab = (const ElfW(Sym) *)p;
            break;
        case DT_STRTAB:
            strtab = (const char *)p;
            break;
        }
    }
    if (!symtab || !strtab)
        return 1;
    if (rela)
        each_reloc(e, rela, relasz / sizeof *rela, symtab, strtab, &s, lo, hi);
    if (jmprel)
        each_reloc(e, jmprel, pltsz / sizeof *jmprel, symtab, strtab, &s, lo, hi);
#endif
    return 1;
}

void churn_got_each(uintptr_t base, const char *name, churn_got_fn fn, void *ctx)
{
    each_t e = {base, name, fn, ctx};
    dl_iterate_phdr(each_object, &e);
}

int churn_got_set(const churn_got_slot *s, void *to)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t at = (uintptr_t)s->slot & ~(page - 1);
    int ro = (uintptr_t)s->slot >= s->relro_lo && (uintptr_t)s->slot < s->relro_hi;
    if (ro && syscall(SYS_mprotect, at, page, PROT_READ | PROT_WRITE))
        return -1;
    __atomic_store_n(s->slot, to, __ATOMIC_RELEASE);
    if (ro)
        syscall(SYS_mprotect, at, page, PROT_READ);
    return 0;
}
