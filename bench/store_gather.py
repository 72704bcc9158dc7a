"""Measures the scale-out gather (python/eroica/exchange.py) through a real TCPStore: N ranks
publish real-sized pattern files, grouped by node, and rank 0 gathers them.

Usage: store_gather.py PATTERN_DIR N [PER_NODE] [PROCESSES]
  PATTERN_DIR  pattern files (`eroica summarize` of real traces), cycled over the ranks
The ranks run as threads in PROCESSES client processes (default 8), each rank with its own
store connection, as on a real job. Prints one JSON line: N, per_node, seconds from the start
signal to rank 0 holding every pattern, bytes rank 0 read from the store, the bundle's size,
and the mean pattern size.
"""

import datetime
import glob
import json
import multiprocessing
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from eroica import central, exchange  # noqa: E402


def client(port, ranks, world, per_node, patterns, go_at, results):
    import torch.distributed as dist

    def rank_main(rank):
        store = dist.TCPStore("127.0.0.1", port, None, False, datetime.timedelta(seconds=120))
        ex = exchange.Exchange(store, "bench", exchange.Topology(rank, world, per_node), 0.01)
        header = {"rank": rank, "host": "node%d" % (rank // per_node),
                  "folder": "/local/bench", "trace": "/local/bench/rank-%d.json.gz" % rank}
        while time.time() < go_at:
            time.sleep(0.001)
        own = ex.publish((header, patterns[rank % len(patterns)]), time.monotonic() + 60)
        if rank == 0:
            records, missing = ex.gather(own, time.monotonic() + 120)
            done_s = time.time() - go_at
            data, refused = central.bundle({h["rank"]: p for h, p in records})
            results.put({"seconds": round(done_s, 3), "bytes_read": ex.bytes_read,
                         "rank0_requests": ex.requests,
                         "records": len(records), "missing": len(missing),
                         "bundle_bytes": len(data), "refused": len(refused)})

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in ranks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def main():
    import torch.distributed as dist

    folder, world = sys.argv[1], int(sys.argv[2])
    per_node = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    procs = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    patterns = [open(p, "rb").read() for p in sorted(glob.glob(os.path.join(folder, "*.pattern")))]
    port = 29000 + os.getpid() % 1000
    server = dist.TCPStore("127.0.0.1", port, None, True, datetime.timedelta(seconds=120))
    go_at = time.time() + 3.0 + world / 100  # every client connected by then
    results = multiprocessing.Queue()
    workers = [multiprocessing.Process(target=client, args=(
        port, list(range(i, world, procs)), world, per_node, patterns, go_at, results))
        for i in range(procs)]
    for w in workers:
        w.start()
    doc = results.get(timeout=300)
    for w in workers:
        w.join()
    doc.update({"ranks": world, "per_node": per_node, "client_processes": procs,
                "mean_pattern_bytes": round(sum(len(patterns[r % len(patterns)])
                                                for r in range(world)) / world)})
    print(json.dumps(doc))
    del server


if __name__ == "__main__":
    main()
