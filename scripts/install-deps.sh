#!/usr/bin/env bash
# Stages the header-only libraries kbv builds with (nlohmann/json, CLI11) into .deps/include,
# from Debian's packages, so a build on a machine without them (the H200 machine reaches no
# registry) finds them there: device runs carry .deps.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
need=()
[ -f /usr/include/nlohmann/json.hpp ] || need+=(nlohmann-json3-dev)
[ -f /usr/include/CLI/CLI.hpp ] || need+=(libcli11-dev)
[ -f /usr/include/gtest/gtest.h ] || need+=(libgtest-dev)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
fi
mkdir -p "$root/.deps/include"
cp -r /usr/include/nlohmann /usr/include/CLI "$root/.deps/include/"
