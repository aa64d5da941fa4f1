/*
 * The interactive flame graph that the SVG and the HTML exports share: a stack tree written
 * as a JavaScript object, and the script that draws it into an <svg> element (hover shows a
 * frame's value and share, a click zooms, a search box highlights matches, colours follow
 * the module, or in a differential graph the change).  Nothing is fetched: the file is the
 * whole graph.
 */
#ifndef CHURN_EXPORT_FLAME_H
#define CHURN_EXPORT_FLAME_H

#include <stdio.h>

#include "export/tree.h"

typedef struct churn_flame_desc {
    const char *title, *subtitle;
    const char *const *col_titles; /* one per tree column */
    const char *const *col_units;  /* "bytes" or "objects" */
    unsigned col;                  /* the column drawn */
    int base;                      /* the base column of a differential graph, or -1 */
} churn_flame_desc;

/* The tree as a JavaScript object literal.  Frames below 1/100000 of every column's total
   are left out (their value stays in their parent's), which bounds the data of a trace
   with very many small stacks. */
void churn_flame_data(FILE *out, const churn_tree *t, const churn_flame_desc *d);

/* The drawing function, churnFlame(svgElement, data), as script text. */
void churn_flame_script(FILE *out);

/* s as a JSON string that is also safe inside <script> and CDATA sections. */
void churn_flame_string(FILE *out, const char *s);

#endif
