"""Summarizing on the node: one summarizer per node at a time (the flock), each at nice 10 with
one reader thread and the address-space cap; its pattern is read back bounded."""

import json
import os
import threading
import time

from eroica import config, node_summary

FAKE_SUMMARIZE = r'''#!%(python)s
# Stands in for `eroica summarize`: records its limits and when it ran, writes a pattern.
import json, os, resource, sys, time
out = sys.argv[sys.argv.index("-o") + 1]
start = time.time()
time.sleep(0.2)
with open(out + ".call.json", "w") as f:
    json.dump({"argv": sys.argv, "nice": os.nice(0),
               "as": resource.getrlimit(resource.RLIMIT_AS)[0], "start": start,
               "end": time.time()}, f)
with open(out, "wb") as f:
    f.write(b"EROICAP\x02")
'''


def make_rank(root, session, rank):
    folder = root / session
    folder.mkdir(exist_ok=True, mode=0o700)
    (folder / ("rank-%d.json.gz" % rank)).write_bytes(b"trace")
    return str(folder)


def test_ranks_of_a_node_summarize_one_at_a_time_under_the_cap(tmp_path):
    import sys

    fake = tmp_path / "fake-eroica"
    fake.write_text(FAKE_SUMMARIZE % {"python": sys.executable})
    fake.chmod(0o755)
    root = tmp_path / "local"
    root.mkdir()
    cfg = config.load({"EROICA_BIN": str(fake), "EROICA_SUMMARIZE_MEM_MB": "512",
                       "EROICA_LOCAL_KEEP_SESSIONS": "1"})
    (root / "older").mkdir()  # retention runs under the same lock: it goes
    os.utime(root / "older", (1, 1))
    results = {}

    def rank_main(rank):
        folder = make_rank(root, "s1", rank)
        results[rank] = node_summary.summarize(cfg, folder, rank, time.monotonic() + 20)

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert all(results[r] == (b"EROICAP\x02", "") for r in range(3)), results
    calls = sorted((json.load(open(root / "s1" / ("rank-%d.pattern.call.json" % r)))
                    for r in range(3)), key=lambda c: c["start"])
    for before, after in zip(calls, calls[1:]):
        assert after["start"] >= before["end"], calls  # never two at once on the node
    for call in calls:
        assert call["nice"] >= 10 and call["as"] == 512 << 20
        assert call["argv"][1:4] == ["summarize", "-j", "1"]
    assert sorted(os.listdir(root)) == ["s1", "summarize.lock"]


def test_a_busy_lock_and_a_missing_trace_are_reasons_not_waits(tmp_path):
    import fcntl

    root = tmp_path / "local"
    root.mkdir()
    folder = make_rank(root, "s1", 0)
    cfg = config.load({"EROICA_BIN": "/bin/true"})
    assert node_summary.summarize(cfg, folder, 1, time.monotonic() + 5)[1].startswith("no trace")
    held = os.open(str(root / "summarize.lock"), os.O_RDWR | os.O_CREAT)
    fcntl.flock(held, fcntl.LOCK_EX)
    try:
        start = time.monotonic()
        pattern, why = node_summary.summarize(cfg, folder, 0, time.monotonic() + 0.3)
        assert pattern is None and "stayed busy" in why and time.monotonic() - start < 1.0
    finally:
        os.close(held)
