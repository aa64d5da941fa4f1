/*
 * `overflow_longjmp ROUNDS [thread]`: a recursion that allocates and frees a block of
 * LEVEL_SIZE bytes at every level until the stack overflows; the SIGSEGV handler, on a
 * sigaltstack, siglongjmps back to where the round began, as interpreters do to report a stack
 * overflow and go on.  The overflow may come inside malloc or free: natively glibc serves
 * those from its thread cache, which takes no lock, so the program goes on.  After each
 * overflow the program allocates AFTER blocks of AFTER_SIZE bytes in after_overflow and keeps
 * them, so a trace must hold ROUNDS * AFTER of them there.  With `thread`, the rounds run on a
 * thread of 256 KiB instead of the main thread.  With `coroutine`, the first round runs in a
 * coroutine (makecontext) on a 256 KiB stack mapped above a guard page, which the jump
 * abandons, and the others on the main thread's stack.  Prints "overflows N", the mallocs
 * and frees of the recursion that returned ("levels A F"), and "kept N".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "probe.h"

#define AFTER 100
#define AFTER_SIZE 333
#define FRAME 200       /* bytes of each level's own frame, touched */
#define LEVEL_SIZE 1000 /* count_alloc.c counts the blocks of this size */
#define MAX_ROUNDS 64

static sigjmp_buf back;
static volatile sig_atomic_t overflows;
static volatile unsigned long level_allocs, level_frees;
static volatile int no_limit = 1 << 30; /* never reached: the stack ends first */
static void *kept[MAX_ROUNDS * AFTER];
static int nkept;

static void on_segv(int sig)
{
    (void)sig;
    overflows++;
    siglongjmp(back, 1);
}

__attribute__((noinline)) static void recurse(int level)
{
    volatile char frame[FRAME];
    frame[0] = (char)level;
    frame[FRAME - 1] = (char)level;
    void *p = malloc(LEVEL_SIZE);
    if (!p)
        die("malloc failed in the recursion");
    level_allocs++;
    keep(p);
    free(p);
    level_frees++;
    if (level < no_limit)
        recurse(level + 1);
    keep((const void *)frame);
}

__attribute__((noinline)) static void after_overflow(void)
{
    for (int i = 0; i < AFTER; i++) {
        kept[nkept] = malloc(AFTER_SIZE);
        if (!kept[nkept])
            die("malloc failed after the overflow");
        nkept++;
    }
}

#define CORO_STACK (256u << 10)
static ucontext_t coro, from;

static void coro_body(void)
{
    recurse(0);
}

/* The recursion in a coroutine on a fresh mapped stack, the page below it a guard. */
static void in_coroutine(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *guard = mmap(NULL, page + CORO_STACK, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (guard == MAP_FAILED || mprotect(guard, page, PROT_NONE) || getcontext(&coro))
        die("cannot make the coroutine's stack");
    coro.uc_stack.ss_sp = guard + page;
    coro.uc_stack.ss_size = CORO_STACK;
    coro.uc_link = &from;
    makecontext(&coro, coro_body, 0);
    swapcontext(&from, &coro);
}

static void run(int rounds, int coroutine)
{
    static uint8_t alt[64 << 10];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0};
    if (sigaltstack(&ss, NULL))
        die("sigaltstack failed");
    for (int r = 0; r < rounds; r++) {
        if (!sigsetjmp(back, 1)) {
            if (coroutine && r == 0)
                in_coroutine();
            else
                recurse(0);
        }
        if (overflows != r + 1)
            die("round %d: the recursion ended without an overflow", r);
        after_overflow();
    }
}

static void *thread_body(void *arg)
{
    run(*(int *)arg, 0);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        die("usage: overflow_longjmp ROUNDS [thread|coroutine]");
    int rounds = atoi(argv[1]);
    if (rounds < 1 || rounds > MAX_ROUNDS)
        die("ROUNDS: 1 to %d", MAX_ROUNDS);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_segv;
    sa.sa_flags = SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, NULL))
        die("sigaction failed");
    if (argc > 2 && !strcmp(argv[2], "thread")) {
        pthread_attr_t attr;
        pthread_t th;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 256u << 10);
        if (pthread_create(&th, &attr, thread_body, &rounds) || pthread_join(th, NULL))
            die("thread failed");
    } else {
        run(rounds, argc > 2 && !strcmp(argv[2], "coroutine"));
    }
    for (int i = 0; i < nkept; i++)
        keep(kept[i]);
    printf("overflows %d\n", (int)overflows);
    printf("levels %lu %lu\n", level_allocs, level_frees);
    printf("kept %d\n", nkept);
    return 0;
}
