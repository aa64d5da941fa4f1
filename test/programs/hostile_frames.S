/*
 * Code that an unwinder or a patcher must not trust (x86-64, System V).  hostile_unwind.c
 * drives it.
 *
 * void *wild_cfa_alloc(size_t size, uintptr_t wild): malloc(size) with r12 = wild, under CFI
 * whose CFA rule at the call is an expression that dereferences r12 (CFA = *(r12)): an
 * unwinder that evaluates it reads whatever wild points at.
 */
    .text

    .globl wild_cfa_alloc
    .type wild_cfa_alloc, @function
wild_cfa_alloc:
    .cfi_startproc
    push %r12
    .cfi_def_cfa_offset 16
    .cfi_offset r12, -16
    mov %rsi, %r12
    /* DW_CFA_def_cfa_expression, 3 bytes: DW_OP_breg12 0, DW_OP_deref */
    .cfi_escape 0x0f, 0x03, 0x7c, 0x00, 0x06
    call malloc@PLT
    .cfi_def_cfa rsp, 16
    pop %r12
    .cfi_def_cfa_offset 8
    ret
    .cfi_endproc
    .size wild_cfa_alloc, .-wild_cfa_alloc

    .section .note.GNU-stack, "", @progbits
