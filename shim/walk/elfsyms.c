/*
 * The executable's own symbol tables, read from /proc/self/exe.  The file is mapped once,
 * privately and read-only, with a raw system call (libchurn's mmap is interposed and would
 * record it), and stays mapped: lookups happen at start-up and the mapping costs address space
 * only.  .symtab is preferred (it also names static functions and survives where .dynsym has
 * only exported names); a stripped executable still has .dynsym, and its .symtab may be in
 * its debug file.
 */
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "churn/elfnote.h"
#include "walk/elfsyms.h"
#include "shim.h"

typedef struct symtab {
    const Elf64_Sym *syms;
    size_t count;
    const char *names;
    size_t names_size;
    int locals_only; /* a shared library's debug file: its other symbols are in .dynsym */
} symtab;

static struct {
    _Atomic int state; /* 0 not read, 1 reading, 2 ready (possibly empty) */
    uintptr_t bias;
    symtab tabs[2];    /* .symtab, then .dynsym */
    const uint8_t *base;
    size_t size;
    const Elf64_Shdr *sections;
    const char *section_names;
    size_t nsections, section_names_size;
    const uint8_t *debug; /* a stripped executable's debug file, whose .symtab is tabs[0] */
    size_t debug_size;
} exe;

static const void *map_file(const char *path, size_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    long p = -1;
    if (!fstat(fd, &st) && st.st_size > (off_t)sizeof(Elf64_Ehdr))
        p = syscall(SYS_mmap, NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == -1)
        return NULL;
    *size = (size_t)st.st_size;
    return (const void *)p;
}

static int in_file(size_t off, size_t len, size_t size)
{
    return off <= size && len <= size - off;
}

/* The section headers of a mapped ELF64 file; NULL when it is not one or they lie outside. */
static const Elf64_Shdr *section_headers(const uint8_t *base, size_t size, unsigned *count)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) ||
        !in_file(eh->e_shoff, (size_t)eh->e_shnum * sizeof(Elf64_Shdr), size))
        return NULL;
    *count = eh->e_shnum;
    return (const Elf64_Shdr *)(base + eh->e_shoff);
}

/* Section i as a symbol table (.symtab or .dynsym) with its strings, when both lie inside
   the file and the strings are not empty. */
static int symbol_table(const uint8_t *base, size_t size, const Elf64_Shdr *sh, unsigned count,
                        unsigned i, symtab *t)
{
    if ((sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM) || sh[i].sh_link >= count)
        return 0;
    const Elf64_Shdr *str = &sh[sh[i].sh_link];
    if (!in_file(sh[i].sh_offset, sh[i].sh_size, size) ||
        !in_file(str->sh_offset, str->sh_size, size) || !str->sh_size)
        return 0;
    t->syms = (const Elf64_Sym *)(base + sh[i].sh_offset);
    t->count = sh[i].sh_size / sizeof(Elf64_Sym);
    t->names = (const char *)(base + str->sh_offset);
    /* Cut after the table's last NUL (its last byte, in a well-formed file): every name that
       starts inside then ends inside, and no name need be measured to be trusted. */
    size_t names_size = str->sh_size;
    while (names_size && t->names[names_size - 1])
        names_size--;
    t->names_size = names_size;
    t->locals_only = 0;
    return 1;
}

/* ---- a stripped file's separate debug file ----

   A stripped file's full symbol table may be in its debug file (Debian's -dbgsym packages,
   `objcopy --only-keep-debug`): looked for where gdb looks, by build id under
   /usr/lib/debug/.build-id/, then by the name its .gnu_debuglink gives, beside the file, in
   .debug/ beside it and under /usr/lib/debug/ and the file's directory.  One is taken only
   when its build id is the file's: nothing else says it describes this build. */
#define DEBUG_ROOT "/usr/lib/debug"

/* The file name a .gnu_debuglink section gives, or NULL. */
static const char *debug_link(const uint8_t *base, size_t size, const Elf64_Shdr *sh,
                              unsigned count)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
    if (eh->e_shstrndx >= count || !in_file(sh[eh->e_shstrndx].sh_offset,
                                            sh[eh->e_shstrndx].sh_size, size))
        return NULL;
    const char *names = (const char *)(base + sh[eh->e_shstrndx].sh_offset);
    size_t names_size = sh[eh->e_shstrndx].sh_size;
    for (unsigned i = 0; i < count; i++) {
        if (sh[i].sh_name >= names_size || strncmp(names + sh[i].sh_name, ".gnu_debuglink",
                                                   names_size - sh[i].sh_name) ||
            !in_file(sh[i].sh_offset, sh[i].sh_size, size) || sh[i].sh_size < 2)
            continue;
        const char *link = (const char *)(base + sh[i].sh_offset);
        return memchr(link, 0, sh[i].sh_size) && *link && !strchr(link, '/') ? link : NULL;
    }
    return NULL;
}

/* The debug file at path if its build id is id (len bytes): mapped, with its .symtab. */
static const uint8_t *debug_candidate(const char *path, const uint8_t *id, size_t len,
                                      size_t *size, symtab *t)
{
    const uint8_t *base = map_file(path, size);
    if (!base)
        return NULL;
    unsigned count;
    const Elf64_Shdr *sh = section_headers(base, *size, &count);
    const uint8_t *its = NULL;
    if (sh && churn_elf_build_id(base, *size, sh, count, &its) == len && !memcmp(its, id, len))
        for (unsigned i = 0; i < count; i++)
            if (sh[i].sh_type == SHT_SYMTAB && symbol_table(base, *size, sh, count, i, t))
                return base;
    syscall(SYS_munmap, base, *size);
    return NULL;
}

/* A stripped file's debug file with its .symtab (mapped: the caller unmaps it), or NULL. */
static const uint8_t *debug_file(const char *path, const uint8_t *base, size_t size,
                                 const Elf64_Shdr *sh, unsigned count, size_t *dsize,
                                 symtab *t)
{
    const uint8_t *id = NULL;
    size_t len = churn_elf_build_id(base, size, sh, count, &id);
    if (len < 2 || len > 64)
        return NULL;
    char cand[PATH_MAX];
    size_t n = (size_t)snprintf(cand, sizeof cand, DEBUG_ROOT "/.build-id/%02x/", id[0]);
    for (size_t i = 1; i < len; i++)
        n += (size_t)snprintf(cand + n, sizeof cand - n, "%02x", id[i]);
    snprintf(cand + n, sizeof cand - n, ".debug");
    const uint8_t *d = debug_candidate(cand, id, len, dsize, t);
    const char *link = d ? NULL : debug_link(base, size, sh, count);
    char dir[PATH_MAX];
    ssize_t dl = link ? readlink(path, dir, sizeof dir - 1) : -1;
    if (dl < 0 && link && strlen(path) < sizeof dir)
        dl = (ssize_t)strlen(strcpy(dir, path));
    if (dl <= 0 || dir[0] != '/')
        return d;
    dir[dl] = 0;
    *strrchr(dir, '/') = 0;
    static const char *const forms[] = {"%s/%s", "%s/.debug/%s", DEBUG_ROOT "%s/%s"};
    for (size_t f = 0; !d && f < sizeof forms / sizeof *forms; f++)
        if ((size_t)snprintf(cand, sizeof cand, forms[f], dir, link) < sizeof cand)
            d = debug_candidate(cand, id, len, dsize, t);
    return d;
}

/* Whether the mapped file is a shared library rather than an executable (ET_EXEC, or ET_DYN
   marked DF_1_PIE): the linker puts every global symbol of a library in its .dynsym, where an
   executable exports only what it is told to. */
static int shared_library(const uint8_t *base, size_t size, const Elf64_Shdr *sh,
                          unsigned count)
{
    if (((const Elf64_Ehdr *)base)->e_type != ET_DYN)
        return 0;
    for (unsigned i = 0; i < count; i++) {
        if (sh[i].sh_type != SHT_DYNAMIC || !in_file(sh[i].sh_offset, sh[i].sh_size, size))
            continue;
        const Elf64_Dyn *d = (const Elf64_Dyn *)(base + sh[i].sh_offset);
        for (size_t k = 0; k < sh[i].sh_size / sizeof *d && d[k].d_tag != DT_NULL; k++)
            if (d[k].d_tag == DT_FLAGS_1 && (d[k].d_un.d_val & DF_1_PIE))
                return 0;
    }
    return 1;
}

static const char self_exe[] = "/proc/self/exe";

/* Maps a loaded object's file for the call and hands fn each of its symbol tables of type
   `type` (SHT_DYNSYM, or 0 for .symtab and .dynsym both, a stripped file's .symtab from its
   debug file) until fn returns nonzero.  A stripped library's debug file gives only its
   local symbols: its global ones are the .dynsym's, already handed. */
static void each_file_table(const char *path, unsigned type,
                            int (*fn)(const symtab *t, void *ctx), void *ctx)
{
    size_t size = 0;
    unsigned count;
    const uint8_t *base = map_file(path, &size);
    if (!base)
        return;
    const Elf64_Shdr *sh = section_headers(base, size, &count);
    symtab t;
    int full = 0, done = 0;
    for (unsigned i = 0; sh && i < count && !done; i++)
        if ((!type || sh[i].sh_type == type) && symbol_table(base, size, sh, count, i, &t)) {
            full |= sh[i].sh_type == SHT_SYMTAB;
            done = fn(&t, ctx);
        }
    size_t dsize = 0;
    const uint8_t *d = sh && !type && !full && !done ? debug_file(path, base, size, sh, count,
                                                                   &dsize, &t)
                                                     : NULL;
    if (d) {
        t.locals_only = strcmp(path, self_exe) && shared_library(base, size, sh, count);
        fn(&t, ctx);
        syscall(SYS_munmap, d, dsize);
    }
    syscall(SYS_munmap, base, size);
}

/* The load bias: where the kernel put the program headers minus where the file says they
   are (zero for a non-PIE executable). */
static uintptr_t load_bias(const uint8_t *base, size_t size, const Elf64_Ehdr *eh)
{
    uintptr_t at_phdr = (uintptr_t)getauxval(AT_PHDR);
    if (!at_phdr || !in_file(eh->e_phoff, (size_t)eh->e_phnum * sizeof(Elf64_Phdr), size))
        return 0;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
    for (unsigned i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_PHDR)
            return at_phdr - ph[i].p_vaddr;
    for (unsigned i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && eh->e_phoff >= ph[i].p_offset &&
            eh->e_phoff < ph[i].p_offset + ph[i].p_filesz)
            return at_phdr - (ph[i].p_vaddr + (eh->e_phoff - ph[i].p_offset));
    return 0;
}

static void read_exe(void)
{
    size_t size = 0;
    const uint8_t *base = map_file(self_exe, &size);
    if (!base)
        return;
    exe.base = base;
    exe.size = size;
    unsigned count;
    const Elf64_Shdr *sh = section_headers(base, size, &count);
    if (!sh)
        return;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
    exe.bias = load_bias(base, size, eh);
    if (eh->e_shstrndx < eh->e_shnum &&
        in_file(sh[eh->e_shstrndx].sh_offset, sh[eh->e_shstrndx].sh_size, size)) {
        exe.sections = sh;
        exe.nsections = eh->e_shnum;
        exe.section_names = (const char *)(base + sh[eh->e_shstrndx].sh_offset);
        exe.section_names_size = sh[eh->e_shstrndx].sh_size;
    }
    for (unsigned i = 0; i < count; i++) {
        symtab t;
        if (symbol_table(base, size, sh, count, i, &t))
            exe.tabs[sh[i].sh_type == SHT_SYMTAB ? 0 : 1] = t;
    }
    if (!exe.tabs[0].count)
        exe.debug = debug_file(self_exe, base, size, sh, count, &exe.debug_size, &exe.tabs[0]);
}

static void ensure_read(void)
{
    int expected = 0;
    if (atomic_compare_exchange_strong(&exe.state, &expected, 1)) {
        read_exe();
        atomic_store(&exe.state, 2);
    }
    while (atomic_load(&exe.state) != 2)
        sched_yield();
}

/* The symbol's name when it lies inside the string table. */
static const char *symbol_name(const symtab *t, const Elf64_Sym *s)
{
    return s->st_name < t->names_size ? t->names + s->st_name : NULL;
}

/* The symbol's name when it is a defined function with a name inside the string table. */
static const char *function_name(const symtab *t, const Elf64_Sym *s)
{
    if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF || !s->st_value)
        return NULL;
    return symbol_name(t, s);
}

/* At most this many names are looked for in one pass over a table. */
#define BATCH 8

/* Each name's address in one table, for the names whose addrs[k] is still 0: a global or weak
   definition wins over a local one of the same name (a static function elsewhere in the
   program that happens to be called malloc), which is taken only when locals is set.  Each
   name is compared with its NUL, within the table, rather than first measured, and all of
   them in one pass: workerd's .symtab has 280,000 functions whose names fill 37 MB, and a
   pass over them is about 4 M instructions and as many cache misses as names read. */
static void lookup(const symtab *t, const char *const *names, size_t n, uintptr_t *addrs,
                   int locals)
{
    size_t len[BATCH];
    uintptr_t local[BATCH] = {0};
    size_t left = 0;
    for (size_t k = 0; k < n; k++) {
        len[k] = strlen(names[k]) + 1;
        left += !addrs[k];
    }
    for (size_t i = 0; i < t->count && left; i++) {
        const Elf64_Sym *s = &t->syms[i];
        if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF ||
            !s->st_value || s->st_name >= t->names_size)
            continue;
        const char *nm = t->names + s->st_name;
        size_t room = t->names_size - s->st_name;
        for (size_t k = 0; k < n; k++) {
            /* the NUL where the name's is first: most names have another length */
            if (addrs[k] || nm[0] != names[k][0] || room < len[k] || nm[len[k] - 1] ||
                memcmp(nm, names[k], len[k] - 1))
                continue;
            uintptr_t addr = exe.bias + s->st_value;
            if (ELF64_ST_BIND(s->st_info) != STB_LOCAL) {
                addrs[k] = addr;
                left--;
            } else if (!local[k]) {
                local[k] = addr;
            }
        }
    }
    for (size_t k = 0; locals && k < n; k++)
        if (!addrs[k])
            addrs[k] = local[k];
}

void churn_exe_symbols(const char *const *names, uintptr_t *addrs, size_t n)
{
    ensure_read();
    for (size_t at = 0; at < n; at += BATCH) {
        size_t m = n - at < BATCH ? n - at : BATCH;
        memset(addrs + at, 0, m * sizeof *addrs);
        /* A global definition in .dynsym (a few hundred symbols) is the one .symtab holds
           too: the exported names (malloc) need no pass over .symtab. */
        lookup(&exe.tabs[1], names + at, m, addrs + at, 0);
        lookup(&exe.tabs[0], names + at, m, addrs + at, 1);
        lookup(&exe.tabs[1], names + at, m, addrs + at, 1);
    }
}

uintptr_t churn_exe_symbol(const char *name)
{
    uintptr_t addr;
    churn_exe_symbols(&name, &addr, 1);
    return addr;
}

size_t churn_exe_symbols_with_prefix(const char *prefix,
                                     void (*fn)(const char *name, uintptr_t addr, void *ctx),
                                     void *ctx)
{
    ensure_read();
    size_t len = strlen(prefix), matched = 0;
    for (int slot = 0; slot < 2; slot++) {
        const symtab *t = &exe.tabs[slot];
        for (size_t i = 0; i < t->count; i++) {
            const char *n = function_name(t, &t->syms[i]);
            if (!n || strncmp(n, prefix, len))
                continue;
            uintptr_t addr = exe.bias + t->syms[i].st_value;
            if (slot == 1) {
                /* .symtab normally repeats every .dynsym definition: report each once. */
                uintptr_t in_symtab = 0;
                lookup(&exe.tabs[0], &n, 1, &in_symtab, 1);
                if (in_symtab == addr)
                    continue;
            }
            matched++;
            if (fn)
                fn(n, addr, ctx);
        }
    }
    return matched;
}

int churn_exe_section(const char *name, uintptr_t *lo, uintptr_t *hi)
{
    ensure_read();
    for (size_t i = 0; i < exe.nsections; i++) {
        const Elf64_Shdr *sh = &exe.sections[i];
        if (sh->sh_name >= exe.section_names_size || !sh->sh_addr)
            continue;
        const char *n = exe.section_names + sh->sh_name;
        if (!memchr(n, 0, exe.section_names_size - sh->sh_name) || strcmp(n, name))
            continue;
        *lo = exe.bias + sh->sh_addr;
        *hi = *lo + sh->sh_size;
        return 1;
    }
    return 0;
}

size_t churn_exe_needed(void (*fn)(const char *name, void *ctx), void *ctx)
{
    ensure_read();
    size_t n = 0;
    for (size_t i = 0; i < exe.nsections; i++) {
        const Elf64_Shdr *sh = &exe.sections[i];
        if (sh->sh_type != SHT_DYNAMIC || sh->sh_link >= exe.nsections)
            continue;
        const Elf64_Shdr *str = &exe.sections[sh->sh_link];
        if (!in_file(sh->sh_offset, sh->sh_size, exe.size) ||
            !in_file(str->sh_offset, str->sh_size, exe.size))
            return 0;
        const Elf64_Dyn *d = (const Elf64_Dyn *)(exe.base + sh->sh_offset);
        const char *names = (const char *)(exe.base + str->sh_offset);
        for (size_t k = 0; k < sh->sh_size / sizeof *d && d[k].d_tag != DT_NULL; k++) {
            if (d[k].d_tag != DT_NEEDED || d[k].d_un.d_val >= str->sh_size ||
                !memchr(names + d[k].d_un.d_val, 0, str->sh_size - d[k].d_un.d_val))
                continue;
            n++;
            fn(names + d[k].d_un.d_val, ctx);
        }
    }
    return n;
}

/* The tables are read at start-up only; a large executable's symbol and string tables are
   tens of MB of resident file pages (workerd: about 40 MB), which must not stay in the RSS
   that the trace reports. */
void churn_exe_symbols_release(void)
{
    if (atomic_load(&exe.state) != 2 || !exe.base)
        return;
    syscall(SYS_munmap, exe.base, exe.size);
    if (exe.debug)
        syscall(SYS_munmap, exe.debug, exe.debug_size);
    memset(exe.tabs, 0, sizeof exe.tabs);
    exe.base = NULL;
    exe.debug = NULL;
    exe.sections = NULL;
    exe.nsections = 0;
}

/* The executable's tables, read for its symbols, stand in for its file until they are released
   (start-up, before the writer, the only other caller, starts): it is not mapped and its debug
   file not looked for again. */
static int exe_tables_held(const char *path)
{
    return !strcmp(path, self_exe) && atomic_load(&exe.state) == 2 && exe.base;
}

typedef struct {
    uintptr_t bias;
    void (*fn)(const char *name, uintptr_t addr, void *ctx);
    void *ctx;
    size_t matched;
} file_functions;

static int table_functions(const symtab *t, void *arg)
{
    file_functions *f = arg;
    for (size_t k = 0; k < t->count; k++) {
        if (t->locals_only && ELF64_ST_BIND(t->syms[k].st_info) != STB_LOCAL)
            continue;
        const char *n = function_name(t, &t->syms[k]);
        if (n) {
            f->matched++;
            f->fn(n, f->bias + t->syms[k].st_value, f->ctx);
        }
    }
    return 0;
}

/* Every defined function symbol of one loaded object's file, .symtab and .dynsym, mapped for
   the call and unmapped after it; bias is the object's load address (dlpi_addr). */
size_t churn_file_symbols(const char *path, uintptr_t bias,
                          void (*fn)(const char *name, uintptr_t addr, void *ctx), void *ctx)
{
    file_functions f = {bias, fn, ctx, 0};
    if (exe_tables_held(path)) {
        for (int slot = 1; slot >= 0; slot--)
            table_functions(&exe.tabs[slot], &f);
        return f.matched;
    }
    each_file_table(path, 0, table_functions, &f);
    return f.matched;
}

int churn_exe_has_symtab(void)
{
    ensure_read();
    return exe.tabs[0].count != 0;
}

typedef struct {
    const char *name;
    int found;
} file_name;

static int table_names(const symtab *t, void *arg)
{
    file_name *f = arg;
    for (size_t k = 0; k < t->count && !f->found; k++) {
        const char *n = symbol_name(t, &t->syms[k]);
        f->found = n && !strcmp(n, f->name);
    }
    return f->found;
}

/* Whether the file's .dynsym has a symbol of this name, defined or imported. */
int churn_file_refers(const char *path, const char *name)
{
    file_name f = {name, 0};
    if (exe_tables_held(path))
        table_names(&exe.tabs[1], &f);
    else
        each_file_table(path, SHT_DYNSYM, table_names, &f);
    return f.found;
}

int churn_file_has_symtab(const char *path)
{
    size_t size = 0;
    int found = 0;
    const uint8_t *base = map_file(path, &size);
    if (!base)
        return 0;
    unsigned count;
    const Elf64_Shdr *sh = section_headers(base, size, &count);
    for (unsigned i = 0; sh && i < count; i++)
        found |= sh[i].sh_type == SHT_SYMTAB && sh[i].sh_size > sizeof(Elf64_Sym);
    syscall(SYS_munmap, base, size);
    return found;
}
