/*
 * Page-level calls under the shim: anonymous mmap, madvise(MADV_DONTNEED), mremap with a
 * move allowed, munmap, a read-only file mapping, and sbrk up and back down.  The program
 * checks each result (contents kept across mremap, zero pages after DONTNEED, the ELF magic
 * of its own executable) and prints what it did, one `call KIND ADDRESS LENGTH ...` line each
 * (addresses in decimal), for the test to find the same calls in the trace.
 */
#define _GNU_SOURCE /* mremap */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "probe.h"

int main(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    phase("maps");

    unsigned char *a = mmap(NULL, 7 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                            -1, 0);
    if (a == MAP_FAILED)
        die("mmap of 7 pages failed");
    fill(a, 7 * page, 1);
    if (madvise(a + 2 * page, 3 * page, MADV_DONTNEED))
        die("madvise failed");
    for (size_t i = 2 * page; i < 5 * page; i++)
        if (a[i])
            die("page %zu not zero after MADV_DONTNEED", i / page);
    unsigned char *b = mremap(a, 7 * page, 13 * page, MREMAP_MAYMOVE);
    if (b == MAP_FAILED)
        die("mremap to 13 pages failed");
    if (!filled(b, 2 * page, 1) || b[5 * page] != (unsigned char)(31u + 5 * page) ||
        b[7 * page - 1] != (unsigned char)(31u + 7 * page - 1))
        die("mremap lost the mapping's contents");
    memset(b + 7 * page, 0xab, 6 * page);
    if (munmap(b, 13 * page))
        die("munmap failed");

    int fd = open("/proc/self/exe", O_RDONLY);
    if (fd < 0)
        die("cannot open /proc/self/exe");
    unsigned char *f = mmap(NULL, page, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f == MAP_FAILED || memcmp(f, "\177ELF", 4))
        die("file mapping of /proc/self/exe failed");
    if (munmap(f, page))
        die("munmap of the file mapping failed");

    char *before = sbrk(0);
    char *grown = sbrk((intptr_t)(2 * page));
    if (grown != before || sbrk(0) != before + 2 * page)
        die("sbrk(+2 pages) did not move the break");
    memset(grown, 0x5a, 2 * page);
    if (sbrk(-(intptr_t)(2 * page)) == (void *)-1 || sbrk(0) != before)
        die("sbrk(-2 pages) did not restore the break");

    phase("end");
    phases_print();
    printf("call mmap %lu %zu %d\n", (unsigned long)a, 7 * page,
           (PROT_READ | PROT_WRITE) | (MAP_PRIVATE | MAP_ANONYMOUS) << 8);
    printf("call madvise %lu %zu %d\n", (unsigned long)(a + 2 * page), 3 * page, MADV_DONTNEED);
    printf("call mremap %lu %zu %lu %zu\n", (unsigned long)a, 7 * page, (unsigned long)b,
           13 * page);
    printf("call munmap %lu %zu\n", (unsigned long)b, 13 * page);
    printf("call filemap %lu %zu %d\n", (unsigned long)f, page, PROT_READ | MAP_PRIVATE << 8);
    printf("call munmap %lu %zu\n", (unsigned long)f, page);
    printf("call brk %lu %zu\n", (unsigned long)(before + 2 * page), 2 * page);
    printf("call brk %lu %zu\n", (unsigned long)before, 2 * page);
    return 0;
}
