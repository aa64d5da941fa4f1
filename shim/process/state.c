/*
 * The shim's lifecycle: bring-up on the first intercepted call (which can come before our
 * constructor), the writer's start in the constructor, and fork.  The final flush is exit.c's
 * (fatal signals: fatal.c).
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/single_threaded.h>
#include <sys/stat.h>
#include <unistd.h>

#include "walk/elfsyms.h"
#include "shim.h"
#include "ways/way.h"

_Atomic int churn_state;
__thread int churn_in_shim;
__thread int churn_internal_may_wait;
static _Atomic int main_started;

/* The pid namespace the root was in (CHURN_ROOT_PID=<pid>:<ns>), 0 when not known. */
static unsigned long root_pidns;

/* A process's part of a derived name: its pid, and its pid namespace when that is not the
   root's: three `unshare --pid --fork` children of one shell are all pid 1, and without the
   namespace they would replace each other's traces. */
static void pid_label(char *out, size_t cap, pid_t pid)
{
    unsigned long ns = churn_pidns_id();
    if (ns && root_pidns && ns != root_pidns)
        snprintf(out, cap, "%d-ns%lu", (int)pid, ns);
    else
        snprintf(out, cap, "%d", (int)pid);
}

/* The most a derived name adds to CHURN_OUT's stem: ".<pid>-ns<inode>.<n>.zst". */
#define DERIVED_EXTRA (sizeof ".4194304-ns4294967295.2147483647.zst" - 1)

/* CHURN_OUT=x.zst gives x.<pid>.zst for a forked child or an exec'd descendant (and
   x.<pid>.<n>.zst for the image after its n-th exec), so no process ever overwrites another's
   trace.  A name that does not fit is refused (-1 after one line), never cut: cut names of
   two children are the same name. */
static int derived_name(char *out, size_t cap, const char *base, pid_t pid, int n)
{
    size_t len = strlen(base);
    size_t stem = len > 4 && !strcmp(base + len - 4, ".zst") ? len - 4 : len;
    char label[48];
    pid_label(label, sizeof label, pid);
    int w = n ? snprintf(out, cap, "%.*s.%s.%d.zst", (int)stem, base, label, n)
              : snprintf(out, cap, "%.*s.%s.zst", (int)stem, base, label);
    if (w < 0 || (size_t)w >= cap) {
        churn_log("CHURN_OUT with .%s%s.zst added is longer than %zu characters; not tracing",
                  label, n ? ".<n>" : "", cap - 1);
        return -1;
    }
    return 0;
}

/* A CHURN_OUT too long to leave room for derived names is refused at the start, in one
   line, rather than in every child. */
static int check_room(void)
{
    if (strlen(churn_opt.out) + DERIVED_EXTRA < sizeof churn_opt.out)
        return 0;
    churn_log("CHURN_OUT is %zu characters: the names of children's traces need up to %zu "
              "more, past %zu; not tracing",
              strlen(churn_opt.out), DERIVED_EXTRA, sizeof churn_opt.out - 1);
    return -1;
}

/* A relative CHURN_OUT names a file in the directory the root started in: a child forked
   or a descendant started after the program changed directory writes beside the root's trace
   (before, `cd /` then fork put it in /, and where it could not be created it went untraced). */
static int absolute_output(void)
{
    char cwd[sizeof churn_opt.out];
    if (churn_opt.out[0] == '/')
        return 0;
    if (!getcwd(cwd, sizeof cwd)) {
        churn_log("CHURN_OUT=%s is relative and the working directory cannot be read (%s); "
                  "not tracing", churn_opt.out, strerror(errno));
        return -1;
    }
    char path[sizeof churn_opt.out];
    if (snprintf(path, sizeof path, "%s/%s", cwd, churn_opt.out) >= (int)sizeof path) {
        churn_log("CHURN_OUT=%s made absolute is longer than %zu characters; not tracing",
                  churn_opt.out, sizeof path - 1);
        return -1;
    }
    strcpy(churn_opt.out, path);
    /* The entry is replaced in place, in the array main receives as envp: a shell (bash)
       imports its variables from envp and defines its own setenv, so setenv would not reach
       the commands it starts. */
    static char entry[sizeof "CHURN_OUT=" + sizeof churn_opt.out];
    snprintf(entry, sizeof entry, "CHURN_OUT=%s", path);
    for (char **e = environ; e && *e; e++)
        if (!strncmp(*e, "CHURN_OUT=", 10))
            *e = entry;
    return 0;
}

/* The root names itself in an environment array on libchurn's own pages, the program's
   entries before its own: setenv would allocate glibc's array from the traced heap while
   libchurn initializes, untraced, and the program's first setenv (a realloc of it) or clearenv
   (a free: redis-server's setproctitle) would free an object the trace never saw allocated.
   glibc reallocates and frees only the array it allocated itself. */
static int name_root(const char *value)
{
    static char entry[sizeof "CHURN_ROOT_PID=" + 48];
    snprintf(entry, sizeof entry, "CHURN_ROOT_PID=%s", value);
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **env = churn_os_map((n + 2) * sizeof *env);
    if (!env) {
        churn_log("cannot map %zu bytes for the environment; not tracing", (n + 2) * sizeof *env);
        return -1;
    }
    memcpy(env, environ, n * sizeof *env);
    env[n] = entry;
    environ = env;
    return 0;
}

static int choose_output(void)
{
    /* The root names itself, and its pid namespace, in the environment; descendants that
       inherit LD_PRELOAD see another pid or namespace there and take a derived name. */
    const char *root = getenv("CHURN_ROOT_PID");
    pid_t me = getpid();
    unsigned long ns = churn_pidns_id();
    long root_pid = 0;
    if (root) {
        const char *colon = strchr(root, ':');
        root_pid = atol(root);
        root_pidns = colon ? strtoul(colon + 1, NULL, 10) : 0;
    }
    /* An image that a traced process exec'd (exec.c) writes NAME.<pid>.<n>.zst: its pid is
       the one of the image before, whose trace must stay. */
    const char *exec_of = getenv("CHURN_EXEC_OF");
    long pid;
    int n;
    char derived[sizeof churn_opt.out];
    if (exec_of && sscanf(exec_of, "%ld.%d", &pid, &n) == 2 && pid == me && n > 0) {
        if (check_room() || derived_name(derived, sizeof derived, churn_opt.out, me, n))
            return -1;
        strcpy(churn_opt.out, derived);
        churn_exec_set_count(n);
        return 0;
    }
    if (root && (root_pid != me || (ns && root_pidns && ns != root_pidns))) {
        if (check_room() || derived_name(derived, sizeof derived, churn_opt.out, me, 0))
            return -1;
        strcpy(churn_opt.out, derived);
    } else if (!root) {
        if (absolute_output() || check_room())
            return -1;
        char value[48];
        snprintf(value, sizeof value, "%d:%lu", (int)me, ns);
        root_pidns = ns;
        return name_root(value);
    }
    return 0;
}

void churn_ensure_init(void)
{
    int expected = CHURN_OFF;
    if (!atomic_compare_exchange_strong(&churn_state, &expected, CHURN_INITIALIZING))
        return;
    int saved = churn_in_shim, saved_errno = errno;
    churn_in_shim = 1;
    churn_os_maps_hold();
    churn_log_init();
    churn_os_note_seccomp();
    churn_real_resolve();
    int ok = churn_next.malloc && churn_next.free && !getauxval(AT_SECURE) &&
             !churn_options_load();
    ok = ok && !choose_output();
    if (ok) {
        churn_modules_find_self();
        churn_stacks_init();
        churn_modules_scan(); /* a fatal signal's flush cannot ask the loader (writer.c) */
        ok = churn_way_choose() != NULL &&
             !(churn_opt.epoch_at[0] && churn_epoch_at_install(churn_opt.epoch_at)) &&
             !churn_outfile_open(churn_opt.out, churn_opt.events);
        churn_exe_symbols_release();
    }
    /* libunwind's start opens its pipe: only in a process that is traced, and after the
       trace, which a low RLIMIT_NOFILE must not refuse for the pipe's sake. */
    if (ok) {
        churn_unwind_init();
        churn_guard_init();
        churn_epoch_install_triggers();
        churn_index_start();
    }
    churn_os_maps_release();
    atomic_store(&churn_state, ok ? CHURN_ON : CHURN_DISABLED);
    churn_in_shim = saved;
    errno = saved_errno; /* the call it came in on (a malloc) says nothing of it */
}

/* ---- fork: quiesce the writer and every lock, so the child inherits consistent state ----

   A fork from a signal handler that interrupted libchurn on this very thread (its guard is
   up) cannot take libchurn's locks: the interrupted code may hold one, and waiting for it
   would wait forever.  Such a fork takes none, and its child, whose copy of libchurn's
   tables may be half updated, is not traced and says so. */
static __thread int fork_unsafe;

static void before_fork(void)
{
    if (atomic_load(&churn_state) != CHURN_ON)
        return;
    fork_unsafe = churn_in_shim != 0;
    churn_in_shim++;
    if (fork_unsafe)
        return;
    churn_writer_before_fork();
    churn_stacks_lock();
    churn_sample_lock();
    churn_threads_lock();
}

static void after_fork_parent(void)
{
    if (atomic_load(&churn_state) != CHURN_ON)
        return;
    if (!fork_unsafe) {
        churn_threads_unlock();
        churn_sample_unlock();
        churn_stacks_unlock();
        churn_writer_after_fork_parent();
    }
    churn_in_shim--;
}

/* The child of a fork libchurn could not quiesce: nothing of the parent's state is touched,
   only its descriptors go. */
static void untraced_child(void)
{
    churn_fds_after_fork_child();
    atomic_store(&churn_state, CHURN_DISABLED);
    if (churn_opt.fork_follow)
        churn_log("fork from a signal handler that interrupted libchurn: the child (pid %d) "
                  "is not traced",
                  (int)getpid());
    churn_outfile_close();
    churn_rss_close();
    churn_index_close();
    churn_fd_release_captured();
    churn_in_shim--;
}

static void after_fork_child(void)
{
    if (atomic_load(&churn_state) != CHURN_ON)
        return;
    if (fork_unsafe) {
        untraced_child();
        return;
    }
    churn_os_after_fork_child();
    churn_fds_after_fork_child();
    churn_writer_fork_child_catch_up();
    churn_threads_after_fork_child();
    churn_sample_unlock();
    churn_sample_after_fork_child();
    churn_stacks_unlock();
    churn_outfile_close();
    churn_exec_set_count(0); /* the child's own execs are counted from its first */
    int follow = churn_opt.fork_follow;
    if (follow) {
        char name[sizeof churn_opt.out];
        const char *root = getenv("CHURN_OUT");
        follow = !derived_name(name, sizeof name, root && *root ? root : churn_opt.out,
                               getpid(), 0);
        if (follow) {
            strcpy(churn_opt.out, name);
            follow = !churn_outfile_open(churn_opt.out, churn_opt.events);
            if (follow)
                churn_index_start();
        }
    }
    if (follow)
        churn_rss_reopen(); /* its own statm: the inherited descriptor reads the parent's */
    churn_epoch_after_fork_child();
    churn_blind_reset();
    churn_stop_reset(); /* the parent's, not this process's */
    churn_writer_after_fork_child(follow);
    if (!follow) {
        /* an untraced child keeps none of our descriptors */
        atomic_store(&churn_state, CHURN_DISABLED);
        churn_rss_close();
        churn_index_close();
        churn_fd_release_captured();
    }
    churn_in_shim--;
}

/* Threads of the process: /proc/self/task links 2 + that many (no descriptor is opened, a
   number the program may be about to take); 0 when it cannot be read. */
static int process_threads(void)
{
    struct stat st;
    return stat("/proc/self/task", &st) ? 0 : (int)st.st_nlink - 2;
}

/* glibc's fork takes the allocator's locks (and stdio's) once the process has a second
   thread, which libchurn's writer is: from a signal handler that interrupted the allocator
   on this thread, it would wait forever for the lock that thread holds.  Without libchurn the
   program would have been single-threaded and its fork would take none.  So such a fork is
   made as glibc makes a single-threaded one, but with _Fork, which runs no fork handlers: the
   program's own (pthread_atfork) do not run for it.  The child is single-threaded, as
   __libc_single_threaded then says, and glibc takes no lock the interrupted call may hold. */
CHURN_API pid_t fork(void)
{
    static void *_Atomic next_slot;
    pid_t (*next)(void) = (pid_t(*)(void))churn_next_of(&next_slot, "fork");
    if (!churn_in_shim || atomic_load(&churn_state) != CHURN_ON || !churn_writer_running() ||
        process_threads() != 2)
        return next();
    pid_t pid = _Fork();
    if (pid == 0) {
        __libc_single_threaded = 1;
        fork_unsafe = 1;
        churn_in_shim++;
        untraced_child();
    }
    return pid;
}

void churn_atfork_register(void)
{
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

static void bring_up(void)
{
    /* Loaded into a running process by churn attach: churn_attach_start brings it up. */
    if (churn_attach_loaded()) {
        atomic_store(&churn_state, CHURN_DISABLED);
        return;
    }
    /* Start-up, single-threaded until the writer starts, changes no mapping it asks about:
       /proc/self/maps is read once for all of it (os.c). */
    churn_os_maps_hold();
    churn_ensure_init();
    if (atomic_load(&churn_state) != CHURN_ON) {
        churn_os_maps_release();
        return;
    }
    churn_in_shim++;
    churn_exit_install(); /* while single-threaded: patching rewrites code in place */
    if (churn_writer_start()) {
        churn_log("cannot start the writer thread; not tracing");
        atomic_store(&churn_state, CHURN_DISABLED);
        churn_outfile_close();
        churn_fd_release_captured();
    } else {
        churn_fatal_install();
        churn_rss_bytes(); /* opens statm before main, so no descriptor of ours appears later */
        churn_atfork_register();
        churn_thread_self(); /* the main thread's ring, while no allocator lock is held */
    }
    churn_os_maps_release();
    churn_in_shim--;
}

/* The program's main finds errno as it would without libchurn (0, where nothing failed). */
__attribute__((constructor)) static void churn_constructor(void)
{
    int saved_errno = errno;
    bring_up();
    errno = saved_errno;
}

__attribute__((destructor)) static void churn_destructor(void)
{
    churn_exit_destructor();
}

/* ---- the unwinder libchurn brings ----

   libchurn needs libgcc_s (the guard's cleanup when an exception leaves operator new), which
   defines __register_frame_info.  Start-up code of some toolchains (compiler-rt's crtbegin, as
   in workerd) calls that function only when its weak reference finds one, and a program that
   does not load libgcc_s itself would then register its whole .eh_frame with libgcc_s, which
   the first unwind through libgcc_s (glibc's backtrace) sorts: workerd's is 7.6 MB, read into
   its RSS.  These two stand in: they forward only when an object that is not one of
   libchurn's own dependencies needs libgcc_s, as without libchurn. */
static int program_needs_libgcc_s = -1; /* -1 not known yet; decided once, kept */

/* The object's DT_NEEDED names, fn on each until it returns nonzero. */
static int each_needed(const struct link_map *l, int (*fn)(const char *name, void *ctx),
                       void *ctx)
{
    const ElfW(Dyn) *d = l->l_ld;
    const char *strtab = NULL;
    /* The loader adds the load address to it where the dynamic section is writable. */
    for (size_t i = 0; d && d[i].d_tag != DT_NULL; i++)
        if (d[i].d_tag == DT_STRTAB)
            strtab = (const char *)(d[i].d_un.d_ptr < l->l_addr ? d[i].d_un.d_ptr + l->l_addr
                                                                : d[i].d_un.d_ptr);
    for (size_t i = 0; d && strtab && d[i].d_tag != DT_NULL; i++)
        if (d[i].d_tag == DT_NEEDED && fn(strtab + d[i].d_un.d_val, ctx))
            return 1;
    return 0;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

#define MAX_OWN_DEPS 64
typedef struct {
    const char *names[MAX_OWN_DEPS]; /* libchurn's own dependencies, found so far */
    size_t n;
} own_deps;

static int add_dep(const char *name, void *ctx)
{
    own_deps *o = ctx;
    for (size_t i = 0; i < o->n; i++)
        if (!strcmp(o->names[i], name))
            return 0;
    if (o->n < MAX_OWN_DEPS)
        o->names[o->n++] = name;
    return 0;
}

static int is_libgcc_s(const char *name, void *ctx)
{
    (void)ctx;
    return !strncmp(name, "libgcc_s.so", 11);
}

extern ElfW(Dyn) _DYNAMIC[]; /* libchurn's own dynamic section */

static int decide_libgcc_s(void)
{
    const struct link_map *self = NULL, *l;
    for (l = _r_debug.r_map; l; l = l->l_next)
        if (l->l_ld == _DYNAMIC)
            self = l;
    if (!self)
        return 1; /* cannot tell: forward */
    /* libchurn's own dependencies, by name, to a fixed point */
    own_deps own = {{0}, 0};
    each_needed(self, add_dep, &own);
    for (size_t before = 0; before != own.n;) {
        before = own.n;
        for (l = _r_debug.r_map; l; l = l->l_next)
            for (size_t i = 0; i < own.n; i++)
                if (l != self && l->l_name && !strcmp(base_name(l->l_name), own.names[i])) {
                    each_needed(l, add_dep, &own);
                    break;
                }
    }
    for (l = _r_debug.r_map; l; l = l->l_next) {
        if (l == self)
            continue;
        int ours = 0;
        for (size_t i = 0; l->l_name && *l->l_name && i < own.n && !ours; i++)
            ours = !strcmp(base_name(l->l_name), own.names[i]);
        if (!ours && each_needed(l, is_libgcc_s, NULL))
            return 1;
    }
    return 0;
}

CHURN_API void __register_frame_info(const void *begin, void *object)
{
    static void *_Atomic next_slot;
    void (*next)(const void *, void *) =
        (void (*)(const void *, void *))churn_next_of(&next_slot, "__register_frame_info");
    if (program_needs_libgcc_s < 0)
        program_needs_libgcc_s = decide_libgcc_s();
    if (next && program_needs_libgcc_s)
        next(begin, object);
}

CHURN_API void *__deregister_frame_info(const void *begin)
{
    static void *_Atomic next_slot;
    void *(*next)(const void *) =
        (void *(*)(const void *))churn_next_of(&next_slot, "__deregister_frame_info");
    if (program_needs_libgcc_s < 0)
        program_needs_libgcc_s = decide_libgcc_s();
    return next && program_needs_libgcc_s ? next(begin) : NULL;
}

/* main starts only after the executable's static constructors ran; an allocator linked into
   the executable (tcmalloc in workerd) is initialised by them, so its counters may be asked
   for only from then on.  The wrapper changes nothing else about how main is called. */
typedef int (*main_fn)(int, char **, char **);
static main_fn real_main;

static int main_wrapper(int argc, char **argv, char **envp)
{
    atomic_store(&main_started, 1);
    int status = real_main(argc, argv, envp);
    churn_exit_main_returned(status);
    return status;
}

int churn_main_started(void)
{
    return atomic_load(&main_started);
}

CHURN_API int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
                                void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
    typedef int (*start_fn)(main_fn, int, char **, void (*)(void), void (*)(void),
                            void (*)(void), void *);
    start_fn next = (start_fn)dlsym(RTLD_NEXT, "__libc_start_main");
    real_main = main;
    return next(main_wrapper, argc, argv, init, fini, rtld_fini, stack_end);
}
