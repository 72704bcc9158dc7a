"""The window's stack sampler: bounded, off outside a window, never raising into training."""

import gc
import glob
import json
import os
import subprocess
import sys
import threading
import time

from eroica import capture, stack_sampler


def busy_until(stop: threading.Event) -> None:
    while not stop.is_set():  # hot loop: the frame the sampler must see
        sum(range(200))


def test_samples_name_the_running_frame_and_stop_at_the_bound(tmp_path):
    stop = threading.Event()
    worker = threading.Thread(target=busy_until, args=(stop,))
    worker.start()
    sampler = stack_sampler.StackSampler(worker.ident, hz=500, max_samples=20)
    sampler.start()
    deadline = time.monotonic() + 10
    while sampler._thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not sampler._thread.is_alive()  # the buffer filled: the thread ended by itself
    stop.set()
    worker.join()
    sampler.stop()
    assert len(sampler.samples) == 20 and sampler.dropped == 1
    sampler.mark_step(7)
    sampler.write(str(tmp_path), 3, 123)
    doc = json.load(open(stack_sampler.stacks_path(str(tmp_path), 3)))
    assert doc["schema"] == stack_sampler.SCHEMA and doc["rank"] == 3
    assert doc["profiler_start_unix_ns"] == 123 and "7" in doc["step_start_unix_ns"]
    times = [sample[0] for sample in doc["samples"]]
    assert times == sorted(times) and len(times) == 20
    if os.path.exists("/proc/thread-self/schedstat"):  # each keeps the sampler's wait for a CPU
        assert all(len(sample) == 3 and sample[2] >= 0 for sample in doc["samples"]), doc["samples"]
    innermost = {tuple(doc["frames"][doc["stacks"][sample[1]][0]][::2]) for sample in doc["samples"]}
    assert (__file__, "busy_until") in innermost, innermost
    assert os.path.join(os.path.dirname(stack_sampler.__file__), "") in doc["library_prefixes"]


def test_a_failing_sample_stops_the_sampler_with_a_note_and_no_exception():
    def broken():
        raise RuntimeError("no frames today")

    sampler = stack_sampler.StackSampler(threading.get_ident(), hz=1000, max_samples=10,
                                         current_frames=broken)
    sampler.start()
    sampler._thread.join(5)
    assert not sampler._thread.is_alive() and "no frames today" in sampler.error
    sampler.stop()
    assert sampler.doc(0, 0)["error"] == "RuntimeError: no frames today"


def test_a_sampler_that_cannot_start_says_so_and_does_not_raise(monkeypatch):
    def no_threads(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", no_threads)
    sampler = stack_sampler.StackSampler(threading.get_ident(), hz=100, max_samples=10)
    sampler.start()
    sampler.mark_step(0)
    sampler.stop()
    assert "can't start new thread" in sampler.doc(0, 0)["error"]


def test_no_sampler_thread_outside_a_window(tmp_path):
    import torch

    session = {"session_id": "s", "reason": "forced", "target_iteration": 0,
               "capture_iters": 2, "capture_max_s": 20}

    def samplers():
        return [t for t in threading.enumerate() if t.name == "eroica-stacks"]

    cap = capture.Capture(session, 0, 1, str(tmp_path), stack_hz=200, stack_max_samples=100)
    assert samplers() == []
    cap.start(0)
    assert len(samplers()) == 1
    for i in range(1, 3):
        start = time.monotonic()
        while time.monotonic() - start < 0.05:
            torch.ones(10).sum()
            time.sleep(0.001)  # a tight loop of ops records 100,000+ events, 5 s of export here
        done = cap.on_boundary(i, 0.05)
    assert done and samplers() == []
    cap.export()
    doc = json.load(open(stack_sampler.stacks_path(str(tmp_path), 0)))
    assert len(doc["samples"]) >= 5 and set(doc["step_start_unix_ns"]) == {"0", "1"}
    assert 0 < doc["busy_ns"] < 0.1 * sum(cap.iteration_times_s) * 1e9
    assert doc["profiler_start_unix_ns"] == cap.start_unix_ns
    # Off (EROICA_STACK_HZ=0): no thread in the window, the switch interval untouched, and a
    # file with no samples but the window's CPU reading, which diagnose needs to tell a busy
    # node from a slow network.
    interval = sys.getswitchinterval()
    off = capture.Capture(session, 1, 2, str(tmp_path), stack_hz=0)
    off.start(0)
    assert samplers() == [] and sys.getswitchinterval() == interval
    for i in range(1, 3):
        start = time.monotonic()
        while time.monotonic() - start < 0.05:
            torch.ones(10).sum()
            time.sleep(0.001)
        done = off.on_boundary(i, 0.05)
    assert done
    off.export()
    doc = json.load(open(stack_sampler.stacks_path(str(tmp_path), 1)))
    assert doc["hz"] == 0 and doc["samples"] == [] and set(doc["step_start_unix_ns"]) == {"0", "1"}
    if os.path.exists("/proc/self/stat"):
        assert doc["cpu"]["window_ns"] > 0


def test_the_gil_switch_interval_is_short_in_a_window_only():
    # A pure-Python loop gives the GIL up only every switch interval; a shorter one while the
    # window samples lets a sample land inside an 8 ms loop instead of after it.
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    try:
        sampler = stack_sampler.StackSampler(threading.get_ident(), hz=100, max_samples=10)
        sampler.start()
        assert sys.getswitchinterval() == stack_sampler._WINDOW_SWITCH_INTERVAL_S
        sampler.stop()
        assert sys.getswitchinterval() == 0.005
        # Changed by someone else during the window: theirs stays.
        sampler = stack_sampler.StackSampler(threading.get_ident(), hz=100, max_samples=10)
        sampler.start()
        sys.setswitchinterval(0.002)
        sampler.stop()
        assert sys.getswitchinterval() == 0.002
        # Already shorter than the window's: left alone.
        sys.setswitchinterval(0.0005)
        sampler = stack_sampler.StackSampler(threading.get_ident(), hz=100, max_samples=10)
        sampler.start()
        assert sys.getswitchinterval() == 0.0005
        sampler.stop()
        assert sys.getswitchinterval() == 0.0005
    finally:
        sys.setswitchinterval(before)


def test_samples_land_inside_a_short_pure_python_loop():
    # The training thread runs 8 ms loops of pure Python with 1 ms sleeps between them: with the
    # window's short switch interval the sampler gets the GIL within a loop.
    in_loop = []

    def loop_8ms() -> None:
        end = time.perf_counter() + 0.008
        while time.perf_counter() < end:  # the frame the samples must name
            pass

    sampler = stack_sampler.StackSampler(threading.get_ident(), hz=150, max_samples=1000)
    sampler.start()
    for _ in range(40):
        loop_8ms()
        time.sleep(0.001)
    sampler.stop()
    stacks = {index: stack for stack, index in sampler._stacks.items()}
    functions = {index: key[2] for key, index in sampler._frames.items()}
    for sample in sampler.samples:
        stack_id = sample[1]
        in_loop.append(functions[stacks[stack_id][0]] == "loop_8ms")  # the innermost frame
    # With the default 5 ms interval none of them lands in the loop (the sampler, waking inside
    # a loop, gets the GIL only in the sleep after it); here most do. The bound leaves room for
    # a loaded machine.
    assert len(in_loop) >= 8, len(in_loop)
    assert sum(in_loop) >= 0.3 * len(in_loop), (sum(in_loop), len(in_loop))


class _Cycle:
    def __init__(self):
        self.me = self


def _collect_garbage(count: int, generation: int = 2) -> float:
    """Makes `count` reference cycles, then collects them; returns how long the collection took."""
    garbage = [_Cycle() for _ in range(count)]
    del garbage
    started = time.perf_counter()
    gc.collect(generation)  # the line a collection's samples must name
    return time.perf_counter() - started


COLLECT_LINE = next(number for number, text in enumerate(open(__file__), 1)
                    if text.strip().startswith("gc.collect(generation)  # the line"))


def _innermost(doc, sample):
    file, line, function = doc["frames"][doc["stacks"][sample[1]][0]]
    return file, line, function


def test_a_long_collection_is_the_time_of_the_line_that_collected():
    # gc.collect() holds the GIL: the sampler's next sample comes after it, at whatever line the
    # thread has reached by then (the caller's next one). The gc callback keeps the collection
    # itself, at its start and end, with the collecting line.
    gc.disable()  # only the explicit collection: none of the allocations above starts one
    try:
        sampler = stack_sampler.StackSampler(threading.get_ident(), hz=50, max_samples=1000)
        sampler.start()
        took_s = _collect_garbage(300_000)
        end = time.perf_counter() + 0.1
        while time.perf_counter() < end:  # the caller's next line: not the collection's
            pass
        sampler.stop()
    finally:
        gc.enable()
    assert took_s >= 0.005, took_s  # a quarter of the 20 ms period: long enough to keep
    doc = sampler.doc(0, 0)
    at_collect = [s for s in doc["samples"] if _innermost(doc, s) == (__file__, COLLECT_LINE, "_collect_garbage")]
    assert len(at_collect) == 2, doc["samples"]
    assert at_collect[1][0] - at_collect[0][0] >= 0.9 * took_s * 1e9, (at_collect, took_s)
    times = [s[0] for s in doc["samples"]]
    assert times == sorted(times)
    assert gc.callbacks.count(sampler._on_gc) == 0  # removed when the window ends


def test_short_collections_and_other_threads_collections_add_no_samples():
    sampler = stack_sampler.StackSampler(threading.get_ident(), hz=50, max_samples=1000,
                                         current_frames=lambda: {})  # no regular samples
    sampler.start()
    for _ in range(20):
        _collect_garbage(10, generation=0)  # the youngest objects only: far under 5 ms
    other = threading.Thread(target=_collect_garbage, args=(300_000,))
    other.start()
    other.join()
    sampler.stop()
    assert sampler.doc(0, 0)["samples"] == [] and not sampler.error


def test_the_gc_callback_never_raises_and_is_bounded():
    sampler = stack_sampler.StackSampler(threading.get_ident(), hz=1000, max_samples=3,
                                         current_frames=lambda: {})
    sampler._min_gc_ns = 0
    sampler._on_gc("start", {})
    sampler._on_gc("stop", {})
    sampler._on_gc("start", {})
    sampler._on_gc("stop", {})  # a second span would pass the bound of 3 samples
    assert len(sampler.doc(0, 0)["samples"]) == 2 and sampler.dropped == 2
    sampler.max_samples = 10
    sampler._frame_keys = None  # broken: the callback notes it and returns
    sampler._on_gc("start", {})
    sampler._on_gc("stop", {})
    assert "gc callback" in sampler.error


def test_other_threads_of_the_process_are_sampled_with_their_cpu_time(tmp_path):
    # A metrics thread beside the training thread runs pure Python most of the time: its own
    # frames and its time on a CPU are what name it; eroica's threads and the sampler are left out.
    stop = threading.Event()
    busy = threading.Thread(target=busy_until, args=(stop,), name="metrics")
    idle = threading.Thread(target=stop.wait, name="idle")
    own = threading.Thread(target=stop.wait, name="eroica-monitor")
    for t in (busy, idle, own):
        t.start()
    sampler = stack_sampler.StackSampler(threading.get_ident(), hz=200, max_samples=1000, other_threads=True)
    sampler.start()
    end = time.monotonic() + 0.4
    while time.monotonic() < end:
        time.sleep(0.002)  # the training thread mostly waits
    sampler.stop()
    stop.set()
    for t in (busy, idle, own):
        t.join()
    sampler.write(str(tmp_path), 0, 0)
    doc = json.load(open(stack_sampler.stacks_path(str(tmp_path), 0)))
    others = {o["name"]: o for o in doc["other_threads"]}
    assert set(others) == {"metrics", "idle"}, sorted(others)
    metrics = others["metrics"]
    assert metrics["native_id"] == busy.native_id and len(metrics["samples"]) >= 5
    assert metrics["hz"] == 200 / stack_sampler._OTHER_THREADS_EVERY
    innermost = {tuple(metrics["frames"][metrics["stacks"][s[1]][0]][::2]) for s in metrics["samples"]}
    assert (__file__, "busy_until") in innermost, innermost
    if "cpu_ns" in metrics:  # /proc readable: the busy thread ran far longer than the idle one
        assert metrics["cpu_ns"] > 10 * others["idle"].get("cpu_ns", 0) and metrics["cpu_ns"] > 5e7, others
    # Without the flag (a loader worker's sampler) no other thread is sampled.
    plain = stack_sampler.StackSampler(threading.get_ident(), hz=200, max_samples=10)
    plain.sample_once()
    assert "other_threads" not in plain.doc(0, 0)


def test_other_threads_samples_are_bounded():
    stop = threading.Event()
    threads = [threading.Thread(target=stop.wait, name="t%d" % i) for i in range(stack_sampler._MAX_OTHER_THREADS + 3)]
    for t in threads:
        t.start()
    sampler = stack_sampler.StackSampler(threading.get_ident(), hz=200, max_samples=5, other_threads=True)
    for _ in range(3 * stack_sampler._OTHER_THREADS_EVERY):
        sampler.sample_once()
    stop.set()
    for t in threads:
        t.join()
    others = sampler.doc(0, 0)["other_threads"]
    assert len(others) <= stack_sampler._MAX_OTHER_THREADS
    assert sum(len(o["samples"]) for o in others) <= 5 and sampler.other_dropped > 0
    assert sampler.doc(0, 0)["other_threads_dropped"] == sampler.other_dropped
    assert sampler.dropped == 3 * stack_sampler._OTHER_THREADS_EVERY - 5  # the training thread's own


def native_walker_built() -> bool:
    """Whether the build beside EROICA_BIN made the native walker (python/native/CMakeLists.txt)."""
    binary = os.environ.get("EROICA_BIN", "")
    return bool(binary) and bool(glob.glob(os.path.join(os.path.dirname(binary), "python-native", "_eroica_frames*")))


def test_the_native_walker_is_used_where_the_build_made_it():
    sampler = stack_sampler.StackSampler(threading.get_ident(), hz=100, max_samples=10)
    if native_walker_built():
        assert stack_sampler._native_frames is not None, "built, but not importable: PYTHONPATH"
        assert sampler._native is not None
        assert sampler.doc(0, 0)["walker"] == "interpreter frames"
    # A test's own current_frames keeps the Python path, and the file says so.
    python_path = stack_sampler.StackSampler(threading.get_ident(), hz=100, max_samples=10,
                                             current_frames=sys._current_frames.__call__)
    assert python_path._native is None and python_path.doc(0, 0)["walker"] == "frame objects"


def test_without_the_native_walker_cpython_3_11_reads_no_frame_objects(monkeypatch):
    """Frame objects read from another thread can be freed under the reader on 3.11: there the
    window keeps its CPU reading and samples nothing; elsewhere the Python path samples."""
    monkeypatch.setattr(stack_sampler, "_native_frames", None)
    sampler = stack_sampler.StackSampler(threading.get_ident(), hz=100, max_samples=10)
    on_311 = sys.implementation.name == "cpython" and sys.version_info[:2] == (3, 11)
    assert sampler.unsafe_frames == on_311
    assert sampler.sampling == (not on_311)
    sampler.start()
    time.sleep(0.05)
    sampler.stop()
    doc = sampler.doc(0, 0)
    if on_311:
        assert doc["hz"] == 0 and not doc["samples"] and doc["walker"].startswith("none:")
        assert "error" not in doc
    else:
        assert doc["walker"] == "frame objects"


def parked_in(event: threading.Event) -> None:
    event.wait()  # the frame the walkers must agree on


def test_the_native_walker_reads_what_frame_objects_say():
    if stack_sampler._native_frames is None:
        assert not native_walker_built()
        return
    event = threading.Event()
    thread = threading.Thread(target=parked_in, args=(event,))
    thread.start()
    try:
        deadline = time.monotonic() + 5
        while thread.ident not in sys._current_frames() and time.monotonic() < deadline:
            time.sleep(0.01)
        python_path = stack_sampler.StackSampler(thread.ident, hz=100, max_samples=10, current_frames=lambda: {})
        walked = stack_sampler._native_frames.stacks((thread.ident,), 64, None)[thread.ident]
        assert walked == python_path._frame_keys(sys._current_frames()[thread.ident])
        assert any(function == "parked_in" for _, _, function in walked), walked
        # From the root code outwards nothing is kept (a forked loader worker's parent frames).
        rooted = stack_sampler._native_frames.stacks((thread.ident,), 64, parked_in.__code__)[thread.ident]
        assert rooted == walked[:[function for _, _, function in walked].index("parked_in")]
        assert len(stack_sampler._native_frames.stacks((thread.ident,), 2, None)[thread.ident]) == 2
        assert thread.ident not in stack_sampler._native_frames.stacks((threading.get_ident(),), 64, None)
    finally:
        event.set()
        thread.join()


CHURN = r"""
import gc, sys, threading, time
from eroica import stack_sampler

class Node:
    def __init__(self, x):
        self.x, self.peer = x, None
    def __del__(self):
        pass

def nodes(n):
    for i in range(n):
        yield Node(i)

def deep(k, n):
    if k == 0:
        kept = []
        for node in nodes(n):
            a = Node(node); a.peer = a
            kept.append(a)
        return len(kept)
    return (lambda: deep(k - 1, n))()

def helper(cv):
    while True:
        with cv:
            cv.wait(0.001)
        deep(3, 5)

cv = threading.Condition()
for _ in range(3):
    threading.Thread(target=helper, args=(cv,), daemon=True).start()
gc.set_threshold(50, 5, 5)
sampler = stack_sampler.StackSampler(threading.get_ident(), 2000, 10 ** 6, other_threads=True)
sampler.start()
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    deep(6, 20)
    with cv:
        cv.notify_all()
sampler.stop()
print("|".join([sampler.doc(0, 0)["walker"], str(len(sampler.samples)), sampler.error or "no error"]))
"""


def test_sampling_threads_that_churn_their_frames_leaves_the_process_standing(tmp_path):
    """Frames made and dropped under the sampler on every thread, collections in their setup and
    teardown, finalizers, three threads waking each millisecond: the process ends by itself."""
    script = tmp_path / "churn.py"
    script.write_text(CHURN)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, str(script), "4"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    walker, samples, error = done.stdout.strip().split("|")
    assert int(samples) > 100 and error == "no error", done.stdout
    assert walker == "interpreter frames" or not native_walker_built(), done.stdout


def test_the_sampled_thread_is_kept_past_the_walkers_thread_limit():
    """The native walker reads at most 64 threads, the newest first; the training thread (often the
    oldest) is read on its own where the others filled it."""
    event = threading.Event()
    threads = [threading.Thread(target=parked_in, args=(event,), daemon=True) for _ in range(70)]
    for thread in threads:
        thread.start()
    try:
        sampler = stack_sampler.StackSampler(threading.get_ident(), hz=100, max_samples=10, other_threads=True)
        assert sampler.sample_once() and len(sampler.samples) == 1
        if sampler._native is not None:
            assert len(sampler._native.stacks(None, 64, None)) == 64  # the limit this guards
        doc = sampler.doc(0, 0)
        sampled = {doc["frames"][frame][2] for frame in doc["stacks"][doc["samples"][0][1]]}
        assert "test_the_sampled_thread_is_kept_past_the_walkers_thread_limit" in sampled, sampled
    finally:
        event.set()
        for thread in threads:
            thread.join()
