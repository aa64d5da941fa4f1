#include "symbols/cxxtype.h"

#include <capstone/capstone.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include <uthash.h>

#define CODE_BYTES 96  /* what is read after the return address */
#define MAX_INSNS 32
#define MAX_CALLS 3    /* calls passed over (not given the new object) before giving up */

typedef struct cached_type {
    uint64_t ip;
    UT_hash_handle hh;
    const char *type; /* NULL: none */
} cached_type;

struct churn_cxx_types {
    churn_symbolizer *sym;
    const churn_stack_defs *stacks;
    csh cs;
    int cs_ok;
    cached_type *cache;
};

churn_cxx_types *churn_cxx_types_new(churn_symbolizer *sym, const churn_stack_defs *stacks)
{
    churn_cxx_types *t = churn_xcalloc(1, sizeof *t);
    t->sym = sym;
    t->stacks = stacks;
    t->cs_ok = cs_open(CS_ARCH_X86, CS_MODE_64, &t->cs) == CS_ERR_OK &&
               cs_option(t->cs, CS_OPT_DETAIL, CS_OPT_ON) == CS_ERR_OK;
    return t;
}

void churn_cxx_types_free(churn_cxx_types *t)
{
    if (!t)
        return;
    cached_type *c, *tmp;
    HASH_ITER(hh, t->cache, c, tmp) {
        HASH_DEL(t->cache, c);
        free((char *)c->type);
        free(c);
    }
    if (t->cs_ok)
        cs_close(&t->cs);
    free(t);
}

/* "ns::Class<T>::Class(args)" or "ns::Class::Class" -> "ns::Class<T>"; NULL when name is
   not a constructor's. */
static char *constructor_class(const char *name)
{
    size_t end = strlen(name);
    if (end && name[end - 1] == ')') { /* drop the parameter list */
        int depth = 0;
        while (end > 0) {
            char c = name[--end];
            depth += c == ')' ? 1 : c == '(' ? -1 : 0;
            if (!depth)
                break;
        }
    }
    /* the last two components at template depth 0 */
    size_t last = 0, prev = 0;
    int depth = 0, seps = 0;
    for (size_t i = 0; i + 1 < end; i++) {
        char c = name[i];
        depth += c == '<' || c == '(' ? 1 : c == '>' || c == ')' ? -1 : 0;
        if (!depth && c == ':' && name[i + 1] == ':') {
            prev = last;
            last = i + 2;
            seps++;
            i++;
        }
    }
    if (!seps)
        return NULL;
    size_t last_len = end - last;
    size_t prev_len = last - 2 - prev;
    const char *lt = memchr(name + prev, '<', prev_len);
    if (lt)
        prev_len = (size_t)(lt - (name + prev));
    if (last_len != prev_len || memcmp(name + last, name + prev, last_len) != 0)
        return NULL;
    size_t len = last - 2;
    char *type = churn_xmalloc(len + 1);
    memcpy(type, name, len);
    type[len] = 0;
    return type;
}

/* Registers that hold the pointer the allocation returned, by capstone register id. */
typedef struct holders {
    uint8_t has[X86_REG_ENDING];
} holders;

static const x86_reg clobbered_by_call[] = {X86_REG_RAX, X86_REG_RCX, X86_REG_RDX,
                                           X86_REG_RSI, X86_REG_RDI, X86_REG_R8,
                                           X86_REG_R9,  X86_REG_R10, X86_REG_R11};

static int is_reg_move(const cs_insn *insn, x86_reg *dst, x86_reg *src)
{
    const cs_x86 *x = &insn->detail->x86;
    if (insn->id != X86_INS_MOV || x->op_count != 2 || x->operands[0].type != X86_OP_REG ||
        x->operands[1].type != X86_OP_REG || x->operands[0].size != 8)
        return 0;
    *dst = x->operands[0].reg;
    *src = x->operands[1].reg;
    return 1;
}

/* Follows the returned pointer (rax) through register moves to the first call that gets it
   as its first argument (rdi); returns that call's target, or 0. */
static uint64_t constructor_call(churn_cxx_types *t, const uint8_t *code, size_t len,
                                 uint64_t ip)
{
    holders h = {{0}};
    h.has[X86_REG_RAX] = 1;
    cs_insn *insn = cs_malloc(t->cs);
    uint64_t target = 0;
    unsigned calls = 0;
    const uint8_t *p = code;
    size_t left = len;
    uint64_t addr = ip;
    for (unsigned n = 0; n < MAX_INSNS && cs_disasm_iter(t->cs, &p, &left, &addr, insn); n++) {
        const cs_x86 *x = &insn->detail->x86;
        if (insn->id == X86_INS_CALL) {
            if (h.has[X86_REG_RDI]) {
                if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM)
                    target = (uint64_t)x->operands[0].imm;
                break;
            }
            if (++calls >= MAX_CALLS)
                break;
            for (size_t i = 0; i < sizeof clobbered_by_call / sizeof clobbered_by_call[0]; i++)
                h.has[clobbered_by_call[i]] = 0;
            continue;
        }
        if (insn->id == X86_INS_JMP || insn->id == X86_INS_RET || insn->id == X86_INS_UD2)
            break;
        x86_reg dst, src;
        if (is_reg_move(insn, &dst, &src)) {
            h.has[dst] = h.has[src];
            continue;
        }
        cs_regs read, written;
        uint8_t nread = 0, nwritten = 0;
        if (cs_regs_access(t->cs, insn, read, &nread, written, &nwritten) == CS_ERR_OK)
            for (uint8_t i = 0; i < nwritten; i++)
                if (written[i] < X86_REG_ENDING)
                    h.has[written[i]] = 0;
    }
    cs_free(insn, 1);
    return target;
}

static const char *type_at(churn_cxx_types *t, uint64_t ip, uint64_t generation)
{
    uint8_t code[CODE_BYTES];
    size_t len = churn_symbolizer_code(t->sym, ip, generation, code, sizeof code);
    if (!len || !t->cs_ok)
        return NULL;
    uint64_t target = constructor_call(t, code, len, ip);
    if (!target)
        return NULL;
    churn_frame f;
    if (!churn_symbolizer_resolve(t->sym, target, 0, generation, &f, 1) || !f.function)
        return NULL;
    return constructor_class(f.function);
}

const char *churn_cxx_type_of(churn_cxx_types *t, uint64_t stack)
{
    size_t depth;
    const uint64_t *ips = churn_stack_defs_get(t->stacks, stack, &depth);
    if (!ips || !depth)
        return NULL;
    cached_type *c;
    HASH_FIND(hh, t->cache, &ips[0], sizeof ips[0], c);
    if (!c) {
        c = churn_xcalloc(1, sizeof *c);
        c->ip = ips[0];
        c->type = type_at(t, ips[0], churn_stack_defs_generation(t->stacks, stack));
        HASH_ADD(hh, t->cache, ip, sizeof c->ip, c);
    }
    return c->type;
}
