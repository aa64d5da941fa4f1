/*
 * --svg: one flame graph as a self-contained SVG file (data and script inside), which any
 * browser opens from disk.
 */
#ifndef CHURN_EXPORT_SVG_H
#define CHURN_EXPORT_SVG_H

#include <stdio.h>

#include "analyze/analysis.h"
#include "export/metrics.h"
#include "export/tree.h"

typedef struct churn_svg_view {
    const churn_metric *metric;
    const churn_analysis *a;    /* the window drawn: tree column 0 */
    const churn_analysis *base; /* differential: the base window, tree column 1; or NULL */
} churn_svg_view;

void churn_export_svg(FILE *out, const churn_tree *t, const churn_svg_view *v);

/* "epochs A..B" of an analyzed window, for titles. */
void churn_window_label(const churn_analysis *a, char *buf, size_t len);

#endif
