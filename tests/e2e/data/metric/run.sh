#!/bin/bash
# run.sh NAME NPROC [env...]: the job under eroica run, a session forced at EROICA_TRIGGER_AT (180 unless given)
# (made in /tmp/novelT with a copy of the stop's eroica; OUT and EROICA say where here)
exec "$(dirname "$0")/../run_job.sh" "$(cd "$(dirname "$0")" && pwd)/train_metric.py" /tmp/novelT EROICA_TRIGGER_AT=180 STEPS=240 -- "$@"
