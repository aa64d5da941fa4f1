/*
 * `sigaltstack_alloc BYTES SIGNALS`: a signal handler that allocates, on an alternate signal
 * stack of BYTES (8192 is the classic SIGSTKSZ).  The main thread raises SIGUSR1 SIGNALS
 * times, from a few call depths; each handler keeps one block of HANDLER_SIZE bytes and
 * mallocs and frees a few more.  The stack is painted first, and the deepest byte the handlers
 * reached is printed ("altstack used N of BYTES"), then "kept N".  Without enough stack the
 * program dies with SIGSEGV, natively or under a tracer that needs more than the handler does.
 * With a third argument, `threads`, the signals are raised by THREADS threads in turn, each
 * on its own sigaltstack of BYTES, whose first allocation ever is the one in the handler.
 *
 * `sigaltstack_alloc thread SIGNALS`: the same handler on a thread's own painted stack (a
 * thread has no sigaltstack), so that a walk goes through the signal frame, plus allocations
 * from call sites seen for the first time; prints "thread stack used N", the deepest point
 * its allocations and handlers reached: traced minus native is what the tracer's walks take.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "probe.h"

#define HANDLER_SIZE 777
#define MAX_SIGNALS 100000

#define THREADS 4

static void *kept[MAX_SIGNALS];
static volatile sig_atomic_t nkept;

__attribute__((noinline)) static void handler_alloc(void)
{
    kept[nkept] = malloc(HANDLER_SIZE);
    keep(kept[nkept]);
    nkept++;
    for (int i = 0; i < 3; i++) {
        void *p = malloc(32 + 100 * i);
        keep(p);
        free(p);
    }
}

static void on_usr1(int sig)
{
    (void)sig;
    if (nkept < MAX_SIGNALS)
        handler_alloc();
}

__attribute__((noinline)) static void raise_at(int depth)
{
    if (depth > 0) {
        raise_at(depth - 1);
        keep(&depth);
        return;
    }
    raise(SIGUSR1);
}

#define THREAD_STACK (256u << 10)

__attribute__((noinline)) static void fresh_site(int i)
{
    /* distinct return addresses: each is a call site the walker has not seen yet */
    switch (i % 4) {
    case 0: keep(kept[nkept++] = malloc(HANDLER_SIZE + 1)); break;
    case 1: keep(kept[nkept++] = malloc(HANDLER_SIZE + 2)); break;
    case 2: keep(kept[nkept++] = malloc(HANDLER_SIZE + 3)); break;
    default: keep(kept[nkept++] = malloc(HANDLER_SIZE + 4)); break;
    }
}

static void *thread_body(void *arg)
{
    int signals = *(int *)arg;
    for (int i = 0; i < signals; i++) {
        fresh_site(i);
        raise_at(i % 7);
    }
    return NULL;
}

static int thread_mode(int signals)
{
    uint8_t *stack = mmap(NULL, THREAD_STACK, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (stack == MAP_FAILED)
        die("mmap failed");
    memset(stack, 0xa5, THREAD_STACK);
    pthread_attr_t attr;
    pthread_t th;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, stack, THREAD_STACK);
    if (pthread_create(&th, &attr, thread_body, &signals) || pthread_join(th, NULL))
        die("thread failed");
    size_t used = THREAD_STACK;
    for (size_t i = 0; i < THREAD_STACK && stack[i] == 0xa5; i++)
        used--;
    printf("thread stack used %zu\n", used);
    printf("kept %d\n", (int)nkept);
    return nkept == 2 * signals ? 0 : 1;
}

/* An alternate signal stack of exactly bytes, painted, with nothing mapped right below it
   (an overflow faults); returns it. */
static uint8_t *altstack(size_t bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t mapped = (bytes + page - 1) / page * page;
    uint8_t *guard = mmap(NULL, mapped + page, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (guard == MAP_FAILED)
        die("mmap failed");
    mprotect(guard, page, PROT_NONE);
    uint8_t *stack = guard + page + (mapped - bytes);
    memset(stack, 0xa5, bytes);
    stack_t ss = {.ss_sp = stack, .ss_size = bytes, .ss_flags = 0};
    if (sigaltstack(&ss, NULL))
        die("sigaltstack of %zu bytes refused", bytes);
    return stack;
}

static size_t stack_used(const uint8_t *stack, size_t bytes)
{
    size_t used = bytes;
    for (size_t i = 0; i < bytes && stack[i] == 0xa5; i++)
        used--;
    return used;
}

struct turn {
    size_t bytes, used;
    int signals;
};

static void *raiser(void *arg)
{
    struct turn *t = arg;
    uint8_t *stack = altstack(t->bytes);
    for (int i = 0; i < t->signals; i++)
        raise_at(i % 7);
    t->used = stack_used(stack, t->bytes);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        die("usage: sigaltstack_alloc BYTES|thread SIGNALS");
    int signals = atoi(argv[2]);
    if (signals > MAX_SIGNALS / 2)
        die("at most %d signals", MAX_SIGNALS / 2);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    if (!strcmp(argv[1], "thread"))
        return thread_mode(signals);
    size_t bytes = strtoul(argv[1], NULL, 10), used = 0;
    if (argc > 3 && !strcmp(argv[3], "threads")) {
        for (int i = 0; i < THREADS; i++) {
            struct turn t = {bytes, 0, signals / THREADS + (i < signals % THREADS)};
            pthread_t th;
            if (pthread_create(&th, NULL, raiser, &t) || pthread_join(th, NULL))
                die("thread failed");
            if (t.used > used)
                used = t.used;
        }
    } else {
        uint8_t *stack = altstack(bytes);
        for (int i = 0; i < signals; i++)
            raise_at(i % 7);
        used = stack_used(stack, bytes);
    }
    printf("altstack used %zu of %zu\n", used, bytes);
    printf("kept %d\n", (int)nkept);
    return nkept == signals ? 0 : 1;
}
