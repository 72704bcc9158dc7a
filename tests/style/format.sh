#!/usr/bin/env bash
# Every C++ file of the repository is as clang-format (with .clang-format) would write it.
# Exits 1 and names the files that are not; `clang-format -i FILE` fixes one.
set -euo pipefail
cd "$(dirname "$0")/../.."
mapfile -t files < <(git ls-files '*.cc' '*.h' 2>/dev/null || find src bench -name '*.cc' -o -name '*.h')
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
for f in "${bad[@]}"; do echo "format: $f differs from clang-format's layout"; done
echo "format: ${#files[@]} files, ${#bad[@]} not formatted"
[ ${#bad[@]} -eq 0 ]
