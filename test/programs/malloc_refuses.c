/* Preloaded after libchurn: an allocator behind it that refuses malloc and calloc of the size
   in MALLOC_REFUSES (bytes, of the whole request), as one out of memory would, and hands
   every other request to glibc. */
#include <errno.h>
#include <stdlib.h>

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);

static size_t refused = (size_t)-1;

static __attribute__((constructor)) void init(void)
{
    const char *v = getenv("MALLOC_REFUSES");
    if (v && *v)
        refused = strtoul(v, NULL, 10);
}

void *malloc(size_t size)
{
    if (size == refused) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
    if (n * size == refused) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_calloc(n, size);
}
