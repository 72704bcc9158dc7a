"""Retention of the node-local raw data: oldest sessions go first, down to both bounds, and
never the session being written nor anything that is not one of our session folders."""

import os

from eroica import retention


def make_session(root, name, size, mtime):
    folder = root / name
    folder.mkdir(mode=0o700)
    (folder / "rank-0.json.gz").write_bytes(b"x" * size)
    os.utime(folder, (mtime, mtime))
    return folder


def test_oldest_sessions_go_first_down_to_the_count(tmp_path):
    for i in range(5):
        make_session(tmp_path, "s%d" % i, 10, 1000 + i)
    removed = retention.prune(str(tmp_path), keep_sessions=2, keep_bytes=1 << 30, current="s4")
    assert removed == ["s0", "s1", "s2"]
    assert sorted(os.listdir(tmp_path)) == ["s3", "s4"]


def test_bytes_bound_removes_until_the_rest_fits(tmp_path):
    for i in range(4):
        make_session(tmp_path, "s%d" % i, 1000, 1000 + i)
    removed = retention.prune(str(tmp_path), keep_sessions=100, keep_bytes=2500, current="s3")
    assert removed == ["s0", "s1"]


def test_the_current_session_stays_even_when_it_is_the_oldest_or_too_big(tmp_path):
    make_session(tmp_path, "big", 5000, 1000)
    make_session(tmp_path, "newer", 10, 2000)
    removed = retention.prune(str(tmp_path), keep_sessions=1, keep_bytes=100, current="big")
    assert removed == ["newer"] and os.listdir(tmp_path) == ["big"]


def test_links_files_and_dot_names_are_left_alone(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep")
    root = tmp_path / "local"
    root.mkdir()
    os.symlink(outside, root / "link-session")
    (root / "summarize.lock").write_text("")
    (root / ".hidden").mkdir()
    make_session(root, "old", 10, 1000)
    inner = make_session(root, "with-link", 10, 1500)
    os.symlink(outside / "precious", inner / "rank-1.json.gz")
    make_session(root, "now", 10, 3000)
    removed = retention.prune(str(root), keep_sessions=1, keep_bytes=1 << 30, current="now")
    assert removed == ["old", "with-link"]
    assert sorted(os.listdir(root)) == [".hidden", "link-session", "now", "summarize.lock"]
    assert (outside / "precious").read_text() == "keep"  # the link was removed, not followed
