#!/bin/bash
# run_job.sh SCRIPT DEFAULT_OUT [VAR=VALUE...] -- NAME NPROC [VAR=VALUE...]: one run of an unseen
# job (each folder's run.sh names its script, its output folder and its defaults) under
# `eroica run`, NPROC ranks through launch.py, into $OUT/NAME (OUT unless set: DEFAULT_OUT) with
# its log beside it as NAME.log; the caller's VAR=VALUE after NAME NPROC override the defaults.
# EROICA: the binary (else eroica on PATH).
here=$(cd "$(dirname "$0")" && pwd)
script=$1; out=${OUT:-$2}; shift 2
defaults=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do defaults+=("$1"); shift; done
shift
name=$1; n=$2; shift 2
rm -rf "$out/$name"; mkdir -p "$out/$name"
# The run's settings beside its log (NAME.env): the scorer reads its fault's onset (FROM) there.
printf '%s\n' "${defaults[@]}" "$@" > "$out/$name.env"
env "${defaults[@]}" OUT="$out" "$@" ${EROICA:-eroica} run --dir "$out/$name" -- /usr/bin/python3 "$here/launch.py" "$n" "$script" > "$out/$name.log" 2>&1
echo "exit $?" >> "$out/$name.log"
grep "^eroica:\|^step\|Error" "$out/$name.log" | cut -c1-400
