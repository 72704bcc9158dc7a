"""What the test workloads that start their own ranks share: key=value knobs, and one process per
rank (torch.multiprocessing.spawn) meeting at 127.0.0.1:<port>. (ddp_train.py keeps its own:
it is also run alone, away from this folder.)"""

import os


def knobs(argv, defaults):
    """`defaults` updated from key=value arguments, each value of its default's type (an
    unknown key is kept as a string)."""
    opts = dict(defaults)
    for arg in argv:
        key, _, value = arg.partition("=")
        opts[key] = type(opts[key])(value) if key in opts else value
    return opts


def spawn(train, opts, world):
    """Runs train(rank, opts) in `world` processes, rendezvous at MASTER_ADDR (default
    127.0.0.1) and opts["port"]."""
    import torch.multiprocessing as mp

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(opts["port"])
    mp.spawn(train, args=(opts,), nprocs=world, join=True)
