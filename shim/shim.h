/*
 * Internal interfaces of the shim.  The data flow is one-way:
 *
 *   ways in (interpose.c)  ->  event.c: guard, stack, live map, thread ring
 *                          ->  writer.c (own thread): histograms, ring file
 *                              encode.c: the records (decoded by analyzer/read/records.c)
 *
 * Under CHURN_SAMPLE_BYTES, sample.c sits at event.c's entry: it counts every allocation
 * and free and lets only the sampled ones, and their frees, go on.  interpose.c's malloc,
 * calloc, realloc and free, and way_pymalloc.c's hooks, count an unsampled call themselves
 * (churn_sample_*_quick) and go no further.
 *
 * Nothing here symbolizes or analyzes; nothing here allocates from the traced heap.
 *
 * Below, each file's declarations under its name.  Files with a header of their own: the ways
 * in (way.h: way.c, way_named.c, way_pymalloc.c, way_patch.c, way_tcmalloc.c; the ELF way
 * is interpose.c and cxx.c, with cxx_ops.h listing the C++ operators), the patching engine
 * (patch.h: patch.c), the CFI walker (cfi.h: cfi.c, which keeps the rules, and cfi_parse.c,
 * which reads them from .eh_frame, sharing cfi_rule.h with jitrule.c, the rule for code a
 * runtime generated), the executable's symbols (elfsyms.h: elfsyms.c), a loaded
 * object's imports by their GOT slots (got.h: got.c, for dlopen.c and fds.c), and the
 * writer's per-segment tables and record encoder (segstate.h: segstate.c; encode.h:
 * encode.c), and the seccomp filter run on libchurn's own calls (seccomp_filter.h, shared with
 * cli/attach.c).  exec.c (the exec wrappers) has one declaration under writer.c; fatal.c (the
 * handlers of the signals that end the process) and seccomp.c theirs under exit.c; stop.c (the
 * program's handlers of the signals that ask it to stop, behind one of ours) its own under
 * them.
 */
#ifndef CHURN_SHIM_H
#define CHURN_SHIM_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "walk/cfi.h"
#include "churn/format.h"

#define CHURN_LIKELY(x) __builtin_expect(!!(x), 1)
#define CHURN_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define CHURN_API __attribute__((visibility("default")))

/* ---- options.c: every CHURN_* variable, read once ---- */
/* CHURN_UNWIND: the CFI walker with libunwind behind it, libunwind alone, frame pointers, or
   the test mode that runs the first two on every stack and aborts when they differ. */
enum churn_unwind_mode { CHURN_UNWIND_CFI, CHURN_UNWIND_LIBUNWIND, CHURN_UNWIND_FP,
                         CHURN_UNWIND_VERIFY };

typedef struct churn_options {
    char out[4096];          /* CHURN_OUT */
    uint64_t ring_bytes;     /* CHURN_RING_MB */
    int events;              /* CHURN_EVENTS */
    int epoch_signal;        /* CHURN_EPOCH_SIGNAL, 0 = none */
    uint64_t epoch_ms;       /* CHURN_EPOCH_MS, 0 = none */
    char epoch_at[4096];     /* CHURN_EPOCH_AT, "" = none */
    unsigned stack_depth;    /* CHURN_STACK_DEPTH */
    uint32_t stack_sample;   /* CHURN_STACK_SAMPLE */
    uint64_t sample_bytes;   /* CHURN_SAMPLE_BYTES, 0 = every allocation */
    int unwind;              /* CHURN_UNWIND, an enum churn_unwind_mode */
    int fork_follow;         /* CHURN_FORK=follow (1) or stop (0) */
    uint64_t segment_bytes;  /* CHURN_SEGMENT_KB */
    uint64_t flush_ms;       /* CHURN_FLUSH_MS */
    int zstd_level;          /* CHURN_ZSTD_LEVEL */
    int quiet;               /* CHURN_QUIET */
    int runtime_frames;      /* CHURN_RUNTIME_FRAMES */
} churn_options;

extern churn_options churn_opt;
/* Reads the environment; returns 0, or -1 after printing one line about a bad value. */
int churn_options_load(void);
/* Prints the option table (CHURN_HELP=1). */
void churn_options_print_help(void);

/* ---- os.c: the only place that talks to the kernel for libchurn's own needs ---- */
void *churn_os_map(size_t bytes);            /* zeroed pages, never from the traced heap */
void churn_os_unmap(void *p, size_t bytes);
/* Resident bytes of libchurn's own mappings (mincore); the writer's, for the RSS split. */
uint64_t churn_os_own_resident(void);
/* Lists libchurn.so's own data and .bss among those mappings (once, at start-up). */
void churn_os_list_own_image(void);
void churn_os_after_fork_child(void);
/* A mapping of /proc/self/maps: its bounds, its PROT_* and the end of the one before it. */
typedef struct churn_vma {
    uintptr_t lo, hi, before;
    int prot;
} churn_vma;
/* The mapping that holds addr: 0, or -1 when none does or the file cannot be read. */
int churn_os_vma(uintptr_t addr, churn_vma *out);
/* The path of the mapping that holds addr, read afresh, into path: 0, or -1 when none does,
   it has no path or the path does not fit in size. */
int churn_os_vma_path(uintptr_t addr, char *path, size_t size);
/* fn on each mapping, read afresh, in address order until it returns nonzero; -1 when the
   file cannot be read. */
int churn_os_each_vma(int (*fn)(const churn_vma *v, void *ctx), void *ctx);
/* Between these (nested; start-up, which alone changes no mapping it asks about) the calling
   thread's churn_os_vma reads the file once and looks in what it read. */
void churn_os_maps_hold(void);
void churn_os_maps_release(void);
/* The main thread's stack as pthread_getattr_np gives it, without its allocations; -1 if
   it cannot be read. */
int churn_os_main_stack(uintptr_t *lo, uintptr_t *hi);
/* Copies len bytes of the process's memory at addr through the kernel, which says where it
   cannot be read instead of faulting: the bytes copied (0 where addr is not readable), or -1
   when the kernel cannot be asked (seccomp). */
ssize_t churn_os_read_own(void *buf, const void *addr, size_t len);
void churn_os_note_seccomp(void); /* start-up: a filter already in place asks it no more */
uint64_t churn_now_ns(void);                 /* CLOCK_MONOTONIC */
uint64_t churn_cpu_ns(void);                 /* CLOCK_PROCESS_CPUTIME_ID */
uint64_t churn_thread_cpu_ns(void);          /* CLOCK_THREAD_CPUTIME_ID */
uint64_t churn_rss_bytes(void);              /* async-signal-safe */
void churn_rss_reopen(void);                 /* in a fork child: its own statm */
void churn_rss_close(void);                  /* untraced from now on: the descriptor goes */
pid_t churn_gettid(void);
void churn_futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns);
void churn_futex_wake(_Atomic uint32_t *word);
/* One line on stderr prefixed "libchurn: ", async-signal-safe, unless CHURN_QUIET; only while
   descriptor 2 is still the file it was at churn_log_init (at start-up), never raising SIGPIPE. */
void churn_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void churn_log_init(void);
/* Where set, every line churn_log says (quiet or not) is also kept there, the last one
   replacing the one before: churn attach reads it from the process (attach.c). */
extern char *churn_log_capture;
extern size_t churn_log_capture_size;

/* ---- fds.c: our descriptors: high, passed over by the program's closes, none open where the
   program asks, moved from a number it takes ---- */
int churn_fd_keep(_Atomic int *where, int fd); /* moves fd high (close-on-exec) into *where */
int churn_fd_use(_Atomic int *where); /* its number for one use, held until churn_fd_done;
                                          -1 when gone (*where is -1 then: the program took
                                          its number over past libc), with no done */
void churn_fd_done(_Atomic int *where);
void churn_fd_drop(_Atomic int *where);       /* closed; *where -1 */
void churn_fd_guard_unwinder(const void *fn); /* libunwind (fn one of its functions): its
                                                 descriptor calls go through fds.c */
void churn_fd_release_captured(
    void); /* closes libunwind's pipe: the process is no longer traced */
void churn_fds_after_fork_child(void);

/* Small spinlock: the shim's locks are held for a handful of instructions (a hash-table
   probe), never across a call that can block or allocate from the traced heap. */
typedef struct { _Atomic uint32_t held; } churn_spinlock;
int sched_yield(void);
static inline void churn_spin_lock(churn_spinlock *l)
{
    while (atomic_exchange_explicit(&l->held, 1, memory_order_acquire)) {
        /* The holder may have been preempted (two cores, many threads): stop burning the
           core it needs after a short spin. */
        for (unsigned spins = 0; atomic_load_explicit(&l->held, memory_order_relaxed); spins++) {
            if (spins < 64)
                __builtin_ia32_pause();
            else
                sched_yield();
        }
    }
}
static inline void churn_spin_unlock(churn_spinlock *l)
{
    atomic_store_explicit(&l->held, 0, memory_order_release);
}

/* ---- real.c: the allocator next in line, and the bootstrap heap for the earliest calls ---- */
typedef struct churn_real {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*memalign)(size_t, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*usable_size)(void *);
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    int (*munmap)(void *, size_t);
    void *(*mremap)(void *, size_t, size_t, int, ...);
    int (*madvise)(void *, size_t, int);
    int (*brk)(void *);
    void *(*sbrk)(intptr_t);
    void (*exit_)(int) __attribute__((noreturn));
    void (*Exit)(int) __attribute__((noreturn));
    pid_t (*fork)(void);
} churn_real;

extern churn_real churn_next;
/* Resolves churn_next (idempotent, safe to call re-entrantly from dlsym's own calloc). */
void churn_real_resolve(void);
void *churn_next_of(void *_Atomic *slot, const char *name);
/* The bootstrap heap serves calls made while the real allocator is being looked up. */
void *churn_bootstrap_alloc(size_t size, size_t align);
int churn_bootstrap_owns(const void *p);
size_t churn_bootstrap_size(const void *p);

/* ---- the stack a way in may take (its bounds: ucontext.c, thread.c, below) ----
   libchurn's record path, its walk apart (which takes only the room it finds, unwind.c),
   needs about 0.6 KiB of stack below a way in's frame: its frames with a walk cut to one
   frame, and the stack table's insert.  A call made with less than CHURN_RECORD_ROOM left
   goes to the allocator as if libchurn were not there, taking no more stack than natively,
   and its event is counted as dropped: a program that runs its stack to the end (and
   catches the fault) never has it end inside libchurn, halfway through an event. */
#define CHURN_RECORD_ROOM 1024u
extern __thread uintptr_t churn_stack_lo;
extern _Atomic uint64_t churn_dropped_events;
static inline __attribute__((always_inline)) int churn_stack_short(void)
{
    if (CHURN_LIKELY((uintptr_t)__builtin_frame_address(0) - churn_stack_lo >=
                     CHURN_RECORD_ROOM))
        return 0;
    atomic_fetch_add_explicit(&churn_dropped_events, 1, memory_order_relaxed);
    return 1;
}

/* ---- state.c: process-wide lifecycle ---- */
enum churn_state { CHURN_OFF = 0, CHURN_INITIALIZING, CHURN_ON, CHURN_FINISHED, CHURN_DISABLED };
extern _Atomic int churn_state;
extern __thread int churn_in_shim;  /* re-entrancy guard: our own work is never traced */
/* Set by a way in around an allocator's own work that holds no lock the writer needs (CPython's
   pymalloc mapping an arena): the mappings recorded there may wait for room in the ring. */
extern __thread int churn_internal_may_wait;
/* Brings the shim up on the first intercepted call or in the constructor. */
void churn_ensure_init(void);
static inline int churn_tracing(void)
{
    return CHURN_LIKELY(atomic_load_explicit(&churn_state, memory_order_relaxed) == CHURN_ON) &&
           !churn_in_shim && !churn_stack_short();
}
/* 1 once the program's main has been entered (its static constructors have run). */
int churn_main_started(void);

/* ---- guard.c: where the guard was taken, and the jumps that leave it ----
   CHURN_GUARD holds churn_in_shim to the end of its block, also when the block is left by an
   exception or by the thread's cancellation (the shim is built with -fexceptions), and notes
   where the outermost hold was taken.  A longjmp or siglongjmp out of a signal handler that
   interrupted the thread inside libchurn runs no cleanup: guard.c's wrappers of those calls
   release the guard when the jump lands outside the frame that took it, where it would
   otherwise stay held, and the thread's events go untraced, for good.  Holds taken without
   CHURN_GUARD (churn_in_shim++) note nothing, and a jump keeps them. */
extern __thread uintptr_t churn_guard_frame; /* an address in the holding frame, or 0 */
static inline int churn_guard_take(const void *frame)
{
    int was = churn_in_shim;
    if (!was)
        churn_guard_frame = (uintptr_t)frame;
    atomic_signal_fence(memory_order_seq_cst); /* the frame is noted before the guard is held */
    churn_in_shim = 1;
    return was;
}
static inline void churn_guard_restore(const int *was)
{
    churn_in_shim = *was;
    if (!*was)
        churn_guard_frame = 0;
}
#define CHURN_GUARD()                                                                          \
    int churn_guard_ __attribute__((cleanup(churn_guard_restore))) =                           \
        churn_guard_take(&churn_guard_)
/* The guard taken by a way in that has just found it free (churn_tracing) and calls nothing
   under it that can throw: nothing to restore but the free guard, which churn_guard_let_go
   (or a record call ending in _let_go, so that the way in ends in a tail call) does. */
static inline __attribute__((always_inline)) void churn_guard_hold(void)
{
    churn_guard_frame = (uintptr_t)__builtin_frame_address(0);
    atomic_signal_fence(memory_order_seq_cst); /* the frame is noted before the guard is held */
    churn_in_shim = 1;
}
static inline __attribute__((always_inline)) void churn_guard_let_go(void)
{
    churn_in_shim = 0;
    churn_guard_frame = 0;
}
/* Finds the functions the jump wrappers call, at start-up: a jump may come from a signal
   handler, where the loader cannot be asked. */
void churn_guard_init(void);
/* ---- exit.c: how the process ends ---- */
/* Final flush: drain, write CHURN_REC_EXIT, close the trace.  Any thread, once; a second
   caller waits (bounded) for the first; a vfork child does nothing. */
void churn_finish(int how, int detail);
void churn_exit_reset(void);          /* a copy attached again: its next trace can finish */
void churn_exit_install(void);        /* patches exit, quick_exit, _exit (start-up) */
void churn_exit_main_returned(int status);
void churn_exit_destructor(void);
void churn_exit_writer_started(void); /* the writer is not one of glibc's counted threads */
int churn_exit_writer_returning(void); /* -1: the process is in its last exit, never return */
int churn_exit_only_writer(int *status); /* 1: every other thread has ended */
/* fatal.c: flush on SEGV, BUS, ILL, FPE, ABRT and the signals whose default ends the process */
void churn_fatal_install(void);
void churn_fatal_uninstall(void); /* the defaults back where ours stand in (tracing stopped) */
/* seccomp.c: before the program installs a filter (op SECCOMP_SET_MODE_*, uprog its struct
   sock_fprog): tracing ends first where the filter stops a call libchurn makes. */
void churn_seccomp_before(unsigned op, const void *uprog);

/* stop.c: a handler of the program's for a signal that asks it to stop (TERM, INT, QUIT) goes
   in behind one of ours that notes the signal.  churn_stop_wants: sig is such a signal and
   act installs a handler; churn_stop_install installs ours in front of it with `set` (the
   real sigaction), returning its result; churn_stop_shown: `installed` is ours, and *act the
   program's action to show in its place; churn_stop_previous: a handler read back, as the
   program knows it; churn_stop_caught: the last such signal caught (0: none). */
int churn_stop_wants(int sig, const struct sigaction *act);
int churn_stop_install(int sig, const struct sigaction *act,
                       int (*set)(int, const struct sigaction *, struct sigaction *));
int churn_stop_shown(int sig, const struct sigaction *installed, struct sigaction *act);
sighandler_t churn_stop_previous(int sig, sighandler_t previous);
uint64_t churn_stop_caught(void);
void churn_stop_reset(void);

/* ---- attach.c: churn attach, a shim loaded into a running process ---- */
/* 1 when the process did not preload libchurn: `churn attach` loaded it with dlopen, and
   nothing traces until churn_attach_start. */
int churn_attach_loaded(void);
/* churn_attach_start's answer when this copy cannot trace again (its last trace did not
   finish): the tracer loads a fresh copy instead (cli/attach.c). */
#define CHURN_ATTACH_NOT_REUSABLE (-2)
void churn_atfork_register(void); /* state.c: the fork handlers, once tracing starts */
/* Defaults, then the NAME=VALUE lines of config (options.c); -1 after one line. */
int churn_options_load_config(const char *config);

/* ---- epoch_at.c: CHURN_EPOCH_AT ---- */
/* Hooks every function the comma-separated list names; -1 after one line on stderr. */
int churn_epoch_at_install(const char *list);

/* ---- epoch.c ---- */
extern _Atomic uint64_t churn_epoch_now;
/* tcmalloc's 13, libchurn's 9 (the blind-spot detector's 7, its own memory, the stop signal),
   a named allocator's 4, pymalloc's arenas' 2: 28 at most, and room */
#define CHURN_MAX_COUNTERS 30
typedef struct churn_tick {
    _Atomic uint64_t seq;   /* epoch + 1 once published */
    uint64_t end_ns, cpu_ns, rss;
    int counters_read;      /* the allocator's counters were read at the tick itself */
    uint64_t counters[CHURN_MAX_COUNTERS];
} churn_tick;
#define CHURN_TICK_SLOTS 4096u
extern churn_tick churn_ticks[CHURN_TICK_SLOTS];
extern uint64_t churn_start_ns, churn_start_cpu_ns;
uint64_t churn_epoch_advance(void);       /* async-signal-safe */
uint64_t churn_epoch_advance_last(void);  /* the same, for the trace's last epoch */
void churn_epoch_after_fork_child(void);
/* The same from the program's own code (churn_epoch(), CHURN_EPOCH_AT): also reads the
   allocator's counters at that instant when the allocator allows it (counters_at_tick). */
uint64_t churn_epoch_advance_in_program(void);
void churn_epoch_install_triggers(void);  /* signal handler and timer per options */
int churn_epoch_timer_due(uint64_t now_ns);

/* ---- ucontext.c, thread.c: the bounds of the stack a thread runs on ----
   The thread's own stack (thread.c, when it registers), or the coroutine stack it switched to
   with swapcontext or setcontext, whose ucontext names it (ucontext.c); both 0 when libchurn
   does not know them: a context without a stack of its own, or a thread that has not
   registered.  A stack the program switches to by its own means is not here: the walk finds
   the stack pointer outside these bounds and takes that stack as unknown (unwind.c). */
extern __thread uintptr_t churn_stack_lo, churn_stack_hi;
/* A longjmp or siglongjmp lands at target (a stack pointer): the bounds follow it there. */
void churn_stack_jumped(uintptr_t target);
typedef struct {
    uintptr_t lo, hi;
} churn_stack_range;

/* ---- unwind_checked.c: libunwind with every read checked ---- */
#define CHURN_UNWIND_STACKS 3
/* A thread's state for it (a register context and a cursor), in its ring's mapping. */
typedef struct {
    _Alignas(64) unsigned char bytes[3u << 10];
} churn_unwind_checked_state;
void churn_unwind_checked_init(void);
void churn_unwind_checked_forget(void); /* code was unloaded: its CFI is gone */
/* The calling thread's stack, return addresses innermost first (this function's caller's
   first), at most max.  Memory is read only inside stacks[0] from the stack pointer up (the
   stack the walk runs on), the mapped pages of the other stacks, and the loaded objects'
   readable segments: a frame whose rules lead anywhere else ends the walk there. */
unsigned churn_unwind_checked(churn_unwind_checked_state *state, uintptr_t *ips, unsigned max,
                              const churn_stack_range *stacks, unsigned nstacks);

/* ---- unwind.c ---- */
void churn_unwind_init(void);
/* Captures the caller's stack (innermost first, libchurn's own frames skipped, at most max)
   and a key for the thread's stack-id cache: its churn_stack_hash, or for a stack cut to max
   a hash of the whole walk.  When *partial is set only the key is written: the frames, and
   the stack's own hash, come from churn_unwind_complete, called before the thread's next
   churn_unwind, which returns the depth. */
unsigned churn_unwind(uintptr_t *ips, unsigned max, uint64_t *key, int *partial);
unsigned churn_unwind_complete(uintptr_t *ips, unsigned max, uint64_t *hash);
/* Walks cut short to the caller of the way in, for want of stack to walk on (a signal handler
   on a small sigaltstack): so many so far in this process. */
uint64_t churn_unwind_short_stacks(void);
void churn_unwind_reset_counts(void); /* a copy attached again counts its trace's own */
/* Frames in [lo, hi) at the top of a stack are dropped too (range i of 2). */
void churn_unwind_skip_allocator(unsigned i, uintptr_t lo, uintptr_t hi);

/* ---- stacks.c: deduplicated stack table, lock-free lookups ---- */
void churn_stacks_init(void);
uint32_t churn_stack_intern(const uintptr_t *ips, unsigned depth, uint64_t hash);
uint64_t churn_stack_hash(const uintptr_t *ips, unsigned depth);
/* The same from the chain of churn_chain_step over the frames, outermost first (cfi.h). */
uint64_t churn_stack_hash_chained(uint64_t chain, unsigned depth);
/* For the writer: the stack with this id, or NULL. */
const uintptr_t *churn_stack_get(uint32_t id, unsigned *depth);
/* How many modules were known when the stack was first seen (churn_module.unloaded_at). */
uint32_t churn_stack_generation(uint32_t id);
void churn_stacks_lock(void);     /* fork */
void churn_stacks_unlock(void);

/* ---- order.c: the order of events on one address, the program threads' only shared step ----

   Every heap event takes the next number of its address's shard (a 64 KiB region's, so a
   burst of one thread stays on one cache line) with one compare-and-swap on the shard's word,
   a free before the real free runs and an allocation after the real malloc returned.  Memory
   passes between threads only through the allocator, which orders that itself, so along one
   address the numbers follow the real order: a free of one thread before the allocation that
   reuses its address on another, an allocation before the free of another thread that got the
   object from it.  The writer merges the rings by these numbers (writer.c) and keeps the live
   map (livemap.c) in that order.  A number taken is pushed (the ring's room is made first;
   a realloc's free, numbered before the real realloc, may wait for room after it), handed
   back as a SKIP (a failed realloc), or lost with a dropped event, and then let go by the
   writer (writer.c).

   The word also holds the highest epoch an operation of the shard has seen, and an operation
   takes the larger of that and the epoch it read: so epochs never go backwards along a
   shard's numbers, which the writer's merge, an epoch at a time, relies on.  An epoch read
   by a thread preempted before its operation is raised to the shard's, which is when the
   operation happened. */
#define CHURN_LIVEMAP_SHARDS 256u
static inline unsigned churn_livemap_shard(uintptr_t addr)
{
    return (unsigned)((((uint64_t)addr >> 16) * 0x9e3779b97f4a7c15u) >> 56);
}
typedef struct churn_order_word {
    _Alignas(64) _Atomic uint64_t word; /* epoch << 32 | next number */
} churn_order_word;
extern churn_order_word churn_order[CHURN_LIVEMAP_SHARDS];
/* The operation's number; *epoch, the epoch the caller read, is raised to the shard's. */
static inline uint32_t churn_order_take(uintptr_t addr, uint32_t *epoch)
{
    _Atomic uint64_t *w = &churn_order[churn_livemap_shard(addr)].word;
    uint64_t old = atomic_load_explicit(w, memory_order_relaxed), next;
    uint32_t e;
    do {
        e = *epoch;
        if ((int32_t)(e - (uint32_t)(old >> 32)) < 0)
            e = (uint32_t)(old >> 32);
        next = (uint64_t)e << 32 | (uint32_t)(old + 1);
    } while (!atomic_compare_exchange_weak_explicit(w, &old, next, memory_order_acq_rel,
                                                    memory_order_relaxed));
    *epoch = e;
    return (uint32_t)old;
}
/* Every shard's next number (fork: the child's writer starts from them). */
void churn_order_next(uint32_t *next);

/* ---- livemap.c: the writer's map, address -> (size, slack, stack, epoch) of every live
   object, updated in each address's order (order.c), so that a free says what it frees ---- */
#define CHURN_SLACK_UNKNOWN UINT64_MAX
typedef struct churn_live {
    uint64_t size;
    uint64_t slack;  /* usable - size, known at the allocation; or CHURN_SLACK_UNKNOWN */
    uint32_t stack;
    uint32_t epoch;
    /* The encoder's note (encode.c): the segment the allocation was written in (its
       churn_seg_current, 0 for none) and its number there, which a free in the same segment
       names instead of describing itself. */
    uint32_t seg;
    uint32_t number;
} churn_live;
/* The writer's thread only (or a single-threaded process: fork's child); shard is
   churn_livemap_shard(addr), which the writer's merge has at hand.  Returns the new entry,
   for the encoder's note until the next call. */
churn_live *churn_livemap_insert(unsigned shard, uintptr_t addr, uint64_t size, uint64_t slack,
                                 uint32_t stack, uint32_t epoch);
int churn_livemap_remove(unsigned shard, uintptr_t addr, churn_live *out);
void churn_livemap_clear(void); /* every entry gone, the tables unmapped (writer stopped) */
void churn_livemap_each(void (*fn)(uintptr_t addr, const churn_live *v, void *ctx), void *ctx);

/* ---- thread.c: per-thread event rings, handed to the writer without locks ---- */
/* Heap events (ALLOC, FREE, FREE_UNKNOWN) carry their shard's number (order.c); SKIP is a
   number taken by an operation that has no event (a failed realloc), for the writer's merge. */
enum churn_event_type { CHURN_EV_ALLOC = 1, CHURN_EV_FREE, CHURN_EV_FREE_UNKNOWN, CHURN_EV_MAP,
                        CHURN_EV_SKIP };
static inline int churn_event_numbered(unsigned type)
{
    return type != CHURN_EV_MAP;
}
/* An event at full width, as the ways in build it and the writer reads it back.  A free is
   pushed as its address (and an allocator hook's usable size, or 0): the writer fills in its
   size, usable size, stack and age from the live map, or makes it a FREE_UNKNOWN. */
typedef struct churn_event {
    uint64_t addr;
    uint64_t size;   /* requested size, or mapping length */
    uint64_t usable; /* usable size; for maps: prot | flags << 8, or advice */
    uint64_t aux;    /* maps: new address (mremap); frees: age in epochs */
    uint32_t stack;
    uint32_t epoch;
    uint32_t seq;    /* heap events: the number in the address's shard */
    uint8_t type;
    uint8_t kind;
} churn_event;

/* A ring slot is 32 bytes: the rings are written on the program's cores and read on the
   writer's, so every byte of an event crosses the caches twice.  A heap event takes one slot
   (its slack, usable - size, in 32 bits, a free's age in 24, and its shard number in the top
   16 bits of the address and of the size, which a user-space address and a size that
   could be allocated leave clear); an event with a wider value, and every map event, takes
   two, the second holding usable and aux at full width (a heap event's number in aux's top
   32 bits: its age fits in 32). */
#define CHURN_SLOT_WIDE 0x8u      /* in tag: the next slot is the wide part */
#define CHURN_SLOT_AGE_MAX 0xffffffu
#define CHURN_SLOT_LOW48 ((1ull << 48) - 1)
typedef union churn_slot {
    struct {
        uint64_t addr, size;      /* narrow heap events: seq >> 16 and seq & 0xffff on top */
        uint32_t stack, epoch;
        uint32_t slack;
        uint32_t tag;             /* type | CHURN_SLOT_WIDE | kind << 4 | age << 8 */
    } ev;
    struct {
        uint64_t usable, aux;
    } wide;
} churn_slot;

#define CHURN_RING_EVENTS 16384u /* slots */
/* Direct-mapped per-thread cache of stack ids (event.c).  python3 repeats a few hundred stacks
   and hits 94 % with 256 slots; a workerd request walks ~6,000 distinct stacks and hit 41 %
   there, each miss a search of the shared table: 48 KiB a thread, touched as used. */
#define CHURN_STACK_CACHE 4096u
typedef struct churn_thread {
    _Atomic uint64_t head;          /* events published by the owner */
    char pad0[56];
    _Atomic uint64_t tail;          /* events consumed by the writer */
    char pad1[56];
    /* Owner only: tail as last read, and the head at which to read it again.  The writer
       stores tail as it drains, so reading it on every push would pull its cache line over
       from the writer's core each time. */
    uint64_t tail_seen, tail_check;
    struct churn_thread *next;      /* registry list, guarded by the registry lock */
    _Atomic int exited;             /* owner is gone; recycle once drained */
    pid_t tid;
    uintptr_t stack_lo, stack_hi;   /* pthread's stack range; walks read only [sp, stack_hi) */
    uint32_t sample_left;           /* CHURN_STACK_SAMPLE: allocations until the next walk */
    uint32_t sample_rng;            /* xorshift state of the gaps between walks */
    uint64_t cache_hash[CHURN_STACK_CACHE]; /* key (churn_unwind) -> stack id, owner only */
    uint32_t cache_id[CHURN_STACK_CACHE];
    churn_cfi_thread cfi;           /* the CFI walker's state, owner only */
    churn_unwind_checked_state unw; /* libunwind's, owner only */
    void *py_sites;                 /* pyframes.c's cache of Python frames, owner only */
    /* stack_id's frames, owner only: off the stack, which may be a small sigaltstack */
    uintptr_t ips[CHURN_STACK_MAX_DEPTH + 8];
    churn_slot slots[CHURN_RING_EVENTS];
} churn_thread;

/* CHURN_STACK_SAMPLE=N: allocations between two stack walks, uniform in 1..2N-1 (mean N).
   Random gaps, because a fixed one lines up with a loop that allocates a multiple of N
   objects a turn and walks the same callsite every time. */
static inline uint32_t churn_stack_sample_gap(churn_thread *t)
{
    uint32_t x = t->sample_rng;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    t->sample_rng = x;
    return 1u + (uint32_t)(((uint64_t)x * (2u * churn_opt.stack_sample - 1u)) >> 32);
}

/* Writer side: the event at ring position pos (published, so whole); returns the slots it
   takes, 1 or 2. */
static inline unsigned churn_ring_read(const churn_thread *t, uint64_t pos, churn_event *ev)
{
    const churn_slot *s = &t->slots[pos % CHURN_RING_EVENTS];
    uint32_t tag = s->ev.tag;
    ev->addr = s->ev.addr;
    ev->size = s->ev.size;
    ev->stack = s->ev.stack;
    ev->epoch = s->ev.epoch;
    ev->type = (uint8_t)(tag & 7u);
    ev->kind = (uint8_t)((tag >> 4) & 15u);
    ev->seq = 0;
    if (CHURN_LIKELY(!(tag & CHURN_SLOT_WIDE))) {
        ev->seq = (uint32_t)(ev->addr >> 48 << 16 | ev->size >> 48);
        ev->addr &= CHURN_SLOT_LOW48;
        ev->size &= CHURN_SLOT_LOW48;
        ev->usable = ev->size + s->ev.slack;
        ev->aux = tag >> 8;
        return 1;
    }
    const churn_slot *x = &t->slots[(pos + 1) % CHURN_RING_EVENTS];
    ev->usable = x->wide.usable;
    ev->aux = x->wide.aux;
    if (churn_event_numbered(ev->type)) {
        ev->seq = (uint32_t)(ev->aux >> 32);
        ev->aux &= 0xffffffffu;
    }
    return 2;
}
/* The epoch of the event at pos, without decoding the rest. */
static inline uint32_t churn_ring_epoch(const churn_thread *t, uint64_t pos)
{
    return t->slots[pos % CHURN_RING_EVENTS].ev.epoch;
}

churn_thread *churn_thread_self(void);
/* The calling thread's ring if it has one, without registering: registering calls into libc
   (pthread_getattr_np, pthread_setspecific) which may allocate, and an event recorded from
   inside the allocator must not re-enter it. */
churn_thread *churn_thread_current(void);
/* For an event from inside the allocator: the calling thread's ring, started (not registered)
   if it has none yet, so that the allocator's own mappings before a thread's first traced
   call are not lost; NULL only when libchurn's memory ran out. */
churn_thread *churn_thread_inside_allocator(void);

/* Pushing an event: inline in the recording code and by value, so the event stays in
   registers.  Built in memory with 4- and 8-byte stores and read back with wider loads, it
   stalled every push on store forwarding (40 % of the push's samples on python3). */
void churn_thread_push_slow(churn_thread *t, uint64_t head, churn_event ev, uint64_t slack,
                            int narrow, int may_wait);

/* Fills the slots at head and publishes them. */
static inline __attribute__((always_inline)) void churn_thread_put(churn_thread *t, uint64_t head, churn_event ev,
                                    uint64_t slack, int narrow)
{
    churn_slot *s = &t->slots[head % CHURN_RING_EVENTS];
    s->ev.stack = ev.stack;
    s->ev.epoch = ev.epoch;
    uint32_t tag = ev.type | (uint32_t)ev.kind << 4;
    if (CHURN_LIKELY(narrow)) {
        s->ev.addr = ev.addr | (uint64_t)(ev.seq >> 16) << 48;
        s->ev.size = ev.size | (uint64_t)(ev.seq & 0xffffu) << 48;
        s->ev.slack = (uint32_t)slack;
        s->ev.tag = tag | (uint32_t)ev.aux << 8;
        atomic_store_explicit(&t->head, head + 1, memory_order_release);
        return;
    }
    s->ev.addr = ev.addr;
    s->ev.size = ev.size;
    s->ev.slack = 0;
    s->ev.tag = tag | CHURN_SLOT_WIDE;
    churn_slot *x = &t->slots[(head + 1) % CHURN_RING_EVENTS];
    x->wide.usable = ev.usable;
    x->wide.aux = churn_event_numbered(ev.type) ? ev.aux | (uint64_t)ev.seq << 32 : ev.aux;
    atomic_store_explicit(&t->head, head + 2, memory_order_release);
}

/* Whether the event fits one slot; *slack its usable - size. */
static inline __attribute__((always_inline)) int churn_event_narrow(churn_event ev,
                                                                   uint64_t *slack)
{
    /* usable below size wraps the slack past 32 bits, so it takes the wide form too */
    *slack = ev.usable - ev.size;
    return ((*slack >> 32) | (ev.aux / (CHURN_SLOT_AGE_MAX + 1u)) |
            ((ev.addr | ev.size) >> 48)) == 0 &&
           ev.type != CHURN_EV_MAP;
}

/* may_wait: a full ring makes the caller wait for room (else the event is dropped, counted). */
static inline __attribute__((always_inline)) void churn_thread_push(churn_thread *t, churn_event ev, int may_wait)
{
    uint64_t slack;
    int narrow = churn_event_narrow(ev, &slack);
    uint64_t head = atomic_load_explicit(&t->head, memory_order_relaxed);
    if (CHURN_UNLIKELY(head + 2 - narrow > t->tail_check))
        churn_thread_push_slow(t, head, ev, slack, narrow, may_wait);
    else
        churn_thread_put(t, head, ev, slack, narrow);
}

/* Before a heap event takes its number (order.c), so that its push need not wait: makes sure the
   ring has room for the widest event, waiting for it here if need be.  Returns 0 when there
   is none (the event will be dropped, counted, and takes no number).  *head: where the room
   begins, for churn_thread_push_at. */
int churn_thread_room_slow(churn_thread *t, uint64_t head);
static inline __attribute__((always_inline)) int churn_thread_room(churn_thread *t,
                                                                  uint64_t *head)
{
    *head = atomic_load_explicit(&t->head, memory_order_relaxed);
    return CHURN_LIKELY(*head + 2 <= t->tail_check) || churn_thread_room_slow(t, *head);
}

/* The event for which churn_thread_room made room at head goes there without a second look
   at the tail, unless a push came in between (a mapping made by a signal handler's call
   into the allocator, which takes the ring's reserve), which the common push sorts out. */
static inline __attribute__((always_inline)) void churn_thread_push_at(churn_thread *t,
                                                                      uint64_t head,
                                                                      churn_event ev)
{
    if (CHURN_UNLIKELY(atomic_load_explicit(&t->head, memory_order_relaxed) != head)) {
        churn_thread_push(t, ev, 0);
        return;
    }
    uint64_t slack;
    int narrow = churn_event_narrow(ev, &slack);
    churn_thread_put(t, head, ev, slack, narrow);
}

/* Writer side: it made room in the rings; wakes producers waiting for it. */
void churn_threads_room_made(void);
/* Writer side: iterate the registry; recycles drained rings of exited threads. */
void churn_threads_each(void (*fn)(churn_thread *t, void *ctx), void *ctx);
void churn_threads_after_fork_child(void);
void churn_threads_lock(void);
void churn_threads_unlock(void);
extern _Atomic uint64_t churn_dropped_events;

/* ---- event.c: what every way in calls after the real allocator answered ---- */
void churn_record_alloc(void *p, size_t size, int kind);
/* The same when the way in already knows the usable size (an allocator hook tells it). */
void churn_record_alloc_usable(void *p, size_t size, size_t usable, int kind);
void churn_record_free_usable(void *p, size_t usable, int kind);
void churn_record_free(void *p, int kind);  /* before the real free */
/* The same under churn_guard_hold, which they let go of: the allocation's returns p, the
   free's makes the real free first (under the guard: state.c, fork). */
void *churn_record_alloc_let_go(void *p, size_t size, int kind);
void churn_record_free_let_go(void *p, int kind);
void *churn_record_realloc(void *p, size_t size); /* calls the real realloc */
/* The same around a realloc of another shape (realloc_end after the call): begin returns 0
   when there is nothing to take out (p NULL, or no ring), and the call is then recorded, if
   at all, as a plain allocation. */
typedef struct churn_realloc_old {
    struct churn_thread *t;
    uint32_t epoch, seq; /* the free's place in the address's order (order.c) */
    int recorded;        /* the old block is in the trace (CHURN_SAMPLE_BYTES: it was sampled) */
} churn_realloc_old;
int churn_realloc_begin(void *p, churn_realloc_old *o);
void churn_realloc_end(void *p, const churn_realloc_old *o, void *q, size_t size, size_t usable,
                       int freed_on_failure);
void churn_record_map(int kind, void *addr, size_t len, uint64_t a, void *b);

/* ---- sample.c: CHURN_SAMPLE_BYTES, a Poisson process over the bytes allocated ---- */
enum { CHURN_SAMPLE_ALLOCS, CHURN_SAMPLE_ALLOC_BYTES, CHURN_SAMPLE_FREES, CHURN_SAMPLE_COUNTERS };
/* One thread's running totals of every allocation and free, sampled or not, and where each
   of its epochs began in them: the owner adds with plain stores and appends to hist when it
   counts in a new epoch; the writer reads both without a lock (churn_sample_collect) and
   keeps what it has counted in credited, and how far it read hist in read. */
#define CHURN_SAMPLE_HISTORY 512u
typedef struct churn_sample_counts {
    /* the owner's line */
    _Atomic uint64_t total[CHURN_SAMPLE_COUNTERS];
    _Atomic uint64_t hist_head;                    /* entries appended to hist so far */
    char pad0[32];
    /* the writer's and the registry's */
    _Atomic int in_use;
    struct churn_sample_counts *next;
    uint64_t credited[CHURN_SAMPLE_COUNTERS];      /* writer only */
    _Atomic uint64_t read;                         /* hist entries the writer is done with */
    char pad1[16];
    struct {
        _Atomic uint64_t epoch;                    /* from total = start on, this epoch */
        _Atomic uint64_t start[CHURN_SAMPLE_COUNTERS];
    } hist[CHURN_SAMPLE_HISTORY];
} churn_sample_counts;
typedef struct churn_sample_thread {
    uint64_t left;                /* bytes until the next sample point */
    uint64_t mean;                /* the CHURN_SAMPLE_BYTES left was drawn with */
    uint64_t rng;                 /* 0 until the thread's first allocation */
    churn_sample_counts *counts;
    uint64_t epoch;               /* the epoch counts counts in (UINT64_MAX: none yet) */
} churn_sample_thread;
extern __thread churn_sample_thread churn_sample_self;
churn_sample_counts *churn_sample_counts_slow(void);
void churn_sample_new_epoch(uint64_t epoch);
int churn_sample_alloc_slow(uintptr_t p, uint64_t size);
int churn_sample_take_slow(uintptr_t p);
int churn_sample_insert(uintptr_t p);
/* Writer: the allocations, bytes and frees counted since its previous call, of epochs up to
   epoch (closing it). */
void churn_sample_collect(uint64_t epoch, uint64_t *allocs, uint64_t *alloc_bytes,
                          uint64_t *frees);
/* What a sampled object of size bytes stands for (1/p objects), and its part of the variance
   of a sum of sizes weighted so. */
double churn_sample_weight(uint64_t size, double *variance);
void churn_sample_lock(void);   /* fork */
void churn_sample_unlock(void);
void churn_sample_after_fork_child(void);
void churn_sample_reset(void);  /* a copy attached again: its next trace (attach.c) */

/* The filter in front of the set of sampled addresses (sample.c): one bit per bucket of
   addresses, set while a sampled address of the bucket is live.  2 KiB, so that the free
   path's one read of it stays in the first-level cache. */
#define CHURN_SAMPLE_FILTER_BITS 14
#define CHURN_SAMPLE_FILTER (1u << CHURN_SAMPLE_FILTER_BITS)
extern _Atomic uint64_t churn_sample_filter[CHURN_SAMPLE_FILTER / 64];
static inline unsigned churn_sample_bucket(uintptr_t p)
{
    return (unsigned)(((uint64_t)(p >> 4) * 0x9e3779b97f4a7c15ull) >> (64 - CHURN_SAMPLE_FILTER_BITS));
}

/* The thread's counts, in the current epoch.  The epoch is compared with the thread's own
   copy, not the block's: one load fewer in the chain on every call. */
static inline churn_sample_counts *churn_sample_counts_now(void)
{
    uint64_t epoch = atomic_load_explicit(&churn_epoch_now, memory_order_relaxed);
    churn_sample_thread *t = &churn_sample_self;
    if (CHURN_UNLIKELY(t->epoch != epoch || !t->counts))
        churn_sample_new_epoch(epoch);
    return t->counts;
}

/* Only the owner writes its counts, so an add needs no lock, only a store the writer's load
   sees whole: on x86-64 one instruction, which the compiler does not make of an atomic's
   load and store. */
static inline __attribute__((always_inline)) void churn_sample_add(churn_sample_counts *b,
                                                                   int i, uint64_t v)
{
#if defined(__x86_64__)
    __asm__("addq %1, %0" : "+m"(*(uint64_t *)&b->total[i]) : "er"(v));
#else
    atomic_store_explicit(&b->total[i], atomic_load_explicit(&b->total[i], memory_order_relaxed) + v,
                          memory_order_relaxed);
#endif
}

/* Counts an allocation; 1 when it is sampled (then its address is in the set and it is to
   be recorded). */
static inline int churn_sample_alloc(void *p, size_t size)
{
    churn_sample_counts *b = churn_sample_counts_now();
    churn_sample_add(b, CHURN_SAMPLE_ALLOCS, 1);
    churn_sample_add(b, CHURN_SAMPLE_ALLOC_BYTES, size);
    churn_sample_thread *t = &churn_sample_self;
    if (CHURN_LIKELY(size < t->left)) {
        t->left -= size;
        return 0;
    }
    return churn_sample_alloc_slow((uintptr_t)p, size);
}

/* 0 when p is not a sampled live address; 1 when it may be. */
static inline int churn_sample_filter_has(void *p)
{
    unsigned bucket = churn_sample_bucket((uintptr_t)p);
    uint64_t w = atomic_load_explicit(&churn_sample_filter[bucket / 64], memory_order_relaxed);
    return (w >> (bucket % 64)) & 1;
}

/* 1 when p was sampled: it is taken out of the set, and its free is to be recorded. */
static inline int churn_sample_take(void *p)
{
    if (CHURN_LIKELY(!churn_sample_filter_has(p)))
        return 0;
    return churn_sample_take_slow((uintptr_t)p);
}

static inline void churn_sample_count_free(void)
{
    churn_sample_add(churn_sample_counts_now(), CHURN_SAMPLE_FREES, 1);
}

/* Counts a free; 1 when it is to be recorded. */
static inline int churn_sample_free(void *p)
{
    churn_sample_count_free();
    return churn_sample_take(p);
}

/* The program thread's whole share of an unsampled call (the fast paths of interpose.c and
   way_pymalloc.c), in two halves around the allocator's call: *_room, before it, says
   whether the call is only to be counted (not libchurn's own call, sampling on in this
   thread's current epoch, no sample falling due, on a free no sampled address); *_commit,
   after it succeeded, counts it.  A call *_room turns down goes the traced way, which
   counts it there.  t->epoch matches the epoch only once the thread's counts are set
   (UINT64_MAX until then), which needs sampling on and the trace up; when the trace ends
   the fast path goes on counting what nothing reads.  Nothing here but loads, compares
   and the counts' stores. */
/* The *_outside forms are for a call that never comes from within libchurn (pymalloc's
   hooks: libchurn calls none of Python's allocators, and pymalloc calls only the raw domain,
   malloc): no guard to check. */
static inline __attribute__((always_inline)) int churn_sample_epoch_outside(void)
{
    return CHURN_LIKELY(churn_sample_self.epoch ==
                        atomic_load_explicit(&churn_epoch_now, memory_order_relaxed));
}

static inline __attribute__((always_inline)) int churn_sample_epoch_current(void)
{
    return churn_sample_epoch_outside() && CHURN_LIKELY(!churn_in_shim);
}

static inline __attribute__((always_inline)) int churn_sample_alloc_room_outside(size_t size)
{
    return churn_sample_epoch_outside() && CHURN_LIKELY(size < churn_sample_self.left);
}

static inline __attribute__((always_inline)) int churn_sample_alloc_room(size_t size)
{
    return CHURN_LIKELY(!churn_in_shim) && churn_sample_alloc_room_outside(size);
}

static inline __attribute__((always_inline)) void churn_sample_alloc_commit(size_t size)
{
    churn_sample_thread *t = &churn_sample_self;
    churn_sample_counts *b = t->counts;
    t->left -= size;
    churn_sample_add(b, CHURN_SAMPLE_ALLOCS, 1);
    churn_sample_add(b, CHURN_SAMPLE_ALLOC_BYTES, size);
}

/* *_room and *_commit in one, for an allocation counted before its call (pymalloc's hooks)
   or after its allocator answered (tcmalloc's): on x86-64 the countdown's test is the flags
   of the subtraction that lowers it, which is put back when a sample falls due. */
static inline __attribute__((always_inline)) int churn_sample_alloc_counted(size_t size)
{
    churn_sample_thread *t = &churn_sample_self;
#if defined(__x86_64__)
    int room;
    __asm__("subq %2, %0" : "+m"(t->left), "=@cca"(room) : "er"(size));
    if (CHURN_UNLIKELY(!room)) {
        t->left += size;
        return 0;
    }
#else
    if (CHURN_UNLIKELY(size >= t->left))
        return 0;
    t->left -= size;
#endif
    churn_sample_counts *b = t->counts;
    churn_sample_add(b, CHURN_SAMPLE_ALLOCS, 1);
    churn_sample_add(b, CHURN_SAMPLE_ALLOC_BYTES, size);
    return 1;
}

/* Takes back the counts of an allocation counted before its call (so that they need not be
   kept across it), which failed (sample.c). */
__attribute__((noinline, cold)) void churn_sample_alloc_uncommit(size_t size);

/* A free's are one: the free is counted before the allocator's call, so that nothing is
   kept across it. */
static inline __attribute__((always_inline)) int churn_sample_free_quick_outside(void *p)
{
    if (!churn_sample_epoch_outside() || churn_sample_filter_has(p))
        return 0;
    churn_sample_add(churn_sample_self.counts, CHURN_SAMPLE_FREES, 1);
    return 1;
}

static inline __attribute__((always_inline)) int churn_sample_free_quick(void *p)
{
    return CHURN_LIKELY(!churn_in_shim) && churn_sample_free_quick_outside(p);
}

/* A realloc of an unsampled block p (or of NULL) to size bytes, other than 0. */
static inline __attribute__((always_inline)) int churn_sample_realloc_room_outside(void *p,
                                                                                   size_t size)
{
    return churn_sample_alloc_room_outside(size) && size && (!p || !churn_sample_filter_has(p));
}

static inline __attribute__((always_inline)) int churn_sample_realloc_room(void *p, size_t size)
{
    return CHURN_LIKELY(!churn_in_shim) && churn_sample_realloc_room_outside(p, size);
}

/* ... that returned a block: p's free and the new block's allocation. */
static inline __attribute__((always_inline)) void churn_sample_realloc_commit(void *p,
                                                                              size_t size)
{
    if (p)
        churn_sample_add(churn_sample_self.counts, CHURN_SAMPLE_FREES, 1);
    churn_sample_alloc_commit(size);
}

/* ---- dlopen.c: dlopen, a stub that leaves glibc's call the program's own (its caller's
   search path); a library loaded with RTLD_DEEPBIND gets its allocator bindings that skipped
   libchurn pointed at libchurn's own (it exports dlopen, nothing internal) ---- */

/* ---- codemap.c: names of code a runtime generates, from its perf map (writer only) ---- */
/* Writes the CODE records of the stack's frames in such code, once a segment each. */
void churn_codemap_stack(const uintptr_t *ips, unsigned depth);

/* ---- pyframes.c: Python frames from CPython's frame chain (3.11 to 3.13) ---- */
/* A frame's address there: no module's, named by the CODE record the writer writes. */
#define CHURN_PY_BASE 0xfe00000000000000ull
void churn_pyframes_init(void); /* at start-up, where CPython is in the process */
int churn_pyframes_on(void);
/* The calling thread's Python frames when it holds the GIL, innermost first, a 0 after
   those of each evaluation, in *frames (the thread's, in *cache: churn_thread.py_sites);
   how many.  *hash: a hash of them, taken as they are read (not the stack table's). */
unsigned churn_pyframes_read(void **cache, const uintptr_t **frames, uint64_t *hash);
/* The stack with them put outward of their native evaluation frames; its new depth. */
unsigned churn_pyframes_merge(uintptr_t *ips, unsigned depth, unsigned max, const uintptr_t *py,
                              unsigned npy);
/* Writer: whether ip is such a frame, its CODE record written in this segment. */
int churn_pyframes_name(uintptr_t ip);

/* ---- modules.c: the module map, read with dl_iterate_phdr ---- */
typedef struct churn_module {
    char *path; /* the loader's name follows its NUL (churn_module_loader_name) */
    uint64_t bias, start, end;
    uint8_t build_id[64];
    uint32_t build_id_len;
    /* 0 while loaded; once unloaded, how many modules were known when that was noticed
       (a stack recorded after it, with more or as many, is not in this module) */
    _Atomic uint32_t unloaded_at;
} churn_module;
/* Adds the libraries loaded since the last scan (any thread). */
void churn_modules_scan(void);
/* The writer's scan: returns 1 when modules were added since its previous call. */
int churn_modules_refresh(void);
/* The same without scanning (a fatal signal: the loader's lock may be held). */
int churn_modules_news(void);
/* The same, scanning unless a scan is under way (the exit path: this thread may be the one
   scanning, interrupted by a signal handler that exits). */
int churn_modules_try_refresh(void);
size_t churn_modules_count(void);
const churn_module *churn_module_get(size_t id);
/* The loader's name of a module (dl_iterate_phdr's dlpi_name, or the executable's path): its
   path but for a library loaded by a relative one, which the path records absolute. */
const char *churn_module_loader_name(const churn_module *m);
/* libchurn's own text range, for skipping its frames */
extern uintptr_t churn_self_lo, churn_self_hi;
void churn_modules_find_self(void);

/* ---- allocator.c: which allocator answers, and its own counters ---- */
/* The allocator's own size classes (CHURN_REC_SIZE_CLASSES), when a way in can ask it. */
#define CHURN_MAX_SIZE_CLASSES 128
typedef struct churn_size_classes {
    size_t n;
    uint32_t size[CHURN_MAX_SIZE_CLASSES];
    uint32_t span_bytes[CHURN_MAX_SIZE_CLASSES];
} churn_size_classes;

typedef struct churn_allocator_info {
    const char *name;
    uint32_t page_size;
    int counters_at_tick;    /* cheap and safe to read on the program's threads at a tick */
    size_t ncounters;
    const char *counter_names[CHURN_MAX_COUNTERS];
    /* Fills the classes once the allocator can be asked; returns 0 when it cannot (yet). */
    int (*load_classes)(churn_size_classes *out);
} churn_allocator_info;
/* Names the allocator whose malloc is traced and finds its books.  traced: that malloc, when
   the caller knows it (churn attach: the definition the program's calls bind to, which in an
   executable built without PIE is not what a lookup by name answers); NULL: the one ahead of
   libchurn in the lookup scope, or else the next after it. */
void churn_allocator_detect(void *traced);
/* A way in that knows the allocator better than detection does (way_tcmalloc.c) says so. */
void churn_allocator_set(const churn_allocator_info *info, void (*counters)(uint64_t *values));
const churn_allocator_info *churn_allocator(void);
/* Appends counters of another source (blind.c, way_named.c, way_pymalloc.c), filled by fill
   after the allocator's own; fresh is 0 where the allocator's locks must not be taken (fill
   then gives its last reading).  Returns n, or 0 when they do not fit in CHURN_MAX_COUNTERS. */
size_t churn_allocator_add_counters(const char *const *names, size_t n,
                                    void (*fill)(uint64_t *values, int fresh));
/* Fills only the counters other sources added: cheap and lock-free, so an epoch's end refreshes
   them even when the allocator's own counters are an earlier reading (the exit path). */
void churn_allocator_extra_counters(uint64_t *values);
/* Appends " [ways]" to the allocator's name: every allocator traced and its way in. */
void churn_allocator_set_ways(const char *ways);
void churn_allocator_counters(uint64_t *values);
/* Called by the writer only: the size classes, or NULL while they are not known. */
const churn_size_classes *churn_allocator_classes(void);

/* ---- blind.c: the blind-spot detector ---- */
/* Bytes libchurn itself has mapped (os.c): what its resident bytes are taken to be when its
   list of mappings is busy. */
extern _Atomic uint64_t churn_own_mapped_bytes;
/* On the writer thread, after a pass (not the final one): samples at most twice a second. */
void churn_blind_check(uint64_t now_ns, uint64_t live_bytes);
/* Registers its counters with the allocator's (once the allocator is named). */
void churn_blind_register(void);
/* A runtime's own allocator (include/churn/runtime_heaps.h index) is traced in this process:
   growth in its memory is not blamed on it. */
void churn_blind_runtime_traced(int runtime);
/* A fork child, or a copy attached again, starts over: none of the figures or the warning of
   the trace before. */
void churn_blind_reset(void);

/* ---- writer.c: the writer thread ---- */
int churn_writer_start(void);
/* Runs the last pass in the calling thread and closes the trace. */
void churn_writer_finish(int how, int detail);
void churn_writer_before_fork(void);
void churn_writer_after_fork_parent(void);
void churn_writer_fork_child_catch_up(void); /* first thing in the child */
void churn_writer_after_fork_child(int follow);
int churn_writer_is_self(void);
int churn_writer_running(void);
/* Asks the writer for a pass soon (async-signal-safe). */
void churn_writer_poke(void);
int churn_writer_exec_flush(void);
void churn_writer_exec_failed(void);
void churn_exec_set_count(int n); /* execs that led to this image (exec.c) */
int churn_writer_pause(void);  /* joins the writer thread; 1 if it ran */
void churn_writer_join(void);  /* after churn_finish: the writer's thread joined, its buffers freed */
void churn_writer_resume(void);
/* A copy attached again (attach.c), its writer joined: the next trace starts at first_epoch,
   with no figure of the last, and events tagged before first_epoch are left out of it. */
void churn_writer_reset(uint64_t first_epoch);
/* encode.c writes the writer's records; its interface, private to the two, is encode.h. */

/* ---- namespaces.c ---- */
unsigned long churn_pidns_id(void); /* inode of /proc/self/ns/pid, 0 if unknown */

/* ---- outfile.c: the bounded ring file ---- */
int churn_outfile_open(const char *path, int events);
void churn_outfile_attached(void); /* before the open: the header says CHURN_FILE_ATTACHED */
pid_t churn_outfile_pid(void);   /* the process the open trace belongs to, 0 when none */
/* 0, or why the segment is not in the file: the ring (CHURN_RING_MB, as a full disk cut it)
   cannot hold it, or writing failed. */
enum { CHURN_OUTFILE_FAILED = -1, CHURN_OUTFILE_TOO_BIG = -2 };
int churn_outfile_write_segment(const void *zstd_frame, size_t zbytes, uint32_t raw_bytes,
                                uint64_t first_epoch, uint64_t last_epoch);
/* A checkpoint of the open segment: its frame so far (zbytes, complete zstd blocks holding
   raw_bytes of whole records, with the header's room in front as above) goes into the file
   at the place the closed segment will have, the part not yet there first and then the open
   header that counts it.  reserve: the bytes the closed segment is expected to need, header
   included, which decide that place.  Returns 0, or -1 when this segment takes no more (its
   close then writes it as any other). */
int churn_outfile_checkpoint(const void *zstd_frame, size_t zbytes, uint32_t raw_bytes,
                             uint64_t first_epoch, uint64_t now_ns, uint64_t reserve);
uint64_t churn_outfile_ring_room(void); /* bytes of the ring for segments */
void churn_outfile_close(void);
uint64_t churn_outfile_next_seq(void);

/* ---- index.c: NAME.index, which process image wrote which trace file of the tree ---- */
void churn_index_start(void);               /* once the image's trace file is open */
void churn_index_end(int how, int detail);  /* from churn_finish, after the last segment */
void churn_index_close(void);              /* an untraced fork child keeps no descriptor of it */

/* ---- arena.c: libchurn's own heap (mmap-backed), for the writer and zstd ---- */
void *churn_mem_alloc(size_t bytes);
void churn_mem_free(void *p);
void *churn_mem_realloc(void *p, size_t bytes);

#endif
