/*
 * The inline patching engine (x86-64).  A patch is three steps:
 *
 *   1. decode (capstone) the whole instructions at the entry that cover a 5-byte jmp, after
 *      an endbr64 which stays in place so the entry is still a valid indirect-branch target;
 *      refuse whatever cannot run elsewhere: branches into those bytes (from anywhere in the
 *      function, which its CFI bounds), loop/jrcxz, a function shorter than the jmp;
 *   2. write them, relocated, into a trampoline in a region mapped within 1 GiB of the
 *      function (so every rel32 of the function's code still reaches), followed by a jmp back
 *      to the first instruction not moved;
 *   3. overwrite the entry with a jmp rel32 to the trampoline's stub (a relay to the
 *      replacement, or the hook's register-saving call).
 *
 * Nothing is written until every step has been checked, so a refusal leaves fn untouched.
 * Memory: capstone's allocations go to libchurn's arena, trampolines and page protections
 * go through raw system calls; the traced heap is never used.
 */
#include <capstone/capstone.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ways/patch.h"
#include "shim.h"

#define JMP_BYTES 5u           /* jmp rel32: what the entry becomes */
#define MAX_MOVED 8u           /* 5 bytes hold at most 5 instructions */
#define MAX_RELOCATED 16u      /* longest form of one relocated instruction */
#define REGION_BYTES (64u << 10)
#define MAX_REGIONS 64u
#define NEAR ((uintptr_t)1 << 30)
#define NO_CFI_SCAN                                                                            \
    (64u << 10) /* how far branches into the moved bytes are sought where no
                                   CFI gives the function's extent */

/* ---- the decoder, on libchurn's own memory ---- */

static void *own_calloc(size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total))
        return NULL;
    return churn_mem_alloc(total); /* fresh pages: already zero */
}

static csh decoder;
static int decoder_state; /* 0 not opened, 1 ready, -1 failed */

/* AT&T syntax although nothing is printed: capstone's Intel printer sorts a table with qsort
   on first use, and glibc's qsort takes its buffer from malloc. */
static int open_decoder(const char **why)
{
    if (!decoder_state) {
        cs_opt_mem mem = {churn_mem_alloc, own_calloc, churn_mem_realloc, churn_mem_free,
                          vsnprintf};
        decoder_state = cs_option(0, CS_OPT_MEM, (size_t)&mem) == CS_ERR_OK &&
                                cs_open(CS_ARCH_X86, CS_MODE_64, &decoder) == CS_ERR_OK &&
                                cs_option(decoder, CS_OPT_DETAIL, CS_OPT_ON) == CS_ERR_OK &&
                                cs_option(decoder, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT) == CS_ERR_OK
                            ? 1
                            : -1;
    }
    if (decoder_state < 0)
        *why = "the x86-64 decoder (capstone) cannot be opened";
    return decoder_state > 0 ? 0 : -1;
}

/* ---- the bounds and protection of the code being patched: churn_os_vma (os.c) ---- */

static int protect(uintptr_t lo, uintptr_t hi, int prot)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    lo &= ~(page - 1);
    hi = (hi + page - 1) & ~(page - 1);
    return syscall(SYS_mprotect, lo, hi - lo, prot) ? -1 : 0;
}

/* ---- trampoline regions near the patched code ---- */

static struct region {
    uintptr_t base;
    size_t used;
} regions[MAX_REGIONS];
static size_t nregions;

static uintptr_t distance(uintptr_t a, uintptr_t b) { return a > b ? a - b : b - a; }

static uintptr_t try_map(uintptr_t hint, uintptr_t near)
{
    long p = syscall(SYS_mmap, hint, REGION_BYTES, PROT_READ | PROT_EXEC,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == -1)
        return 0;
    /* A kernel without MAP_FIXED_NOREPLACE takes the hint as a hint. */
    if (distance((uintptr_t)p, near) > NEAR - REGION_BYTES) {
        syscall(SYS_munmap, p, REGION_BYTES);
        return 0;
    }
    return (uintptr_t)p;
}

/* The free range between two mappings of /proc/self/maps nearest to `near`, tried where
   the fixed hints below are all taken (each copy of libchurn that churn attach loads maps
   its own trampolines near libc).  Read afresh: the regions just mapped are in it. */
typedef struct gap_search {
    uintptr_t near, best;
} gap_search;

static int nearest_gap(const churn_vma *v, void *ctx)
{
    gap_search *g = ctx;
    uintptr_t prev_hi = v->before > (1u << 20) ? v->before : 1u << 20;
    /* the gap [prev_hi, lo): its address nearest to near, aligned */
    if (v->lo >= prev_hi + REGION_BYTES) {
        uintptr_t near = g->near;
        uintptr_t at = near < prev_hi                ? prev_hi
                       : near + REGION_BYTES > v->lo ? v->lo - REGION_BYTES
                                                     : near;
        at = (at + REGION_BYTES - 1) & ~(uintptr_t)(REGION_BYTES - 1);
        if (at >= prev_hi && at + REGION_BYTES <= v->lo &&
            distance(at, near) <= NEAR - REGION_BYTES &&
            (!g->best || distance(at, near) < distance(g->best, near)))
            g->best = at;
    }
    return 0;
}

static uintptr_t map_in_gap(uintptr_t near)
{
    gap_search g = {near, 0};
    if (churn_os_each_vma(nearest_gap, &g))
        return 0;
    return g.best ? try_map(g.best, near) : 0;
}

/* Below the code first (the executable's brk heap grows upwards from above its data), from
   near to far; then above it, from far to near; then any free range in reach. */
static uintptr_t map_near(uintptr_t near)
{
    const uintptr_t low = 1u << 20, align = REGION_BYTES;
    for (uintptr_t d = 1u << 20; d < NEAR - REGION_BYTES; d <<= 1)
        if (near > d + low) {
            uintptr_t got = try_map((near - d) & ~(align - 1), near);
            if (got)
                return got;
        }
    for (uintptr_t d = NEAR - 2 * REGION_BYTES; d >= (1u << 20); d >>= 1) {
        uintptr_t got = try_map((near + d) & ~(align - 1), near);
        if (got)
            return got;
    }
    return map_in_gap(near);
}

static uintptr_t reserve(uintptr_t near, size_t bytes)
{
    bytes = (bytes + 15) & ~(size_t)15;
    for (size_t i = 0; i < nregions; i++)
        if (distance(regions[i].base, near) <= NEAR - REGION_BYTES &&
            regions[i].used + bytes <= REGION_BYTES) {
            uintptr_t at = regions[i].base + regions[i].used;
            regions[i].used += bytes;
            return at;
        }
    if (nregions == MAX_REGIONS)
        return 0;
    uintptr_t base = map_near(near);
    if (!base)
        return 0;
    regions[nregions].base = base;
    regions[nregions].used = bytes;
    nregions++;
    return base;
}

static int in_regions(uintptr_t addr)
{
    for (size_t i = 0; i < nregions; i++)
        if (addr >= regions[i].base && addr < regions[i].base + REGION_BYTES)
            return 1;
    return 0;
}

/* ---- decoding the entry ---- */

enum move_kind { MOVE_COPY, MOVE_RIPREL, MOVE_JMP, MOVE_CALL, MOVE_JCC };

typedef struct moved {
    uintptr_t addr;
    uint8_t size;
    uint8_t kind;
    uint8_t disp_offset; /* MOVE_RIPREL */
    uint8_t cc;          /* MOVE_JCC: condition code, the low nibble of its opcode */
    uintptr_t target;    /* branch target, or the RIP-relative operand's address */
    uint8_t bytes[16];
} moved;

typedef struct plan {
    uintptr_t fn, start;  /* start: fn, or fn + 4 after an endbr64 */
    size_t covered;       /* bytes from start moved into the trampoline */
    size_t nmoved;
    moved m[MAX_MOVED];
} plan;

static int relative_branch_target(const cs_insn *in, uintptr_t *target)
{
    const cs_x86 *x = &in->detail->x86;
    if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
        return 0;
    if (!cs_insn_group(decoder, in, CS_GRP_JUMP) && !cs_insn_group(decoder, in, CS_GRP_CALL))
        return 0;
    *target = (uintptr_t)x->operands[0].imm;
    return 1;
}

/* The condition code of a jcc, from its opcode after any branch-hint or bnd prefix. */
static int jcc_condition(const uint8_t *b, size_t size)
{
    size_t i = 0;
    while (i < size && (b[i] == 0x2e || b[i] == 0x3e || b[i] == 0xf2))
        i++;
    if (i < size && b[i] >= 0x70 && b[i] <= 0x7f)
        return b[i] & 0xf;
    if (i + 1 < size && b[i] == 0x0f && b[i + 1] >= 0x80 && b[i + 1] <= 0x8f)
        return b[i + 1] & 0xf;
    return -1;
}

static int classify(const cs_insn *in, moved *m, const char **why)
{
    m->addr = (uintptr_t)in->address;
    m->size = (uint8_t)in->size;
    memcpy(m->bytes, in->bytes, in->size);
    m->kind = MOVE_COPY;
    switch (in->id) {
    case X86_INS_JRCXZ: case X86_INS_JECXZ: case X86_INS_JCXZ: case X86_INS_LOOP:
    case X86_INS_LOOPE: case X86_INS_LOOPNE: case X86_INS_XBEGIN:
        *why = "a loop, jrcxz or xbegin in the first bytes (no rel32 form)";
        return -1;
    }
    uintptr_t target;
    if (relative_branch_target(in, &target)) {
        m->target = target;
        if (in->id == X86_INS_JMP) {
            m->kind = MOVE_JMP;
        } else if (in->id == X86_INS_CALL) {
            m->kind = MOVE_CALL;
        } else {
            int cc = jcc_condition(in->bytes, in->size);
            if (cc < 0) {
                *why = "a relative branch of an unknown form in the first bytes";
                return -1;
            }
            m->kind = MOVE_JCC;
            m->cc = (uint8_t)cc;
        }
        return 0;
    }
    const cs_x86 *x = &in->detail->x86;
    for (unsigned i = 0; i < x->op_count; i++) {
        if (x->operands[i].type != X86_OP_MEM || x->operands[i].mem.base != X86_REG_RIP)
            continue;
        if (x->encoding.disp_size != 4 || !x->encoding.disp_offset) {
            *why = "a RIP-relative operand without a 32-bit displacement";
            return -1;
        }
        m->kind = MOVE_RIPREL;
        m->disp_offset = x->encoding.disp_offset;
        m->target = m->addr + in->size + (uintptr_t)(int64_t)x->operands[i].mem.disp;
        return 0;
    }
    return 0;
}

static int ends_flow(const cs_insn *in)
{
    return in->id == X86_INS_JMP || in->id == X86_INS_UD2 || in->id == X86_INS_INT3 ||
           in->id == X86_INS_HLT || cs_insn_group(decoder, in, CS_GRP_RET);
}

/* The branches of [from, to) that land on one of the moved instructions after the first,
   where only the jmp's tail would be left.  A linear sweep that steps a byte over what it
   cannot decode; a target counts only when it is one of those instructions' boundaries, so
   bytes that are not code do not cause false refusals. */
static int branches_into(const plan *p, uintptr_t from, uintptr_t to, cs_insn *in)
{
    const uint8_t *code = (const uint8_t *)from;
    size_t left = to > from ? to - from : 0;
    uint64_t addr = from;
    while (left) {
        if (!cs_disasm_iter(decoder, &code, &left, &addr, in)) {
            code++, addr++, left--;
            continue;
        }
        uintptr_t target;
        if (!relative_branch_target(in, &target))
            continue;
        for (size_t i = 1; i < p->nmoved; i++)
            if (target == p->m[i].addr)
                return 1;
    }
    return 0;
}

/* Whether a branch of the function lands inside the moved bytes.  Branches to the entry itself
   are calls or tail calls, from this function or others, and stay valid.  The whole function
   is swept, as its CFI describes it: a loop whose head is among the first bytes jumps back
   there from anywhere in it.  Code that no CFI describes (hand-written assembly without it),
   the next NO_CFI_SCAN bytes. */
static int branched_into(const plan *p, const churn_vma *map, cs_insn *in)
{
    uintptr_t lo, hi, moved_end = p->start + p->covered;
    if (churn_cfi_function_extent(p->fn, &lo, &hi) || lo > p->fn || hi < moved_end) {
        lo = moved_end;
        hi = map->hi - lo < NO_CFI_SCAN ? map->hi : lo + NO_CFI_SCAN;
    }
    if (lo < map->lo)
        lo = map->lo;
    if (hi > map->hi)
        hi = map->hi;
    return branches_into(p, lo, p->start, in) || branches_into(p, moved_end, hi, in);
}

int churn_patch_done(const void *fn)
{
    uintptr_t at = (uintptr_t)fn;
    if (!memcmp(fn, "\xf3\x0f\x1e\xfa", 4))
        at += 4;
    int32_t rel;
    memcpy(&rel, (const void *)(at + 1), 4);
    return *(const uint8_t *)at == 0xe9 && in_regions(at + JMP_BYTES + (uintptr_t)(intptr_t)rel);
}

static int analyze(uintptr_t fn, plan *p, const char **why)
{
    churn_vma map;
    if (churn_os_vma(fn, &map) || !(map.prot & PROT_EXEC)) {
        *why = "the address is not in executable memory";
        return -1;
    }
    memset(p, 0, sizeof *p);
    p->fn = p->start = fn;
    if (map.hi - fn >= 4 && !memcmp((const void *)fn, "\xf3\x0f\x1e\xfa", 4))
        p->start = fn + 4;
    if (map.hi - p->start < JMP_BYTES) {
        *why = "the function is shorter than the jmp that would replace its entry";
        return -1;
    }
    if (churn_patch_done((void *)fn)) {
        *why = "the function is already patched";
        return -1;
    }
    cs_insn *in = cs_malloc(decoder);
    if (!in) {
        *why = "out of memory for the decoder";
        return -1;
    }
    const uint8_t *code = (const uint8_t *)p->start;
    size_t left = map.hi - p->start < 64 ? map.hi - p->start : 64;
    uint64_t addr = p->start;
    int rc = 0;
    while (!rc && p->covered < JMP_BYTES) {
        if (!cs_disasm_iter(decoder, &code, &left, &addr, in)) {
            *why = "an instruction the decoder does not know in the first bytes";
            rc = -1;
            break;
        }
        rc = classify(in, &p->m[p->nmoved], why);
        p->nmoved++;
        p->covered += in->size;
        if (!rc && p->covered < JMP_BYTES && ends_flow(in)) {
            /* The function ends here: the jmp may only spill into int3 padding. */
            for (uintptr_t b = p->start + p->covered; b < p->start + JMP_BYTES; b++)
                if (*(const uint8_t *)b != 0xcc) {
                    *why = "the function is shorter than the jmp that would replace its entry";
                    rc = -1;
                    break;
                }
            if (!rc)
                p->covered = JMP_BYTES;
        }
    }
    for (size_t i = 0; !rc && i < p->nmoved; i++)
        if (p->m[i].kind != MOVE_COPY && p->m[i].kind != MOVE_RIPREL &&
            p->m[i].target >= p->start && p->m[i].target < p->start + p->covered) {
            *why = "a branch in the first bytes targets the bytes being moved";
            rc = -1;
        }
    if (!rc && branched_into(p, &map, in)) {
        *why = "a later branch of the function lands inside the bytes being moved";
        rc = -1;
    }
    cs_free(in, 1);
    return rc;
}

/* ---- writing relocated code ---- */

static int fits32(intptr_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

static void put32(uint8_t *at, int32_t v) { memcpy(at, &v, 4); }
static void put64(uint8_t *at, uint64_t v) { memcpy(at, &v, 8); }

/* jmp to an absolute address from `at`: rel32 when it reaches, else jmp [rip+0] and the
   address inline.  Returns the bytes written (5 or 14). */
static size_t put_jmp(uint8_t *out, uintptr_t at, uintptr_t to)
{
    intptr_t rel = (intptr_t)(to - (at + 5));
    if (fits32(rel)) {
        out[0] = 0xe9;
        put32(out + 1, (int32_t)rel);
        return 5;
    }
    static const uint8_t abs_jmp[6] = {0xff, 0x25, 0, 0, 0, 0};
    memcpy(out, abs_jmp, 6);
    put64(out + 6, to);
    return 14;
}

/* Writes the moved instructions for address `at` into out and the jmp back after them;
   returns the length, or 0 when a RIP-relative operand no longer reaches its target. */
static size_t relocate(const plan *p, uint8_t *out, uintptr_t at, const char **why)
{
    size_t len = 0;
    for (size_t i = 0; i < p->nmoved; i++) {
        const moved *m = &p->m[i];
        uint8_t *o = out + len;
        uintptr_t here = at + len;
        switch (m->kind) {
        case MOVE_COPY:
            memcpy(o, m->bytes, m->size);
            len += m->size;
            break;
        case MOVE_RIPREL: {
            intptr_t disp = (intptr_t)(m->target - (here + m->size));
            if (!fits32(disp)) {
                *why = "a RIP-relative operand would be out of reach of the trampoline";
                return 0;
            }
            memcpy(o, m->bytes, m->size);
            put32(o + m->disp_offset, (int32_t)disp);
            len += m->size;
            break;
        }
        case MOVE_JMP:
            len += put_jmp(o, here, m->target);
            break;
        case MOVE_CALL: {
            intptr_t rel = (intptr_t)(m->target - (here + 5));
            if (fits32(rel)) {
                o[0] = 0xe8;
                put32(o + 1, (int32_t)rel);
                len += 5;
            } else {
                /* call [rip+2]; jmp over the address; the address */
                static const uint8_t abs_call[8] = {0xff, 0x15, 2, 0, 0, 0, 0xeb, 8};
                memcpy(o, abs_call, 8);
                put64(o + 8, m->target);
                len += 16;
            }
            break;
        }
        case MOVE_JCC: {
            intptr_t rel = (intptr_t)(m->target - (here + 6));
            if (fits32(rel)) {
                o[0] = 0x0f;
                o[1] = (uint8_t)(0x80 | m->cc);
                put32(o + 2, (int32_t)rel);
                len += 6;
            } else {
                /* the opposite condition skips an absolute jmp to the target */
                o[0] = (uint8_t)(0x70 | (m->cc ^ 1));
                o[1] = 14;
                len += 2 + put_jmp(o + 2, here + 2, m->target);
            }
            break;
        }
        }
    }
    return len + put_jmp(out + len, at + len, p->start + p->covered);
}

static size_t relocated_bound(const plan *p)
{
    return p->nmoved * MAX_RELOCATED + 14;
}

/* Copies code into a trampoline region (mapped read+exec: writable only meanwhile, never
   without exec, since other trampolines in it may be running). */
static int write_code(uintptr_t at, const void *code, size_t len)
{
    if (protect(at, at + len, PROT_READ | PROT_WRITE | PROT_EXEC))
        return -1;
    memcpy((void *)at, code, len);
    return protect(at, at + len, PROT_READ | PROT_EXEC);
}

/* The entry becomes jmp rel32 to `to`; what is left of the moved bytes becomes int3, so a
   stray jump into them stops at once. */
static churn_patch_site *deferred;
static size_t deferred_cap, *deferred_n;

void churn_patch_defer(churn_patch_site *sites, size_t cap, size_t *n)
{
    deferred = sites;
    deferred_cap = cap;
    deferred_n = n;
}

/* A deferred entry is handed over whole; the tracer that writes it knows no thread is in
   the moved bytes, but not whether a stack holds a return address into them: a call there
   is refused, unless it is the last instruction moved (libstdc++'s nothrow operator new
   calls operator new second), whose return address is the first byte left in place. */
static int defer_entry(const plan *p, const uint8_t *site, const char **why)
{
    for (size_t i = 0; i + 1 < p->nmoved; i++)
        if (p->m[i].kind == MOVE_CALL) {
            *why = "a call in the first bytes (a thread may be about to return into them)";
            return -1;
        }
    if (*deferred_n == deferred_cap) {
        *why = "too many functions to patch at once";
        return -1;
    }
    churn_patch_site *d = &deferred[(*deferred_n)++];
    d->addr = p->start;
    d->len = p->covered;
    memcpy(d->was, (const void *)p->start, p->covered);
    memcpy(d->now, site, p->covered);
    return 0;
}

static int write_entry(const plan *p, uintptr_t to, const char **why)
{
    uint8_t site[MAX_MOVED * 16];
    site[0] = 0xe9;
    put32(site + 1, (int32_t)(to - (p->start + JMP_BYTES)));
    memset(site + JMP_BYTES, 0xcc, p->covered - JMP_BYTES);
    if (deferred)
        return defer_entry(p, site, why);
    churn_vma map;
    if (churn_os_vma(p->start, &map) || p->start + p->covered > map.hi) {
        *why = "the entry's mapping changed while patching";
        return -1;
    }
    if (protect(p->start, p->start + p->covered, map.prot | PROT_WRITE)) {
        *why = "the code cannot be made writable (mprotect refused)";
        return -1;
    }
    memcpy((void *)p->start, site, p->covered);
    protect(p->start, p->start + p->covered, map.prot);
    return 0;
}

/* The trampoline first, then the jump to it at the entry: the function is never sent to code
   that is not there yet. */
static int install(const plan *p, uintptr_t at, const uint8_t *code, size_t len,
                   const char **why)
{
    if (write_code(at, code, len)) {
        *why = "the trampoline cannot be written (mprotect refused)";
        return -1;
    }
    return write_entry(p, at, why);
}

/* ---- deferred entries planned again ----

   A copy of libchurn that churn attach finds detached is attached again (attach.c), and plans
   the same functions with the same replacements: the trampoline made the first time still
   runs the function's original bytes as long as its entry holds them again (the tracer put
   them back), so its site is handed out again instead of a new trampoline, which would make
   the regions grow by every attach until MAX_REGIONS refused the next. */
#define MAX_KEPT 128u
static struct kept {
    uintptr_t fn, target;
    void *original;
    churn_patch_site site;
} kept[MAX_KEPT];
static size_t nkept;

static int kept_site(void *fn, uintptr_t target, void **original)
{
    if (!deferred)
        return 0;
    for (size_t i = 0; i < nkept; i++) {
        const struct kept *k = &kept[i];
        churn_vma map;
        if (k->fn != (uintptr_t)fn || k->target != target || churn_os_vma(k->site.addr, &map) ||
            !(map.prot & PROT_READ) || k->site.addr + k->site.len > map.hi ||
            memcmp((const void *)k->site.addr, k->site.was, k->site.len))
            continue;
        if (*deferred_n == deferred_cap)
            return 0; /* planned anew, which says why it cannot be */
        deferred[(*deferred_n)++] = k->site;
        if (original)
            *original = k->original;
        return 1;
    }
    return 0;
}

static void keep_site(void *fn, uintptr_t target, void *original)
{
    if (deferred && *deferred_n && nkept < MAX_KEPT)
        kept[nkept++] = (struct kept){(uintptr_t)fn, target, original, deferred[*deferred_n - 1]};
}

/* ---- the two kinds of patch ---- */

static churn_spinlock patch_lock;

static const uint8_t endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};

int churn_patch_redirect(void *fn, void *replacement, void **original, const char **why)
{
    churn_spin_lock(&patch_lock);
    plan p;
    int rc = -1;
    if (kept_site(fn, (uintptr_t)replacement, original)) {
        rc = 0;
        goto out;
    }
    if (open_decoder(why) || analyze((uintptr_t)fn, &p, why))
        goto out;
    /* relay (jmp [rip+0]; replacement) then the trampoline that runs the original */
    uint8_t code[16 + 4 + MAX_MOVED * MAX_RELOCATED + 14];
    size_t bound = 16 + sizeof endbr64 + relocated_bound(&p);
    uintptr_t at = reserve(p.start, bound);
    if (!at) {
        *why = "no free address range within 1 GiB of the function for a trampoline";
        goto out;
    }
    size_t relay = put_jmp(code, at, (uintptr_t)replacement);
    memset(code + relay, 0xcc, 16 - relay);
    memcpy(code + 16, endbr64, sizeof endbr64);
    size_t len = relocate(&p, code + 20, at + 20, why);
    if (!len)
        goto out;
    if (install(&p, at, code, 20 + len, why))
        goto out;
    *original = (void *)(at + 16);
    keep_site(fn, (uintptr_t)replacement, *original);
    rc = 0;
out:
    churn_spin_unlock(&patch_lock);
    return rc;
}

/* Saves every argument register (and r10, the static chain; r11 for good measure), aligns
   the stack and calls the hook.  rbp keeps the entry's rsp so that the restore does not
   depend on the alignment taken. */
static size_t put_hook_call(uint8_t *o, void (*hook)(void))
{
    static const uint8_t save[] = {
        0x55,                                     /* push rbp */
        0x48, 0x89, 0xe5,                         /* mov rbp, rsp */
        0x50, 0x57, 0x56, 0x52, 0x51,             /* push rax rdi rsi rdx rcx */
        0x41, 0x50, 0x41, 0x51, 0x41, 0x52, 0x41, 0x53, /* push r8 r9 r10 r11 */
        0x48, 0x83, 0xe4, 0xf0,                   /* and rsp, -16 */
        0x48, 0x81, 0xec, 0x80, 0, 0, 0,          /* sub rsp, 128 */
    };
    static const uint8_t restore[] = {
        0x48, 0x8d, 0x65, 0xb8,                   /* lea rsp, [rbp - 72] */
        0x41, 0x5b, 0x41, 0x5a, 0x41, 0x59, 0x41, 0x58, /* pop r11 r10 r9 r8 */
        0x59, 0x5a, 0x5e, 0x5f, 0x58,             /* pop rcx rdx rsi rdi rax */
        0x5d,                                     /* pop rbp */
    };
    size_t len = 0;
    memcpy(o, save, sizeof save);
    len += sizeof save;
    for (unsigned i = 0; i < 8; i++) { /* movups [rsp + 16 i], xmm i */
        const uint8_t mov[5] = {0x0f, 0x11, (uint8_t)(0x44 | i << 3), 0x24, (uint8_t)(16 * i)};
        memcpy(o + len, mov, 5);
        len += 5;
    }
    o[len++] = 0x48; /* mov rax, hook; call rax */
    o[len++] = 0xb8;
    put64(o + len, (uintptr_t)hook);
    len += 8;
    o[len++] = 0xff;
    o[len++] = 0xd0;
    for (unsigned i = 0; i < 8; i++) { /* movups xmm i, [rsp + 16 i] */
        const uint8_t mov[5] = {0x0f, 0x10, (uint8_t)(0x44 | i << 3), 0x24, (uint8_t)(16 * i)};
        memcpy(o + len, mov, 5);
        len += 5;
    }
    memcpy(o + len, restore, sizeof restore);
    return len + sizeof restore;
}

#define HOOK_CALL_BYTES 140u

int churn_patch_entry_hook(void *fn, void (*hook)(void), const char **why)
{
    churn_spin_lock(&patch_lock);
    plan p;
    int rc = -1;
    if (kept_site(fn, (uintptr_t)hook, NULL)) {
        rc = 0;
        goto out;
    }
    if (open_decoder(why) || analyze((uintptr_t)fn, &p, why))
        goto out;
    uint8_t code[HOOK_CALL_BYTES + MAX_MOVED * MAX_RELOCATED + 14];
    uintptr_t at = reserve(p.start, HOOK_CALL_BYTES + relocated_bound(&p));
    if (!at) {
        *why = "no free address range within 1 GiB of the function for a trampoline";
        goto out;
    }
    size_t call = put_hook_call(code, hook);
    size_t len = relocate(&p, code + call, at + call, why);
    if (!len)
        goto out;
    if (install(&p, at, code, call + len, why))
        goto out;
    keep_site(fn, (uintptr_t)hook, NULL);
    rc = 0;
out:
    churn_spin_unlock(&patch_lock);
    return rc;
}

/* An empty function (a lone ret, after an endbr64 or not, and the nop padding after it up to
   the next 16 bytes, as the dynamic linker's _dl_debug_state is compiled) has nothing to move: its entry becomes a jmp
   to a relay to fn, which returns to the caller in its place. */
int churn_patch_empty(void *empty, void (*fn)(void), const char **why)
{
    churn_spin_lock(&patch_lock);
    int rc = -1;
    uintptr_t at = (uintptr_t)empty, end = (at + 16) & ~(uintptr_t)15;
    churn_vma map;
    if (open_decoder(why))
        goto out;
    if (churn_os_vma(at, &map) || !(map.prot & PROT_EXEC) || end > map.hi) {
        *why = "the address is not in executable memory";
        goto out;
    }
    /* an endbr64 stays in place, as for the other patches */
    if (!memcmp((const void *)at, endbr64, sizeof endbr64))
        at += sizeof endbr64;
    if (*(const uint8_t *)at != 0xc3 || end - at < JMP_BYTES) {
        *why = "the function is not a lone ret with room for a jmp after it";
        goto out;
    }
    cs_insn *in = cs_malloc(decoder);
    if (!in) {
        *why = "out of memory for the decoder";
        goto out;
    }
    const uint8_t *code = (const uint8_t *)at + 1;
    size_t left = end - at - 1;
    uint64_t addr = at + 1;
    while (left && cs_disasm_iter(decoder, &code, &left, &addr, in) && in->id == X86_INS_NOP)
        ;
    cs_free(in, 1);
    if (left) {
        *why = "the bytes after the ret are not nop padding";
        goto out;
    }
    uintptr_t relay = reserve(at, 16);
    if (!relay) {
        *why = "no free address range within 1 GiB of the function for a trampoline";
        goto out;
    }
    uint8_t stub[16];
    size_t n = put_jmp(stub, relay, (uintptr_t)fn);
    memset(stub + n, 0xcc, sizeof stub - n);
    if (write_code(relay, stub, sizeof stub)) {
        *why = "the trampoline cannot be written (mprotect refused)";
        goto out;
    }
    plan p = {.fn = at, .start = at, .covered = JMP_BYTES};
    rc = write_entry(&p, relay, why);
out:
    churn_spin_unlock(&patch_lock);
    return rc;
}
