/*
 * Live vs fragmented: per epoch, how the process's resident memory divides into live
 * requested bytes, allocator slack, bytes pinned in partly used spans, free-but-resident
 * memory the allocator keeps, and memory outside the allocator; and which callsites' and
 * size classes' survivors pin the most span bytes.  Definitions and the per-allocator
 * counters used: docs/fragmentation.md.
 */
#ifndef CHURN_FRAGMENT_H
#define CHURN_FRAGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/epochs.h"
#include "heap/livepass.h"
#include "heap/model.h"
#include "read/reader.h"
#include "heap/spans.h"

/* How the allocator's own counters are read (chosen by the names the trace lists). */
enum churn_books {
    CHURN_BOOKS_NONE = 0,
    CHURN_BOOKS_GLIBC,
    CHURN_BOOKS_GPERFTOOLS,
    CHURN_BOOKS_TCMALLOC,
    CHURN_BOOKS_JEMALLOC,
};

typedef struct churn_frag_row {
    uint64_t epoch;
    uint64_t live_count, live_bytes, slack_bytes;
    /* Of live_count and live_bytes, the objects the trace counts live whose addresses it does
       not have: carried in from before its first used segment (a forked child's copies of
       its parent's objects, the live set of segments the ring overwrote) and not freed yet.
       The model places no span for them: their slack and pinning are in the residual. */
    uint64_t unplaced_count, unplaced_bytes;
    int64_t pinned_bytes;        /* span bytes of occupied units - live usable bytes */
    uint64_t span_bytes, spans;
    int has_rss, has_books;
    /* The epoch's books contradict its live set (they count fewer bytes in use than its live
       objects hold): read at another moment than the epoch's end, so not used (has_books 0);
       stale_in_use_bytes is what they counted in use (heap - free resident). */
    int books_stale;
    int rss_stale;               /* the live set's spans alone pass RSS: the RSS reading is
                                    older than the epoch's end (reused while under 1 ms old) */
    int not_resident;            /* the heap passes RSS by more than the epoch allocated: pages
                                    of it were never touched, RSS holds less than the heap */
    int64_t stale_in_use_bytes;
    uint64_t rss_bytes;
    uint64_t heap_bytes;         /* the allocator's resident memory by its counters */
    uint64_t free_resident_bytes;
    int64_t outside_heap_bytes;  /* rss - heap - libchurn's own */
    int64_t residual_bytes;      /* heap - live - slack - pinned - free resident
                                    (live: placed and unplaced) */
    uint64_t mapped_bytes;       /* the program's own mappings (virtual), when has_rss */
    const churn_epoch_row *row;  /* counters as recorded, when the epoch has a summary */
    /* of outside_heap_bytes, anonymous memory growth nothing traced explains: the shim's
       blind-spot estimate (shim/record/blind.c), when the trace carries it */
    int has_untraced;
    uint64_t untraced_bytes;
    /* libchurn's own resident memory (rings, live map, stack table, buffers: shim/base/os.c),
       read by the writer every 10 ms, when the trace carries it; not in outside_heap_bytes */
    int has_own;
    uint64_t own_bytes;
} churn_frag_row;

/* A callsite's (key = stack id) or a usable size's (key = bytes) survivors at the end. */
typedef struct churn_frag_part {
    uint64_t key;
    uint64_t count, live_bytes, usable_bytes;
    double span_share;           /* their shares of the units they sit in */
} churn_frag_part;

typedef struct churn_fragmentation {
    churn_model model;           /* with the allocator's own classes when recorded */
    int from_option;             /* --model chose it, not the trace */
    enum churn_books books;
    int book_counters[4];        /* indices of the counters the books are read from */
    int books_dirty_pages;       /* book_counters[1] counts free resident pages (jemalloc) */
    uint64_t books_page;         /* the allocator's page size, for those pages */
    int books_beside;            /* the counter of a traced runtime allocator's arenas, or -1 */
    int untraced_counter;        /* libchurn.untraced_bytes, or -1 */
    int own_counter;             /* libchurn.own_resident_bytes, or -1 */
    int carried;                 /* the trace began with objects it has no addresses of */
    /* Rows are made on demand from the span snapshots of the window's epochs (taken over
       from the live pass) and the analysis's epoch table: a trace of millions of epochs
       keeps 48 bytes per epoch here, not a row. */
    churn_span_snapshot *snaps;
    size_t nrows;
    const churn_epochs *epochs;
    churn_frag_part *sites, *classes; /* sorted by pinned bytes, descending */
    size_t nsites, nclasses;
    /* The callsites' survivors at the end of the epoch before the teardown (the epoch the
       exit ended): what the program held, not what its exit left.  has_before 0 without a
       teardown or when its frees were too many to keep (livepass.h). */
    int has_before;
    uint64_t before_epoch;
    churn_frag_part *before_sites;
    size_t nbefore;
    /* The same at the epoch of the most pinned bytes, when that is another epoch (filled by
       churn_fragment_take_peak from a pass that ends there). */
    int has_peak;
    uint64_t peak_epoch;
    churn_frag_part *peak_sites;
    size_t npeak;
} churn_fragmentation;

/* The model for a trace: --model's when given (option may be NULL), else the one its first
   segment's allocator record names.  Returns 0 and a one-line reason for a bad option. */
int churn_fragment_model(churn_trace *t, const char *option, churn_model *m, int *from_option,
                         char *err, size_t errlen);

struct churn_analysis;

/* Builds the table from the span snapshots (which it takes over from spans), the analysis's
   epoch rows and allocator counters, and the live set the pass ended with. */
void churn_fragment_build(churn_fragmentation *f, const churn_model *m, int from_option,
                          churn_spans *spans, const churn_live_pass *p,
                          const struct churn_analysis *a);

/* The epoch up to `until` with the most pinned bytes, or UINT64_MAX without such rows. */
uint64_t churn_fragment_peak_epoch(const churn_fragmentation *f, uint64_t until);
/* Takes the survivors of `from` (a pass whose window ends at the peak epoch) as f's ranking at
   the peak. */
void churn_fragment_take_peak(churn_fragmentation *f, churn_fragmentation *from);

/* Row i of the window, 0 <= i < f->nrows. */
void churn_frag_row_at(const churn_fragmentation *f, size_t i, churn_frag_row *out);
/* The exit's epoch (exit_epoch; UINT64_MAX: none) carries no reading of the books: the last
   row before it that has one, when the last row is the exit's without books. */
int churn_frag_last_read(const churn_fragmentation *f, uint64_t exit_epoch, churn_frag_row *out);
/* A row of an allocator with books (books: not CHURN_BOOKS_NONE) that has none of its own
   (closed at the exit, stale, or before the writer's first reading): its heap is taken as what
   the live set occupies, so outside_heap_bytes holds what the allocator keeps free as well. */
static inline int churn_frag_outside_with_free(const churn_frag_row *r, int books)
{
    return books && r->row && !r->has_books;
}
/* Counter `counter` (an index, -1 for none) at an epoch's row: the shim's own figures. */
int churn_frag_counter_at(int counter, const churn_epoch_row *row, const churn_epochs *t,
                      uint64_t *bytes);

static inline double churn_frag_pinned(const churn_frag_part *p)
{
    return p->span_share - (double)p->usable_bytes;
}

void churn_fragment_free(churn_fragmentation *f);

#endif
