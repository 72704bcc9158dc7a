"""Unit tests of the launcher's rank forker (rank_forker.py, launch.RankForker): ranks forked
after one import of torch report their exits as a started process would. About 3 s (the
forker imports torch once)."""

import json
import os
import signal
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

import launch


def rank_env(port, rank, world_size):
    env = dict(os.environ)
    env.update({"RANK": str(rank), "WORLD_SIZE": str(world_size), "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port), "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"})
    return env


def spec(folder, rank, config_path, port, world_size=2):
    return {"rank": rank, "env": rank_env(port, rank, world_size),
            "argv": [str(launch.TRAIN_SCRIPT), "--config", str(config_path), "--rank", str(rank)],
            "log": str(Path(folder) / f"rank-{rank}.log")}


class RankForkerTest(unittest.TestCase):
    def test_a_crashing_rank_exits_1_with_its_traceback_in_its_own_log(self):
        with tempfile.TemporaryDirectory() as folder:
            missing = Path(folder) / "no-such-config.json"
            forker = launch.RankForker([spec(folder, 0, missing, launch.free_port())],
                                       rank_env(0, 0, 1), Path(folder) / "forker.log")
            rank = forker.ranks[0]
            self.assertEqual(rank.wait(timeout=60), 1)
            self.assertEqual(rank.poll(), 1)
            log = (Path(folder) / "rank-0.log").read_text()
            self.assertIn("FileNotFoundError", log)
            self.assertIn("no-such-config.json", log)
            forker.close()
            self.assertEqual(forker.proc.returncode, 0)

    def test_ranks_are_their_own_sessions_and_a_killed_one_reports_the_signal(self):
        with tempfile.TemporaryDirectory() as folder:
            # Rank 1 of 2 with no rank 0: it waits for the rendezvous until it is killed.
            config = Path(folder) / "config.json"
            config.write_text(json.dumps({"seed": 0, "world_size": 2}))
            port = launch.free_port()
            forker = launch.RankForker([spec(folder, 1, config, port)], rank_env(port, 1, 2),
                                       Path(folder) / "forker.log")
            rank = forker.ranks[1]
            self.assertNotEqual(rank.pid, forker.proc.pid)
            with self.assertRaises(subprocess.TimeoutExpired):
                rank.wait(timeout=0.5)
            self.assertIsNone(rank.poll())
            self.assertEqual(os.getpgid(rank.pid), rank.pid)  # killpg reaches it and its workers
            os.killpg(rank.pid, signal.SIGKILL)
            self.assertEqual(rank.wait(timeout=30), -signal.SIGKILL)
            forker.close()

    def planted_torch_failure(self, code, **forker_args):
        """The RankFailed a forker raises whose `import torch` runs `code` (a torch.py first
        on its path), and the seconds it took."""
        with tempfile.TemporaryDirectory() as folder:
            env = rank_env(0, 0, 1)
            env["PYTHONPATH"] = folder
            (Path(folder) / "torch.py").write_text(code)
            started = time.monotonic()
            with self.assertRaises(launch.RankFailed) as failed:
                launch.RankForker([spec(folder, 0, Path(folder) / "c.json", 1)], env,
                                  Path(folder) / "forker.log", **forker_args)
            return str(failed.exception), time.monotonic() - started

    def test_a_forker_that_cannot_start_is_a_rank_failure_naming_its_last_line(self):
        said, took_s = self.planted_torch_failure("raise ImportError('a planted torch')\n")
        self.assertIn("before forking every rank", said)
        self.assertIn("a planted torch", said)
        self.assertLess(took_s, 60)

    def test_a_forker_that_hangs_is_a_rank_failure_after_its_timeout(self):
        said, took_s = self.planted_torch_failure("import time\ntime.sleep(600)\n", timeout_s=2)
        self.assertIn("forked no rank within 2 s", said)
        self.assertLess(took_s, 10)

if __name__ == "__main__":
    unittest.main()
