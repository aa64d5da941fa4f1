/*
 * Allocators that the blind-spot detector (shim/record/blind.c) can name in the module it blames when
 * that module does not carry the names libchurn traces them by: linked into a program without
 * their names (Bun's mimalloc) or into a stripped executable (Biome's jemalloc), they cannot be
 * traced, and saying which one is there tells the user what is missing.  One is recognised by
 * a message only it prints among the module's bytes, and only when none of the module's
 * symbols ends in the name the named way in finds it by.  The trace carries the index + 1 in
 * the counter libchurn.untraced_allocator (0: none), which the analyzer turns back into the
 * name.
 */
#ifndef CHURN_ALLOCATORS_H
#define CHURN_ALLOCATORS_H

typedef struct churn_hidden_allocator {
    const char *name;
    const char *message;   /* the prefix of its warnings, among the bytes of its code's file */
    const char *named_by;  /* a symbol ending so is the named way in's entry for it */
} churn_hidden_allocator;

static const churn_hidden_allocator churn_hidden_allocators[] = {
    {"mimalloc", "mimalloc: warning: ", "mi_malloc"},
    {"jemalloc", "<jemalloc>: ", "mallocx"}, /* mallocx, je_mallocx, _rjem_mallocx */
};
#define CHURN_N_HIDDEN_ALLOCATORS (sizeof churn_hidden_allocators / sizeof *churn_hidden_allocators)

#endif
