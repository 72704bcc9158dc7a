"""Start a run's ranks by forking them from one interpreter that imported torch once.

Why: a rank spends ~1.7 s of CPU importing torch (most of it loading libtorch), and a run's
four ranks did that at once on two cores: about 3.5 s of a 7 s run, before any training.
Forked after the import, each rank is still its own process running train.py's main() with its
own environment, session, log and process group; only the imported modules' memory is shared,
copy on write. Nothing is frozen (no gc.freeze): a rank's garbage collector walks the same heap
as a rank started by exec, so a GC fault costs what it would.

Protocol (launch.RankForker is the other side): stdin carries one JSON object
{"ranks": [{"rank": R, "argv": [...], "env": {...}, "log": PATH}, ...]}; stdout carries one
line `{"rank": R, "pid": P}` per rank once all are forked, then `{"pid": P, "code": C}` as
each one exits (C: its exit status, or minus the signal that ended it). The forker exits once
every rank has.
"""

import gc
import json
import os
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train  # noqa: E402  (imports torch, faults and the samplers: what every rank needs)
from launch import set_parent_death_signal  # noqa: E402


def run_rank(spec):
    """The child: becomes the rank (session, log, environment, argv) and never returns."""
    code = 1
    try:
        os.setsid()
        set_parent_death_signal()  # the forker's death ends the rank
        log = os.open(spec["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        os.environ.clear()
        os.environ.update(spec["env"])
        sys.argv = list(spec["argv"])
        # The first full collection writes into every tracked object's header: here, before
        # training, it copies the pages the forker's imports left shared, as they are private
        # to a rank started by exec from the beginning. Left to run by itself, it fell inside
        # the profiled window and cost 20-65 ms of one iteration on every rank (a "global
        # dataloader" finding on healthy runs).
        gc.collect()
        train.main()
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except BaseException:  # noqa: B036  (a rank's crash is its log's last lines, as under exec)
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)


def exit_code(status):
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def main():
    request = json.loads(sys.stdin.readline())
    started = {}
    for spec in request["ranks"]:
        pid = os.fork()
        if pid == 0:
            run_rank(spec)
        started[spec["rank"]] = pid
    for rank, pid in started.items():
        print(json.dumps({"rank": rank, "pid": pid}), flush=True)
    running = set(started.values())
    while running:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        running.discard(pid)
        print(json.dumps({"pid": pid, "code": exit_code(status)}), flush=True)


if __name__ == "__main__":
    main()
    # Every rank has exited and said so: skip the interpreter's teardown, which with torch
    # imported took over launch.KILL_GRACE_S on a loaded machine (the forker was killed, -9).
    sys.stdout.flush()
    os._exit(0)
