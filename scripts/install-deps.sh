#!/usr/bin/env bash
# Installs what building kbv needs from Debian's packages (when missing), then stages the
# header-only libraries (nlohmann/json, CLI11) into .deps/include. A machine that reaches no
# registry (the H200 machine) builds from a carried .deps/ with its own cmake, ninja and python;
# there this script finds everything in place and does nothing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
staged() { [ -f "$root/.deps/include/nlohmann/json.hpp" ] && [ -f "$root/.deps/include/CLI/CLI.hpp" ]; }
if staged && command -v cmake >/dev/null && command -v ninja >/dev/null && command -v c++ >/dev/null; then
  exit 0
fi
need=()
for package in cmake ninja-build g++ python3-venv python3-dev libgtest-dev nlohmann-json3-dev libcli11-dev ccache; do
  dpkg -s "$package" >/dev/null 2>&1 || need+=("$package")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "kbv: installing ${need[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
mkdir -p "$root/.deps/include"
cp -r /usr/include/nlohmann /usr/include/CLI "$root/.deps/include/"
