/*
 * The rule for a return address in code that no loaded object holds: code a runtime made at
 * run time, which has no CFI (V8's compiled code and its per-function copies of the
 * interpreter's entry, CPython's perf trampolines).  V8 keeps a frame pointer in every frame
 * of its code, so the standard frame's rule applies.  CPython's perf trampolines (3.12 and
 * later, x86-64) are copies of `sub $8,%rsp; call *%rcx; add $8,%rsp; ret`: no frame pointer,
 * the return address 8 bytes above the stack pointer the call returns to, rbp untouched.  The
 * bytes around the return address tell the two apart; they are read with process_vm_readv,
 * which fails instead of faulting where a return address taken from a stack that is not what
 * the walk thinks points at memory that cannot be read.  Computed once per return address
 * (cfi.c keeps the rule).
 */
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "walk/cfi_rule.h"

/* CFA = rbp + 16, the caller's rbp at CFA - 16 */
#define RULE_FRAME (KIND_STEP | RULE_CFA_RBP | 16u << 12 | RULE_RBP_SAVED | 2u << 4)
/* CFA = rsp + 16, rbp as it is */
#define RULE_TRAMPOLINE (KIND_STEP | 16u << 12)

/* The whole trampoline, the return address after its call (6 bytes in). */
static const uint8_t trampoline[] = {0x48, 0x83, 0xec, 0x08, 0xff, 0xd1,
                                     0x48, 0x83, 0xc4, 0x08, 0xc3};
#define CALL_END 6

uint32_t churn_cfi_generated_rule(uintptr_t ip)
{
    uint8_t code[sizeof trampoline];
    uintptr_t ra = ip + 1;
    if (ra < CALL_END)
        return KIND_SLOW;
    struct iovec local = {code, sizeof code}, remote = {(void *)(ra - CALL_END), sizeof code};
    if (syscall(SYS_process_vm_readv, getpid(), &local, 1, &remote, 1, 0) != (long)sizeof code)
        return KIND_SLOW;
    return memcmp(code, trampoline, sizeof code) ? RULE_FRAME : RULE_TRAMPOLINE;
}
