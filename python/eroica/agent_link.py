"""Tells the node agent (`eroica agent --dir EROICA_DIR`, a sidecar sharing the folder) which
processes to watch and when a capture session runs, through files only (agent README):
  EROICA_DIR/procs/<pid>.json       {"pid", "rank", "session_dir": null, "host"}
  <session>/capture.start           {"start_unix_ns", "duration_s"}
The agent promises each session it sees start its samples (metrics-<host>.eroica-metrics.due), then
writes metrics-<host>.eroica-metrics into the session folder, and diagnose turns it into each
function's μ and σ. Without an agent these files are simply never read.
Every function here is best effort: it never raises. The capture files are written on the
training thread, so without fsync: the agent reads them on this host, where a rename is
visible at once; durability across a crash does not matter for them."""

import glob
import json
import os
import socket
import time

from . import log, safe_fs


def register_process(eroica_dir, rank):
    try:
        procs = safe_fs.ensure_dir(safe_fs.ensure_root(eroica_dir), "procs")
        safe_fs.write_json(os.path.join(procs, "%d.json" % os.getpid()),
                      {"pid": os.getpid(), "rank": rank, "session_dir": None,
                       "host": socket.gethostname()})
    except Exception as e:
        log.once("agent-register", "cannot register with the node agent: %s" % e)


def announce_stop(session_dir, stop_unix_ns):
    """Ends the agent's session early: it writes the samples about a second later."""
    try:
        path = os.path.join(session_dir, "capture.stop")
        if not os.path.exists(path):
            safe_fs.write_json(path, {"stop_unix_ns": int(stop_unix_ns)}, sync=False)
    except Exception as e:
        log.once("agent-stop", "cannot tell the node agent the capture ended: %s" % e)


# A node agent scans for new sessions once a second and promises each one it starts its file on
# that scan (metrics-<host>.eroica-metrics.due, {"host", "due_unix_ns"}); this long after the
# capture started, a session without a promise has no agent's samples coming.
AGENT_SCAN_S = 1.5
PROMISE_SUFFIX = ".due"


def _due_unix_s(promise_path, fallback_s):
    try:
        doc = json.loads(safe_fs.read_small(promise_path, 4096))
        return float(doc["due_unix_ns"]) / 1e9
    except Exception:
        return fallback_s


def wait_for_metrics(session_dir, timeout_s):
    """Gives every node agent that promised the session its samples until they are due plus
    `timeout_s` (outside the training loop); with no promise once an agent's scan of the
    capture's start has passed, no agent took samples and nothing is waited for. Returns the
    metrics files found."""
    called_s = time.time()
    try:
        promise_by_s = os.stat(os.path.join(session_dir, "capture.start")).st_mtime + AGENT_SCAN_S
    except OSError:
        promise_by_s = called_s
    # A promise is due at the window's end + 1 s, and the window has ended when this is called:
    # a later due time (a clock step, a planted file) waits no longer than this.
    latest_s = called_s + max(0.0, timeout_s) + 1.0
    while True:
        found = glob.glob(os.path.join(session_dir, "*.eroica-metrics"))
        promises = glob.glob(os.path.join(session_dir, "*.eroica-metrics" + PROMISE_SUFFIX))
        pending = [p for p in promises if p[:-len(PROMISE_SUFFIX)] not in found]
        now_s = time.time()
        if found and not pending:  # every promise kept, or a file written without one
            return found
        if pending:
            due_s = max(_due_unix_s(p, called_s) for p in pending)
            if now_s >= min(due_s + max(0.0, timeout_s), latest_s):
                return found
        elif now_s >= min(promise_by_s, latest_s):
            return found
        time.sleep(0.1)


def announce_capture(session_dir, start_unix_ns, duration_s):
    """The first rank on a host to start profiling announces the session; the others find it."""
    try:
        path = os.path.join(session_dir, "capture.start")
        if not os.path.exists(path):
            safe_fs.write_json(path, {"start_unix_ns": int(start_unix_ns),
                                      "duration_s": float(duration_s)}, sync=False)
    except Exception as e:
        log.once("agent-announce", "cannot announce the capture to the node agent: %s" % e)
