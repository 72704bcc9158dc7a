#!/bin/bash
# run.sh NAME NPROC [env...]: the job under eroica run, a session forced at EROICA_TRIGGER_AT (200 unless given)
# (made in /tmp/novel10 with /work/main/build/eroica; OUT and EROICA say where here)
exec "$(dirname "$0")/../run_job.sh" "$(cd "$(dirname "$0")" && pwd)/train_rec.py" /tmp/novel10 EROICA_TRIGGER_AT=200 -- "$@"
