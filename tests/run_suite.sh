#!/usr/bin/env bash
# `make test` once the main (gcc) tree is built: its tests, with the sanitizer tree building
# beside them at the scheduler's idle priority, then that tree's unit tests and a short run of
# every fuzz target.
#
# Why beside: the main tree's tests are mostly real training jobs that run one at a time (the
# cpu_heavy lock) and wait on each other, their collectives and their sleeps, so they leave
# about a core of the two idle (python_online: 170 s of CPU in 227 s); the sanitizer tree's build
# (about 330 s of CPU) takes that idle time instead of a stretch of its own. SCHED_IDLE (nice 19
# where it is refused: tests/idle.sh) gives it only what the tests leave: a test's process that
# wakes takes the core back at once. The sanitized unit tests and the fuzzers run afterwards at the normal
# priority: some of them time themselves (deadlines, libFuzzer's 10 s per input), and an idle
# task can be starved for longer than that.
#   BUILD=build SAN_BUILD=build-san JOBS=2 FUZZ_TEST_SECONDS=12 MAKE=make tests/run_suite.sh
set -uo pipefail
: "${BUILD:?}" "${SAN_BUILD:?}" "${JOBS:?}" "${FUZZ_TEST_SECONDS:?}"
MAKE=${MAKE:-make}
cd "$(dirname "$0")/.."
mkdir -p "$SAN_BUILD"
log="$SAN_BUILD/build-beside-tests.log"

# An interrupted run leaves no compiler behind: the builder and everything under it.
kill_tree() {
  local child
  for child in $(pgrep -P "$1"); do kill_tree "$child"; done
  kill "$1" 2> /dev/null
}

tests/idle.sh "$MAKE" --no-print-directory build-san > "$log" 2>&1 &
builder=$!
trap 'kill_tree "$builder"' EXIT

started=$SECONDS
(cd "$BUILD" && ctest --output-on-failure -j "$JOBS" --timeout 900)
main=$?
echo "eroica: main tree's tests: exit $main in $((SECONDS - started)) s"

started=$SECONDS
wait "$builder"
built=$?
trap - EXIT
echo "eroica: sanitizer tree built beside them (tests/idle.sh): exit $built, waited $((SECONDS - started)) s more"
if [ "$built" -eq 0 ]; then tail -n 3 "$log"; else cat "$log"; fi

san="not run"
fuzz="not run"
if [ "$built" -eq 0 ]; then
  (cd "$SAN_BUILD" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure -j "$JOBS" -L unit --timeout 900)
  san=$?
  tests/fuzz/run_fuzzers.sh "$SAN_BUILD" "$FUZZ_TEST_SECONDS" "$JOBS"
  fuzz=$?
fi
echo "eroica: main tests exit $main, sanitizer build $built, sanitized unit tests $san, fuzzers $fuzz"
[ "$main" = 0 ] && [ "$built" = 0 ] && [ "$san" = 0 ] && [ "$fuzz" = 0 ]
