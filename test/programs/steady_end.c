/*
 * A steady malloc/free loop that ends without an exit libchurn can see:
 * `steady_end MODE MS COUNTFILE`, one malloc and free of STEADY_SIZE bytes every microsecond
 * (by the clock: the loop waits out the rest of each microsecond) in steady_loop, with how
 * many it made and when kept in COUNTFILE (a shared mapping, so it survives a kill -9):
 *   asm   after MS ms, an exit_group system call made inline (status 0): nothing of
 *         libchurn's runs;
 *   kill  on until killed (the test sends SIGKILL after about MS ms).
 * COUNTFILE holds, as three u64: the allocations made, the monotonic ns of the first and of
 * the last.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

#define STEADY_SIZE 4243

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noreturn)) static void inline_exit_group(int status)
{
    for (;;)
        __asm__ volatile("syscall" : : "a"(SYS_exit_group), "D"(status) : "rcx", "r11", "memory");
}

static __attribute__((noinline)) void steady_loop(volatile uint64_t *count, uint64_t until_ns)
{
    uint64_t next = now_ns();
    count[1] = next;
    for (uint64_t n = 1;; n++) {
        void *p = malloc(STEADY_SIZE);
        keep(p);
        free(p);
        uint64_t t = now_ns();
        count[2] = t;
        count[0] = n;
        if (until_ns && t >= until_ns)
            return;
        next += 1000;
        while (now_ns() < next)
            ;
    }
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[1], "asm") && strcmp(argv[1], "kill")))
        die("usage: steady_end asm|kill MS COUNTFILE");
    int fd = open(argv[3], O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, 4096))
        die("cannot create %s", argv[3]);
    volatile uint64_t *count = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (count == MAP_FAILED)
        die("cannot map %s", argv[3]);
    int asm_end = !strcmp(argv[1], "asm");
    uint64_t ms = strtoull(argv[2], NULL, 10);
    steady_loop(count, asm_end ? now_ns() + ms * 1000000u : 0);
    inline_exit_group(0);
}
