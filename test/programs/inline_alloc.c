/*
 * Allocations made by functions inlined into their callers, built -O2: the call of malloc
 * is the last instruction of its line, so the return address the stack records belongs to
 * the caller's next line (the test checks that with addr2line).  A report must show the
 * allocation at the inlined callee's line, then the caller at the line of the inlined call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void use(void *p)
{
    asm volatile("" ::"r"(p) : "memory");
}

static inline __attribute__((always_inline)) void *allocate_something(size_t size)
{
    return malloc(size); /* MARK:callee */
}

static inline __attribute__((always_inline)) char *copy_name(const char *name)
{
    char *p = allocate_something(strlen(name) + 1); /* MARK:copy-site */
    use(p);                                          /* MARK:copy-next */
    return strcpy(p, name);
}

__attribute__((noinline)) void foo(size_t size)
{
    void *p = allocate_something(size); /* MARK:foo-site */
    use(p);                             /* MARK:foo-next */
}

__attribute__((noinline)) char *bar(const char *name)
{
    return copy_name(name); /* MARK:bar-site */
}

int main(void)
{
    for (int i = 0; i < 10; i++)
        foo(1000 + (size_t)i);
    char *name = NULL;
    for (int i = 0; i < 7; i++)
        name = bar("a name of some length");
    printf("%s\n", name);
    return 0;
}
