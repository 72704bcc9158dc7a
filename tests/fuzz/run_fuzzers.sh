#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD/fuzz for SECONDS each, JOBS at a time, from its seeds in
# tests/fuzz/corpus/<target> (new inputs go to BUILD/fuzz-corpus/<target>, the seeds stay as
# they are). A crash, leak, timeout (10 s per input) or 2 GB of RSS fails the run; the
# reproducer is left in BUILD/fuzz-artifacts/. One summary line per target: seconds, execs,
# corpus size.
#   tests/fuzz/run_fuzzers.sh BUILD SECONDS [JOBS]
set -uo pipefail
build=${1:?build dir}
seconds=${2:?seconds per target}
jobs=${3:-2}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$build/fuzz-artifacts" "$build/fuzz-logs"
targets=$(ls "$here/corpus")

run_one() {
  local target=$1 build=$2 seconds=$3 here=$4
  local corpus="$build/fuzz-corpus/$target" log="$build/fuzz-logs/$target.log"
  mkdir -p "$corpus"
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/$target-" \
    "$corpus" "$here/corpus/$target" > "$log" 2>&1
  local rc=$?
  local execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  local units=$(ls "$corpus" | wc -l)
  if [ $rc -eq 0 ]; then
    echo "fuzz $target: ${seconds}s, ${execs:-?} execs, corpus $units, nothing found"
  else
    echo "fuzz $target: FAILED (exit $rc) after ${execs:-?} execs; see $log"
    grep -m3 -E 'ERROR|SUMMARY|runtime error' "$log" | sed 's/^/  /'
  fi
  return $rc
}
export -f run_one

status=0
printf '%s\n' $targets | xargs -P "$jobs" -I{} bash -c 'run_one "$@"' _ {} "$build" "$seconds" "$here" || status=1
exit $status
