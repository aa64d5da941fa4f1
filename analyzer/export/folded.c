#include "export/folded.h"

/* A frame name may not hold the separators of the format. */
static void frame_name(FILE *out, const char *s)
{
    for (; *s; s++)
        fputc(*s == ';' ? ':' : (unsigned char)*s < 0x20 ? ' ' : *s, out);
}

static void path(FILE *out, const churn_tree *t, uint32_t node)
{
    uint32_t parent = t->nodes[node].parent;
    if (parent) {
        path(out, t, parent);
        fputc(';', out);
    }
    frame_name(out, churn_tree_name(t, node));
}

void churn_export_folded(FILE *out, const churn_tree *t, const unsigned *cols, size_t ncols)
{
    /* Depth first in name order, so that equal inputs give equal files. */
    uint32_t node = t->nodes[0].child;
    while (node) {
        const int64_t *self = &t->self[(size_t)node * t->cols];
        int any = 0;
        for (size_t c = 0; c < ncols; c++)
            any |= self[cols[c]] != 0;
        if (any) {
            path(out, t, node);
            for (size_t c = 0; c < ncols; c++)
                fprintf(out, " %lld", (long long)self[cols[c]]);
            fputc('\n', out);
        }
        if (t->nodes[node].child) {
            node = t->nodes[node].child;
            continue;
        }
        while (node && !t->nodes[node].sibling)
            node = t->nodes[node].parent;
        if (node)
            node = t->nodes[node].sibling;
    }
}
