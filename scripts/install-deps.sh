#!/usr/bin/env bash
# Installs what building kbv needs from Debian's packages (when missing), then stages the
# header-only libraries (nlohmann/json, CLI11) into .deps/include and SQLite with SQLiteCpp and
# libseccomp (headers and static archives: nothing to find at run time) into .deps/include and
# .deps/lib. A machine that reaches no
# registry (the H200 machine) builds from a carried .deps/ with its own cmake, ninja and python;
# there this script finds everything in place and does nothing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
staged() {
  for f in include/nlohmann/json.hpp include/CLI/CLI.hpp include/sqlite3.h include/SQLiteCpp/SQLiteCpp.h \
           include/seccomp.h lib/libsqlite3.a lib/libSQLiteCpp.a lib/libseccomp.a; do
    [ -f "$root/.deps/$f" ] || return 1
  done
}
if staged && command -v cmake >/dev/null && command -v ninja >/dev/null && command -v c++ >/dev/null; then
  exit 0
fi
need=()
for package in cmake ninja-build g++ python3-venv python3-dev libgtest-dev nlohmann-json3-dev libcli11-dev \
               libsqlite3-dev libsqlitecpp-dev libseccomp-dev ccache; do
  dpkg -s "$package" >/dev/null 2>&1 || need+=("$package")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "kbv: installing ${need[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
mkdir -p "$root/.deps/include" "$root/.deps/lib"
cp -r /usr/include/nlohmann /usr/include/CLI /usr/include/SQLiteCpp /usr/include/sqlite3.h /usr/include/seccomp.h \
      /usr/include/seccomp-syscalls.h "$root/.deps/include/"
libdir=/usr/lib/$(gcc -print-multiarch)
cp "$libdir/libsqlite3.a" "$libdir/libSQLiteCpp.a" "$libdir/libseccomp.a" "$root/.deps/lib/"
