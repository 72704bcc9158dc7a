"""The scale-out data path end to end: N ranks publish their own pattern through one real
TCPStore, rank 0 gathers them (python/eroica/exchange.py), writes the central folder and
diagnoses it (central.write_folder + finish.collect_and_diagnose, as the runtime does), and the
planted faults are checked against the diagnosis. `central` measures today's other path
instead: one `eroica diagnose` reading every rank's raw trace.

  scale_bench.py gather EROICA TEMPLATES N [--per-node 8] [--procs 4] [--share K]
  scale_bench.py central EROICA TRACE COPIES

Both print one JSON line. `gather`:
- The ranks' patterns are `eroica synth TEMPLATES -n N --workers-per-block 1 --zstd-level 9`
  with planted faults: magic + one block is exactly the pattern file that rank's own
  `eroica summarize` would write and send (src/synth/synthesizer_test.cc checks that).
- One process hosts the TCPStore server and nothing else (its RSS is the store's memory);
  rank 0 runs alone in another; the other ranks are threads in --procs client processes, each
  rank on its own store connection. With --share K, K ranks (whole nodes) publish through one
  connection instead, one after the other (same keys, same requests, N/K connections): what a
  machine can still run when its open-file limit is below what N connections need (torch
  1.13's TCPStore client opens two sockets, so the server holds two descriptors per client).
- Exchange runs as the runtime configures it (poll 0.1 s; a leader sends its node at 0.6 of
  the deadline at the latest); every rank starts publishing at one signal, after all connected.
"""

import argparse
import datetime
import json
import mmap
import multiprocessing
import os
import resource
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)

from eroica import capture, central, config, diagnose, exchange, finish  # noqa: E402
from run_bench import check_diagnosis, json_size, timed  # noqa: E402

COLLECT_TIMEOUT_S = 120.0  # EROICA_COLLECT_TIMEOUT_S for the bench: every rank arrives well before
STORE_TIMEOUT = datetime.timedelta(seconds=300)
_BLOCK = struct.Struct("<III")


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def rank_spans(path):
    """(offset, size) of each block of a one-worker-per-block bundle, in rank order."""
    spans = []
    with open(path, "rb") as f:
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        pos = central.MAGIC_BYTES
        while pos < len(data):
            compressed, _, workers = _BLOCK.unpack_from(data, pos)
            if workers != 1:
                raise ValueError("block %d holds %d workers, not 1" % (len(spans), workers))
            spans.append((pos, _BLOCK.size + compressed))
            pos += _BLOCK.size + compressed
        magic = bytes(data[:central.MAGIC_BYTES])
    return magic, spans


class RankPatterns:
    """Rank r's own pattern file: the bundle's magic and its block, read where it lies."""

    def __init__(self, path):
        self.magic, self.spans = rank_spans(path)
        self._f = open(path, "rb")
        self._data = mmap.mmap(self._f.fileno(), 0, access=mmap.ACCESS_READ)

    def __call__(self, rank):
        offset, size = self.spans[rank]
        return self.magic + self._data[offset:offset + size]


def record(rank, per_node, patterns):
    header = {"rank": rank, "host": "node%d" % (rank // per_node), "folder": "/local/eroica/scale",
              "trace": "/local/eroica/scale/rank-%d.json.gz" % rank}
    return header, patterns(rank)


def vm_kb(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def server_main(port, conn):
    import torch.distributed as dist

    raise_nofile()
    server = dist.TCPStore("127.0.0.1", port, None, True, STORE_TIMEOUT)
    conn.send((vm_kb(os.getpid(), "VmRSS"), len(os.listdir("/proc/self/fd"))))
    conn.recv()  # go: the store's CPU time counts from here
    cpu0 = cpu_s()
    fds = len(os.listdir("/proc/self/fd"))  # every client is connected by now
    conn.recv()  # measure
    conn.send({"hwm_kb": vm_kb(os.getpid(), "VmHWM"), "rss_kb": vm_kb(os.getpid(), "VmRSS"),
               "cpu_s": cpu_s() - cpu0, "fds": fds})
    conn.recv()  # stop
    del server


class CountingStore:
    """A store connection as Exchange uses it, counting the requests it sends the server."""

    _COUNTED = ("add", "get", "set", "delete_key")

    def __init__(self, store):
        self._store = store
        self.requests = 0

    def __getattr__(self, name):
        method = getattr(self._store, name)
        if name not in self._COUNTED:
            return method

        def counted(*args):
            self.requests += 1
            return method(*args)

        return counted


def connection_groups(world, per_node, share):
    """The ranks behind each store connection: one rank each (share 1, as in a real job), or
    `share` consecutive ranks, whole nodes, through one connection. Rank 0's group is first."""
    if share > 1 and share % per_node:
        raise ValueError("--share %d is not a whole number of %d-rank nodes" % (share, per_node))
    return [list(range(g, min(world, g + share))) for g in range(0, world, share)]


class Ranks:
    """The connections one process hosts: each connects, waits for the start signal, and
    publishes for its ranks: first those that are no node's leader, then the leaders (rank 0,
    which then gathers, last)."""

    def __init__(self, port, groups, world, per_node, patterns_path):
        self.port, self.world, self.per_node = port, world, per_node
        self.patterns = RankPatterns(patterns_path)
        self.groups = groups
        self.connected = 0
        self.lock = threading.Lock()
        self.all_connected = threading.Event()
        if not groups:
            self.all_connected.set()
        self.go = threading.Event()
        self.published = []  # unix time each rank's own record was handed over
        self.errors = []
        self.stores = []
        self.rank0 = None

    def topo(self, rank):
        return exchange.Topology(rank, self.world, self.per_node)

    def run_group(self, ranks):
        import torch.distributed as dist

        try:
            store = CountingStore(dist.TCPStore("127.0.0.1", self.port, None, False,
                                                STORE_TIMEOUT))
            self.stores.append(store)
        except Exception as e:
            self.errors.append("ranks from %d: connect: %s" % (ranks[0], e))
            store = None
        with self.lock:
            self.connected += 1
            if self.connected == len(self.groups):
                self.all_connected.set()
        self.go.wait()
        if store is None:
            return
        order = sorted(ranks, key=lambda r: (self.topo(r).is_leader, -r))
        for rank in order:
            try:
                self.publish(rank, store)
            except Exception as e:
                self.errors.append("rank %d: %s: %s" % (rank, type(e).__name__, e))

    def publish(self, rank, store):
        session = "scale-%d" % self.world
        deadline = time.monotonic() + COLLECT_TIMEOUT_S
        node_deadline = time.monotonic() + finish._NODE_SHARE * COLLECT_TIMEOUT_S
        topo = self.topo(rank)
        ex = exchange.Exchange(store, session, topo)
        own = record(rank, self.per_node, self.patterns)
        if topo.is_leader:  # its own record is ready now; the leader then waits for its node
            self.published.append(time.time())
        own_node = ex.publish(own, node_deadline)
        if not topo.is_leader:
            self.published.append(time.time())
        if rank == 0:
            records, missing = ex.gather(own_node, deadline)
            self.rank0 = {"gathered_at": time.time(), "records": records, "missing": missing,
                          "bytes_read": ex.bytes_read, "requests": ex.requests}

    def start(self):
        threading.stack_size(256 << 10)
        threads = [threading.Thread(target=self.run_group, args=(g,), daemon=True)
                   for g in self.groups]
        for t in threads:
            t.start()
        return threads


def client_main(port, groups, world, per_node, patterns_path, ready, go, results):
    # Stand-ins for ranks that run on other machines: the store and rank 0 come first here.
    os.nice(10)
    raise_nofile()
    host = Ranks(port, groups, world, per_node, patterns_path)
    threads = host.start()
    host.all_connected.wait()
    ready.put((os.getpid(), len(groups), list(host.errors)))
    go.wait()
    cpu0 = cpu_s()
    host.go.set()
    for t in threads:
        t.join()
    results.put({"cpu_s": cpu_s() - cpu0, "store_requests": sum(s.requests for s in host.stores),
                 "published_last": max(host.published, default=0.0),
                 "published": len(host.published), "errors": host.errors[:5]})


def rank0_main(port, group, world, per_node, patterns_path, eroica, work, truth_path, ready,
               go, results):
    """Rank 0 (with its group) alone in its process, then the runtime's own path to the
    report."""
    raise_nofile()
    host = Ranks(port, [group], world, per_node, patterns_path)
    threads = host.start()
    host.all_connected.wait()
    ready.put((os.getpid(), 1, list(host.errors)))
    go.wait()
    started, cpu0 = time.time(), cpu_s()
    host.go.set()
    threads[0].join()
    gather_cpu_s = cpu_s() - cpu0
    g = host.rank0
    if g is None:
        results.put({"rank0_error": host.errors})
        return
    cfg = config.load({"EROICA_BIN": eroica, "EROICA_DIR": work,
                       "EROICA_COLLECT_TIMEOUT_S": str(COLLECT_TIMEOUT_S)})
    session = {"session_id": "scale-%d" % world, "job_id": "scale", "reason": "slowdown",
               "trigger_rank": 0}
    central_dir = os.path.join(work, session["session_id"])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    note = central.write_folder(central_dir, capture.session_doc(session, world, None),
                                g["records"], g["missing"])
    written = time.time()
    line = finish.collect_and_diagnose(cfg, central_dir, world, finish.RankFile.BUNDLE,
                                       time.time(), None, note)
    reported = time.time()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(os.path.join(central_dir, "report.json")) as f:
        report = json.load(f)
    with open(truth_path) as f:
        truth = json.load(f)
    found, missed, extra = check_diagnosis(report, truth)
    results.put({"started": started, "gather_cpu_s": gather_cpu_s, "gathered_at": g["gathered_at"], "folder_written_at": written,
                 "reported_at": reported, "bytes_read": g["bytes_read"], "requests": g["requests"],
                 "records": len(g["records"]), "missing_ranks": g["missing"][:20],
                 "missing_count": len(g["missing"]),
                 "bundle_bytes": os.path.getsize(os.path.join(central_dir, central.BUNDLE_NAME)),
                 "diagnose_cpu_s": (after.ru_utime + after.ru_stime)
                 - (before.ru_utime + before.ru_stime),
                 "line": line, "found": found, "missed": missed, "extra": extra,
                 "planted": len(found) + len(missed), "rank0_errors": host.errors[:5],
                 "published_last": max(host.published, default=0.0),
                 "published": len(host.published),
                 "store_requests": sum(s.requests for s in host.stores)})


def free_port():
    with socket.socket() as s:  # the kernel's choice, free a moment ago: a fixed port may be taken
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def collect(queue, senders, others, timeout_s=600):
    """One message from each of `senders`; SystemExit as soon as any process died instead of
    waiting out the timeout."""
    out, deadline = [], time.monotonic() + timeout_s
    while len(out) < len(senders):
        try:
            out.append(queue.get(timeout=1.0))
            continue
        except Exception:
            pass
        dead = [p for p in senders + others if p.exitcode not in (None, 0)]
        if dead or time.monotonic() > deadline:
            raise SystemExit("scale bench: %s" % (
                "process %d exited with %s" % (dead[0].pid, dead[0].exitcode) if dead
                else "no answer in %d s" % timeout_s))
    return out


def synth_ranks(eroica, templates, world, work, seed, stragglers):
    path = os.path.join(work, "ranks_%d.pattern" % world)
    cmd = [eroica, "synth", templates, "-o", path, "-n", str(world), "--workers-per-block", "1",
           "--zstd-level", "9", "--stragglers", str(stragglers), "--straggler-category",
           "dataloader", "--straggler-excess", "0.15", "--global", "python", "--global-excess",
           "0.08", "--seed", str(seed)]
    subprocess.run(cmd, check=True, capture_output=True)
    return path, path + ".truth.json"


def gather(args):
    os.makedirs(args.work, exist_ok=True)
    nofile = raise_nofile()
    patterns_path, truth_path = synth_ranks(args.eroica, args.templates, args.ranks, args.work,
                                            args.seed, args.stragglers)
    magic, spans = rank_spans(patterns_path)
    assert len(spans) == args.ranks, (len(spans), args.ranks)
    sizes = sorted(s + len(magic) for _, s in spans)
    central_root = os.path.join(args.work, "central")
    os.makedirs(central_root, exist_ok=True)
    shutil.rmtree(os.path.join(central_root, "scale-%d" % args.ranks), ignore_errors=True)

    ctx = multiprocessing.get_context("fork")
    port = free_port()
    parent, child = ctx.Pipe()
    server = ctx.Process(target=server_main, args=(port, child), daemon=True)
    server.start()
    server_base_kb, server_base_fds = parent.recv()
    ready, go, results = ctx.Queue(), ctx.Event(), ctx.Queue()
    groups = connection_groups(args.ranks, args.per_node, args.share)
    # Whole nodes per process, spread round-robin: each process hosts leaders and their ranks.
    unit = max(args.per_node, args.share)
    clients = [ctx.Process(target=client_main, daemon=True, args=(
        port, [g for g in groups[1:] if (g[0] // unit) % args.procs == i],
        args.ranks, args.per_node, patterns_path, ready, go, results))
        for i in range(args.procs)]
    rank0 = ctx.Process(target=rank0_main, daemon=True, args=(
        port, groups[0], args.ranks, args.per_node, patterns_path, args.eroica,
        central_root, truth_path, ready, go, results))
    t0 = time.time()
    for p in clients + [rank0]:
        p.start()
    connections, errors = 0, []
    for _, n, errs in collect(ready, clients + [rank0], [server]):
        connections += n
        errors += errs
    connected_s = time.time() - t0
    load_before = os.getloadavg()
    parent.send("go")
    go.set()
    docs = collect(results, clients + [rank0], [server])
    parent.send("measure")
    store_mem = parent.recv()
    parent.send("stop")
    for p in clients + [rank0]:
        p.join(30)
    server.join(30)
    r0 = next(d for d in docs if "started" in d or "rank0_error" in d)
    if "rank0_error" in r0:
        raise SystemExit("rank 0 failed: %s" % r0["rank0_error"])
    pubs = [d for d in docs if "published_last" in d]  # rank 0's among them
    last_publish = max(d["published_last"] for d in pubs)
    out = {
        "ranks": args.ranks, "per_node": args.per_node, "client_processes": args.procs,
        "connections": connections, "ranks_per_connection": args.share,
        "store_fds": store_mem["fds"], "store_base_fds": server_base_fds, "nofile_limit": nofile,
        "connect_s": round(connected_s, 2),
        "publish_spread_s": round(last_publish - r0["started"], 3),
        "last_publish_to_report_s": round(r0["reported_at"] - last_publish, 3),
        "gather_after_last_publish_s": round(r0["gathered_at"] - last_publish, 3),
        "gather_from_start_s": round(r0["gathered_at"] - r0["started"], 3),
        "write_folder_s": round(r0["folder_written_at"] - r0["gathered_at"], 3),
        "diagnose_s": round(r0["reported_at"] - r0["folder_written_at"], 3),
        "diagnose_cpu_s": round(r0["diagnose_cpu_s"], 3),
        "rank0_gather_cpu_s": round(r0["gather_cpu_s"], 3),
        "store_cpu_s": round(store_mem["cpu_s"], 3),
        "store_requests": sum(d["store_requests"] for d in pubs),
        "clients_cpu_s": round(sum(d["cpu_s"] for d in pubs if "cpu_s" in d), 3),
        "rank0_bytes_read": r0["bytes_read"], "rank0_bytes_per_rank": r0["bytes_read"] / args.ranks,
        "rank0_requests": r0["requests"], "records": r0["records"],
        "missing": r0["missing_count"], "missing_ranks": r0["missing_ranks"],
        "bundle_bytes": r0["bundle_bytes"],
        "pattern_bytes_mean": sum(sizes) / len(sizes), "pattern_bytes_max": sizes[-1],
        "store_base_mb": server_base_kb / 1024,
        "store_peak_mb": (store_mem["hwm_kb"] - server_base_kb) / 1024,
        "store_end_mb": (store_mem["rss_kb"] - server_base_kb) / 1024,
        "found": r0["found"], "missed": r0["missed"], "extra": r0["extra"],
        "planted": r0["planted"], "line": r0["line"],
        "errors": (errors + [e for d in pubs for e in d.get("errors", [])] + r0["rank0_errors"])[:10],
        "published": sum(d["published"] for d in pubs),
        "load_before": load_before, "load_after": os.getloadavg(),
    }
    print(json.dumps(out))
    if not args.keep:
        os.unlink(patterns_path)


def central_raw(args):
    """Today's path: rank 0 diagnoses a folder of every rank's raw trace (diagnose.run, as
    finish.collect_and_diagnose does without EROICA_LOCAL_DIR), best of --repeat."""
    folder = os.path.join(args.work, "raw_%d" % args.copies)
    os.makedirs(folder, exist_ok=True)
    suffix = ".json.gz" if args.trace.endswith(".gz") else ".json"
    traces = []
    for r in range(args.copies):
        path = os.path.join(folder, "rank-%d%s" % (r, suffix))
        if not os.path.exists(path) or os.path.getsize(path) != os.path.getsize(args.trace):
            subprocess.run(["cp", args.trace, path], check=True)
        traces.append(path)
    for ours in ("report.json", "report.txt"):  # the runtime path's, from an earlier run
        if os.path.exists(os.path.join(folder, ours)):
            os.unlink(os.path.join(folder, ours))
    file_bytes = sum(os.path.getsize(p) for p in traces)
    runs = []
    for _ in range(args.repeat):
        r = timed([args.eroica, "diagnose", folder, "--format", "json"])
        runs.append({"wall_s": r["wall_s"], "cpu_s": r["cpu_s"], "peak_rss_kb": r["peak_rss_kb"]})
    best = min(runs, key=lambda r: r["wall_s"])
    # The same folder the way the runtime diagnoses it: niced, text + report.json, once.
    start = time.time()
    line = diagnose.run(folder, args.eroica, 600)
    print(json.dumps({"copies": args.copies, "trace": os.path.basename(args.trace),
                      "file_bytes": file_bytes, "file_bytes_per_rank": file_bytes / args.copies,
                      "json_bytes_per_rank": json_size(args.trace),
                      "best": best, "runs": runs, "runtime_path_s": round(time.time() - start, 3),
                      "line": line, "load": os.getloadavg()}))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    g = sub.add_parser("gather")
    g.add_argument("eroica")
    g.add_argument("templates", help="pattern bundle of a real job (the healthy worker, its noise)")
    g.add_argument("ranks", type=int)
    g.add_argument("--per-node", type=int, default=8)
    g.add_argument("--procs", type=int, default=4, help="client processes hosting ranks 1..N-1")
    g.add_argument("--share", type=int, default=1,
                   help="ranks per store connection: 1 (a real job), or whole nodes' worth")
    g.add_argument("--stragglers", type=int, default=3)
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--keep", action="store_true", help="keep the ranks' patterns")
    g.add_argument("--work", default=os.path.join(HERE, "..", "out", "bench", "scale"))
    c = sub.add_parser("central")
    c.add_argument("eroica")
    c.add_argument("trace")
    c.add_argument("copies", type=int)
    c.add_argument("--repeat", type=int, default=3)
    c.add_argument("--work", default=os.path.join(HERE, "..", "out", "bench", "scale"))
    args = p.parse_args()
    args.eroica = os.path.abspath(args.eroica)
    args.work = os.path.abspath(args.work)
    gather(args) if args.what == "gather" else central_raw(args)


if __name__ == "__main__":
    main()
