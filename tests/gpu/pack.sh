#!/usr/bin/env bash
# Packs the eroica binary for a GPU machine that has no build dependencies (no fmt, simdjson,
# libdeflate, zstd ... headers or libraries): build-gpu/eroica, stripped, with the shared
# libraries it needs beside it in build-gpu/lib and a RUNPATH of $ORIGIN/lib, so it runs there
# without LD_LIBRARY_PATH (which `eroica run` would pass on to the training processes, and
# torch must keep its own libstdc++). glibc's own libraries stay the machine's: the binary is
# built against Debian 12's glibc 2.36 and runs on any newer one.
#
#   tests/gpu/pack.sh [BUILD_DIR]     (default: build; it must hold a built `eroica`)
#
# Then carry it: run(command="bash tests/gpu/check.sh", carry=["build-gpu"], timeout_s=420).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$repo/build}
pack=$repo/build-gpu
[ -x "$build/eroica" ] || { echo "pack.sh: no $build/eroica (build it first)" >&2; exit 1; }
command -v patchelf > /dev/null || { echo "pack.sh: needs patchelf (apt-get install patchelf)" >&2; exit 1; }

rm -rf "$pack"
mkdir -p "$pack/lib"
cp "$build/eroica" "$pack/eroica"
strip --strip-debug "$pack/eroica"
# Every resolved dependency except glibc's (libc, libm, libpthread, libdl, librt, the loader).
ldd "$build/eroica" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
    *) cp -L "$lib" "$pack/lib/" ;;
  esac
done
# shellcheck disable=SC2016  # $ORIGIN is for the loader, not the shell
patchelf --set-rpath '$ORIGIN/lib' "$pack/eroica"
"$pack/eroica" --help > /dev/null
du -sh "$pack" | awk '{print "pack.sh: " $2 " holds " $1 ":"}'
ls "$pack/lib"
