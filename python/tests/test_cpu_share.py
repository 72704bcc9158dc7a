"""Who had the processor over a window: the node's cores and this process's threads."""

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from eroica import cpu_share, stack_sampler


def spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(200))


def test_a_spinning_thread_is_counted_on_the_cpu_and_the_node_busy():
    start = cpu_share.snapshot()
    spin(0.3)
    share = cpu_share.window(start, cpu_share.snapshot())
    assert share is not None
    assert share["cpus"] >= 1 and share["allowed_cpus"] >= 1 and share["threads"] >= 1
    # One thread spun the whole window: about one core, less whatever the machine took from it
    # (queued time is then run delay); the node was at least that busy.
    assert 0.2 <= share["process_cpu"] + share["run_delay"] <= 1.5, share
    assert share["host_busy"] >= min(0.9, share["process_cpu"]) / share["cpus"] - 0.05, share
    assert 0.0 <= share["host_busy"] <= 1.0


def test_a_sleeping_process_uses_no_cpu():
    start = cpu_share.snapshot()
    time.sleep(0.3)
    share = cpu_share.window(start, cpu_share.snapshot())
    assert share is not None and share["process_cpu"] < 0.1, share
    assert "main_cpu" not in share  # no thread named


def test_the_named_thread_is_read_on_its_own():
    """The training thread spins while another thread sleeps: the process's CPU is the named
    thread's."""
    me = threading.get_native_id()
    sleeper = threading.Thread(target=time.sleep, args=(0.4,))
    sleeper.start()
    start = cpu_share.snapshot(me)
    spin(0.3)
    share = cpu_share.window(start, cpu_share.snapshot(me))
    sleeper.join()
    assert share["main_cpu"] + share["main_run_delay"] >= 0.2, share
    assert share["main_cpu"] <= share["process_cpu"] + 1e-3, share


def test_missing_or_empty_readings_give_none():
    snap = cpu_share.snapshot()
    assert cpu_share.window(None, snap) is None
    assert cpu_share.window(snap, None) is None
    assert cpu_share.window(snap, snap) is None  # an empty window


def test_damaged_snapshots_give_none_never_an_exception():
    snap = cpu_share.snapshot()
    assert cpu_share.window(snap, {"ns": "x"}) is None
    assert cpu_share.window({"ns": 1, "total": 0}, dict(snap, throttled=[1])) is None


def test_unreadable_proc_gives_none_never_an_exception(monkeypatch):
    def refuse(path):
        raise OSError("no /proc here")
    monkeypatch.setattr(cpu_share, "_read", refuse)
    assert cpu_share.snapshot() is None


def test_the_sampler_writes_the_windows_reading(tmp_path):
    sampler = stack_sampler.StackSampler(threading.get_ident(), hz=100, max_samples=50)
    sampler.start()
    spin(0.1)
    sampler.stop()
    sampler.write(str(tmp_path), 0, 1)
    doc = json.load(open(stack_sampler.stacks_path(str(tmp_path), 0)))
    assert set(doc["cpu"]) >= {"cpus", "host_busy", "process_cpu", "run_delay", "window_ns", "main_cpu",
                               "main_run_delay"}
    assert doc["cpu"]["process_cpu"] > 0


def _quota_cgroup():
    """A v1 cpu cgroup with a tight quota, or None where this machine cannot make one."""
    root = "/sys/fs/cgroup/cpu"
    if os.geteuid() != 0 or not os.path.exists(os.path.join(root, "cpu.cfs_quota_us")):
        return None
    path = os.path.join(root, "eroica-test-%d" % os.getpid())
    try:
        os.mkdir(path)
        with open(os.path.join(path, "cpu.cfs_quota_us"), "w") as f:
            f.write("10000\n")  # 10 ms per 100 ms period
    except OSError:
        return None
    return path


def test_a_cpu_quota_shows_as_throttled_time(tmp_path):
    """A child process spinning under a 10 % quota: its cgroup's cpu.stat says how long the quota
    held it back, which run delay alone cannot tell from a busy node."""
    cgroup = _quota_cgroup()
    if cgroup is None:
        pytest.skip("needs root and a v1 cpu cgroup hierarchy")
    out = tmp_path / "share.json"
    code = ("import json, os, sys, time\n"
            "open(sys.argv[1] + '/cgroup.procs', 'w').write(str(os.getpid()))\n"
            "from eroica import cpu_share\n"
            "a = cpu_share.snapshot(); end = time.monotonic() + 0.5\n"
            "while time.monotonic() < end: pass\n"
            "json.dump(cpu_share.window(a, cpu_share.snapshot()), open(sys.argv[2], 'w'))\n")
    try:
        subprocess.run([sys.executable, "-c", code, cgroup, str(out)], check=True, timeout=30,
                       env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(cpu_share.__file__))))
    finally:
        os.rmdir(cgroup)
    share = json.load(open(out))
    assert share["throttled"] >= 0.5, share  # held back for most of the window
    assert share["run_delay"] >= 0.5 * share["throttled"], share  # and counted as queued too


def test_a_threads_run_delay_counts_its_wait_for_a_cpu():
    # This thread and a busy process on one core: each is queued about half of the time.
    reading = cpu_share.ThreadRunDelay()
    if reading.since_last() is None:
        pytest.skip("no /proc/thread-self/schedstat here")
    allowed = os.sched_getaffinity(0)
    core = min(allowed)
    hog = subprocess.Popen([sys.executable, "-c",
                            "import os\nos.sched_setaffinity(0, {%d})\nwhile True: pass" % core])
    try:
        os.sched_setaffinity(0, {core})
        time.sleep(0.3)  # the hog is running
        reading.since_last()
        spin(0.4)
        queued = reading.since_last()
    finally:
        os.sched_setaffinity(0, allowed)
        hog.kill()
        hog.wait()
    assert queued is not None and queued >= 0.05e9, queued
    reading.close()
    assert reading.since_last() is None  # closed: no reading, no exception


def test_threads_that_end_inside_the_window_leave_the_others_time_counted():
    """At a job's exit its process group's threads end inside the window: summed over the
    process, their lost time outweighed what the others added (0 of a core); thread by thread,
    the threads still there count what they added and a thread born inside counts from zero."""
    start = {"ns": 0, "busy": 0, "total": 100, "threads": 2,
             "tasks": {"101": (100, 10), "102": (10 ** 9, 10 ** 9)}}
    end = {"ns": 10 ** 9, "busy": 50, "total": 200, "threads": 2,
           "tasks": {"101": (100 + 5 * 10 ** 8, 10 + 10 ** 8), "103": (10 ** 8, 0)}}
    share = cpu_share.window(start, end)
    assert share["process_cpu"] == 0.6 and share["run_delay"] == 0.1, share
