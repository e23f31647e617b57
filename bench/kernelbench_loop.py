#!/usr/bin/env python3
"""KernelBench's published evaluation loop, reproduced as the yardstick kbv is measured against
(bench/README.md).

It follows ScalingIntelligence/KernelBench `eval_kernel_against_ref` (src/eval.py) and
`time_execution_with_cuda_event` (timing.py): one process evaluates the candidates in turn; it
exec's the problem's source and then the candidate's into one namespace, so load_inline compiles in
that process (into a build folder of the candidate's own); seed 42 before get_init_inputs() and
before each constructor; 5 correctness trials whose seeds come from torch.manual_seed(42) and
torch.randint, inputs drawn by get_inputs() on the CPU and copied to the device, torch.allclose;
then 3 warm-ups and 100 trials, each after a synchronize and a 256 MiB L2 flush, timed with CUDA
events on the current stream, mean time. Trial counts and tolerances are those of kbv's
`kernelbench` preset (src/kbv/protocol/protocol.cpp), so both sides do the same work.

Two processes: this driver (no torch) starts the evaluating worker, holds each stage to a deadline
and starts a new worker only when a candidate left the old one unusable (it died, lost its CUDA
context, or overran a deadline); each start's start-up is recorded. --budget stops between two
candidates, --resume goes on (for machines that cap one command's time).

Usage: kernelbench_loop.py --manifest M.tsv --out results.jsonl --build-dir DIR [--device cuda|cpu]
Output: JSON lines (a worker's start, a candidate's result with its stage seconds, a pause), then a
summary over every invocation, also printed.
"""
import argparse
import csv
import json
import os
import platform
import select
import shutil
import signal
import statistics
import subprocess
import sys
import time
import traceback

SEED = 42
CORRECT_TRIALS = 5
WARMUP = 3
TRIALS = 100
FLUSH_SHAPE = (32, 1024, 1024)  # int64: 256 MiB, KernelBench's clear_l2_cache
L2_FLUSH_BYTES = FLUSH_SHAPE[0] * FLUSH_SHAPE[1] * FLUSH_SHAPE[2] * 8
ATOL = RTOL = 1e-4  # KernelBench's fp32 tolerance, and the kbv preset's
CONTEXT_LOST_EXIT = 3


def settings(device):
    return {"correct_trials": CORRECT_TRIALS, "warmup": WARMUP, "trials": TRIALS, "atol": ATOL, "rtol": RTOL,
            "l2_flush_bytes": L2_FLUSH_BYTES if device == "cuda" else 0, "statistic": "mean",
            "clock": "cuda events, current stream" if device == "cuda" else "host perf_counter"}


# ---------------------------------------------------------------------------------------------
# Worker: imports torch, evaluates the jobs it is given, reports events on a pipe.

def set_seed(torch, seed):
    torch.manual_seed(seed)
    torch.cuda.manual_seed(seed)


def time_calls(torch, fn, args, device):
    """Milliseconds of TRIALS calls after WARMUP, as KernelBench's time_execution_with_cuda_event
    (no first trial discarded, so that the count equals kbv's). Autograd stays on, as there."""
    if device.type != "cuda":  # smoke-test path: host clock, nothing to flush or synchronize
        for _ in range(WARMUP):
            fn(*args)
        times = []
        for _ in range(TRIALS):
            start = time.perf_counter()
            fn(*args)
            times.append((time.perf_counter() - start) * 1e3)
        return times
    for _ in range(WARMUP):
        fn(*args)
        torch.cuda.synchronize(device=device)
    torch.cuda.empty_cache()
    times = []
    for _ in range(TRIALS):
        torch.cuda.synchronize(device=device)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        dummy = torch.empty(FLUSH_SHAPE, dtype=torch.int64, device=device)
        dummy.fill_(42)
        del dummy
        start.record()
        fn(*args)
        end.record()
        torch.cuda.synchronize(device=device)
        times.append(start.elapsed_time(end))
    return times


class ProblemError(Exception):
    """The problem's own code failed: no verdict on the candidate (kbv files these as failures)."""


def evaluate(torch, job, device, baselines, send):
    """One candidate, in KernelBench's order. Returns the result fields (verdict in kbv's words)."""
    stage = lambda name: send(event="stage", index=job["index"], stage=name)
    result = {"kernelbench": {"compiled": False, "correctness": False}}
    sync = (lambda: torch.cuda.synchronize(device=device)) if device.type == "cuda" else (lambda: None)
    to_device = lambda values: [x.to(device) if isinstance(x, torch.Tensor) else x for x in values]

    def outcome(verdict, reason):
        result.update(verdict=verdict, reason=reason[-2000:])
        return result

    stage("compile")
    context = {}
    try:
        with open(job["problem"]) as f:
            exec(compile(f.read(), "<string>", "exec"), context)
        Model, get_init_inputs, get_inputs = context["Model"], context["get_init_inputs"], context["get_inputs"]
        set_seed(torch, SEED)
        init_inputs = to_device(get_init_inputs())
        with torch.no_grad():
            set_seed(torch, SEED)
            original_model = Model(*init_inputs)
        if job["problem"] not in baselines:
            # Once per problem, as kbv does; before the candidate is imported, so a candidate that
            # breaks the process cannot cost its problem the baseline.
            stage("baseline")
            original_model = original_model.to(device)
            set_seed(torch, SEED)
            baselines[job["problem"]] = statistics.fmean(time_calls(torch, original_model, to_device(get_inputs()), device))
            send(event="baseline", problem=job["problem"], baseline_ms=baselines[job["problem"]])
            stage("compile")
    except Exception:
        raise ProblemError(traceback.format_exc())
    result["baseline_ms"] = baselines[job["problem"]]

    os.environ["TORCH_EXTENSIONS_DIR"] = job["build_dir"]
    try:
        with open(job["candidate"]) as f:
            exec(compile(f.read(), "<string>", "exec"), context)
        sync()
    except BaseException as error:  # SystemExit too: the candidate's doing
        log = traceback.format_exc()
        building = isinstance(error, subprocess.CalledProcessError) or "Error building extension" in log
        return outcome("compile_error" if building else "runtime_error", log)
    ModelNew = context.get("ModelNew")
    if ModelNew is None:
        return outcome("runtime_error", "the candidate defines no ModelNew")
    result["kernelbench"]["compiled"] = True
    try:
        with torch.no_grad():
            set_seed(torch, SEED)
            custom_model = ModelNew(*init_inputs)
            original_model = original_model.to(device)
            custom_model = custom_model.to(device)
            sync()
    except Exception:
        return outcome("runtime_error", traceback.format_exc())

    stage("checks")
    torch.manual_seed(SEED)
    trial_seeds = [torch.randint(0, 2**32 - 1, (1,)).item() for _ in range(CORRECT_TRIALS)]
    passed, mismatch = 0, ""
    with torch.no_grad():
        for trial_seed in trial_seeds:
            set_seed(torch, trial_seed)
            inputs = to_device(get_inputs())
            try:
                output = original_model(*inputs)
                sync()
            except Exception:
                raise ProblemError(traceback.format_exc())
            try:
                output_new = custom_model(*inputs)
                sync()
                if output.shape != output_new.shape:
                    return outcome("incorrect", f"output shape {tuple(output_new.shape)}, expected {tuple(output.shape)}")
                if torch.allclose(output, output_new, atol=ATOL, rtol=RTOL):
                    passed += 1
                else:
                    mismatch = f"max difference {torch.max(torch.abs(output - output_new)).item():.3g}"
            except Exception:
                return outcome("runtime_error", traceback.format_exc())
    result["kernelbench"]["correctness_trials"] = f"{passed}/{CORRECT_TRIALS}"
    if passed != CORRECT_TRIALS:
        return outcome("incorrect", f"{passed}/{CORRECT_TRIALS} trials within allclose; {mismatch}")
    result["kernelbench"]["correctness"] = True

    stage("timing")
    try:
        sync()
        set_seed(torch, SEED)
        times = time_calls(torch, custom_model, to_device(get_inputs()), device)
    except Exception:
        return outcome("runtime_error", "while timing: " + traceback.format_exc())
    result["candidate_ms"] = statistics.fmean(times)
    if result["candidate_ms"] > 0:
        result["speedup"] = result["baseline_ms"] / result["candidate_ms"]
    return outcome("pass", "")


def context_alive(torch, device):
    try:
        torch.zeros(1, device=device).add_(1).item()
        torch.cuda.synchronize(device=device)
        return True
    except Exception:
        return False


def work(args):
    report = os.fdopen(args.report_fd, "w", buffering=1)

    def send(**event):
        report.write(json.dumps(event) + "\n")
        report.flush()

    import torch  # here, not at the top: the driver never loads it

    device = torch.device(args.device)
    if device.type == "cuda":
        torch.cuda.set_device(0)
        torch.zeros(1, device=device)  # the context, inside the start-up
        torch.cuda.synchronize(device=device)
    # PyTorch's defaults (the preset's flags on both sides), set so that the environment cannot move them.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = True
    send(event="ready", torch=torch.__version__, cuda=torch.version.cuda or "", python=platform.python_version(),
         device_name=torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu")
    with open(args.jobs) as f:
        spec = json.load(f)
    baselines = spec["baselines"]
    for job in spec["jobs"]:
        try:
            result = evaluate(torch, job, device, baselines, send)
        except ProblemError as error:
            result = {"verdict": "failed", "reason": str(error)[-2000:]}
        send(event="stage", index=job["index"], stage="cleanup")
        lost = device.type == "cuda" and result["verdict"] != "pass" and not context_alive(torch, device)
        if lost:
            result.update(verdict="crash", reason="CUDA context lost: " + result["reason"])
        elif device.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(device=device)
            torch.cuda.synchronize(device=device)
        send(event="result", index=job["index"], **result)
        if lost:
            os._exit(CONTEXT_LOST_EXIT)  # nothing more can run in this process
    return 0


# ---------------------------------------------------------------------------------------------
# Driver.

def read_manifest(path, device):
    """Rows for `device` (or naming none) of a CSV/TSV manifest with problem and candidate columns."""
    base = os.path.dirname(os.path.abspath(path))
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t" if path.endswith(".tsv") else ","))
    jobs = []
    for row in rows:
        if not row.get("problem") or not row.get("candidate"):
            sys.exit(f"kernelbench_loop: {path}: a row names no problem or no candidate")
        if row.get("device") and row["device"] != device:
            continue
        jobs.append({"problem": os.path.normpath(os.path.join(base, row["problem"])),
                     "candidate": os.path.normpath(os.path.join(base, row["candidate"]))})
    return jobs


class Worker:
    """One evaluating process, and the events it reports on its pipe."""

    def __init__(self, args, jobs, baselines, log):
        spec = os.path.join(args.build_dir, "jobs.json")
        with open(spec, "w") as f:
            json.dump({"jobs": jobs, "baselines": baselines}, f)
        read, write = os.pipe()
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", "--report-fd", str(write), "--jobs", spec,
             "--device", args.device],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, pass_fds=(write,), start_new_session=True)
        os.close(write)
        self.read = read
        self.buffer = b""

    def event(self, deadline):
        """The next event; None at the end of the stream; "overdue" once the deadline has passed."""
        while b"\n" not in self.buffer:
            left = deadline - time.perf_counter()
            if left <= 0 or not select.select([self.read], [], [], left)[0]:
                return "overdue"
            data = os.read(self.read, 1 << 16)
            if not data:
                return None
            self.buffer += data
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def stop(self, grace):
        """Exit status, after `grace` seconds for the worker to exit; then it is killed with its
        session (its compilers too)."""
        try:
            status = self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            status = self.process.wait()
        os.close(self.read)
        return status


PAUSED_EXIT = 75  # --budget spent with candidates left: run again with --resume


class Driver:
    """Runs workers over the pending jobs and writes every line of the output. Each line carries
    `run` (the invocation, counted across --resume) and `t` (seconds into it), so the wall time of
    an invocation that was stopped is known up to its last line."""

    def __init__(self, args, jobs, out, previous):
        self.args, self.jobs, self.out = args, jobs, out
        done = {line["candidate"] for line in previous if line["event"] == "candidate"}
        self.pending = [job for job in jobs if job["candidate"] not in done]
        # Baselines stay once per problem across invocations, as within one.
        self.baselines = {line["problem"]: line["baseline_ms"] for line in previous if "baseline_ms" in line}
        self.run = max((line["run"] for line in previous), default=0) + 1
        self.began = time.perf_counter()
        self.finished = len(done)

    def write(self, line):
        line.update(run=self.run, t=time.perf_counter() - self.began)
        self.out.write(json.dumps(line) + "\n")
        self.out.flush()

    def over_budget(self):
        return self.args.budget is not None and time.perf_counter() - self.began > self.args.budget

    def run_worker(self, log):
        """One worker over the pending jobs, until it finishes them, becomes unusable or the budget
        is spent (then it is stopped between two candidates)."""
        args = self.args
        for job in self.pending:  # cold builds, whatever an earlier invocation left
            shutil.rmtree(job["build_dir"], ignore_errors=True)
        worker = Worker(args, self.pending, self.baselines, log)
        current, stage, stages = None, None, {}
        began = stage_began = 0.0
        limit = args.timeout
        deadline = worker.started + limit
        while True:
            event = worker.event(deadline)
            now = time.perf_counter()
            if stage is not None:
                stages[stage] = stages.get(stage, 0.0) + now - stage_began
                stage_began = now
            if event is None or event == "overdue":
                # At the end of its stream a worker is exiting: it gets time to finish.
                status = worker.stop(grace=0 if event == "overdue" else args.timeout)
                if current is not None:
                    self.finish(current, {"verdict": "timeout", "reason": f"{stage} ran past {limit:.0f} s"}
                                if event == "overdue" else
                                {"verdict": "crash", "reason": f"the evaluating process died (exit status {status})"},
                                stages, now - began)
                    return
                if event == "overdue" or status not in (0, CONTEXT_LOST_EXIT) or (status == 0 and self.pending):
                    sys.exit(f"kernelbench_loop: the worker stopped outside any candidate (exit status {status}, "
                             f"{'overdue' if event == 'overdue' else 'end of stream'}); see {args.log}")
                return
            kind = event["event"]
            if kind == "ready":
                self.write({"event": "start", "startup_seconds": now - worker.started, "settings": settings(args.device),
                            "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                            **{k: v for k, v in event.items() if k != "event"}})
                print(f"worker ready in {now - worker.started:.1f} s ({event['device_name']}, torch {event['torch']})",
                      flush=True)
                deadline = now + args.timeout  # for its next event, or its exit
            elif kind == "stage":
                if current is None:
                    current, stages, began = self.jobs[event["index"]], {}, now
                stage, stage_began = event["stage"], now
                limit = args.compile_timeout if stage == "compile" else args.timeout
                deadline = now + limit
            elif kind == "baseline":
                self.baselines[event["problem"]] = event["baseline_ms"]
            elif kind == "result":
                self.finish(current, {k: v for k, v in event.items() if k not in ("event", "index")}, stages, now - began)
                current, stage, deadline = None, None, now + args.timeout
                if self.pending and self.over_budget():
                    worker.stop(grace=0)
                    return

    def finish(self, job, result, stages, wall):
        result.update(stage_seconds=dict(stages), wall_seconds=wall)
        self.write({"event": "candidate", "problem": job["problem"], "candidate": job["candidate"], **result})
        self.pending.remove(job)
        self.finished += 1
        speed = f" {result['speedup']:.2f}x" if "speedup" in result else ""
        print(f"[{self.finished}/{len(self.jobs)}] {result['verdict']}{speed}  {wall:.1f} s  {job['candidate']}",
              flush=True)


def summarize(lines, device):
    """Totals over every invocation's lines."""
    results = [line for line in lines if line["event"] == "candidate"]
    starts = [line["startup_seconds"] for line in lines if line["event"] == "start"]
    walls = {}
    for line in lines:
        walls[line["run"]] = max(walls.get(line["run"], 0.0), line["t"])
    verdicts, stages = {}, {}
    for result in results:
        verdicts[result["verdict"]] = verdicts.get(result["verdict"], 0) + 1
        for name, seconds in result["stage_seconds"].items():
            stages[name] = stages.get(name, 0.0) + seconds
    evaluated = len(results) - verdicts.get("failed", 0)  # failed: the problem's own code, no verdict
    wall = sum(walls.values())
    return {"event": "summary", "candidates": len(results), "evaluated": evaluated, "verdicts": verdicts,
            "wall_seconds": wall, "invocations": len(walls), "worker_starts": len(starts),
            "startup_seconds": sum(starts), "stage_seconds": stages, "evaluations_per_hour": evaluated / wall * 3600,
            "settings": settings(device)}


def drive(args):
    jobs = read_manifest(args.manifest, args.device)
    if not jobs:
        sys.exit(f"kernelbench_loop: {args.manifest}: no rows for device {args.device}")
    build_root = os.path.abspath(args.build_dir)
    os.makedirs(build_root, exist_ok=True)
    for index, job in enumerate(jobs):
        name = os.path.splitext(os.path.basename(job["candidate"]))[0]
        job.update(index=index, build_dir=os.path.join(build_root, f"{index:03d}_{name}"))
    previous = []
    if args.resume and os.path.exists(args.out):
        with open(args.out) as f:
            previous = [json.loads(line) for line in f if line.strip()]
        if any(line["event"] == "summary" for line in previous):
            sys.exit(f"kernelbench_loop: {args.out} is complete; nothing to resume")
    with open(args.out, "a" if previous else "w") as out, open(args.log, "a") as log:
        driver = Driver(args, jobs, out, previous)
        while driver.pending:
            driver.run_worker(log)  # returns having finished at least one candidate
            if driver.pending and driver.over_budget():
                driver.write({"event": "paused", "left": len(driver.pending)})
                print(f"paused: budget of {args.budget:.0f} s spent, {len(driver.pending)} candidates left "
                      f"(run again with --resume)", flush=True)
                return PAUSED_EXIT
        driver.write({"event": "end"})
    with open(args.out) as f:
        summary = summarize([json.loads(line) for line in f], args.device)
    with open(args.out, "a") as out:
        out.write(json.dumps(summary) + "\n")
    print(json.dumps(summary), flush=True)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", help="CSV/TSV: problem, candidate[, device] (paths from its folder)")
    parser.add_argument("--out", help="JSON lines written here")
    parser.add_argument("--build-dir", help="one load_inline build folder per candidate under it, emptied before its turn")
    parser.add_argument("--log", help="the worker's stdout and stderr (default: OUT with .log)")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="cpu: smoke test, host clock")
    parser.add_argument("--timeout", type=float, default=120, help="seconds for start-up and for any stage but compile")
    parser.add_argument("--compile-timeout", type=float, default=1800, help="seconds for a candidate's import")
    parser.add_argument("--budget", type=float, help=f"seconds after which no candidate is started (exit {PAUSED_EXIT})")
    parser.add_argument("--resume", action="store_true", help="go on from an OUT that a --budget or a kill stopped")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--report-fd", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--jobs", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return work(args)
    if not (args.manifest and args.out and args.build_dir):
        parser.error("--manifest, --out and --build-dir are required")
    args.log = args.log or os.path.splitext(args.out)[0] + ".log"
    return drive(args)


if __name__ == "__main__":
    sys.exit(main())
