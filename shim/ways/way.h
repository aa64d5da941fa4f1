/*
 * Ways in: how a process's allocation calls reach libchurn.  One is chosen per process at
 * start-up, in the order of churn_ways[] (way.c): the first whose applies() says yes is
 * installed, and named once on stderr.  Every way ends in the same calls of event.c
 * (churn_record_alloc / churn_record_free), under the same guard, so nothing downstream knows
 * how an event came in.
 *
 *   elf       interpose.c, cxx.c: libchurn's exported malloc family and operators win the
 *             dynamic linker's lookup (the usual LD_PRELOAD case; glibc, or tcmalloc/jemalloc
 *             preloaded after libchurn).
 *   tcmalloc  way_tcmalloc.c: Google tcmalloc linked into the executable (workerd): its own
 *             new/delete hooks, found in the executable's symbol table.
 *   patch     way_patch.c: any other allocator linked into the executable: its malloc family
 *             and operators are patched at their entry (x86-64) to call through libchurn.
 *
 * Besides the one way chosen, way_named.c patches the allocators a program calls by their own
 * names (mimalloc's mi_*, jemalloc's *allocx and prefixed names, gperftools' tc_*, Rust's
 * __rust_alloc shims), in the executable and in every library, at start-up and at dlopen;
 * way_pymalloc.c hooks CPython's pymalloc, which way_named.c's search finds, through the
 * interpreter's own PyMem_SetAllocator.
 *
 * A port to another system adds ways, not rewrites: docs/ports.md sketches macOS.
 */
#ifndef CHURN_WAY_H
#define CHURN_WAY_H

#include <stddef.h>
#include <stdint.h>

typedef struct churn_way {
    const char *name;
    /* 1 when this way is the one that sees this process's allocations. */
    int (*applies)(void);
    /* Puts it in place; 0 on success, else -1 after one line on stderr. */
    int (*install)(void);
} churn_way;

/* The executable (or a library ahead of libchurn) defines malloc itself, so libchurn's
   exported malloc is never called: LD_PRELOAD alone is blind. */
int churn_malloc_is_ahead(void);

/* Picks and installs the way for this process; returns it, or NULL when none applies. */
const churn_way *churn_way_choose(void);

/* way_named.c: allocators that the program calls by their own names (mi_malloc, je_mallocx,
   tc_new, __rust_alloc), in the executable or any loaded library, patched in addition to the
   way chosen.  At start-up, after the way is installed. */
void churn_named_install(void);
/* Names them, with the way chosen for malloc, in the allocator record, and adds their
   counters (mimalloc's mi_process_info, a prefixed jemalloc's mallctl).  After
   churn_allocator_detect. */
void churn_named_describe(const char *way);

/* way_pymalloc.c: CPython's pymalloc, found among an object's names by way_named.c (CPython
   3.8 and later: PyConfig_InitPythonConfig) and hooked through the interpreter's own
   PyMem_SetAllocator and PyObject_SetArenaAllocator. */
typedef struct churn_pymalloc_entries {
    uintptr_t get, set, get_arenas, set_arenas, object_malloc, config;
} churn_pymalloc_entries;
/* Hooks it at start-up (late 0); later (dlopen), says in one line that it is not traced. */
void churn_pymalloc_found(const churn_pymalloc_entries *e, const char *where, int late);
/* Appends "; CPython's pymalloc in X via PyMem_SetAllocator" to ways[len..size) and adds its
   counter when it is hooked; returns the new length. */
size_t churn_pymalloc_describe(char *ways, size_t len, size_t size);

/* way_patch.c's install for any allocator: every function of the malloc family and every
   C++ operator that lookup finds is patched to libchurn's replacements, and churn_next is
   pointed at the originals.  whose names them in messages ("the executable's"). */
int churn_patch_family(uintptr_t (*lookup)(const char *name), const char *whose);

extern const churn_way churn_way_elf, churn_way_tcmalloc, churn_way_patch;

#endif
