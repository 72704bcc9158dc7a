#!/bin/bash
# run.sh NAME NPROC [env...]: the job under eroica run, a session forced at EROICA_TRIGGER_AT (720 unless given:
# eroica counts optimizer steps, four a step here, so step 180)
# (made in /tmp/novel21 with a copy of the stop's eroica; OUT and EROICA say where here)
exec "$(dirname "$0")/../run_job.sh" "$(cd "$(dirname "$0")" && pwd)/train_rl.py" /tmp/novel21 EROICA_TRIGGER_AT=720 STEPS=200 -- "$@"
