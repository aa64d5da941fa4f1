/*
 * A library built without debug info (stripped), twice, as liba.so and libb.so
 * (-DLIB_FN=a_keep / b_keep): each keeps what its function allocates, so that stacks run
 * through both and the analyzer warns once per module that it has no debug info.
 */
#include <stdlib.h>
#include <string.h>

void *LIB_FN(size_t n);

void *LIB_FN(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 7, n);
    return p;
}
