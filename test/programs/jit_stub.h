/*
 * A few bytes of generated code for the test programs that need code in no module (a runtime's
 * JIT code, which a perf map names): an executable anonymous mapping holding a function that
 * sets up a frame pointer and calls malloc through jit_stub_malloc.
 */
#ifndef JIT_STUB_H
#define JIT_STUB_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static void *jit_stub_malloc(size_t size)
{
    return malloc(size);
}

/* The generated function, or NULL when no executable mapping can be had. */
static void *(*jit_stub(void))(size_t)
{
    uint8_t *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED)
        return NULL;
    /* push %rbp; mov %rsp,%rbp; mov $jit_stub_malloc,%rax; call *%rax; pop %rbp; ret */
    static const uint8_t head[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0xb8};
    static const uint8_t tail[] = {0xff, 0xd0, 0x5d, 0xc3};
    uintptr_t target = (uintptr_t)jit_stub_malloc;
    memcpy(code, head, sizeof head);
    memcpy(code + sizeof head, &target, 8);
    memcpy(code + sizeof head + 8, tail, sizeof tail);
    return (void *(*)(size_t))(uintptr_t)code;
}

#endif
