"""Unit tests of the accuracy benchmark's plan and scoring, on fabricated diagnoses (no torch,
no root, no runs): `/usr/bin/python3 -m unittest test_accuracy` in testbed/."""

import argparse
import json
import tempfile
import unittest
from pathlib import Path

import accuracy
import faults
import launch
import splits


def finding(workers, category="dataloader", scope="local", **extra):
    f = {"scope": scope, "category": category, "workers": workers, "function": "f",
         "impact_s_per_iter": 0.05, "location": ""}
    f.update(extra)
    return f


def quiet(*args, **kwargs):
    pass


def diagnosis(*findings):
    return {"schema": "eroica.diagnosis/v1", "workers": 4, "healthy": not findings,
            "findings": list(findings), "warnings": []}


LOCAL_TRUTH = {"scenario": "dataloader_stall", "ranks": [2], "category": "dataloader",
               "scope": "local", "fault_onset_iter": 8, "profiled_iters": [12, 13, 14, 15, 16]}
GLOBAL_TRUTH = {"scenario": "python_hot_loop_global", "ranks": [0, 1, 2, 3], "category": "host",
                "scope": "global", "fault_onset_iter": 8, "profiled_iters": [12]}
HEALTHY_TRUTH = {"scenario": "healthy", "ranks": [], "category": None, "scope": None,
                 "fault_onset_iter": None, "profiled_iters": [12]}


class PlanTest(unittest.TestCase):
    def test_fault_rank_varies_with_the_seed_and_reaches_rank_0(self):
        ranks = [accuracy.fault_rank_for("gc_storm", seed, 4) for seed in range(4)]
        self.assertEqual(ranks, ["1", "0", "3", "2"])
        self.assertIsNone(accuracy.fault_rank_for("healthy", 0, 4))
        self.assertEqual(accuracy.fault_rank_for("python_hot_loop_global", 2, 4), "all")
        self.assertEqual(accuracy.fault_rank_for("imbalance", 1, 2), "0")

    def test_overrides(self):
        self.assertEqual(accuracy.parse_overrides(["cpu_throttle:quota_pct=10", "cpu_throttle:x=1",
                                                   "gc_storm:gc_threshold=50"]),
                         {"cpu_throttle": ["quota_pct=10", "x=1"], "gc_storm": ["gc_threshold=50"]})
        for bad in ["quota_pct=10", "nosuch:quota_pct=10", "cpu_throttle:quota_pct"]:
            with self.assertRaises(ValueError):
                accuracy.parse_overrides([bad])


class ScoreTest(unittest.TestCase):
    def test_correct_local(self):
        score = accuracy.score_diagnosis(LOCAL_TRUTH, diagnosis(finding([2]), finding([0], "host")))
        self.assertEqual(score["status"], accuracy.CORRECT)
        self.assertEqual((score["rank_ok"], score["category_ok"], score["scope_ok"]), (True, True, True))
        self.assertEqual(score["findings"], 2)
        self.assertEqual(score["first"]["workers"], [2])

    def test_only_the_first_finding_counts(self):
        score = accuracy.score_diagnosis(LOCAL_TRUTH, diagnosis(finding([0], "host"), finding([2])))
        self.assertEqual(score["status"], accuracy.WRONG)
        self.assertEqual((score["rank_ok"], score["category_ok"], score["scope_ok"]), (False, False, True))
        self.assertEqual(accuracy.verdict_text(score), "wrong rank+category")

    def test_extra_or_missing_ranks_are_wrong(self):
        for workers in ([2, 3], [], [1]):
            score = accuracy.score_diagnosis(LOCAL_TRUTH, diagnosis(finding(workers)))
            self.assertFalse(score["rank_ok"], workers)
            self.assertEqual(score["status"], accuracy.WRONG)

    def test_wrong_scope(self):
        score = accuracy.score_diagnosis(LOCAL_TRUTH, diagnosis(finding([2], scope="global")))
        self.assertEqual(accuracy.verdict_text(score), "wrong scope")

    def test_missed(self):
        score = accuracy.score_diagnosis(LOCAL_TRUTH, diagnosis())
        self.assertEqual(score["status"], accuracy.MISSED)
        self.assertIsNone(score["first"])

    def test_global_needs_every_rank_in_any_order(self):
        ok = accuracy.score_diagnosis(GLOBAL_TRUTH, diagnosis(finding([3, 1, 0, 2], "host", "global")))
        self.assertEqual(ok["status"], accuracy.CORRECT)
        partial = accuracy.score_diagnosis(GLOBAL_TRUTH, diagnosis(finding([0, 1, 2], "host", "global")))
        self.assertEqual(partial["status"], accuracy.WRONG)
        local = accuracy.score_diagnosis(GLOBAL_TRUTH, diagnosis(finding([1], "host", "local")))
        self.assertEqual((local["rank_ok"], local["scope_ok"]), (False, False))

    def test_healthy(self):
        clean = accuracy.score_diagnosis(HEALTHY_TRUTH, diagnosis())
        self.assertEqual((clean["status"], clean["false_alarm"]), (accuracy.CORRECT, False))
        alarm = accuracy.score_diagnosis(HEALTHY_TRUTH, diagnosis(finding([1], "host")))
        self.assertEqual((alarm["status"], alarm["false_alarm"]), (accuracy.FALSE_ALARM, True))
        # "healthy": false without findings is still an alarm; a finding of any kind is one.
        self.assertTrue(accuracy.score_diagnosis(HEALTHY_TRUTH, {"healthy": False, "findings": []})["false_alarm"])
        low = accuracy.score_diagnosis(HEALTHY_TRUTH, diagnosis(finding([0, 1, 2, 3], "communication", "global")))
        self.assertTrue(low["false_alarm"])

    def test_hang_location(self):
        d = diagnosis(finding([0], "hang", location="/work/main/testbed/faults.py:253"))
        self.assertTrue(accuracy.score_hang_location(d, "faults.py", 253))
        self.assertFalse(accuracy.score_hang_location(d, "faults.py", 252))
        self.assertFalse(accuracy.score_hang_location(diagnosis(finding([0], "hang", location="train.py:253")),
                                                      "faults.py", 253))
        self.assertIsNone(accuracy.score_hang_location(diagnosis(finding([0], "hang")), "faults.py", 253))
        self.assertIsNone(accuracy.score_hang_location(diagnosis(), "faults.py", 253))

    def test_blocking_line_is_in_faults_py(self):
        line = accuracy.hang_blocking_line()
        text = (Path(accuracy.TESTBED_DIR) / "faults.py").read_text().splitlines()[line - 1]
        self.assertIn("acquire()", text)

    def test_testbed_hang(self):
        truth = dict(LOCAL_TRUTH, category="hang", ranks=[1],
                     hang={"message": "no progress since iteration 8 on ranks [1]",
                           "iteration": 8, "stalled_ranks": [1], "detected_monotonic_s": 110.0})
        score = accuracy.score_testbed_hang(truth)
        self.assertEqual(score["status"], accuracy.TESTBED_ONLY)
        self.assertTrue(score["rank_ok"])
        self.assertIn("stalled ranks right", accuracy.verdict_text(score))
        truth["hang"]["stalled_ranks"] = [1, 2]
        self.assertFalse(accuracy.score_testbed_hang(truth)["rank_ok"])
        del truth["hang"]
        self.assertEqual(accuracy.score_testbed_hang(truth)["status"], accuracy.MISSED)


class TimingTest(unittest.TestCase):
    def test_time_to_diagnosis(self):
        truth = dict(LOCAL_TRUTH, fault_onset_monotonic_s=100.0)
        self.assertEqual(accuracy.time_to_diagnosis(truth, 112.25), 12.25)
        self.assertIsNone(accuracy.time_to_diagnosis(HEALTHY_TRUTH, 112.0))
        self.assertIsNone(accuracy.time_to_diagnosis(truth, None))

    def test_slowdown_uses_the_slowest_rank_per_iteration(self):
        before, during = [0.1] * 8, [0.15] * 12
        times = {"0": before + during, "1": [0.1] * 8 + [0.2] + [0.15] * 11}
        truth = dict(LOCAL_TRUTH, iteration_times_s=times)
        self.assertAlmostEqual(accuracy.faulty_slowdown(truth), 1.5)
        self.assertIsNone(accuracy.faulty_slowdown(HEALTHY_TRUTH))

    def test_iteration_lines_with_and_without_start(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "iters-r0.txt"
            path.write_text("1 0.2 11.5\n0 0.1 11.0\nbad\n")
            self.assertEqual(launch.parse_iteration_lines(path), ([0.1, 0.2], [11.0, 11.5]))
            path.write_text("0 0.1\n")
            times, starts = launch.parse_iteration_lines(path)
            self.assertEqual(times, [0.1])
            self.assertNotEqual(starts[0], starts[0])  # NaN: unknown
            self.assertEqual(launch.parse_iteration_lines(Path(tmp) / "none"), ([], []))


class ReportTest(unittest.TestCase):
    def records(self):
        return [
            {"scenario": "healthy", "seed": 0, "fault_rank": None, "truth_category": None,
             "status": accuracy.CORRECT, "false_alarm": False, "first": None,
             "loadavg_before": [2.0, 2.0, 2.0]},
            {"scenario": "healthy", "seed": 1, "fault_rank": None, "truth_category": None,
             "status": accuracy.FALSE_ALARM, "false_alarm": True,
             "first": finding([1], "host"), "loadavg_before": [3.5, 2.0, 2.0]},
            {"scenario": "gc_storm", "seed": 0, "fault_rank": "1", "truth_category": "host",
             "status": accuracy.CORRECT, "rank_ok": True, "category_ok": True, "scope_ok": True,
             "first": finding([1], "host"), "time_to_diagnosis_s": 12.0, "slowdown": 1.4,
             "loadavg_before": [2.0]},
            {"scenario": "gc_storm", "seed": 1, "fault_rank": "0", "truth_category": "host",
             "status": accuracy.WRONG, "rank_ok": True, "category_ok": False, "scope_ok": True,
             "first": finding([0], "compute"), "time_to_diagnosis_s": 14.0, "loadavg_before": [2.0]},
            {"scenario": "net_throttle", "seed": 0, "fault_rank": "1", "truth_category": "communication",
             "status": accuracy.NEEDS_AGENT, "rank_ok": False, "first": None, "loadavg_before": [2.0]},
            {"scenario": "imbalance", "seed": 0, "fault_rank": "1", "truth_category": "imbalance",
             "status": accuracy.ERROR, "error": "run_scenario failed (1): x|y", "loadavg_before": []},
        ]

    def test_summary_and_totals(self):
        records = self.records()
        summary = accuracy.summarize(records)
        self.assertEqual(list(summary), ["healthy", "gc_storm", "net_throttle", "imbalance"])
        self.assertEqual(summary["healthy"]["false_alarms"], 1)
        self.assertEqual((summary["gc_storm"]["correct"], summary["gc_storm"]["category_ok"],
                          summary["gc_storm"]["rank_ok"]), (1, 1, 2))
        self.assertEqual(summary["gc_storm"]["median_time_to_diagnosis_s"], 13.0)
        self.assertEqual(summary["net_throttle"]["not_yet"], 1)
        totals = accuracy.totals(records)
        self.assertEqual(totals, {"runs": 6, "fault_runs": 4, "fault_runs_scored": 2,
                                  "fault_runs_detected": 0,
                                  "fault_runs_correct": 1, "fault_runs_not_yet_diagnosable": 1,
                                  "healthy_runs": 2, "false_alarms": 1, "errors": 1})

    def test_markdown(self):
        records = self.records()
        records[2]["detected"] = records[3]["detected"] = True
        records[3]["spec"] = splits.RunSpec("gc_storm", 1, ranks=6).as_dict()
        summary = accuracy.summarize(records)
        self.assertEqual(summary["gc_storm"]["setups"], ["mlp-w0-a1-r6"])
        text = accuracy.markdown_tables(records, summary, accuracy.totals(records),
                                        {"net_throttle": "needs agent: why"})
        lines = text.splitlines()
        self.assertIn("| gc_storm-mlp-w0-a1-r6-s1 | 0 | wrong category | local compute on [0]: f (50.0 ms/iter) | – | 14.0 s | 2.0 |", lines)
        self.assertIn("| healthy-s1 | – | false alarm | local host on [1]: f (50.0 ms/iter) | – | – | 3.5 |", lines)
        self.assertTrue(any(l.startswith("| imbalance-s0 | 1 | error | run_scenario failed (1): x\\|y") for l in lines))
        self.assertIn("| gc_storm | mlp-w0-a1-r6 | 2 | 2/2 | 1/2 | 2/2 | 2/2 | 1/2 | 0 | – |  |", lines)
        self.assertIn("| healthy | – | 2 | – | – | – | – | 1/2 | 1 | – |  |", lines)
        self.assertTrue(any(l.startswith("| net_throttle | – | 1 | 0/1 |") and "needs agent: why" in l for l in lines))
        self.assertIn("1/2 scored runs, 2 with a finding (1 more not diagnosable yet); false alarms: 1/2 healthy runs; 1 run(s) failed.", text)
        # Every row has as many cells as its table's header (escaped pipes are not cells).
        for table in text.split("\n\n")[:2]:
            rows = [l.replace("\\|", "") for l in table.splitlines()]
            self.assertEqual({r.count("|") for r in rows}, {rows[0].count("|")}, table)

    def test_describe(self):
        self.assertEqual(accuracy.describe_finding(None), "(no finding)")
        text = accuracy.describe_finding(finding(list(range(10)), "host", "global", location="a.py:3"))
        self.assertEqual(text, "global host on [0..9] (10): f (50.0 ms/iter) at a.py:3")

    def test_verdicts(self):
        self.assertEqual(accuracy.verdict_text({"status": accuracy.NEEDS_AGENT}), "needs agent")
        self.assertEqual(accuracy.verdict_text({"status": accuracy.CORRECT, "location_ok": False}),
                         "correct (location wrong)")
        self.assertEqual(accuracy.verdict_text({"status": accuracy.MISSED}), "missed")

    def test_subcommands_of_a_fake_binary(self):
        with tempfile.TemporaryDirectory() as tmp:
            fake = Path(tmp) / "eroica"
            fake.write_text("#!/bin/sh\ncat <<'EOF'\nUsage: eroica\n\nSubcommands:\n"
                            "  diagnose   Find\n  agent      Node agent: x\nEOF\n")
            fake.chmod(0o755)
            self.assertEqual(accuracy.eroica_subcommands(str(fake)), ["diagnose", "agent"])
            self.assertEqual(accuracy.eroica_subcommands(str(Path(tmp) / "missing")), [])


TWO_TRUTH = {"scenario": "two_faults", "ranks": [1, 3], "category": "dataloader", "scope": "local",
             "faults": [{"ranks": [1], "category": "dataloader", "scope": "local", "cost_ms_per_iter": 150},
                        {"ranks": [3], "category": "compute", "scope": "local", "cost_ms_per_iter": 40}],
             "locations": [{"file": "faults.py", "lines": [110], "site": "stall"}]}


class SeveralFaultsTest(unittest.TestCase):
    def test_both_in_order(self):
        score = accuracy.score_diagnosis(TWO_TRUTH, diagnosis(finding([1]), finding([0], "host"),
                                                              finding([3], "compute")))
        self.assertEqual((score["status"], score["order_ok"], score["matched"]), (accuracy.CORRECT, True, [0, 2]))

    def test_reversed_order_is_wrong(self):
        score = accuracy.score_diagnosis(TWO_TRUTH, diagnosis(finding([3], "compute"), finding([1])))
        self.assertEqual((score["status"], score["order_ok"], score["rank_ok"]), (accuracy.WRONG, False, True))
        self.assertEqual(accuracy.verdict_text(score), "wrong order")

    def test_order_of_faults_that_cost_about_the_same_is_not_judged(self):
        close = dict(TWO_TRUTH, faults=[dict(TWO_TRUTH["faults"][0], cost_ms_per_iter=150),
                                        dict(TWO_TRUTH["faults"][1], cost_ms_per_iter=130)])
        score = accuracy.score_diagnosis(close, diagnosis(finding([3], "compute"), finding([1])))
        self.assertEqual((score["status"], score["order_ok"]), (accuracy.CORRECT, None))
        missing = accuracy.score_diagnosis(close, diagnosis(finding([3], "compute")))
        self.assertEqual((missing["status"], missing["order_ok"]), (accuracy.WRONG, False))
        self.assertFalse(accuracy.costs_too_close([150, None]))
        self.assertTrue(accuracy.costs_too_close([150, 130]))

    def test_a_cost_the_testbed_could_not_tell_from_its_noise_is_neither_required_nor_ranked(self):
        # tuning17's MLP, seed 1: the quota's rank's own-work measure moved +5.5 ms a step, the
        # fault-free ranks' by -7.9 and +5.8: the stall kept the quota from biting.
        hidden = dict(TWO_TRUTH, faults=[dict(TWO_TRUTH["faults"][0], cost_ms_per_iter=150.1),
                                         dict(TWO_TRUTH["faults"][1], cost_ms_per_iter=5.5)],
                      own_work_ms={"0": [16.8, 22.6], "1": [33.0, 15.5], "2": [30.6, 22.7], "3": [20.1, 25.6]})
        stall_only = accuracy.score_diagnosis(hidden, diagnosis(finding([1])))
        self.assertEqual((stall_only["status"], stall_only["order_ok"]), (accuracy.CORRECT, None))
        both_reversed = accuracy.score_diagnosis(hidden, diagnosis(finding([3], "compute"), finding([1])))
        self.assertEqual((both_reversed["status"], both_reversed["order_ok"]), (accuracy.CORRECT, None))
        # The stall is always measured (its own sleeps): it must be named.
        self.assertEqual(accuracy.score_diagnosis(hidden, diagnosis(finding([3], "compute")))["status"],
                         accuracy.WRONG)
        # A quota's measure that fell, by more than the fault-free rank's moved (probe22, seed
        # 619: -2.5 ms against -0.9), is no cost: neither required nor ranked.
        faster = dict(TWO_TRUTH, faults=[dict(TWO_TRUTH["faults"][0], cost_ms_per_iter=100.1),
                                         dict(TWO_TRUTH["faults"][1], cost_ms_per_iter=-2.5)],
                      own_work_ms={"0": [12.8, 11.9]})
        self.assertEqual(accuracy.score_diagnosis(faster, diagnosis(finding([1])))["status"], accuracy.CORRECT)
        # Fault-free ranks that held still: the quota's 40 ms is measured, required and ranked.
        still = dict(TWO_TRUTH, own_work_ms={"0": [16.8, 18.0], "2": [30.6, 29.0]})
        self.assertEqual(accuracy.score_diagnosis(still, diagnosis(finding([1])))["status"], accuracy.WRONG)
        reversed_order = accuracy.score_diagnosis(still, diagnosis(finding([3], "compute"), finding([1])))
        self.assertEqual((reversed_order["status"], reversed_order["order_ok"]), (accuracy.WRONG, False))

    def test_faults_are_ranked_by_their_cost_net_of_what_the_measure_moves_without_them(self):
        # cnn26's two_faults, seed 316: the truth lists the quota first by its measure's move
        # (344 ms a step), but a fault-free rank's moved 300 (the forward waits in DDP's buffer
        # broadcast for the stalled rank): net 44 ms against the stall's 120, the stall first.
        quota, stall = dict(TWO_TRUTH["faults"][1]), dict(TWO_TRUTH["faults"][0])
        grown = dict(TWO_TRUTH, faults=[dict(quota, cost_ms_per_iter=344.4), dict(stall, cost_ms_per_iter=120.1)],
                     own_work_ms={"0": [83.2, 383.4], "1": [38.1, 19.3], "2": [34.3, 15.3]})
        stall_first = accuracy.score_diagnosis(grown, diagnosis(finding([1]), finding([3], "compute")))
        self.assertEqual((stall_first["status"], stall_first["order_ok"], stall_first["matched"]),
                         (accuracy.CORRECT, True, [1, 0]))
        quota_first = accuracy.score_diagnosis(grown, diagnosis(finding([3], "compute"), finding([1])))
        self.assertEqual((quota_first["status"], quota_first["order_ok"]), (accuracy.WRONG, False))
        # edge25's 8-rank MLP, seed 928: 159 ms less 21.9 is 137, within 1.25x of the stall's
        # 120: neither order is wrong.
        close = dict(grown, faults=[dict(quota, cost_ms_per_iter=159.0), dict(stall, cost_ms_per_iter=120.3)],
                     own_work_ms={"0": [30.0, 51.9], "2": [30.0, 25.0]})
        either = accuracy.score_diagnosis(close, diagnosis(finding([1]), finding([3], "compute")))
        self.assertEqual((either["status"], either["order_ok"]), (accuracy.CORRECT, None))
        # Fault-free ranks that held still: 159 against 120 is ranked, the quota first.
        still = dict(close, own_work_ms={"0": [30.0, 31.0]})
        self.assertEqual(accuracy.score_diagnosis(still, diagnosis(finding([1]), finding([3], "compute")))["order_ok"],
                         False)

    def test_one_missing_or_miscategorized(self):
        only = accuracy.score_diagnosis(TWO_TRUTH, diagnosis(finding([1])))
        self.assertEqual((only["status"], only["rank_ok"], only["detected"]), (accuracy.WRONG, False, True))
        self.assertFalse(only["order_ok"])
        wrong = accuracy.score_diagnosis(TWO_TRUTH, diagnosis(finding([1]), finding([3], "host")))
        self.assertEqual((wrong["rank_ok"], wrong["category_ok"], wrong["status"]), (True, False, accuracy.WRONG))
        # One finding naming both ranks does not report two faults.
        merged = accuracy.score_diagnosis(TWO_TRUTH, diagnosis(finding([1, 3])))
        self.assertEqual(merged["status"], accuracy.WRONG)

    def test_summary_counts_order(self):
        record = dict(scenario="two_faults", seed=0, truth_category="dataloader", loadavg_before=[1.0],
                      **accuracy.score_diagnosis(TWO_TRUTH, diagnosis(finding([3], "compute"), finding([1]))))
        summary = accuracy.summarize([record])
        self.assertEqual((summary["two_faults"]["order_ok"], summary["two_faults"]["order_scored"]), (0, 1))
        self.assertIn("order right 0/1", accuracy.scenario_table(summary))


class LocationTest(unittest.TestCase):
    EXPECTED = [{"file": "faults.py", "lines": [417, 418], "site": "checkpoint"}]

    def test_location_forms(self):
        self.assertTrue(accuracy.location_right("faults.py:417", self.EXPECTED))
        self.assertTrue(accuracy.location_right("/work/wt/x/testbed/faults.py:418(save_checkpoint)", self.EXPECTED))
        self.assertFalse(accuracy.location_right("faults.py:419(save_checkpoint)", self.EXPECTED))
        self.assertFalse(accuracy.location_right("train.py:417", self.EXPECTED))
        self.assertFalse(accuracy.location_right("(python between a and b)", self.EXPECTED))
        self.assertIsNone(accuracy.location_right("", self.EXPECTED))
        self.assertIsNone(accuracy.location_right("faults.py:417", []))

    def test_scored_when_the_finding_carries_one(self):
        truth = dict(LOCAL_TRUTH, category="host", locations=self.EXPECTED)
        right = accuracy.score_diagnosis(truth, diagnosis(finding([2], "host", location="faults.py:417(save_checkpoint)")))
        self.assertEqual((right["status"], right["location_ok"], right["location"]),
                         (accuracy.CORRECT, True, "faults.py:417(save_checkpoint)"))
        wrong = accuracy.score_diagnosis(truth, diagnosis(finding([2], "host", location="train.py:310(train)")))
        self.assertEqual((wrong["status"], wrong["location_ok"]), (accuracy.CORRECT, False))
        self.assertEqual(accuracy.verdict_text(wrong), "correct (location wrong)")
        none = accuracy.score_diagnosis(truth, diagnosis(finding([2], "host")))
        self.assertIsNone(none["location_ok"])
        summary = accuracy.summarize([dict(scenario="checkpoint_sync", seed=0, truth_category="host", **r)
                                      for r in (right, wrong, none)])
        self.assertEqual((summary["checkpoint_sync"]["location_ok"], summary["checkpoint_sync"]["location_given"]), (1, 2))

    def test_the_truths_lines_are_the_faults_sites(self):
        sites = faults.site_lines(faults.SCENARIOS["checkpoint_sync"].sites)
        text = (Path(accuracy.TESTBED_DIR) / "faults.py").read_text().splitlines()
        line = next(n for n in sites["checkpoint"] if "torch.save(" in text[n - 1])
        truth = dict(LOCAL_TRUTH, category="host",
                     locations=[{"file": "faults.py", "lines": sites["checkpoint"], "site": "checkpoint"}])
        score = accuracy.score_diagnosis(truth, diagnosis(finding([2], "host", location=f"faults.py:{line}(save_checkpoint)")))
        self.assertTrue(score["location_ok"])


class SplitsTest(unittest.TestCase):
    def test_two_fixed_matrices(self):
        tuning, validation = splits.tuning(), splits.validation()
        names = [s.name for s in tuning + validation]
        self.assertEqual(len(names), len(set(names)))  # one folder per run
        self.assertEqual({s.ranks for s in tuning}, {4})
        self.assertTrue(all(s.seed < 100 for s in tuning) and all(s.seed >= 100 for s in validation))
        self.assertEqual({s.ranks for s in validation}, {4, 6})
        self.assertIn("transformer", {s.model for s in validation})
        self.assertTrue({1, 2, 4} <= {s.accum_steps for s in validation})
        for split in (tuning, validation):
            self.assertEqual({s.scenario for s in split}, set(faults.SCENARIOS))  # every scenario in both
            healthy = [s for s in split if s.scenario == "healthy"]
            self.assertGreaterEqual(len({s.seed for s in healthy}), 5)
            for name in faults.SCENARIOS:
                self.assertGreaterEqual(len({s.seed for s in split if s.scenario == name}), 2, name)
        # Validation's fault sizes are not tuning's.
        tuned = {(s.scenario, s.params) for s in tuning}
        sized = [s for s in validation if s.params and (s.scenario, s.params) in tuned]
        self.assertEqual(sized, [])

    def test_the_probe_has_rank_counts_and_seeds_of_its_own(self):
        probe = splits.probe()
        names = [s.name for s in probe]
        self.assertEqual(len(names), len(set(names)))
        others = splits.tuning() + splits.validation()
        self.assertEqual({s.ranks for s in probe}, {3, 5})
        self.assertFalse({s.seed for s in probe} & {s.seed for s in others})
        self.assertEqual({s.scenario for s in probe}, set(faults.SCENARIOS) - {"net_throttle", "net_throttle_global",
                                                                              "hang"})
        # The runs of this stop's probe folders, by name.
        self.assertIn("healthy-transformer-w2-a3-r3-s501", names)
        self.assertIn("two_faults-mlp-w0-a1-r3-stall_ms100-share0.45-s619", names)

    def test_the_edge_has_the_smallest_and_largest_jobs_and_seeds_of_its_own(self):
        edge = splits.edge()
        names = [s.name for s in edge]
        self.assertEqual(len(names), len(set(names)))
        others = splits.tuning() + splits.validation() + splits.probe()
        self.assertEqual({s.ranks for s in edge}, {2, 8})
        self.assertFalse({s.seed for s in edge} & {s.seed for s in others})
        self.assertEqual({s.scenario for s in edge}, set(faults.SCENARIOS) - {"net_throttle", "net_throttle_global",
                                                                             "hang"})
        # Two faults need two ranks two apart: never at 2 ranks, where that is the same rank.
        for spec in edge:
            ranks = (spec.fault_rank() or "").split(",")
            self.assertEqual(len(ranks), len(set(ranks)), spec.name)
        self.assertEqual(len([s for s in edge if s.scenario == "healthy"]), 12)
        self.assertIn("loader_workers_slow-mlp-w2-a1-r2-getitem_ms11-s909", names)

    def test_the_cnn_split_is_a_model_family_and_seeds_of_its_own(self):
        cnn = splits.cnn()
        names = [s.name for s in cnn]
        self.assertEqual(len(names), len(set(names)))
        others = splits.tuning() + splits.validation() + splits.probe() + splits.edge()
        self.assertEqual({s.model for s in cnn}, {"cnn"})
        self.assertNotIn("cnn", {s.model for s in others})
        self.assertFalse({s.seed for s in cnn} & {s.seed for s in others})
        self.assertEqual({s.scenario for s in cnn}, set(faults.SCENARIOS) - {"net_throttle", "net_throttle_global",
                                                                            "hang", "imbalance_seq"})
        self.assertEqual({s.ranks for s in cnn}, {3, 4, 6})
        self.assertEqual(len([s for s in cnn if s.scenario == "healthy"]), 6)
        self.assertIn("checkpoint_sync-cnn-w2-a1-r4-s415", names)

    def test_a_smaller_run_of_a_split(self):
        args = accuracy.parse_args(["--eroica", "/bin/true", "--split", "validation", "--scenario", "healthy",
                                    "--max-runs-per-scenario", "2"])
        self.assertEqual([s.name for s in accuracy.specs_from_args(args)],
                         ["healthy-mlp-w0-a1-r6-s100", "healthy-mlp-w0-a1-r6-s101"])
        args = accuracy.parse_args(["--eroica", "/bin/true", "--split", "tuning",
                                    "--run", "two_faults-mlp-w0-a1-r4-s2"])
        self.assertEqual([s.fault_rank() for s in accuracy.specs_from_args(args)], ["3,1"])
        args.run = ["no-such-run"]
        with self.assertRaises(SystemExit):
            accuracy.specs_from_args(args)

    def test_settings_a_scenario_needs(self):
        for spec in splits.tuning() + splits.validation():
            if spec.scenario == "imbalance_seq":
                self.assertEqual(spec.model, "transformer")
            if spec.scenario == "loader_workers_slow":
                self.assertGreater(spec.num_workers, 0)
        spec = splits.RunSpec("two_faults", 0, ranks=6, params=("stall_ms=150",))
        self.assertEqual(spec.name, "two_faults-mlp-w0-a1-r6-stall_ms150-s0")
        self.assertEqual(spec.fault_rank(), "1,3")
        self.assertEqual(splits.RunSpec("two_faults", 1).fault_rank(), "0,2")
        argv = spec.argv()
        self.assertEqual(argv[argv.index("--fault-rank") + 1], "1,3")
        self.assertEqual(argv[-2:], ["--param", "stall_ms=150"])


class RescoreTest(unittest.TestCase):
    """Saved run folders are re-diagnosed with another binary, without training."""

    def test_rescore_saved_runs_with_a_new_binary(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            run = root / "runs" / "gc_storm-mlp-w0-a1-r4-s0"
            run.mkdir(parents=True)
            # Made by hand with --fault-rank 2 (the seed would have put it on rank 1).
            truth = dict(LOCAL_TRUTH, scenario="gc_storm", category="host", ranks=[2], world_size=4, seed=0,
                         faults=[{"ranks": [2], "category": "host", "scope": "local"}],
                         settings={"model": "mlp", "num_workers": 0, "accum_steps": 1})
            (run / "truth.json").write_text(json.dumps(truth))
            healthy = root / "runs" / "healthy-mlp-w0-a1-r4-s3"
            healthy.mkdir()
            (healthy / "truth.json").write_text(json.dumps(dict(HEALTHY_TRUTH, world_size=4, seed=3)))
            fake = root / "eroica-new"
            answer = json.dumps(diagnosis(finding([2], "host")))
            fake.write_text(f"#!/bin/sh\ncase \"$2\" in *healthy*) echo '{json.dumps(diagnosis())}';; "
                            f"*) echo '{answer}';; esac\n")
            fake.chmod(0o755)
            args = argparse.Namespace(eroica=str(fake))
            records = accuracy.rescore_records(args, root, log=quiet)
            by_name = {r["spec"]["name"]: r for r in records}
            self.assertEqual(by_name["gc_storm-mlp-w0-a1-r4-s0"]["status"], accuracy.CORRECT)
            self.assertEqual(by_name["healthy-mlp-w0-a1-r4-s3"]["status"], accuracy.CORRECT)
            self.assertIsNone(by_name["gc_storm-mlp-w0-a1-r4-s0"]["time_to_diagnosis_s"])
            self.assertEqual(splits.RunSpec("gc_storm", 0).fault_rank(), "1")
            self.assertEqual(by_name["gc_storm-mlp-w0-a1-r4-s0"]["fault_rank"], "2")
            self.assertIsNone(by_name["healthy-mlp-w0-a1-r4-s3"]["fault_rank"])
            # The benchmark's own record of the run, when there, gives the spec and the before status.
            (root / "accuracy-results.json").write_text(json.dumps({"runs": [
                {"run_dir": str(run), "status": "wrong", "spec": splits.RunSpec("gc_storm", 0).as_dict()}]}))
            again = {r["spec"]["name"]: r for r in accuracy.rescore_records(args, root / "runs", log=quiet)}
            self.assertEqual(again["gc_storm-mlp-w0-a1-r4-s0"]["previous_status"], "wrong")

    def test_the_tables_show_the_truths_ranks(self):
        self.assertEqual(accuracy.truth_rank_text({"scope": "global", "ranks": [0, 1, 2]}), "all")
        self.assertEqual(accuracy.truth_rank_text({"scope": "local", "ranks": [1, 3]}), "1,3")
        self.assertIsNone(accuracy.truth_rank_text({"scope": None, "ranks": []}))

    def test_moved_hang_session_is_found_under_the_run(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = Path(tmp) / "hang-s0"
            (run / "eroica" / "job-1-hang").mkdir(parents=True)
            truth = {"online": {"session": "/elsewhere/hang-s0/eroica/job-1-hang"}}
            self.assertEqual(accuracy.online_session(truth, run), run / "eroica" / "job-1-hang")
            self.assertIsNone(accuracy.online_session({}, run))


if __name__ == "__main__":
    unittest.main()
