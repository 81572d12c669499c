#!/usr/bin/env bash
# A refactor must not change what the simulator measures (docs/design.md#simulator).
# tools/simcheck.sh OUTDIR [PYTHON]: simulate every shipped scenario (config/scenarios/*.yaml
# except *.faults.yaml) at its own seed, from the current directory's tree, into
# OUTDIR/<scenario>/. Run it before and after a change (e.g. in a worktree of the old commit),
# then: tools/simcheck.sh --compare DIR_BEFORE DIR_AFTER (exit 1 on any difference).
set -euo pipefail
if [ "${1:-}" = "--compare" ]; then
  a=$2; b=$3; rc=0
  for d in "$a"/*/; do
    s=$(basename "$d")
    for f in results.json events.jsonl timeseries.json REPORT.md; do
      if [ -e "$a/$s/$f" ] || [ -e "$b/$s/$f" ]; then
        if cmp -s "$a/$s/$f" "$b/$s/$f"; then echo "same $s/$f"; else echo "DIFF $s/$f"; rc=1; fi
      fi
    done
  done
  exit $rc
fi
out=$1; py=${2:-.venv/bin/python}
mkdir -p "$out"
for f in config/scenarios/*.yaml; do
  case "$f" in *.faults.yaml) continue;; esac
  s=$(basename "$f" .yaml)
  start=$(date +%s)
  PYTHONHASHSEED=0 "$py" -m simulator.cli simulate "$s" --no-plots --out "$out/$s" >"$out/$s.log" 2>&1 || { echo "FAILED $s (see $out/$s.log)"; exit 1; }
  echo "$s $(( $(date +%s) - start ))s"
done
