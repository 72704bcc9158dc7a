"""Tells the node agent (`eroica agent --dir EROICA_DIR`, a sidecar sharing the folder) which
processes to watch and when a capture session runs, through files only (agent README):
  EROICA_DIR/procs/<pid>.json       {"pid", "rank", "session_dir": null, "host"}
  <session>/capture.start           {"start_unix_ns", "duration_s"}
The agent then writes metrics-<host>.eroica-metrics into the session folder, and diagnose turns
it into each function's μ and σ. Without an agent these files are simply never read.
Every function here is best effort: it never raises. The capture files are written on the
training thread, so without fsync: the agent reads them on this host, where a rename is
visible at once; durability across a crash does not matter for them."""

import os
import socket

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


def wait_for_metrics(session_dir, timeout_s):
    """Gives a node agent, if one runs, up to `timeout_s` to write its samples before diagnose
    reads the session (outside the training loop). Returns the metrics files found."""
    import glob
    import time
    deadline = time.monotonic() + max(0.0, timeout_s)
    while True:
        found = glob.glob(os.path.join(session_dir, "*.eroica-metrics"))
        if found or time.monotonic() >= deadline:
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
