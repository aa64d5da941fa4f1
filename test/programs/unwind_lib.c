/* Part of t_unwind: a shared library whose frames sit between the program's frames.  Built
   without frame pointers; the recursion goes back and forth through the callback. */
#include <alloca.h>
#include <string.h>

typedef void (*unwind_cb)(int depth);

__attribute__((noinline)) int unwind_lib_descend(int depth, unwind_cb cb)
{
    if (depth <= 0) {
        cb(depth);
        return 1;
    }
    if (depth % 2) {
        char *pad = alloca(32 + (size_t)depth * 8);
        memset(pad, depth, 32);
        int r = unwind_lib_descend(depth - 1, cb);
        __asm__ volatile("" : : "r"(pad) : "memory");
        return r + pad[1];
    }
    int r = unwind_lib_descend(depth - 1, cb);
    __asm__ volatile("" ::: "memory");
    return r;
}
