/*
 * A daemon's start: close every descriptor from 3 up (a loop of close, or close_range, or
 * closefrom, by argv[1]), then open its own files, which take the lowest numbers, and
 * `dup2` one onto a fixed number (`exec 3>file` in a shell).  It writes a known line into
 * each file, allocates for longer than the trace's flush time and checks that each file holds
 * exactly its line: a tracer whose descriptors the program closed or took over must not write
 * into the program's files.  Then it opens /dev/null and expects the lowest free number.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

#define FILES 24
#define LINE "a line of the program's own\n"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "loop";
    if (!strcmp(how, "loop")) {
        for (int fd = 3; fd < 65536; fd++)
            close(fd);
    } else if (!strcmp(how, "close_range")) {
        if (close_range(3, ~0u, 0))
            die("close_range failed");
    } else if (!strcmp(how, "closefrom")) {
        closefrom(3);
    } else {
        die("usage: closeall loop|close_range|closefrom");
    }
    int fds[FILES];
    for (int i = 0; i < FILES; i++) {
        char name[32];
        snprintf(name, sizeof name, "file%d", i);
        fds[i] = open(name, O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fds[i] != 3 + i)
            die("file%d opened as descriptor %d, not %d", i, fds[i], 3 + i);
    }
    int fixed = open("fixed", O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (dup2(fixed, 3 + FILES + 1) < 0)
        die("dup2 failed");
    close(fixed);
    for (int i = 0; i < FILES; i++)
        if (write(fds[i], LINE, strlen(LINE)) != (ssize_t)strlen(LINE))
            die("write to file%d failed", i);
    if (write(3 + FILES + 1, LINE, strlen(LINE)) != (ssize_t)strlen(LINE))
        die("write to the dup2'd file failed");
    /* Longer than the trace's flush time (the test sets CHURN_FLUSH_MS), so segments are
       written while the program's files hold the low numbers. */
    double end = now_s() + 0.5;
    unsigned n = 0;
    while (now_s() < end) {
        void *p = malloc(32 + n % 512);
        keep(p);
        free(p);
        n++;
    }
    for (int i = 0; i <= FILES; i++) {
        int fd = i < FILES ? fds[i] : 3 + FILES + 1;
        char buf[256];
        ssize_t got = pread(fd, buf, sizeof buf, 0);
        if (got != (ssize_t)strlen(LINE) || memcmp(buf, LINE, strlen(LINE)))
            die("descriptor %d holds %zd bytes, not the program's line", fd, got);
        close(fd);
    }
    int null = open("/dev/null", O_RDONLY);
    if (null != 3)
        die("after closing its files the program's next descriptor is %d, not 3", null);
    printf("%u allocations, files intact (%s)\n", n, how);
    return 0;
}
