/*
 * `coro_stacks malloc|mmap|raw|fresh BYTES ROUNDS`: a coroutine (makecontext/swapcontext) on a stack
 * of BYTES that the program made itself, as coroutine libraries do: taken from malloc, or
 * mapped with a PROT_NONE guard page below it.  Each round the coroutine allocates from a few
 * call depths (malloc, calloc, realloc, free), keeps one block of KEPT_SIZE bytes and switches
 * back to main.  `raw` runs the same rounds on a malloc'd stack entered by a hand-written
 * switch of the stack pointer, as some coroutine libraries do, which no libc call announces.
 * `fresh` runs one round of FRESH_SITES mallocs only, each from a call site not seen before,
 * after the allocator has served a first block: the stack the coroutine takes then is malloc's
 * fast path natively, and a tracer's walk from cold caches under it.
 *
 * The stack is painted first, and so is a floor below it (FLOOR bytes of the malloc'd block
 * under the stack; for the mapped one, the rest of the page down to the guard): the program
 * fails when anything wrote to the floor, which natively nothing does, and prints how deep
 * the coroutine's stack was used ("coroutine stack used N of BYTES") and "kept N".  A tracer
 * that takes more stack than the coroutine has writes to the floor (malloc) or faults on the
 * guard page (mmap).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "probe.h"

#define FLOOR 4096u
#define KEPT_SIZE 555
#define MAX_ROUNDS 100000
#define PAINT 0xa5

static ucontext_t main_ctx, coro_ctx;
static void *kept[MAX_ROUNDS];
static int rounds, done;

__attribute__((noinline)) static void *coro_alloc(int depth, size_t size)
{
    if (depth > 0) {
        void *p = coro_alloc(depth - 1, size);
        keep(&depth);
        return p;
    }
    return malloc(size);
}

__attribute__((noinline)) static void coro_round(int i)
{
    kept[i] = coro_alloc(i % 3, KEPT_SIZE);
    if (!kept[i])
        die("malloc failed in the coroutine");
    void *c = calloc(4, 16 + (size_t)(i % 5));
    void *r = realloc(c, 200);
    if (!r)
        die("realloc failed in the coroutine");
    keep(r);
    free(r);
}

static void coro_body(void)
{
    for (int i = 0; i < rounds; i++) {
        coro_round(i);
        swapcontext(&coro_ctx, &main_ctx);
    }
    done = 1;
}

/* Calls fn with the stack pointer at top, and comes back to the stack it was on. */
__attribute__((noinline)) static void run_on(void *top, void (*fn)(void))
{
    __asm__ volatile("mov %%rsp, %%rbx\n\t"
                     "mov %0, %%rsp\n\t"
                     "call *%1\n\t"
                     "mov %%rbx, %%rsp"
                     :
                     : "r"(top), "r"(fn)
                     : "rbx", "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11",
                       "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
                       "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "memory",
                       "cc");
}

#define FRESH_SITES 4
__attribute__((noinline)) static void fresh_site(int i)
{
    switch (i) { /* a return address of its own each */
    case 0:
        kept[i] = malloc(KEPT_SIZE);
        break;
    case 1:
        kept[i] = malloc(KEPT_SIZE);
        break;
    case 2:
        kept[i] = malloc(KEPT_SIZE);
        break;
    default:
        kept[i] = malloc(KEPT_SIZE);
        break;
    }
    keep(kept[i]);
}

static void fresh_body(void)
{
    for (int i = 0; i < FRESH_SITES; i++)
        fresh_site(i);
    done = 1;
}

static void raw_body(void)
{
    for (int i = 0; i < rounds; i++)
        coro_round(i);
    done = 1;
}

/* The stack and its floor, painted; returns the floor's lowest byte. */
__attribute__((noinline)) static uint8_t *make_stack(const char *kind, size_t bytes,
                                                     uint8_t **stack, size_t *floor)
{
    uint8_t *lo;
    if (!strcmp(kind, "malloc") || !strcmp(kind, "raw") || !strcmp(kind, "fresh")) {
        lo = malloc(FLOOR + bytes);
        if (!lo)
            die("malloc of the stack failed");
        *floor = FLOOR;
    } else if (!strcmp(kind, "mmap")) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        size_t mapped = (bytes + page - 1) / page * page;
        uint8_t *guard = mmap(NULL, page + mapped, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (guard == MAP_FAILED || mprotect(guard, page, PROT_NONE))
            die("mmap of the stack failed");
        lo = guard + page;
        *floor = mapped - bytes;
    } else {
        die("coro_stacks: malloc, mmap, raw or fresh, not %s", kind);
        return NULL;
    }
    *stack = lo + *floor;
    memset(lo, PAINT, *floor + bytes);
    return lo;
}

int main(int argc, char **argv)
{
    if (argc != 4)
        die("usage: coro_stacks malloc|mmap|raw|fresh BYTES ROUNDS");
    static size_t bytes, floor;
    static uint8_t *stack, *lo;
    bytes = strtoul(argv[2], NULL, 10);
    rounds = atoi(argv[3]);
    if (rounds < 1 || rounds > MAX_ROUNDS)
        die("ROUNDS: 1 to %d", MAX_ROUNDS);
    lo = make_stack(argv[1], bytes, &stack, &floor);
    if (!strcmp(argv[1], "raw")) {
        run_on(stack + (bytes & ~(size_t)15), raw_body);
        goto check;
    }
    if (getcontext(&coro_ctx))
        die("getcontext failed");
    coro_ctx.uc_stack.ss_sp = stack;
    coro_ctx.uc_stack.ss_size = bytes;
    coro_ctx.uc_link = &main_ctx;
    if (!strcmp(argv[1], "fresh"))
        rounds = FRESH_SITES;
    makecontext(&coro_ctx, strcmp(argv[1], "fresh") ? coro_body : fresh_body, 0);
    for (int i = 0; i < rounds && !done; i++)
        if (swapcontext(&main_ctx, &coro_ctx))
            die("swapcontext failed");
    if (!done && swapcontext(&main_ctx, &coro_ctx))
        die("swapcontext failed");
check:
    if (!done)
        die("the coroutine did not finish");
    for (size_t i = 0; i < floor; i++)
        if (lo[i] != PAINT)
            die("%zu bytes below the coroutine's %zu-byte stack were written", floor - i,
                bytes);
    size_t used = bytes;
    for (size_t i = 0; i < bytes && stack[i] == PAINT; i++)
        used--;
    for (int i = 0; i < rounds; i++)
        keep(kept[i]);
    printf("coroutine stack used %zu of %zu\n", used, bytes);
    printf("kept %d\n", rounds);
    return 0;
}
