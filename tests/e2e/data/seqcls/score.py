"""score.py [BIN] PREFIX...: how this job's batches were scored (README.md; ../score_runs.py)."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from score_runs import score

# kind -> (scope, categories, ranks or None for every rank)
EXPECT = {
    "quota1": ("local", {"compute"}, [1]),
    "coll2": ("local", {"dataloader"}, [2]),
    "nap2": ("local", {"dataloader"}, [2]),
    "tokall": ("global", {"dataloader"}, None),
    "long3": ("local", {"imbalance"}, [3]),
    "gcall": ("global", {"host"}, None),
    "ckpt0": ("local", {"host"}, [0]),
    "pyall": ("global", {"host"}, None),
}
score(EXPECT, 120, "/tmp/novel16")
