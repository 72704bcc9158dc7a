#!/bin/bash
# neighbour_run.sh JOB NAME RANKS [ENV...]: the job's run.sh, with a noisy neighbour (two normal-priority
# compilers) from 3 s after its baseline session appears until the job ends (stop 67's batch P).
# OUT, EROICA and EROICA_PYTHON_DIR as for run.sh.
job=$1; name=$2; shift 2
D=$(cd "$(dirname "$0")" && pwd)
( "$D/$job/run.sh" "$name" "$@" ) &
jobpid=$!
for i in $(seq 1 600); do
  ls -d "$OUT/$name"/*baseline*/session.json > /dev/null 2>&1 && break
  kill -0 $jobpid 2> /dev/null || break
  sleep 1
done
sleep 3
date +%s.%N > "$OUT/$name.neighbour_start"
pids=()
for i in 1 2; do
  src="$D/../../../src"
  sh -c "while :; do g++ -O2 -std=c++20 -I$src -c $src/localize/global_analysis.cc -o /dev/null 2>/dev/null; done" &
  pids+=($!)
done
wait $jobpid
for p in "${pids[@]}"; do pkill -P $p; kill $p; done
date +%s.%N > "$OUT/$name.neighbour_stop"
