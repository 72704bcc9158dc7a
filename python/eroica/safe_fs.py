"""Folders and files under EROICA_DIR, written so that no one else's file is ever touched.

EROICA_DIR is often a shared folder (`/tmp/eroica`), and the session id and ranks that name
its children come from an unauthenticated store. Every writer in this package goes through
here, and three rules hold:

- Names are single safe path components (`component`): no `/`, no `..`, no leading dot.
- Folders are ours: created 0700 (02770 with EROICA_GROUP_SHARED), and an existing one is
  refused when another user owns it (in group-shared mode: a group we are not in) or when it
  is world-writable without the sticky bit.
- Files are created fresh: a unique temporary name in the same folder, opened
  `O_CREAT|O_EXCL|O_NOFOLLOW` (a planted link or FIFO there is never opened), mode 0600
  (0640 group-shared), `fsync`ed, then renamed over the final name (`rename` replaces a
  link, never follows it). So a reader that waits for a name sees it complete or not at all.

Failures are `OSError`s (`UnsafePath` for refusals) with one-line messages; callers log them.
"""

import contextlib
import errno
import os
import re
import secrets
import stat
from typing import Iterator

_SAFE_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}\Z")
_CREATE_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_CLOEXEC", 0))

_group_shared = False  # set from the config (EROICA_GROUP_SHARED) by set_group_shared


class UnsafePath(OSError):
    """A name or folder eroica refuses to write through."""


def set_group_shared(on: bool) -> None:
    """Group-shared mode (EROICA_GROUP_SHARED): folders 02770, files 0640, and folders of
    other users of one of our groups are accepted."""
    global _group_shared
    _group_shared = bool(on)


def dir_mode() -> int:
    return 0o2770 if _group_shared else 0o700


def file_mode() -> int:
    return 0o640 if _group_shared else 0o600


def component(name) -> str:
    """`name` when it is one safe path component, else UnsafePath."""
    if not isinstance(name, str) or not _SAFE_COMPONENT.match(name):
        raise UnsafePath(errno.EINVAL, "not a safe file name (letters, digits, '._-', at "
                         "most 200, no leading dot): %s" % repr(name)[:120])
    return name


def rank_name(prefix: str, rank, suffix: str) -> str:
    """`<prefix><rank><suffix>` for a rank number; anything but an int >= 0 is refused."""
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
        raise UnsafePath(errno.EINVAL, "not a rank: %r" % (rank,))
    return component("%s%d%s" % (prefix, rank, suffix))


def check_ours(path: str, st: os.stat_result) -> None:
    """Refuses a folder that someone else could swap files in."""
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePath(errno.ENOTDIR, "%s is not a folder (a link or a file is refused)"
                         % path)
    uid = os.geteuid()
    if st.st_uid != uid:
        ours = _group_shared and st.st_gid in set(os.getgroups()) | {os.getegid()}
        if not ours:
            raise UnsafePath(errno.EPERM, "%s belongs to uid %d, not to us (uid %d): refused; "
                             "use an EROICA_DIR of ours (or EROICA_GROUP_SHARED=1 for a "
                             "folder of our group)" % (path, st.st_uid, uid))
    if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
        raise UnsafePath(errno.EPERM, "%s is world-writable without the sticky bit: refused "
                         "(chmod o-w or +t it)" % path)


def ensure_root(root: str) -> str:
    """EROICA_DIR itself: created (with missing parents) if absent, else checked.

    The root may be a link the user made (`/shared/eroica -> /mnt/x`); what it points to is
    checked. Everything below it is created by us and must not be a link.
    """
    root = root or "."
    try:
        os.mkdir(root, dir_mode())
        _fix_mode(root)
    except FileNotFoundError:  # parents are not ours: made as makedirs makes them
        os.makedirs(os.path.dirname(os.path.abspath(root)), exist_ok=True)
        try:
            os.mkdir(root, dir_mode())
            _fix_mode(root)
        except FileExistsError:
            pass
    except FileExistsError:
        pass
    check_ours(root, os.stat(root))
    return root


def ensure_dir(parent: str, name: str) -> str:
    """The folder `parent/name` (name: one safe component), created or checked; never a
    link. `parent` must have been checked already."""
    path = os.path.join(parent, component(name))
    try:
        os.mkdir(path, dir_mode())
        _fix_mode(path)
    except FileExistsError:
        pass
    check_ours(path, os.lstat(path))
    return path


def ensure_session_dir(session_dir: str) -> str:
    """`<root>/<session id>`: the root and the session folder, both checked."""
    root, name = os.path.split(os.path.normpath(session_dir))
    ensure_root(root)
    return ensure_dir(root, name)


def _fix_mode(path: str) -> None:
    os.chmod(path, dir_mode())  # mkdir's mode went through the umask


def _create_unique(folder: str, stem: str, suffix: str = ".tmp"):
    for _ in range(16):
        path = os.path.join(folder, ".%s.%s%s" % (stem, secrets.token_hex(6), suffix))
        try:
            fd = os.open(path, _CREATE_FLAGS, file_mode())
        except FileExistsError:
            continue
        os.fchmod(fd, file_mode())
        return fd, path
    raise UnsafePath(errno.EEXIST, "no free temporary name in %s" % folder)


@contextlib.contextmanager
def atomic_writer(path: str, sync: bool = True) -> Iterator:
    """A binary file that becomes `path` when the block ends without an exception."""
    folder, name = os.path.split(path)
    fd, tmp = _create_unique(folder or ".", name)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            if sync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if sync:
        _fsync_dir(folder or ".")


def write_atomic(path: str, data, sync: bool = True) -> None:
    with atomic_writer(path, sync) as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)


def write_json(path: str, doc, sync: bool = True) -> None:
    import json

    write_atomic(path, json.dumps(doc, indent=1), sync)


def create_new(folder: str, name: str):
    """A new file `folder/name` opened for writing (text); when that name is taken, a unique
    variant of it. Returns (file, path)."""
    path = os.path.join(folder, component(name))
    try:
        fd = os.open(path, _CREATE_FLAGS, file_mode())
        os.fchmod(fd, file_mode())
    except FileExistsError:
        stem, dot, ext = name.rpartition(".")
        fd, path = _create_unique(folder, stem if dot else name, "." + ext if dot else "")
    return os.fdopen(fd, "w"), path


def claim(folder: str, name: str) -> bool:
    """Creates the empty file `folder/name`; False when it exists already (someone else
    claimed it first: one winner among processes racing for the same task)."""
    try:
        os.close(os.open(os.path.join(folder, component(name)), _CREATE_FLAGS, file_mode()))
    except FileExistsError:
        return False
    return True


def private_dir(folder: str, stem: str) -> str:
    """A new folder only we can enter (mkdtemp: O_EXCL-like, 0700), for files written by code
    that opens paths itself (torch's trace export)."""
    import tempfile

    return tempfile.mkdtemp(prefix="." + stem + ".", dir=folder)


def _fsync_dir(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def open_lock(folder: str, name: str) -> int:
    """A lock file `folder/name` (created if absent, never through a link), opened for
    `fcntl.flock`; returns the descriptor."""
    path = os.path.join(folder, component(name))
    flags = (os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
             | getattr(os, "O_NONBLOCK", 0))
    fd = os.open(path, flags, file_mode())
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnsafePath(errno.EINVAL, "%s is not a regular file: refused as a lock" % path)
    return fd


def read_small(path: str, max_bytes: int) -> bytes:
    """A regular file of at most `max_bytes`, never through a link, FIFO or device."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                 | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePath(errno.EINVAL, "%s is not a regular file" % path)
        if st.st_size > max_bytes:
            raise UnsafePath(errno.EFBIG, "%s is %d bytes, above the %d expected"
                             % (path, st.st_size, max_bytes))
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise UnsafePath(errno.EFBIG, "%s grew above %d bytes" % (path, max_bytes))
        return data
    finally:
        os.close(fd)


def remove_dir(parent: str, name: str) -> None:
    """Removes the folder `parent/name` (one safe component, ours, not a link) and all in it;
    links inside are removed, never followed (`shutil.rmtree` works through descriptors)."""
    import shutil

    path = os.path.join(parent, component(name))
    check_ours(path, os.lstat(path))
    if not getattr(shutil.rmtree, "avoids_symlink_attacks", False):
        raise UnsafePath(errno.ENOTSUP, "this platform's rmtree may follow links: %s kept" % path)
    shutil.rmtree(path)
