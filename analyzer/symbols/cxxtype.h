/*
 * The C++ type an allocation holds, read from the machine code of its caller: right after the
 * call that allocated (the stack's innermost return address), code that builds an object in
 * the new memory calls its constructor with the returned pointer as `this`.  x86-64 only.
 */
#ifndef CHURN_CXXTYPE_H
#define CHURN_CXXTYPE_H

#include <stdint.h>

#include "read/stacks.h"
#include "symbols/symbolize.h"

typedef struct churn_cxx_types churn_cxx_types;

churn_cxx_types *churn_cxx_types_new(churn_symbolizer *sym, const churn_stack_defs *stacks);
void churn_cxx_types_free(churn_cxx_types *t);

/* The class constructed in the memory stack's allocation returned ("workerd::DeleteQueue"),
   or NULL when the code after the call constructs nothing there that can be named (an
   inlined constructor, plain data, a constructor reached through a stub).  Cached per ip;
   the string lives as long as t. */
const char *churn_cxx_type_of(churn_cxx_types *t, uint64_t stack);

#endif
