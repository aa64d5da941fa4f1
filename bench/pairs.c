/* malloc and free pairs, nothing else: bench/instructions.sh counts what one pair costs in
   each mode.  Sizes 16..271 bytes, so that the allocations are tcache's, as most of python3's
   are. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    void *volatile keep;
    for (long i = 0; i < n; i++) {
        void *p = malloc(16 + (i & 255));
        keep = p;
        free(p);
    }
    (void)keep;
    puts("ok");
    return 0;
}
