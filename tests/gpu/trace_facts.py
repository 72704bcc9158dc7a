"""What a captured profiler trace holds, as counts a check can judge: CUDA kernels and the
`ac2g` flows linking their launches to them (Kineto), memory copies, communication by name
(gloo, NCCL, c10d), the `ProfilerStep#N` ids, and whether every `Optimizer.step#...` range
sits inside one step (eroica's iteration boundary is outside torch's optimizer range).

Reads a Kineto object (`{"traceEvents": [...], "distributedInfo": ...}`) or the bare event list
CPU-only torch 1.13 writes, `.json` or `.json.gz`.
"""

import collections
import gzip
import json

COMM_PREFIXES = ("gloo:", "nccl:", "c10d::", "record_param_comms", "ProcessGroupGloo",
                 "ProcessGroupNCCL")


def load_events(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    if isinstance(doc, list):
        return doc, {}
    return doc.get("traceEvents", []), doc


def _span(e):
    ts = float(e.get("ts", 0))
    return ts, ts + float(e.get("dur", 0))


def is_comm_name(name):
    return name.startswith(COMM_PREFIXES) or name.lower().startswith("nccl")


def step_id(e):
    name = e.get("name", "")
    if not name.startswith("ProfilerStep#") or e.get("cat", "user_annotation") != "user_annotation":
        return None
    try:
        return int(name[len("ProfilerStep#"):])
    except ValueError:
        return None


def optimizer_ranges_inside_steps(events):
    """(inside, total): Optimizer.step# ranges wholly inside one ProfilerStep# range."""
    steps = [_span(e) for e in events if e.get("ph") == "X" and step_id(e) is not None]
    ranges = [_span(e) for e in events if e.get("ph") == "X"
              and e.get("name", "").startswith("Optimizer.step#")
              and e.get("cat", "cpu_op") in ("cpu_op", "user_annotation")]
    inside = sum(1 for a, b in ranges if any(s <= a and b <= t for s, t in steps))
    return inside, len(ranges)


def trace_facts(path):
    events, doc = load_events(path)
    kernels = collections.Counter()
    kernel_us = collections.Counter()
    kernel_correlations = set()
    streams = set()
    flow_ids = {"s": set(), "f": set()}
    memcpy = collections.Counter()
    comm = collections.Counter()
    collectives = collections.Counter()
    launches = 0
    steps = set()
    step_ranges = 0
    for e in events:
        if not isinstance(e, dict):
            continue
        cat, name, ph = e.get("cat", ""), e.get("name", ""), e.get("ph", "")
        args = e.get("args") or {}
        if cat == "ac2g" and ph in flow_ids:
            flow_ids[ph].add(e.get("id"))
            continue
        if ph != "X":
            continue
        if cat == "kernel":
            kernels[name] += 1
            kernel_us[name] += float(e.get("dur", 0))
            if "correlation" in args:
                kernel_correlations.add(args["correlation"])
            if "stream" in args:
                streams.add(args["stream"])
        elif cat == "gpu_memcpy" or name.startswith("Memcpy"):
            memcpy[name] += 1
        elif cat == "cuda_runtime" and "Launch" in name:
            launches += 1
        if is_comm_name(name):
            comm[name] += 1
        if "Collective name" in args:
            collectives[str(args["Collective name"])] += 1
        sid = step_id(e)
        if sid is not None:
            steps.add(sid)
            step_ranges += 1
    linked = kernel_correlations & (flow_ids["s"] | flow_ids["f"])
    inside, total = optimizer_ranges_inside_steps([e for e in events if isinstance(e, dict)])
    dist = doc.get("distributedInfo") or {}
    devices = doc.get("deviceProperties") or []
    return {
        "format": "kineto" if doc else "event-list",
        "events": len(events),
        "rank": dist.get("rank"),
        "backend": dist.get("backend"),
        "device_names": sorted({d.get("name", "") for d in devices if isinstance(d, dict)}),
        "steps": sorted(steps),
        "step_ranges": step_ranges,  # one per id: torch 1.13's own first step came twice
        "kernels": sum(kernels.values()),
        "kernel_names": len(kernels),
        "top_kernels": [[n, round(us, 1)] for n, us in kernel_us.most_common(3)],
        "streams": sorted(streams, key=str),
        "launches": launches,
        "flows": len(flow_ids["s"]) + len(flow_ids["f"]),
        "kernels_with_flow": round(len(linked) / len(kernel_correlations), 4) if kernel_correlations else None,
        "memcpy": sum(memcpy.values()),
        "comm_names": sorted(comm),
        "collectives": dict(collectives),
        "optimizer_ranges": total,
        "optimizer_ranges_inside_a_step": inside,
    }
