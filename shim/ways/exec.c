/*
 * exec: the image that calls it is replaced, and with it the writer and whatever it had not
 * written yet; the new image has the same pid, so it would take the same trace name and
 * replace the file (`sh -c '...; exec prog'` lost the shell's trace to prog's).  So before the
 * real call the writer drains every ring and writes its segment, ending with an EXIT of kind
 * exec (if the call fails, tracing goes on and a later EXIT counts), and the new image finds
 * CHURN_EXEC_OF=<pid>.<n> in its environment: it writes NAME.<pid>.<n>.zst, n counting the
 * execs of that process (state.c).
 *
 * A vfork child shares the parent's memory until it execs: its pid is not the trace's, and
 * it neither flushes (that would be the parent's writer) nor needs a new name (its pid is
 * new).  glibc's own exec calls inside execvp and posix_spawn are internal: the wrapper of
 * the call the program made covers them.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

#define MARK "CHURN_EXEC_OF="

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);

extern char **environ;

static int exec_count; /* execs that led to this image (state.c sets it) */

void churn_exec_set_count(int n)
{
    exec_count = n;
}

/* 1 when every pointer of envp and every string it points to can be read, as the kernel's
   exec reads them: with a bad one the exec fails with EFAULT, and libchurn, which reads envp
   before (preloads_us, prepare), must not crash where the program gets an error.  1 as well
   when the kernel cannot be asked: envp is then read as it is. */
static int readable_env(char *const envp[])
{
    if (!envp)
        return 1;
    for (size_t i = 0;; i++) {
        char *s;
        ssize_t n = churn_os_read_own(&s, &envp[i], sizeof s);
        if (n < 0)
            return 1;
        if (n != sizeof s)
            return 0;
        if (!s)
            return 1;
        for (size_t off = 0;;) {
            char chunk[512]; /* small: exec may be called on a small sigaltstack */
            /* within a page: a read across into an unreadable one would say nothing of the
               bytes before it */
            size_t want = 4096 - ((uintptr_t)(s + off) & 4095);
            n = churn_os_read_own(chunk, s + off, want < sizeof chunk ? want : sizeof chunk);
            if (n < 0)
                return 1;
            if (n == 0)
                return 0;
            if (memchr(chunk, 0, (size_t)n))
                break;
            off += (size_t)n;
        }
    }
}

/* Whether envp preloads libchurn (by its file name) into the new image: only then does the
   image need the mark.  A program that execs with an environment of its own (`env -i env`)
   must find no variable of ours in it. */
static int preloads_us(char *const envp[])
{
    static const char *name;
    if (!name) {
        Dl_info info;
        if (!dladdr((void *)preloads_us, &info) || !info.dli_fname)
            return 1;
        const char *slash = strrchr(info.dli_fname, '/');
        name = slash ? slash + 1 : info.dli_fname;
    }
    for (size_t i = 0; envp && envp[i]; i++)
        if (!strncmp(envp[i], "LD_PRELOAD=", 11) && strstr(envp[i] + 11, name))
            return 1;
    return 0;
}

/* The environment for the new image: envp without any CHURN_EXEC_OF, then ours; NULL when
   this image is not the one tracing into the file or the new one will not be traced (then
   envp goes as it is). */
static char **prepare(char *const envp[], char *mark, size_t mark_size)
{
    if (atomic_load(&churn_state) != CHURN_ON || churn_outfile_pid() != getpid() ||
        !readable_env(envp))
        return NULL;
    int saved = churn_in_shim;
    churn_in_shim = 1;
    churn_writer_exec_flush();
    churn_in_shim = saved;
    if (!preloads_us(envp))
        return NULL;
    size_t n = 0;
    while (envp && envp[n])
        n++;
    char **env = churn_mem_alloc((n + 2) * sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(envp[i], MARK, sizeof MARK - 1))
            env[k++] = envp[i];
    snprintf(mark, mark_size, MARK "%d.%d", (int)getpid(), exec_count + 1);
    env[k++] = mark;
    env[k] = NULL;
    return env;
}

/* Runs the real call with the prepared environment; frees it if the call comes back. */
#define WITH_ENV(envp, call_with_env)                                                        \
    do {                                                                                     \
        char mark[64];                                                                       \
        char **env = prepare(envp, mark, sizeof mark);                                      \
        char *const *use = env ? env : (envp);                                               \
        int rc = call_with_env;                                                              \
        churn_writer_exec_failed();                                                          \
        if (env)                                                                             \
            churn_mem_free(env);                                                             \
        return rc;                                                                           \
    } while (0)

CHURN_API int execve(const char *path, char *const argv[], char *const envp[])
{
    static void *_Atomic next;
    execve_fn real = (execve_fn)churn_next_of(&next, "execve");
    WITH_ENV(envp, real(path, argv, use));
}

CHURN_API int execvpe(const char *file, char *const argv[], char *const envp[])
{
    static void *_Atomic next;
    execve_fn real = (execve_fn)churn_next_of(&next, "execvpe");
    WITH_ENV(envp, real(file, argv, use));
}

CHURN_API int fexecve(int fd, char *const argv[], char *const envp[])
{
    static void *_Atomic next;
    fexecve_fn real = (fexecve_fn)churn_next_of(&next, "fexecve");
    WITH_ENV(envp, real(fd, argv, use));
}

CHURN_API int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                       int flags)
{
    static void *_Atomic next;
    execveat_fn real = (execveat_fn)churn_next_of(&next, "execveat");
    WITH_ENV(envp, real(dirfd, path, argv, use, flags));
}

CHURN_API int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

CHURN_API int execvp(const char *file, char *const argv[])
{
    return execvpe(file, argv, environ);
}

/* The list forms: their arguments gathered into an array (on the stack, as glibc does). */
#define GATHER(arg0, last)                                                                   \
    size_t argc = 1;                                                                         \
    va_list ap;                                                                              \
    va_start(ap, arg0);                                                                      \
    while (va_arg(ap, const char *))                                                         \
        argc++;                                                                              \
    va_end(ap);                                                                              \
    char *argv[argc + 1];                                                                    \
    argv[0] = (char *)(arg0);                                                                \
    va_start(ap, arg0);                                                                      \
    for (size_t i = 1; i <= argc; i++)                                                       \
        argv[i] = va_arg(ap, char *);                                                        \
    last;                                                                                    \
    va_end(ap)

CHURN_API int execl(const char *path, const char *arg0, ...)
{
    GATHER(arg0, (void)0);
    return execve(path, argv, environ);
}

CHURN_API int execlp(const char *file, const char *arg0, ...)
{
    GATHER(arg0, (void)0);
    return execvpe(file, argv, environ);
}

CHURN_API int execle(const char *path, const char *arg0, ...)
{
    char *const *envp;
    GATHER(arg0, envp = va_arg(ap, char *const *));
    return execve(path, argv, envp);
}
