"""The central session folder of the scale-out path: patterns and the report, no raw data.

Rank 0 writes `EROICA_DIR/<session>/`:
  session.json       why, when, the window, the detecting rank's iteration times
  patterns.pattern   every gathered pattern in ONE pattern bundle (src/summary/pattern_file.h)
  stacks-rank-<r>.json   instead of the bundle after a hang: each rank's stack dump
  raw-traces.json    where each rank's raw files stayed: host and node-local path
  report.json, report.txt   one diagnosis (`eroica diagnose --json-out`)

The bundle is a pattern file like any other: a pattern file is its magic followed by
self-contained blocks (each with its own string table), so the magic of the first rank's file
followed by every rank's blocks is a valid bundle, and every reader (`diagnose`, `report`,
`prompt`, `diff`, `show`) reads it as it is. Each rank's bytes are checked here to be that
magic and whole blocks (u32 compressed, u32 raw, u32 workers, compressed bytes), so one damaged
rank cannot shift the blocks of the ranks after it; a rank whose bytes fail is missing.
"""

import enum
import os
import socket
import struct
from typing import Any, Dict, List, Tuple

from . import safe_fs

BUNDLE_NAME = "patterns.pattern"
MAX_STACKS_BYTES = 4 << 20  # a hang's stack dump: a few KB of JSON per rank
POINTERS_NAME = "raw-traces.json"
MAGIC_BYTES = 8  # "EROICAP" + the version byte
_BLOCK_HEADER = struct.Struct("<III")


def pattern_blocks(pattern: bytes) -> Tuple[bytes, bytes]:
    """(magic, blocks) of one pattern file; ValueError when its blocks do not fill it."""
    magic = bytes(pattern[:MAGIC_BYTES])
    if len(magic) != MAGIC_BYTES or not magic.startswith(b"EROICAP"):
        raise ValueError("not a pattern file")
    pos = MAGIC_BYTES
    while pos < len(pattern):
        if len(pattern) - pos < _BLOCK_HEADER.size:
            raise ValueError("a truncated block header at byte %d" % pos)
        compressed, _, _ = _BLOCK_HEADER.unpack_from(pattern, pos)
        pos += _BLOCK_HEADER.size + compressed
        if pos > len(pattern):
            raise ValueError("a block runs past the end of the file")
    return magic, bytes(pattern[MAGIC_BYTES:])


def bundle(patterns: Dict[int, bytes]) -> Tuple[bytes, Dict[int, str]]:
    """One bundle of the ranks' pattern files, and why each rank left out was left out."""
    magic = b""
    blocks: List[bytes] = []
    refused: Dict[int, str] = {}
    for rank in sorted(patterns):
        try:
            own_magic, own_blocks = pattern_blocks(patterns[rank])
        except ValueError as e:
            refused[rank] = str(e)
            continue
        if magic and own_magic != magic:
            refused[rank] = "pattern format %r, not the %r of the others" % (own_magic, magic)
            continue
        magic = own_magic
        blocks.append(own_blocks)
    return magic + b"".join(blocks), refused


class Evidence(enum.Enum):
    """What the ranks sent: patterns after a window, stack dumps after a hang."""
    PATTERNS = "patterns"
    STACKS = "stack dumps"


def write_folder(session_dir: str, session_doc: Dict[str, Any],
                 records: List[Tuple[Dict[str, Any], bytes]], missing: List[int],
                 evidence: Evidence = Evidence.PATTERNS) -> str:
    """Writes session.json, the bundle (or, after a hang, each rank's stacks-rank-<r>.json) and
    raw-traces.json; returns a note naming the ranks without evidence ("" when none)."""
    safe_fs.ensure_session_dir(session_dir)
    safe_fs.write_json(os.path.join(session_dir, "session.json"), session_doc)
    payloads = {h["rank"]: p for h, p in records if p}
    if evidence is Evidence.PATTERNS:
        data, refused = bundle(payloads)
    else:  # read as any stack dump is, by the bounded and fuzzed C++ reader
        data, refused = b"", {}
        for rank, dump in payloads.items():
            safe_fs.write_atomic(os.path.join(
                session_dir, safe_fs.rank_name("stacks-rank-", rank, ".json")), dump)
    why = {h["rank"]: str(h.get("error", ""))[:200] for h, p in records if not p}
    why.update(refused)
    for rank in missing:
        why.setdefault(rank, "nothing arrived through the job store by the deadline")
    pointers = {"schema": "eroica.raw-traces/v1", "session_id": session_doc.get("session_id"),
                "written_by": socket.gethostname(),
                "ranks": [{"rank": h["rank"], "host": h.get("host"),
                           "folder": h.get("folder"), "trace": h.get("trace"),
                           **({"no_pattern": why[h["rank"]]} if h["rank"] in why else {})}
                          for h, _ in records],
                "missing": [{"rank": r, "why": why[r]} for r in missing]}
    if data:
        safe_fs.write_atomic(os.path.join(session_dir, BUNDLE_NAME), data)
    safe_fs.write_json(os.path.join(session_dir, POINTERS_NAME), pointers)
    if not why:
        return ""
    ranks = sorted(why)
    shown = ", ".join("%d (%s)" % (r, why[r]) for r in ranks[:4])
    return "%d of %d ranks without %s: %s%s" % (
        len(ranks), session_doc.get("world_size", len(records)),
        "a pattern" if evidence is Evidence.PATTERNS else "a stack dump", shown,
        ", ..." if len(ranks) > 4 else "")
