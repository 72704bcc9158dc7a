#!/usr/bin/env bash
# Every C++ file of the repository is as clang-format (with .clang-format) would write it.
# Exits 1 and names the files that are not; `clang-format -i FILE` fixes one.
# One clang-format for all files: one process per file took 26 s here, most of it starting them.
set -euo pipefail
cd "$(dirname "$0")/../.."
mapfile -t files < <(git ls-files '*.cc' '*.h' 2>/dev/null || find src bench -name '*.cc' -o -name '*.h')
status=0
report=$(clang-format --dry-run --Werror --ferror-limit=1 "${files[@]}" 2>&1) || status=$?
# Each file that differs gets one "FILE:LINE:COL: error: code should be clang-formatted".
mapfile -t bad < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' \
  <<< "$report" | sort -u)
for f in "${bad[@]}"; do echo "format: $f differs from clang-format's layout"; done
if [ "$status" -ne 0 ] && [ ${#bad[@]} -eq 0 ]; then
  echo "format: clang-format failed: $report" | head -5
  exit 1
fi
echo "format: ${#files[@]} files, ${#bad[@]} not formatted"
[ ${#bad[@]} -eq 0 ]
