#!/usr/bin/env bash
# GPU tests, run on the H200 machine in one call: builds kbv against the image's python3 and
# torch, builds every CUDA example in parallel, evaluates the CUDA rows of examples/manifest.tsv
# under both protocols (their expected verdicts are the checks), then the GPU-only checks (TF32
# baseline, side-stream work inside the measured time, spread of repeated evaluations), then the
# CUDA rows of the hack corpus (tests/hacks/manifest.tsv: each hack named, honest ones clean), then
# kbv run + kbv report over the CUDA examples as one model's samples (stage `run`, not in the default
# stages: KBV_GPUS=0,1 on a two-GPU machine), and kbv audit of the examples and of tests/audit's
# defective problems (stage `audit`, not in the default stages either), bench/fidelity.py (stage
# `fidelity`: kbv's times against Nsight Compute's, the spread of repeated evaluations),
# bench/overhead.py (stage `overhead`: kbv's own seconds per evaluation beside the kernel time),
# bench/serve_vs_run.py (stage `serve`: kbv serve against kbv run on the same candidates, over the
# GPUs of KBV_GPUS, e.g. 0,1 on nvidia-h200-x2; KBV_SERVE_COUNT candidates, default 64),
# bench/probes/transfer_probe.py (stage `transfer`), bench/probes/comparison_probe.py (stage `comparison`: the
# reference worker's passes over a 6 GiB output), bench/probes/startup_probe.py (stage `startup`),
# bench/probes/cover_probe.py (stage `cover`: the timing noise of a sub-millisecond call, host or GPU, and
# the device-wide excess per process pinned to each group of CPUs), bench/excess.py over three
# verified evaluations each of torch's own reduction and a custom one as candidates (stage `roles`:
# the device-wide excess in the candidate's worker against the reference's), bench/probes/sync_probe.py
# (stage `sync`: that wait in plain processes, with and without copies to the host between samples),
# build-gpu/kbv_gpu_ledger_cost (stage `ledger`: what the timing's GPU ledger costs kbv's cycle per
# timed call, bench/gpu_ledger_cost.cpp), bench/probes/build_probe.sh on relu_vec4 (stage `buildpath`: one build alone, in a plain process as the
# loop builds and through kbv compile, ~4 min), bench/probes/build_priority_probe.py (stage `priority`: a
# sleeping thread's wake-up and 200 us of work after it, beside compilers on every core at their
# normal priority and at SCHED_IDLE, as kbv run's builds) and
# the kbv side of bench/run.sh against the loop
# recorded on this machine type in docs/runs/2026-12-01-h200-bench (stage `bench`, ~8 min: the
# loop's 21 minutes are not spent again, 4 of its 34 candidates are, for this machine's pace
# against the record's; its table names both sides' dates; set KBV_COMMIT, the
# machine's copy of the tree has no git history; the entry is OUT_DIR/bench/RESULTS-entry.md).
# bench/run.sh over bench/corpus (stage `corpus`: candidates written as LLMs write them, both sides
# from cold builds, then kbv's warm passes under both protocols; ~25 min, most of it the loop's
# builds: KBV_BENCH_BUDGET pauses the loop, and the stage run again resumes it where OUT_DIR/corpus
# is kept),
# a verified and a kernelbench evaluation of KernelBench's 19_ReLU at its own size, 6 GiB in and out,
# and its audit (stage `large`: each one's wall, stage seconds and card memory per process),
# kbv audit over KernelBench's own problems (stage `kernelbench`, KBV_KERNELBENCH=its KernelBench/
# folder, carried: the machine reaches no repository) and bench/deterministic_cost.py over its
# transposed convolutions (stage `deterministic`),
# tests/sandbox/corpus.py on cuda (stage `sandbox`: the hostile corpus, each attack contained) and
# bench/sandbox_cost.py (stage `sandboxcost`: an evaluation with --sandbox on and off in turns).
# tests/python/draws_test.py on the device (stage `draws`). Prints a short table last. Usage: tests/gpu/run.sh [OUT_DIR]   (stages: KBV_GPU_STAGES)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-${OUT:-$root/build-gpu/out}}
stages=${KBV_GPU_STAGES:-build draws compile demo checks hacks sandbox}
export KBV_CACHE=${KBV_CACHE:-/tmp/kbv-cache}
export KBV=$root/build-gpu/kbv
python=${KBV_PYTHON:-$(command -v python3)}
mkdir -p "$out"
cd "$root"
status=0
for stage in $stages; do
  start=$(date +%s)
  case $stage in
    build)
      make build PYTHON="$python" BUILD=build-gpu JOBS="$(nproc)" >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; } ;;
    draws)
      # The problem's inputs from generators of the draw's own, on the device: the plain draw's values.
      (cd tests/python && PYTHONPATH="$root/src/kbv/python" "$python" -m unittest -v draws_test) 2>&1 | tee "$out/draws.txt" || status=1 ;;
    compile)
      "$KBV" compile --device cuda -j "$(nproc)" examples/candidates/*/cuda_*.py tests/hacks/candidates/cuda_*.py |
        tee "$out/compile.log" ;;
    demo)
      examples/demo.sh cuda "$out/demo" | tee "$out/demo.txt" || status=1 ;;
    checks)
      python3 tests/gpu/checks.py "$KBV" "$out/demo" "$out" | tee "$out/checks.txt" || status=1 ;;
    hacks)
      # One evaluation at a time: two on one GPU time each other's kernels (a floor copy timed beside
      # another evaluation's work once took 0.44 ms for 32 KiB and named an honest candidate).
      python3 tests/hacks/corpus.py cuda "$out/hacks" | tee "$out/hacks.txt" || status=1 ;;
    sandbox)
      # The hostile corpus on the GPU: each attack contained, each verdict as in CI's CPU run.
      python3 tests/sandbox/corpus.py cuda "$out/sandbox" | tee "$out/sandbox.txt" || status=1 ;;
    sandboxcost)
      # What the sandbox costs an evaluation: --sandbox on and off in turns (KBV_SANDBOX_RUNS each, 10).
      python3 bench/sandbox_cost.py "$KBV" examples/problems/1_ReLU.py examples/candidates/1_ReLU/cuda_honest.py \
        --device cuda --runs "${KBV_SANDBOX_RUNS:-10}" --out "$out/sandboxcost.json" | tee "$out/sandboxcost.txt" || status=1 ;;
    run)
      tests/gpu/run_suite.sh "$out/run" | tee "$out/run.txt" || status=1 ;;
    fidelity)
      python3 bench/fidelity.py "$out/fidelity" --kbv "$KBV" | tee "$out/fidelity.txt" || status=1 ;;
    overhead)
      python3 bench/overhead.py "$out/overhead" --kbv "$KBV" | tee "$out/overhead.txt" || status=1 ;;
    serve)
      PYTHONPATH=$root/python python3 bench/serve_vs_run.py "$out/serve" --kbv "$KBV" --device cuda \
        --gpus "${KBV_GPUS:-0}" --count "${KBV_SERVE_COUNT:-64}" | tee "$out/serve.txt" || status=1 ;;
    transfer)
      python3 bench/probes/transfer_probe.py | tee "$out/transfer.txt" || status=1 ;;
    startup)
      python3 bench/probes/startup_probe.py 5 | tee "$out/startup.txt" || status=1 ;;
    cover)
      { python3 bench/probes/cover_probe.py && python3 bench/probes/cover_probe.py --processes; } | tee "$out/cover.txt" || status=1 ;;
    bench)
      mkdir -p "$out/bench" &&
        cp docs/runs/2026-12-01-h200-bench/{loop.jsonl,manifest.tsv,counts} "$out/bench/" &&
        KBV_BENCH_STAGES="kbv loopsample table" bash bench/run.sh "$out/bench" 2>&1 | tee "$out/bench.txt" || status=1 ;;
    corpus)
      KBV_BENCH_SET=corpus KBV_BENCH_WARM=1 KBV_BENCH_STAGES=${KBV_BENCH_STAGES:-kbv loop table} \
        bash bench/run.sh "$out/corpus" 2>&1 | tee -a "$out/corpus.txt" || status=1 ;;
    roles)
      # The device-wide wait's excess by worker: torch's reduction as the candidate beside the same
      # reduction as the baseline, and the split-reduce kernel, three verified evaluations each.
      mkdir -p "$out/roles"
      for i in 1 2 3; do
        for candidate in tests/gpu/data/sum_dim_torch.py bench/suite/candidates/16_SumDimLarge/split_reduce.py; do
          "$KBV" eval bench/suite/problems/16_SumDimLarge.py "$candidate" --device cuda --quiet \
            --json "$out/roles/$(basename "$candidate" .py)-$i.json" >/dev/null || status=1
        done
      done
      python3 bench/excess.py "$out"/roles/*.json | tee "$out/roles.txt" ;;
    ledger)
      "$root/build-gpu/kbv_gpu_ledger_cost" 15 | tee "$out/ledger.txt" || status=1 ;;
    buildpath)
      bash bench/probes/build_probe.sh cuda bench/suite/candidates/1_ReLU/relu_vec4.py | tee "$out/buildpath.txt" || status=1 ;;
    priority)
      python3 bench/probes/build_priority_probe.py | tee "$out/priority.txt" || status=1 ;;
    comparison)
      python3 bench/probes/comparison_probe.py | tee "$out/comparison.txt" || status=1 ;;
    sync)
      # The same wait in plain processes, with and without a copy to the host between samples.
      python3 bench/probes/sync_probe.py | tee "$out/sync.txt" || status=1 ;;
    large)
      # KernelBench's 19_ReLU at its own size (6 GiB in, 6 GiB out), an honest candidate, both
      # protocols: each evaluation's wall, its record's (the rest is the processes' start and
      # exit), where it went (the record's stage seconds) and each process's peak card memory
      # (nvidia-smi every 200 ms: who held what, should it run out).
      for protocol in verified kernelbench; do
        nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits -lms 200 \
          >"$out/large-$protocol-memory.csv" 2>/dev/null &
        sampler=$!
        began=$(date +%s.%N)
        "$KBV" eval tests/gpu/data/large_relu.py examples/candidates/1_ReLU/cuda_honest.py --device cuda \
          --protocol "$protocol" --quiet --json "$out/large-$protocol.json" >/dev/null || status=1
        kill "$sampler" 2>/dev/null
        python3 -c 'import csv, json, sys, time; r = json.load(open(sys.argv[1])); peak = {}
for row in csv.reader(open(sys.argv[4])):
    if len(row) == 2 and row[1].strip().isdigit(): peak[row[0]] = max(peak.get(row[0], 0), int(row[1]))
print(sys.argv[2], r["verdict"], "wall %.1f s, record %.1f s:" % (time.time() - float(sys.argv[3]), r["wall_seconds"]),
  " ".join("%s %.1f" % kv for kv in sorted(r["stage_seconds"].items(), key=lambda kv: -kv[1]) if kv[1] >= 0.05),
  "| card peak per process GiB:", " ".join("%.1f" % (v / 1024) for v in sorted(peak.values(), reverse=True)))' \
          "$out/large-$protocol.json" "$protocol" "$began" "$out/large-$protocol-memory.csv" | tee -a "$out/large.txt"
      done
      began=$(date +%s)
      "$KBV" audit --problems tests/gpu/data/large_relu.py --device cuda --json "$out/large-audit.json" >/dev/null 2>&1 || status=1
      echo "audit wall $(( $(date +%s) - began )) s" | tee -a "$out/large.txt" ;;
    kernelbench)
      # kbv audit over KernelBench's own problem files (KBV_KERNELBENCH: its KernelBench/ folder), a
      # kbv audit per level at once, KBV_AUDIT_JOBS (2) problems each; stopped after KBV_AUDIT_BUDGET
      # seconds (each JSON keeps the problems finished by then). Then the table per finding.
      for level in "$KBV_KERNELBENCH"/level*; do
        timeout "${KBV_AUDIT_BUDGET:-1800}" "$KBV" audit --problems "$level" --device cuda --jobs "${KBV_AUDIT_JOBS:-2}" \
          --json "$out/kernelbench-$(basename "$level").json" >"$out/kernelbench-$(basename "$level").txt" 2>&1 &
      done
      wait
      python3 scripts/audit_summary.py "$out"/kernelbench-level*.json | tee "$out/kernelbench.txt" || status=1 ;;
    deterministic)
      # What torch.use_deterministic_algorithms would cost KernelBench's transposed convolutions,
      # whose references differ between calls in the last bits (float atomics).
      python3 bench/deterministic_cost.py "$KBV_KERNELBENCH"/level1/*conv_transposed* "$KBV_KERNELBENCH"/level2/*ConvTranspose* \
        --calls 10 --out "$out/deterministic.json" | tee "$out/deterministic.txt" || status=1 ;;
    audit)
      "$KBV" audit --problems examples/problems --device cuda --json "$out/audit-examples.json" | tee "$out/audit.txt" || status=1
      "$KBV" audit --problems tests/audit/problems --device cuda --json "$out/audit-corpus.json" | tee -a "$out/audit.txt" || status=1 ;;
  esac
  echo "stage $stage: $(( $(date +%s) - start )) s"
done
exit $status
