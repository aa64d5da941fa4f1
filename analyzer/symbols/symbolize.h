/*
 * Offline symbolization: instruction pointers recorded by the shim, plus the module map the
 * trace carries (path, load bias, build id), become function, file:line and inlined frames.
 */
#ifndef CHURN_SYMBOLIZE_H
#define CHURN_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

typedef struct churn_symbolizer churn_symbolizer;

typedef struct churn_frame {
    const char *function; /* demangled name; NULL when unknown */
    const char *file;     /* source file; NULL when unknown */
    unsigned line;        /* 0 when unknown */
    const char *module;   /* basename of the module's path; NULL when the ip is in no module */
    uint64_t module_id;   /* that module's id in the trace's module map, when module is set;
                             CHURN_MODULE_GENERATED: code a runtime generated, named by the
                             trace's CODE records (perfmap.h), module its source's place */
    uint64_t bias;        /* that module's bias (ip - bias: the offset in it), of the same
                             generation of the module map as the names */
    int inlined;          /* 1: this frame was inlined into the next (outer) one */
    uint64_t entry;       /* function NULL: the offset in module of the start of the function
                             that holds the ip, from the module's call frame information (the
                             .eh_frame or .debug_frame entry covering it); 0: none covers it */
} churn_frame;

#define CHURN_MODULE_GENERATED UINT64_MAX

churn_symbolizer *churn_symbolizer_new(void);
void churn_symbolizer_free(churn_symbolizer *s);

/* Registers a module of the trace's module map (ids in the order modules were found;
   unloaded: 0, or the generation at which it was found unloaded).  Calling it again with the
   same fields is a no-op (every segment re-sends the map), with only `unloaded` changed
   marks it unloaded.  build_id may be NULL. */
void churn_symbolizer_add_module(churn_symbolizer *s, uint64_t id, const char *path,
                                 uint64_t bias, uint64_t start, uint64_t end, uint64_t unloaded,
                                 const uint8_t *build_id, size_t build_id_len);

/* Registers the name of generated code in no module (a CODE record: perfmap.h), which
   names the ips there that no module holds. */
void churn_symbolizer_add_code(churn_symbolizer *s, uint64_t start, uint64_t size,
                               const char *name);

/* Registers the name of a Python code object's frames (a CODE record of kind
   CHURN_CODE_PY: perfmap.h). */
void churn_symbolizer_add_py_code(churn_symbolizer *s, uint64_t id, const char *name);

/* A hint that ips of module id (registered above) will be resolved: its file and debug info
   are read on a background thread meanwhile.  Results and warnings are the same without
   it.  Only until the first resolve, which waits for the modules already queued. */
void churn_symbolizer_prefetch(churn_symbolizer *s, uint64_t id);

/* Waits for the modules queued for prefetching and ends it, as the first resolve does: no
   thread of the symbolizer's runs after it.  A caller that forks calls it first, since the
   child has only the thread that forked (analyzer/live takes its snapshots so). */
void churn_symbolizer_settle(churn_symbolizer *s);

/* Resolves one instruction pointer (is_return_address: a return address, looked up at its
   call instruction; every ip of a recorded stack is one), of a stack recorded at
   `generation` (the number of modules known then, format.h; UINT64_MAX: the newest
   modules), into up to max frames, innermost inlined frame first; returns how many (>= 1
   when max >= 1: an unknown ip still yields one frame with module and NULL function).
   Returned strings live as long as the symbolizer.  Results are cached per ip and module. */
size_t churn_symbolizer_resolve(churn_symbolizer *s, uint64_t ip, int is_return_address,
                                uint64_t generation, churn_frame *out, size_t max);

/* Copies up to len bytes of the module's file at run-time address ip (of a stack recorded at
   generation) into buf, from the same verified file the names come from; returns how many
   (0: no module, no file, or not in a section with contents). */
size_t churn_symbolizer_code(churn_symbolizer *s, uint64_t ip, uint64_t generation,
                             uint8_t *buf, size_t len);

/* Copies up to len bytes of the code of the function holding run-time address ip (the range
   of the call frame information entry covering it, as churn_frame's entry) from its start,
   and sets *start to the start's run-time address; returns how many (0: no entry covers ip,
   or no code to read). */
size_t churn_symbolizer_function_code(churn_symbolizer *s, uint64_t ip, uint64_t generation,
                                      uint64_t *start, uint8_t *buf, size_t len);

/* Where the names of a module whose ips were resolved came from. */
enum churn_debug_from {
    CHURN_DEBUG_NONE,            /* no debug info found: names from its symbol table */
    CHURN_DEBUG_FROM_FILE,       /* debug_file, here (the module's file, or a separate one) */
    CHURN_DEBUG_FROM_DEBUGINFOD, /* debug_file, in the cache of a debuginfod server's */
    CHURN_DEBUG_FROM_CACHE,      /* the symbol cache (symcache.h), of a run that had it */
};
typedef struct churn_module_debug {
    uint64_t id;
    const char *path;
    const char *debug_file; /* NULL unless FROM_FILE or FROM_DEBUGINFOD */
    enum churn_debug_from from;
} churn_module_debug;

/* The modules with a file whose ips were resolved so far, one per path (of the modules
   naming it, an opened one, else the first), by id (*n of them; the caller frees the array,
   whose strings live as long as the symbolizer). */
churn_module_debug *churn_symbolizer_debug_info(churn_symbolizer *s, size_t *n);

/* One-line warnings gathered so far (missing file, build id mismatch, no debug info), each
   reported once; returns the count and points *lines at them. */
size_t churn_symbolizer_warnings(churn_symbolizer *s, const char *const **lines);

#endif
