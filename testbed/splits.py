"""The accuracy benchmark's fixed matrices: the tuning and validation splits, and three probes.

Thresholds are set from the tuning split only; the validation split (other seeds, 6 ranks as
well as 4, the transformer, other fault sizes, other loader and accumulation set-ups) is never
used to set anything, and is reported beside it. Both hold healthy runs with several seeds,
because a false alarm costs a user more than a miss.

- tuning: 4 ranks, the MLP, no loader workers, no accumulation, seeds 0-2 (healthy: 0-4), the
  testbed's default fault sizes; a scenario that needs a set-up gets it (loader_workers_slow
  runs with 2 workers, imbalance_seq on the transformer), with healthy controls of those
  set-ups (seeds 0-1).
- validation: seeds from 100, each scenario in two set-ups with fault sizes that differ from
  tuning's: 6 ranks with the MLP, and 4 ranks with the transformer (with workers and/or
  accumulation in most); six healthy runs over the set-ups.
- edge: the smallest and largest jobs this machine runs, 2 and 8 ranks, with sizes of its own;
  each row in two halves (seeds from 800 and from 900), each made after a stop's rules are fixed,
  as the probe's are.
- probe: rank counts neither split has (3 and 5), 3 micro-batches per step, sizes of their own,
  seeds 500-519 and 600-619, one run per scenario in each half (net_throttle and hang left out:
  they need the node agent and the online path, which the splits cover). Each half is made
  fresh after a stop's rules are fixed, as a check on runs nothing was tuned on; a half whose
  result prompted a change no longer counts as one (the README says which).

- cnn: a model family neither split has, a small conv net with batch norm (DDP broadcasts its
  running statistics before every forward, a collective the others do not have), at 3, 4 and
  6 ranks with and without loader workers and accumulation, sizes of its own, in two halves
  (seeds 300-316 and 400-416; net_throttle, hang and imbalance_seq left out: the last needs
  the transformer). Made after a stop's rules are fixed, as the probe is.

A run is a RunSpec; its folder name says everything that varies, so two specs never share one.
"""

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import faults

SPLITS = ("tuning", "validation", "probe", "edge", "cnn")
TUNING_SEEDS = (0, 1, 2)
TUNING_HEALTHY_SEEDS = (0, 1, 2, 3, 4)
# The benchmark's own fault strengths where the testbed's default does not survive a shared
# machine: a fixed 25 % CPU quota is no throttle when the rank gets less than that anyway (4
# ranks and others' builds on 2 cores), so the throttle is relative to the CPU the rank used.
TUNING_PARAMS = {"cpu_throttle": ("share=0.4",)}


@dataclass(frozen=True)
class RunSpec:
    scenario: str
    seed: int
    ranks: int = 4
    model: str = "mlp"
    num_workers: int = 0
    accum_steps: int = 1
    params: Tuple[str, ...] = ()  # KEY=VALUE for run_scenario's --param

    @property
    def setup(self) -> str:
        """'mlp-w0-a1-r4': the training set-up, without the fault."""
        return f"{self.model}-w{self.num_workers}-a{self.accum_steps}-r{self.ranks}"

    @property
    def name(self) -> str:
        """The run's folder name: scenario, set-up, sizes that differ from the defaults, seed."""
        sizes = "".join("-" + p.replace("=", "") for p in self.params)
        return f"{self.scenario}-{self.setup}{sizes}-s{self.seed}"

    def fault_rank(self) -> Optional[str]:
        return fault_rank_for(self.scenario, self.seed, self.ranks)

    def argv(self) -> List[str]:
        """run_scenario.py's arguments for this run (without --out)."""
        argv = ["--scenario", self.scenario, "--ranks", str(self.ranks), "--seed", str(self.seed),
                "--model", self.model, "--num-workers", str(self.num_workers),
                "--accum-steps", str(self.accum_steps)]
        rank = self.fault_rank()
        if rank is not None:
            argv += ["--fault-rank", rank]
        for pair in self.params:
            argv += ["--param", pair]
        return argv

    def as_dict(self) -> Dict[str, object]:
        return {"scenario": self.scenario, "seed": self.seed, "ranks": self.ranks,
                "model": self.model, "num_workers": self.num_workers,
                "accum_steps": self.accum_steps, "params": list(self.params),
                "setup": self.setup, "name": self.name}


def fault_rank_for(scenario_name: str, seed: int, world_size: int) -> Optional[str]:
    """The --fault-rank of a run: none (healthy), 'all' (global scenarios), else a rank that
    varies with the seed and includes rank 0 (seed 0 -> 1, 1 -> 0, 2 -> 3, 3 -> 2, ...); a
    scenario of two faults gets that rank and the one two further on (seed 0 -> '1,3')."""
    scenario = faults.SCENARIOS[scenario_name]
    default = scenario.default_fault_rank
    if default is None:
        return None
    if default == "all":
        return "all"
    first = (1 + 3 * seed) % world_size
    if scenario.parts:
        return ",".join(str((first + 2 * i) % world_size) for i in range(len(scenario.parts)))
    return str(first)


def scenario_setup(name: str) -> Dict[str, object]:
    """The set-up a scenario needs in the tuning split (faults.Scenario.settings)."""
    settings = faults.SCENARIOS[name].settings
    return {"model": settings.get("model", "mlp"), "num_workers": int(settings.get("num_workers", 0))}


def tuning() -> List[RunSpec]:
    runs = [RunSpec("healthy", seed) for seed in TUNING_HEALTHY_SEEDS]
    runs += [RunSpec("healthy", seed, num_workers=2) for seed in (0, 1)]
    runs += [RunSpec("healthy", seed, model="transformer") for seed in (0, 1)]
    for name in faults.SCENARIOS:
        if name == "healthy":
            continue
        for seed in TUNING_SEEDS:
            runs.append(RunSpec(name, seed, params=TUNING_PARAMS.get(name, ()), **scenario_setup(name)))
    return runs


# Validation: per scenario, (set-up, sizes) twice: 6 ranks with the MLP, 4 with the transformer.
SIX_MLP = {"ranks": 6}
SIX_MLP_WORKERS = {"ranks": 6, "num_workers": 2}
FOUR_TRANSFORMER = {"ranks": 4, "model": "transformer"}
FOUR_TRANSFORMER_ACCUM = {"ranks": 4, "model": "transformer", "accum_steps": 2}
FOUR_TRANSFORMER_WORKERS = {"ranks": 4, "model": "transformer", "num_workers": 2}
FOUR_TRANSFORMER_WORKERS_ACCUM = {"ranks": 4, "model": "transformer", "num_workers": 2, "accum_steps": 2}
VALIDATION_FAULTS = {
    "dataloader_stall": [(SIX_MLP, ("stall_ms=40",)), (FOUR_TRANSFORMER_ACCUM, ("stall_ms=80",))],
    "dataloader_stall_global": [(SIX_MLP, ("stall_ms=30",)), (FOUR_TRANSFORMER, ("stall_ms=60",))],
    "loader_workers_slow": [(SIX_MLP_WORKERS, ("getitem_ms=10",)),
                            (FOUR_TRANSFORMER_WORKERS_ACCUM, ("getitem_ms=8", "collate_ms=20"))],
    "loader_workers_slow_global": [(SIX_MLP_WORKERS, ("getitem_ms=10",)),
                                   (FOUR_TRANSFORMER_WORKERS_ACCUM, ("getitem_ms=8", "collate_ms=20"))],
    "slow_storage": [(SIX_MLP, ("record_kib=512",)), (FOUR_TRANSFORMER_WORKERS, ("record_kib=1024",))],
    "cpu_throttle": [(SIX_MLP, ("share=0.35",)), (FOUR_TRANSFORMER_ACCUM, ("share=0.3",))],
    "gc_storm": [(SIX_MLP, ("cycles_per_step=10000",)), (FOUR_TRANSFORMER_WORKERS, ("cycles_per_step=30000",))],
    "gc_storm_global": [(SIX_MLP, ("cycles_per_step=15000",)), (FOUR_TRANSFORMER, ("cycles_per_step=10000",))],
    "python_hot_loop": [(SIX_MLP, ("loop_ms=30",)), (FOUR_TRANSFORMER_WORKERS, ("loop_ms=60",))],
    "python_hot_loop_global": [(SIX_MLP, ("loop_ms=50",)), (FOUR_TRANSFORMER_ACCUM, ("loop_ms=30",))],
    "python_light_global": [(SIX_MLP, ("step_share=0.12",)), (FOUR_TRANSFORMER_WORKERS, ("step_share=0.18",))],
    "imbalance": [(SIX_MLP, ("batch_factor=2",)), (FOUR_TRANSFORMER, ("batch_factor=3",))],
    "imbalance_seq": [({"ranks": 6, "model": "transformer"}, ("seq_factor=2",)),
                      (FOUR_TRANSFORMER_WORKERS_ACCUM, ("seq_factor=2",))],
    "checkpoint_sync": [(SIX_MLP, ()), (FOUR_TRANSFORMER_WORKERS, ("fsync=0",))],
    "two_faults": [(SIX_MLP, ("stall_ms=150", "share=0.5")), (FOUR_TRANSFORMER, ("stall_ms=200", "share=0.4"))],
    "net_throttle": [(SIX_MLP, ("rate_mbit=300",)), (FOUR_TRANSFORMER, ("rate_mbit=400",))],
    "net_throttle_global": [(SIX_MLP, ("rate_mbit=300",)), (FOUR_TRANSFORMER, ("rate_mbit=200",))],
    "hang": [(SIX_MLP, ()), (FOUR_TRANSFORMER_WORKERS, ())],
    "busy_thread": [(SIX_MLP, ("burst_ms=15", "period_ms=20")), (FOUR_TRANSFORMER_WORKERS, ())],
    "loader_workers_busy": [(SIX_MLP_WORKERS, ("getitem_cpu_ms=1",)), (FOUR_TRANSFORMER_WORKERS_ACCUM, ())],
    "eval_pass": [(SIX_MLP, ("every=3", "eval_ms=100")), (FOUR_TRANSFORMER_WORKERS, ())],
}
VALIDATION_HEALTHY = [(SIX_MLP, 100), (SIX_MLP, 101), (FOUR_TRANSFORMER_WORKERS_ACCUM, 102),
                      (FOUR_TRANSFORMER_WORKERS_ACCUM, 103), ({"ranks": 6, "model": "transformer"}, 104),
                      ({"ranks": 4, "num_workers": 2, "accum_steps": 4}, 105)]


def validation() -> List[RunSpec]:
    runs = [RunSpec("healthy", seed, **setup) for setup, seed in VALIDATION_HEALTHY]
    for name, variants in VALIDATION_FAULTS.items():
        for index, (setup, params) in enumerate(variants):
            runs.append(RunSpec(name, 100 + index, params=params, **setup))
    return runs


FIVE_MLP = {"ranks": 5}
FIVE_MLP_WORKERS = {"ranks": 5, "num_workers": 2}
THREE_MLP = {"ranks": 3}
THREE_TRANSFORMER = {"ranks": 3, "model": "transformer"}
THREE_TRANSFORMER_WORKERS_ACCUM = {"ranks": 3, "model": "transformer", "num_workers": 2, "accum_steps": 3}
FIVE_TRANSFORMER_ACCUM = {"ranks": 5, "model": "transformer", "accum_steps": 3}
# One row per run slot: the scenario, then (set-up, sizes) in the first half (seeds from 500) and
# in the second (seeds from 600); a slot's seed is its half's first plus its row.
PROBE_FIRST_SEEDS = (500, 600)
PROBE_ROWS = [
    ("healthy", (FIVE_MLP, ()), (THREE_TRANSFORMER_WORKERS_ACCUM, ())),
    ("healthy", (THREE_TRANSFORMER_WORKERS_ACCUM, ()), (FIVE_MLP_WORKERS, ())),
    ("healthy", (FIVE_TRANSFORMER_ACCUM, ()), (THREE_MLP, ())),
    ("healthy", (THREE_MLP, ()), (FIVE_TRANSFORMER_ACCUM, ())),
    ("dataloader_stall", (FIVE_TRANSFORMER_ACCUM, ("stall_ms=50",)), (THREE_MLP, ("stall_ms=35",))),
    ("dataloader_stall_global", (THREE_MLP, ("stall_ms=45",)), (FIVE_TRANSFORMER_ACCUM, ("stall_ms=50",))),
    ("loader_workers_slow", (FIVE_MLP_WORKERS, ("getitem_ms=14",)),
     (THREE_TRANSFORMER_WORKERS_ACCUM, ("getitem_ms=9",))),
    ("loader_workers_slow_global", (THREE_TRANSFORMER_WORKERS_ACCUM, ("getitem_ms=6",)),
     (FIVE_MLP_WORKERS, ("getitem_ms=10",))),
    ("slow_storage", (FIVE_MLP, ("record_kib=768",)), (THREE_MLP, ("record_kib=640",))),
    ("cpu_throttle", (FIVE_MLP, ("share=0.45",)), (FIVE_TRANSFORMER_ACCUM, ("share=0.55",))),
    ("cpu_throttle", (THREE_TRANSFORMER, ("share=0.5",)), (THREE_TRANSFORMER, ("share=0.5",))),
    ("gc_storm", (FIVE_TRANSFORMER_ACCUM, ("cycles_per_step=25000",)), (THREE_MLP, ("cycles_per_step=15000",))),
    ("gc_storm_global", (THREE_MLP, ("cycles_per_step=12000",)),
     (FIVE_TRANSFORMER_ACCUM, ("cycles_per_step=18000",))),
    ("python_hot_loop", (THREE_MLP, ("loop_ms=25",)), (FIVE_TRANSFORMER_ACCUM, ("loop_ms=20",))),
    ("python_hot_loop_global", (FIVE_TRANSFORMER_ACCUM, ("loop_ms=35",)), (THREE_MLP, ("loop_ms=30",))),
    ("python_light_global", (FIVE_MLP, ("step_share=0.14",)), (THREE_TRANSFORMER, ("step_share=0.12",))),
    ("imbalance", (FIVE_MLP, ("batch_factor=2.5",)), (THREE_MLP, ("batch_factor=3",))),
    ("imbalance_seq", (THREE_TRANSFORMER, ("seq_factor=2.5",)), (FIVE_TRANSFORMER_ACCUM, ("seq_factor=2",))),
    ("checkpoint_sync", (FIVE_MLP, ()), (THREE_MLP, ())),
    ("two_faults", (FIVE_MLP, ("stall_ms=120", "share=0.5")), (THREE_MLP, ("stall_ms=100", "share=0.45"))),
    # Added last, so that the rows above keep their seeds.
    ("busy_thread", (FIVE_MLP_WORKERS, ()), (THREE_TRANSFORMER, ("burst_ms=15", "period_ms=20"))),
    ("loader_workers_busy", (FIVE_MLP_WORKERS, ("getitem_cpu_ms=1.2",)), (THREE_TRANSFORMER_WORKERS_ACCUM, ())),
    ("eval_pass", (FIVE_MLP_WORKERS, ("every=5", "eval_ms=200")), (THREE_TRANSFORMER, ("every=2", "eval_ms=80"))),
]


def probe() -> List[RunSpec]:
    runs = []
    for half, first_seed in enumerate(PROBE_FIRST_SEEDS):
        for row, (name, *variants) in enumerate(PROBE_ROWS):
            setup, params = variants[half]
            runs.append(RunSpec(name, first_seed + row, params=params, **setup))
    return runs


TWO_MLP = {"ranks": 2}
TWO_MLP_WORKERS = {"ranks": 2, "num_workers": 2}
TWO_TRANSFORMER = {"ranks": 2, "model": "transformer"}
TWO_TRANSFORMER_WORKERS_ACCUM = {"ranks": 2, "model": "transformer", "num_workers": 2, "accum_steps": 2}
EIGHT_MLP = {"ranks": 8}
EIGHT_MLP_WORKERS = {"ranks": 8, "num_workers": 2}
EIGHT_TRANSFORMER = {"ranks": 8, "model": "transformer"}
# The smallest and the largest job this machine runs: 2 ranks (one peer to compare with, one core
# each) and 8 (four processes per core). Each row runs twice, seeds from 800 and from 900 (two
# halves, as the probe's); two_faults only at 8 ranks (its second rank is two further on, the
# same rank at 2).
EDGE_FIRST_SEEDS = (800, 900)
EDGE_ROWS = [
    ("healthy", TWO_MLP, ()),
    ("healthy", TWO_TRANSFORMER_WORKERS_ACCUM, ()),
    ("healthy", TWO_MLP_WORKERS, ()),
    ("healthy", EIGHT_MLP, ()),
    ("healthy", EIGHT_TRANSFORMER, ()),
    ("healthy", EIGHT_MLP_WORKERS, ()),
    ("dataloader_stall", TWO_TRANSFORMER, ("stall_ms=45",)),
    ("dataloader_stall", EIGHT_MLP, ("stall_ms=55",)),
    ("dataloader_stall_global", TWO_MLP, ("stall_ms=40",)),
    ("loader_workers_slow", TWO_MLP_WORKERS, ("getitem_ms=11",)),
    ("loader_workers_slow", EIGHT_MLP_WORKERS, ("getitem_ms=12",)),
    ("loader_workers_slow_global", TWO_TRANSFORMER_WORKERS_ACCUM, ("getitem_ms=8",)),
    ("slow_storage", TWO_MLP, ("record_kib=768",)),
    ("cpu_throttle", TWO_TRANSFORMER, ("share=0.45",)),
    ("cpu_throttle", EIGHT_MLP, ("share=0.4",)),
    ("gc_storm", TWO_MLP, ("cycles_per_step=20000",)),
    ("gc_storm", EIGHT_TRANSFORMER, ("cycles_per_step=15000",)),
    ("gc_storm_global", EIGHT_MLP, ("cycles_per_step=12000",)),
    ("python_hot_loop", TWO_TRANSFORMER, ("loop_ms=25",)),
    ("python_hot_loop", EIGHT_MLP, ("loop_ms=45",)),
    ("python_hot_loop_global", TWO_MLP, ("loop_ms=30",)),
    ("python_light_global", TWO_TRANSFORMER, ("step_share=0.14",)),
    ("python_light_global", EIGHT_MLP, ("step_share=0.15",)),
    ("imbalance", TWO_MLP, ("batch_factor=2",)),
    ("imbalance", EIGHT_MLP, ("batch_factor=2.5",)),
    ("imbalance_seq", TWO_TRANSFORMER, ("seq_factor=2",)),
    ("checkpoint_sync", TWO_MLP, ()),
    ("checkpoint_sync", EIGHT_MLP, ()),
    ("two_faults", EIGHT_MLP, ("stall_ms=120", "share=0.5")),
    ("busy_thread", EIGHT_MLP, ()),  # added last: the rows above keep their seeds
    ("loader_workers_busy", TWO_MLP_WORKERS, ("getitem_cpu_ms=2",)),
    ("loader_workers_busy", EIGHT_MLP_WORKERS, ()),
    ("eval_pass", TWO_MLP, ("every=3", "eval_ms=60")),
    ("eval_pass", EIGHT_TRANSFORMER, ()),
]


def edge() -> List[RunSpec]:
    return [RunSpec(name, first_seed + row, params=params, **setup)
            for first_seed in EDGE_FIRST_SEEDS for row, (name, setup, params) in enumerate(EDGE_ROWS)]


FOUR_CNN = {"ranks": 4, "model": "cnn"}
FOUR_CNN_WORKERS = {"ranks": 4, "model": "cnn", "num_workers": 2}
SIX_CNN = {"ranks": 6, "model": "cnn"}
THREE_CNN_ACCUM = {"ranks": 3, "model": "cnn", "accum_steps": 2}
THREE_CNN_WORKERS = {"ranks": 3, "model": "cnn", "num_workers": 2}
# As the probe's rows: the scenario, then (set-up, sizes) in the first half (seeds from 300) and in
# the second (seeds from 400).
CNN_FIRST_SEEDS = (300, 400)
CNN_ROWS = [
    ("healthy", (FOUR_CNN, ()), (SIX_CNN, ())),
    ("healthy", (FOUR_CNN_WORKERS, ()), (THREE_CNN_ACCUM, ())),
    ("healthy", (SIX_CNN, ()), (FOUR_CNN, ())),
    ("dataloader_stall", (FOUR_CNN, ("stall_ms=50",)), (SIX_CNN, ("stall_ms=40",))),
    ("dataloader_stall_global", (SIX_CNN, ("stall_ms=35",)), (THREE_CNN_ACCUM, ("stall_ms=45",))),
    ("loader_workers_slow", (FOUR_CNN_WORKERS, ("getitem_ms=12",)), (FOUR_CNN_WORKERS, ("getitem_ms=9",))),
    ("loader_workers_slow_global", (FOUR_CNN_WORKERS, ("getitem_ms=10",)), (FOUR_CNN_WORKERS, ("getitem_ms=8",))),
    ("slow_storage", (FOUR_CNN, ("record_kib=768",)), (SIX_CNN, ("record_kib=640",))),
    ("cpu_throttle", (SIX_CNN, ("share=0.4",)), (FOUR_CNN, ("share=0.45",))),
    ("gc_storm", (THREE_CNN_ACCUM, ("cycles_per_step=15000",)), (FOUR_CNN_WORKERS, ("cycles_per_step=20000",))),
    ("gc_storm_global", (FOUR_CNN, ("cycles_per_step=12000",)), (SIX_CNN, ("cycles_per_step=15000",))),
    ("python_hot_loop", (SIX_CNN, ("loop_ms=35",)), (THREE_CNN_ACCUM, ("loop_ms=25",))),
    ("python_hot_loop_global", (FOUR_CNN_WORKERS, ("loop_ms=40",)), (FOUR_CNN, ("loop_ms=30",))),
    ("python_light_global", (FOUR_CNN, ("step_share=0.15",)), (SIX_CNN, ("step_share=0.13",))),
    ("imbalance", (FOUR_CNN, ("batch_factor=2.5",)), (THREE_CNN_ACCUM, ("batch_factor=2",))),
    ("checkpoint_sync", (SIX_CNN, ()), (FOUR_CNN_WORKERS, ())),
    ("two_faults", (FOUR_CNN, ("stall_ms=120", "share=0.5")), (SIX_CNN, ("stall_ms=100", "share=0.45"))),
    ("busy_thread", (FOUR_CNN, ()), (SIX_CNN, ("burst_ms=15", "period_ms=20"))),  # added last
    ("loader_workers_busy", (FOUR_CNN_WORKERS, ()), (THREE_CNN_WORKERS, ("getitem_cpu_ms=1",))),
    ("eval_pass", (SIX_CNN, ()), (FOUR_CNN_WORKERS, ("every=6", "eval_ms=250"))),
]


def cnn() -> List[RunSpec]:
    runs = []
    for half, first_seed in enumerate(CNN_FIRST_SEEDS):
        for row, (name, *variants) in enumerate(CNN_ROWS):
            setup, params = variants[half]
            runs.append(RunSpec(name, first_seed + row, params=params, **setup))
    return runs


def split(name: str) -> List[RunSpec]:
    if name == "tuning":
        return tuning()
    if name == "validation":
        return validation()
    if name == "probe":
        return probe()
    if name == "edge":
        return edge()
    if name == "cnn":
        return cnn()
    raise ValueError(f"unknown split {name!r} (one of {', '.join(SPLITS)})")
