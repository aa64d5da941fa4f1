/*
 * A program whose stderr is its own data file: it closes 0..2, opens /dev/null as 0 and 1
 * and its data file (argv[1]) as 2, writes a known line into it, then allocates blocks of
 * random sizes (argv[2] of them; random sizes compress badly, so the trace grows fast) and
 * writes a last line.  The data file must hold exactly those two lines: whatever libchurn has
 * to say meanwhile (a full disk) is not the program's data.  With argv[1] "-" the descriptors
 * stay as they are and the lines go to stdout: the same workload, for the full-disk tests.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEEP 1024

static int out_fd = 1;

static void say(const char *s)
{
    if (write(out_fd, s, strlen(s)) != (ssize_t)strlen(s))
        _exit(4);
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    long n = atol(argv[2]);
    if (strcmp(argv[1], "-")) {
        close(0);
        close(1);
        close(2);
        if (open("/dev/null", O_RDONLY) != 0 || open("/dev/null", O_WRONLY) != 1 ||
            open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644) != 2)
            return 3;
        out_fd = 2;
    }
    say("data begins\n");
    static void *keep[KEEP];
    unsigned x = 12345;
    for (long i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        unsigned slot = (x >> 8) % KEEP;
        free(keep[slot]);
        keep[slot] = malloc(16 + (x >> 12) % 4000);
        if (!keep[slot])
            return 5;
    }
    say("data ends\n");
    return 0;
}
