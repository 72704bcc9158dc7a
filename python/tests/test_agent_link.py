"""The files that tell a node agent what to watch, and the bounded wait for its samples."""
import json
import os
import threading
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


def test_without_an_agents_promise_nothing_is_waited_for(tmp_path):
    """No agent saw the session: diagnose goes on at once, not after agent_wait_s."""
    agent_link.announce_capture(str(tmp_path), time.time_ns(), 1.0)
    os.utime(tmp_path / "capture.start", (time.time() - 5, time.time() - 5))
    started = time.monotonic()
    assert agent_link.wait_for_metrics(str(tmp_path), 5) == []
    assert time.monotonic() - started < 0.5


def test_a_file_written_without_a_promise_is_taken_at_once(tmp_path):
    agent_link.announce_capture(str(tmp_path), time.time_ns(), 1.0)
    (tmp_path / "metrics-node.eroica-metrics").write_bytes(b"x")
    started = time.monotonic()
    assert len(agent_link.wait_for_metrics(str(tmp_path), 5)) == 1
    assert time.monotonic() - started < 0.5


def test_a_fresh_session_waits_an_agents_scan_for_a_promise(tmp_path):
    agent_link.announce_capture(str(tmp_path), time.time_ns(), 1.0)
    started = time.monotonic()
    assert agent_link.wait_for_metrics(str(tmp_path), 5) == []
    assert 1.0 <= time.monotonic() - started < agent_link.AGENT_SCAN_S + 1


def promise(folder, host, due_s):
    (folder / ("metrics-%s.eroica-metrics.due" % host)).write_text(
        json.dumps({"host": host, "due_unix_ns": int(due_s * 1e9)}))


def test_waits_for_every_promised_file_until_due_plus_the_timeout(tmp_path):
    promise(tmp_path, "a", time.time())
    promise(tmp_path, "b", time.time())
    (tmp_path / "metrics-a.eroica-metrics").write_bytes(b"x")

    def write_b_later():
        time.sleep(0.5)
        (tmp_path / "metrics-b.eroica-metrics").write_bytes(b"x")

    writer = threading.Thread(target=write_b_later)
    writer.start()
    started = time.monotonic()
    assert len(agent_link.wait_for_metrics(str(tmp_path), 5)) == 2
    assert 0.4 <= time.monotonic() - started < 3
    writer.join()


def test_a_promise_never_kept_is_waited_for_only_as_long_as_asked(tmp_path):
    promise(tmp_path, "gone", time.time())  # the agent died after promising
    started = time.monotonic()
    assert agent_link.wait_for_metrics(str(tmp_path), 0.3) == []
    assert 0.25 <= time.monotonic() - started < 2
    # A due time far ahead (a clock step, a planted file) waits no longer than the timeout + 1 s.
    promise(tmp_path, "gone", time.time() + 3600)
    started = time.monotonic()
    assert agent_link.wait_for_metrics(str(tmp_path), 0.3) == []
    assert time.monotonic() - started < 2.5
    (tmp_path / "metrics-gone.eroica-metrics.due").write_bytes(b"\xff not json")
    assert agent_link.wait_for_metrics(str(tmp_path), 0.3) == []
