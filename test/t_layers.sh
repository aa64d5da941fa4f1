#!/bin/sh
# The folders of shim/ and analyzer/ are layers, and includes go one way between them: the map
# in test/tools/layers.py (drawn in HACKING.md and docs/design.md) holds for every #include.
# The check itself must catch a wrong include: one is planted in a copy and must be named.
LIB_ANALYZER_ONLY=1
. test/lib.sh

python3 test/tools/layers.py . >"$WORK/map.txt" 2>&1 || fail "$(head -n 1 "$WORK/map.txt")"
grep -q '^analyzer: base < heap < read < symbols < analyze < export < report < live < root$' "$WORK/map.txt" ||
    fail "the analyzer's map is not the one HACKING.md draws: $(head -n 1 "$WORK/map.txt")"
for layer in $(sed -n 's/^analyzer: //p' "$WORK/map.txt" | tr -d '<' | sed 's/ root$//'); do
    grep -q "analyzer/$layer/" HACKING.md || fail "HACKING.md does not name analyzer/$layer/"
done
for layer in $(sed -n 's/^shim: //p' "$WORK/map.txt" | tr -d '<' | sed 's/ root$//'); do
    grep -q "shim/$layer/" HACKING.md || fail "HACKING.md does not name shim/$layer/"
done

# A planted upward include (the analysis core reaching for a report) must fail the check.
mkdir -p "$WORK/tree"
cp -r analyzer shim "$WORK/tree/"
echo '#include "report/report.h"' >>"$WORK/tree/analyzer/analyze/lifetime.h"
if python3 test/tools/layers.py "$WORK/tree" >"$WORK/planted.txt" 2>&1; then
    fail "an include from analyze/ up to report/ passed the layer check"
fi
grep -q 'analyzer/analyze/lifetime.h: includes report/report.h' "$WORK/planted.txt" ||
    fail "the layer check did not name the planted include: $(head -n 1 "$WORK/planted.txt")"
echo "PASS: layers one-way ($(tr '\n' ';' <"$WORK/map.txt"))"
