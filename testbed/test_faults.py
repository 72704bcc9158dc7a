"""Unit tests of the testbed's pure-Python parts: no torch, no root, no processes launched.

    cd testbed && /usr/bin/python3 -m unittest -v test_faults
"""

import contextlib
import gc
import json
import os
import shutil
import tempfile
import time
import unittest
from pathlib import Path

import faults
import launch
import run_scenario


class FaultRankParsing(unittest.TestCase):
    def test_single_list_all_and_none(self):
        self.assertEqual(faults.parse_fault_ranks("1", 4), [1])
        self.assertEqual(faults.parse_fault_ranks("2,0,2", 4), [0, 2])
        self.assertEqual(faults.parse_fault_ranks("all", 3), [0, 1, 2])
        self.assertEqual(faults.parse_fault_ranks(None, 4), [])
        self.assertEqual(faults.parse_fault_ranks("", 4), [])

    def test_out_of_range(self):
        with self.assertRaises(ValueError):
            faults.parse_fault_ranks("4", 4)
        with self.assertRaises(ValueError):
            faults.parse_fault_ranks("x", 4)

    def test_scope(self):
        self.assertIsNone(faults.fault_scope([], 4))
        self.assertEqual(faults.fault_scope([1], 4), "local")
        self.assertEqual(faults.fault_scope([0, 1, 2, 3], 4), "global")


class Scenarios(unittest.TestCase):
    def test_categories_are_the_documented_ones(self):
        allowed = {None, "dataloader", "compute", "host", "imbalance", "communication", "hang"}
        self.assertGreaterEqual(len(faults.SCENARIOS), 17)
        for scenario in faults.SCENARIOS.values():
            self.assertIn(scenario.category, allowed, scenario.name)
        self.assertEqual(faults.SCENARIOS["python_hot_loop_global"].default_fault_rank, "all")
        self.assertTrue(faults.SCENARIOS["net_throttle"].fault_class.needs_network_namespaces)

    def test_make_fault_merges_params(self):
        fault = faults.make_fault("dataloader_stall", {"stall_ms": 5})
        self.assertEqual(fault.params["stall_ms"], 5)
        self.assertEqual(faults.make_fault("imbalance").params["batch_factor"], 3)


class WorkerHooks(unittest.TestCase):
    def test_stall_only_when_active(self):
        fault = faults.make_fault("dataloader_stall", {"stall_ms": 30})
        started = time.perf_counter()
        fault.in_collate()
        self.assertLess(time.perf_counter() - started, 0.02)
        fault.activate()
        started = time.perf_counter()
        fault.in_collate()
        self.assertGreaterEqual(time.perf_counter() - started, 0.03)
        # The batch's own `on` wins: a batch made before the onset is fast, even now.
        started = time.perf_counter()
        fault.in_collate(on=False)
        self.assertLess(time.perf_counter() - started, 0.02)

    def test_imbalance_batch(self):
        fault = faults.make_fault("imbalance")
        self.assertEqual(fault.batch_size(32), 32)
        fault.activate()
        self.assertEqual(fault.batch_size(32), 96)
        self.assertEqual(fault.batch_size(32, on=False), 32)
        self.assertEqual(faults.NoFault().batch_size(32), 32)
        self.assertEqual(fault.seq_len(16, on=True), 16)
        # A fractional factor is that many samples (1.8x and 2.5x had been 1x and 2x).
        self.assertEqual(faults.make_fault("imbalance", {"batch_factor": 1.8}).batch_size(32, on=True), 58)
        self.assertEqual(faults.make_fault("imbalance", {"batch_factor": 2.5}).batch_size(32, on=True), 80)

    def test_longer_sequences_keep_the_batch(self):
        fault = faults.make_fault("imbalance_seq")
        self.assertEqual(fault.category, "imbalance")
        self.assertEqual((fault.seq_len(16, on=False), fault.batch_size(32, on=True)), (16, 32))
        self.assertEqual(fault.seq_len(16, on=True), 32)
        self.assertEqual(faults.make_fault("imbalance_seq", {"seq_factor": 1.5}).seq_len(16, on=True), 24)
        self.assertEqual(faults.SCENARIOS["imbalance_seq"].settings["model"], "transformer")

    def test_loader_workers_slow_in_a_worker_that_never_saw_the_onset(self):
        fault = faults.make_fault("loader_workers_slow", {"getitem_ms": 20, "collate_ms": 30})
        self.assertEqual((fault.category, faults.SCENARIOS["loader_workers_slow"].settings["num_workers"]),
                         ("dataloader", 2))
        # A forked DataLoader worker has its own copy of the fault, never activated: the
        # batch's `on` (from the sampler in the training process) is what slows it.
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker
            started = time.perf_counter()
            fault.in_getitem(on=True)
            fault.in_getitem(on=True)
            fault.in_collate(on=True)
            slow = time.perf_counter() - started
            started = time.perf_counter()
            fault.in_getitem(on=False)
            fault.in_collate(on=False)
            fast = time.perf_counter() - started
            os.write(write, f"{fault.active} {slow} {fast}".encode())
            os._exit(0)
        os.close(write)
        os.waitpid(pid, 0)
        active, slow, fast = os.read(read, 200).decode().split()
        os.close(read)
        self.assertEqual(active, "False")
        self.assertGreaterEqual(float(slow), 0.07)
        self.assertLess(float(fast), 0.02)

    def test_global_scenarios_are_on_every_rank(self):
        for name, category in (("dataloader_stall_global", "dataloader"), ("gc_storm_global", "host"),
                               ("python_light_global", "host"), ("python_hot_loop_global", "host")):
            scenario = faults.SCENARIOS[name]
            self.assertEqual((scenario.default_fault_rank, scenario.category), ("all", category), name)
            self.assertEqual(faults.truth_faults(name, [0, 1, 2, 3], 4)[0]["scope"], "global")

    def test_light_python_takes_its_share_of_the_step(self):
        fault = faults.make_fault("python_light_global", {"step_share": 0.2})
        fault.prepare(lambda: None)
        self.assertEqual(fault.loop_count, 0)  # no fixed loop: sized by the step
        started = time.monotonic()
        for iteration in range(3, 8):  # five healthy iterations of ~40 ms
            fault.in_step(iteration)
            time.sleep(0.04)
        step_s = (time.monotonic() - started) / 5
        fault.activate()
        expected = 0.2 / 0.8 * step_s  # a fifth of the faulty step: a quarter of the healthy one
        self.assertAlmostEqual(fault.loop_wall_s, expected, delta=0.05 * expected)
        started = time.perf_counter()
        fault.in_step(8)
        self.assertGreaterEqual(time.perf_counter() - started, fault.loop_wall_s)
        self.assertIn("in_step_wall_ms_mean", fault.report())

    def test_hot_loop_in_forward_runs_in_the_models_forward_hook_only(self):
        try:
            import torch
        except ImportError:
            self.skipTest("no torch in this interpreter")

        class Wrapped:  # as DistributedDataParallel holds the model
            module = torch.nn.Linear(3, 2)

        fault = faults.make_fault("python_hot_loop", {"loop_ms": 1, "in_forward": 1})
        fault.prepare(lambda: None)
        fault.attach(Wrapped())
        Wrapped.module(torch.ones(1, 3))  # not active yet
        fault.activate()
        fault.in_step(9)  # not in the step
        self.assertNotIn("in_step_wall_ms_mean", fault.report())
        Wrapped.module(torch.ones(1, 3))
        Wrapped.module(torch.ones(1, 3))  # once per forward: each micro-batch's
        self.assertEqual(len(fault._loop_walls), 2)
        plain = faults.make_fault("python_hot_loop", {"loop_ms": 1})
        plain.prepare(lambda: None)
        plain.attach(Wrapped())  # no hook: the loop stays in the step
        plain.activate()
        plain.in_step(9)
        self.assertEqual(len(plain._loop_walls), 1)

    def test_checkpoint_saves_synchronously_each_step(self):
        try:
            import torch
        except ImportError:
            self.skipTest("no torch in this interpreter")
        work = tempfile.mkdtemp(prefix="eroica-testbed-unit-", dir="/var/tmp")
        try:
            fault = faults.make_fault("checkpoint_sync", rank=2, work_dir=work)
            state = {"model": {"w": torch.arange(1000.0)}}
            fault.after_step(0, lambda: state)  # not active yet: nothing saved
            path = Path(work) / "checkpoint-r2.pt"
            self.assertFalse(path.exists())
            fault.activate()
            fault.after_step(9, lambda: state)
            self.assertTrue(torch.equal(torch.load(path)["model"]["w"], state["model"]["w"]))
            report = fault.report()
            self.assertGreater(report["checkpoint_bytes"], 4000)
            self.assertGreater(report["save_wall_ms_mean"], 0)
            fault.close()
            self.assertEqual(list(Path(work).iterdir()), [])
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def test_eval_pass_runs_the_models_forward_every_few_steps(self):
        try:
            import torch
        except ImportError:
            self.skipTest("no torch in this interpreter")
        calls = []

        class Model(torch.nn.Module):
            def forward(self, dense, tokens):
                calls.append(self.training)
                return dense.sum() + tokens.sum()

        class State:
            model = Model()
            last_inputs = (torch.ones(2, 3), torch.ones(2, 4))

        fault = faults.make_fault("eval_pass", {"every": 3, "eval_ms": 5})
        fault.after_step(0, State())  # not active yet
        self.assertEqual(calls, [])
        fault.activate()
        fault.after_step(4, State())  # not its step
        self.assertEqual(calls, [])
        fault.after_step(6, State())
        self.assertGreater(len(calls), 0)
        self.assertFalse(any(calls))  # in eval mode
        self.assertTrue(State.model.training)  # and back to training
        self.assertEqual(fault.report(), {"eval_passes": len(calls)})

    def test_sites_name_the_lines_that_spend_the_time(self):
        text = Path(faults.__file__).read_text().splitlines()
        expect = {"checkpoint_sync": "torch.save(", "gc_storm": "gc.collect()", "dataloader_stall": "time.sleep(",
                  "loader_workers_slow": "time.sleep(", "python_hot_loop": "(i * i) % 7",
                  "slow_storage": "os.preadv(", "busy_thread": "json.dumps(", "eval_pass": "model(*inputs)"}
        for name, code in expect.items():
            lines = [n for lines in faults.site_lines(faults.SCENARIOS[name].sites).values() for n in lines]
            self.assertTrue(lines, name)
            self.assertTrue(any(code in text[n - 1] for n in lines), name)
        self.assertEqual(faults.SCENARIOS["two_faults"].sites, ("stall",))

    def test_two_faults_each_on_its_rank(self):
        scenario = faults.SCENARIOS["two_faults"]
        self.assertEqual(scenario.parts, ("dataloader_stall", "cpu_throttle"))
        self.assertEqual(scenario.category, "dataloader")
        self.assertEqual(faults.parse_fault_ranks("3,1", 4, keep_order=True), [3, 1])
        with self.assertRaises(ValueError):
            faults.parse_fault_ranks("1,1", 4, keep_order=True)
        with self.assertRaises(ValueError):
            faults.assign_parts(scenario, [1])
        # Training processes: each rank its part, with the scenario's sizes and the run's.
        stall = faults.make_fault("two_faults", {"stall_ms": 90}, rank=3, fault_ranks=[3, 1])
        throttle = faults.make_fault("two_faults", {"stall_ms": 90}, rank=1, fault_ranks=[3, 1])
        self.assertIsInstance(stall, faults.DataloaderStall)
        self.assertEqual(stall.params, {"stall_ms": 90})
        self.assertIsInstance(throttle, faults.CpuThrottle)
        self.assertEqual(throttle.params["share"], 0.5)
        self.assertIsInstance(faults.make_fault("two_faults", rank=0, fault_ranks=[3, 1]), faults.NoFault)
        # The launcher applies the throttle to its rank only.
        launcher = faults.make_fault("two_faults", rank=None, fault_ranks=[3, 1])

        class FakeHost:
            quotas = []

            def throttle_cpu(self, rank, pid, quota_pct):
                self.quotas.append((rank, pid, quota_pct))

        launcher.apply_external(FakeHost(), 1, 77, note={"measured_cpu_pct": 40.0})
        self.assertEqual(FakeHost.quotas, [(1, 77, 20.0)])
        with self.assertRaises(NotImplementedError):
            launcher.apply_external(FakeHost(), 3, 78)
        with self.assertRaises(ValueError):
            launcher.apply_external(FakeHost(), 0, 79)
        truth = faults.truth_faults("two_faults", [3, 1], 4, {"stall_ms": 90})
        self.assertEqual([(t["scenario"], t["ranks"], t["category"]) for t in truth],
                         [("dataloader_stall", [3], "dataloader"), ("cpu_throttle", [1], "compute")])
        self.assertEqual(truth[0]["params"], {"stall_ms": 90})

    def test_gc_storm_lowers_and_restores_thresholds(self):
        saved = gc.get_threshold()
        fault = faults.make_fault("gc_storm", {"cycles_per_step": 10, "gc_threshold": 50,
                                               "full_collect": 0})
        fault.activate()
        try:
            self.assertEqual(gc.get_threshold()[0], 50)
            fault.in_step(0)
        finally:
            fault.close()
        self.assertEqual(gc.get_threshold(), saved)

    def test_hot_loop_calibration(self):
        count = faults.calibrate_loop_count(5.0, probe_count=20_000)
        self.assertGreater(count, 1000)

    def test_slow_storage_reads_records_from_disk(self):
        work = tempfile.mkdtemp(prefix="eroica-testbed-unit-", dir="/var/tmp")
        try:
            fault = faults.make_fault("slow_storage", {"file_mib": 2, "record_kib": 64},
                                      rank=3, work_dir=work)
            fault.prepare(lambda: None)
            path = Path(work) / "samples-r3.bin"
            self.assertEqual(path.stat().st_size, 2 * 1024 * 1024)
            self.assertIs(fault.record_reader(), fault)
            self.assertEqual(len(fault.read_record(5)), 4096)
            fault.close()
            self.assertFalse(path.exists())
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def test_external_faults_ask_the_launcher(self):
        class FakeHost:
            calls = []

            def throttle_cpu(self, rank, pid, quota_pct):
                self.calls.append(("cpu", rank, pid, quota_pct))

            def throttle_link(self, rank, rate_mbit):
                self.calls.append(("link", rank, rate_mbit))

        requests = []
        fault = faults.make_fault("cpu_throttle", {"quota_pct": 20})
        fault.prepare(lambda: requests.append("asked"))
        fault.activate()
        self.assertEqual(requests, ["asked"])
        host = FakeHost()
        fault.apply_external(host, 1, 1234)
        faults.make_fault("net_throttle").apply_external(host, 2, 99)
        self.assertEqual(host.calls, [("cpu", 1, 1234, 20.0), ("link", 2, 400.0)])
        with self.assertRaises(NotImplementedError):
            faults.make_fault("gc_storm").apply_external(host, 0, 1)

    def test_cpu_throttle_relative_to_the_measured_share(self):
        class FakeHost:
            def __init__(self):
                self.quotas = []

            def throttle_cpu(self, rank, pid, quota_pct):
                self.quotas.append(quota_pct)

        notes = []
        fault = faults.make_fault("cpu_throttle", {"share": 0.5})
        fault.prepare(lambda note=None: notes.append(note))
        fault.in_step(0)  # before the baseline iteration: not measured
        self.assertIsNone(fault.measured_cpu_pct())
        fault.in_step(fault.BASELINE_FROM_ITER)
        deadline = time.process_time() + 0.05
        while time.process_time() < deadline:  # busy: ~100 % of a core
            pass
        fault.activate()
        self.assertEqual(len(notes), 1)
        measured = notes[0]["measured_cpu_pct"]
        self.assertGreater(measured, 1.0)  # a loaded machine gives us a small share
        self.assertLessEqual(measured, 100.0 * os.cpu_count() + 5)
        host = FakeHost()
        fault.apply_external(host, 1, 4321, note=notes[0])
        self.assertAlmostEqual(host.quotas[0], 0.5 * measured)
        # At least 1 %; without a note (not measured) the fixed quota_pct.
        self.assertEqual(fault.quota_pct({"measured_cpu_pct": 0.5}), 1.0)
        self.assertEqual(fault.quota_pct(None), 25.0)
        # share 0 (the default): the fixed quota; the measured share is still reported.
        plain = faults.make_fault("cpu_throttle", {"quota_pct": 10})
        plain.prepare(lambda note=None: notes.append(("plain", note)))
        plain.in_step(5)
        plain.activate()
        self.assertEqual(notes[-1][0], "plain")
        self.assertIn("measured_cpu_pct", notes[-1][1])
        self.assertEqual(plain.quota_pct({"measured_cpu_pct": 80}), 10.0)
        # Activated before the baseline iteration: nothing measured, no note.
        early = faults.make_fault("cpu_throttle", {"share": 0.5})
        early.prepare(lambda: notes.append("early"))
        early.activate()
        self.assertEqual(notes[-1], "early")

    def test_external_request_text(self):
        self.assertEqual(launch.parse_external_request("123\n"), (123, None))
        self.assertEqual(launch.parse_external_request('123 {"measured_cpu_pct": 40.5}'),
                         (123, {"measured_cpu_pct": 40.5}))

    def test_agent_window_follows_the_pace(self):
        times = {0: [0.1] * 10, 1: [0.1] * 5 + [0.2] * 5}
        self.assertEqual(launch.agent_window_s(times, profile_iters=5), round(8 * 0.2 + 1.0, 2))
        self.assertEqual(launch.agent_window_s({0: []}, profile_iters=5), 9.0)
        net = launch.RankNetwork("77", 2)
        capture = launch.AgentCapture("/bin/eroica", "/out", net)
        self.assertEqual(capture.argv(1, 555, 3.5),
                         ["ip", "netns", "exec", "eroica-77-r1", "/bin/eroica", "agent", "--session",
                          "/out", "--duration", "3.50", "--host", "rank-1", "--pid", "555", "--no-gpu"])
        self.assertEqual(launch.AgentCapture("e", "/o").argv(0, 1, 1)[:2], ["e", "agent"])


class Cgroups(unittest.TestCase):
    def setUp(self):
        self.root = Path(tempfile.mkdtemp(prefix="eroica-cgroup-unit-"))

    def tearDown(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def write(self, relative, text=""):
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def test_v1_under_own_cgroup(self):
        self.write("fs/cpu/cpu.cfs_quota_us", "-1\n")
        self.write("fs/cpu/jobs/a/cpu.cfs_quota_us", "-1\n")
        self_file = self.write("self_cgroup", "4:memory:/x\n2:cpu,cpuacct:/jobs/a\n0::/\n")
        cgroups = launch.CpuCgroups("77", fs_root=self.root / "fs", self_cgroup_file=self_file)
        self.assertEqual(cgroups.version, 1)
        self.assertEqual(cgroups.base, self.root / "fs/cpu/jobs/a")
        path = cgroups.create("r1", quota_pct=25)
        self.assertEqual(path, self.root / "fs/cpu/jobs/a/eroica-77-r1")
        self.assertEqual((path / "cpu.cfs_period_us").read_text().strip(), "100000")
        self.assertEqual((path / "cpu.cfs_quota_us").read_text().strip(), "25000")
        cgroups.add_process(path, 4242)
        self.assertEqual((path / "cgroup.procs").read_text().strip(), "4242")
        cgroups._rmdir = shutil.rmtree  # a real cgroupfs removes its control files itself
        self.assertEqual(cgroups.remove_all(), [])
        self.assertFalse(path.exists())
        self.assertEqual((self.root / "fs/cpu/jobs/a/cgroup.procs").read_text().strip(), "4242")

    def test_v1_falls_back_to_hierarchy_root(self):
        self.write("fs/cpu/cpu.cfs_quota_us", "-1\n")
        self_file = self.write("self_cgroup", "1:cpu:/not/visible/here\n")
        version, base = launch.detect_cpu_cgroup(self.root / "fs", self_file)
        self.assertEqual((version, base), (1, self.root / "fs/cpu"))

    def test_v2(self):
        self.write("fs/cgroup.controllers", "cpuset cpu io memory\n")
        subtree = self.write("fs/cgroup.subtree_control", "memory\n")
        cgroups = launch.CpuCgroups("5", fs_root=self.root / "fs",
                                    self_cgroup_file=self.root / "missing")
        self.assertEqual(cgroups.version, 2)
        path = cgroups.create("r0", quota_pct=50, period_us=200_000)
        self.assertEqual((path / "cpu.max").read_text().strip(), "100000 200000")
        self.assertEqual(subtree.read_text().strip(), "+cpu")

    def test_none(self):
        cgroups = launch.CpuCgroups("5", fs_root=self.root, self_cgroup_file=self.root / "x")
        self.assertIsNone(cgroups.version)
        with self.assertRaises(RuntimeError):
            cgroups.create("r0", 25)


class Network(unittest.TestCase):
    def test_names_addresses_and_commands(self):
        net = launch.RankNetwork("123", 4)
        self.assertEqual(net.rank_ns(2), "eroica-123-r2")
        self.assertEqual(net.bridge_ns, "eroica-123-br")
        self.assertEqual(net.address(0), "10.213.0.1")
        commands = net.setup_commands()
        added = [c[3] for c in commands if c[:3] == ["ip", "netns", "add"]]
        self.assertEqual(added, ["eroica-123-br"] + [f"eroica-123-r{r}" for r in range(4)])
        for argv in commands:
            self.assertNotIn("ip link add", " ".join(argv[:3]))  # never in the root namespace
        for argv in commands:
            if "veth" in argv:
                self.assertEqual(argv[1:3], ["-n", "eroica-123-br"])
                self.assertLessEqual(len(argv[argv.index("add") + 1]), 15)
        cpu_side, bridge_side = net.throttle_commands(1, 400)
        self.assertEqual(cpu_side[:7], ["tc", "-n", "eroica-123-r1", "qdisc", "add", "dev", "eth0"])
        self.assertEqual(bridge_side[:7], ["tc", "-n", "eroica-123-br", "qdisc", "add", "dev", "h1"])
        self.assertIn("tbf", cpu_side)
        self.assertIn("400mbit", cpu_side)

    def test_world_size_limit(self):
        with self.assertRaises(ValueError):
            launch.RankNetwork("1", 251)


class Progress(unittest.TestCase):
    def test_stale_names(self):
        names = ["eroica-100-r0", "eroica-200-br", "eroica-x-r0", "other", f"eroica-{os.getpid()}-r1"]
        alive = {200}
        self.assertEqual(launch.stale_names(names, alive=lambda pid: pid in alive), ["eroica-100-r0"])
        dirs = ["eroica-testbed-100-abc", "eroica-testbed-200-x"]
        self.assertEqual(launch.stale_names(dirs, launch.STALE_WORK_DIR, alive=lambda p: p == 200),
                         ["eroica-testbed-100-abc"])

    def test_least_advanced(self):
        states = {0: {"iter": 8, "phase": "backward"}, 1: {"iter": 8, "phase": "forward"},
                  2: {"iter": 8, "phase": "backward"}, 3: {"iter": 9, "phase": "data"}}
        self.assertEqual(launch.least_advanced(states), (8, [1]))
        self.assertFalse(launch.all_done(states))
        self.assertTrue(launch.all_done({0: {"iter": 20, "phase": "done"}, 1: {"iter": 20, "phase": "done"}}))
        self.assertFalse(launch.all_done({}))
        self.assertFalse(launch.exporting(states))
        self.assertTrue(launch.exporting({0: {"iter": 16, "phase": "export"}, 1: {"iter": 17, "phase": "backward"}}))
        self.assertEqual(launch.HangReport(8, [1], states).message(),
                         "no progress since iteration 8 on ranks [1]")


class Cli(unittest.TestCase):
    def test_defaults(self):
        args = run_scenario.parse_args(["--scenario", "dataloader_stall", "--out", "/tmp/x"])
        self.assertEqual((args.ranks, args.fault_ranks, args.seed), (4, [1], 0))
        self.assertLess(args.onset_iter, args.profile_start)
        self.assertLessEqual(args.profile_start + args.profile_iters, args.iters)
        args = run_scenario.parse_args(["--scenario", "python_hot_loop_global", "--ranks", "3",
                                        "--out", "d", "--param", "loop_ms=10"])
        self.assertEqual(args.fault_ranks, [0, 1, 2])
        self.assertEqual(args.fault_params, {"loop_ms": 10.0})
        args = run_scenario.parse_args(["--scenario", "healthy", "--out", "d"])
        self.assertEqual(args.fault_ranks, [])
        self.assertEqual(args.settings, {"model": "mlp", "num_workers": 0, "accum_steps": 1, "seq_len": None})

    def test_run_settings(self):
        args = run_scenario.parse_args(["--scenario", "imbalance_seq", "--out", "d", "--num-workers", "2",
                                        "--accum-steps", "3"])
        self.assertEqual(args.settings, {"model": "transformer", "num_workers": 2, "accum_steps": 3,
                                         "seq_len": None})
        args = run_scenario.parse_args(["--scenario", "loader_workers_slow", "--out", "d"])
        self.assertEqual(args.settings["num_workers"], 2)
        args = run_scenario.parse_args(["--scenario", "two_faults", "--out", "d", "--fault-rank", "3,0"])
        self.assertEqual(args.fault_ranks, [3, 0])
        config = run_scenario.build_config(args, Path("/tmp/x"))
        self.assertEqual((config["num_workers"], config["model"], config["stack_hz"]), (0, "mlp", 150.0))

    def test_rejections(self):
        bad = [["--scenario", "nope", "--out", "d"],
               ["--scenario", "healthy", "--out", "d", "--fault-rank", "1"],
               ["--scenario", "hang", "--out", "d", "--fault-rank", "9"],
               ["--scenario", "healthy", "--out", "d", "--iters", "10"],
               ["--scenario", "imbalance", "--out", "d", "--onset-iter", "13"],
               ["--scenario", "imbalance", "--out", "d", "--ranks", "1"],
               ["--scenario", "imbalance", "--out", "d", "--param", "batch_factor"],
               ["--scenario", "imbalance_seq", "--out", "d", "--model", "mlp"],
               ["--scenario", "two_faults", "--out", "d", "--fault-rank", "1"],
               ["--scenario", "healthy", "--out", "d", "--accum-steps", "0"]]
        with open(os.devnull, "w") as devnull:
            for argv in bad:
                with self.subTest(argv=argv), self.assertRaises(SystemExit):
                    with contextlib.redirect_stderr(devnull):
                        run_scenario.parse_args(argv)

    def test_iteration_summary(self):
        times = [1.0, 1.0, 1.0, 0.1, 0.1, 0.1, 0.5, 0.2, 0.2, 9.0]
        before_ms, during_ms = run_scenario.iteration_summary(times, onset_iter=6, window_end_iter=9)
        self.assertAlmostEqual(before_ms, 100.0)
        self.assertAlmostEqual(during_ms, 200.0)


class Outputs(unittest.TestCase):
    def setUp(self):
        self.out = Path(tempfile.mkdtemp(prefix="eroica-out-unit-"))

    def tearDown(self):
        shutil.rmtree(self.out, ignore_errors=True)

    def write_trace(self, rank, step_ids):
        events = [{"name": f"ProfilerStep#{i}", "ph": "X", "ts": i, "dur": 1,
                   "pid": "CPU functions", "tid": 1} for i in step_ids]
        events.append({"name": "aten::mm", "ph": "X", "ts": 0, "dur": 1, "pid": "CPU functions", "tid": 1})
        (self.out / f"rank-{rank}.json").write_text(json.dumps(events))

    def test_check_traces(self):
        for rank in range(2):
            self.write_trace(rank, [5, 6, 7])
        run_scenario.check_traces(self.out, 2, [5, 6, 7])
        self.write_trace(1, [5, 6])
        with self.assertRaises(RuntimeError):
            run_scenario.check_traces(self.out, 2, [5, 6, 7])
        with self.assertRaises(RuntimeError):
            run_scenario.check_traces(self.out, 3, [5, 6, 7])

    def test_two_faults_ordered_by_measured_cost(self):
        args = run_scenario.parse_args(["--scenario", "two_faults", "--out", str(self.out), "--fault-rank", "1,3"])
        wanted = faults.truth_faults("two_faults", args.fault_ranks, 4, args.fault_params)
        fast, slow = [0.010] * 20, [0.010] * 8 + [0.090] * 12  # forward: 30 -> 270 ms of own work
        result = launch.RunResult({}, fault_reports={1: {"stall_ms_per_iter": 150.0}},
                                  own_work={3: {"forward_s": slow, "optimizer_s": [0.001] * 20},
                                            1: {"forward_s": fast, "optimizer_s": [0.001] * 20}})
        self.assertEqual(run_scenario.own_work_ms(result.own_work[3], 8, [12, 13]), (31.0, 271.0))
        waits = {"data_s": [0.002] * 8 + [0.05] * 12}
        self.assertEqual(run_scenario.data_wait_ms(waits, 8, [12, 13]), (2.0, 50.0))
        self.assertIsNone(run_scenario.data_wait_ms({}, 8, [12, 13]))
        ordered = run_scenario.order_by_cost([dict(f) for f in wanted], args, result)
        self.assertEqual([(f["scenario"], f["cost_ms_per_iter"]) for f in ordered],
                         [("cpu_throttle", 240.0), ("dataloader_stall", 150.0)])
        result.own_work[3]["forward_s"] = fast  # the quota cost nothing: the stall first
        ordered = run_scenario.order_by_cost([dict(f) for f in wanted], args, result)
        self.assertEqual([f["scenario"] for f in ordered], ["dataloader_stall", "cpu_throttle"])
        del result.own_work[3]  # unknown: the scenario's order
        ordered = run_scenario.order_by_cost([dict(f) for f in reversed(wanted)], args, result)
        self.assertEqual(ordered[0]["scenario"], "cpu_throttle")
        self.assertIsNone(ordered[0]["cost_ms_per_iter"])

    def test_truth_and_stale_outputs(self):
        self.write_trace(0, [1])
        (self.out / "truth.json").write_text("{}")
        run_scenario.clear_outputs(self.out)
        self.assertEqual(list(self.out.iterdir()), [])
        args = run_scenario.parse_args(["--scenario", "gc_storm", "--out", str(self.out)])
        result = launch.RunResult({0: [0.1], 1: [0.2]})
        run_scenario.write_truth(self.out, args, result, [12, 13], {"cycles_per_step": 1})
        truth = json.loads((self.out / "truth.json").read_text())
        self.assertEqual(truth["ranks"], [1])
        self.assertEqual((truth["category"], truth["scope"]), ("host", "local"))
        self.assertEqual(truth["fault_onset_iter"], args.onset_iter)
        self.assertEqual(truth["profiled_iters"], [12, 13])
        self.assertEqual(truth["iteration_times_s"], {"0": [0.1], "1": [0.2]})
        self.assertEqual((truth["world_size"], truth["seed"]), (4, 0))
        self.assertEqual(truth["faults"], [{"scenario": "gc_storm", "ranks": [1], "category": "host",
                                            "scope": "local", "params": faults.SCENARIOS["gc_storm"].default_params}])
        self.assertEqual([loc["site"] for loc in truth["locations"]], ["gc"])
        self.assertEqual(truth["settings"]["model"], "mlp")


if __name__ == "__main__":
    unittest.main()
