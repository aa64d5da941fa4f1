/*
 * dlopen(..., RTLD_DEEPBIND): the library and the dependencies that call loads look symbols
 * up in their own tree first, so their malloc and free bind to libc's and skip libchurn,
 * while what libc or libstdc++ allocate for them (strdup, operator new) still comes through
 * libchurn: their frees are missed and their objects look leaked.
 *
 * Dropping the flag would let the library's other symbols bind to the program's definitions,
 * which is what the flag was there to prevent.  So the flag is kept and, once the library is
 * loaded, each of its allocator bindings that resolved (or, lazily, would resolve) to the very
 * function libchurn forwards to is pointed at libchurn's instead: the call ends in the same
 * function as before, traced, and nothing is said.  A binding to another allocator (the
 * library's own) is left alone and named on stderr.  What the library's constructors
 * allocated during the dlopen is not traced (it ran before the rewrite); its later frees
 * count as frees of unknown objects.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/got.h"
#include "shim.h"
#include "ways/cxx_ops.h"
#include "ways/way.h"

#define NAME(sym, ...) #sym,
static const char *const names[] = {
    "malloc", "free", "calloc", "realloc", "reallocarray", "memalign", "posix_memalign",
    "aligned_alloc", "valloc", "pvalloc", "malloc_usable_size",
    CHURN_CXX_NEWS(NAME) CHURN_CXX_DELETES(NAME)};
#undef NAME
#define NNAMES (sizeof names / sizeof *names)

typedef struct {
    void *ours[NNAMES], *next[NNAMES], *local[NNAMES];
    const char *object; /* the one whose imports are being looked at */
    unsigned redirected, foreign;
    const char *foreign_name, *foreign_object;
} rebind;

static int lookup(const char *name)
{
    for (size_t i = 0; i < NNAMES; i++)
        if (!strcmp(names[i], name))
            return (int)i;
    return -1;
}

static void rebind_slot(const churn_got_slot *s, void *arg)
{
    rebind *rb = arg;
    int i = lookup(s->name);
    if (i < 0 || !rb->ours[i] || !rb->next[i] || rb->ours[i] == rb->next[i] ||
        *s->slot == rb->ours[i])
        return;
    if (*s->slot != rb->next[i] && !(s->lazy && rb->local[i] == rb->next[i])) {
        if (!rb->foreign++) {
            rb->foreign_name = names[i];
            rb->foreign_object = rb->object;
        }
        return;
    }
    if (!churn_got_set(s, rb->ours[i]))
        rb->redirected++;
}

/* The library loaded by this call and what it brought along come after it in the loader's
   list; objects loaded before (libc) already bind to libchurn or were not loaded deep. */
static void rebind_deep(void *handle, const char *file)
{
    struct link_map *lm = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) || !lm)
        return;
    rebind rb; /* on the stack: two threads may come back from dlopen at once */
    memset(&rb, 0, sizeof rb);
    Dl_info self;
    void *me = NULL;
    if (dladdr((void *)rebind_deep, &self) && self.dli_fname)
        me = dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!me)
        return;
    for (size_t i = 0; i < NNAMES; i++) {
        rb.ours[i] = dlsym(me, names[i]);
        rb.next[i] = dlsym(RTLD_NEXT, names[i]);
        rb.local[i] = dlsym(handle, names[i]);
    }
    dlclose(me);
    for (; lm; lm = lm->l_next) {
        rb.object = lm->l_name ? lm->l_name : "";
        churn_got_each(lm->l_addr, rb.object, rebind_slot, &rb);
    }
    /* Silent when every binding reaches libchurn: php-cli loads its twenty extensions this
       way on every run, and a line each would be noise on every script's stderr. */
    if (rb.foreign)
        churn_log("dlopen(%s, RTLD_DEEPBIND): %u allocator binding(s) that skipped libchurn "
                  "now reach it through the same functions (the flag is kept); not traced: its "
                  "%s binds to another allocator in %s",
                  file, rb.redirected, rb.foreign_name, rb.foreign_object);
}

/* ---- the entry ----

   glibc's dlopen looks a name without a slash up in the directories of the object that called
   it (its RUNPATH and RPATH), and expands $ORIGIN in a name as that object's directory: it
   takes the caller from its own return address.  Called from a wrapper here, it would search
   as libchurn and fail where the program succeeds.  So the exported dlopen is a stub that
   jumps to glibc's with the program's return address in place, the call then glibc's own;
   only a deep-bound load, which libchurn must follow up (rebind_deep), is made here, opening
   its file as the caller's would (open_as). */

static void *(*real)(const char *, int);

/* The stub's choice: glibc's dlopen, or deep_open. */
__attribute__((used)) void *churn_dlopen_route(const char *file, int flags);

__asm__(".text\n"
        ".globl dlopen\n"
        ".type dlopen, @function\n"
        "dlopen:\n"
        ".cfi_startproc\n"
        "    endbr64\n"
        "    push %rdi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    push %rsi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    sub $8, %rsp\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    call churn_dlopen_route\n"
        "    add $8, %rsp\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    pop %rsi\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    pop %rdi\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    jmp *%rax\n"
        ".cfi_endproc\n"
        ".size dlopen, .-dlopen\n");

/* The search directories of the object map (its RPATH, LD_LIBRARY_PATH, its RUNPATH, the
   system's; glibc asks its cache between the last two), in libchurn's memory; NULL if
   unknown. */
static Dl_serinfo *search_path(struct link_map *map)
{
    Dl_serinfo size;
    if (dlinfo(map, RTLD_DI_SERINFOSIZE, &size))
        return NULL;
    Dl_serinfo *info = churn_mem_alloc(size.dls_size);
    if (!info)
        return NULL;
    memcpy(info, &size, sizeof size);
    if (dlinfo(map, RTLD_DI_SERINFO, info)) {
        churn_mem_free(info);
        return NULL;
    }
    return info;
}

/* How many directories at the end of a are the same as at the end of b. */
static unsigned same_tail(const Dl_serinfo *a, const Dl_serinfo *b)
{
    unsigned n = 0;
    while (n < a->dls_cnt && n < b->dls_cnt &&
           !strcmp(a->dls_serpath[a->dls_cnt - 1 - n].dls_name,
                   b->dls_serpath[b->dls_cnt - 1 - n].dls_name))
        n++;
    return n;
}

/* A bare name (no slash, no $) found as glibc finds it for a call from caller: an object
   loaded under that name already (its handle in *h); else into path, the first file of that
   name in the directories the caller's search has before those it shares with libchurn's
   (its RPATH and RUNPATH; between them LD_LIBRARY_PATH, which both have).  0 when neither:
   libchurn's own search then goes on as the caller's would (the cache, the system's
   directories).  A caller in no object (generated code) searches as the executable, as
   glibc has it. */
static int find_as(const void *caller, const char *file, int flags, void **h, char *path,
                   size_t cap)
{
    if ((*h = real(file, flags | RTLD_NOLOAD)))
        return 1;
    Dl_info where;
    struct link_map *theirs = NULL, *mine = NULL;
    if (!dladdr1(caller, &where, (void **)&theirs, RTLD_DL_LINKMAP) || !theirs)
        theirs = _r_debug.r_map;
    if (!theirs || !dladdr1((void *)find_as, &where, (void **)&mine, RTLD_DL_LINKMAP) ||
        !mine || theirs == mine)
        return 0;
    Dl_serinfo *their_path = search_path(theirs), *my_path = search_path(mine);
    int found = 0;
    if (their_path && my_path) {
        unsigned own = their_path->dls_cnt - same_tail(their_path, my_path);
        for (unsigned i = 0; i < own && !found; i++)
            found = snprintf(path, cap, "%s/%s", their_path->dls_serpath[i].dls_name, file) <
                        (int)cap &&
                    !access(path, F_OK);
    }
    churn_mem_free(their_path);
    churn_mem_free(my_path);
    return found;
}

/* file opened as the caller's dlopen would open it.  What libchurn asks the loader on the way
   (is it loaded, the search directories) is not traced: natively the program's call makes no
   such allocations; the load itself is. */
static void *open_as(const void *caller, const char *file, int flags)
{
    if (strchr(file, '/'))
        return real(file, flags); /* a path: no search */
    void *h;
    char path[4096];
    int saved = churn_in_shim;
    churn_in_shim = 1;
    int found = find_as(caller, file, flags, &h, path, sizeof path);
    churn_in_shim = saved;
    return h ? h : real(found ? path : file, flags);
}

/* Where glibc's dlopen cannot be found: no library can be opened. */
static void *no_dlopen(const char *file, int flags)
{
    (void)file;
    (void)flags;
    return NULL;
}

/* Reached from the stub with the program's return address in place. */
static __attribute__((noinline)) void *deep_open(const char *file, int flags)
{
    void *h = open_as(__builtin_return_address(0), file, flags);
    if (h) {
        int saved_errno = errno;
        churn_in_shim++;
        rebind_deep(h, file);
        /* the failed lookups of names the library lacks are not the program's errors */
        dlerror();
        churn_in_shim--;
        errno = saved_errno;
    }
    return h;
}

void *churn_dlopen_route(const char *file, int flags)
{
    int saved_errno = errno;
    if (!real) {
        int saved = churn_in_shim;
        churn_in_shim = 1;
        real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
        churn_in_shim = saved;
    }
    void *to = real ? (void *)real : (void *)no_dlopen;
#ifdef RTLD_DEEPBIND
    if (file && (flags & RTLD_DEEPBIND)) {
        if (atomic_load(&churn_state) == CHURN_OFF)
            churn_ensure_init();
        if (real && atomic_load(&churn_state) == CHURN_ON && !churn_malloc_is_ahead()) {
            if (!strchr(file, '$'))
                to = (void *)deep_open;
            else
                churn_log("dlopen(%s, RTLD_DEEPBIND): a name with $ in it is expanded from "
                          "the caller's place, so glibc opens it: allocator bindings that skip "
                          "libchurn are not redirected, what it allocates itself is not traced",
                          file);
        }
    }
#endif
    errno = saved_errno;
    return to;
}
