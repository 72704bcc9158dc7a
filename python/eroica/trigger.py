"""Synchronized trigger: agree on one session and its target iteration through a Store.

The job's own torch.distributed Store carries two announcement channels, one for profiling
sessions and one for hangs. Publishing is a claim on the next slot with an atomic
`add(claim, 1)` (only the caller that reads 1 wins), then `set` of the payload, then the slot
count and a global epoch are bumped. Readers poll the epoch with `add(epoch, 0)`, a
non-blocking read that works on every Store of torch 1.13 and 2.x (1.13 has no `check`), and
`get` only keys that are known to exist: a `get` on a missing key blocks.

Keys (all under the job store, which torch already prefixes per process group):
  eroica/epoch                      bumped on every announcement
  eroica/<channel>/count            number of published slots
  eroica/<channel>/claim/<slot>     claim counter (1 = winner)
  eroica/<channel>/item/<slot>      the payload (JSON)
  eroica/session/settled/<slot>     >= 1 once the session's gatherer is done with it (diagnosed)
  eroica/series/<session-id>        the detecting rank's recent iteration times (JSON)
"""

import json
import os
import re
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import log, safe_fs

EPOCH_KEY = "eroica/epoch"


class StoreUnavailable(Exception):
    """A store operation failed (connection lost, job ending); retry later."""


class MemoryStore:
    """The Store subset we use, in memory: the coordinator of a single-process job."""

    def __init__(self):
        self._lock = threading.Lock()
        self._data: Dict[str, bytes] = {}

    def add(self, key: str, amount: int) -> int:
        with self._lock:
            value = int(self._data.get(key, b"0")) + amount
            self._data[key] = str(value).encode()
            return value

    def set(self, key: str, value) -> None:
        with self._lock:
            self._data[key] = value.encode() if isinstance(value, str) else bytes(value)

    def get(self, key: str) -> bytes:
        with self._lock:
            return self._data[key]


class _StoreCalls:
    """Which of our threads is inside a store call, so that none is when the process ends.

    torch's store calls release the GIL inside C++ frames that must not unwind. A daemon
    thread of ours that comes back from one after the interpreter began to finalize is ended
    by the interpreter (pthread_exit), whose unwinding through those frames calls
    std::terminate: the job's process aborted (SIGABRT) instead of exiting with its own code.
    Seen on rank 0 when it handed its diagnosis off at the exit bound and its finisher then
    settled the session in the store, 4 runs in 5 of a 3-rank job with a rank killed."""

    def __init__(self):
        self._cond = threading.Condition()
        self._in_flight = 0
        self._closed = False

    def call(self, op: Callable, *args):
        with self._cond:
            if self._closed:
                raise StoreUnavailable("the process is exiting")
            self._in_flight += 1
        try:
            return op(*args)
        finally:
            with self._cond:
                self._in_flight -= 1
                self._cond.notify_all()

    def close(self, timeout_s: float) -> bool:
        """At the process's exit: no store call starts after this; waits up to timeout_s for
        those in flight to return. False when one is still in flight (a store that does not
        answer)."""
        with self._cond:
            self._closed = True
            return self._cond.wait_for(lambda: self._in_flight == 0, timeout=max(0.0, timeout_s))


STORE_CALLS = _StoreCalls()


def _call(op: Callable, *args):
    try:
        return STORE_CALLS.call(op, *args)
    except StoreUnavailable:
        raise
    except Exception as e:
        raise StoreUnavailable("%s: %s" % (type(e).__name__, e)) from e


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def session_problem(doc) -> Optional[str]:
    """Why a session announcement read from the store cannot be used (None: it can). The
    store is unauthenticated: its session id becomes a folder name, its numbers drive the
    training thread."""
    if not isinstance(doc, dict):
        return "not an object"
    try:
        safe_fs.component(doc.get("session_id"))
    except safe_fs.UnsafePath as e:
        return "session_id: %s" % e.strerror
    if not isinstance(doc.get("reason"), str):
        return "reason is not a string"
    if not _is_int(doc.get("target_iteration")):
        return "target_iteration is not an integer"
    if doc["reason"] == "hang":
        return None if _is_int(doc.get("stuck_iteration")) else "stuck_iteration is not an integer"
    if not _is_int(doc.get("capture_iters")) or doc["capture_iters"] < 1:
        return "capture_iters is not an integer >= 1"
    if not _is_number(doc.get("capture_max_s")) or not doc["capture_max_s"] > 0:
        return "capture_max_s is not a number > 0"
    return None


class Channel:
    """An append-only list of JSON announcements, published in slots 1, 2, ..."""

    def __init__(self, store, name: str):
        self._store = store
        self._name = name
        self.known = 0  # slots this process has read or published

    def _key(self, *parts) -> str:
        return "/".join(("eroica", self._name) + tuple(str(p) for p in parts))

    def try_publish(self, build: Callable[[int], Dict[str, Any]]) -> Optional[Dict[str, Any]]:
        """Claims the next slot; on a win stores `build(slot)` and returns it, else None."""
        slot = self.known + 1
        if _call(self._store.add, self._key("claim", slot), 1) != 1:
            return None
        payload = build(slot)
        _call(self._store.set, self._key("item", slot), json.dumps(payload))
        _call(self._store.add, self._key("count"), 1)
        _call(self._store.add, EPOCH_KEY, 1)
        self.known = slot
        return payload

    def settle(self, slot: int) -> None:
        """The slot's work is over (its gatherer diagnosed it): every rank may measure again."""
        _call(self._store.add, self._key("settled", slot), 1)
        _call(self._store.add, EPOCH_KEY, 1)

    def settled(self, slot: int) -> bool:
        return _call(self._store.add, self._key("settled", slot), 0) >= 1

    def fetch_new(self) -> List[Dict[str, Any]]:
        count = _call(self._store.add, self._key("count"), 0)
        out = []
        while self.known < count:
            raw = _call(self._store.get, self._key("item", self.known + 1))
            self.known += 1
            try:
                doc = json.loads(bytes(raw).decode("utf-8"))
            except ValueError:
                doc = None
            problem = session_problem(doc)
            if problem is None:
                out.append(doc)
            else:  # skipped, never retried; training goes on
                log.info("ignored %s announcement %d from the job store: %s"
                         % (self._name, self.known, problem))
        return out


class Coordinator:
    """Both channels of one job store, polled together through the epoch."""

    def __init__(self, store):
        self.store = store
        self.sessions = Channel(store, "session")
        self.hangs = Channel(store, "hang")
        self._seen_epoch = 0
        self._settled_read: Tuple[int, int] = (0, -1)  # (slot, epoch) of the last read

    def poll(self) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
        epoch = _call(self.store.add, EPOCH_KEY, 0)
        if epoch == self._seen_epoch:
            return [], []
        sessions = self.sessions.fetch_new()
        hangs = self.hangs.fetch_new()
        self._seen_epoch = epoch
        return sessions, hangs

    def is_settled(self, slot: int) -> bool:
        """Whether the session in `slot` was settled, as of the last poll. The settle bumps the
        epoch after its key, so the key is read only when the epoch moved: one store read per
        change, not per tick, on every rank of the job."""
        if self._settled_read == (slot, self._seen_epoch):
            return False
        self._settled_read = (slot, self._seen_epoch)
        return self.sessions.settled(slot)

    def put_series(self, session_id: str, series: Dict[str, Any]) -> None:
        _call(self.store.set, "eroica/series/" + session_id, json.dumps(series))

    def get_series(self, session_id: str) -> Optional[Dict[str, Any]]:
        # Written before the session is published, so the key exists: get cannot block.
        try:
            return json.loads(bytes(_call(self.store.get, "eroica/series/" + session_id)))
        except (StoreUnavailable, ValueError):
            return None


def job_id(configured: str) -> str:
    """A file-name-safe job id: EROICA_JOB_ID, torchrun's run id, or "job"."""
    raw = configured or os.environ.get("TORCHELASTIC_RUN_ID", "")
    if raw in ("", "none"):
        raw = "job"
    return re.sub(r"[^A-Za-z0-9._-]+", "_", raw)[:64]


def margin_iters(minimum: int, poll_s: float, mean_iteration_s: float) -> int:
    """Iterations between proposal and target: enough for every rank to poll twice."""
    if mean_iteration_s <= 0:
        return minimum
    needed = int(2.0 * poll_s / mean_iteration_s) + 2
    return max(minimum, needed)


def window_iters(capture_iters: int, capture_s: float, mean_iteration_s: float) -> int:
    """K iterations, fewer when K of them would exceed T seconds (at least 1)."""
    if mean_iteration_s <= 0:
        return capture_iters
    return max(1, min(capture_iters, int(capture_s / mean_iteration_s)))


def resolve_store(store_address: str, job: str = "", timeout_s: float = 30.0):
    """Returns (store, rank, world_size, kind), or None while the job store is not ready.

    Order: EROICA_STORE=host:port; the default process group's store; a TCPStore client from
    MASTER_ADDR/MASTER_PORT when WORLD_SIZE > 1; else an in-memory store (one process).
    """
    env = os.environ
    dist = None
    try:
        import torch.distributed as dist  # noqa: F811

        if not dist.is_available():
            dist = None
    except Exception:
        dist = None
    initialized = dist is not None and dist.is_initialized()
    if initialized:
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = int(env.get("RANK", "0")), int(env.get("WORLD_SIZE", "1"))
    if store_address:
        host, _, port = store_address.rpartition(":")
        return _tcp_client(host, int(port), timeout_s, job), rank, world, "tcp:" + store_address
    if initialized:
        from torch.distributed import distributed_c10d as c10d

        return c10d._get_default_store(), rank, world, "default_pg"
    if world > 1:
        if env.get("MASTER_ADDR") and env.get("MASTER_PORT") and dist is not None:
            address = "%s:%s" % (env["MASTER_ADDR"], env["MASTER_PORT"])
            return (_tcp_client(env["MASTER_ADDR"], int(env["MASTER_PORT"]), timeout_s, job),
                    rank, world, "tcp:" + address)
        return None
    return MemoryStore(), 0, 1, "memory"


def _tcp_client(host: str, port: int, timeout_s: float, job: str):
    """A client of a store that may outlive this job attempt (torchrun's agent store, an
    EROICA_STORE): our keys are scoped by job id and restart count, so that a restarted
    attempt never reads the sessions of the previous one."""
    import datetime

    from torch.distributed import PrefixStore, TCPStore

    store = TCPStore(host, port, None, False, datetime.timedelta(seconds=timeout_s))
    scope = "%s/attempt_%s" % (job_id(job),
                               os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    return PrefixStore(scope, store)
