/*
 * Reading DWARF call-frame information for the walker (cfi.c): the FDE of an address is found
 * through its object's .eh_frame_hdr search table, its CIE and its CFA program are run up
 * to the address, and the row there is reduced to one rule (cfi_rule.h), or "slow" when it
 * needs more than the walker knows.
 *
 * Rules are computed inside a dl_iterate_phdr callback, so the loader's lock keeps the module
 * being read mapped; the module list (ranges and .eh_frame_hdr search tables) is cached and
 * rebuilt when the loader's load/unload counters move.
 */
#include <link.h>
#include <stddef.h>
#include <string.h>

#include "walk/cfi_rule.h"

/* ---- reading CFI ---- */

typedef struct {
    const uint8_t *p, *end;
    int bad;
} reader;

/* A LEB128 number; a signed one's last byte carries its sign in bit 6. */
static uint64_t get_leb(reader *r, int is_signed)
{
    uint64_t v = 0;
    unsigned shift = 0;
    while (r->p < r->end) {
        uint8_t b = *r->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80)) {
            if (is_signed && shift < 64 && (b & 0x40))
                v |= ~0ull << shift;
            return v;
        }
    }
    r->bad = 1;
    return 0;
}

static uint64_t get_uleb(reader *r) { return get_leb(r, 0); }
static int64_t get_sleb(reader *r) { return (int64_t)get_leb(r, 1); }

static uint64_t get_fixed(reader *r, unsigned bytes)
{
    if ((size_t)(r->end - r->p) < bytes) {
        r->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, r->p, bytes); /* little-endian */
    r->p += bytes;
    return v;
}

static uint8_t get_u8(reader *r) { return (uint8_t)get_fixed(r, 1); }

/* A DW_EH_PE-encoded pointer.  Absolute, pc-relative and (for the search table) data-relative
   forms; indirect and the rest are never produced for what we read and mark the reader bad. */
static uintptr_t get_encoded(reader *r, uint8_t enc, uintptr_t data_base)
{
    uintptr_t field = (uintptr_t)r->p;
    uint64_t v;
    switch (enc & 0x0f) {
    case 0x00: v = get_fixed(r, 8); break;
    case 0x01: v = get_uleb(r); break;
    case 0x02: v = get_fixed(r, 2); break;
    case 0x03: v = get_fixed(r, 4); break;
    case 0x04: v = get_fixed(r, 8); break;
    case 0x09: v = (uint64_t)get_sleb(r); break;
    case 0x0a: v = (uint64_t)(int64_t)(int16_t)get_fixed(r, 2); break;
    case 0x0b: v = (uint64_t)(int64_t)(int32_t)get_fixed(r, 4); break;
    case 0x0c: v = get_fixed(r, 8); break;
    default: r->bad = 1; return 0;
    }
    switch (enc & 0xf0) {
    case 0x00: return v;
    case 0x10: return field + v;
    case 0x30:
        if (data_base)
            return data_base + v;
        break;
    }
    r->bad = 1;
    return 0;
}

typedef struct {
    uint64_t code_align;
    int64_t data_align;
    uint8_t fde_enc;
    int has_z, signal;
    const uint8_t *insns, *end;
} cie_info;

static int parse_cie(const uint8_t *cie, cie_info *c)
{
    uint32_t len;
    memcpy(&len, cie, 4);
    if (len == 0 || len == 0xffffffffu)
        return -1;
    reader r = {cie + 4, cie + 4 + len, 0};
    if (get_fixed(&r, 4) != 0)
        return -1;
    uint8_t version = get_u8(&r);
    if (version != 1 && version != 3)
        return -1;
    const char *aug = (const char *)r.p;
    size_t aug_len = strnlen(aug, (size_t)(r.end - r.p));
    r.p += aug_len + 1;
    if (r.p > r.end)
        return -1;
    c->code_align = get_uleb(&r);
    c->data_align = get_sleb(&r);
    uint64_t ra_reg = version == 1 ? get_u8(&r) : get_uleb(&r);
    if (ra_reg != 16)
        return -1;
    c->fde_enc = 0;
    c->signal = 0;
    c->has_z = aug[0] == 'z';
    if (c->has_z) {
        uint64_t n = get_uleb(&r);
        if (r.bad || n > (uint64_t)(r.end - r.p))
            return -1;
        reader a = {r.p, r.p + n, 0};
        r.p += n;
        for (const char *ch = aug + 1; *ch && !a.bad; ch++) {
            switch (*ch) {
            case 'L': get_u8(&a); break;
            case 'R': c->fde_enc = get_u8(&a); break;
            case 'S': c->signal = 1; break;
            case 'P': {
                uint8_t enc = get_u8(&a);
                get_encoded(&a, enc & 0x7f, 1); /* skipped: only its size matters */
                break;
            }
            default: return -1;
            }
        }
        if (a.bad)
            return -1;
    } else if (aug[0]) {
        return -1;
    }
    c->insns = r.p;
    c->end = r.end;
    return r.bad ? -1 : 0;
}

/* The interpreter tracks only what a walk uses: the CFA, the caller's rbp (DWARF 6) and the
   return address (16).  Other registers' rules are parsed and ignored. */
enum { REG_SAME, REG_UNDEF, REG_OFFSET, REG_OTHER };
typedef struct {
    uint8_t kind;
    int64_t off;
} reg_rule;

typedef struct {
    uint64_t cfa_reg;
    int64_t cfa_off;
    int cfa_expr;
    reg_rule rbp, ra;
} cfa_state;

static reg_rule *tracked(cfa_state *s, uint64_t reg)
{
    return reg == 6 ? &s->rbp : reg == 16 ? &s->ra : NULL;
}

static void restore_reg(cfa_state *s, const cfa_state *init, uint64_t reg)
{
    reg_rule *r = tracked(s, reg);
    if (r)
        *r = reg == 6 ? init->rbp : init->ra;
}

static void set_reg(cfa_state *s, uint64_t reg, uint8_t kind, int64_t off)
{
    reg_rule *r = tracked(s, reg);
    if (r) {
        r->kind = kind;
        r->off = off;
    }
}

#define STATE_STACK 16

/* DW_CFA_remember_state's stack, 0.9 KiB: kept here, guarded by the loader's lock as the
   module list below is, rather than among the walk's frames on a stack that may be a
   coroutine's or a signal handler's, with little room. */
static cfa_state remembered[STATE_STACK];

/* Runs CFA instructions for the row that holds at `ip`, starting at location `loc`.  `init`
   is the CIE's row (for DW_CFA_restore), NULL while running the CIE itself.  Returns 0, or -1
   for an instruction outside the supported set. */
static int run_cfa(reader *r, const cie_info *c, cfa_state *s, const cfa_state *init,
                   uintptr_t loc, uintptr_t ip)
{
    cfa_state *stack = remembered;
    unsigned depth = 0;
    while (r->p < r->end && !r->bad) {
        uint8_t op = get_u8(r);
        uint64_t reg, delta = 0;
        int64_t off;
        switch (op >> 6) {
        case 1:
            delta = op & 0x3f;
            goto advance;
        case 2:
            set_reg(s, op & 0x3f, REG_OFFSET, (int64_t)get_uleb(r) * c->data_align);
            continue;
        case 3:
            if (!init)
                return -1;
            restore_reg(s, init, op & 0x3f);
            continue;
        }
        switch (op) {
        case 0x00: /* nop */
            break;
        case 0x02: delta = get_fixed(r, 1); goto advance;
        case 0x03: delta = get_fixed(r, 2); goto advance;
        case 0x04: delta = get_fixed(r, 4); goto advance;
        case 0x05: /* offset_extended */
            reg = get_uleb(r);
            set_reg(s, reg, REG_OFFSET, (int64_t)get_uleb(r) * c->data_align);
            break;
        case 0x06: /* restore_extended */
            if (!init)
                return -1;
            restore_reg(s, init, get_uleb(r));
            break;
        case 0x07: set_reg(s, get_uleb(r), REG_UNDEF, 0); break;
        case 0x08: set_reg(s, get_uleb(r), REG_SAME, 0); break;
        case 0x09: /* register */
            reg = get_uleb(r);
            get_uleb(r);
            set_reg(s, reg, REG_OTHER, 0);
            break;
        case 0x0a: /* remember_state */
            if (depth == STATE_STACK)
                return -1;
            stack[depth++] = *s;
            break;
        case 0x0b: /* restore_state */
            if (!depth)
                return -1;
            *s = stack[--depth];
            break;
        case 0x0c: /* def_cfa */
            s->cfa_reg = get_uleb(r);
            s->cfa_off = (int64_t)get_uleb(r);
            s->cfa_expr = 0;
            break;
        case 0x0d: s->cfa_reg = get_uleb(r); s->cfa_expr = 0; break;
        case 0x0e: s->cfa_off = (int64_t)get_uleb(r); break;
        case 0x0f: /* def_cfa_expression */
            off = (int64_t)get_uleb(r);
            if (off < 0 || off > r->end - r->p)
                return -1;
            r->p += off;
            s->cfa_expr = 1;
            break;
        case 0x10: /* expression */
        case 0x16: /* val_expression */
            reg = get_uleb(r);
            off = (int64_t)get_uleb(r);
            if (off < 0 || off > r->end - r->p)
                return -1;
            r->p += off;
            set_reg(s, reg, REG_OTHER, 0);
            break;
        case 0x11: /* offset_extended_sf */
            reg = get_uleb(r);
            set_reg(s, reg, REG_OFFSET, get_sleb(r) * c->data_align);
            break;
        case 0x12: /* def_cfa_sf */
            s->cfa_reg = get_uleb(r);
            s->cfa_off = get_sleb(r) * c->data_align;
            s->cfa_expr = 0;
            break;
        case 0x13: s->cfa_off = get_sleb(r) * c->data_align; break;
        case 0x14: /* val_offset */
            reg = get_uleb(r);
            get_uleb(r);
            set_reg(s, reg, REG_OTHER, 0);
            break;
        case 0x15: /* val_offset_sf */
            reg = get_uleb(r);
            get_sleb(r);
            set_reg(s, reg, REG_OTHER, 0);
            break;
        case 0x2e: /* GNU_args_size: only matters to exception landing pads */
            get_uleb(r);
            break;
        case 0x2f: /* GNU_negative_offset_extended */
            reg = get_uleb(r);
            set_reg(s, reg, REG_OFFSET, -(int64_t)get_uleb(r) * c->data_align);
            break;
        default:
            return -1;
        }
        continue;
    advance:
        loc += delta * c->code_align;
        if (loc > ip)
            return 0;
    }
    return r->bad ? -1 : 0;
}

/* Reduces the row to a rule; anything beyond "rsp/rbp + offset, RA at CFA-8, rbp unchanged or
   at CFA-8k" is slow.  An undefined return address or rbp ends the stack, as in libunwind. */
static uint32_t reduce(const cfa_state *s)
{
    if (s->ra.kind == REG_UNDEF || s->rbp.kind == REG_UNDEF)
        return KIND_END;
    if (s->cfa_expr || (s->cfa_reg != 6 && s->cfa_reg != 7) || s->cfa_off < 8 ||
        s->cfa_off > CFA_OFF_MAX || (s->cfa_off & 7))
        return KIND_SLOW;
    if (s->ra.kind != REG_OFFSET || s->ra.off != -8)
        return KIND_SLOW;
    uint32_t rule = KIND_STEP | (uint32_t)s->cfa_off << 12;
    if (s->cfa_reg == 6)
        rule |= RULE_CFA_RBP;
    if (s->rbp.kind == REG_OFFSET) {
        int64_t k = -s->rbp.off / 8;
        if (s->rbp.off >= 0 || (s->rbp.off & 7) || k < 2 || k > 255)
            return KIND_SLOW;
        rule |= RULE_RBP_SAVED | (uint32_t)k << 4;
    } else if (s->rbp.kind != REG_SAME) {
        return KIND_SLOW;
    }
    return rule;
}

/* ---- modules: where each loaded object's search table is ---- */

#define MAX_MODULES 1024

typedef struct {
    uintptr_t lo, hi;     /* span of the PT_LOAD segments */
    uintptr_t hdr;        /* .eh_frame_hdr, the base of the table's data-relative values */
    const int32_t *table; /* sorted (initial location, FDE) pairs, 0 = no usable table */
    uint32_t count;
} module;

/* Guarded by the loader's lock: only touched inside dl_iterate_phdr callbacks. */
static module modules[MAX_MODULES];
static unsigned nmodules;
static unsigned long long seen_adds = ~0ull, seen_subs = ~0ull;

static const module *add_module(struct dl_phdr_info *info)
{
    if (nmodules == MAX_MODULES)
        return NULL;
    module m = {UINTPTR_MAX, 0, 0, NULL, 0};
    const ElfW(Phdr) *eh = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            uintptr_t a = info->dlpi_addr + ph->p_vaddr;
            if (a < m.lo)
                m.lo = a;
            if (a + ph->p_memsz > m.hi)
                m.hi = a + ph->p_memsz;
        } else if (ph->p_type == PT_GNU_EH_FRAME) {
            eh = ph;
        }
    }
    if (m.hi <= m.lo)
        return NULL;
    if (eh) {
        const uint8_t *h = (const uint8_t *)(info->dlpi_addr + eh->p_vaddr);
        reader r = {h, h + eh->p_memsz, 0};
        uint8_t version = get_u8(&r), ptr_enc = get_u8(&r), count_enc = get_u8(&r);
        uint8_t table_enc = get_u8(&r);
        get_encoded(&r, ptr_enc, (uintptr_t)h);
        uint64_t count = get_encoded(&r, count_enc, (uintptr_t)h);
        /* The linker's table is always 4-byte offsets from the header; others stay slow. */
        if (!r.bad && version == 1 && table_enc == 0x3b && count &&
            count <= (uint64_t)(r.end - r.p) / 8) {
            m.hdr = (uintptr_t)h;
            m.table = (const int32_t *)r.p;
            m.count = (uint32_t)count;
        }
    }
    modules[nmodules] = m;
    return &modules[nmodules++];
}

static const module *find_module(uintptr_t ip)
{
    for (unsigned i = 0; i < nmodules; i++)
        if (ip >= modules[i].lo && ip < modules[i].hi)
            return &modules[i];
    return NULL;
}

/* Code that no FDE describes is generated code: V8's JIT outside every object, and V8's
   embedded builtins inside workerd's text without CFI.  Both keep frame pointers, so they get
   the standard frame: CFA = rbp + 16, the caller's rbp at CFA - 16 (the walk still checks that
   every load stays on the stack).  Without this one such frame sent the whole stack to
   libunwind, whose checks of unknown memory cost system calls (mincore, pipe writes) per
   frame: 500 instead of 4,900 workerd subrequests a second. */
#define RULE_FRAME_POINTER (KIND_STEP | RULE_CFA_RBP | 16u << 12 | RULE_RBP_SAVED | 2u << 4)

/* The rule for ip, and in [*fde_lo, *fde_hi) the code the FDE holding ip describes (left as
   it is when none does). */
static uint32_t rule_in_module(const module *m, uintptr_t ip, uintptr_t *fde_lo,
                               uintptr_t *fde_hi)
{
    if (!m)
        return churn_cfi_generated_rule(ip);
    if (!m->table)
        return KIND_SLOW;
    uint32_t lo = 0, hi = m->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (m->hdr + (intptr_t)m->table[2 * mid] <= ip)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return RULE_FRAME_POINTER;
    const uint8_t *fde = (const uint8_t *)(m->hdr + (intptr_t)m->table[2 * (lo - 1) + 1]);
    uint32_t len, cie_off;
    memcpy(&len, fde, 4);
    if (len == 0 || len == 0xffffffffu)
        return KIND_SLOW;
    memcpy(&cie_off, fde + 4, 4);
    cie_info c;
    if (!cie_off || parse_cie(fde + 4 - cie_off, &c) || c.signal)
        return KIND_SLOW;
    reader r = {fde + 8, fde + 4 + len, 0};
    uintptr_t begin = get_encoded(&r, c.fde_enc, 0);
    uintptr_t range = get_encoded(&r, c.fde_enc & 0x0f, 0);
    if (r.bad)
        return KIND_SLOW;
    if (ip < begin || ip - begin >= range)
        return RULE_FRAME_POINTER;
    *fde_lo = begin;
    *fde_hi = begin + range;
    if (c.has_z) {
        uint64_t n = get_uleb(&r);
        if (r.bad || n > (uint64_t)(r.end - r.p))
            return KIND_SLOW;
        r.p += n;
    }
    cfa_state init = {0, 0, 0, {REG_SAME, 0}, {REG_SAME, 0}};
    reader ci = {c.insns, c.end, 0};
    if (run_cfa(&ci, &c, &init, NULL, begin, UINTPTR_MAX))
        return KIND_SLOW;
    cfa_state row = init;
    if (run_cfa(&r, &c, &row, &init, begin, ip))
        return KIND_SLOW;
    return reduce(&row);
}

typedef struct {
    uintptr_t ip;   /* the address looked up: return address - 1 */
    uint32_t rule;
    int first;
    int unloaded;   /* the loader unloaded something since the list was built */
    uintptr_t fde_lo, fde_hi; /* the code its FDE describes, 0 and 0 when none */
    int decided;    /* the rule is ip's module's, or there is none */
} fill_ctx;

static int fill_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    fill_ctx *f = arg;
    if (f->first) {
        f->first = 0;
        int counted = size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs;
        if (counted && info->dlpi_adds == seen_adds && info->dlpi_subs == seen_subs) {
            f->rule = rule_in_module(find_module(f->ip), f->ip, &f->fde_lo, &f->fde_hi);
            f->decided = 1;
            return 1;
        }
        f->unloaded = seen_subs != ~0ull && (!counted || info->dlpi_subs != seen_subs);
        seen_adds = counted ? info->dlpi_adds : ~0ull;
        seen_subs = counted ? info->dlpi_subs : ~0ull;
        nmodules = 0;
    }
    const module *m = add_module(info);
    if (m && f->ip >= m->lo && f->ip < m->hi) {
        f->rule = rule_in_module(m, f->ip, &f->fde_lo, &f->fde_hi);
        f->decided = 1;
    }
    return 0;
}

uint32_t churn_cfi_read_rule(uintptr_t ip, int *unloaded)
{
    fill_ctx f = {ip, KIND_SLOW, 1, 0, 0, 0, 0};
    dl_iterate_phdr(fill_module, &f);
    *unloaded = f.unloaded;
    /* the list was built again, and no module holds ip: generated code */
    return f.decided ? f.rule : churn_cfi_generated_rule(ip);
}

int churn_cfi_read_extent(uintptr_t ip, uintptr_t *lo, uintptr_t *hi, int *unloaded)
{
    fill_ctx f = {ip, KIND_SLOW, 1, 0, 0, 0, 0};
    dl_iterate_phdr(fill_module, &f);
    *unloaded = f.unloaded;
    *lo = f.fde_lo;
    *hi = f.fde_hi;
    return f.fde_hi ? 0 : -1;
}
