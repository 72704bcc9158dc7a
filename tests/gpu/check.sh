#!/usr/bin/env bash
# The GPU check: eroica's GPU side on a real GPU (torch 2.x hooks, Kineto CUDA traces, NVML
# μ/σ, a real device-side slowdown of one rank), in one call, within about 6 minutes.
#
#   tests/gpu/check.sh [--cpu] [--out DIR] [--eroica BIN] [--python PY] [--budget-s S]
#
# --cpu is the dry run on a machine without a GPU (CI runs it): the same steps on CPU tensors,
# NVML and CUDA checks reported as skipped with the reason. Results go to DIR (default $OUT,
# else out/gpu-check/<time>): summary.txt, check-report.json, artifacts.tar.gz; the summary is
# printed. Exit status 1 when a required check failed, 2 when no Python with torch is found.
#
# The binary: --eroica, else $EROICA_BIN, else build-gpu/eroica (tests/gpu/pack.sh makes it
# here, to carry to a machine without the build dependencies), else build/eroica, else it
# builds one. The Python: --python, else the first of python3, /opt/torch/.venv/bin/python3,
# /usr/bin/python3 that imports torch.
set -u -o pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

python=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --python) python=${2:-}; shift 2 ;;
    --python=*) python=${1#--python=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done

has_torch() {
  [ -n "$1" ] && command -v "$1" > /dev/null 2>&1 &&
    timeout 120 "$1" -c 'import torch' > /dev/null 2>&1
}

if [ -z "$python" ]; then
  for candidate in python3 /opt/torch/.venv/bin/python3 /usr/bin/python3 python; do
    if has_torch "$candidate"; then
      python=$(command -v "$candidate")
      break
    fi
  done
fi
if ! has_torch "$python"; then
  echo "check.sh: no Python with torch found (tried python3, /opt/torch/.venv/bin/python3," \
       "/usr/bin/python3; give --python)" >&2
  exit 2
fi

exec "$python" "$here/gpu_check.py" --python "$python" "${args[@]+"${args[@]}"}"
