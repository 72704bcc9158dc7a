"""Writing under a shared EROICA_DIR: planted links and FIFOs are never followed or opened,
folders of other users are refused, files are private and complete when they appear."""

import json
import os
import stat
import threading

import pytest

from eroica import agent_link, capture, config, finish, hang, safe_fs
from eroica.runtime import Runtime

SESSION = {"session_id": "job-s1-it50", "reason": "degradation", "target_iteration": 50,
           "capture_iters": 5, "capture_max_s": 20.0}
OTHER_UID = 4321
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "VICTIM"
    path.write_text("precious")
    return path


@pytest.fixture
def root(tmp_path):
    return str(tmp_path / "eroica")


def write_session_json(session_dir):
    finish.Finisher(config.Config(), 0, 2, None).write_session_json(SESSION, session_dir)


WRITERS = {
    "session.json": write_session_json,
    "rank-0.meta.json": lambda d: capture.write_missed_meta(SESSION, 0, 2, d, "test", {}),
    "stacks-rank-0.json": lambda d: hang.dump_stacks(os.path.join(d, "stacks-rank-0.json"),
                                                     0, 2, 7),
    "capture.start": lambda d: agent_link.announce_capture(d, 1, 2.0),
}


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_planted_links_are_replaced_never_followed(root, victim, name):
    session_dir = os.path.join(root, SESSION["session_id"])
    safe_fs.ensure_session_dir(session_dir)
    # The old fixed temp name, and the final name itself, both pointing at the victim.
    os.symlink(victim, os.path.join(session_dir, name + ".tmp"))
    if name != "capture.start":  # written only when absent: a planted one is left alone
        os.symlink(victim, os.path.join(session_dir, name))
    WRITERS[name](session_dir)
    assert victim.read_text() == "precious"
    final = os.path.join(session_dir, name)
    if name != "capture.start":
        assert not os.path.islink(final) and json.load(open(final))
        assert stat.S_IMODE(os.stat(final).st_mode) == 0o600


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_planted_fifos_never_block_a_writer(root, name):
    session_dir = os.path.join(root, SESSION["session_id"])
    safe_fs.ensure_session_dir(session_dir)
    os.mkfifo(os.path.join(session_dir, name + ".tmp"))
    os.mkfifo(os.path.join(session_dir, "." + name + ".tmp"))
    worker = threading.Thread(target=WRITERS[name], args=(session_dir,), daemon=True)
    worker.start()
    worker.join(5)
    assert not worker.is_alive(), "writer blocked on a planted FIFO"
    if name != "capture.start":
        assert stat.S_ISREG(os.lstat(os.path.join(session_dir, name)).st_mode)


def test_a_write_that_fails_leaves_no_temporary_file(tmp_path):
    with pytest.raises(ZeroDivisionError):
        with safe_fs.atomic_writer(str(tmp_path / "out.json")) as f:
            f.write(b"partial")
            1 / 0
    assert os.listdir(tmp_path) == []


def test_folders_we_create_are_private(root):
    old = os.umask(0)
    try:
        session_dir = safe_fs.ensure_session_dir(os.path.join(root, "s1"))
        safe_fs.write_atomic(os.path.join(session_dir, "f"), "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(session_dir).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(os.path.join(session_dir, "f")).st_mode) == 0o600


def test_group_shared_mode(root):
    safe_fs.set_group_shared(True)
    try:
        session_dir = safe_fs.ensure_session_dir(os.path.join(root, "s1"))
        safe_fs.write_atomic(os.path.join(session_dir, "f"), "x")
    finally:
        safe_fs.set_group_shared(False)
    assert stat.S_IMODE(os.stat(session_dir).st_mode) == 0o2770
    assert stat.S_IMODE(os.stat(os.path.join(session_dir, "f")).st_mode) == 0o640


@needs_root
def test_a_folder_of_another_user_is_refused(root, victim):
    os.mkdir(root)
    planted = os.path.join(root, SESSION["session_id"])
    os.mkdir(planted)
    os.chown(planted, OTHER_UID, OTHER_UID)
    with pytest.raises(safe_fs.UnsafePath, match="belongs to uid %d" % OTHER_UID):
        capture.write_missed_meta(SESSION, 0, 2, planted, "test", {})
    os.chown(root, OTHER_UID, OTHER_UID)  # the root itself (a planted /tmp/eroica)
    with pytest.raises(safe_fs.UnsafePath, match="belongs to uid"):
        agent_link.register_process(root, 0) or safe_fs.ensure_root(root)
    assert os.listdir(planted) == []
    # Group-shared mode accepts a folder of one of our groups, and only that.
    os.chown(planted, OTHER_UID, os.getegid())
    safe_fs.set_group_shared(True)
    try:
        safe_fs.ensure_dir(os.path.dirname(planted), os.path.basename(planted))
    finally:
        safe_fs.set_group_shared(False)


def test_missing_parents_are_made(tmp_path):
    deep = str(tmp_path / "a" / "b" / "eroica")
    assert safe_fs.ensure_session_dir(os.path.join(deep, "s1")) == os.path.join(deep, "s1")
    assert stat.S_IMODE(os.stat(deep).st_mode) == 0o700


def test_world_writable_needs_the_sticky_bit(root):
    os.mkdir(root)
    os.chmod(root, 0o777)
    with pytest.raises(safe_fs.UnsafePath, match="world-writable without the sticky bit"):
        safe_fs.ensure_root(root)
    os.chmod(root, 0o1777)  # like /tmp: others cannot rename our files
    safe_fs.ensure_root(root)


def test_a_link_below_the_root_is_refused(root, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.mkdir(root)
    os.symlink(elsewhere, os.path.join(root, SESSION["session_id"]))
    with pytest.raises(safe_fs.UnsafePath, match="not a folder"):
        write_session_json(os.path.join(root, SESSION["session_id"]))
    assert os.listdir(elsewhere) == []


@pytest.mark.parametrize("name", ["/tmp/x", "..", ".", "", "a/b", ".hidden", "x" * 201,
                                  "tab\tname", None, 3])
def test_unsafe_components_are_refused(name):
    with pytest.raises(safe_fs.UnsafePath):
        safe_fs.component(name)


def test_ranks_must_be_ints():
    assert safe_fs.rank_name("rank-", 3, ".meta.json") == "rank-3.meta.json"
    for bad in (-1, True, "3", 2.0):
        with pytest.raises(safe_fs.UnsafePath):
            safe_fs.rank_name("rank-", bad, ".json")


@needs_root
def test_runtime_skips_a_session_whose_folder_is_not_ours(root, capsys):
    rt = Runtime(config.load({"EROICA_DIR": root}))
    os.mkdir(root)
    os.mkdir(os.path.join(root, SESSION["session_id"]))
    os.chown(os.path.join(root, SESSION["session_id"]), OTHER_UID, OTHER_UID)
    assert rt._usable(SESSION) is False
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "skipped on rank 0" in err and "belongs to uid" in err
    assert rt._usable(dict(SESSION, session_id="job-s2-it60")) is True
