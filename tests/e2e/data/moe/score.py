"""score.py [BIN] PREFIX...: how this job's batches were scored (README.md; ../score_runs.py)."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from score_runs import score

# kind -> (scope, categories, ranks or None for every rank); fixed before batch A was run.
# batch2: rank 2's dense ops and the tokens it sends every expert grow, the same calls: imbalance.
# ckpt0: rank 0's serialization and fsync after the step: its host time. quota1: its ops slower on
# the same calls and data: compute, as in the other jobs' quotas.
EXPECT = {
    "quota1": ("local", {"compute"}, [1]),
    "batch2": ("local", {"imbalance"}, [2]),
    "tok3": ("local", {"dataloader"}, [3]),
    "tokall": ("global", {"dataloader"}, None),
    "gcall": ("global", {"host"}, None),
    "ckpt0": ("local", {"host"}, [0]),
}
score(EXPECT, 120, "/tmp/novel23")
