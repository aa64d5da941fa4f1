/*
 * A program that names the descriptors at the top of the range, where libchurn keeps its own
 * (fds.c).  For each number from 992 to 1023: fcntl(F_GETFD) and close must say EBADF (no
 * such descriptor, as natively); dup2 of the program's data file onto it, a line written
 * there, allocations (so that libchurn writes its trace meanwhile), and close, which must
 * succeed.  Then the same through raw system calls, past libc (dup3, and close every other
 * time; libc's close the others): libchurn sees none of the takeovers coming.  At the end the
 * data file must hold the program's lines and nothing else.  Some allocations come from a
 * frame without CFI: under CHURN_UNWIND=libunwind, libunwind walks it by the frame chain and
 * probes memory through its pipe, one of the descriptors taken over.  Prints `allocations N`
 * and `data file intact`.  Usage: fd_takeover DATAFILE
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LOW 992
#define HIGH 1023

static long allocations;

/* malloc called from a frame with no CFI (x86-64): a frame pointer only */
void *no_cfi_malloc(size_t size);
__asm__(".text\n"
        ".globl no_cfi_malloc\n"
        ".type no_cfi_malloc, @function\n"
        "no_cfi_malloc:\n"
        "    push %rbp\n"
        "    mov %rsp, %rbp\n"
        "    call malloc@PLT\n"
        "    pop %rbp\n"
        "    ret\n"
        ".size no_cfi_malloc, .-no_cfi_malloc\n");

static void die(const char *what, int n)
{
    fprintf(stderr, "fd_takeover: %s %d: %s\n", what, n, strerror(errno));
    exit(1);
}

/* Allocations, and a pause, so that libchurn's writer flushes (CHURN_FLUSH_MS) and reads. */
static void churn(void)
{
    for (int i = 0; i < 2000; i++) {
        /* volatile: the pair stays */
        char *volatile p = i % 10 ? malloc(100 + (size_t)(i % 50)) : no_cfi_malloc(64);
        free(p);
        allocations++;
    }
    usleep(2000);
}

static void say(int fd, int n, const char *how)
{
    char line[64];
    int len = snprintf(line, sizeof line, "%s %d\n", how, n);
    if (write(fd, line, (size_t)len) != len)
        die("write to", fd);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    int data = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
    if (data < 0)
        die("open", 0);
    for (int n = LOW; n <= HIGH; n++) {
        errno = 0;
        if (fcntl(n, F_GETFD) != -1 || errno != EBADF)
            die("fcntl(F_GETFD) did not say EBADF for", n);
        if (close(n) != -1 || errno != EBADF)
            die("close did not say EBADF for", n);
        if (dup2(data, n) != n)
            die("dup2 onto", n);
        say(n, n, "dup2");
        churn();
        if (close(n))
            die("close", n);
    }
    for (int n = LOW; n <= HIGH; n++) {
        if (syscall(SYS_dup3, data, n, 0) != n)
            die("raw dup3 onto", n);
        say(n, n, "raw");
        churn();
        /* every other one closed through libc: the number is the program's now */
        if (n % 2 ? syscall(SYS_close, n) : close(n))
            die("close after raw dup3", n);
    }
    close(data);
    FILE *f = fopen(argv[1], "r");
    char line[256];
    int n = LOW, raw = 0;
    while (f && fgets(line, sizeof line, f)) {
        char want[64];
        snprintf(want, sizeof want, "%s %d\n", raw ? "raw" : "dup2", n);
        if (strcmp(line, want)) {
            fprintf(stderr, "fd_takeover: the data file holds '%.60s' where '%s' was written\n",
                    line, want);
            return 1;
        }
        if (++n > HIGH && !raw) {
            n = LOW;
            raw = 1;
        }
    }
    if (!f || !raw || n != HIGH + 1) {
        fprintf(stderr, "fd_takeover: the data file is short\n");
        return 1;
    }
    fclose(f);
    printf("allocations %ld\ndata file intact\n", allocations);
    return 0;
}
