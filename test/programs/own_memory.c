/* Keeps 2,000 small objects for 600 ms, then prints the resident kilobytes of its mappings
   that have no name (neither a file nor [heap], [stack], [vdso]): natively a few pages of the
   libraries' .bss; traced, also libchurn's own memory, which the trace reports apart. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KEEP 2000

int main(void)
{
    static void *keep[KEEP];
    for (int i = 0; i < KEEP; i++) {
        if (!(keep[i] = malloc(100)))
            return 1;
        memset(keep[i], 1, 100);
    }
    nanosleep(&(struct timespec){0, 600000000}, NULL);
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return 1;
    char line[512];
    int nameless = 0;
    long kb = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, off, inode;
        char perms[8], dev[16];
        int end = 0;
        if (sscanf(line, "%lx-%lx %7s %lx %15s %lu %n", &lo, &hi, perms, &off, dev, &inode,
                   &end) >= 6 && end)
            nameless = line[end] == '\n' || line[end] == 0;
        else if (nameless && !strncmp(line, "Rss:", 4))
            kb += atol(line + 4);
    }
    fclose(f);
    printf("nameless %ld kB\n", kb);
    for (int i = 0; i < KEEP; i++)
        free(keep[i]);
    return 0;
}
