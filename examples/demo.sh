#!/usr/bin/env bash
# Evaluates every example of examples/manifest.tsv for one device under both protocols and
# prints one table. Usage: examples/demo.sh [cpu|cuda] [out-dir]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
device=${1:-cpu}
out=${2:-$here/../build/demo-$device}
kbv=${KBV:-$here/../build/kbv}
mkdir -p "$out"
rows=$(awk -F'\t' -v d="$device" 'NR > 1 && $3 == d' "$here/manifest.tsv")
total=$(printf '%s\n' "$rows" | grep -c . || true)
echo "kbv demo: $total examples on $device, verified and kernelbench protocols; records in $out" >&2
# Every candidate built first, in parallel (one at a time, inside the evaluations, they would take
# minutes each on a first run); a build that fails is recorded and reported by its evaluation.
candidates=$(printf '%s\n' "$rows" | awk -F'\t' -v h="$here" 'NF { print h "/" $2 }' | sort -u)
# shellcheck disable=SC2086  # one path per word: the examples' paths hold no spaces
"$kbv" compile --device "$device" -j "$(nproc)" $candidates > "$out/compile.log" 2>&1 ||
  echo "  some builds failed (see $out/compile.log): their evaluations report them" >&2
n=0
while IFS=$'\t' read -r problem candidate _device _v _k _note; do
  [ -n "$problem" ] || continue
  n=$((n + 1))
  name=$(echo "${candidate%.py}" | tr '/' '_')
  for protocol in verified kernelbench; do
    echo "[$n/$total] $candidate ($protocol)" >&2
    "$kbv" eval "$here/$problem" "$here/$candidate" --device "$device" --protocol "$protocol" \
      --timeout 30 --quiet --json "$out/$name.$protocol.json" > "$out/$name.$protocol.txt" 2>&1 ||
      echo "  kbv exited with $? (see $out/$name.$protocol.txt)" >&2
  done
done <<< "$rows"
python3 "$here/demo_table.py" "$here/manifest.tsv" "$out" "$device"
