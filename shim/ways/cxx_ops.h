/*
 * Every C++ allocation operator libchurn traces, listed once for the ways that define them
 * (cxx.c for the ELF way, way_patch.c for allocators patched in the executable).
 *
 * CHURN_CXX_NEWS(X): X(mangled name, kind, call of the next definition f, fallback through the
 * C family when there is none, parameters...).
 * CHURN_CXX_DELETES(X): X(mangled name, kind); every delete is called with its pointer and up
 * to two further arguments (size, alignment, nothrow tag), passed on untouched in registers.
 */
#ifndef CHURN_CXX_OPS_H
#define CHURN_CXX_OPS_H

#include <stddef.h>
#include <stdint.h>

typedef void *(*churn_new_fn)(size_t);
typedef void *(*churn_new_nt_fn)(size_t, const void *);
typedef void *(*churn_new_al_fn)(size_t, size_t);
typedef void *(*churn_new_al_nt_fn)(size_t, size_t, const void *);
typedef void (*churn_delete_fn)(void *, uintptr_t, uintptr_t);

#define CHURN_CXX_NEWS(X)                                                                    \
    X(_Znwm, CHURN_ALLOC_NEW, ((churn_new_fn)f)(size), malloc(size), size_t size)           \
    X(_Znam, CHURN_ALLOC_NEW_ARRAY, ((churn_new_fn)f)(size), malloc(size), size_t size)     \
    X(_ZnwmRKSt9nothrow_t, CHURN_ALLOC_NEW, ((churn_new_nt_fn)f)(size, nt), malloc(size),   \
      size_t size, const void *nt)                                                           \
    X(_ZnamRKSt9nothrow_t, CHURN_ALLOC_NEW_ARRAY, ((churn_new_nt_fn)f)(size, nt),            \
      malloc(size), size_t size, const void *nt)                                             \
    X(_ZnwmSt11align_val_t, CHURN_ALLOC_NEW, ((churn_new_al_fn)f)(size, al),                 \
      aligned_alloc(al, size), size_t size, size_t al)                                       \
    X(_ZnamSt11align_val_t, CHURN_ALLOC_NEW_ARRAY, ((churn_new_al_fn)f)(size, al),           \
      aligned_alloc(al, size), size_t size, size_t al)                                       \
    X(_ZnwmSt11align_val_tRKSt9nothrow_t, CHURN_ALLOC_NEW,                                   \
      ((churn_new_al_nt_fn)f)(size, al, nt), aligned_alloc(al, size), size_t size,           \
      size_t al, const void *nt)                                                             \
    X(_ZnamSt11align_val_tRKSt9nothrow_t, CHURN_ALLOC_NEW_ARRAY,                             \
      ((churn_new_al_nt_fn)f)(size, al, nt), aligned_alloc(al, size), size_t size,           \
      size_t al, const void *nt)

#define CHURN_CXX_DELETES(X)                                                                 \
    X(_ZdlPv, CHURN_FREE_DELETE)                                                             \
    X(_ZdaPv, CHURN_FREE_DELETE_ARRAY)                                                       \
    X(_ZdlPvm, CHURN_FREE_DELETE)                                                            \
    X(_ZdaPvm, CHURN_FREE_DELETE_ARRAY)                                                      \
    X(_ZdlPvRKSt9nothrow_t, CHURN_FREE_DELETE)                                               \
    X(_ZdaPvRKSt9nothrow_t, CHURN_FREE_DELETE_ARRAY)                                         \
    X(_ZdlPvSt11align_val_t, CHURN_FREE_DELETE)                                              \
    X(_ZdaPvSt11align_val_t, CHURN_FREE_DELETE_ARRAY)                                        \
    X(_ZdlPvmSt11align_val_t, CHURN_FREE_DELETE)                                             \
    X(_ZdaPvmSt11align_val_t, CHURN_FREE_DELETE_ARRAY)                                       \
    X(_ZdlPvSt11align_val_tRKSt9nothrow_t, CHURN_FREE_DELETE)                                \
    X(_ZdaPvSt11align_val_tRKSt9nothrow_t, CHURN_FREE_DELETE_ARRAY)

#endif
