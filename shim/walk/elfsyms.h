/*
 * Symbols of the executable from its own file (.symtab and .dynsym), for what dlsym cannot
 * find: tcmalloc's hook registration, a statically linked allocator's entry points, the
 * functions named by CHURN_EPOCH_AT.  Read once at start-up from /proc/self/exe through a
 * private read-only mapping; no allocation from the traced heap.
 */
#ifndef CHURN_ELFSYMS_H
#define CHURN_ELFSYMS_H

#include <stddef.h>
#include <stdint.h>

/* Run-time address of the defined function symbol with this exact (mangled) name in the
   executable, or 0. */
uintptr_t churn_exe_symbol(const char *name);
/* The same for n names, in one pass over each symbol table (a pass reads every symbol). */
void churn_exe_symbols(const char *const *names, uintptr_t *addrs, size_t n);

/* Calls fn for every defined function symbol of the executable whose mangled name starts with
   prefix; returns how many matched (fn may be NULL to count). */
size_t churn_exe_symbols_with_prefix(const char *prefix,
                                     void (*fn)(const char *name, uintptr_t addr, void *ctx),
                                     void *ctx);

/* The run-time address range of the executable's section with this name (google_malloc,
   tcmalloc's own code); 0 when there is none. */
int churn_exe_section(const char *name, uintptr_t *lo, uintptr_t *hi);

/* Calls fn for every defined function symbol in the file of a loaded object (.symtab and
   .dynsym; a name in both comes twice; a stripped library's debug file adds its local ones) at
   its run-time address, bias + value; returns how many.  The file is mapped for the call only
   (the executable's, "/proc/self/exe", not while its tables are held for churn_exe_symbol). */
size_t churn_file_symbols(const char *path, uintptr_t bias,
                          void (*fn)(const char *name, uintptr_t addr, void *ctx), void *ctx);

/* Calls fn with the name of each library the executable needs (DT_NEEDED: libruby-3.1.so.3.1),
   in its order; returns how many. */
size_t churn_exe_needed(void (*fn)(const char *name, void *ctx), void *ctx);

/* 1 when the executable has a full symbol table (.symtab): it is not stripped. */
int churn_exe_has_symtab(void);

/* Whether the file's .dynsym names this symbol, defined or imported (a call through the PLT). */
int churn_file_refers(const char *path, const char *name);
/* Whether the file has a .symtab with symbols in it. */
int churn_file_has_symtab(const char *path);

/* Unmaps the executable's file once start-up is done with its symbols; lookups after this
   find nothing. */
void churn_exe_symbols_release(void);

#endif
