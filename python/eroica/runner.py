"""`python -m eroica run -- CMD...`: runs CMD with eroica in every Python process it starts.

The only change is the environment: our `_boot/sitecustomize.py` goes first on PYTHONPATH,
and EROICA_PACKAGE_DIR tells it where this package is (for interpreters that do not have it
installed). The command replaces this process (exec), so signals and the exit status are the
command's own.
"""

import os
import sys
from typing import Dict, List, Mapping

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
BOOT_DIR = os.path.join(PACKAGE_DIR, "_boot")


def child_env(base: Mapping[str, str], overrides: Mapping[str, str]) -> Dict[str, str]:
    env = dict(base)
    env.update(overrides)
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != BOOT_DIR]
    env["PYTHONPATH"] = os.pathsep.join([BOOT_DIR] + parts)
    env["EROICA_PACKAGE_DIR"] = PACKAGE_DIR
    return env


def run(command: List[str], overrides: Mapping[str, str]) -> int:
    """Execs `command`; returns only on failure (127: not found, 126: not runnable)."""
    if not command:
        sys.stderr.write("eroica: run: no command given (python -m eroica run -- CMD ...)\n")
        return 2
    env = child_env(os.environ, overrides)
    try:
        os.execvpe(command[0], command, env)
    except FileNotFoundError:
        sys.stderr.write("eroica: run: command not found: %s\n" % command[0])
        return 127
    except OSError as e:
        sys.stderr.write("eroica: run: cannot run %s: %s\n" % (command[0], e))
        return 126
    return 0  # not reached
