/*
 * Language runtimes that keep their small objects on memory of their own (chunks or arenas
 * they map), with a switch in the environment that sends those objects to malloc instead,
 * where libchurn traces them.  The shim's blind-spot detector (shim/record/blind.c) recognises one by
 * its allocator's entry point among the symbols of the module it blames (the dynamic symbol
 * table is enough: both are exported, so a stripped executable shows them too) and says the
 * switch; the trace carries the index + 1 in the counter libchurn.untraced_runtime (0: none),
 * which the analyzer turns back into the name and the switch.  The analyzer also knows the
 * runtime by the module whose own mmap calls map that memory (MAP records), by its file name.
 */
#ifndef CHURN_RUNTIME_HEAPS_H
#define CHURN_RUNTIME_HEAPS_H

typedef struct churn_runtime_heap {
    const char *name;      /* the allocator, as its runtime calls it */
    const char *symbol;    /* its entry point, exported */
    const char *setting;   /* NAME=VALUE that sends the objects to malloc */
    const char *objects;   /* whose objects */
    const char *traced;    /* when libchurn traces the allocator itself, or NULL: never */
    const char *module;    /* in the file name of the runtime's executable or library */
} churn_runtime_heap;

enum { CHURN_RUNTIME_ZEND, CHURN_RUNTIME_CPYTHON };

static const churn_runtime_heap churn_runtime_heaps[] = {
    [CHURN_RUNTIME_ZEND] = {"PHP's Zend allocator", "_emalloc", "USE_ZEND_ALLOC=0",
                            "PHP's objects", NULL, "php"},
    /* exported whatever PYTHONMALLOC says; traced through PyMem_SetAllocator (the shim's
       way_pymalloc.c), so only growth while it is not brings it up */
    [CHURN_RUNTIME_CPYTHON] =
        {"CPython's pymalloc", "PyObject_Malloc", "PYTHONMALLOC=malloc", "Python's objects",
         "traced by libchurn in CPython 3.8 and later unless PYTHONMALLOC, "
         "PYTHONMALLOCSTATS or -X dev sets the interpreter's allocators or "
         "dlopen loads it",
         "python"},
};
#define CHURN_N_RUNTIME_HEAPS (sizeof churn_runtime_heaps / sizeof *churn_runtime_heaps)

#endif
