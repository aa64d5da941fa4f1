#!/bin/sh
# The environment entry libchurn adds in the root process (CHURN_ROOT_PID) is no allocation of
# the program's: a program that sets a new variable, unsets one and clears the environment
# (redis-server's setproctitle does) has no unknown free in its trace, and its own allocations
# for the environment are traced as any other.
. test/lib.sh

build_c env_change test/programs/env_change.c
traced "$WORK/env.zst" "$WORK/env.out" "$WORK/env_change"
analyze "$WORK/env.zst" "$WORK/env.json"
check "$WORK/env.json" "$WORK/env.out" <<'PY'
import sys
from churncheck import *
report, out = load(sys.argv[1]), open(sys.argv[2]).read()
if out != "root named\nenv 2\n":
    fail("the program's output: %r" % out)
expect("unknown frees", field(report, "totals", "unknown_frees"), 0)
sites = [g for g in field(report, "growth") if any("setenv" in f for f in g["stack"][:3])]
if not sites:
    fail("no callsite under setenv: the program's environment array is not traced")
print("no unknown free; %d callsite(s) under setenv" % len(sites))
PY
