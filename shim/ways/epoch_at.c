/*
 * CHURN_EPOCH_AT=<function>[,<function>...]: every call of one of these functions of the
 * executable begins a new epoch (workerd::IoContext::IoContext: one epoch per request and
 * subrequest; an XS worker's command handler: one per delivery).
 *
 * A name is a mangled symbol or its prefix (_ZN7workerd9IoContextC), a plain C name, or a
 * qualified C++ name (workerd::IoContext::IoContext, ns::Class::~Class, ns::function), which
 * is turned into the mangled prefix it must start with, so no demangler runs in the traced
 * process.  Names are looked up in the executable's .symtab and .dynsym, then, for an exact
 * name the executable lacks, among the symbols its shared libraries export (Debian's node
 * keeps its code in libnode.so); each matching address gets an entry hook from the patching
 * engine.  A name that matches nothing is an error.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "walk/elfsyms.h"
#include "ways/patch.h"
#include "shim.h"

static void on_entry(void)
{
    if (!churn_in_shim && atomic_load_explicit(&churn_state, memory_order_relaxed) == CHURN_ON)
        churn_epoch_advance_in_program();
}

/* "a::b::c" -> "_ZN1a1b1c" followed by C (constructor), D (destructor) or E (function). */
static int mangled_prefix(const char *name, char *out, size_t cap)
{
    char parts[16][256];
    size_t n = 0;
    const char *p = name;
    while (*p) {
        const char *end = strstr(p, "::");
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (n == 16 || len == 0 || len >= sizeof parts[0])
            return -1;
        memcpy(parts[n], p, len);
        parts[n++][len] = 0;
        p += len + (end ? 2 : 0);
    }
    if (n < 2)
        return -1;
    size_t used = (size_t)snprintf(out, cap, "_ZN");
    const char *last = parts[n - 1];
    int ctor = !strcmp(last, parts[n - 2]);
    int dtor = last[0] == '~' && !strcmp(last + 1, parts[n - 2]);
    size_t scopes = ctor || dtor ? n - 1 : n;
    for (size_t i = 0; i < scopes && used < cap; i++)
        used += (size_t)snprintf(out + used, cap - used, "%zu%s", strlen(parts[i]), parts[i]);
    if (used < cap)
        used += (size_t)snprintf(out + used, cap - used, "%s", ctor ? "C" : dtor ? "D" : "E");
    return used < cap ? 0 : -1;
}

typedef struct {
    uintptr_t addrs[64];
    size_t n;
} found_t;

static void collect(const char *name, uintptr_t addr, void *ctx)
{
    (void)name;
    found_t *f = ctx;
    for (size_t i = 0; i < f->n; i++)
        if (f->addrs[i] == addr)
            return; /* C1 and C2 often share one body */
    if (f->n < sizeof f->addrs / sizeof *f->addrs)
        f->addrs[f->n++] = addr;
}

static int resolve(const char *name, found_t *found)
{
    char prefix[4096];
    if (!strncmp(name, "_Z", 2) || !strchr(name, ':')) {
        uintptr_t exact = churn_exe_symbol(name);
        if (!exact)
            exact = (uintptr_t)dlsym(RTLD_DEFAULT, name);
        if (exact && !(exact >= churn_self_lo && exact < churn_self_hi)) {
            collect(name, exact, found);
            return 0;
        }
        if (!strncmp(name, "_Z", 2))
            churn_exe_symbols_with_prefix(name, collect, found);
        return 0;
    }
    if (mangled_prefix(name, prefix, sizeof prefix))
        return -1;
    churn_exe_symbols_with_prefix(prefix, collect, found);
    return 0;
}

int churn_epoch_at_install(const char *list)
{
    char copy[sizeof churn_opt.epoch_at];
    strcpy(copy, list);
    for (char *save = NULL, *name = strtok_r(copy, ",", &save); name;
         name = strtok_r(NULL, ",", &save)) {
        found_t found = {.n = 0};
        if (resolve(name, &found)) {
            churn_log("CHURN_EPOCH_AT: cannot read \"%s\" as a function name; not tracing", name);
            return -1;
        }
        if (!found.n) {
            /* The process is named: it may be a wrapper (timeout, env, a shell) in front of the
               program that has the function, and the programs it starts look for it again. */
            char exe[256];
            ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
            exe[len > 0 ? len : 0] = 0;
            churn_log("CHURN_EPOCH_AT: no function \"%s\" in %s (pid %d) or its libraries; "
                      "not tracing this process",
                      name, len > 0 ? exe : "the executable", (int)getpid());
            return -1;
        }
        for (size_t i = 0; i < found.n; i++) {
            const char *why = NULL;
            if (churn_patch_entry_hook((void *)found.addrs[i], on_entry, &why)) {
                churn_log("CHURN_EPOCH_AT: cannot hook \"%s\" at %#lx: %s; not tracing", name,
                          (unsigned long)found.addrs[i], why ? why : "unknown reason");
                return -1;
            }
        }
    }
    return 0;
}
