/* Temporaries by heaptrack's definition, an allocation whose free is the very next heap
   event (test/t_referee.sh).  Made to tell an exact count from a count that only compares
   the freed block's (size, callsite) with the last allocation's:
     pairs:   two blocks from one callsite, then both freed   -> no temporary (b's allocation
              is between a and its free; a's free is between b and its free), where
              comparing (size, callsite) counts a's free as one
     single:  p = make(48); free(p)                          -> one temporary
     realloc: p = make(48); p = realloc(p, 96); free(p)      -> two (each block's free comes
              right after its allocation)
   500 rounds of each: exactly 1500 temporaries. */
#include <stdlib.h>

static inline void escape(void *p) { __asm__ volatile("" : : "g"(p) : "memory"); }

__attribute__((noinline)) static void *make(size_t n)
{
    void *p = malloc(n);
    escape(p);
    return p;
}

/* One call instruction for both blocks of a pair: a loop the compiler does not unroll. */
__attribute__((noinline)) static void make_pair(void **pair, int n)
{
    for (int k = 0; k < n; k++)
        pair[k] = make(48);
}

static volatile int two = 2;

int main(void)
{
    for (int i = 0; i < 500; i++) {
        void *pair[2];
        make_pair(pair, two);
        free(pair[0]);
        free(pair[1]);
    }
    for (int i = 0; i < 500; i++)
        free(make(48));
    for (int i = 0; i < 500; i++) {
        void *p = make(48);
        p = realloc(p, 96);
        escape(p);
        free(p);
    }
    return 0;
}
