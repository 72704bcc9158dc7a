"""A minimal torchrun stand-in (Debian's torchrun 1.13 fails on Python 3.11): hosts the job's
TCPStore like torchrun's agent does and starts one plain subprocess per rank with torchrun's
environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_*, TORCHELASTIC_*).

Usage: launch.py NPROC PORT script.py [args...]
  LAUNCH_STORE=rank     rank 0 hosts the store (plain env:// init), not the launcher
  LAUNCH_REPORT=FILE    writes {"codes": [...], "exit_unix": [...]} per rank, as they exit
  LAUNCH_NODES=N        the ranks as N nodes of NPROC/N contiguous ranks (LOCAL_RANK,
                        LOCAL_WORLD_SIZE, GROUP_RANK as torchrun sets them on each node)
  LAUNCH_LOCAL_DIR=T    each rank's EROICA_LOCAL_DIR: T with {node} replaced by its node
"""

import datetime
import json
import os
import subprocess
import sys
import time

import torch.distributed as dist


def main():
    nproc, port, argv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    rank_store = os.environ.get("LAUNCH_STORE") == "rank"
    store = None
    if not rank_store:
        store = dist.TCPStore("127.0.0.1", port, None, True, datetime.timedelta(seconds=60))
    procs = []
    per_node = nproc // max(1, int(os.environ.get("LAUNCH_NODES", "1")))
    for rank in range(nproc):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank % per_node),
                   WORLD_SIZE=str(nproc), LOCAL_WORLD_SIZE=str(per_node),
                   GROUP_RANK=str(rank // per_node), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), TORCHELASTIC_RUN_ID="launchtest",
                   TORCHELASTIC_RESTART_COUNT="0")
        if os.environ.get("LAUNCH_LOCAL_DIR"):
            env["EROICA_LOCAL_DIR"] = os.environ["LAUNCH_LOCAL_DIR"].replace(
                "{node}", str(rank // per_node))
        if not rank_store:
            env["TORCHELASTIC_USE_AGENT_STORE"] = "True"
        procs.append(subprocess.Popen([sys.executable] + argv, env=env))
    codes, exit_unix = [None] * nproc, [None] * nproc
    while None in codes:
        for rank, p in enumerate(procs):
            if codes[rank] is None and p.poll() is not None:
                codes[rank], exit_unix[rank] = p.returncode, time.time()
        time.sleep(0.02)
    if os.environ.get("LAUNCH_REPORT"):
        with open(os.environ["LAUNCH_REPORT"], "w") as f:
            json.dump({"codes": codes, "exit_unix": exit_unix}, f)
    del store
    sys.exit(max(abs(c) for c in codes))


if __name__ == "__main__":
    main()
