"""One-line messages to stderr, each prefixed with "eroica:".

Never raises: a closed or broken stderr must not break the training process.
"""

import os
import sys
import threading

_lock = threading.Lock()
_said_once = set()
_verbose = False


def configure(verbose: bool) -> None:
    """Called once with the process's settings (config.Config.verbose)."""
    global _verbose
    _verbose = bool(verbose)


def reset_after_fork() -> None:
    """A lock held by another thread at fork time would never be released in the child."""
    global _lock
    _lock = threading.Lock()


def info(message: str) -> None:
    try:
        with _lock:
            sys.stderr.write("eroica: %s\n" % message)
            sys.stderr.flush()
    except Exception:
        pass


def once(key: str, message: str) -> None:
    """Prints `message` the first time `key` is seen in this process only."""
    with _lock:
        if key in _said_once:
            return
        _said_once.add(key)
    info(message)


def debug(message: str) -> None:
    if _verbose:
        info("[%d] %s" % (os.getpid(), message))
