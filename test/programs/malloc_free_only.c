/*
 * A program that defines malloc and free and nothing else of the family: free lists per
 * power-of-two class over mmap'd memory, each block behind a header whose magic free checks
 * (a block it did not make aborts it).  Every malloc and free of the process binds to these,
 * while calloc and realloc stay glibc's, which know nothing of these blocks: the program
 * never calls them, and neither may anything libchurn does on its behalf.  Allocates, checks
 * and frees BLOCKS blocks, then prints `BLOCKS blocks, checksum C` (the same under libchurn
 * as natively).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BLOCKS 1000
#define CLASSES 40
#define MAGIC 0x6d616c6c6f63ull

struct header {
    uint64_t cls;
    uint64_t magic;
};

static void *free_lists[CLASSES];
static unsigned char *bump, *bump_end;

__attribute__((noinline)) void *malloc(size_t size)
{
    unsigned cls = 5;
    while (cls < CLASSES - 1 && ((size_t)1 << cls) < size + sizeof(struct header))
        cls++;
    size_t bytes = (size_t)1 << cls;
    struct header *h = free_lists[cls];
    if (h) {
        free_lists[cls] = *(void **)h;
    } else {
        if (bytes > (size_t)(bump_end - bump)) {
            size_t chunk = bytes > (16u << 20) ? bytes : (16u << 20);
            void *m =
                mmap(NULL, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (m == MAP_FAILED)
                return NULL;
            bump = m;
            bump_end = bump + chunk;
        }
        h = (struct header *)bump;
        bump += bytes;
    }
    h->cls = cls;
    h->magic = MAGIC;
    return h + 1;
}

__attribute__((noinline)) void free(void *p)
{
    if (!p)
        return;
    struct header *h = (struct header *)p - 1;
    if (h->magic != MAGIC)
        abort();
    h->magic = 0;
    *(void **)h = free_lists[h->cls];
    free_lists[h->cls] = h;
}

int main(void)
{
    static unsigned char *blocks[BLOCKS];
    uint64_t sum = 0;
    for (unsigned i = 0; i < BLOCKS; i++) {
        size_t n = 8 + i % 600;
        blocks[i] = malloc(n);
        if (!blocks[i])
            return 1;
        memset(blocks[i], (int)(i & 0xff), n);
    }
    for (unsigned i = 0; i < BLOCKS; i++) {
        sum = sum * 31 + blocks[i][(8 + i % 600) - 1];
        free(blocks[i]);
    }
    char *s = strdup("malloc and free only");
    printf("%d blocks, checksum %llu, %s\n", BLOCKS, (unsigned long long)sum, s);
    free(s);
    return 0;
}
