/* Four callers of an allocation wrapper and three of a function that keeps what it allocates,
   for test/t_stripped_frames.sh, which runs this program stripped as well as with its symbol
   table.  xmalloc_checked returns what malloc returned (its name makes it a wrapper when the
   symbol table is there; stripped, its code does); keep_one through keep_four keep 10, 20,
   30 and 40 objects of 32, 48, 64 and 80 bytes through it.  remember stores the block it
   allocates and returns nothing, so it is the row of its callers' 5, 6 and 7 objects of 24
   bytes, not a wrapper. */
#include <stdio.h>
#include <stdlib.h>

void *kept[200]; /* not static: its stores are not optimized away */

size_t nkept, handed_out;

__attribute__((noinline, noclone)) static void *xmalloc_checked(size_t n)
{
    void *p = malloc(n);
    if (!p) {
        perror("malloc");
        exit(1);
    }
    handed_out += n;
    return p;
}

__attribute__((noinline, noclone)) static void remember(size_t n)
{
    void *p = malloc(n);
    if (!p) {
        perror("malloc");
        exit(1);
    }
    kept[nkept++] = p;
}

#define KEEPER(name, count, size)                                                          \
    __attribute__((noinline, noclone)) static void name(void)                              \
    {                                                                                      \
        for (int i = 0; i < (count); i++)                                                  \
            kept[nkept++] = xmalloc_checked(size);                                         \
    }
KEEPER(keep_one, 10, 32)
KEEPER(keep_two, 20, 48)
KEEPER(keep_three, 30, 64)
KEEPER(keep_four, 40, 80)

#define REMEMBERER(name, count)                                                            \
    __attribute__((noinline, noclone)) static void name(void)                              \
    {                                                                                      \
        for (int i = 0; i < (count); i++)                                                  \
            remember(24);                                                                  \
    }
REMEMBERER(note_five, 5)
REMEMBERER(note_six, 6)
REMEMBERER(note_seven, 7)

int main(void)
{
    keep_one();
    keep_two();
    keep_three();
    keep_four();
    note_five();
    note_six();
    note_seven();
    printf("%zu objects, %zu bytes through xmalloc_checked\n", nkept, handed_out);
    return 0;
}
