/*
 * errno as the program finds it: at the start of main, where nothing of its own has failed
 * (0), and after its first successful allocations, which set nothing.  Prints both.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    int at_start = errno;
    char *volatile p = malloc(100); /* volatile: the call stays */
    char *volatile q = malloc(1 << 20);
    int after = errno;
    free(p);
    free(q);
    printf("errno at main %d, after malloc %d\n", at_start, after);
    return 0;
}
