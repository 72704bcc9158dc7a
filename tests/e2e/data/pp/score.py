"""score.py [BIN] PREFIX...: how this job's batches were scored (README.md; ../score_runs.py)."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from score_runs import score


def replica_ranks(n, stages=2):
    """batchN: every stage of replica N does more work, the same calls on larger tensors (its
    ranks N, N+R, ... with R = world / stages; the batch runs have 2 stages): imbalance named on
    one or more of them, no other rank."""
    def ok(workers, world):
        mine = set(range(n, world, world // stages))
        return bool(workers) and set(workers) <= mine
    return ok


# kind -> (scope, categories, ranks, None for every rank, or a test of (workers, world size));
# fixed before batch A was run. quotaN: its ops slower on the same calls and data: compute, as in
# the other jobs' quotas. augN: its loader. ckptN: its serialization and fsync after the step.
EXPECT = {"augall": ("global", {"dataloader"}, None), "gcall": ("global", {"host"}, None)}
for n in range(6):
    EXPECT[f"quota{n}"] = ("local", {"compute"}, [n])
    EXPECT[f"aug{n}"] = ("local", {"dataloader"}, [n])
    EXPECT[f"ckpt{n}"] = ("local", {"host"}, [n])
    EXPECT[f"batch{n}"] = ("local", {"imbalance"}, replica_ranks(n))
score(EXPECT, 120, "/tmp/novel24")
