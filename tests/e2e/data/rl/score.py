"""score.py [BIN] PREFIX...: how this job's batches were scored (README.md; ../score_runs.py)."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from score_runs import score

# kind -> (scope, categories, ranks or None for every rank); fixed before batch A was run.
# Most of a step is the rollout's Python (the environment, the policy's forward action by action),
# so a quota's rank may be named by its host time as well as by its ops (its cgroup reading is
# the evidence either way); a rank rolling out more actions runs more of the same code and updates
# on more data: `imbalance`, or its host time at the rollout.
EXPECT = {
    "quota2": ("local", {"compute", "host"}, [2]),
    "slowenv1": ("local", {"host"}, [1]),
    "envall": ("global", {"host"}, None),
    "longroll3": ("local", {"imbalance", "host"}, [3]),
    "gcall": ("global", {"host"}, None),
    "render0": ("local", {"host"}, [0]),
}
# Four optimizer steps a step (two epochs of two minibatches): eroica's iterations.
score(EXPECT, 120, "/tmp/novel21", iterations_per_step=4)
