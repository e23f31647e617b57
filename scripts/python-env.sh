#!/usr/bin/env bash
# Prints the python interpreter kbv builds against and embeds, creating it on first use.
# - KBV_PYTHON set: that interpreter.
# - a python3 on PATH that already holds torch 2.11.0 (the H200 machine's image): that one.
# - otherwise: a virtual environment outside the clone, keyed by requirements.txt and the base
#   interpreter, so CI and later sessions reuse the multi-gigabyte torch download.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${KBV_PYTHON:-}" ]; then echo "$KBV_PYTHON"; exit 0; fi
torch_version=$(sed -n 's/^torch==//p' "$root/requirements.txt")
if python3 -c "import sys, torch; sys.exit(torch.__version__.split('+')[0] != '$torch_version')" 2>/dev/null; then
  python3 -c 'import sys; print(sys.executable)'
  exit 0
fi
base=${KBV_BASE_PYTHON:-/usr/bin/python3}
key=$( (cat "$root/requirements.txt"; "$base" --version) | sha256sum | cut -c1-12)
venv=${KBV_CACHE:-$HOME/.cache/kbv}/venv-$key
if [ ! -x "$venv/bin/python" ] || [ ! -f "$venv/.complete" ]; then
  echo "kbv: creating $venv (torch download on first use)" >&2
  "$root/scripts/install-deps.sh" >&2  # python3-venv, python3-dev among them
  rm -rf "$venv"
  "$base" -m venv "$venv" >&2
  "$venv/bin/pip" install -q --upgrade pip >&2
  "$venv/bin/pip" install -q -r "$root/requirements.txt" >&2
  touch "$venv/.complete"
fi
echo "$venv/bin/python"
