/*
 * The DWARF index of one module (dwarfindex.c): the inline chain of functions at an address,
 * from compile units indexed once each as addresses fall into them.
 */
#ifndef CHURN_DWARFINDEX_H
#define CHURN_DWARFINDEX_H

#include <elfutils/libdwfl.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols/symbolize.h"

typedef struct churn_dwarf_index churn_dwarf_index;

/* Returns text kept for as long as the frames are used, demangled first when demangle is
   set and text is a mangled name; NULL for NULL. */
typedef const char *(*churn_dwarf_intern)(void *ctx, const char *text, int demangle);

churn_dwarf_index *churn_dwarf_index_new(churn_dwarf_intern intern, void *ctx);
void churn_dwarf_index_free(churn_dwarf_index *x);

/* The inline chain at addr (an address of mod, which has DWARF), innermost first, into up
   to max frames: the innermost frame's location comes from the line table, each outer one's
   from the call site of the frame inside it.  Returns 0 when no function holds addr.  The
   frames' module field is left alone. */
size_t churn_dwarf_index_frames(churn_dwarf_index *x, Dwfl_Module *mod, uint64_t addr,
                                churn_frame *out, size_t max);

#endif
