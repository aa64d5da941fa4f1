#!/bin/sh
# End to end against the real Cloudflare workerd (pinned npm version, test/workerd/install.sh):
# the seed's case of sequential subrequests over a service binding, first natively, then under
# the shim.  workerd links tcmalloc statically and exports malloc itself, so the shim's malloc
# interposition sees none of its allocations; what holds under the shim today is that workerd
# still serves every subrequest, and that the trace is complete and readable.  An unreachable
# npm registry fails the test: the real component is required.
. test/lib.sh

SUBREQUESTS=2050     # 21 requests: 20 of n=100 and a last one of n=50
PER_REQUEST=100

WORKERD=$(test/workerd/install.sh 2>"$WORK/install.err") || fail "$(tail -n 1 "$WORK/install.err")"

# drive NAME [drive.py args...]: serves $SUBREQUESTS subrequests; workerd must answer every
# request with its count and leave cleanly on SIGTERM (exit 0, no SIGKILL).
drive() {
    name=$1
    shift
    status=0
    python3 test/workerd/drive.py --workerd "$WORKERD" --subrequests "$SUBREQUESTS" \
        --per-request "$PER_REQUEST" --log "$WORK/$name.log" "$@" \
        >"$WORK/$name.json" 2>"$WORK/$name.err" || status=$?
    if [ "$status" -ne 0 ]; then
        tail -n 5 "$WORK/$name.log" 2>/dev/null || true
        fail "workerd ($name): $(tail -n 1 "$WORK/$name.err")"
    fi
    check "$WORK/$name.json" "$SUBREQUESTS" "$PER_REQUEST" <<'PY'
import sys
from churncheck import *
summary = load(sys.argv[1])
total, per = int(sys.argv[2]), int(sys.argv[3])
expect("subrequests served", field(summary, "subrequests"), total)
expect("requests answered", field(summary, "requests"), -(-total // per))
ended = field(summary, "workerd_exit")
expect("workerd exit status after SIGTERM", field(ended, "status"), "exit 0")
expect("workerd needed SIGKILL", field(ended, "sigkill"), False)
PY
}

check_native() {
    drive native
}

# workerd under the shim: the trace must be one complete run of this workerd, ended by its
# _exit(0) (workerd never returns from main), with the mmap calls that reach libc.
check_traced() {
    drive traced --env "LD_PRELOAD=$SHIM" --env "CHURN_OUT=$WORK/traced.zst"
    [ -s "$WORK/traced.zst" ] || fail "workerd ran under the shim but wrote no trace"
    analyze "$WORK/traced.zst" "$WORK/traced.report.json"
    check "$WORK/traced.json" "$WORK/traced.report.json" <<'PY'
import sys
from churncheck import *
summary, report = load(sys.argv[1]), load(sys.argv[2])
meta = field(report, "metadata")
expect("trace pid", field(meta, "pid"), field(summary, "pid"))
expect("segments dropped", field(meta, "segments_dropped"), 0)
expect("segments damaged", field(meta, "segments_damaged"), 0)
expect("recorded exit", field(meta, "exit"), {"how": "_exit", "detail": 0})
if not field(field(report, "totals"), "map_calls") > 0:
    fail("no mmap call recorded: workerd imports mmap from libc")
PY
}

check_native
check_traced
echo "workerd served $SUBREQUESTS subrequests natively and under the shim"
