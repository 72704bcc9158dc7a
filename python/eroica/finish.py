"""Completing a session after the window, on background threads, and a bounded exit.

Every rank exports its trace and writes its meta file (or its "missed" meta). Rank 0 then
writes session.json, waits for every rank's files (until EROICA_COLLECT_TIMEOUT_S after it
began waiting) and runs the diagnosis. The threads run at nice 10.

With EROICA_LOCAL_DIR those files stay on the rank's node: the rank summarizes its trace there
(node_summary.py) and sends the pattern through the job store (exchange.py); rank 0 gathers
the patterns until EROICA_COLLECT_TIMEOUT_S, writes the central folder (central.py) and
diagnoses that once.

They are daemon threads: the process never waits for them by itself. At exit, `wait_at_exit`
gives them together at most EROICA_EXIT_WAIT_S (default 30 s). A rank 0 still collecting or
diagnosing then hands the rest to a detached process (`python -m eroica finish`, its own
session, nice 10, output in `<session>/finish.log`) and the job exits; any other unfinished
task is abandoned with one line saying where the data is and how to diagnose it.
"""

import enum
import json
import os
import socket
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import agent_link, capture, central, diagnose, exchange, log, node_summary, safe_fs
from . import trigger
from .config import Config

# A node's leader publishes its node's patterns by this share of EROICA_COLLECT_TIMEOUT_S, so
# that rank 0, waiting the whole of it, still receives the node's bundle.
_NODE_SHARE = 0.6
# How long before the exit's deadline a scale-out gather stops waiting (at most half the wait).
_HURRY_RESERVE_S = 5.0


class RankFile(enum.Enum):
    """The file each rank leaves for rank 0 to wait for."""
    META = "meta"  # rank-<r>.meta.json: after a profiling window
    STACKS = "stacks"  # stacks-rank-<r>.json: after a hang
    BUNDLE = "bundle"  # none: the patterns came through the store (EROICA_LOCAL_DIR)

    def path(self, session_dir: str, rank: int) -> str:
        if self is RankFile.META:
            return capture.meta_path(session_dir, rank)
        return os.path.join(session_dir, safe_fs.rank_name("stacks-rank-", rank, ".json"))


def spawn(target: Callable, *args) -> threading.Thread:
    def body():
        try:  # Linux: per-thread nice value
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        except (AttributeError, OSError):
            pass
        try:
            target(*args)
        except capture.SessionNotWritten:
            pass
        except Exception as e:
            log.once("finisher", "background task failed: %s: %s" % (type(e).__name__, e))

    thread = threading.Thread(target=body, name="eroica-finish", daemon=True)
    thread.start()
    return thread


class Finisher:
    """What one rank does once its window is over; rank 0 also gathers and diagnoses."""

    def __init__(self, cfg: Config, rank: int, world_size: int, coord: Optional[Any]):
        self.cfg = cfg
        self.rank = rank
        self.world_size = world_size
        self.coord = coord  # the trigger Coordinator, for the detecting rank's series
        self.session_dir = ""  # of the task, for the exit message
        # (session_dir, rank file, collect deadline in unix s) while rank 0 collects or
        # diagnoses: what a detached process needs to take over.
        self.collecting: Optional[Tuple[str, RankFile, float]] = None
        self.handed_off = threading.Event()
        # Set shortly before the exit's deadline: a scale-out gather stops waiting for the
        # ranks still missing and diagnoses what it has (it cannot be handed off: it needs the
        # job store, which often dies with the job).
        self.hurry = threading.Event()
        self.hurry_grace_s = 0.0  # set with it: the time left to the exit's deadline, less 1 s
        # Another rank gathers when the job store is gone at its exit: rank 0, which
        # usually hosts it, may be dead. A claim file keeps it to one gatherer.
        self.deputy = False

    def capture_done(self, cap: capture.Capture) -> None:
        self.session_dir = cap.session_dir
        cap.export()
        if self.cfg.local_dir:
            self._through_store(cap.session, cap.session_dir, "")
        elif self.rank == 0 or self.deputy:
            self._gather(cap.session, cap.session_dir, RankFile.META)

    def gather_as_deputy(self, session: Dict[str, Any], session_dir: str) -> None:
        self.session_dir = session_dir
        self._gather(session, session_dir, RankFile.META)

    def missed(self, session: Dict[str, Any], session_dir: str, why: str,
               detector: Dict[str, Any]) -> None:
        self.session_dir = session_dir
        capture.write_missed_meta(session, self.rank, self.world_size, session_dir, why,
                                  detector)
        if self.cfg.local_dir:  # rank 0 need not wait for this rank's pattern: it says why
            self._through_store(session, session_dir, "missed the window: %s" % why)
        elif self.rank == 0:  # rank 0 still gathers the others' traces and diagnoses
            self._gather(session, session_dir, RankFile.META)

    def hang_dumped(self, notice: Dict[str, Any], session_dir: str) -> None:
        self.session_dir = session_dir
        if self.cfg.local_dir:
            self._stacks_through_store(notice, session_dir)
        elif self.rank == 0:
            self._gather(notice, session_dir, RankFile.STACKS)

    def _gather(self, session: Dict[str, Any], session_dir: str, kind: RankFile) -> None:
        try:
            if not safe_fs.claim(session_dir, "diagnosis.claim"):
                return  # another rank gathers this session
        except OSError as e:
            log.info("rank %d: cannot diagnose %s: %s" % (self.rank, session_dir, e))
            return
        if self.rank != 0:
            log.info("rank %d diagnoses %s: the job store is gone (and rank 0 with it?)"
                     % (self.rank, session_dir))
        try:
            self.write_session_json(session, session_dir)
        except OSError as e:
            log.info("rank 0: no session.json in %s (%s); the ranks' files are still "
                     "gathered" % (session_dir, e))
        self.collecting = (session_dir, kind, time.time() + self.cfg.collect_timeout_s)
        try:
            collect_and_diagnose(self.cfg, session_dir, self.world_size, kind,
                                 self.collecting[2], self.handed_off)
        finally:
            if kind is RankFile.META:
                self._settle(session)

    def _through_store(self, session: Dict[str, Any], raw_dir: str, error: str) -> None:
        """Scale-out: summarize here, publish the pattern; rank 0 gathers, writes the central
        folder (central.py) and diagnoses it once."""
        pattern = None
        if not error:  # its own bound: a node's ranks queue for the summarizer
            pattern, error = node_summary.summarize(
                self.cfg, raw_dir, self.rank, time.monotonic() + self.cfg.diagnose_timeout_s)
        trace = capture.trace_path(raw_dir, self.rank)
        self._send(session, raw_dir, central.Evidence.PATTERNS, pattern, error,
                   trace if os.path.isfile(trace) else None)

    def _stacks_through_store(self, notice: Dict[str, Any], raw_dir: str) -> None:
        """Scale-out hang: this rank's stack dump (a few KB of JSON) goes the patterns' way."""
        path = RankFile.STACKS.path(raw_dir, self.rank)
        try:
            dump, error = safe_fs.read_small(path, central.MAX_STACKS_BYTES), ""
        except OSError as e:
            dump, error = None, "stack dump unreadable: %s" % e
        self._send(notice, raw_dir, central.Evidence.STACKS, dump, error, None)

    def _send(self, session: Dict[str, Any], raw_dir: str, evidence: "central.Evidence",
              payload: Optional[bytes], error: str, trace: Optional[str]) -> None:
        # The deadlines count from here, once this rank's own evidence is made.
        start = time.monotonic()
        deadline = start + self.cfg.collect_timeout_s
        node_deadline = start + _NODE_SHARE * self.cfg.collect_timeout_s
        header = {"rank": self.rank, "host": socket.gethostname(), "folder": raw_dir,
                  "trace": trace}
        if error:
            header["error"] = error
        coord = self.coord
        if coord is None:
            log.info("rank %d: no job store to send the %s of %s through; its raw files "
                     "are in %s" % (self.rank, evidence.value, session["session_id"], raw_dir))
            return
        ex = exchange.Exchange(coord.store, session["session_id"],
                               exchange.Topology.from_env(self.rank, self.world_size),
                               hurry=self.hurry, hurry_grace_s=self.hurry_grace_s)
        try:
            own_node = ex.publish((header, payload or b""), node_deadline)
            if self.rank != 0:
                log.debug("rank %d sent its %s of %s after %.2f s%s" % (
                    self.rank, evidence.value, session["session_id"], time.monotonic() - start,
                    " (hurried by the exit)" if self.hurry.is_set() else ""))
                return
            records, missing = ex.gather(own_node, deadline)
        except trigger.StoreUnavailable as e:
            log.info("rank %d: the %s of %s could not go through the job store (%s); "
                     "the raw files are in %s" % (self.rank, evidence.value,
                                                  session["session_id"], e, raw_dir))
            return
        central_dir = os.path.join(self.cfg.dir, safe_fs.component(session["session_id"]))
        series = coord.get_series(session["session_id"])
        try:
            note = central.write_folder(central_dir,
                                        capture.session_doc(session, self.world_size, series),
                                        records, missing, evidence)
        except OSError as e:
            log.info("rank 0: cannot write the session folder %s: %s" % (central_dir, e))
            if evidence is central.Evidence.PATTERNS:
                self._settle(session)
            return
        log.debug("gathered %d %s of %s, %d bytes from the store in %.2f s"
                  % (len(records), evidence.value, session["session_id"], ex.bytes_read,
                     time.monotonic() - start))
        self.session_dir = central_dir
        self.collecting = (central_dir, RankFile.BUNDLE, time.time())
        try:
            collect_and_diagnose(self.cfg, central_dir, self.world_size, RankFile.BUNDLE,
                                 time.time(), self.handed_off, note)
        finally:
            if evidence is central.Evidence.PATTERNS:
                self._settle(session)

    def _settle(self, session: Dict[str, Any]) -> None:
        """Tells every rank that the session's work is over. Each rank's detector leaves out
        the iterations until then (runtime.py): the gathering, the diagnosis and the other
        ranks' exports slow every rank of a shared node, not only the one doing them."""
        coord, slot = self.coord, session.get("slot")
        if coord is None or not isinstance(slot, int):
            return
        try:
            coord.sessions.settle(slot)
        except trigger.StoreUnavailable as e:
            log.debug("rank %d: session %s not settled in the job store: %s"
                      % (self.rank, session.get("session_id"), e))

    def write_session_json(self, session: Dict[str, Any], session_dir: str) -> None:
        coord = self.coord
        series = coord.get_series(session["session_id"]) if coord is not None else None
        safe_fs.ensure_session_dir(session_dir)
        safe_fs.write_json(os.path.join(session_dir, "session.json"),
                           capture.session_doc(session, self.world_size, series))


def collect_and_diagnose(cfg: Config, session_dir: str, world_size: int, kind: RankFile,
                         deadline_unix_s: float,
                         handed_off: Optional[threading.Event] = None,
                         gathered_note: str = "") -> Optional[str]:
    """Waits (until the deadline) for every rank's file, then diagnoses; returns the line, or
    None when a detached process took over meanwhile."""
    paths = ([] if kind is RankFile.BUNDLE
             else [kind.path(session_dir, r) for r in range(world_size)])
    wait_s = max(0.0, deadline_unix_s - time.time())
    missing = diagnose.wait_for_files(paths, wait_s, stop=handed_off)
    if handed_off is not None and handed_off.is_set():
        return None
    note = gathered_note
    if missing:
        note = "%d of %d rank files missing after %.0f s: %s" % (
            len(missing), len(paths), cfg.collect_timeout_s,
            ", ".join(os.path.basename(p) for p in missing[:4]))
    if kind is RankFile.META:
        why = _missed_by_every_rank(session_dir, world_size)
        if why:
            # Nothing was profiled: `eroica diagnose` would only fail on an empty folder.
            line = ("no window captured for %s: every rank missed it (%s); its detection is "
                    "kept in session.json — session: %s"
                    % (os.path.basename(session_dir), why, session_dir))
            log.info(line)
            return line
    if os.path.exists(os.path.join(session_dir, "capture.start")):
        agent_link.wait_for_metrics(session_dir, cfg.agent_wait_s)
    reason, job_id = diagnose.session_reason_and_job(session_dir)
    bundle = diagnose.baseline_bundle_path(session_dir, job_id)
    if reason == "baseline":
        # What the job looks like at its own best, not a slowdown: said as such, so that a
        # cost it always had is not read as a new problem.
        line = diagnose.run(session_dir, cfg.bin, cfg.diagnose_timeout_s, note,
                            prefix="baseline (no slowdown; how the job runs at its best): ")
        # A window in which a rank stood out from its peers is not the job at its best: it does
        # not replace a kept baseline. Every new baseline after the first is taken mid-run (the
        # job got faster, or its user asked), where a fault may already have begun: an unseen
        # 3-rank text job's second and third baselines (iterations 157 and 231) each held its
        # rank 1's slow tokenizer, begun at 150, which its peers named. The first is kept
        # whatever it shows: a job slow from its start has no better past.
        # Where it costs the job what the detector calls a slowdown (EROICA_THRESHOLD).
        unlike = (diagnose.ranks_unlike_their_peers(session_dir, cfg.threshold - 1.0)
                  if os.path.isfile(bundle) else "")
        if unlike:
            log.info("baseline not kept from %s: a rank stood out from its peers in it (%s); "
                     "the job's baseline stays %s" % (session_dir, unlike, bundle))
        else:
            diagnose.keep_baseline(session_dir, world_size, bundle, cfg.bin,
                                   cfg.diagnose_timeout_s)
        return line
    return diagnose.run(session_dir, cfg.bin, cfg.diagnose_timeout_s, note,
                        baseline=bundle if os.path.isfile(bundle) else "")


_MAX_META_BYTES = 1 << 20  # a rank's meta is a few hundred bytes


def _missed_by_every_rank(session_dir: str, world_size: int) -> str:
    """Why, when every rank's meta file says it missed the window (the job ended before its
    target iteration, another profiler was active, ...); "" when any rank took part, or a
    meta is missing or unreadable (then the folder is diagnosed as it is)."""
    reasons: List[str] = []
    for rank in range(world_size):
        try:
            doc = json.loads(safe_fs.read_small(RankFile.META.path(session_dir, rank),
                                                _MAX_META_BYTES).decode("utf-8"))
        except (OSError, ValueError):
            return ""
        why = doc.get("missed") if isinstance(doc, dict) else None
        if not isinstance(why, str) or not why:
            return ""
        if why not in reasons:
            reasons.append(why)
    return "; ".join(reasons[:3]) + ("; ..." if len(reasons) > 3 else "")


def wait_at_exit(tasks: List[Tuple[threading.Thread, Finisher]], deadline_s: float) -> None:
    """Joins the tasks until the monotonic `deadline_s`; hands off or abandons the rest.
    Scale-out gathers are hurried a little before it, so that they leave time to write the
    central folder and start its diagnosis (which can be handed off)."""
    reserve_s = min(_HURRY_RESERVE_S, max(0.0, deadline_s - time.monotonic()) / 2)
    for thread, _ in tasks:
        _no_longer_niced(thread)
    for thread, _ in tasks:
        thread.join(max(0.0, deadline_s - reserve_s - time.monotonic()))
    for _, fin in tasks:  # rank 0 keeps a second to write the folder and start diagnosing
        fin.hurry_grace_s = max(0.0, deadline_s - time.monotonic() - 1.0)
        fin.hurry.set()
    for thread, _ in tasks:
        thread.join(max(0.0, deadline_s - time.monotonic()))
    for thread, fin in tasks:
        if not thread.is_alive():
            continue
        job = fin.collecting
        if job is not None:
            fin.handed_off.set()
            _hand_off(fin, *job)
        else:
            log.info("exit: rank %d's files for %s were not complete after EROICA_EXIT_WAIT_S="
                     "%.0f s; what was written is kept; to diagnose: eroica diagnose %s"
                     % (fin.rank, fin.session_dir or fin.cfg.dir, fin.cfg.exit_wait_s,
                        fin.session_dir or "<session folder>"))


def _no_longer_niced(thread: threading.Thread) -> None:
    """The training loop is over once the exit waits: a task `spawn` niced to 10 so as not to take
    the job's cores need not yield them any more. On a node shared with other work a 6-rank
    forecaster's exports, niced beside two compilers, were not written within the 30 s the exit
    waits (stop 67's batch Q). It gets the exiting thread's own priority back (a job started
    niced stays so), never more. Lowering a nice value needs the privilege to (root or
    RLIMIT_NICE); without it the task stays niced."""
    tid = getattr(thread, "native_id", None)
    if tid is None or not thread.is_alive():
        return
    try:
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, 0))  # 0: this thread
    except (AttributeError, OSError):
        pass


def _hand_off(fin: Finisher, session_dir: str, kind: RankFile, deadline_unix_s: float) -> None:
    cmd = [sys.executable, "-m", "eroica", "finish", session_dir, "--world-size",
           str(fin.world_size), "--files", kind.value, "--until", "%.3f" % deadline_unix_s]
    out = subprocess.DEVNULL
    try:
        out, _ = safe_fs.create_new(session_dir, "finish.log")
    except OSError:
        pass
    try:
        child = subprocess.Popen(cmd, env=_detached_env(), stdin=subprocess.DEVNULL,
                                 stdout=out, stderr=out, start_new_session=True,
                                 close_fds=True)
        log.info("exit: the diagnosis of %s goes on in the background (pid %d, nice 10); "
                 "its line: %s, the report: %s" % (session_dir, child.pid,
                                                   os.path.join(session_dir, "finish.log"),
                                                   os.path.join(session_dir, "report.json")))
    except OSError as e:
        log.info("exit: the diagnosis of %s was cut short (%s); its data is kept; to "
                 "diagnose: eroica diagnose %s" % (session_dir, e, session_dir))
    finally:
        if out is not subprocess.DEVNULL:
            out.close()


def _detached_env() -> Dict[str, str]:
    """Our package importable, our boot hooks out: the finisher is no training process."""
    from . import runner

    env = dict(os.environ)
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
             if p and p != runner.BOOT_DIR]
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(runner.PACKAGE_DIR)] + parts)
    env["EROICA_DISABLE"] = "1"
    return env


def finish_main(session_dir: str, world_size: int, kind: str, deadline_unix_s: float) -> int:
    """`python -m eroica finish`: the detached rest of rank 0's gathering."""
    from . import config

    try:
        os.setpriority(os.PRIO_PROCESS, 0, 10)
    except OSError:
        pass
    cfg = config.load()
    safe_fs.set_group_shared(cfg.group_shared)
    line = collect_and_diagnose(cfg, session_dir, world_size, RankFile(kind), deadline_unix_s)
    return 0 if line and "report:" in line else 1
