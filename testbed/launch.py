"""Launch N training ranks, apply faults from outside them, watch progress, clean up.

Everything this module creates is named after the launcher's pid (`eroica-<pid>-...`), so a
later run can sweep what a killed launcher left behind (`sweep_stale`): network namespaces,
cgroups and work folders. `Testbed.close()` undoes everything in a fixed order (processes, then
cgroups, then namespaces, then files) and is safe to call twice.
"""

import ctypes
import json
import os
import queue
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

PYTHON = sys.executable  # the interpreter that runs the testbed (Makefile: PYTHON) runs its jobs
TRAIN_SCRIPT = Path(__file__).resolve().parent / "train.py"
RANK_FORKER = Path(__file__).resolve().parent / "rank_forker.py"
ONLINE_PACKAGE_PARENT = Path(__file__).resolve().parent.parent / "python"  # python/eroica
# Online mode (the ranks run under `python -m eroica run`): its settings for the testbed's
# short iterations. The degradation detector is kept out of the way (the testbed profiles on
# its own schedule); the hang watchdog fires after 3 s without progress.
ONLINE_ENV = {"EROICA_HANG_MIN_S": "3", "EROICA_HANG_FACTOR": "5", "EROICA_POLL_S": "0.2",
              "EROICA_THRESHOLD": "1000", "EROICA_COLLECT_TIMEOUT_S": "20"}
ONLINE_REPORT_WAIT_S = 60.0
NAME_PREFIX = "eroica"
WORK_DIR_PARENT = "/var/tmp"  # on disk, not tmpfs: the slow-storage file needs O_DIRECT
# The ranks' heartbeats, replaced a few times per iteration, and their per-iteration times,
# appended once per iteration: in memory, so that the harness's
# own file writes never stall the training they watch (on disk, a rename waited up to 100 ms
# behind other writers' journal flushes, on the critical path of the rank that waited).
BEAT_DIR_PARENT = "/dev/shm"
PHASES = ["ready", "data", "forward", "backward", "optimizer", "export", "done"]
POLL_INTERVAL_S = 0.02
STARTUP_TIMEOUT_S = 90.0
KILL_GRACE_S = 2.0


def run_command(argv, check=True):
    """Run a short system command (ip, tc); raise with its stderr when it fails."""
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"`{' '.join(argv)}` failed: {result.stderr.strip()}")
    return result


def free_port(host="127.0.0.1"):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# --------------------------------------------------------------------------------------------
# CPU cgroups


class CpuCgroups:
    """CPU-quota cgroups under the launcher's own cpu cgroup (v1) or the v2 root.

    v1: `<fs_root>/cpu/<own path>/eroica-<tag>-<name>/cpu.cfs_{period,quota}_us`;
    v2: `<fs_root>/eroica-<tag>-<name>/cpu.max` ("<quota> <period>"), with +cpu enabled in the
    root's cgroup.subtree_control."""

    def __init__(self, tag, fs_root="/sys/fs/cgroup", self_cgroup_file="/proc/self/cgroup"):
        self.tag = tag
        self.fs_root = Path(fs_root)
        self.version, self.base = detect_cpu_cgroup(self.fs_root, Path(self_cgroup_file))
        self.created: List[Path] = []

    def path_for(self, name):
        return self.base / f"{NAME_PREFIX}-{self.tag}-{name}"

    def create(self, name, quota_pct, period_us=100_000):
        if self.version is None:
            raise RuntimeError("no cgroup cpu controller found (v1 cpu.cfs_quota_us or v2 cpu.max)")
        quota_us = max(1000, int(period_us * quota_pct / 100.0))
        path = self.path_for(name)
        if self.version == 2:
            enable_v2_cpu_controller(self.base)
        path.mkdir()
        self.created.append(path)
        if self.version == 1:
            (path / "cpu.cfs_period_us").write_text(f"{period_us}\n")
            (path / "cpu.cfs_quota_us").write_text(f"{quota_us}\n")
        else:
            (path / "cpu.max").write_text(f"{quota_us} {period_us}\n")
        return path

    def throttled_ms(self, path):
        """How long the cgroup's CPU quota held it back so far (v1 cpu.stat throttled_time, ns,
        summed over the CPUs' run queues; v2 throttled_usec), or None."""
        try:
            stat = dict(line.split() for line in (Path(path) / "cpu.stat").read_text().splitlines()
                        if len(line.split()) == 2)
        except (OSError, ValueError):
            return None
        if "throttled_usec" in stat:
            return int(stat["throttled_usec"]) / 1e3
        if "throttled_time" in stat:
            return int(stat["throttled_time"]) / 1e6
        return None

    @staticmethod
    def add_process(path, pid):
        """Moves the whole process, all its threads, into the cgroup."""
        (Path(path) / "cgroup.procs").write_text(f"{pid}\n")

    def remove_all(self):
        errors = []
        while self.created:
            path = self.created.pop()
            try:
                self._evacuate(path)
                self._rmdir(path)
            except OSError as error:
                errors.append(f"{path}: {error}")
        return errors

    def _evacuate(self, path):
        procs = path / "cgroup.procs"
        if not procs.exists():
            return
        for pid in procs.read_text().split():
            try:
                (self.base / "cgroup.procs").write_text(f"{pid}\n")
            except OSError:
                pass

    @staticmethod
    def _rmdir(path):
        if path.exists():
            os.rmdir(path)


def detect_cpu_cgroup(fs_root: Path, self_cgroup_file: Path):
    """(1, dir) for a v1 cpu hierarchy, (2, root) for v2 with the cpu controller, else (None, None)."""
    for mount in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
        hierarchy = fs_root / mount
        if (hierarchy / "cpu.cfs_quota_us").exists():
            own = own_cgroup_path(self_cgroup_file, "cpu")
            candidate = hierarchy / own.lstrip("/") if own else hierarchy
            return 1, candidate if (candidate / "cpu.cfs_quota_us").exists() else hierarchy
    controllers = fs_root / "cgroup.controllers"
    if controllers.exists() and "cpu" in controllers.read_text().split():
        return 2, fs_root
    return None, None


def own_cgroup_path(self_cgroup_file: Path, controller: str) -> Optional[str]:
    """The path of this process's cgroup for a v1 controller, from /proc/self/cgroup."""
    try:
        lines = self_cgroup_file.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3 and controller in parts[1].split(","):
            return parts[2]
    return None


def enable_v2_cpu_controller(base: Path):
    subtree = base / "cgroup.subtree_control"
    if subtree.exists() and "cpu" not in subtree.read_text().split():
        subtree.write_text("+cpu\n")


# --------------------------------------------------------------------------------------------
# Network namespaces


class RankNetwork:
    """One network namespace per rank, each with a veth (`eth0`) to a bridge (`br0`) in a
    testbed-owned namespace; addresses 10.213.0.<rank+1>/24 exist only inside these namespaces.
    Nothing is created in the root namespace."""

    SUBNET_PREFIX = "10.213.0."
    RANK_IFNAME = "eth0"
    BRIDGE = "br0"

    def __init__(self, tag, world_size):
        if world_size > 250:
            raise ValueError("the testbed's /24 holds at most 250 ranks")
        self.tag = tag
        self.world_size = world_size
        self.bridge_ns = f"{NAME_PREFIX}-{tag}-br"
        self.created_namespaces: List[str] = []

    def rank_ns(self, rank):
        return f"{NAME_PREFIX}-{self.tag}-r{rank}"

    def address(self, rank):
        return f"{self.SUBNET_PREFIX}{rank + 1}"

    @staticmethod
    def host_ifname(rank):
        return f"h{rank}"

    def setup_commands(self):
        ns_b = self.bridge_ns
        commands = [["ip", "netns", "add", ns_b],
                    ["ip", "-n", ns_b, "link", "set", "lo", "up"],
                    ["ip", "-n", ns_b, "link", "add", self.BRIDGE, "type", "bridge"],
                    ["ip", "-n", ns_b, "link", "set", self.BRIDGE, "up"]]
        for rank in range(self.world_size):
            ns_r, host_if = self.rank_ns(rank), self.host_ifname(rank)
            commands += [
                ["ip", "netns", "add", ns_r],
                ["ip", "-n", ns_b, "link", "add", host_if, "type", "veth",
                 "peer", "name", self.RANK_IFNAME, "netns", ns_r],
                ["ip", "-n", ns_b, "link", "set", host_if, "master", self.BRIDGE],
                ["ip", "-n", ns_b, "link", "set", host_if, "up"],
                ["ip", "-n", ns_r, "addr", "add", f"{self.address(rank)}/24", "dev", self.RANK_IFNAME],
                ["ip", "-n", ns_r, "link", "set", self.RANK_IFNAME, "up"],
                ["ip", "-n", ns_r, "link", "set", "lo", "up"]]
        return commands

    def throttle_commands(self, rank, rate_mbit, burst_kib=256, latency_ms=100):
        """tbf on both ends of the rank's veth: egress from the rank and egress towards it."""
        tbf = ["root", "tbf", "rate", f"{rate_mbit}mbit", "burst", f"{burst_kib}kb",
               "latency", f"{latency_ms}ms"]
        return [["tc", "-n", self.rank_ns(rank), "qdisc", "add", "dev", self.RANK_IFNAME] + tbf,
                ["tc", "-n", self.bridge_ns, "qdisc", "add", "dev", self.host_ifname(rank)] + tbf]

    def setup(self):
        for argv in self.setup_commands():
            if argv[:3] == ["ip", "netns", "add"]:
                self.created_namespaces.append(argv[3])
            run_command(argv)

    def throttle(self, rank, rate_mbit):
        for argv in self.throttle_commands(rank, rate_mbit):
            run_command(argv)

    def exec_prefix(self, rank):
        return ["ip", "netns", "exec", self.rank_ns(rank)]

    def teardown(self):
        """Deleting the namespaces deletes their veths, the bridge and the qdiscs with them."""
        errors = []
        while self.created_namespaces:
            ns = self.created_namespaces.pop()
            result = run_command(["ip", "netns", "del", ns], check=False)
            if result.returncode != 0 and ns in list_namespaces():
                errors.append(f"netns {ns}: {result.stderr.strip()}")
        return errors


def list_namespaces():
    result = run_command(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in result.stdout.splitlines() if line.strip()]


# --------------------------------------------------------------------------------------------
# Node agents (`eroica agent`) for the profiled window


class AgentCapture:
    """One `eroica agent --session OUT --duration S` per rank, started just before the profiled
    window: inside the rank's network namespace when there is one (so it sees the rank's own
    link, `eth0`, in /sys/class/net), following the rank's process; each writes
    `OUT/metrics-rank-<r>.eroica-metrics` when its duration is over."""

    def __init__(self, binary, out_dir, network=None):
        self.binary = str(binary)
        self.out_dir = str(out_dir)
        self.network = network
        self.procs: Dict[int, subprocess.Popen] = {}
        self.started_monotonic_s = None
        self.duration_s = None
        self.log_path = Path(out_dir) / "logs" / "agents.log"

    def argv(self, rank, pid, duration_s):
        argv = [self.binary, "agent", "--session", self.out_dir, "--duration", f"{duration_s:.2f}",
                "--host", f"rank-{rank}", "--pid", str(pid), "--no-gpu"]
        return (self.network.exec_prefix(rank) if self.network is not None else []) + argv

    def start(self, pids: Dict[int, int], duration_s):
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "a")
        self.started_monotonic_s, self.duration_s = time.monotonic(), duration_s
        for rank, pid in sorted(pids.items()):
            self.procs[rank] = subprocess.Popen(
                self.argv(rank, pid, duration_s), stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=set_parent_death_signal)
        log.close()

    def finish(self, grace_s=15.0):
        """Waits for every agent to write its file; returns {rank: exit status or None}."""
        codes = {}
        deadline = time.monotonic() + (self.duration_s or 0) + grace_s
        for rank, proc in self.procs.items():
            try:
                codes[rank] = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                codes[rank] = None
        self.kill()
        return codes

    def kill(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
        return []

    def report(self, codes):
        files = sorted(p.name for p in Path(self.out_dir).glob("metrics-rank-*.eroica-metrics"))
        return {"started_monotonic_s": round(self.started_monotonic_s, 6) if self.started_monotonic_s else None,
                "duration_s": self.duration_s, "exit_codes": {str(r): c for r, c in codes.items()},
                "files": files}


def agent_window_s(iteration_times_s: Dict[int, List[float]], profile_iters, margin_iters=3):
    """How long the agents sample: the profiled iterations and a margin, at the pace so far
    (the slowest rank's mean of its last few iterations), and a second more."""
    recent = [statistics.mean(t[-5:]) for t in iteration_times_s.values() if t]
    pace = max(recent) if recent else 1.0
    return round((profile_iters + margin_iters) * pace + 1.0, 2)


# --------------------------------------------------------------------------------------------
# Stale resources of dead launchers

STALE_NAME = re.compile(rf"^{NAME_PREFIX}-(\d+)-")
STALE_WORK_DIR = re.compile(rf"^{NAME_PREFIX}-testbed-(\d+)-")


def stale_names(names, pattern=STALE_NAME, alive=pid_alive):
    """The names that belong to launchers (pid in the name) that are no longer running."""
    stale = []
    for name in names:
        match = pattern.match(name)
        if match and int(match.group(1)) != os.getpid() and not alive(int(match.group(1))):
            stale.append(name)
    return stale


def sweep_stale(cgroups: Optional[CpuCgroups] = None):
    for ns in stale_names(list_namespaces()):
        run_command(["ip", "netns", "del", ns], check=False)
    if cgroups is not None and cgroups.base is not None and cgroups.base.exists():
        for name in stale_names(p.name for p in cgroups.base.iterdir() if p.is_dir()):
            try:
                os.rmdir(cgroups.base / name)
            except OSError:
                pass
    parent = Path(WORK_DIR_PARENT)
    if parent.exists():
        for name in stale_names((p.name for p in parent.iterdir()), STALE_WORK_DIR):
            shutil.rmtree(parent / name, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# Rank processes and the run


class RankFailed(RuntimeError):
    pass


@dataclass
class HangReport:
    iteration: int
    ranks: List[int]
    states: Dict[int, dict]
    detected_monotonic_s: float = 0.0  # when the launcher declared the hang (CLOCK_MONOTONIC)

    def message(self):
        return f"no progress since iteration {self.iteration} on ranks {self.ranks}"


@dataclass
class RunResult:
    iteration_times_s: Dict[int, List[float]]
    hang: Optional[HangReport] = None
    wall_s: float = 0.0
    logs: Dict[int, str] = field(default_factory=dict)
    # iteration_starts_s[r][i]: when rank r began iteration i, on CLOCK_MONOTONIC (time.monotonic)
    iteration_starts_s: Dict[int, List[float]] = field(default_factory=dict)
    # Online mode: {"session": the eroica session folder with report.json,
    # "report_seen_monotonic_s": when the launcher first saw that report}; empty otherwise.
    online: Dict[str, object] = field(default_factory=dict)
    # With config["agent"]: AgentCapture.report(), what the node agents captured.
    agent: Dict[str, object] = field(default_factory=dict)
    # Faults applied from outside: {rank: {"quota_pct": ..., "measured_cpu_pct": ...}, ...}
    external: Dict[int, dict] = field(default_factory=dict)
    # What each faulty rank measured of its own fault (faults.NoFault.report): {rank: {...}}
    fault_reports: Dict[int, dict] = field(default_factory=dict)
    # Each rank's own work per iteration (train.py write_own_work): {rank: {"forward_s": [...],
    # "optimizer_s": [...]}}
    own_work: Dict[int, dict] = field(default_factory=dict)


def parse_iteration_lines(path: Path):
    """([seconds], [start]) in iteration order; `start` is absent (NaN) on two-column lines."""
    by_iteration = {}
    if path.exists():
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) in (2, 3):
                start = float(parts[2]) if len(parts) == 3 else float("nan")
                by_iteration[int(parts[0])] = (float(parts[1]), start)
    ordered = [by_iteration[i] for i in sorted(by_iteration)]
    return [t for t, _ in ordered], [s for _, s in ordered]


def parse_external_request(text):
    """`PID` or `PID {json note}` -> (pid, note or None)."""
    pid, _, note = text.strip().partition(" ")
    return int(pid), (json.loads(note) if note.strip() else None)


def set_parent_death_signal():
    """Runs in a child (before exec, or in a rank the forker made): die with its parent (the
    launcher, the rank forker), even if that is SIGKILLed."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    PR_SET_PDEATHSIG = 1
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class ForkedRank:
    """A rank that rank_forker.py forked: the calls the Testbed makes of a rank's Popen (pid,
    poll, wait, returncode), its exit reported by the forker, its parent."""

    def __init__(self, pid):
        self.pid = pid
        self.returncode = None
        self._exited = threading.Event()

    def poll(self):
        return self.returncode

    def wait(self, timeout=None):
        if not self._exited.wait(timeout):
            raise subprocess.TimeoutExpired(f"rank pid {self.pid}", timeout)
        return self.returncode

    def exited(self, code):
        self.returncode = code
        self._exited.set()


class RankForker:
    """One rank_forker.py per run: it imports torch once and forks the ranks (why: its
    docstring). Used where a rank is the training script alone: not under `eroica run` (online
    mode starts the ranks through its own launcher) and not inside network namespaces."""

    def __init__(self, specs, forker_env, log_path, timeout_s=STARTUP_TIMEOUT_S):
        self.log_path = Path(log_path)
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [PYTHON, str(RANK_FORKER)], env=forker_env, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True,
                preexec_fn=set_parent_death_signal)
        self.proc.stdin.write(json.dumps({"ranks": specs}) + "\n")
        self.proc.stdin.close()
        self._by_pid: Dict[int, ForkedRank] = {}
        self._started = queue.Queue()  # (rank, ForkedRank) per forked rank, then None at its end
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.ranks: Dict[int, ForkedRank] = {}
        deadline = time.monotonic() + timeout_s
        while len(self.ranks) < len(specs):
            try:
                started = self._started.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.close()
                raise RankFailed(f"the rank forker forked no rank within {timeout_s:.0f} s: "
                                 f"{self.last_log_line()}")
            if started is None:
                self.close()
                raise RankFailed(f"the rank forker exited ({self.proc.returncode}) before "
                                 f"forking every rank: {self.last_log_line()}")
            self.ranks[started[0]] = started[1]

    def _read(self):
        """The forker's lines, in order: each rank's pid, then each exit."""
        for line in self.proc.stdout:
            try:
                said = json.loads(line)
                if "rank" in said:
                    rank = self._by_pid[said["pid"]] = ForkedRank(said["pid"])
                    self._started.put((said["rank"], rank))
                else:
                    self._by_pid[said["pid"]].exited(said["code"])
            except (ValueError, KeyError, TypeError):
                continue
        # The forker is gone: its ranks died with it (their parent-death signal).
        for rank in self._by_pid.values():
            if rank.returncode is None:
                rank.exited(-signal.SIGKILL)
        self._started.put(None)

    def last_log_line(self):
        try:
            lines = [l for l in self.log_path.read_text().splitlines() if l.strip()]
        except OSError:
            return "(no log)"
        return lines[-1] if lines else "(empty log)"

    def close(self):
        try:
            self.proc.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout=KILL_GRACE_S)
        if not self._reader.is_alive():
            self.proc.stdout.close()
        return []


def all_done(states: Dict[int, dict]) -> bool:
    return bool(states) and all(s.get("phase") == "done" for s in states.values())


def exporting(states: Dict[int, dict]) -> bool:
    return any(s.get("phase") == "export" for s in states.values())


def least_advanced(states: Dict[int, dict]):
    """(iteration, ranks) of the ranks that got least far, by iteration then phase."""
    def key(state):
        return (state.get("iter", -2), PHASES.index(state.get("phase", "ready")))
    lowest = min(key(s) for s in states.values())
    ranks = sorted(r for r, s in states.items() if key(s) == lowest)
    return lowest[0], ranks


class Testbed:
    """One run: work folder, optional namespaces, the rank processes, the fault's cgroups."""

    def __init__(self, config, fault, use_network_namespaces):
        self.tag = str(os.getpid())
        self.config = config
        self.fault = fault
        self.world_size = config["world_size"]
        self.cgroups = CpuCgroups(self.tag)
        self.network = RankNetwork(self.tag, self.world_size) if use_network_namespaces else None
        self.work_dir = Path(tempfile.mkdtemp(prefix=f"{NAME_PREFIX}-testbed-{self.tag}-",
                                              dir=WORK_DIR_PARENT))
        self.beat_dir = Path(tempfile.mkdtemp(prefix=f"{NAME_PREFIX}-beats-{self.tag}-",
                                              dir=BEAT_DIR_PARENT if os.path.isdir(BEAT_DIR_PARENT)
                                              else WORK_DIR_PARENT))
        self.procs: Dict[int, subprocess.Popen] = {}  # or ForkedRank, with the same calls
        self.forker = None
        self.log_files = {}
        self.applied_ranks = set()
        self.applied_external: Dict[int, dict] = {}  # rank -> what the launcher applied
        self.closed = False
        # config["online"] = {"dir": SESSIONS_DIR, "bin": ERIOCA_BINARY}: run under python/eroica
        self.online = config.get("online") or None
        self.online_report = {}
        # config["agent"] = {"bin": EROICA_BINARY}: node agents sample the profiled window
        self.agents = (AgentCapture(config["agent"]["bin"], config["out_dir"], self.network)
                       if config.get("agent") else None)

    # -- the host interface the faults use (faults.NoFault.apply_external)
    def throttle_cpu(self, rank, pid, quota_pct):
        path = self.cgroups.create(f"r{rank}", quota_pct)
        self.cgroups.add_process(path, pid)
        self.applied_external[rank] = {"quota_pct": round(quota_pct, 2)}

    def throttle_link(self, rank, rate_mbit):
        self.applied_external[rank] = {"rate_mbit": rate_mbit}
        if self.network is None:
            raise RuntimeError("link throttling needs the ranks in network namespaces")
        self.network.throttle(rank, rate_mbit)

    # -- lifecycle
    def start(self):
        sweep_stale(self.cgroups)
        self.config["work_dir"] = str(self.work_dir)
        self.config["beat_dir"] = str(self.beat_dir)
        config_path = self.work_dir / "config.json"
        config_path.write_text(json.dumps(self.config, indent=1))
        if self.network is not None:
            self.network.setup()
        if self.forks_ranks():
            self._fork_ranks(config_path)
            return
        for rank in range(self.world_size):
            self._spawn(rank, config_path)

    def forks_ranks(self):
        """Config "start": "fork" (the default) where a rank is train.py alone, else "exec"."""
        return (self.config.get("start", "fork") == "fork" and self.network is None
                and not self.online)

    def _rank_env(self, rank):
        env = dict(os.environ)
        env.update({"RANK": str(rank), "WORLD_SIZE": str(self.world_size),
                    "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"})
        if self.network is not None:
            env.update({"MASTER_ADDR": self.network.address(0), "MASTER_PORT": "29500",
                        "GLOO_SOCKET_IFNAME": RankNetwork.RANK_IFNAME})
        else:
            env.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(self.config["master_port"]),
                        "GLOO_SOCKET_IFNAME": "lo"})
        return env

    def _online_env(self, env):
        env = dict(env)
        paths = [str(ONLINE_PACKAGE_PARENT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        binary = Path(self.online.get("bin") or ONLINE_PACKAGE_PARENT.parent / "build" / "eroica")
        native = binary.parent / "python-native"
        if native.is_dir():  # the stack sampler's native walker, as `eroica run` puts it on the path
            paths.insert(1, str(native))
        env["PYTHONPATH"] = os.pathsep.join(paths)
        env.update(ONLINE_ENV)
        env["EROICA_DIR"] = str(self.online["dir"])
        if self.online.get("bin"):
            env["EROICA_BIN"] = str(self.online["bin"])
        return env

    def _spawn(self, rank, config_path):
        argv = [PYTHON, str(TRAIN_SCRIPT), "--config", str(config_path), "--rank", str(rank)]
        env = self._rank_env(rank)
        if self.online:
            argv = [PYTHON, "-m", "eroica", "run", "--"] + argv
            env = self._online_env(env)
        if self.network is not None:
            argv = self.network.exec_prefix(rank) + argv
        log = open(self.work_dir / f"rank-{rank}.log", "w")
        self.log_files[rank] = log
        self.procs[rank] = subprocess.Popen(
            argv, env=env, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=set_parent_death_signal)

    def _fork_ranks(self, config_path):
        specs = [{"rank": rank, "env": self._rank_env(rank),
                  "argv": [str(TRAIN_SCRIPT), "--config", str(config_path), "--rank", str(rank)],
                  "log": str(self.work_dir / f"rank-{rank}.log")}
                 for rank in range(self.world_size)]
        self.forker = RankForker(specs, specs[0]["env"], self.work_dir / "rank-forker.log")
        self.procs = dict(self.forker.ranks)

    def wait(self, no_progress_timeout_s, max_wall_s):
        """Poll until every rank exits; apply external faults on request; detect hangs."""
        started = time.monotonic()
        last_states, last_change = {}, started
        while True:
            self._check_exits()
            if all(p.poll() == 0 for p in self.procs.values()):
                return self._result(started, agents_done=self._finish_agents())
            self._serve_external_requests()
            states = self._read_heartbeats()
            self._start_agents_before_window(states)
            if states != last_states:
                last_states, last_change = states, time.monotonic()
            everyone_ready = len(states) == self.world_size
            limit_s = no_progress_timeout_s if everyone_ready else max(STARTUP_TIMEOUT_S, no_progress_timeout_s)
            if everyone_ready and (all_done(states) or exporting(states)):
                # A rank writing its trace (the others wait for it in the next all-reduce), or
                # training over on every rank (the last barrier, the process group's teardown):
                # seconds on a loaded machine, not a hang; max_wall_s still holds.
                last_change = time.monotonic()
            now = time.monotonic()
            self._look_for_online_report()
            if now - last_change > limit_s:
                if not everyone_ready:
                    missing = sorted(set(range(self.world_size)) - set(states))
                    raise RankFailed(f"ranks {missing} did not start within {limit_s:.0f} s")
                iteration, ranks = least_advanced(states)
                hang = HangReport(iteration, ranks, states, now)
                self._wait_for_online_report()
                self.kill_ranks(signal.SIGKILL)
                return self._result(started, hang)
            if now - started > max_wall_s:
                raise RankFailed(f"the run took longer than {max_wall_s:.0f} s")
            time.sleep(POLL_INTERVAL_S)

    def _start_agents_before_window(self, states):
        """Starts the agents once every rank is in the iteration before the profiled window
        (the profiler's warm-up step)."""
        if self.agents is None or self.agents.procs or len(states) < self.world_size:
            return
        first = self.config["profile_start"] - 1
        if min(s.get("iter", -1) for s in states.values()) < first:
            return
        duration = agent_window_s(self.read_iteration_times(), self.config["profile_iters"])
        self.agents.start({r: p.pid for r, p in self.procs.items()}, duration)

    def _finish_agents(self):
        if self.agents is None:
            return {}
        if not self.agents.procs:
            return {"error": "the run ended before the agents were started"}
        return self.agents.report(self.agents.finish())

    def _look_for_online_report(self):
        """Online mode: note when the job's own diagnosis (a session's report.json) appears."""
        if not self.online or self.online_report:
            return
        reports = sorted(Path(self.online["dir"]).glob("*/report.json"))
        if reports:
            self.online_report = {"session": str(reports[0].parent),
                                  "report_seen_monotonic_s": round(time.monotonic(), 6)}

    def _wait_for_online_report(self):
        """Online mode, on a hang: give the job's watchdog time to dump stacks and diagnose."""
        deadline = time.monotonic() + ONLINE_REPORT_WAIT_S
        while self.online and not self.online_report and time.monotonic() < deadline:
            self._look_for_online_report()
            time.sleep(POLL_INTERVAL_S)

    def _check_exits(self):
        for rank, proc in self.procs.items():
            code = proc.poll()
            if code not in (None, 0):
                raise RankFailed(f"rank {rank} exited with code {code}: {self.last_log_line(rank)}")

    def _serve_external_requests(self):
        for rank in self.config["fault_ranks"]:
            if rank in self.applied_ranks:
                continue
            request = self.work_dir / f"onset-request-r{rank}"
            if request.exists():
                pid, note = parse_external_request(request.read_text())
                if note:
                    self.fault.apply_external(self, rank, pid, note=note)
                    self.applied_external.setdefault(rank, {}).update(note)
                else:
                    self.fault.apply_external(self, rank, pid)
                self.applied_ranks.add(rank)
                (self.work_dir / f"onset-applied-r{rank}").write_text("1")

    def _read_heartbeats(self):
        states = {}
        for rank in range(self.world_size):
            try:
                states[rank] = json.loads((self.beat_dir / f"heartbeat-r{rank}.json").read_text())
            except (OSError, ValueError):
                pass
        return states

    def _note_throttled_time(self):
        """Before the cgroups go: how long each quota held its rank back (the throttle's cost)."""
        for rank, applied in self.applied_external.items():
            if "quota_pct" in applied:
                throttled = self.cgroups.throttled_ms(self.cgroups.path_for(f"r{rank}"))
                if throttled is not None:
                    applied["throttled_ms"] = round(throttled, 1)

    def _result(self, started, hang=None, agents_done=None):
        self._note_throttled_time()
        times, starts = self.read_iteration_records()
        return RunResult(times, hang, time.monotonic() - started, iteration_starts_s=starts,
                         online=dict(self.online_report), agent=agents_done or {},
                         external={r: dict(v) for r, v in self.applied_external.items()},
                         fault_reports=self.read_rank_files("fault-report"),
                         own_work=self.read_rank_files("own-work"))

    def read_rank_files(self, stem):
        """{rank: the JSON of WORK/<stem>-r<rank>.json} for the ranks that wrote one."""
        found = {}
        for rank in range(self.world_size):
            try:
                found[rank] = json.loads((self.work_dir / f"{stem}-r{rank}.json").read_text())
            except (OSError, ValueError):
                pass
        return found

    def read_iteration_times(self):
        return self.read_iteration_records()[0]

    def read_iteration_records(self):
        """({rank: [wall s per iteration]}, {rank: [start of each iteration, CLOCK_MONOTONIC s]})
        from the ranks' `iters-r<r>.txt` lines `ID SECONDS [START]`."""
        times, starts = {}, {}
        for rank in range(self.world_size):
            times[rank], starts[rank] = parse_iteration_lines(self.beat_dir / f"iters-r{rank}.txt")
        return times, starts

    def last_log_line(self, rank):
        try:
            lines = [l for l in (self.work_dir / f"rank-{rank}.log").read_text().splitlines() if l.strip()]
        except OSError:
            return "(no log)"
        return lines[-1] if lines else "(empty log)"

    def save_logs(self, dest: Path):
        dest.mkdir(parents=True, exist_ok=True)
        for rank in range(self.world_size):
            source = self.work_dir / f"rank-{rank}.log"
            if source.exists():
                shutil.copyfile(source, dest / f"rank-{rank}.log")

    def kill_ranks(self, first_signal=signal.SIGTERM):
        for proc in self.procs.values():
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, first_signal)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + KILL_GRACE_S
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()

    def close(self):
        """Undo everything, in order; report (not raise) what could not be undone."""
        if self.closed:
            return []
        self.closed = True
        errors = []
        steps = [("processes", lambda: self.kill_ranks() or []),
                 ("forker", lambda: self.forker.close() if self.forker else []),
                 ("agents", lambda: self.agents.kill() if self.agents else []),
                 ("cgroups", self.cgroups.remove_all),
                 ("network", lambda: self.network.teardown() if self.network else []),
                 ("files", self._remove_work_dir)]
        for name, step in steps:
            try:
                errors += step() or []
            except Exception as error:  # keep undoing the rest
                errors.append(f"{name}: {error}")
        return errors

    def _remove_work_dir(self):
        for log in self.log_files.values():
            log.close()
        shutil.rmtree(self.work_dir, ignore_errors=True)
        shutil.rmtree(self.beat_dir, ignore_errors=True)
        return []
