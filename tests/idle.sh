#!/bin/sh
# Runs its arguments at the scheduler's idle priority (SCHED_IDLE: only the CPU time nothing
# else wants), or at nice 19 where that is refused: work with no timing of its own beside
# the real training runs of `make test`.
#   tests/idle.sh COMMAND [ARGS...]
if chrt --idle 0 true 2> /dev/null; then
  exec chrt --idle 0 "$@"
fi
exec nice -n 19 "$@"
