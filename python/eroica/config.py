"""Settings, read once per process from the environment and an optional config file.

Every setting has an environment variable `EROICA_<NAME>`; a config file named by
`EROICA_CONFIG` (JSON, or TOML where `tomllib` exists) may set the same names in lower case
without the prefix (`window = 50`). The environment wins over the file, the file over the
defaults. A bad value is reported in one line and the default is kept: a typo must never stop
a training job.
"""

import dataclasses
import json
import os
from typing import Any, Dict, Mapping, Optional

from . import log


@dataclasses.dataclass(frozen=True)
class Config:
    disable: bool = False
    # Degradation: mean of the last `window` iterations > `threshold` x best such mean.
    window: int = 50
    threshold: float = 1.05
    warmup: int = 20
    # The excess must also exceed this many standard errors of the baseline window, so that
    # iteration-time noise alone cannot trigger a session.
    noise_sigmas: float = 10.0
    # Or, where that guard hides a slowdown: the training thread's CPU time per iteration rose
    # above its best by this share of the best iteration (detector.py); 0: off.
    cpu_threshold: float = 0.15
    # One iteration counts at most this many times the best mean (checkpoint pauses); 0: off.
    outlier_clip: float = 2.0
    # Hang: the current iteration has run >= hang_factor x mean iteration and >= hang_min_s.
    hang_factor: float = 5.0
    hang_min_s: float = 30.0
    # Trigger: target iteration = current + max(margin, what polling latency needs).
    margin: int = 5
    poll_s: float = 1.0
    max_sessions: int = 10
    # Capture window: K iterations or T seconds, whichever comes first.
    capture_iters: int = 5
    capture_s: float = 20.0
    with_stack: bool = False
    record_shapes: bool = False
    # The training thread's Python stack, sampled in the window only (stack_sampler.py); 0: no
    # samples (the window's CPU reading is still written).
    stack_hz: float = 150.0
    stack_max_samples: int = 20000  # at 150 Hz: the whole 20 s window, ~1 MB of JSON at most
    # Without Kineto (Debian's CPU-only torch) the export thread turns every event of the window
    # into Python objects and writes them from Python, holding the GIL the training thread needs:
    # 15 s + 27 s for 300,000 events here. Whole steps past this many events are left out.
    trace_max_events: int = 150000
    series_len: int = 200
    # The job's baseline: once per job, every rank profiles `baseline_iters` iterations at
    # iteration `baseline_at` (-1: after the detector's warm-up and first window, once iteration
    # times stop falling, at most one window later; never after a slowdown was seen), kept as
    # <dir>/<job>.baseline.pattern; later sessions are also diagnosed against it. A new one only
    # on the user's word: `eroica.rebaseline()` or `python -m eroica rebaseline`. As many
    # iterations as a session's window: the baseline is diagnosed like a session, and with 2-3
    # iterations the localizer can only ask whether a rank led every one of them, which a node's
    # passing noise satisfies (a healthy 4-rank conv job on 2 cores: 1 of 10 three-step baselines
    # named a rank whose convolutions ran 1.8x its peers' for those 3 steps only).
    baseline: bool = True
    baseline_at: int = -1
    baseline_iters: int = 5
    # Where sessions go and how they are diagnosed.
    dir: str = "/tmp/eroica"
    bin: str = ""
    collect_timeout_s: float = 60.0
    diagnose_timeout_s: float = 300.0
    # For the samples of each node agent that promised them, past the time they are due
    # (agent_link.wait_for_metrics); no wait where no agent saw the session.
    agent_wait_s: float = 3.0
    # Scale-out (docs: python/README.md): each rank's raw files go to this node-local folder,
    # are summarized there and only patterns travel, through the job store; `dir` then holds
    # rank 0's patterns and report only. "": raw files in `dir`, diagnosed there (one folder).
    local_dir: str = ""
    # Retention in local_dir: the newest sessions kept, and their bytes in all (oldest go first).
    local_keep_sessions: int = 20
    local_keep_mb: int = 20480
    # One summarizer per node at a time (a lock in local_dir), each limited to this much
    # address space: the node's cap for summarizing, whatever its number of ranks.
    summarize_mem_mb: int = 2048
    # The most a process's exit waits for eroica's unfinished work (finish.py).
    exit_wait_s: float = 30.0
    # Session folders shared by a group: folders 02770, files 0640 (safe_fs.py).
    group_shared: bool = False
    # Coordination.
    store: str = ""
    job_id: str = ""
    trigger_at: int = -1  # forces a session at this iteration id (demos, tests); -1: off
    faulthandler: bool = False
    verbose: bool = False  # debug lines on stderr


_FIELDS = {f.name: f for f in dataclasses.fields(Config)}


def _parse(name: str, raw: Any) -> Any:
    kind = _FIELDS[name].type
    if kind in (bool, "bool"):
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off", ""):
            return False
        raise ValueError("not a boolean")
    if kind in (int, "int"):
        if isinstance(raw, bool):
            raise ValueError("not an integer")
        return int(raw)
    if kind in (float, "float"):
        value = float(raw)
        if value != value:
            raise ValueError("NaN")
        return value
    return str(raw)


def _read_file(path: str) -> Dict[str, Any]:
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".toml"):
        try:
            import tomllib  # Python >= 3.11
        except ImportError:
            try:
                import tomli as tomllib  # the same parser, as a package, for older Pythons
            except ImportError:
                raise ValueError("TOML needs Python >= 3.11 or the tomli package; use JSON")
        doc = tomllib.loads(data.decode("utf-8"))
    else:
        doc = json.loads(data.decode("utf-8"))
    if not isinstance(doc, dict):
        raise ValueError("top level is not an object")
    # A [eroica] table in a shared TOML file is accepted too.
    if isinstance(doc.get("eroica"), dict):
        doc = doc["eroica"]
    return doc


def _validate(values: Dict[str, Any]) -> Dict[str, Any]:
    positive = ("window", "threshold", "capture_iters", "capture_s", "poll_s", "hang_factor",
                "baseline_iters", "summarize_mem_mb", "trace_max_events")
    for name in positive:
        if name in values and values[name] <= 0:
            log.info("ignoring %s=%r: must be > 0" % (name, values[name]))
            del values[name]
    for name in ("warmup", "margin", "hang_min_s", "noise_sigmas", "cpu_threshold", "max_sessions",
                 "outlier_clip", "exit_wait_s", "collect_timeout_s", "agent_wait_s", "stack_hz",
                 "stack_max_samples", "local_keep_sessions", "local_keep_mb"):
        if name in values and values[name] < 0:
            log.info("ignoring %s=%r: must be >= 0" % (name, values[name]))
            del values[name]
    return values


def load(environ: Optional[Mapping[str, str]] = None) -> Config:
    """Builds the configuration from `environ` (default os.environ) and EROICA_CONFIG."""
    environ = os.environ if environ is None else environ
    values: Dict[str, Any] = {}
    path = environ.get("EROICA_CONFIG", "")
    if path:
        try:
            for key, raw in _read_file(path).items():
                name = str(key).lower()
                if name not in _FIELDS:
                    log.info("config %s: unknown setting %r ignored" % (path, key))
                    continue
                try:
                    values[name] = _parse(name, raw)
                except (TypeError, ValueError) as e:
                    log.info("config %s: bad %s=%r (%s), default kept" % (path, key, raw, e))
        except Exception as e:  # unreadable file: defaults and environment still apply
            log.info("config %s unreadable (%s), ignored" % (path, e))
    for name in _FIELDS:
        raw = environ.get("EROICA_" + name.upper())
        if raw is None:
            continue
        try:
            values[name] = _parse(name, raw)
        except (TypeError, ValueError) as e:
            log.info("bad EROICA_%s=%r (%s), default kept" % (name.upper(), raw, e))
    return Config(**_validate(values))


def env_names() -> list:
    return ["EROICA_" + name.upper() for name in _FIELDS] + ["EROICA_CONFIG"]
