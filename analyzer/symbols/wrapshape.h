/*
 * Whether a function that no symbol names is an allocation wrapper by the shape of its code:
 * the block its call returned (rax after the call at the frame's return address) is what it
 * returns to its caller, and it keeps no copy of it (never writes the register holding it to
 * memory).  Such a function hands the allocation on; the caller keeps it.  A function that
 * stores the block (into a list, a global, another object) keeps it itself and is its row,
 * and so is a function returning nothing, which stores what it allocated or loses it.  The
 * function's code is the range its call frame information gives (symbolize.h).  x86-64
 * only, as the C++ type (cxxtype.h).
 */
#ifndef CHURN_WRAPSHAPE_H
#define CHURN_WRAPSHAPE_H

#include <stdint.h>

#include "symbols/symbolize.h"

typedef struct churn_wrapshape churn_wrapshape;

churn_wrapshape *churn_wrapshape_new(churn_symbolizer *sym);
void churn_wrapshape_free(churn_wrapshape *w);

/* 1 when, from return address ip (of a stack recorded at generation) on, the code of its
   function returns what the call before ip returned, never storing it: followed through
   register moves and the callee-saved registers across calls, past conditional branches
   (not taken: gcc puts a checked allocation's failure path out of line, as in ruby's,
   lua's and test/programs/stripped_alloc.c's wrappers) and direct jumps inside the
   function, to a `ret`, within CHURN_WRAPSHAPE_MAX_INSNS instructions of the function's
   first 4 KiB (a wrapper is small; an ip further in is not one's).  Cached per ip and
   module. */
#define CHURN_WRAPSHAPE_MAX_INSNS 64
int churn_wrapshape_returns_block(churn_wrapshape *w, uint64_t ip, uint64_t generation,
                                  uint64_t module_id);

#endif
