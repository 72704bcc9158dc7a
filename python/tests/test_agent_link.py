"""The files that tell a node agent what to watch, and the bounded wait for its samples."""
import json
import os
import time

from eroica import agent_link


def test_registration_and_session_files(tmp_path):
    agent_link.register_process(str(tmp_path), rank=3)
    doc = json.loads((tmp_path / "procs" / ("%d.json" % os.getpid())).read_text())
    assert doc["pid"] == os.getpid() and doc["rank"] == 3 and doc["session_dir"] is None
    session = tmp_path / "s1"
    session.mkdir()
    agent_link.announce_capture(str(session), 123, 20.0)
    agent_link.announce_capture(str(session), 999, 5.0)  # another rank: the first one stays
    assert json.loads((session / "capture.start").read_text()) == {"start_unix_ns": 123, "duration_s": 20.0}
    agent_link.announce_stop(str(session), 456)
    assert json.loads((session / "capture.stop").read_text()) == {"stop_unix_ns": 456}


def test_never_raises_on_an_unwritable_folder(tmp_path):
    target = tmp_path / "file"
    target.write_text("not a folder")
    agent_link.register_process(str(target), rank=0)
    agent_link.announce_capture(str(target / "missing"), 1, 1.0)


def test_waits_for_metrics_only_as_long_as_asked(tmp_path):
    started = time.monotonic()
    assert agent_link.wait_for_metrics(str(tmp_path), 0.3) == []
    assert 0.25 <= time.monotonic() - started < 2
    (tmp_path / "metrics-node.eroica-metrics").write_bytes(b"x")
    assert len(agent_link.wait_for_metrics(str(tmp_path), 5)) == 1
