"""Completing a session after the window, on background threads.

Every rank exports its trace and writes its meta file (or its "missed" meta). Rank 0 then
writes session.json, waits for every rank's files (bounded by EROICA_COLLECT_TIMEOUT_S) and
runs the diagnosis. The threads are non-daemon, so a job that ends right after a session
still leaves complete files, and they run at nice 10.
"""

import os
import threading
from typing import Any, Callable, Dict, List, Optional

from . import agent_link, capture, diagnose, log
from .config import Config


def spawn(target: Callable, *args) -> threading.Thread:
    def body():
        try:  # Linux: per-thread nice value
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        except (AttributeError, OSError):
            pass
        try:
            target(*args)
        except Exception as e:
            log.once("finisher", "background task failed: %s: %s" % (type(e).__name__, e))

    thread = threading.Thread(target=body, name="eroica-finish", daemon=False)
    thread.start()
    return thread


class Finisher:
    """What one rank does once its window is over; rank 0 also gathers and diagnoses."""

    def __init__(self, cfg: Config, rank: int, world_size: int, coord: Optional[Any]):
        self.cfg = cfg
        self.rank = rank
        self.world_size = world_size
        self.coord = coord  # the trigger Coordinator, for the detecting rank's series

    def capture_done(self, cap: capture.Capture) -> None:
        cap.export()
        if self.rank == 0:
            self._gather(cap.session, cap.session_dir, capture.meta_path)

    def missed(self, session: Dict[str, Any], session_dir: str, why: str,
               detector: Dict[str, Any]) -> None:
        capture.write_missed_meta(session, self.rank, self.world_size, session_dir, why,
                                  detector)
        if self.rank == 0:  # rank 0 still gathers the others' traces and diagnoses
            self._gather(session, session_dir, capture.meta_path)

    def hang_dumped(self, notice: Dict[str, Any], session_dir: str) -> None:
        if self.rank == 0:
            self._gather(notice, session_dir, lambda d, r: os.path.join(
                d, "stacks-rank-%d.json" % r))

    def _gather(self, session: Dict[str, Any], session_dir: str,
                rank_file: Callable[[str, int], str]) -> None:
        self.write_session_json(session, session_dir)
        paths = [rank_file(session_dir, r) for r in range(self.world_size)]
        self.collect_and_diagnose(session_dir, paths)

    def write_session_json(self, session: Dict[str, Any], session_dir: str) -> None:
        coord = self.coord
        series = coord.get_series(session["session_id"]) if coord is not None else None
        os.makedirs(session_dir, exist_ok=True)
        capture.write_json_atomic(os.path.join(session_dir, "session.json"),
                                  capture.session_doc(session, self.world_size, series))

    def collect_and_diagnose(self, session_dir: str, paths: List[str]) -> None:
        missing = diagnose.wait_for_files(paths, self.cfg.collect_timeout_s)
        note = ""
        if missing:
            note = "%d of %d rank files missing after %.0f s: %s" % (
                len(missing), len(paths), self.cfg.collect_timeout_s,
                ", ".join(os.path.basename(p) for p in missing[:4]))
        if os.path.exists(os.path.join(session_dir, "capture.start")):
            agent_link.wait_for_metrics(session_dir, self.cfg.agent_wait_s)
        diagnose.run(session_dir, self.cfg.bin, self.cfg.diagnose_timeout_s, note)
