#!/usr/bin/env bash
# Installs what the tests need beyond the build (`make test`): the Ray environment the scale-out
# test runs under (scripts/ray-env.sh, cached outside the clone), and Chromium, in which the report
# test renders report.html headless (nothing when it is on PATH already).
set -euo pipefail
"$(dirname "$0")/ray-env.sh" >/dev/null
command -v chromium >/dev/null || command -v chromium-headless-shell >/dev/null && exit 0
echo "kbv: installing chromium (the report test renders report.html in it)" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
