"""score.py [BIN] PREFIX...: how this job's batches were scored (README.md; ../score_runs.py)."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from score_runs import score

# kind -> (scope, categories, ranks or None for every rank); fixed before batch A was run.
# eval0: rank 0 runs more calls than its peers (work they were not given): imbalance, or its
# host code where located at the evaluation; never a slower device.
EXPECT = {
    "quota1": ("local", {"compute"}, [1]),
    "big3": ("local", {"imbalance"}, [3]),
    "feat2": ("local", {"dataloader"}, [2]),
    "featall": ("global", {"dataloader"}, None),
    "eval0": ("local", {"imbalance", "host"}, [0]),
    "logall": ("global", {"host"}, None),
    "gil0": ("local", {"host"}, [0]),
}
score(EXPECT, 120, "/tmp/novel17")
