"""score.py [BIN] PREFIX...: how this job's batches were scored (README.md; ../score_runs.py)."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from score_runs import score

# kind -> (scope, categories, ranks or None for every rank)
EXPECT = {
    "quota2": ("local", {"compute"}, [2]),
    "jit1": ("local", {"dataloader"}, [1]),
    "nap1": ("local", {"dataloader"}, [1]),
    "jitall": ("global", {"dataloader"}, None),
    "big3": ("local", {"imbalance"}, [3]),
    "gcall": ("global", {"host"}, None),
    "ckpt0": ("local", {"host"}, [0]),
    "pyall": ("global", {"host"}, None),
    "emaall": ("global", {"host", "compute"}, None),
}
score(EXPECT, 120, "/tmp/novel15")
