#include "symbols/wrapshape.h"

#include <capstone/capstone.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "base/util.h"

#define MAX_CODE 4096 /* of a function's code read from its start */

typedef struct shape_key {
    uint64_t ip, module_id;
} shape_key;

typedef struct cached_shape {
    shape_key key;
    UT_hash_handle hh;
    int returns_block;
} cached_shape;

struct churn_wrapshape {
    churn_symbolizer *sym;
    csh cs;
    int cs_ok;
    cached_shape *cache;
};

churn_wrapshape *churn_wrapshape_new(churn_symbolizer *sym)
{
    churn_wrapshape *w = churn_xcalloc(1, sizeof *w);
    w->sym = sym;
    w->cs_ok = cs_open(CS_ARCH_X86, CS_MODE_64, &w->cs) == CS_ERR_OK &&
               cs_option(w->cs, CS_OPT_DETAIL, CS_OPT_ON) == CS_ERR_OK;
    return w;
}

void churn_wrapshape_free(churn_wrapshape *w)
{
    if (!w)
        return;
    cached_shape *c, *tmp;
    HASH_ITER(hh, w->cache, c, tmp) {
        HASH_DEL(w->cache, c);
        free(c);
    }
    if (w->cs_ok)
        cs_close(&w->cs);
    free(w);
}

/* What a call leaves in the registers: the System V caller-saved ones are not the block's. */
static const x86_reg clobbered_by_call[] = {X86_REG_RAX, X86_REG_RCX, X86_REG_RDX,
                                           X86_REG_RSI, X86_REG_RDI, X86_REG_R8,
                                           X86_REG_R9,  X86_REG_R10, X86_REG_R11};

/* The 64-bit register a general-purpose register's part belongs to (writing eax clears what
   rax held: xor eax, eax returns NULL); other registers as they are. */
static x86_reg full_reg(x86_reg r)
{
    static const x86_reg parts[][5] = {
        {X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL, X86_REG_AH},
        {X86_REG_RBX, X86_REG_EBX, X86_REG_BX, X86_REG_BL, X86_REG_BH},
        {X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL, X86_REG_CH},
        {X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL, X86_REG_DH},
        {X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL, X86_REG_SIL},
        {X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL, X86_REG_DIL},
        {X86_REG_RBP, X86_REG_EBP, X86_REG_BP, X86_REG_BPL, X86_REG_BPL},
        {X86_REG_RSP, X86_REG_ESP, X86_REG_SP, X86_REG_SPL, X86_REG_SPL},
        {X86_REG_R8, X86_REG_R8D, X86_REG_R8W, X86_REG_R8B, X86_REG_R8B},
        {X86_REG_R9, X86_REG_R9D, X86_REG_R9W, X86_REG_R9B, X86_REG_R9B},
        {X86_REG_R10, X86_REG_R10D, X86_REG_R10W, X86_REG_R10B, X86_REG_R10B},
        {X86_REG_R11, X86_REG_R11D, X86_REG_R11W, X86_REG_R11B, X86_REG_R11B},
        {X86_REG_R12, X86_REG_R12D, X86_REG_R12W, X86_REG_R12B, X86_REG_R12B},
        {X86_REG_R13, X86_REG_R13D, X86_REG_R13W, X86_REG_R13B, X86_REG_R13B},
        {X86_REG_R14, X86_REG_R14D, X86_REG_R14W, X86_REG_R14B, X86_REG_R14B},
        {X86_REG_R15, X86_REG_R15D, X86_REG_R15W, X86_REG_R15B, X86_REG_R15B},
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        for (size_t k = 0; k < 5; k++)
            if (parts[i][k] == r)
                return parts[i][0];
    return r;
}

/* Whether the instruction writes memory with a register that holds the block. */
static int stores_block(const cs_x86 *x, const uint8_t *holds)
{
    int writes_memory = 0, reads_block = 0;
    for (uint8_t i = 0; i < x->op_count; i++) {
        const cs_x86_op *op = &x->operands[i];
        if (op->type == X86_OP_MEM && (op->access & CS_AC_WRITE))
            writes_memory = 1;
        else if (op->type == X86_OP_REG && (op->access & CS_AC_READ) &&
                 full_reg(op->reg) < X86_REG_ENDING && holds[full_reg(op->reg)])
            reads_block = 1;
    }
    return writes_memory && reads_block;
}

static int walk(churn_wrapshape *w, const uint8_t *code, size_t len, uint64_t start, uint64_t ip)
{
    uint8_t holds[X86_REG_ENDING] = {0};
    holds[X86_REG_RAX] = 1;
    cs_insn *insn = cs_malloc(w->cs);
    int result = 0;
    uint64_t addr = ip;
    for (unsigned n = 0; n < CHURN_WRAPSHAPE_MAX_INSNS; n++) {
        if (addr < start || addr >= start + len)
            break;
        const uint8_t *p = code + (addr - start);
        size_t left = len - (size_t)(addr - start);
        if (!cs_disasm_iter(w->cs, &p, &left, &addr, insn))
            break;
        const cs_x86 *x = &insn->detail->x86;
        if (insn->id == X86_INS_RET) {
            result = holds[X86_REG_RAX];
            break;
        }
        if (insn->id == X86_INS_JMP) {
            /* inside the function, on; anywhere else (a tail call, a table) the block's
               fate is not this function's */
            if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
                break;
            addr = (uint64_t)x->operands[0].imm;
            continue;
        }
        if (insn->id == X86_INS_CALL) {
            for (size_t i = 0; i < sizeof clobbered_by_call / sizeof clobbered_by_call[0]; i++)
                holds[clobbered_by_call[i]] = 0;
            continue;
        }
        if (cs_insn_group(w->cs, insn, CS_GRP_JUMP))
            continue; /* conditional: the fall-through */
        if (insn->id == X86_INS_UD2 || insn->id == X86_INS_HLT || insn->id == X86_INS_INT3)
            break;
        if (insn->id == X86_INS_MOV && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
            x->operands[1].type == X86_OP_REG && x->operands[0].size == 8) {
            holds[x->operands[0].reg] = holds[x->operands[1].reg];
            continue;
        }
        if (stores_block(x, holds))
            break; /* it keeps a copy: the block is this function's, not its caller's */
        cs_regs read, written;
        uint8_t nread = 0, nwritten = 0;
        if (cs_regs_access(w->cs, insn, read, &nread, written, &nwritten) != CS_ERR_OK)
            break;
        for (uint8_t i = 0; i < nwritten; i++)
            if (full_reg(written[i]) < X86_REG_ENDING)
                holds[full_reg(written[i])] = 0;
    }
    cs_free(insn, 1);
    return result;
}

int churn_wrapshape_returns_block(churn_wrapshape *w, uint64_t ip, uint64_t generation,
                                  uint64_t module_id)
{
    shape_key key = {ip, module_id};
    cached_shape *c;
    HASH_FIND(hh, w->cache, &key, sizeof key, c);
    if (c)
        return c->returns_block;
    c = churn_xcalloc(1, sizeof *c);
    c->key = key;
    if (w->cs_ok && ip) {
        uint8_t code[MAX_CODE];
        uint64_t start = 0;
        /* ip - 1: the call before the return address, which is in the function */
        size_t len = churn_symbolizer_function_code(w->sym, ip - 1, generation, &start, code,
                                                    sizeof code);
        c->returns_block = len && walk(w, code, len, start, ip);
    }
    HASH_ADD(hh, w->cache, key, sizeof c->key, c);
    return c->returns_block;
}
