"""Writes the golden cases' input traces (tests/golden/cases/<case>/), deterministically.

Each case is one thing a trace reader meets in the field (docs/TRACE-FORMAT.md): an event kind, a timestamp encoding, a file form, a damage. The traces
are tiny and made here, so the golden tests need nothing outside the repository. Run it only
when a case is added or changed; then re-bless (`golden.py --bless`) and review the diff.
"""
import gzip
import json
import pathlib
import re

CASES = pathlib.Path(__file__).resolve().parent / "cases"
EPOCH_US = 1_700_000_000_000_000  # integer µs since the Unix epoch, as 2022-2023 Kineto writes
PID, TID, BWD_TID = 4242, 4242, 4250


def x(name, cat, ts, dur, tid=TID, pid=PID, **args):
    event = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        event["args"] = args
    return event


def cpu_step(step, t, loader_us=500, python_us=(300, 400), collective_us=1_500, compute_scale=1.0):
    """One CPU training step from t (µs): loader, forward, backward, all-reduce, optimizer, with
    uncovered Python between them. Returns (events, end)."""
    events, start = [], t
    t += 50
    events.append(x("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "user_annotation", t, loader_us))
    t += loader_us + python_us[0]
    for i, dur in enumerate((1_800, 2_200)):
        d = int(dur * compute_scale)
        events.append(x("aten::linear", "cpu_op", t, d, **{"External id": step * 10 + i, "Input Dims": [[32, 64]]}))
        events.append(x("aten::addmm", "cpu_op", t + 10, d - 20, **{"External id": step * 10 + i}))
        t += d + 40
    d = int(3_000 * compute_scale)
    events.append(x("autograd::engine::evaluate_function: AddmmBackward0", "cpu_op", t, d, tid=BWD_TID))
    events.append(x("aten::mm", "cpu_op", t + 20, d - 40, tid=BWD_TID))
    t += d + 30
    events.append(x("gloo:all_reduce", "user_annotation", t, collective_us,
                    **{"Input Dims": [[16_640]], "Input type": ["float"]}))
    t += collective_us + python_us[1]
    events.append(x("Optimizer.step#SGD.step", "user_annotation", t, 600))
    events.append(x("aten::add_", "cpu_op", t + 20, 500))
    t += 650
    events.insert(0, x(f"ProfilerStep#{step}", "user_annotation", start, t - start))
    return events, t + 20


def metadata(pid=PID):
    return [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python3"}},
            {"ph": "M", "name": "thread_name", "pid": pid, "tid": TID, "args": {"name": "thread 4242 (python3)"}},
            {"ph": "M", "name": "thread_name", "pid": pid, "tid": BWD_TID, "args": {"name": "thread 4250 (python3)"}}]


def cpu_run(steps=4, t0=EPOCH_US, **step_args):
    events, t = metadata(), t0
    for s in range(steps):
        step_events, t = cpu_step(10 + s, t, **step_args)
        events += step_events
    return events


def kineto(events, rank=None, world_size=None, **extra):
    doc = {"schemaVersion": 1, "deviceProperties": []}
    if rank is not None:
        doc["distributedInfo"] = {"backend": "gloo", "rank": rank, "world_size": world_size}
    doc["traceEvents"] = events
    doc.update({"traceName": "golden", "displayTimeUnit": "ms"})
    doc.update(extra)
    return doc


def write(case, name, doc, compact=False):
    folder = CASES / case
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps(doc, separators=(",", ":")) if compact else json.dumps(doc, indent=2)
    if name.endswith(".gz"):
        (folder / name).write_bytes(gzip.compress(text.encode(), mtime=0))
    else:
        (folder / name).write_text(text + "\n")
    return text


def gpu_events():
    """A GPU step: runtime launches, their kernels (correlation), a memcpy, a memset, an NCCL
    kernel, ac2g flows (one orphan f), a stream sync, and the profiler's bookkeeping events with
    string and negative pids."""
    t, ev = EPOCH_US, metadata()
    ev += [{"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
           {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7 "}}]
    for step in range(3):
        s = t
        corr = 100 * (step + 1)
        ev.append(x("aten::linear", "cpu_op", t + 10, 120, **{"External id": corr}))
        ev.append(x("cudaLaunchKernel", "cuda_runtime", t + 20, 8, correlation=corr, **{"External id": corr}))
        ev.append({"ph": "s", "id": corr, "pid": PID, "tid": TID, "ts": t + 20, "cat": "ac2g", "name": "ac2g"})
        ev.append(x("void at::native::vectorized_elementwise_kernel<4, float>(int, float)", "kernel", t + 40, 900,
                    pid=0, tid=7, correlation=corr, device=0, stream=7, grid=[80, 1, 1], block=[128, 1, 1]))
        ev.append({"ph": "f", "id": corr, "pid": 0, "tid": 7, "ts": t + 40, "cat": "ac2g", "name": "ac2g", "bp": "e"})
        ev.append(x("cudaMemcpyAsync", "cuda_runtime", t + 140, 10, correlation=corr + 1))
        ev.append(x("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", t + 950, 300, pid=0, tid=7,
                    correlation=corr + 1, bytes=1 << 20, **{"memory bandwidth (GB/s)": 3.5}))
        ev.append(x("cudaMemsetAsync", "cuda_runtime", t + 160, 6, correlation=corr + 2))
        ev.append(x("Memset (Device)", "gpu_memset", t + 1_260, 20, pid=0, tid=7, correlation=corr + 2))
        ev.append(x("nccl:all_reduce", "user_annotation", t + 200, 60))
        ev.append(x("cudaLaunchKernel", "cuda_runtime", t + 210, 8, correlation=corr + 3))
        ev.append(x("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "kernel",
                    t + 1_300, 700, pid=0, tid=22, correlation=corr + 3, device=0, stream=22))
        ev.append({"ph": "f", "id": corr + 50, "pid": PID, "tid": TID, "ts": t + 230, "cat": "ac2g", "name": "ac2g",
                   "bp": "e"})  # an orphan flow end on a non-launching call, as real traces have
        ev.append(x("cudaDeviceGetAttribute", "cuda_runtime", t + 230, 2))
        ev.append(x("cudaStreamSynchronize", "cuda_runtime", t + 240, 1_800, correlation=corr + 4))
        ev.append(x("Stream Sync", "cuda_sync", t + 2_000, 10, pid=0, tid=7, correlation=corr + 4, stream=7,
                    cuda_sync_kind="Stream Sync"))
        t += 2_100
        ev.insert(len(ev), x(f"ProfilerStep#{step + 5}", "user_annotation", s, t - s))
        t += 30
    ev.append(x("PyTorch Profiler (0)", "Trace", EPOCH_US - 5, t - EPOCH_US + 10, pid="Spans", tid="PyTorch Profiler"))
    ev.append({"ph": "M", "name": "process_sort_index", "pid": "Spans", "tid": 0, "args": {"sort_index": 536870912}})
    ev.append(x("Activity Buffer Request", "overhead", EPOCH_US + 5, 40, pid=-1, tid=0))
    ev.append({"ph": "i", "s": "g", "name": "Iteration Start: PyTorch Profiler", "pid": "Traces",
               "tid": "Trace PyTorch Profiler", "ts": EPOCH_US})
    ev.append({"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": t})
    return ev


def with_float_ts(events, offset_us):
    """The same events with ts written as float µs: `offset_us` subtracted (relative to a base)
    and three nanosecond digits appended. json.dumps would round a double, so each number is a
    placeholder string that `write_raw` turns back into the exact text."""
    out = []
    for i, e in enumerate(events):
        e = dict(e)
        if "ts" in e:
            e["ts"] = f"@raw:{e['ts'] - offset_us}.{(i * 37) % 1000:03d}@"
        out.append(e)
    return out


def write_raw(case, name, doc):
    folder = CASES / case
    folder.mkdir(parents=True, exist_ok=True)
    text = re.sub(r'"@raw:([0-9.]+)@"', r"\1", json.dumps(doc, indent=2))
    (folder / name).write_text(text + "\n")


def main():
    # A healthy 2-rank CPU job, Kineto object form, integer µs since the epoch.
    for rank in range(2):
        write("kineto_object_2rank", f"rank-{rank}.json", kineto(cpu_run(), rank, 2))
    # The bare event list CPU-only builds write; the rank comes from the file name. One line.
    write("bare_list", "worker3.pt.trace.json", cpu_run(), compact=True)
    # Float µs since the epoch with nanosecond decimals, which a double cannot hold exactly.
    write_raw("float_ns_timestamps", "rank-0.json", kineto(with_float_ts(cpu_run(), 0), 0, 1))
    # Float µs relative to baseTimeNanoseconds, which comes after traceEvents (native output).
    base_us = EPOCH_US - 4_000_000
    write_raw("base_time_nanoseconds", "rank-0.json",
              kineto(with_float_ts(cpu_run(), base_us), 0, 1, baseTimeNanoseconds=base_us * 1000,
                     displayTimeUnit="ns"))
    # GPU kernels linked by correlation, copies, an NCCL kernel, flows, bookkeeping pids.
    write("gpu_kernels", "rank-0.json", kineto(gpu_events(), 0, 1))
    # Memory instants, counters and global instants among the steps; keys in another order.
    events = cpu_run()
    for i, e in enumerate(list(events)):
        if e.get("cat") == "cpu_op" and i % 3 == 0:
            events.append({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": PID,
                           "tid": TID, "ts": e["ts"] + 1, "args": {"Addr": 140000 + i, "Bytes": 8192,
                                                                    "Total Allocated": 1 << 20}})
            events.append({"ts": e["ts"] + 2, "name": "queue_length", "ph": "C", "pid": PID, "args": {"stream 7": i}})
    write("instants_and_counters", "rank-0.json", {"traceEvents": events, "schemaVersion": 1,
                                                   "distributedInfo": {"rank": 0}})
    # A truncated file (a job killed while writing): the events before the cut are kept.
    text = json.dumps(kineto(cpu_run(), 0, 1), indent=2)
    cut = text.index("Optimizer.step#SGD.step", len(text) // 2)
    (CASES / "truncated").mkdir(parents=True, exist_ok=True)
    (CASES / "truncated" / "rank-0.json").write_text(text[:cut])
    # gzip, as most real traces are.
    write("gzip", "rank-0.json.gz", kineto(cpu_run(), 0, 1))
    # No ProfilerStep at all (inference, partial captures): the whole window is one iteration.
    write("no_profiler_step", "rank-0.json",
          kineto([e for e in cpu_run() if not e.get("name", "").startswith("ProfilerStep#")], 0, 1))
    # with_stack=True: python_function events name the Python code.
    events = cpu_run()
    for e in list(events):
        if e.get("name", "").startswith("ProfilerStep#"):
            events.append(x("train.py(57): train_step", "python_function", e["ts"] + 1, e["dur"] - 2,
                            **{"Python id": 7, "Python parent id": 1}))
            events.append(x("train.py(40): log_metrics", "python_function", e["ts"] + e["dur"] - 300, 250,
                            **{"Python id": 8, "Python parent id": 7}))
    write("with_stack", "rank-0.json", kineto(events, 0, 1, with_stack=1))
    # Escapes in names and categories, and a rank from distributedInfo's newer pg_config form.
    events = cpu_run()
    for e in events:
        if e.get("name") == "aten::add_":
            e["name"] = "my \"quoted\" op \u00e9\u2603"
    doc = kineto(events, None)
    doc["distributedInfo"] = {"backend": "gloo", "rank": 5, "world_size": 8, "pg_count": 1, "nccl_version": "",
                              "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cpu:gloo",
                                             "pg_size": 8, "ranks": list(range(8))}]}
    text = json.dumps(doc, indent=2, ensure_ascii=True).replace('"cat": "cpu_op"', '"cat": "cpu_\\u006fp"', 1)
    (CASES / "escapes_and_pg_config").mkdir(parents=True, exist_ok=True)
    (CASES / "escapes_and_pg_config" / "trace-rank0-name-ignored.json").write_text(text + "\n")
    # A 4-rank job where rank 2's data loader is slow; the others wait for it at the all-reduce.
    for rank in range(4):
        slow = rank == 2
        write("straggler_4rank", f"rank-{rank}.json",
              kineto(cpu_run(loader_us=30_000 if slow else 500,
                             collective_us=1_500 if slow else 29_500), rank, 4))
    # Every rank waits half of each step in its all-reduce, on a node whose 2 cores were busy 99 %
    # of the window with every rank's training thread queued longer than it waited: the stack
    # sampler's CPU readings (rank-<r>.stacks.json "cpu") make it a note, not a slow network.
    for rank in range(4):
        events = cpu_run(collective_us=12_000 + 50 * rank)
        write("cpu_saturated_4rank", f"rank-{rank}.json", kineto(events, rank, 4))
        steps = {e["name"].split("#")[1]: e["ts"] * 1000 for e in events if e.get("name", "").startswith("ProfilerStep#")}
        write("cpu_saturated_4rank", f"rank-{rank}.stacks.json", {
            "schema": "eroica.stack_samples/v1", "rank": rank, "pid": PID, "hz": 150,
            "profiler_start_unix_ns": EPOCH_US * 1000, "step_start_unix_ns": steps, "library_prefixes": [],
            "frames": [], "stacks": [], "samples": [], "dropped": 0, "busy_ns": 0,
            "cpu": {"window_ns": 40_000_000, "cpus": 2, "allowed_cpus": 2, "host_busy": 0.99,
                    "process_cpu": 0.45, "run_delay": 0.8 + 0.01 * rank, "threads": 7, "throttled": 0.0,
                    "main_cpu": 0.3, "main_run_delay": 0.35}})
    # A healthy rank beside files that are not traces: a warning each, the rest diagnosed.
    write("bad_files_beside", "rank-0.json", kineto(cpu_run(), 0, 2))
    write("bad_files_beside", "rank-1.json", kineto(cpu_run(), 1, 2))
    (CASES / "bad_files_beside" / "rank-2.json").write_text("this is not JSON\n")
    (CASES / "bad_files_beside" / "rank-3.json.gz").write_bytes(b"\x1f\x8b\x08\x00broken")


if __name__ == "__main__":
    main()
