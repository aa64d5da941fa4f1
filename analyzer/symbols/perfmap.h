/*
 * Names of code a runtime generated, from the trace's CODE records (the entries of its perf
 * map that the stacks used): V8's "JS:*handler /srv/app.js:12:30" becomes the function
 * handler at /srv/app.js:12, CPython's "py::handle:/srv/app.py" the function handle in
 * /srv/app.py; other entries (V8's builtins and stubs, a JVM's methods) keep their name as
 * the function's.
 */
#ifndef CHURN_PERFMAP_H
#define CHURN_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

#include "symbols/symbolize.h"

typedef struct churn_codes churn_codes;

churn_codes *churn_codes_new(void);
void churn_codes_free(churn_codes *c);

/* An entry [start, start + size) named name (copied); an entry seen before (every segment
   sends the ones its stacks use) is kept once.  Where entries overlap, the one added last
   names the code. */
void churn_codes_add(churn_codes *c, uint64_t start, uint64_t size, const char *name);

/* The name of the Python frames of code object id (a CHURN_CODE_PY record), "qualname:file"
   (copied): the frame at churn_py_frame address a is "py::qualname:file:line", its line
   churn_py_frame_line(a), where no entry above covers it.  An id keeps its first name. */
void churn_codes_add_py(churn_codes *c, uint64_t id, const char *name);

/* The frame of the code at addr (a return address less one), as churn_symbolizer_resolve
   gives it (module_id CHURN_MODULE_GENERATED); 0 when no entry covers addr. */
int churn_codes_frame(churn_codes *c, uint64_t addr, churn_frame *out);

#endif
