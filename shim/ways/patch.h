/*
 * Inline patching of a function's entry (x86-64): the first whole instructions covering a
 * 5-byte jmp are moved into a trampoline mapped within +-2 GiB of the function, with their
 * RIP-relative operands and relative branches fixed for the new place, and replaced by a jmp.
 * For start-up, while the process is single-threaded: the entry is rewritten in place, not
 * atomically.  Everything the engine needs (the decoder's memory included) comes from
 * libchurn's own mappings, never from the traced heap.  docs/patching.md has the details.
 */
#ifndef CHURN_PATCH_H
#define CHURN_PATCH_H

#include <stddef.h>
#include <stdint.h>

/* Calls of fn go to replacement; *original is set to a trampoline that runs fn's original
   code (call it as fn).  0, or -1 with *why saying what could not be relocated, fn
   untouched. */
int churn_patch_redirect(void *fn, void *replacement, void **original, const char **why);

/* Every call of fn first calls hook(), with rdi rsi rdx rcx r8 r9 r10 r11 rax and xmm0-7
   preserved and the stack aligned to 16 bytes at the call, then runs fn unchanged.  0, or
   -1 with *why, fn untouched. */
int churn_patch_entry_hook(void *fn, void (*hook)(void), const char **why);

/* The empty function `empty` (a lone ret, after an endbr64 or not, followed by nop padding up
   to 16 bytes) calls fn instead, which
   returns to empty's caller.  0, or -1 with *why, empty untouched. */
int churn_patch_empty(void *empty, void (*fn)(void), const char **why);

/* Deferred patching, for a process whose other threads run (churn attach): while sites is
   set, the functions above plan and write their trampolines but leave the entry alone and
   append what it would become here (at most cap, *n counting); whoever stops every thread
   writes `now` over `was` at addr (and `was` back to undo).  NULL ends it. */
typedef struct churn_patch_site {
    uint64_t addr, len;
    uint8_t was[24], now[24]; /* len <= 24: the moved instructions' bytes */
} churn_patch_site;
void churn_patch_defer(churn_patch_site *sites, size_t cap, size_t *n);

/* 1 when fn's entry already jumps into libchurn's trampolines (an alias of a function
   patched under another name). */
int churn_patch_done(const void *fn);

#endif
