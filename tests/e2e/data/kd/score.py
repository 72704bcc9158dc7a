"""score.py [BIN] PREFIX...: how this job's batches were scored (README.md; ../score_runs.py)."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from score_runs import score

# kind -> (scope, categories, ranks or None for every rank); fixed before batch R was scored.
# gatherall: every rank's extra all_gathers, each a collective: global communication.
# teacher1: rank 1 runs more teacher forwards (more calls of the same ops): imbalance.
# leak2: rank 2's growing heap makes its garbage collector walk more: its host time.
EXPECT = {
    "quota1": ("local", {"compute"}, [1]),
    "log0": ("local", {"host"}, [0]),
    "gatherall": ("global", {"communication"}, None),
    "teacher1": ("local", {"imbalance"}, [1]),
    "leak2": ("local", {"host"}, [2]),
    "stall3": ("local", {"dataloader"}, [3]),
}
score(EXPECT, 120, "/tmp/novelR/kd")
