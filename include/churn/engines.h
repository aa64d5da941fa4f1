/*
 * Garbage-collected runtimes whose heap lives in mappings of their own, outside malloc by
 * design: JavaScript engines, Ruby's, and Go's runtime (a cgo program loads libc, and so
 * libchurn).
 * The shim's blind-spot detector (shim/record/blind.c) recognises one by a function of its garbage
 * collector in the symbols of the module it blames, in a stripped module by a message of that
 * collector among its bytes, or by the name the engine gives its mappings; the trace carries the engine's index + 1 in the counter libchurn.untraced_engine
 * (0: none), which the analyzer turns back into the name.
 */
#ifndef CHURN_ENGINES_H
#define CHURN_ENGINES_H

typedef struct churn_engine {
    const char *name;
    const char *gc_prefix;    /* a mangled-name prefix only the engine's collector has */
    const char *mapping;      /* a substring of the name it gives its mappings, or NULL */
    const char *message;      /* a string only its collector prints (stripped modules), or NULL */
    const char *heap;         /* what its objects are called, for "not traced: objects on ..." */
} churn_engine;

static const churn_engine churn_engines[] = {
    /* v8::internal::Heap::; the message is V8's out-of-memory report from its heap */
    {"V8", "_ZN2v88internal4Heap", NULL, "Ineffective mark-compacts near heap limit",
     "the JS heap"},
    {"JavaScriptCore", "_ZN3JSC4Heap", NULL, NULL, "the JS heap"},              /* JSC::Heap:: */
    {"SpiderMonkey", "_ZN2js2gc9GCRuntime", "js-gc-heap", NULL, "the JS heap"}, /* js::gc::GCRuntime:: */
    {"XS", "fxCollectGarbage", NULL, NULL, "the JS heap"},
    /* Ruby's object slots live on heap pages it maps; its collector is exported */
    {"Ruby", "rb_gc_start", NULL, NULL, "the Ruby heap"},
    /* Go's symbols are not mangled; stripped (-ldflags=-s), the function names are still among
       the bytes of its pclntab */
    {"Go", "runtime.gcStart", NULL, "runtime.gcBgMarkWorker", "the Go heap"},
};
#define CHURN_N_ENGINES (sizeof churn_engines / sizeof *churn_engines)

#endif
