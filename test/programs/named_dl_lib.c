/* Loaded with dlopen by named_dl.c: calls mimalloc by its own names, as a node addon that
   links mimalloc does. */
#include <mimalloc.h>
#include <stddef.h>

void *lib_alloc(size_t n) { return mi_malloc(n); }
void *lib_heap_alloc(mi_heap_t *h, size_t n) { return mi_heap_malloc(h, n); }
void lib_free(void *p) { mi_free(p); }
