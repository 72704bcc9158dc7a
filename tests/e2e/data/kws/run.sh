#!/bin/bash
# run.sh NAME NPROC [env...]: the job under eroica run, a session forced at EROICA_TRIGGER_AT (150 unless given)
# (made in /tmp/novel9 with /work/main/build/eroica; OUT and EROICA say where here)
exec "$(dirname "$0")/../run_job.sh" "$(cd "$(dirname "$0")" && pwd)/train_kws.py" /tmp/novel9 EROICA_TRIGGER_AT=150 -- "$@"
