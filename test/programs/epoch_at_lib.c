/*
 * CHURN_EPOCH_AT on a function of a shared library, not of the executable (as node's code is
 * in libnode.so on Debian).  Built twice: with -DLIBRARY as libepochlib.so, whose
 * lib_request() allocates one object per call, and without it as the program that calls it
 * N times and frees each object in the next call.
 */
#include <stdio.h>
#include <stdlib.h>

void *lib_request(void *previous);

#ifdef LIBRARY
void *lib_request(void *previous)
{
    free(previous);
    return malloc(40);
}
#else
int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10;
    void *p = NULL;
    for (int i = 0; i < n; i++)
        p = lib_request(p);
    free(p);
    printf("%d requests\n", n);
    return 0;
}
#endif
