/*
 * exec with an environment the kernel cannot read: a bad pointer among envp's entries, envp
 * itself a bad pointer, and an entry running into an unreadable page without its NUL.  Each
 * of execve, execvpe, execveat and fexecve fails with EFAULT and the program goes on.
 * Allocates between the calls (so that the trace has something after each), prints one line
 * per call `CALL CASE: rc ERRNO`, then `allocations N`.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define TARGET "/bin/true"

static long allocations;
/* read at run time: the compiler must not see the bad address */
static volatile uintptr_t bad_address = 16;

static void churn(void)
{
    for (int i = 0; i < 100; i++) {
        char *volatile p = malloc(64 + (size_t)i); /* volatile: the pair stays */
        free(p);
        allocations++;
    }
}

static int call(const char *how, char *const envp[])
{
    char *argv[] = {"true", NULL};
    if (!strcmp(how, "execve"))
        return execve(TARGET, argv, envp);
    if (!strcmp(how, "execvpe"))
        return execvpe("true", argv, envp);
    if (!strcmp(how, "execveat"))
        return execveat(AT_FDCWD, TARGET, argv, envp, 0);
    int fd = open(TARGET, O_RDONLY | O_CLOEXEC);
    int rc = fexecve(fd, argv, envp);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

int main(void)
{
    /* a string that ends where the readable memory does, without its NUL */
    long page = sysconf(_SC_PAGESIZE);
    char *two = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (two == MAP_FAILED || mprotect(two + page, (size_t)page, PROT_NONE))
        return 1;
    memset(two, 'x', (size_t)page);
    memcpy(two, "LONG=", 5);

    char *bad_entry[] = {"A=1", (char *)bad_address, NULL};
    char *unterminated[] = {"A=1", two, NULL};
    const char *calls[] = {"execve", "execvpe", "execveat", "fexecve"};
    for (int i = 0; i < 4; i++) {
        churn();
        int rc = call(calls[i], bad_entry);
        printf("%s bad entry: %d %s\n", calls[i], rc, strerrorname_np(errno));
        churn();
        rc = call(calls[i], (char *const *)bad_address);
        printf("%s bad envp: %d %s\n", calls[i], rc, strerrorname_np(errno));
        churn();
        rc = call(calls[i], unterminated);
        printf("%s unterminated: %d %s\n", calls[i], rc, strerrorname_np(errno));
    }
    churn();
    printf("allocations %ld\n", allocations);
    return 0;
}
