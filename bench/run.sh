#!/usr/bin/env bash
# The bench (bench/README.md): a set of CUDA candidates evaluated by `kbv run --protocols kernelbench`
# and by bench/kernelbench_loop.py (KernelBench's own loop) at equal trial counts, each from cold
# extension builds; prints last a table of ratios and appends it, dated, to bench/RESULTS.md.
# Usage: bench/run.sh OUT_DIR     (on the H200, after `make build PYTHON=python3 BUILD=build-gpu`)
# Environment: KBV_BENCH_SET (suite: the CUDA rows of examples/manifest.tsv and
# bench/suite/manifest.tsv, the default; corpus: bench/corpus/manifest.tsv, candidates written as
# LLMs write them), KBV (default build-gpu/kbv), KBV_PYTHON (the loop's interpreter; default
# scripts/python-env.sh), KBV_COMMIT (the tree's commit where it has no .git), KBV_BENCH_GPU (0),
# KBV_BENCH_FILTER (extended regex on candidate paths), KBV_BENCH_VERIFIED=1 (one more kbv pass,
# verified protocol, from cold builds), KBV_BENCH_WARM=1 (after the kbv pass, one more under each
# protocol over the builds it left: the lane's GPU busy share once builds are warm),
# KBV_BENCH_WARM_PROTOCOLS (the warm passes' protocols; default "kernelbench verified"),
# KBV_BENCH_STAGES (default "kbv loop table"; stage warm: the warm passes alone; stage
# loopsample: the loop here over one candidate in KBV_BENCH_LOOP_SAMPLE, default 9, against the
# same ones in the recorded loop), KBV_BENCH_BUDGET (seconds after which the loop pauses between
# candidates; the loop stage resumes it),
# KBV_BENCH_DEVICE=cpu (smoke test on CPU rows), KBV_BENCH_RESULTS (file the entry is appended to;
# default bench/RESULTS.md, OUT_DIR/RESULTS.md on the CPU).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 1 ] || { echo "usage: bench/run.sh OUT_DIR" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
device=${KBV_BENCH_DEVICE:-cuda}
gpu=${KBV_BENCH_GPU:-0}
filter=${KBV_BENCH_FILTER:-}
set_name=${KBV_BENCH_SET:-suite}
case $set_name in
  suite | corpus) ;;
  *) echo "bench: KBV_BENCH_SET must be suite or corpus, not $set_name" >&2; exit 2 ;;
esac
kbv=${KBV:-$root/build-gpu/kbv}
manifest=$out/manifest.tsv
case $device in
  cuda) results=${KBV_BENCH_RESULTS:-$root/bench/RESULTS.md} ;;
  cpu) results=${KBV_BENCH_RESULTS:-$out/RESULTS.md} ;;  # a CPU smoke run is no H200 result
  *) echo "bench: KBV_BENCH_DEVICE must be cuda or cpu, not $device" >&2; exit 2 ;;
esac
# Before KBV_CACHE is pointed at OUT_DIR: python-env.sh keys its virtual environment on it.
python=$("$root/scripts/python-env.sh")
seconds() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(seconds)" 'BEGIN { print b - a }'; }

rows() {  # MANIFEST: its rows for $device as absolute "problem<TAB>candidate<TAB>device", filtered
  awk -F'\t' -v OFS='\t' -v base="$(dirname "$1")" -v device="$device" '
    { sub(/\r$/, "") }
    NR == 1 {
      for (i = 1; i <= NF; i++) col[$i] = i
      if (!col["problem"] || !col["candidate"] || !col["device"]) {
        print FILENAME ": the header names no problem, candidate or device column" > "/dev/stderr"; exit 2
      }
      next
    }
    $col["device"] == device { print base "/" $col["problem"], base "/" $col["candidate"], device }' "$1" |
    awk -F'\t' -v re="$filter" 're == "" || $2 ~ re'
}
assemble() {  # OUT/manifest.tsv, and OUT/counts (the set, in words); a changed set of candidates discards both sides
  local examples suite='' candidates n_examples n_suite
  if [ "$set_name" = corpus ]; then
    candidates=$(rows "$root/bench/corpus/manifest.tsv")
    echo "$(printf '%s' "$candidates" | grep -c . || true) corpus" >"$out/counts.new"
  else
    examples=$(rows "$root/examples/manifest.tsv")
    if [ -f "$root/bench/suite/manifest.tsv" ]; then
      suite=$(rows "$root/bench/suite/manifest.tsv")
    else
      echo "bench: bench/suite/manifest.tsv absent: the examples' rows only" >&2
    fi
    candidates=$(printf '%s\n' "$examples" "$suite")
    n_examples=$(printf '%s' "$examples" | grep -c . || true)
    n_suite=$(printf '%s' "$suite" | grep -c . || true)
    echo "$n_examples example + $n_suite suite" >"$out/counts.new"
    if [ "$device" = cuda ] && [ -z "$filter" ] && [ "$n_suite" -lt 20 ]; then
      echo "bench: note: $n_suite suite candidates (issue 6 asks for at least 20)" >&2
    fi
  fi
  { printf 'problem\tcandidate\tdevice\n'; printf '%s\n' "$candidates" | grep .; } >"$manifest.new" || {
    echo "bench: no $device rows${filter:+ matching $filter} in the $set_name's manifests" >&2
    exit 1
  }
  # Results without the manifest they were made over cannot be matched to these candidates either.
  if { [ -f "$manifest" ] && ! cmp -s "$manifest" "$manifest.new"; } ||
    { [ ! -f "$manifest" ] && { compgen -G "$out/kbv*" || compgen -G "$out/loop.*"; } >/dev/null; }; then
    echo "bench: the candidates differ from those of $out (or $out does not say which): both sides start afresh" >&2
    rm -rf "$out"/kbv* "$out/loop-extensions" "$out"/loop.* "$out/RESULTS-entry.md"
  fi
  mv "$manifest.new" "$manifest"
  mv "$out/counts.new" "$out/counts"
  echo "bench: $(cat "$out/counts") candidates on $device; work in $out" >&2
}
kbv_pass() {  # PROTOCOL NAME [CACHE]: kbv run over the manifest, builds from CACHE (default: a cold one of its
  # own); wall seconds to OUT/NAME.wall
  local start status=0 cache=${3:-$out/$2-cache}
  if [ ! -x "$kbv" ]; then
    echo "bench: no kbv binary at $kbv: build it (make build PYTHON=python3 BUILD=build-gpu, or" \
      "KBV_GPU_STAGES=build tests/gpu/run.sh) or set KBV" >&2
    exit 1
  fi
  [ -n "${3:-}" ] || rm -rf "$cache"  # cold builds
  rm -rf "$out/$2.sqlite"* "$out/$2.wall"  # no store to resume from
  echo "bench: kbv run --protocols $1 (log $out/$2.log)" >&2
  start=$(seconds)
  KBV_CACHE="$cache" "$kbv" run --manifest "$manifest" --db "$out/$2.sqlite" --device "$device" \
    --gpus "$gpu" --protocols "$1" --run-name bench --no-audit >"$out/$2.txt" 2>"$out/$2.log" || status=$?
  elapsed "$start" >"$out/$2.wall"
  cat "$out/$2.txt" >&2
  # 1: some evaluations could not be carried out (they are in the store's failures, and counted).
  if [ "$status" -gt 1 ] || ! grep -q "evaluated" "$out/$2.txt"; then
    echo "bench: kbv run failed (exit $status); last lines of $out/$2.log:" >&2
    tail -20 "$out/$2.log" >&2
    exit 1
  fi
}
warm_passes() {  # kbv run under each protocol over the builds the kbv pass left in OUT/kbv-cache
  [ -d "$out/kbv-cache" ] || { echo "bench: no $out/kbv-cache: run the kbv stage first" >&2; exit 1; }
  for protocol in ${KBV_BENCH_WARM_PROTOCOLS:-kernelbench verified}; do kbv_pass "$protocol" "kbv-warm-$protocol" "$out/kbv-cache"; done
}
loop_pass() {  # the loop over the manifest; resumes one that a budget or a kill stopped
  local status=0 resume=
  if [ -f "$out/loop.jsonl" ] && ! grep -q '"event": "summary"' "$out/loop.jsonl"; then
    resume=--resume
    echo "bench: resuming the loop in $out/loop.jsonl" >&2
  else
    rm -rf "$out/loop-extensions" "$out"/loop.*
  fi
  echo "bench: bench/kernelbench_loop.py (worker log $out/loop.log)" >&2
  # The loop's one GPU (kbv's lane sets its own from --gpus).
  CUDA_VISIBLE_DEVICES=$gpu "$python" "$root/bench/kernelbench_loop.py" --manifest "$manifest" --device "$device" \
    --build-dir "$out/loop-extensions" --out "$out/loop.jsonl" --log "$out/loop.log" $resume \
    ${KBV_BENCH_BUDGET:+--budget "$KBV_BENCH_BUDGET"} 2>&1 | sed -u '/^{/d' | tee -a "$out/loop.txt" >&2 ||
    status=$?
  case $status in
    0) ;;
    75) echo "bench: the loop paused; go on with KBV_BENCH_STAGES='loop table' bench/run.sh $out" >&2; exit 0 ;;
    *) echo "bench: the loop failed (exit $status); see $out/loop.txt and $out/loop.log" >&2; exit 1 ;;
  esac
}
loop_sample() {  # the loop over every Nth candidate on this machine: its pace against the recorded loop's
  local step=${KBV_BENCH_LOOP_SAMPLE:-9}
  awk -F'\t' -v step="$step" 'NR == 1 || (NR - 2) % step == 0' "$manifest" >"$out/loop-sample-manifest.tsv"
  rm -rf "$out/loop-sample-extensions" "$out"/loop-sample.*
  echo "bench: the loop over one candidate in $step on this machine (worker log $out/loop-sample.log)" >&2
  CUDA_VISIBLE_DEVICES=$gpu "$python" "$root/bench/kernelbench_loop.py" --manifest "$out/loop-sample-manifest.tsv" \
    --device "$device" --build-dir "$out/loop-sample-extensions" --out "$out/loop-sample.jsonl" \
    --log "$out/loop-sample.log" 2>&1 | sed -u '/^{/d' >&2 || {
    echo "bench: the sampled loop failed; see $out/loop-sample.log" >&2
    exit 1
  }
}

table() {  # prints the table last, and appends it to $results
  local commit gpu_facts=''
  for needed in manifest.tsv counts kbv.sqlite kbv.wall loop.jsonl; do
    [ -f "$out/$needed" ] || { echo "bench: no $out/$needed: run the kbv and loop stages first" >&2; exit 1; }
  done
  grep -q '"event": "summary"' "$out/loop.jsonl" || {
    echo "bench: the loop has not finished: run its stage again" >&2
    exit 1
  }
  commit=${KBV_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}
  if [ -z "${KBV_COMMIT:-}" ] && [ -n "$(git -C "$root" status --porcelain 2>/dev/null)" ]; then
    commit="$commit + uncommitted changes"
  fi
  if [ "$device" = cuda ] && command -v nvidia-smi >/dev/null; then
    gpu_facts=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i "$gpu" 2>/dev/null || true)
  fi
  "$python" - "$out" "$results" "$commit" "$device" "$(cat "$out/counts")" "$gpu_facts" <<'PY'
import datetime, json, os, sqlite3, statistics, sys

NO_RUN_YET = "_No H200 run yet._\n"  # bench/RESULTS.md until the first entry
out, results, commit, device, counts, gpu_facts = sys.argv[1:]
if counts.replace(" ", "").isdigit():  # an OUT/counts from before the sets: "EXAMPLES SUITE"
    counts = "{} example + {} suite".format(*counts.split())
wall = lambda name: float(open(f"{out}/{name}.wall").read())
utc = lambda text: datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")


def kbv_side(db_path):
    db = sqlite3.connect(db_path)
    rows = db.execute("SELECT c.path, r.verdict, r.speedup, r.record FROM records r "
                      "JOIN candidates c ON c.id = r.candidate_id").fetchall()
    if not rows:
        sys.exit(f"bench: kbv wrote no record to {db_path}; see its log")
    stages, startups = {}, []
    for _, _, _, record in rows:
        seconds_by_stage = json.loads(record).get("stage_seconds", {})
        for name, seconds in seconds_by_stage.items():
            stages[name] = stages.get(name, 0.0) + seconds
        # The candidate's start in the lane: its import and first checked call (screen, verified only).
        startups.append(seconds_by_stage.get("import", 0.0) + seconds_by_stage.get("screen", 0.0))
    lanes = [lane for (text,) in db.execute("SELECT lanes FROM sessions") for lane in json.loads(text)]
    lane_wall = sum(lane["wall_seconds"] for lane in lanes)
    builds, summed, last = db.execute("SELECT COUNT(*), COALESCE(SUM(seconds), 0), MAX(created) FROM compiles").fetchone()
    began = db.execute("SELECT MIN(created) FROM runs").fetchone()[0]
    facts = db.execute("SELECT facts FROM environments").fetchone()
    return {"records": {path: (verdict, speedup) for path, verdict, speedup, _ in rows},
            "failures": db.execute("SELECT COUNT(*) FROM failures").fetchone()[0],
            "protocol": json.loads(rows[0][3])["protocol"], "stages": stages, "facts": json.loads(facts[0]),
            "startups": sorted(startups),
            "busy": (sum(l["device_seconds"] for l in lanes) / lane_wall if lane_wall > 0 else None),
            "began": began,
            # Builds run ahead on many cores, beside the GPU lane: their wall span, from the store's stamps.
            "builds": builds, "build_seconds": summed,
            "build_span": (utc(last) - utc(began)).total_seconds() if last else 0.0}


kbv, kbv_wall = kbv_side(f"{out}/kbv.sqlite"), wall("kbv")
lines = [json.loads(line) for line in open(f"{out}/loop.jsonl")]
loop = {line["candidate"]: line for line in lines if line["event"] == "candidate"}
starts = [line for line in lines if line["event"] == "start"]
summary = lines[-1]
loop_wall = summary["wall_seconds"]  # summed over the loop's invocations (a budget pauses it)

# Equal trial counts: the preset kbv stored in its records against the loop's settings.
p, s = kbv["protocol"], summary["settings"]
kbv_trials = (p["draws_per_family"] * len(p["families"]), p["timing"]["warmup_calls"], p["timing"]["fixed_samples"],
              p["atol"], p["rtol"], p["timing"]["l2_flush_bytes"] if device == "cuda" else 0)
loop_trials = (s["correct_trials"], s["warmup"], s["trials"], s["atol"], s["rtol"], s["l2_flush_bytes"])
if kbv_trials == loop_trials:
    flush = f"{s['l2_flush_bytes'] >> 20} MiB L2 flush" if device == "cuda" else "no flush (CPU)"
    trials = (f"equal trial counts: {s['correct_trials']} correctness trials, {s['warmup']} warm-ups, "
              f"{s['trials']} timed trials, {flush}, allclose atol=rtol={s['atol']:g}")
else:
    trials = f"TRIAL COUNTS DIFFER (checks, warm-ups, trials, atol, rtol, flush): kbv {kbv_trials}, loop {loop_trials}"

# kbv's stages mapped onto the loop's (bench/README.md, "Stages").
k = kbv["stages"]
ks = lambda *names: sum(k.get(name, 0.0) for name in names)
kbv_row = {"compile": kbv["build_span"], "start-up": ks("import", "screen"), "checks": ks("reference_draws", "checks"),
           "timing": ks("baseline", "timing", "timed_output_checks"), "memory": ks("memory"),
           "trace": ks("probe", "findings", "floor", "reference_trace"), "outside the stages": kbv_wall - sum(k.values())}
l = summary["stage_seconds"]
loop_row = {"compile": l.get("compile", 0.0), "start-up": summary["startup_seconds"], "checks": l.get("checks", 0.0),
            "timing": l.get("baseline", 0.0) + l.get("timing", 0.0), "memory": None, "trace": None,
            "outside the stages": loop_wall - summary["startup_seconds"] - sum(l.values())}

kbv_n, loop_n = len(kbv["records"]), summary["evaluated"]
both = sorted(set(kbv["records"]) & set(loop))
agree = [c for c in both if kbv["records"][c][0] == loop[c]["verdict"]]
ratios = [kbv["records"][c][1] / loop[c]["speedup"] for c in agree
          if loop[c]["verdict"] == "pass" and kbv["records"][c][1] and loop[c].get("speedup")]
count = lambda verdicts: ", ".join(f"{v} {verdicts.count(v)}" for v in sorted(set(verdicts)))
notes = [f"  verdicts differ: kbv {kbv['records'][c][0]}, loop {loop[c]['verdict']}  {c}" for c in both if c not in agree]
notes += [f"  evaluated by {'kbv' if c in kbv['records'] else 'the loop'} only: {c}"
          for c in sorted(set(kbv["records"]) ^ set(loop))]
if kbv["failures"]:
    notes.append(f"  kbv could not evaluate {kbv['failures']} (table failures of {out}/kbv.sqlite)")
notes.append(f"  kbv verdicts: {count([v for v, _ in kbv['records'].values()])}; {kbv['builds']} builds ahead, "
             f"{kbv['build_seconds']:.0f} s summed over their parallel jobs")
notes.append(f"  loop verdicts: {count([r['verdict'] for r in loop.values()])}; {summary['worker_starts']} process "
             f"start(s) over {summary['invocations']} invocation(s)")

facts = kbv["facts"]
gpu_name, _, driver = gpu_facts.partition(", ") if gpu_facts else (facts.get("gpu", "CPU"), "", "")
heading = (f"{gpu_name}, driver {driver or facts.get('cuda_driver_api', 'n/a')}, "
           f"torch {' / '.join(sorted({facts.get('torch', '?')} | {line['torch'] for line in starts}))}, commit {commit}")

per_hour = lambda n, seconds: n / seconds * 3600
cell = lambda value, form: "-" if value is None else form.format(value)
rows = [("evaluations per GPU-hour", per_hour(kbv_n, kbv_wall), per_hour(loop_n, loop_wall), "{:.0f}")]
# The loop over a sample of the candidates on this machine (stage loopsample), against the same
# candidates in the loop's record: the recorded loop at this machine's pace, where the two differ.
if os.path.exists(f"{out}/loop-sample.jsonl"):
    sample = [json.loads(line) for line in open(f"{out}/loop-sample.jsonl")]
    sampled = {line["candidate"]: line for line in sample if line["event"] == "candidate" and line["candidate"] in loop}
    if sampled:
        here = sum(line["wall_seconds"] for line in sampled.values())
        recorded = sum(loop[c]["wall_seconds"] for c in sampled)
        pace = here / recorded
        rows.append(("  loop at this machine's pace", per_hour(kbv_n, kbv_wall), per_hour(loop_n, loop_wall * pace), "{:.0f}"))
        same = sum(line["verdict"] == loop[c]["verdict"] for c, line in sampled.items())
        notes.append(f"  the loop here over {len(sampled)} of its {loop_n} candidates: {here:.1f} s against "
                     f"{recorded:.1f} s recorded (x{pace:.2f}); verdicts as recorded {same}/{len(sampled)}")
rows.append(("wall (s)", kbv_wall, loop_wall, "{:.1f}"))
rows += [(f"  {name} (s)", kbv_row[name], loop_row[name], "{:.1f}") for name in kbv_row]
table = [f"{'':28s}{'kbv':>10s}{'loop':>10s}{'kbv/loop':>10s}"]
for label, a, b, form in rows:
    quotient = a / b if a is not None and b else None
    table.append(f"{label:28s}{cell(a, form):>10s}{cell(b, form):>10s}{cell(quotient, '{:.2f}'):>10s}")
table.append(f"{'verdicts agree':28s}{f'{len(agree)}/{len(both)}':>10s}")
if ratios:
    table.append(f"{'speedup kbv/loop, median':28s}{statistics.median(ratios):>10.2f}"
                 f"  ({min(ratios):.2f}..{max(ratios):.2f}, {len(ratios)} passing on both)")
# Each kbv pass: cold builds (the table's kbv column), verified from cold builds, and both protocols over the
# builds the first pass left (builds done elsewhere, as a build farm beside the GPUs would).
passes = [(name, label) for name, label in
          (("kbv", "kernelbench, cold builds"), ("kbv-verified", "verified, cold builds"),
           ("kbv-warm-kernelbench", "kernelbench, warm builds"), ("kbv-warm-verified", "verified, warm builds"))
          if os.path.exists(f"{out}/{name}.wall") and os.path.exists(f"{out}/{name}.sqlite")]
table.append("")
table.append(f"{'kbv pass':28s}{'evals/GPU-h':>12s}{'x loop':>8s}{'GPU busy':>10s}{'start p95':>11s}{'start<=1s':>11s}")
for name, label in passes:
    side = kbv if name == "kbv" else kbv_side(f"{out}/{name}.sqlite")
    rate = per_hour(len(side["records"]), wall(name))
    startup_seconds = side["startups"]
    p95 = startup_seconds[min(len(startup_seconds) - 1, int(0.95 * len(startup_seconds)))]
    within = sum(seconds <= 1.0 for seconds in startup_seconds) / len(startup_seconds)
    busy = "-" if side["busy"] is None else f"{side['busy']:.0%}"
    table.append(f"{label:28s}{rate:>12.0f}{rate / per_hour(loop_n, loop_wall):>8.2f}{busy:>10s}"
                 f"{p95:>10.2f}s{within:>11.0%}")
    if name != "kbv":
        notes.append(f"  kbv {label}: {count([v for v, _ in side['records'].values()])}")
# The sides may run in separate calls (a machine that caps one command's time): when each ran.
loop_dates = sorted(line["utc"] for line in starts if "utc" in line)
when = f"kbv ran {kbv['began']}" + (f"; the loop {loop_dates[0]}..{loop_dates[-1]}" if loop_dates else "")
header = (f"bench: {counts} candidates on {device}: {kbv_n} kbv, {loop_n} loop evaluations\n"
          f"{heading}\n{when}\n{trials}")

stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
entry = f"\n## {stamp}\n\n```\n{header}\n" + "\n".join(table + notes) + "\n```\n"
with open(f"{out}/RESULTS-entry.md", "w") as f:
    f.write(entry)
text = open(results).read() if os.path.exists(results) else "# bench results (CPU smoke runs)\n"
with open(results, "w") as f:
    f.write(text.replace(NO_RUN_YET, "").rstrip("\n") + "\n" + entry)
print("\n".join(notes) + f"\nbench: entry appended to {results} (and in {out}/RESULTS-entry.md)",
      file=sys.stderr, flush=True)
print(header)
print("\n".join(table))
PY
}

for stage in ${KBV_BENCH_STAGES:-kbv loop table}; do
  case $stage in
    kbv)  # the kbv side afresh; a loop over the same candidates stays
      assemble
      rm -f "$out/RESULTS-entry.md"
      kbv_pass kernelbench kbv
      if [ "${KBV_BENCH_VERIFIED:-0}" = 1 ]; then kbv_pass verified kbv-verified; else rm -rf "$out"/kbv-verified*; fi
      rm -rf "$out"/kbv-warm-*
      if [ "${KBV_BENCH_WARM:-0}" = 1 ]; then warm_passes; fi ;;
    warm)  # the warm passes alone, over the builds the kbv stage left
      assemble
      warm_passes ;;
    loop)  # resumes a paused loop over the same candidates
      assemble
      loop_pass ;;
    loopsample)  # the loop's pace on this machine, from a sample of the candidates
      assemble
      loop_sample ;;
    table) table ;;
    *) echo "bench: unknown stage $stage (kbv, warm, loop, loopsample, table)" >&2; exit 2 ;;
  esac
done
