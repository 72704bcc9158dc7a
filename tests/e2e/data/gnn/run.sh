#!/bin/bash
# run.sh NAME NPROC [env...]: the job under eroica run, a session forced at EROICA_TRIGGER_AT (180 unless given)
# (made in /tmp/novel17 with a copy of the stop's eroica; OUT and EROICA say where here)
name=$1; n=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd); out=${OUT:-/tmp/novel17}
rm -rf "$out/$name"; mkdir -p "$out/$name"
env EROICA_TRIGGER_AT=180 STEPS=200 "$@" ${EROICA:-eroica} run --dir "$out/$name" -- /usr/bin/python3 "$here/../launch.py" "$n" "$here/train_gnn.py" > "$out/$name.log" 2>&1
echo "exit $?" >> "$out/$name.log"
grep "^eroica:\|^step\|Error" "$out/$name.log" | cut -c1-400
