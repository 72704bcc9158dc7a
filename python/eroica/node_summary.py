"""Summarizing a rank's trace on its own node, at low priority and under a node-wide cap.

`eroica summarize -j 1` turns the rank's raw trace (with its stack samples, meta file and the
node agent's samples beside it) into its pattern file, `rank-<r>.pattern`, in the same
node-local session folder. It runs at nice 10 with one reader thread (a gzip above 256 MB adds
one zlib helper thread) and an address-space limit of EROICA_SUMMARIZE_MEM_MB. The ranks of a
node take turns: each holds an `flock` on `EROICA_LOCAL_DIR/summarize.lock` while it
summarizes, so the node never has more than one summarizer, and never more than one cap of
memory, whatever its number of ranks. The retention of the local folder is applied under the
same lock, once the pattern is written.
"""

import fcntl
import os
import subprocess
import sys
import time
from typing import Optional, Tuple

from . import agent_link, capture, retention, safe_fs
from .binary import find_binary
from .config import Config

LOCK_NAME = "summarize.lock"
MAX_PATTERN_BYTES = 4 << 20

# Sets the limits, then becomes the summarizer: no preexec_fn (unsafe in a threaded process).
_LIMITED = ("import os, resource, sys\n"
            "os.nice(10)\n"
            "cap = int(sys.argv[1])\n"
            "resource.setrlimit(resource.RLIMIT_AS, (cap, cap))\n"
            "os.execv(sys.argv[2], sys.argv[2:])\n")


def pattern_path(session_dir: str, rank: int) -> str:
    return os.path.join(session_dir, safe_fs.rank_name("rank-", rank, ".pattern"))


def _lock(root: str, deadline: float) -> int:
    fd = safe_fs.open_lock(root, LOCK_NAME)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise TimeoutError("the node's summarizer lock (%s) stayed busy"
                                   % os.path.join(root, LOCK_NAME))
            time.sleep(0.05)


def summarize(cfg: Config, session_dir: str, rank: int,
              deadline: float) -> Tuple[Optional[bytes], str]:
    """The rank's pattern file bytes, or (None, why). Waits for the node's turn until
    `deadline` (time.monotonic)."""
    binary = find_binary(cfg.bin)
    if binary is None:
        return None, "no eroica binary on this node (set EROICA_BIN)"
    trace = capture.trace_path(session_dir, rank)
    if not os.path.isfile(trace):
        return None, "no trace (the window's export failed)"
    if os.path.exists(os.path.join(session_dir, "capture.start")):
        agent_link.wait_for_metrics(session_dir, cfg.agent_wait_s)
    out = pattern_path(session_dir, rank)
    root = os.path.dirname(os.path.abspath(session_dir))
    try:
        fd = _lock(root, deadline)
    except (OSError, TimeoutError) as e:
        return None, str(e)
    try:
        cap = cfg.summarize_mem_mb << 20
        cmd = [sys.executable, "-c", _LIMITED, str(cap), binary, "summarize", "-j", "1",
               trace, "-o", out]
        timeout_s = max(1.0, min(cfg.diagnose_timeout_s, deadline - time.monotonic()))
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=timeout_s, check=False)
        if done.returncode not in (0, 2) or not os.path.isfile(out):  # 2: with warnings
            err = done.stderr.decode("utf-8", "replace").strip().splitlines()
            return None, "summarize failed (exit %d): %s" % (
                done.returncode, err[-1][:200] if err else "no message")
        pattern = safe_fs.read_small(out, MAX_PATTERN_BYTES)
        retention.prune(root, cfg.local_keep_sessions, cfg.local_keep_mb << 20,
                        os.path.basename(os.path.normpath(session_dir)))
        return pattern, ""
    except subprocess.TimeoutExpired:
        return None, "summarize timed out"
    except OSError as e:
        return None, "summarize: %s" % e
    finally:
        os.close(fd)  # releases the lock
