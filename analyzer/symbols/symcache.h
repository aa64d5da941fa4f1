/*
 * A persistent cache of symbolized frames, one file per module build id, so that analyzing
 * traces of the same binaries again does not read their debug info again: opening libc's
 * separate debug info means inflating tens of megabytes of compressed DWARF, most of a small
 * trace's analysis.  Only modules symbolized with DWARF are cached (a module without debug
 * info is cheap to read, and installing its debug info later must show).
 *
 * Where: $CHURN_SYMBOL_CACHE if set ("off" or empty: no cache), else
 * $XDG_CACHE_HOME/libchurn/symbols, else $HOME/.cache/libchurn/symbols.  A file is written to
 * a temporary name and renamed, so concurrent analyzers never see half of one; a file that
 * does not parse is ignored and rewritten.
 */
#ifndef CHURN_SYMCACHE_H
#define CHURN_SYMCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "symbols/symbolize.h"

/* The cache directory (malloc'd), or NULL when caching is off or no home is known. */
char *churn_symcache_dir(void);

/* One cached address: its offset from the module's load bias and its frames (module fields
   unset). */
typedef void (*churn_symcache_fn)(void *ctx, uint64_t offset, const churn_frame *frames,
                                  size_t n);

/* Reads the file of a build id, calling fn per entry (strings valid during the call only).
   Returns 1 when a well-formed file was read, 0 otherwise (nothing is called then). */
int churn_symcache_load(const char *dir, const uint8_t *build_id, size_t len,
                        churn_symcache_fn fn, void *ctx);

typedef struct churn_symcache_item {
    uint64_t offset;
    const churn_frame *frames;
    size_t n;
} churn_symcache_item;

/* Writes the file of a build id anew with these entries; failures are silent (a cache). */
void churn_symcache_save(const char *dir, const uint8_t *build_id, size_t len,
                         const churn_symcache_item *items, size_t n);

#endif
