/*
 * Code that an unwinder or a patcher must not trust (x86-64, System V).  hostile_unwind.c
 * drives it.
 *
 * void *wild_cfa_alloc(size_t size, uintptr_t wild): malloc(size) with r12 = wild, under CFI
 * whose CFA rule at the call is an expression that dereferences r12 (CFA = *(r12)): an
 * unwinder that evaluates it reads whatever wild points at.
 *
 * uint64_t backedge_sum(uint64_t n): n + (n - 1) + ... + 1, by a loop whose header is the
 * function's second instruction and whose back-edge, a jnz rel32, is more than 512 bytes
 * further: patching the entry would leave that jump landing inside the jmp written over it.
 *
 * uint64_t far_loop_sum(uint64_t n): the same, with the loop header after the first 5 bytes,
 * so its entry can be patched.
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

    .globl backedge_sum
    .type backedge_sum, @function
backedge_sum:
    .cfi_startproc
    xor %eax, %eax
1:
    add %rdi, %rax
    .fill 600, 1, 0x90
    dec %rdi
    .byte 0x0f, 0x85            /* jnz rel32 to 1b */
    .long 1b - (. + 4)
    ret
    .cfi_endproc
    .size backedge_sum, .-backedge_sum

    .globl far_loop_sum
    .type far_loop_sum, @function
far_loop_sum:
    .cfi_startproc
    xor %eax, %eax
    nop
    nop
    nop
    nop
1:
    add %rdi, %rax
    .fill 600, 1, 0x90
    dec %rdi
    .byte 0x0f, 0x85
    .long 1b - (. + 4)
    ret
    .cfi_endproc
    .size far_loop_sum, .-far_loop_sum

    .section .note.GNU-stack, "", @progbits
