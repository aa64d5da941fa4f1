/* Keeps 2,000 small objects for 600 ms, then prints the resident kilobytes of its mappings
   that have no name (neither a file nor [heap], [stack], [vdso]): natively a few pages of the
   libraries' .bss; traced, also libchurn's own memory, which the trace reports apart.  And
   the resident kilobytes of libchurn.so's writable mappings that are its file's (its data,
   relocated at load, and the start of its .bss): libchurn's too, though not nameless. */
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
    int nameless = 0, own_data = 0;
    long kb = 0, own_kb = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, off, inode;
        char perms[8], dev[16];
        int end = 0;
        if (sscanf(line, "%lx-%lx %7s %lx %15s %lu %n", &lo, &hi, perms, &off, dev, &inode,
                   &end) >= 6 && end) {
            nameless = line[end] == '\n' || line[end] == 0;
            own_data = perms[1] == 'w' && strstr(line + end, "/libchurn.so\n");
        } else if (!strncmp(line, "Rss:", 4)) {
            if (nameless)
                kb += atol(line + 4);
            if (own_data)
                own_kb += atol(line + 4);
        }
    }
    fclose(f);
    printf("nameless %ld kB\n", kb);
    printf("libchurn data %ld kB\n", own_kb);
    for (int i = 0; i < KEEP; i++)
        free(keep[i]);
    return 0;
}
