/*
 * churn attach: libchurn loaded into a running process (cli/attach.c calls dlopen, then the
 * functions below, in one of its threads, with ptrace).  Nothing traces until
 * churn_attach_start, and nothing is written over the program's code by the process itself:
 *
 *   churn_attach_start(config)  options from config (the environment cannot be changed),
 *                               the trace opened, the writer started, and the malloc family
 *                               the program uses (glibc's, or an allocator linked in), the
 *                               C++ operators and exit/_exit planned with the
 *                               patch engine in its deferred mode (patch.h): trampolines
 *                               written, each entry's new bytes left in churn_attach_sites;
 *   (the tracer)                stops every thread, checks that none is inside the bytes to
 *                               be replaced, writes them, resumes;
 *   churn_detach()              after the tracer wrote the old bytes back: the trace is
 *                               finished (EXIT of kind detach) and the writer joined.
 *
 * Planning runs while the program's threads run, because it takes locks they may hold
 * (pthread_create's, the loader's and the allocator's through dlopen and dlsym): only the
 * tracer's writes happen with them stopped, and those take no lock at all.
 *
 * A copy that was detached stays loaded (its code may still be on a stack, inside a
 * replacement that was entered before the old bytes came back), and the next attach calls
 * churn_attach_start in it again instead of loading another (the tracer loads a fresh copy
 * only when it finds none, or this one says it cannot be reused: reset() below).  What
 * describes the program is kept: the stack table (ids stay valid in every thread's cache, and
 * each trace defines the stacks it uses), the module map, the rules of the CFI walker, the
 * rings (each thread's own, with its head and tail where they are), the trampolines (patch.c
 * hands the same ones out again).  What describes a trace starts over.
 *
 * A call that entered a replacement during the previous trace may still be on its way (inside
 * the real allocator, or preempted) when the next one starts, and push an event that took its
 * epoch, and its place in its address's order, back then.  So epochs go on counting across
 * traces (as a fork child's trace goes on from its parent's), the next trace starts an epoch
 * past every one of the previous, and its writer drops what is tagged before its first epoch
 * (writer.c), once that event's place in the order is taken into account: an object it
 * allocated is then one the trace never saw allocated, its free one of an object from before
 * the attach, as for a first attach.
 */
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "walk/elfsyms.h"
#include "ways/patch.h"
#include "shim.h"
#include "ways/way.h"

#define MAX_SITES 64

/* Read by the tracer (cli/attach.c) by their dynamic symbols. */
CHURN_API char churn_attach_error[512];
CHURN_API churn_patch_site churn_attach_sites[MAX_SITES];
CHURN_API uint64_t churn_attach_nsites;
CHURN_API char churn_attach_trace[4096]; /* the trace's path, for churn detach to name */
/* 0 loaded, 1 tracing (the sites are the tracer's to write), 2 detached, -1 failed to start,
   3 detached without the trace finished (the writer did not stop: never started again) */
CHURN_API int churn_attach_state;

CHURN_API int churn_attach_start(const char *config);
CHURN_API int churn_detach(void);

static size_t nsites;
static int epoch_signal;
static struct sigaction epoch_signal_was;

/* Preloaded, libchurn is in the main program's lookup scope; loaded by dlopen (RTLD_LOCAL)
   it is not, and the main program's scope answers with another object's symbol or none. */
int churn_attach_loaded(void)
{
    void *main_scope = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
    void *mine = main_scope ? dlsym(main_scope, "churn_attach_start") : NULL;
    return mine != (void *)churn_attach_start;
}

static void *libc_handle, *main_scope;
static struct link_map *main_map;

/* The object that holds p, or NULL. */
static struct link_map *object_of(void *p)
{
    Dl_info info;
    struct link_map *l = NULL;
    return p && dladdr1(p, &info, (void **)&l, RTLD_DL_LINKMAP) ? l : NULL;
}

/* What the program's calls to name bind to, looked up in the main program's scope, which
   this copy of libchurn (and its own definitions) is not in.  The executable answers first,
   and one built without PIE that takes a function's address has an undefined symbol with a
   value for it, its canonical PLT entry, so that the address is one everywhere (python3.11's
   malloc, node's): its calls go to the first definition after it in that scope, which is
   the first of the objects loaded with the program (the link map's order) to define it. */
static uintptr_t program_symbol(const char *name)
{
    void *p = dlsym(main_scope, name);
    if (object_of(p) != main_map || churn_exe_symbol(name) == (uintptr_t)p)
        return (uintptr_t)p;
    struct link_map *self = object_of((void *)churn_attach_start);
    for (struct link_map *l = main_map->l_next; l; l = l->l_next) {
        void *h = l != self && l->l_name[0] ? dlopen(l->l_name, RTLD_LAZY | RTLD_NOLOAD) : NULL;
        void *q = h ? dlsym(h, name) : NULL;
        if (h)
            dlclose(h);
        if (q && object_of(q) == l)
            return (uintptr_t)q;
    }
    return 0;
}

/* When the program's malloc is glibc's: the C functions are glibc's, the C++ operators
   whichever definition the program's calls bind to (libstdc++'s). */
static uintptr_t attach_symbol(const char *name)
{
    int cxx = name[0] == '_' && name[1] == 'Z';
    return cxx ? program_symbol(name) : (uintptr_t)dlsym(libc_handle, name);
}

/* The allocator library's own definitions (dlsym on its handle also searches what it
   depends on, libc among them). */
static void *owner_handle, *owner_base;
static uintptr_t owner_symbol(const char *name)
{
    void *p = dlsym(owner_handle, name);
    Dl_info info;
    return p && dladdr(p, &info) && info.dli_fbase == owner_base ? (uintptr_t)p : 0;
}

static int fail(void)
{
    atomic_store(&churn_state, CHURN_DISABLED);
    churn_attach_state = -1;
    churn_patch_defer(NULL, 0, NULL);
    churn_in_shim = 0;
    return -1;
}

/* CHURN_STACK_SAMPLE may differ from the last trace's: each thread walks its next allocation
   and draws its gaps from the new one. */
static void restart_sampling(churn_thread *t, void *ctx)
{
    (void)ctx;
    t->sample_left = 1;
}

/* A copy attached before starts its next trace from a state that says nothing of the last.
   -1 when it cannot: its last trace did not finish (its writer may still run). */
static int reset(void)
{
    if (churn_attach_state == 1 || churn_attach_state == 3 || churn_writer_running() ||
        atomic_load(&churn_state) == CHURN_ON) {
        snprintf(churn_attach_error, sizeof churn_attach_error,
                 "this copy's last trace did not finish");
        return -1;
    }
    /* Past every epoch an event of the last trace can carry: churn_writer_finish ended its
       last one, and a call still on its way may have read the epoch after that. */
    uint64_t first = atomic_fetch_add(&churn_epoch_now, 1) + 1;
    churn_writer_reset(first);
    churn_livemap_clear();
    churn_exit_reset();
    churn_blind_reset();
    churn_unwind_reset_counts();
    churn_sample_reset();
    churn_threads_each(restart_sampling, NULL);
    return 0;
}

CHURN_API int churn_attach_start(const char *config)
{
    churn_attach_error[0] = '\0';
    if (churn_attach_state && reset())
        return CHURN_ATTACH_NOT_REUSABLE;
    churn_in_shim = 1;
    churn_log_capture = churn_attach_error;
    churn_log_capture_size = sizeof churn_attach_error;
    churn_log_init();
    churn_real_resolve();
    /* Lines go to the tracer (churn_attach_error), never into the program's stderr. */
    churn_opt.quiet = 1;
    if (churn_options_load_config(config))
        return fail();
    churn_opt.quiet = 1;
    libc_handle = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    main_scope = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
    if (main_scope && dlinfo(main_scope, RTLD_DI_LINKMAP, &main_map))
        main_map = NULL;
    uintptr_t used = main_map ? program_symbol("malloc") : 0;
    /* The malloc the program's calls bind to: glibc's, the executable's own (a static
       jemalloc), or a library's ahead of libc (redis links libjemalloc.so.2): its family is
       patched, as the patch way in does for an executable's. */
    Dl_info where;
    uintptr_t (*lookup)(const char *) = attach_symbol;
    const char *whose = "the program's";
    if (!libc_handle || !used) {
        churn_log("the program has no malloc in its lookup scope");
        return fail();
    }
    if (used != (uintptr_t)dlsym(libc_handle, "malloc")) {
        if (used == churn_exe_symbol("malloc")) {
            lookup = churn_exe_symbol;
            whose = "the executable's";
        } else if (dladdr((void *)used, &where) && where.dli_fname &&
                   (owner_handle = dlopen(where.dli_fname, RTLD_LAZY | RTLD_NOLOAD))) {
            owner_base = where.dli_fbase;
            lookup = owner_symbol;
            whose = where.dli_fname;
        } else {
            churn_log("the object that defines the program's malloc cannot be found");
            return fail();
        }
    }
    churn_modules_find_self();
    churn_stacks_init();
    churn_modules_scan();
    nsites = 0;
    churn_patch_defer(churn_attach_sites, MAX_SITES, &nsites);
    if (churn_patch_family(lookup, whose))
        return fail();
    churn_allocator_detect((void *)used);
    churn_blind_register();
    churn_named_describe("attach");
    if (churn_opt.epoch_at[0] && churn_epoch_at_install(churn_opt.epoch_at))
        return fail();
    churn_exit_install();
    churn_patch_defer(NULL, 0, NULL);
    churn_attach_nsites = nsites;
    churn_outfile_attached();
    if (churn_outfile_open(churn_opt.out, churn_opt.events))
        return fail();
    churn_unwind_init();
    epoch_signal = churn_opt.epoch_signal;
    if (epoch_signal)
        sigaction(epoch_signal, NULL, &epoch_signal_was);
    churn_epoch_install_triggers();
    atomic_store(&churn_state, CHURN_ON);
    if (churn_writer_start()) {
        churn_log("cannot start the writer thread");
        churn_outfile_close();
        if (epoch_signal)
            sigaction(epoch_signal, &epoch_signal_was, NULL);
        return fail();
    }
    static int atfork_registered; /* once: a second registration would run them twice */
    if (!atfork_registered++)
        churn_atfork_register();
    snprintf(churn_attach_trace, sizeof churn_attach_trace, "%s", churn_opt.out);
    churn_attach_state = 1;
    churn_in_shim = 0;
    return 0;
}

/* A ring's slots are written by pushes and read only by the writer, which is gone: their pages
   go back to the system.  A push that comes late (from a call that entered a replacement
   before the tracer put its entry back) faults a zero page in, which nobody reads. */
static void release_ring(churn_thread *t, void *ctx)
{
    (void)ctx;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)t->slots + page - 1) & ~(page - 1);
    uintptr_t hi = (uintptr_t)(t->slots + CHURN_RING_EVENTS) & ~(page - 1);
    if (hi > lo)
        syscall(SYS_madvise, lo, hi - lo, MADV_DONTNEED);
}

/* The tracer has put every entry back: no new call reaches the replacements, and the few
   already inside them record before the last pass below drains their rings. */
CHURN_API int churn_detach(void)
{
    if (churn_attach_state != 1) {
        snprintf(churn_attach_error, sizeof churn_attach_error, "this copy is not attached");
        return -1;
    }
    churn_finish(CHURN_EXIT_DETACH, CHURN_DETACH_COMMAND);
    churn_writer_join();
    churn_threads_each(release_ring, NULL);
    /* The program's own disposition of the epoch signal comes back. */
    if (epoch_signal)
        sigaction(epoch_signal, &epoch_signal_was, NULL);
    int done = atomic_load(&churn_state) == CHURN_FINISHED;
    churn_attach_state = done ? 2 : 3;
    return done ? 0 : -1;
}
