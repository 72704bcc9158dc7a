#!/bin/bash
# Builds the wheel of the in-training Python package into OUT_DIR, offline, with Debian's
# python3-build and setuptools (no isolation: nothing is downloaded). With CPython 3.11 and its
# headers (python3-dev) it holds the stack sampler's frame walker and is tagged for them
# (python/setup.py); elsewhere it is the pure package. It builds from a copy
# of python/, so setuptools' build/ and *.egg-info never land in the source tree.
# Usage: packaging/build_wheel.sh OUT_DIR
set -euo pipefail
out=$(realpath -m "${1:?usage: build_wheel.sh OUT_DIR}")
src=$(cd "$(dirname "$0")/../python" && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp "$src/pyproject.toml" "$src/setup.py" "$src/README.md" "$stage/"
cp -r "$src/eroica" "$stage/"
mkdir "$stage/native" && cp "$src/native/eroica_frames.c" "$stage/native/"
find "$stage" -name __pycache__ -prune -exec rm -rf {} +
mkdir -p "$out"
/usr/bin/python3 -m build --wheel --no-isolation --outdir "$out" "$stage" > "$stage/build.log" 2>&1 ||
  { cat "$stage/build.log" >&2; exit 1; }
ls "$out"/eroica-*.whl
