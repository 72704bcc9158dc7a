"""score.py [BIN] PREFIX...: how this job's batches were scored (README.md; ../score_runs.py)."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from score_runs import score


def replica_ranks(n, tp=2):
    """seqN: both TP ranks of replica N get longer sequences (ranks N*TP .. N*TP+TP-1; the seq
    runs have TP=2): imbalance named on one or both of them, no other rank."""
    def ok(workers, world):
        mine = set(range(n * tp, n * tp + tp))
        return bool(workers) and set(workers) <= mine
    return ok


# kind -> (scope, categories, ranks, None for every rank, or a test of (workers, world size));
# fixed before batch A was run. quotaN: its ops slower on the same calls and data: compute, as in
# the other jobs' quotas (its TP partner waits for it inside every forward and backward). loadN:
# its loader (a TP position 0 rank; its partners wait in the broadcast). ckptN: its serialization
# and fsync after the step. pyall: the pure-Python metric on every rank.
EXPECT = {"loadall": ("global", {"dataloader"}, None), "gcall": ("global", {"host"}, None),
          "pyall": ("global", {"host"}, None)}
for n in range(6):
    EXPECT[f"quota{n}"] = ("local", {"compute"}, [n])
    EXPECT[f"load{n}"] = ("local", {"dataloader"}, [n])
    EXPECT[f"ckpt{n}"] = ("local", {"host"}, [n])
    EXPECT[f"seq{n}"] = ("local", {"imbalance"}, replica_ranks(n))
score(EXPECT, 120, "/tmp/novel25")
