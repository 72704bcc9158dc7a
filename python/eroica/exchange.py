"""Patterns through the job store: each rank's pattern reaches rank 0 without a shared folder.

A rank publishes one *record*: a small JSON header (rank, host, where its raw trace stayed, or
why it has no pattern) and its pattern file's bytes (already zstd-compressed, a few KB). Ranks
are grouped by node so that rank 0 reads one key per node, not one per rank: the node's first
local rank (its *leader*) collects the records of its node until its deadline, publishes them
under one key, and deletes the per-rank keys. Rank 0 gathers the node keys
until its deadline, then the ranks that published after their leader had sent its node (a
node's ranks summarize one at a time); a node whose leader never published is read rank by
rank at the deadline, and the ranks still absent are returned as missing (the diagnosis names
them as suspects).

Wire format of a store value (the same for one rank's record and a node's bundle):
  value   := "EROICAW\\x01" u32 n_records record*          (little-endian)
  record  := u32 header_bytes, header (JSON object), u32 pattern_bytes, pattern
Every length is checked against the bytes left and a maximum before it is believed.

Keys, under the Coordinator's store (job- and attempt-scoped already):
  eroica/patterns/<session>/r/<rank>       a rank's record, while its leader has not taken it
  eroica/patterns/<session>/rdone/<rank>   1 once it is there (read with add(key, 0))
  eroica/patterns/<session>/n/<node>       a node's records
  eroica/patterns/<session>/ndone/<node>   1 once it is there
Torch 1.13 stores have no `check` and `get` blocks on a missing key, so presence is polled
through counters and only keys known to exist are read.
"""

import dataclasses
import json
import os
import struct
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from . import trigger

MAGIC = b"EROICAW\x01"
MAX_HEADER_BYTES = 64 << 10
MAX_PATTERN_BYTES = 16 << 20  # a pattern is a few KB; a bundle of a node's ranks stays small
MAX_RECORDS = 4096  # ranks of one node, with room
_U32 = struct.Struct("<I")

Record = Tuple[Dict[str, Any], bytes]


def encode(records: List[Record]) -> bytes:
    parts = [MAGIC, _U32.pack(len(records))]
    for header, pattern in records:
        text = json.dumps(header, separators=(",", ":")).encode("utf-8")
        parts += [_U32.pack(len(text)), text, _U32.pack(len(pattern)), pattern]
    return b"".join(parts)


def decode(data: bytes) -> List[Record]:
    """The records of a store value; ValueError naming the first problem."""
    data = memoryview(bytes(data))
    if bytes(data[:len(MAGIC)]) != MAGIC:
        raise ValueError("not an eroica pattern record (bad magic)")
    pos = len(MAGIC)

    def u32(what: str) -> int:
        nonlocal pos
        if len(data) - pos < 4:
            raise ValueError("truncated at %s" % what)
        (value,) = _U32.unpack_from(data, pos)
        pos += 4
        return value

    def take(n: int, limit: int, what: str) -> bytes:
        nonlocal pos
        if n > limit or n > len(data) - pos:
            raise ValueError("%s of %d bytes: above the %d bytes left or the %d allowed"
                             % (what, n, len(data) - pos, limit))
        out = bytes(data[pos:pos + n])
        pos += n
        return out

    count = u32("the record count")
    if count > MAX_RECORDS:
        raise ValueError("%d records, above the %d allowed" % (count, MAX_RECORDS))
    records = []
    for _ in range(count):
        header = json.loads(take(u32("a header length"), MAX_HEADER_BYTES, "a header"))
        if not isinstance(header, dict) or not trigger._is_int(header.get("rank")) \
                or header["rank"] < 0:
            raise ValueError("a record header without a rank")
        records.append((header, take(u32("a pattern length"), MAX_PATTERN_BYTES, "a pattern")))
    if pos != len(data):
        raise ValueError("%d bytes after the last record" % (len(data) - pos))
    return records


@dataclasses.dataclass(frozen=True)
class Topology:
    """Where a rank sits: ranks of a node are contiguous (torchrun's assignment), `per_node`
    of them (LOCAL_WORLD_SIZE; 1 when unknown: every rank is its own node)."""
    rank: int
    world_size: int
    per_node: int

    @staticmethod
    def from_env(rank: int, world_size: int, environ=None) -> "Topology":
        environ = os.environ if environ is None else environ
        raw = environ.get("LOCAL_WORLD_SIZE", "")
        per_node = int(raw) if raw.isdigit() and int(raw) > 0 else 1
        return Topology(rank, world_size, min(per_node, max(1, world_size)))

    def node_of(self, rank: int) -> int:
        return rank // self.per_node

    @property
    def node(self) -> int:
        return self.node_of(self.rank)

    @property
    def nodes(self) -> int:
        return (self.world_size + self.per_node - 1) // self.per_node

    def ranks_of(self, node: int) -> range:
        return range(node * self.per_node, min(self.world_size, (node + 1) * self.per_node))

    @property
    def is_leader(self) -> bool:
        return self.rank == self.ranks_of(self.node)[0]


class Exchange:
    """One session's patterns through one store."""

    def __init__(self, store, session_id: str, topology: Topology, poll_s: float = 0.1,
                 hurry: Optional[threading.Event] = None, hurry_grace_s: float = 0.0):
        self.store = store
        # Set when the process is about to exit: a leader's wait ends at once; rank 0 waits
        # `hurry_grace_s` more for the nodes still silent (their leaders, exiting about when it
        # does, send what they have), but no longer for single late ranks.
        self.hurry = hurry or threading.Event()
        self.hurry_grace_s = hurry_grace_s
        self._hurried_at: Optional[float] = None
        self.prefix = "eroica/patterns/%s/" % session_id
        self.topo = topology
        self.poll_s = poll_s
        self.bytes_read = 0  # store bytes this process got (for the measurements)
        self.requests = 0  # store requests this process made

    def _present(self, key: str) -> bool:
        self.requests += 1
        return trigger._call(self.store.add, self.prefix + key, 0) > 0

    def _get(self, key: str) -> List[Record]:
        self.requests += 1
        raw = bytes(trigger._call(self.store.get, self.prefix + key))
        self.bytes_read += len(raw)
        return decode(raw)

    def _put(self, key: str, records: List[Record], done_key: str) -> None:
        trigger._call(self.store.set, self.prefix + key, encode(records))
        trigger._call(self.store.add, self.prefix + done_key, 1)

    def _forget(self, key: str) -> None:
        try:  # frees the store's memory; a store without delete_key keeps the few KB
            trigger._call(self.store.delete_key, self.prefix + key)
        except Exception:
            pass

    def publish(self, own: Record, node_deadline: float) -> Optional[List[Record]]:
        """This rank's part. A plain rank publishes its record; a leader gathers its node
        until `node_deadline` (time.monotonic) and publishes the node's records, except rank 0,
        which gets them back to gather the rest with `gather`."""
        topo = self.topo
        if not topo.is_leader:
            self._put("r/%d" % topo.rank, [own], "rdone/%d" % topo.rank)
            return None
        records = [own]
        pending = [r for r in topo.ranks_of(topo.node) if r != topo.rank]
        records += self._collect_ranks(pending, node_deadline, forget=False)
        if topo.rank != 0:
            self._put("n/%d" % topo.node, records, "ndone/%d" % topo.node)
        # Only now: rank 0 reads a rank's own key only while its node has no bundle.
        for header, _ in records[1:]:
            self._forget("r/%d" % header["rank"])
        return records if topo.rank == 0 else None

    def _collect_ranks(self, pending: List[int], deadline: float, forget: bool = True,
                       grace_s: float = 0.0) -> List[Record]:
        out = []
        pending = list(pending)
        while pending:
            for r in [r for r in pending if self._present("rdone/%d" % r)]:
                pending.remove(r)
                out += [rec for rec in self._take_rank(r, forget) if rec[0]["rank"] == r]
            if not pending or self._due(deadline, grace_s):
                break
            time.sleep(self.poll_s)
        return out

    def _due(self, deadline: float, grace_s: float = 0.0) -> bool:
        now = time.monotonic()
        if self.hurry.is_set():
            if self._hurried_at is None:
                self._hurried_at = now
            deadline = min(deadline, self._hurried_at + grace_s)
        return now >= deadline

    def _take_rank(self, rank: int, forget: bool) -> List[Record]:
        try:
            records = self._get("r/%d" % rank)
        except ValueError:
            records = []  # said as missing: its bytes were not a record
        if forget:
            self._forget("r/%d" % rank)
        return records

    def gather(self, own_node: List[Record], deadline: float) -> Tuple[List[Record], List[int]]:
        """Rank 0: every node's records until `deadline` (time.monotonic), then the ranks that
        came after their leader had sent its node, until the same deadline. Returns the
        records and the ranks without one, in rank order."""
        topo = self.topo
        by_rank = {h["rank"]: (h, p) for h, p in own_node}
        pending_nodes = list(range(1, topo.nodes))
        while True:
            for node in [n for n in pending_nodes if self._present("ndone/%d" % n)]:
                pending_nodes.remove(node)
                self._take_node(node, by_rank)
            if not pending_nodes:  # every leader is done with its keys: the late ones are ours
                # (not when hurried: every node has spoken, the exit does not wait for more)
                late = [r for r in range(topo.world_size) if r not in by_rank]
                for header, pattern in self._collect_ranks(late, deadline):
                    by_rank.setdefault(header["rank"], (header, pattern))
                break
            if self._due(deadline, self.hurry_grace_s):
                break
            time.sleep(self.poll_s)
        # A node whose leader never published: its other ranks may have published themselves.
        for node in pending_nodes:
            if self._present("ndone/%d" % node):  # it did, just now
                self._take_node(node, by_rank)
                continue
            ranks = [r for r in topo.ranks_of(node) if r not in by_rank]
            for header, pattern in self._collect_ranks(ranks, time.monotonic()):
                by_rank.setdefault(header["rank"], (header, pattern))
        records = [by_rank[r] for r in sorted(by_rank)]
        missing = [r for r in range(topo.world_size) if r not in by_rank]
        return records, missing

    def _take_node(self, node: int, by_rank: Dict[int, Record]) -> None:
        try:
            records = self._get("n/%d" % node)
        except ValueError:
            records = []
        self._forget("n/%d" % node)
        for header, pattern in records:  # a node speaks for its own ranks only
            if header["rank"] in self.topo.ranks_of(node):
                by_rank.setdefault(header["rank"], (header, pattern))
