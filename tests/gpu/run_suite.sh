#!/usr/bin/env bash
# kbv run + kbv report on the H200 machine over the CUDA examples laid out as KernelBench lays
# out a model's samples (each problem's CUDA candidates become its samples 0, 1, ...), both
# protocols, one lane per GPU in KBV_GPUS (default 0). Samples GPU utilisation every 0.5 s with
# nvidia-smi while it runs; prints wall time, the run's stage sums and mean utilisation per GPU.
# Usage: tests/gpu/run_suite.sh OUT_DIR   (KBV: the kbv binary)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?OUT_DIR}
gpus=${KBV_GPUS:-0}
kbv=${KBV:-$root/build-gpu/kbv}
tree=$out/tree
rm -rf "$tree" "$out/results.sqlite"*
mkdir -p "$tree/KernelBench/level1" "$tree/samples"
n=0
# Rows of both manifests (paths from examples/ and from the repository's root), CUDA only; the
# hack corpus's rows duplicate two of the examples', kept once.
add() {  # PROBLEM CANDIDATE (absolute)
  local name id s
  name=$(basename "$1")
  id=${name%%_*}
  [ -e "$tree/KernelBench/level1/$name" ] || cp "$1" "$tree/KernelBench/level1/$name"
  for existing in "$tree"/samples/level_1_problem_"${id}"_sample_*; do
    if [ -e "$existing" ] && cmp -s "$existing" "$2"; then return; fi
  done
  s=$(ls "$tree/samples" | grep -c "^level_1_problem_${id}_sample_" || true)
  cp "$2" "$tree/samples/level_1_problem_${id}_sample_${s}_kernel.py"
  n=$((n + 1))
}
while IFS=$'\t' read -r problem candidate device _; do
  if [ "$device" = cuda ]; then add "$root/examples/$problem" "$root/examples/$candidate"; fi
done < <(tail -n +2 "$root/examples/manifest.tsv")
while IFS=$'\t' read -r problem candidate device _; do
  if [ "$device" = cuda ]; then add "$root/$problem" "$root/$candidate"; fi
done < <(tail -n +2 "$root/tests/hacks/manifest.tsv")
echo "run suite: $n samples over $(ls "$tree/KernelBench/level1" | wc -l) problems, GPUs $gpus"

nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits -lms 500 >"$out/utilisation.csv" &
smi=$!
start=$(date +%s.%N)
"$kbv" run --problems "$tree/KernelBench" --samples "$tree/samples" --run-name examples --db "$out/results.sqlite" \
  --device cuda --gpus "$gpus" --protocols verified,kernelbench 2>"$out/run.log" | tee "$out/run.txt"
end=$(date +%s.%N)
kill $smi 2>/dev/null || true
"$kbv" report --db "$out/results.sqlite" --out "$out/report" >/dev/null
python3 - "$out" "$start" "$end" <<'PY'
import csv, sqlite3, sys
out, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
db = sqlite3.connect(f"{out}/results.sqlite")
verdicts = db.execute("SELECT protocol, verdict, COUNT(*) FROM records GROUP BY 1, 2 ORDER BY 1, 2").fetchall()
builds = db.execute("SELECT COUNT(*), SUM(seconds) FROM compiles").fetchone()
util = {}
for row in csv.reader(open(f"{out}/utilisation.csv")):
    if len(row) == 2 and row[1].strip().isdigit():
        util.setdefault(row[0].strip(), []).append(int(row[1]))
print(f"wall {end - start:.0f} s; builds {builds[0]} ({builds[1] or 0:.0f} s summed)")
for protocol, verdict, count in verdicts:
    print(f"  {protocol:12s} {verdict:14s} {count}")
for gpu, values in sorted(util.items()):
    print(f"  GPU {gpu}: mean utilisation {sum(values) / len(values):.0f}% over {len(values)} samples")
PY
grep "evaluation stages" "$out/run.txt" || true
