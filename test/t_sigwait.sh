#!/bin/sh
# Signals sent to the process while the program blocks them to take them with sigwait
# (test/programs/sigwait.c) must reach that sigwait: libchurn's writer thread blocks every
# signal, so the kernel never hands one of them to it.
. test/lib.sh

build_c sigwait test/programs/sigwait.c
traced "$WORK/trace.zst" "$WORK/out" "$WORK/sigwait"
grep -q "took 201 signals" "$WORK/out" || fail "sigwait did not take every signal: $(cat "$WORK/out")"
analyze "$WORK/trace.zst" "$WORK/report.json"
echo "201 signals sent to the process reached the program's sigwait"
