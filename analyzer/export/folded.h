/*
 * Collapsed stacks, the text format flamegraph.pl, inferno and speedscope read: one line per
 * stack, frames root first separated by ';', then the value.  With two columns (a base window
 * and the window itself) each line ends "BASE NEW", the form flamegraph.pl draws as a
 * differential graph.
 */
#ifndef CHURN_EXPORT_FOLDED_H
#define CHURN_EXPORT_FOLDED_H

#include <stdio.h>

#include "export/tree.h"

/* Prints every node whose own value is non-zero in one of the ncols columns cols. */
void churn_export_folded(FILE *out, const churn_tree *t, const unsigned *cols, size_t ncols);

#endif
