#!/usr/bin/env bash
# Prints the python with Ray that tests/serve/ray_test.py runs under (kbv_client.ray drives kbv
# serve on a Ray cluster; torch is not needed there), creating it on first use: a virtual
# environment outside the clone, keyed by python/requirements-ray.txt and the base interpreter,
# so CI and later sessions reuse the download.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
base=${KBV_BASE_PYTHON:-/usr/bin/python3}
key=$( (cat "$root/python/requirements-ray.txt"; "$base" --version) | sha256sum | cut -c1-12)
venv=${KBV_CACHE:-$HOME/.cache/kbv}/venv-ray-$key
if [ ! -x "$venv/bin/python" ] || [ ! -f "$venv/.complete" ]; then
  echo "kbv: creating $venv (Ray, for the scale-out tests)" >&2
  rm -rf "$venv"
  "$base" -m venv "$venv" >&2
  "$venv/bin/pip" install -q --upgrade pip >&2
  "$venv/bin/pip" install -q -r "$root/python/requirements-ray.txt" >&2
  touch "$venv/.complete"
fi
echo "$venv/bin/python"
