#include "symbols/dbgsym.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"

extern char **environ;

/* An answer kept: a module path and its package (NULL: none). */
typedef struct known {
    struct known *next;
    char *path, *package;
} known;
static known *answers;

static known *find(const char *path)
{
    for (known *k = answers; k; k = k->next)
        if (!strcmp(k->path, path))
            return k;
    return NULL;
}

/* The names dpkg may list a module under: the path the loader used, the file it links to,
   and each with or without /usr in front (a merged /usr has /lib as /usr/lib, and Debian 12's
   packages still list some libraries under /lib).  Up to 4, into names. */
typedef char module_names[4][PATH_MAX];

static size_t names_of(const char *path, module_names names)
{
    /* Packages install under these; a program built in a home or build directory is asked
       about without running dpkg. */
    static const char *const roots[] = {"/usr/", "/lib", "/bin/", "/sbin/", "/opt/"};
    size_t r = 0;
    while (r < sizeof roots / sizeof *roots && strncmp(path, roots[r], strlen(roots[r])))
        r++;
    if (r == sizeof roots / sizeof *roots)
        return 0;
    size_t n = 0;
    char real[PATH_MAX];
    const char *forms[2] = {path, realpath(path, real) ? real : NULL};
    for (int f = 0; f < 2; f++) {
        const char *p = forms[f];
        if (!p || (f == 1 && !strcmp(p, path)))
            continue;
        snprintf(names[n++], PATH_MAX, "%s", p);
        if (!strncmp(p, "/usr/", 5))
            snprintf(names[n++], PATH_MAX, "%s", p + 4);
        else
            snprintf(names[n++], PATH_MAX, "/usr%s", p);
    }
    return n;
}

/* Runs dpkg-query -S on argv's names; its output, or NULL. */
static char *dpkg_query(char **argv)
{
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0)
        return NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int spawned = posix_spawnp(&pid, "dpkg-query", &fa, NULL, argv, environ) == 0;
    posix_spawn_file_actions_destroy(&fa);
    close(pipefd[1]);
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (ssize_t got = 1; spawned && got > 0;) {
        churn_reserve(&text, &cap, len + 4097, 1);
        got = read(pipefd[0], text + len, 4096);
        if (got < 0 && errno == EINTR)
            got = 1;
        else if (got > 0)
            len += (size_t)got;
    }
    close(pipefd[0]);
    int status;
    while (spawned && waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (text)
        text[len] = '\0';
    return text;
}

/* "libsqlite3-0:amd64, other: /usr/lib/...": the first package, without its architecture
   (a line "diversion by ..." names no package). */
static char *first_package(const char *line, size_t len)
{
    if (!strncmp(line, "diversion by ", 13))
        return NULL;
    size_t n = strcspn(line, ":, ");
    if (n == 0 || n > len)
        return NULL;
    char *p = churn_xmalloc(n + 1);
    memcpy(p, line, n);
    p[n] = '\0';
    return p;
}

void churn_dbgsym_packages(const char *const *paths, size_t n, const char **packages)
{
    module_names *names = churn_xcalloc(n ? n : 1, sizeof *names);
    size_t *count = churn_xcalloc(n ? n : 1, sizeof *count);
    char **argv = churn_xcalloc(4 * n + 3, sizeof *argv);
    size_t argc = 0;
    argv[argc++] = "dpkg-query";
    argv[argc++] = "-S";
    for (size_t i = 0; i < n; i++) {
        if (find(paths[i]))
            continue;
        count[i] = names_of(paths[i], names[i]);
        for (size_t k = 0; k < count[i]; k++)
            argv[argc++] = names[i][k];
    }
    char *text = argc > 2 ? dpkg_query(argv) : NULL;
    for (size_t i = 0; i < n; i++) {
        if (!count[i] || find(paths[i]))
            continue;
        known *k = churn_xcalloc(1, sizeof *k);
        k->path = churn_xstrdup(paths[i]);
        for (const char *line = text; line && *line && !k->package;) {
            size_t len = strcspn(line, "\n");
            const char *sep = memmem(line, len, ": /", 3);
            for (size_t c = 0; sep && c < count[i] && !k->package; c++)
                if ((size_t)(line + len - (sep + 2)) == strlen(names[i][c]) &&
                    !memcmp(sep + 2, names[i][c], strlen(names[i][c])))
                    k->package = first_package(line, (size_t)(sep - line));
            line += len + (line[len] == '\n');
        }
        k->next = answers;
        answers = k;
    }
    for (size_t i = 0; i < n; i++) {
        known *k = find(paths[i]);
        packages[i] = k ? k->package : NULL;
    }
    free(text);
    free(argv);
    free(count);
    free(names);
}
