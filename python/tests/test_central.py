"""Rank 0's central folder: one bundle of whole pattern blocks, the pointers to the raw data,
and the ranks without a pattern named."""

import json
import os
import struct

import pytest

from eroica import central

MAGIC = b"EROICAP\x02"


def pattern(payload: bytes, magic: bytes = MAGIC) -> bytes:
    return magic + struct.pack("<III", len(payload), 99, 1) + payload


def test_the_bundle_is_one_magic_and_every_ranks_blocks():
    data, refused = central.bundle({1: pattern(b"bb"), 0: pattern(b"a")})
    assert refused == {}
    assert data == MAGIC + pattern(b"a")[8:] + pattern(b"bb")[8:]


@pytest.mark.parametrize("bad", [b"not a pattern", pattern(b"abc")[:-1], pattern(b"a") + b"\0",
                                 pattern(b"a", b"EROICAP\x01")])
def test_a_damaged_or_foreign_rank_is_left_out_and_the_others_kept(bad):
    data, refused = central.bundle({0: pattern(b"a"), 1: bad, 2: pattern(b"c")})
    assert list(refused) == [1]
    assert data == MAGIC + pattern(b"a")[8:] + pattern(b"c")[8:]


def test_the_folder_holds_the_bundle_the_pointers_and_the_session(tmp_path):
    records = [({"rank": 0, "host": "n0", "folder": "/l/s", "trace": "/l/s/rank-0.json.gz"},
                pattern(b"a")),
               ({"rank": 1, "host": "n0", "folder": "/l/s", "trace": None,
                 "error": "summarize failed (exit 1): boom"}, b"")]
    folder = str(tmp_path / "central" / "s")
    note = central.write_folder(folder, {"session_id": "s", "world_size": 3}, records, [2])
    assert sorted(os.listdir(folder)) == ["patterns.pattern", "raw-traces.json", "session.json"]
    assert open(os.path.join(folder, "patterns.pattern"), "rb").read() == pattern(b"a")
    pointers = json.load(open(os.path.join(folder, "raw-traces.json")))
    assert pointers["ranks"][0]["trace"] == "/l/s/rank-0.json.gz"
    assert pointers["ranks"][1]["no_pattern"].startswith("summarize failed")
    assert pointers["missing"] == [{"rank": 2, "why": "nothing arrived through the job store "
                                                      "by the deadline"}]
    assert note.startswith("2 of 3 ranks without a pattern: 1 (summarize failed"), note
