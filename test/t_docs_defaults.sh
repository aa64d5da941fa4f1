#!/bin/sh
# What the docs say of an option's default is what the option table (shim/base/options.c,
# through build/churn-docgen) says: every "CHURN_X ... default V" in README.md and docs/,
# and the unwinder named as the default one.  A planted wrong default must be caught.
LIB_ANALYZER_ONLY=1
. test/lib.sh

DOCGEN=$ROOT/build/churn-docgen
[ -x "$DOCGEN" ] || fail "build/churn-docgen is missing: run make"
"$DOCGEN" options-table >"$WORK/table.md" || fail "churn-docgen options-table failed"

cat >"$WORK/check.py" <<'PY'
import re, sys, glob
table = {}
for line in open(sys.argv[1]):
    m = re.match(r"\| `(CHURN_[A-Z_]+)` \| ([^|]+?) \|", line)
    if m:
        table[m.group(1)] = m.group(2).strip().strip("`")
bad = 0
said = 0
for path in sys.argv[2:]:
    text = open(path).read()
    for m in re.finditer(r"`?\$?(CHURN_[A-Z_]+)`?[^|.;\n]{0,12}?\(?default (?:is )?`?([\w./$~-]+)", text):
        name, value = m.group(1), m.group(2)
        if name not in table:
            continue
        said += 1
        if not (value == table[name] or table[name].startswith(value) or value.startswith(table[name])):
            print(f"{path}: says {name} defaults to {value}; the table says {table[name]}")
            bad += 1
    for m in re.finditer(r"default options \([^)]*?\b(cfi|libunwind|fp) unwinding", text):
        said += 1
        if m.group(1) != table.get("CHURN_UNWIND"):
            print(f"{path}: says the default unwinding is {m.group(1)}; CHURN_UNWIND's default is {table.get('CHURN_UNWIND')}")
            bad += 1
print(f"checked {said} statements")
sys.exit(1 if bad else 0)
PY
python3 "$WORK/check.py" "$WORK/table.md" README.md docs/*.md >"$WORK/out.txt" 2>&1 ||
    fail "$(head -n 1 "$WORK/out.txt")"
n=$(sed -n 's/^checked \([0-9]*\) statements$/\1/p' "$WORK/out.txt")
[ "${n:-0}" -ge 3 ] || fail "only ${n:-0} statements of a default found in the docs: the pattern no longer matches them"

# The check must fail on a wrong default.
printf 'The segment size `CHURN_SEGMENT_KB` (default 17 KiB).\nMeasured with default options (every event, libunwind unwinding).\n' >"$WORK/planted.md"
if python3 "$WORK/check.py" "$WORK/table.md" "$WORK/planted.md" >"$WORK/planted.txt" 2>&1; then
    fail "a planted wrong default passed"
fi
[ "$(grep -c 'says' "$WORK/planted.txt")" -eq 2 ] || fail "the planted defaults were not both named: $(cat "$WORK/planted.txt")"
echo "PASS: $n statements of a default agree with the option table"
