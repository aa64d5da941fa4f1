/*
 * The DWARF index of one module: libdw answers "which scopes contain this pc"
 * (dwarf_getscopes) by walking the compile unit's DIE tree from its root on every call, so
 * the first address that falls into a compile unit walks that unit once into a sorted index
 * of its functions and inlined calls, and later lookups are a binary search.  Function names
 * are read from their DIEs on first use; declarations without a linkage name get the
 * scopes around them (symbolize.c asks for the frames, and falls back on the ELF symbol
 * table where this finds no function).
 */
#include "symbols/dwarfindex.h"
#include "base/util.h"

#include <dwarf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

/* A function (DW_TAG_subprogram) or an inlined call (DW_TAG_inlined_subroutine) with code. */
typedef struct func_node {
    Dwarf_Die die;          /* for the name, read on first use */
    const char *name;
    bool named;
    bool inlined;
    int32_t parent;         /* the enclosing function node; -1 for a subprogram */
    const char *call_file;  /* where an inlined node is called from, inside its parent */
    unsigned call_line;
    uint32_t range_first, range_count; /* its ranges in cu_index.own */
} func_node;

typedef struct addr_range {
    uint64_t lo, hi;        /* DWARF addresses (without the module's bias) */
    uint32_t node;
} addr_range;

typedef struct cu_index {
    Dwarf_Off cu;           /* offset of the unit's DIE: the hash key */
    UT_hash_handle hh;
    func_node *nodes;
    size_t node_count, node_cap;
    addr_range *own;        /* each node's ranges, contiguous per node */
    addr_range *sorted;     /* all of them by lo (outer before inner on ties), for lookups */
    size_t range_count, range_cap;
} cu_index;

/* Qualified names computed for declarations without a linkage name, by DIE. */
typedef struct decl_key {
    const void *cu;
    Dwarf_Off offset;
} decl_key;

typedef struct decl_name {
    decl_key key;
    UT_hash_handle hh;
    const char *name;
    bool pending; /* being named: asked again, it has no name */
} decl_name;

/* Naming a declaration names the functions around it (scoped_name), each named from its own
   declaration in turn.  DWARF can make that come back to a declaration being named (an
   abstract_origin or specification pointing into the function it names) or go on for as long
   as there are DIEs: a declaration being named has no name when asked again, and at most
   this many are named one inside another. */
#define NAMING_DEPTH_MAX 16

struct churn_dwarf_index {
    churn_dwarf_intern intern;
    void *ctx;
    cu_index *cus;          /* built one by one as addresses fall into units */
    decl_name *decl_names;
    unsigned naming_depth; /* declarations being named, one inside another */
};

churn_dwarf_index *churn_dwarf_index_new(churn_dwarf_intern intern, void *ctx)
{
    churn_dwarf_index *x = churn_xcalloc(1, sizeof *x);
    x->intern = intern;
    x->ctx = ctx;
    return x;
}

void churn_dwarf_index_free(churn_dwarf_index *x)
{
    if (!x)
        return;
    cu_index *ci, *ci_next;
    HASH_ITER(hh, x->cus, ci, ci_next) {
        HASH_DEL(x->cus, ci);
        free(ci->nodes);
        free(ci->own);
        free(ci->sorted);
        free(ci);
    }
    decl_name *d, *d_next;
    HASH_ITER(hh, x->decl_names, d, d_next) {
        HASH_DEL(x->decl_names, d);
        free(d);
    }
    free(x);
}

static const char *intern(churn_dwarf_index *x, const char *text)
{
    return x->intern(x->ctx, text, 0);
}

static const char *intern_demangled(churn_dwarf_index *x, const char *name)
{
    return x->intern(x->ctx, name, 1);
}

static bool is_cplusplus(Dwarf_Die *die)
{
    Dwarf_Die cu;
    if (!dwarf_diecu(die, &cu, NULL, NULL))
        return false;
    int lang = dwarf_srclang(&cu);
    return lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_03 ||
           lang == DW_LANG_C_plus_plus_11 || lang == DW_LANG_C_plus_plus_14;
}

/* Fills path with the DIEs from decl's unit down to decl's parent and returns how many.
   Each level skips whole sibling subtrees through DW_AT_sibling, so this costs the depth
   times the breadth, where dwarf_getscopes_die visits every DIE before decl. */
static int parent_path(Dwarf_Die *decl, Dwarf_Die *path, int max)
{
    Dwarf_Off target = dwarf_dieoffset(decl);
    Dwarf_Die parent;
    if (!dwarf_diecu(decl, &parent, NULL, NULL))
        return 0;
    for (int depth = 0; depth < max;) {
        path[depth++] = parent;
        Dwarf_Die child, next;
        if (dwarf_child(&parent, &child) != 0)
            return 0;
        while (dwarf_dieoffset(&child) != target) {
            if (dwarf_siblingof(&child, &next) != 0 || dwarf_dieoffset(&next) > target)
                break; /* decl lies inside child */
            child = next;
        }
        if (dwarf_dieoffset(&child) == target)
            return depth;
        parent = child;
    }
    return 0;
}

static const char *die_function_name(churn_dwarf_index *x, Dwarf_Die *die);

/* name prefixed with the scopes around decl, outermost first, the way the demangler
   spells them; a function around decl (a local class, a lambda) contributes its own full
   name and ends the walk. */
static const char *scoped_name(churn_dwarf_index *x, Dwarf_Die *decl,
                               const char *name)
{
    Dwarf_Die path[64];
    int n = parent_path(decl, path, 64);
    const char *parts[64];
    int nparts = 0;
    for (int i = n - 1; i >= 1; i--) {
        int tag = dwarf_tag(&path[i]);
        const char *scope = dwarf_diename(&path[i]);
        if (tag == DW_TAG_subprogram) {
            parts[nparts++] = die_function_name(x, &path[i]);
            break;
        }
        if (tag == DW_TAG_namespace)
            parts[nparts++] = scope ? scope : "(anonymous namespace)";
        else if (tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
                 tag == DW_TAG_union_type)
            parts[nparts++] = scope ? scope
                              : i == n - 1 && strncmp(name, "operator()", 10) == 0 ? "{lambda}"
                                                                             : "{unnamed type}";
    }
    char text[2048];
    size_t len = 0;
    for (int i = nparts - 1; i >= 0; i--) {
        int w = snprintf(text + len, sizeof text - len, "%s::", parts[i] ? parts[i] : "?");
        if (w < 0 || (size_t)w >= sizeof text - len)
            break;
        len += (size_t)w;
    }
    snprintf(text + len, sizeof text - len, "%s", name);
    return intern(x, text);
}

/* GCC gives functions in an anonymous namespace no linkage name, and DW_AT_name is bare:
   prefix it with the namespaces and classes around the declaration (constructors and
   destructors, whose declarations in their class have no linkage name either, too). */
static const char *qualified_name(churn_dwarf_index *x, Dwarf_Die *die)
{
    Dwarf_Die decl = *die;
    Dwarf_Attribute attr;
    for (int hops = 0; hops < 8 && !dwarf_hasattr(&decl, DW_AT_name); hops++) {
        Dwarf_Attribute *ref = dwarf_attr(&decl, DW_AT_abstract_origin, &attr);
        if (!ref)
            ref = dwarf_attr(&decl, DW_AT_specification, &attr);
        if (!ref || !dwarf_formref_die(ref, &decl))
            return NULL;
    }
    const char *name = dwarf_diename(&decl);
    if (!name || !is_cplusplus(&decl))
        return intern(x, name);
    decl_key key;
    memset(&key, 0, sizeof key);
    key.cu = decl.cu;
    key.offset = dwarf_dieoffset(&decl);
    decl_name *d;
    HASH_FIND(hh, x->decl_names, &key, sizeof key, d);
    if (d)
        return d->pending ? NULL : d->name;
    if (x->naming_depth == NAMING_DEPTH_MAX)
        return NULL;
    d = churn_xmalloc(sizeof *d);
    d->key = key;
    d->name = NULL;
    d->pending = true;
    HASH_ADD(hh, x->decl_names, key, sizeof d->key, d);
    x->naming_depth++;
    d->name = scoped_name(x, &decl, name);
    x->naming_depth--;
    d->pending = false;
    return d->name;
}

static const char *die_function_name(churn_dwarf_index *x, Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    /* The linkage name carries namespaces, classes and parameters, which DW_AT_name
       lacks; integrate follows abstract_origin and specification to where it lives. */
    const char *linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
    if (!linkage)
        linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
    if (linkage)
        return intern_demangled(x, linkage);
    return qualified_name(x, die);
}

typedef struct index_builder {
    churn_dwarf_index *x;
    cu_index *ci;
    Dwarf_Files *files; /* the unit's file table, for DW_AT_call_file */
    size_t file_count;
} index_builder;

static void index_call_site(index_builder *b, Dwarf_Die *die, func_node *f)
{
    Dwarf_Attribute attr;
    Dwarf_Word value;
    if (b->files && dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &value) == 0 &&
        value < b->file_count)
        f->call_file = intern(b->x, dwarf_filesrc(b->files, value, NULL, NULL));
    if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &value) == 0)
        f->call_line = (unsigned)value;
}

/* Adds a subprogram or inlined call that has code; returns its node, or -1. */
static int32_t index_function(index_builder *b, Dwarf_Die *die, int tag, int32_t parent)
{
    cu_index *ci = b->ci;
    uint32_t node = (uint32_t)ci->node_count;
    uint32_t first = (uint32_t)ci->range_count;
    Dwarf_Addr base, lo, hi;
    for (ptrdiff_t off = 0; (off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0;) {
        if (hi <= lo)
            continue;
        churn_reserve(&ci->own, &ci->range_cap, ci->range_count + 1, sizeof *ci->own);
        ci->own[ci->range_count++] = (addr_range){lo, hi, node};
    }
    if (ci->range_count == first)
        return -1;
    churn_reserve(&ci->nodes, &ci->node_cap, ci->node_count + 1, sizeof *ci->nodes);
    func_node *f = &ci->nodes[ci->node_count++];
    memset(f, 0, sizeof *f);
    f->die = *die;
    f->inlined = tag == DW_TAG_inlined_subroutine;
    /* A subprogram nested in another (a local class's method, a GNU C nested function)
       is a function of its own, not part of its container's frame. */
    f->parent = f->inlined ? parent : -1;
    f->range_first = first;
    f->range_count = (uint32_t)ci->range_count - first;
    if (f->inlined)
        index_call_site(b, die, f);
    return (int32_t)node;
}

static void index_children(index_builder *b, Dwarf_Die *die, int32_t parent, unsigned depth)
{
    Dwarf_Die child;
    if (depth > 256 || dwarf_child(die, &child) != 0)
        return;
    do {
        int tag = dwarf_tag(&child);
        switch (tag) {
        case DW_TAG_subprogram:
        case DW_TAG_inlined_subroutine: {
            /* Without code (a declaration, an abstract instance) nothing below has any. */
            int32_t node = index_function(b, &child, tag, parent);
            if (node >= 0)
                index_children(b, &child, node, depth + 1);
            break;
        }
        case DW_TAG_lexical_block:
        case DW_TAG_try_block:
        case DW_TAG_catch_block:
        case DW_TAG_namespace:
        case DW_TAG_module:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
            index_children(b, &child, parent, depth + 1);
            break;
        default:
            break;
        }
    } while (dwarf_siblingof(&child, &child) == 0);
}

static int range_cmp(const void *a, const void *b)
{
    const addr_range *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    if (x->hi != y->hi)
        return x->hi > y->hi ? -1 : 1; /* the outer range first */
    return x->node < y->node ? -1 : x->node > y->node; /* parents precede their children */
}

static cu_index *cu_index_get(churn_dwarf_index *x, Dwarf_Die *cudie)
{
    Dwarf_Off off = dwarf_dieoffset(cudie);
    cu_index *ci;
    HASH_FIND(hh, x->cus, &off, sizeof off, ci);
    if (ci)
        return ci;
    ci = churn_xmalloc(sizeof *ci);
    memset(ci, 0, sizeof *ci);
    ci->cu = off;
    index_builder b = {x, ci, NULL, 0};
    if (dwarf_getsrcfiles(cudie, &b.files, &b.file_count) != 0)
        b.files = NULL;
    index_children(&b, cudie, -1, 0);
    ci->sorted = churn_xmalloc((ci->range_count ? ci->range_count : 1) * sizeof *ci->sorted);
    memcpy(ci->sorted, ci->own, ci->range_count * sizeof *ci->sorted);
    qsort(ci->sorted, ci->range_count, sizeof *ci->sorted, range_cmp);
    HASH_ADD(hh, x->cus, cu, sizeof ci->cu, ci);
    return ci;
}

static bool node_contains(const cu_index *ci, int32_t node, uint64_t addr)
{
    const func_node *f = &ci->nodes[node];
    for (uint32_t i = 0; i < f->range_count; i++) {
        const addr_range *r = &ci->own[f->range_first + i];
        if (addr >= r->lo && addr < r->hi)
            return true;
    }
    return false;
}

/* Scopes with code nest, so the innermost one containing addr is either the range that
   starts last at or before addr, or, when that range ends before addr, an ancestor of it. */
static int32_t index_lookup(const cu_index *ci, uint64_t addr)
{
    size_t lo = 0, hi = ci->range_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ci->sorted[mid].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    const addr_range *r = &ci->sorted[lo - 1];
    if (addr < r->hi)
        return (int32_t)r->node;
    for (int32_t n = ci->nodes[r->node].parent; n >= 0; n = ci->nodes[n].parent)
        if (node_contains(ci, n, addr))
            return n;
    return -1;
}

static const char *node_name(churn_dwarf_index *x, func_node *f)
{
    if (!f->named) {
        f->name = die_function_name(x, &f->die);
        f->named = true;
    }
    return f->name;
}

size_t churn_dwarf_index_frames(churn_dwarf_index *x, Dwfl_Module *mod, uint64_t addr,
                                churn_frame *out, size_t max)
{
    Dwarf_Addr cu_bias;
    Dwarf_Die *cudie = dwfl_module_addrdie(mod, addr, &cu_bias);
    if (!cudie)
        return 0;
    cu_index *ci = cu_index_get(x, cudie);
    int32_t node = index_lookup(ci, addr - cu_bias);
    if (node < 0)
        return 0;
    const char *file = NULL;
    int line = 0;
    Dwfl_Line *dl = dwfl_module_getsrc(mod, addr);
    if (dl)
        file = dwfl_lineinfo(dl, NULL, &line, NULL, NULL, NULL);
    size_t n = 0;
    for (; node >= 0 && n < max; node = ci->nodes[node].parent) {
        func_node *f = &ci->nodes[node];
        out[n].function = node_name(x, f);
        out[n].file = intern(x, file);
        out[n].line = line > 0 ? (unsigned)line : 0;
        out[n].inlined = f->inlined;
        n++;
        file = f->call_file;
        line = (int)f->call_line;
    }
    return n;
}
