#!/usr/bin/env bash
# One candidate's build, alone on the machine, each way it is built: imported in a plain Python
# process as KernelBench's loop does (load_inline in the evaluating process, TORCH_EXTENSIONS_DIR
# fresh), and by `kbv compile -j 1` from a fresh cache (its worker, the precompiled header built
# on the way), again with that header ready, and with KBV_PCH=off. Each kbv build gets a copy of
# the candidate with its own trailing comment, so that no build finds another's in the cache.
# In the bench a kbv build took ~75 s with 6 to 14 building at once on the H200, where the loop's
# took 31-46 s alone; this says how much of that is the build path and how much the company.
# Usage: bench/probes/build_probe.sh DEVICE CANDIDATE   (KBV: the binary, default build-gpu/kbv or build/kbv)
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: bench/probes/build_probe.sh cpu|cuda CANDIDATE" >&2; exit 2; }
device=$1
candidate=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
root=$(cd "$(dirname "$0")/../.." && pwd)
kbv=${KBV:-$root/build-gpu/kbv}
[ -x "$kbv" ] || kbv=$root/build/kbv
python=${KBV_PYTHON:-$("$root/scripts/python-env.sh")}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

seconds() {  # COMMAND...: its wall seconds on stdout, its output in $work/last.log
  local start
  start=$(date +%s.%N)
  "$@" >"$work/last.log" 2>&1 || { echo "bench: failed: $*" >&2; tail -20 "$work/last.log" >&2; exit 1; }
  awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'
}
variant() {  # NAME: a copy of the candidate whose content, and so cache key, is its own
  mkdir -p "$work/$1"
  { cat "$candidate"; echo "# build_probe: $1"; } >"$work/$1/$(basename "$candidate")"
  echo "$work/$1/$(basename "$candidate")"
}

loop_import='import importlib.util, sys
spec = importlib.util.spec_from_file_location("candidate", sys.argv[1])
spec.loader.exec_module(importlib.util.module_from_spec(spec))'
in_process=$(TORCH_EXTENSIONS_DIR=$work/loop-extensions seconds "$python" -c "$loop_import" "$(variant loop)")
cold=$(KBV_CACHE=$work/cache seconds "$kbv" compile --device "$device" -j 1 "$(variant cold)")
warm=$(KBV_CACHE=$work/cache seconds "$kbv" compile --device "$device" -j 1 "$(variant warm)")
no_pch=$(KBV_CACHE=$work/cache KBV_PCH=off seconds "$kbv" compile --device "$device" -j 1 "$(variant nopch)")
echo "one build of $(basename "$(dirname "$candidate")")/$(basename "$candidate") on $device, alone, wall seconds:"
echo "  imported in a plain process (the loop's way)      $in_process"
echo "  kbv compile, fresh cache (header precompiled too) $cold"
echo "  kbv compile, precompiled header ready             $warm"
echo "  kbv compile, KBV_PCH=off                          $no_pch"
