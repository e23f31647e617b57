"""The compiling half of kbv-pch-c++, the C++ compiler of candidates' load_inline builds: the real
one, with torch/extension.h precompiled (docs/performance.md, "torch/extension.h precompiled").

kbv-pch-c++ runs this for a compile of a C++ source; it runs the real compiler ($KBV_REAL_CXX,
else c++) with the arguments ninja gave. When they compile one C++ source against torch's headers
(load_inline's main.cpp, which starts with `#include <torch/extension.h>`), a precompiled copy of
that header, built once per compiler, torch and set of flags under $KBV_PCH_DIR, goes first on the
include path: GCC uses it when it matches the compile and reads the header itself when not, and
the object it writes is the same. A compile that finds the copy being built by another goes on
without it.
"""
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys

HEADER = os.path.join("torch", "extension.h")
SOURCES = (".cpp", ".cc", ".cxx")


def identity(path):
    """A file as a build depends on it: where it resolves, its size and its time."""
    real = os.path.realpath(path)
    facts = os.stat(real)
    return f"{real} {facts.st_size} {facts.st_mtime_ns}"


def torch_header(args):
    """torch/extension.h where the compile's include path finds it, or None."""
    for i, arg in enumerate(args):
        for flag in ("-isystem", "-I"):
            if arg == flag and i + 1 < len(args):
                directory = args[i + 1]
            elif arg.startswith(flag) and len(arg) > len(flag):
                directory = arg[len(flag):]
            else:
                continue
            if os.path.isfile(os.path.join(directory, HEADER)):
                return os.path.join(directory, HEADER)
    return None


def header_flags(args, source):
    """The compile's flags less its files, the extension's name (the header does not use it) and -H."""
    flags, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-o", "-MF"):
            skip = True
        elif arg not in ("-c", "-MMD", "-MD", "-H", source) and not arg.startswith("-DTORCH_EXTENSION_NAME="):
            flags.append(arg)
    return flags


def build(compiler, header, flags, root, gch):
    """Builds the copy `gch` in `root`; False (with failed.log written) when it cannot be."""
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout
    failure = None
    if "Free Software Foundation" not in version:
        failure = f"not GCC (GCC's precompiled headers only):\n{version}"
    else:
        partial = f"{gch}.{os.getpid()}.partial"
        done = subprocess.run([compiler, "-x", "c++-header", header, "-o", partial] + flags, capture_output=True, text=True)
        if done.returncode == 0:
            # main.cpp includes the header twice: the second include reads it from where the first found the copy.
            link = os.path.join(root, HEADER)
            if not os.path.lexists(link):
                os.symlink(header, link)
            os.replace(partial, gch)
            return True
        failure = done.stderr[-20000:]
        if os.path.exists(partial):
            os.remove(partial)
    with open(os.path.join(root, "failed.log"), "w") as f:
        f.write(failure)
    return False


def precompiled_root(compiler, args):
    """The folder holding the copy for this compile, or None (not such a compile, or no copy yet)."""
    pch_dir = os.environ.get("KBV_PCH_DIR")
    sources = [a for a in args if a.endswith(SOURCES)]
    if not pch_dir or "-c" not in args or "-x" in args or len(sources) != 1:
        return None
    header = torch_header(args)
    if header is None:
        return None
    flags = header_flags(args, sources[0])
    torch_version = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(header))), "version.py")
    facts = [identity(compiler), identity(header)] + ([identity(torch_version)] if os.path.exists(torch_version) else []) + flags
    root = os.path.join(pch_dir, hashlib.sha256("\n".join(facts).encode()).hexdigest()[:16])
    gch = os.path.join(root, HEADER + ".gch")
    if os.path.exists(gch):
        return root
    if os.path.exists(os.path.join(root, "failed.log")):
        return None
    os.makedirs(os.path.join(root, "torch"), exist_ok=True)
    with open(os.path.join(root, "build.lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # being built by another compile: this one does not wait
        if os.path.exists(gch):
            return root
        return root if build(compiler, header, flags, root, gch) else None


def main():
    name = os.environ.get("KBV_REAL_CXX") or "c++"
    compiler = shutil.which(name)
    if compiler is None:
        sys.exit(f"kbv-pch-c++: no compiler {name!r} on PATH")
    args = sys.argv[1:]
    try:
        root = precompiled_root(compiler, args)
    except OSError:
        root = None  # the cache cannot be written: compile as torch would have
    os.execv(compiler, [compiler] + (["-I", root] if root else []) + args)


if __name__ == "__main__":
    main()
