"""Rank 0, after a session: wait for every rank's files, run `eroica diagnose`, say one line.

The binary is found by `binary.find_binary` (EROICA_BIN when set, else PATH, else beside the package).
It runs at low priority (`nice -n 10`) so it does not compete with training.
Outputs: `report.txt` and `report.json` in the session folder, from one diagnosis
(`--format text --json-out report.json`). A missing binary or a failed run is one line on stderr, never an exception.
"""

import json
import os
import shutil
import subprocess
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from . import log, safe_fs
from .binary import find_binary

_MAX_REPORT_BYTES = 1 << 30  # a million workers' diagnosis is far below it


def wait_for_files(paths: List[str], timeout_s: float, poll_s: float = 0.2,
                   stop: Optional[threading.Event] = None) -> List[str]:
    """Waits until every path exists, the timeout passes or `stop` is set; returns the
    missing ones."""
    deadline = time.monotonic() + timeout_s
    stop = stop or threading.Event()
    missing = [p for p in paths if not os.path.exists(p)]
    while missing and time.monotonic() < deadline and not stop.is_set():
        stop.wait(min(poll_s, max(0.0, deadline - time.monotonic())))
        missing = [p for p in missing if not os.path.exists(p)]
    return missing


def first_finding(doc: Dict[str, Any]) -> str:
    findings = doc.get("findings") or []
    if doc.get("healthy") or not findings:
        slowed_by = doc.get("slowed_by")  # something outside the job made it slower
        if isinstance(slowed_by, str) and slowed_by:
            return "healthy in the job, but slower: %s" % slowed_by[:300]
        return "healthy"
    f = findings[0]
    workers = f.get("workers") or []
    shown = ",".join(str(w) for w in workers[:8]) + (",..." if len(workers) > 8 else "")
    text = "%s %s" % (f.get("scope", "?"), f.get("category", "?"))
    if shown:
        text += " on rank %s" % shown
    if f.get("function"):
        text += ": %s" % f["function"]
    if isinstance(f.get("impact_s_per_iter"), (int, float)):
        text += " (%.3f s/iter)" % f["impact_s_per_iter"]
    if f.get("location"):
        text += " at %s" % f["location"]
    if f.get("standing") is True:  # the baseline had it too (eroica diagnose --baseline)
        text += " (as at the baseline)"
    return text


def ranks_unlike_their_peers(session_dir: str, min_share: float) -> str:
    """The first local finding of the session's report (`first_finding`'s words) that costs at
    least `min_share` of the job's step (session.json's pace before the window; any cost where it
    is not given), "" where it has none or none could be read. Such a finding is a rank unlike its
    peers: a window that holds one is not how the job runs at its best. A smaller one is not: a
    4-rank CI job's second baseline named 1 ms of a 29 ms step on a rank's other threads, and was
    refused for it."""
    try:
        doc = json.loads(safe_fs.read_small(os.path.join(session_dir, "report.json"),
                                            _MAX_REPORT_BYTES).decode("utf-8"))
    except (OSError, ValueError):
        return ""
    if not isinstance(doc, dict) or doc.get("healthy"):
        return ""
    session = _session_doc(session_dir)
    try:
        pace_s = float(session.get("current_mean_s") or session.get("best_mean_s") or 0.0)
    except (TypeError, ValueError):
        pace_s = 0.0
    for f in doc.get("findings") or []:
        if not isinstance(f, dict) or f.get("scope") != "local":
            continue
        impact = f.get("impact_s_per_iter")
        if pace_s > 0 and isinstance(impact, (int, float)) and impact < min_share * pace_s:
            continue
        return first_finding({"findings": [f]})
    return ""


def _niced(cmd: List[str]) -> List[str]:
    nice = shutil.which("nice")
    return [nice, "-n", "10"] + cmd if nice else cmd


def _command(binary: str, session_dir: str, report_json: str, baseline: str = "") -> List[str]:
    # One diagnosis gives both documents: the text on stdout, the JSON into report.json.
    cmd = [binary, "diagnose", session_dir, "--format", "text", "--json-out", report_json]
    if baseline:
        cmd += ["--baseline", baseline]
    return _niced(cmd)


def _session_doc(session_dir: str) -> Dict[str, Any]:
    """The session's session.json as an object ({} when unreadable): a regular file of at most
    1 MiB, never through a link or a FIFO someone planted."""
    try:
        doc = json.loads(safe_fs.read_small(os.path.join(session_dir, "session.json"), 1 << 20)
                         .decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def session_reason_and_job(session_dir: str) -> Tuple[str, str]:
    """The session's reason and job id from its session.json ("" when unreadable)."""
    doc = _session_doc(session_dir)
    return str(doc.get("reason", "")), str(doc.get("job_id", ""))


def baseline_bundle_path(session_dir: str, job_id: str) -> str:
    """The job's baseline bundle, beside its sessions in the central folder."""
    name = safe_fs.component((job_id or "job") + ".baseline.pattern")
    return os.path.join(os.path.dirname(os.path.abspath(session_dir)), name)


def keep_baseline(session_dir: str, world_size: int, bundle: str, configured_bin: str,
                  timeout_s: float) -> bool:
    """Summarizes the baseline session's traces into one pattern bundle (a few KB per rank)
    and keeps it as the job's baseline; one line either way."""
    from . import central  # the scale-out session: its bundle is the baseline already

    gathered = os.path.join(session_dir, central.BUNDLE_NAME)
    if os.path.isfile(gathered):
        try:
            safe_fs.write_atomic(bundle, safe_fs.read_small(gathered, 1 << 30))
        except OSError as e:
            log.info("no baseline kept from %s: %s" % (session_dir, e))
            return False
        log.info("baseline kept: %s" % bundle)
        return True
    binary = find_binary(configured_bin)
    traces = [p for p in (os.path.join(session_dir, "rank-%d.json.gz" % r) for r in range(world_size))
              if os.path.isfile(p)]
    if binary is None or not traces:
        log.info("no baseline kept from %s: %s" % (
            session_dir, "no eroica binary" if binary is None else "no traces"))
        return False
    scratch = os.path.join(session_dir, "baseline.pattern")
    try:
        done = subprocess.run(_niced([binary, "summarize", *traces, "-o", scratch]),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              timeout=timeout_s, check=False)
        if done.returncode != 0:
            raise OSError(done.stderr.decode("utf-8", "replace").strip()[-200:])
        with open(scratch, "rb") as f:
            safe_fs.write_atomic(bundle, f.read())
    except (OSError, subprocess.TimeoutExpired) as e:
        log.info("no baseline kept from %s: %s" % (session_dir, e))
        return False
    finally:
        # Left in the folder, the bundle's copy was read as 4 more workers by `eroica diagnose
        # <session>` ("rank(s) 0-3 appear in more than one file").
        try:
            os.unlink(scratch)
        except OSError:
            pass
    log.info("baseline of %d ranks kept: %s" % (len(traces), bundle))
    return True


def run(session_dir: str, configured_bin: str, timeout_s: float, note: str = "",
        baseline: str = "", prefix: str = "") -> str:
    """Diagnoses the session folder (against the job's baseline bundle when given); returns
    (and logs) the one-line verdict.

    `note` (e.g. which ranks' files are missing) is appended to that same line, `prefix` put
    before it (a baseline's verdict is what the job is like, not a slowdown).
    """
    line = prefix + _run(session_dir, configured_bin, timeout_s, baseline)
    if note:
        line += " (%s)" % note
    log.info(line)
    return line


def _run(session_dir: str, configured_bin: str, timeout_s: float, baseline: str = "") -> str:
    binary = find_binary(configured_bin)
    if binary is None:
        why = ("EROICA_BIN=%s is not an executable file" % configured_bin if configured_bin
               else "no eroica binary (set EROICA_BIN)")
        return "session captured in %s; diagnose skipped: %s" % (session_dir, why)
    report_json = os.path.join(session_dir, "report.json")
    try:
        done = subprocess.run(_command(binary, session_dir, report_json, baseline),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout_s, check=False)
        if done.returncode != 0:
            err = done.stderr.decode("utf-8", "replace").strip().splitlines()
            return "diagnose failed (exit %d): %s — session: %s" % (
                done.returncode, err[-1] if err else "no message", session_dir)
        safe_fs.write_atomic(os.path.join(session_dir, "report.txt"), done.stdout)
        doc = json.loads(safe_fs.read_small(report_json, _MAX_REPORT_BYTES).decode("utf-8"))
        verdict = first_finding(doc)
    except subprocess.TimeoutExpired:
        return "diagnose timed out after %.0f s — session: %s" % (timeout_s, session_dir)
    except (OSError, ValueError) as e:
        return "diagnose failed (%s: %s) — session: %s" % (type(e).__name__, e, session_dir)
    return "%s — report: %s" % (verdict, report_json)
