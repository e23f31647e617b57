#!/usr/bin/env bash
# The README's picture of a report: the CPU rows of examples/manifest.tsv (but the hang, which only
# waits for its timeout) laid out as one model's KernelBench-named samples, `kbv run` and
# `kbv report` over them, the page's top shot by headless Chromium (make test installs it).
# Usage: scripts/report_picture.sh OUT.png   (KBV: the kbv binary, default build/kbv)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
picture=$(realpath -m "${1:?OUT.png}")
kbv=${KBV:-$root/build/kbv}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/KernelBench/level1" "$work/samples"
while IFS=$'\t' read -r problem candidate device _; do
  [ "$device" = cpu ] || continue
  case $candidate in *hang*) continue ;; esac
  name=$(basename "$problem")
  id=${name%%_*}
  cp -n "$root/examples/$problem" "$work/KernelBench/level1/$name"
  n=$(ls "$work/samples" | grep -c "^level_1_problem_${id}_sample_" || true)
  cp "$root/examples/$candidate" "$work/samples/level_1_problem_${id}_sample_${n}_kernel.py"
done < <(tail -n +2 "$root/examples/manifest.tsv")
"$kbv" run --problems "$work/KernelBench" --samples "$work/samples" --run-name example-samples \
  --db "$work/results.sqlite" --device cpu >/dev/null 2>&1
"$kbv" report --db "$work/results.sqlite" --out "$work/report" >/dev/null
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1100,1500 \
  --screenshot="$picture" "file://$work/report/report.html" 2>/dev/null
echo "$picture"
