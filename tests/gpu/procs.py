"""The processes the GPU check starts: a clean environment, runs logged to a file in their own
process group (killed whole afterwards), and the `eroica run` command line around a command."""

import json
import os
import signal
import socket
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("EROICA_")}
    env["PYTHONUNBUFFERED"] = "1"
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_logged(cmd, log_path, env, timeout_s, cwd=REPO):
    """Runs cmd in its own process group, output to log_path; the whole group is killed after
    it (a rank or contender left behind would hold the GPU). Returns (exit code, seconds)."""
    started = time.monotonic()
    with open(log_path, "w") as log:
        log.write("$ %s\n" % " ".join(cmd))
        log.flush()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                start_new_session=True)
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            code = 124
        finally:
            kill_group(proc.pid)
            proc.wait()
    return code, round(time.monotonic() - started, 2)


def kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def tail(path, lines=6):
    """The last lines of a log, joined; where a Python error is among them, the error line
    first (a traceback's last lines are carets and frames, the summary has room for one)."""
    try:
        with open(path, errors="replace") as f:
            text = f.read().splitlines()
    except OSError:
        return ""
    errors = [l.strip() for l in text if l[:1].isalpha() and ("Error" in l or "Exception" in l)]
    last = [l.strip() for l in text[-lines:] if l.strip().strip("^~ ")]
    return " | ".join(errors[-1:] + [l for l in last if l not in errors[-1:]])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_json(path):
    with open(path) as f:
        return json.load(f)


def eroica_run_cmd(run, eroica_dir, command):
    if run.binary:
        return [run.binary, "run", "--python", run.python, "--dir", eroica_dir, "--"] + command
    return [run.python, "-m", "eroica", "run", "--dir", eroica_dir, "--"] + command


def eroica_env(run, **extra):
    env = clean_env(EROICA_PYTHON_DIR=os.path.join(REPO, "python"), **extra)
    env["PYTHONPATH"] = os.path.join(REPO, "python")  # `python -m eroica` without the binary
    return env
