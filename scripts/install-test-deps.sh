#!/usr/bin/env bash
# Installs what the tests need beyond the build (`make test`): Chromium, in which the report test
# renders report.html headless. Nothing when it is on PATH already.
set -euo pipefail
command -v chromium >/dev/null || command -v chromium-headless-shell >/dev/null && exit 0
echo "kbv: installing chromium (the report test renders report.html in it)" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
