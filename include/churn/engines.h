/*
 * JavaScript engines whose heap lives in mappings of their own, outside malloc by design.
 * The shim's blind-spot detector (shim/blind.c) recognises one by a function of its garbage
 * collector in the symbols of the module it blames, or by the name the engine gives its
 * mappings; the trace carries the engine's index + 1 in the counter libchurn.untraced_engine
 * (0: none), which the analyzer turns back into the name.
 */
#ifndef CHURN_ENGINES_H
#define CHURN_ENGINES_H

typedef struct churn_engine {
    const char *name;
    const char *gc_prefix;    /* a mangled-name prefix only the engine's collector has */
    const char *mapping;      /* a substring of the name it gives its mappings, or NULL */
} churn_engine;

static const churn_engine churn_engines[] = {
    {"V8", "_ZN2v88internal4Heap", NULL},              /* v8::internal::Heap:: */
    {"JavaScriptCore", "_ZN3JSC4Heap", NULL},          /* JSC::Heap:: */
    {"SpiderMonkey", "_ZN2js2gc9GCRuntime", "js-gc-heap"}, /* js::gc::GCRuntime:: */
    {"XS", "fxCollectGarbage", NULL},
};
#define CHURN_N_ENGINES (sizeof churn_engines / sizeof *churn_engines)

#endif
