"""Hang evidence: every thread's Python stack, as JSON, and a GIL-stall fallback.

`stacks-rank-<r>.json` = {"rank", "world_size", "iteration", "threads": [{"thread_id",
"name", "is_main", "frames": [{"file", "line", "function", "code"}]}], "waiting_in"}.
Frames are outermost first, innermost last. `waiting_in` names the collective the main
thread is blocked in: the function of its innermost frame inside torch/distributed, or null.
"""

import faulthandler
import os
import sys
import threading
import time
import traceback
from typing import Any, Dict, List, Optional

from . import log, safe_fs

_DISTRIBUTED_MARK = os.sep.join(("torch", "distributed", ""))


def thread_stacks(skip_thread_id: Optional[int] = None) -> List[Dict[str, Any]]:
    names = {t.ident: t.name for t in threading.enumerate()}
    main_id = threading.main_thread().ident
    threads = []
    for thread_id, frame in sys._current_frames().items():
        if thread_id == skip_thread_id:
            continue
        frames = [{"file": f.filename, "line": f.lineno, "function": f.name,
                   "code": f.line or ""} for f in traceback.extract_stack(frame)]
        threads.append({"thread_id": thread_id, "name": names.get(thread_id, "?"),
                        "is_main": thread_id == main_id, "frames": frames})
    threads.sort(key=lambda t: (not t["is_main"], t["thread_id"]))
    return threads


def waiting_in(frames: List[Dict[str, Any]]) -> Optional[str]:
    """The innermost frame inside torch.distributed: the collective we are blocked in."""
    for frame in reversed(frames):
        if _DISTRIBUTED_MARK in frame["file"]:
            return frame["function"]
    return None


def dump_stacks(path: str, rank: int, world_size: int, iteration: int) -> Dict[str, Any]:
    """Writes this process's stacks (without the calling thread) to `path`, atomically."""
    threads = thread_stacks(skip_thread_id=threading.get_ident())
    main = next((t for t in threads if t["is_main"]), None)
    doc = {"rank": rank, "world_size": world_size, "iteration": iteration,
           "pid": os.getpid(), "unix_ns": time.time_ns(), "threads": threads,
           "waiting_in": waiting_in(main["frames"]) if main else None}
    safe_fs.write_json(path, doc)
    return doc


class GilStallWatchdog:
    """Fallback for a hang that holds the GIL (our monitor thread cannot run then).

    Re-armed on every monitor tick; if no tick happens for `timeout_s`, faulthandler's C thread
    writes every thread's traceback to `<dir>/faulthandler-<host>-<pid>.txt`. Opt-in because
    faulthandler has one process-wide timer that user code might use too.
    """

    def __init__(self, directory: str, host: str):
        self._directory = directory
        self._host = host
        self._file = None
        self._failed = False

    def rearm(self, timeout_s: float) -> None:
        if self._file is None:
            if self._failed:
                return
            try:
                safe_fs.ensure_root(self._directory)
                name = "faulthandler-%s-%d.txt" % (safe_fs.component(self._host), os.getpid())
                self._file, _ = safe_fs.create_new(self._directory, name)
            except OSError as e:
                self._failed = True
                log.info("no GIL-stall watchdog: %s" % e)
                return
        faulthandler.dump_traceback_later(timeout_s, repeat=False, file=self._file, exit=False)

    def cancel(self) -> None:
        if self._file is not None:
            faulthandler.cancel_dump_traceback_later()
