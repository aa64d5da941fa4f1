/*
 * Consistency of a finished analysis: the events against the shim's own epoch summaries, and
 * every oddity counted along the way, turned into warnings.
 */
#ifndef CHURN_CROSSCHECK_H
#define CHURN_CROSSCHECK_H

struct churn_analysis;

void churn_crosscheck(struct churn_analysis *a);

#endif
