"""clang-tidy over eroica's sources with the checks in .clang-tidy; exits 1 on any finding.

  tidy.py BUILD_DIR [--jobs N] [FILE ...]     (default: every non-test source under src/)
  tidy.py BUILD_DIR --changed REV             the sources changed since REV (a .h: its .cc)
  tidy.py BUILD_DIR --recent N                the sources the last N commits changed, leaving
                                              out merges and `format:` commits (clang-format's
                                              layout changes nothing clang-tidy checks)

A whole-tree run parses ~100 sources for several seconds each (`make tidy`); `make test` checks
the sources the recent commits changed, so a new finding is caught where it is made.

The build's compile_commands.json carries GCC's precompiled-header flags, which clang cannot
read; they are dropped (the headers they name are included by the sources themselves).
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

SOURCE_DIR = pathlib.Path(__file__).resolve().parents[2]


def unity_sources(command):
    """A unity build's entry (CMake's unity_<n>_cxx.cxx, `make test` builds so) stands for the
    sources it includes: one entry each, with the same flags, so that each is checked alone."""
    unity = pathlib.Path(command["file"])
    if not unity.name.startswith("unity_") or not unity.is_file():
        return [command]
    out = []
    for source in re.findall(r'^#include "([^"]+\.cc)"', unity.read_text(), re.M):
        entry = dict(command, file=source)
        entry["command"] = command["command"].replace(command["file"], source)
        out.append(entry)
    return out


def clang_commands(build_dir, out_dir):
    commands = json.loads((pathlib.Path(build_dir) / "compile_commands.json").read_text())
    commands = [entry for c in commands for entry in unity_sources(c)]
    for c in commands:
        c["command"] = re.sub(r"\s-include \S+cmake_pch\.hxx|\s-Winvalid-pch", "", c["command"])
    (pathlib.Path(out_dir) / "compile_commands.json").write_text(json.dumps(commands))
    return {pathlib.Path(c["file"]).resolve() for c in commands}


def default_files():
    return sorted(p for p in (SOURCE_DIR / "src").glob("*/*.cc")
                  if not p.name.endswith(("_test.cc", "_fuzzer.cc")))


def sources_named(names):
    """The checked sources among `names` (repository paths); a header stands for its .cc."""
    checked, out = set(default_files()), set()
    for name in names:
        path = SOURCE_DIR / name
        if path.suffix == ".h":
            path = path.with_suffix(".cc")
        if path in checked:
            out.add(path)
    return sorted(out)


def changed_files(rev):
    """Sources changed since `rev` (every one when `rev` is not in the history)."""
    p = subprocess.run(["git", "-C", str(SOURCE_DIR), "diff", "--name-only", rev, "--", "src"],
                       capture_output=True, text=True)
    return sources_named(p.stdout.split()) if p.returncode == 0 else default_files()


def recent_files(commits):
    """Sources changed by the last `commits` commits that are neither merges nor `format:`."""
    p = subprocess.run(["git", "-C", str(SOURCE_DIR), "log", f"-{commits}", "--no-merges", "--invert-grep",
                        "--grep=^format:", "--format=", "--name-only", "--", "src"],
                       capture_output=True, text=True)
    return sources_named(p.stdout.split()) if p.returncode == 0 else default_files()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--changed", metavar="REV")
    parser.add_argument("--recent", metavar="N", type=int)
    parser.add_argument("files", nargs="*")
    args = parser.parse_intermixed_args()
    tidy = shutil.which("run-clang-tidy") or shutil.which("run-clang-tidy-14")
    if tidy is None:
        print("tidy: run-clang-tidy not found (Debian package clang-tidy)")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        known = clang_commands(args.build_dir, tmp)
        if args.changed:
            files = changed_files(args.changed)
        elif args.recent:
            files = recent_files(args.recent)
        else:
            files = [pathlib.Path(f).resolve() for f in args.files] or default_files()
        files = [f for f in files if f in known]
        if not files:  # run-clang-tidy given no file would check the whole database
            print("tidy: 0 files, 0 findings")
            return 0
        # clang-tidy reads SOURCE_DIR/.clang-tidy, the nearest one above each file.
        p = subprocess.run([tidy, "-p", tmp, "-j", str(args.jobs), "-quiet", *map(str, files)],
                           capture_output=True, text=True)
    findings = [line for line in p.stdout.splitlines() if re.search(r"(warning|error): ", line)]
    for line in findings:
        print(line)
    if p.returncode != 0 and not findings:
        print(p.stderr[-2000:])
    print(f"tidy: {len(files)} files, {len(findings)} findings")
    return 0 if p.returncode == 0 and not findings else 1


if __name__ == "__main__":
    sys.exit(main())
