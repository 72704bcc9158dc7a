"""A minimal torchrun stand-in (Debian's torchrun 1.13 fails on Python 3.11): hosts the job's
TCPStore like torchrun's agent does and starts one plain subprocess per rank with torchrun's
environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_*, TORCHELASTIC_*).

Usage: launch.py NPROC PORT script.py [args...]
"""

import datetime
import os
import subprocess
import sys

import torch.distributed as dist


def main():
    nproc, port, argv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    store = dist.TCPStore("127.0.0.1", port, None, True, datetime.timedelta(seconds=60))
    procs = []
    for rank in range(nproc):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nproc),
                   LOCAL_WORLD_SIZE=str(nproc), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   TORCHELASTIC_USE_AGENT_STORE="True", TORCHELASTIC_RUN_ID="launchtest",
                   TORCHELASTIC_RESTART_COUNT="0")
        procs.append(subprocess.Popen([sys.executable] + argv, env=env))
    codes = [p.wait() for p in procs]
    del store
    sys.exit(max(codes))


if __name__ == "__main__":
    main()
