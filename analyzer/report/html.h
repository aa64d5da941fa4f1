/*
 * --html: one self-contained review page (no network): summary, charts of live bytes, RSS
 * and epoch duration over the epochs, the top growth callsites with their stacks, lifetime
 * buckets, and two interactive flame graphs (what is retained, what churns) whose metric can
 * be switched.
 */
#ifndef CHURN_EXPORT_HTML_H
#define CHURN_EXPORT_HTML_H

#include <stdio.h>

#include "export/metrics.h"
#include "report/report.h"

void churn_export_html(FILE *out, const churn_export_window *w, const churn_report_options *o);

#endif
