"""Bounded retention of the node-local raw data (EROICA_LOCAL_DIR).

Each session folder there holds the ranks' raw traces, stack samples and meta files of one
node: enough for a user to open the raw trace of the rank a report named, not a store of every
trace the job ever made. After each summary the oldest sessions (by their folder's modification
time) are removed until at most `keep_sessions` remain and their bytes sum to at most
`keep_bytes`. The session being written is never removed, even when it alone is above the
byte bound; nor is anything that is not one of our folders (a file, a link, a dot-name, a folder
of another user is left where it is).
"""

import os
from typing import List, Tuple

from . import log, safe_fs


def _tree_bytes(path: str) -> int:
    total = 0
    for folder, dirs, files in os.walk(path, followlinks=False):
        for name in files + dirs:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass  # removed meanwhile (another rank of the node pruning)
    return total


def _sessions(root: str) -> List[Tuple[float, str, int]]:
    """(mtime, name, bytes) of each session folder directly in `root`, oldest first."""
    out = []
    with os.scandir(root) as entries:
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                continue
            try:
                safe_fs.component(entry.name)
                mtime = entry.stat(follow_symlinks=False).st_mtime
            except OSError:
                continue
            out.append((mtime, entry.name, _tree_bytes(entry.path)))
    out.sort()
    return out


def prune(root: str, keep_sessions: int, keep_bytes: int, current: str) -> List[str]:
    """Removes the oldest session folders of `root` beyond the bounds; `current` (a name) stays.
    Returns the names removed; a folder that cannot be removed is said in one line and kept."""
    sessions = _sessions(root)
    count = len(sessions)
    total = sum(size for _, _, size in sessions)
    removed = []
    for _, name, size in sessions:
        if count <= keep_sessions and total <= keep_bytes:
            break
        if name == current:
            continue
        try:
            safe_fs.remove_dir(root, name)
        except FileNotFoundError:
            pass  # another rank of this node removed it first
        except OSError as e:
            log.once("retention-" + name, "kept %s in %s: %s" % (name, root, e))
            continue
        removed.append(name)
        count -= 1
        total -= size
    return removed
