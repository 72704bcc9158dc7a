"""score.py [BIN] PREFIX...: how this job's batches were scored (README.md; ../score_runs.py)."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from score_runs import score

# kind -> (scope, categories, ranks or None for every rank); fixed before batch A was run.
# sync2: rank 2's training thread blocks after its step (a synchronous upload): its host time, at
# the line that blocks.
EXPECT = {
    "quota2": ("local", {"compute"}, [2]),
    "big1": ("local", {"imbalance"}, [1]),
    "aug3": ("local", {"dataloader"}, [3]),
    "augall": ("global", {"dataloader"}, None),
    "ckpt0": ("local", {"host"}, [0]),
    "gcall": ("global", {"host"}, None),
    "sync2": ("local", {"host"}, [2]),
}
score(EXPECT, 120, "/tmp/novel18")
