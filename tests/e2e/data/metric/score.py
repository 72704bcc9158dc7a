"""score.py [BIN] PREFIX...: how this job's batches were scored (README.md; ../score_runs.py)."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from score_runs import score

# kind -> (scope, categories, ranks or None for every rank); fixed before batch T was run.
# mine2: rank 2's Python re-check of its mined triplets: its host time.
# bigk3: rank 3's batches hold more samples (the same calls, larger tensors): imbalance.
# syncall: every rank's added barriers, each a collective: global communication.
EXPECT = {
    "quota0": ("local", {"compute"}, [0]),
    "collate1": ("local", {"dataloader"}, [1]),
    "mine2": ("local", {"host"}, [2]),
    "bigk3": ("local", {"imbalance"}, [3]),
    "syncall": ("global", {"communication"}, None),
    "gcall": ("global", {"host"}, None),
}
score(EXPECT, 120, "/tmp/novelT/metric")
