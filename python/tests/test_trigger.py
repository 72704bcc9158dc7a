"""One proposal wins; every rank reads the same session; polling never blocks."""

import datetime
import threading
import time

import pytest
import torch.distributed as dist

from conftest import free_port
from eroica import trigger


def announcement(session_id, **fields):
    """A session payload of the shape the runtime publishes (the fields readers check)."""
    doc = {"session_id": session_id, "reason": "degradation", "target_iteration": 100,
           "capture_iters": 5, "capture_max_s": 20.0}
    doc.update(fields)
    return doc


def tcp_pair(n_clients):
    port = free_port()
    timeout = datetime.timedelta(seconds=10)
    master = dist.TCPStore("127.0.0.1", port, None, True, timeout)
    clients = [dist.TCPStore("127.0.0.1", port, None, False, timeout) for _ in range(n_clients)]
    return master, clients


def test_poll_on_a_fresh_store_does_not_block():
    master, _ = tcp_pair(0)
    coord = trigger.Coordinator(dist.PrefixStore("default_pg", master))
    start = time.monotonic()
    assert coord.poll() == ([], [])
    assert time.monotonic() - start < 1.0


@pytest.mark.parametrize("kind", ["memory", "tcp"])
def test_exactly_one_concurrent_proposal_wins(kind):
    n = 8
    if kind == "memory":
        shared = trigger.MemoryStore()
        stores = [shared] * n
    else:
        master, stores = tcp_pair(n)
    coords = [trigger.Coordinator(s) for s in stores]
    barrier = threading.Barrier(n)
    won = [None] * n

    def propose(rank):
        barrier.wait()
        won[rank] = coords[rank].sessions.try_publish(
            lambda slot: announcement("s%d-by-%d" % (slot, rank)))

    threads = [threading.Thread(target=propose, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [w for w in won if w is not None]
    assert len(winners) == 1
    # Every other rank reads the winner's session, once.
    for rank, coord in enumerate(coords):
        sessions, hangs = coord.poll()
        if won[rank] is None:
            assert sessions == winners and hangs == []
        else:
            assert sessions == []
        assert coord.poll() == ([], [])


def test_sessions_and_hangs_arrive_in_order():
    store = trigger.MemoryStore()
    a, b = trigger.Coordinator(store), trigger.Coordinator(store)
    a.put_series("s1", {"first_id": 3, "times_s": [0.1, 0.2]})
    a.sessions.try_publish(lambda slot: announcement("s1"))
    b.poll()
    b.sessions.try_publish(lambda slot: announcement("s2"))
    b.hangs.try_publish(lambda slot: announcement("h1", reason="hang", stuck_iteration=9))
    sessions, hangs = a.poll()
    assert [s["session_id"] for s in sessions] == ["s2"]
    assert [h["session_id"] for h in hangs] == ["h1"]
    assert b.get_series("s1") == {"first_id": 3, "times_s": [0.1, 0.2]}
    # A rank that lags behind loses its claim and then reads what it missed.
    late = trigger.Coordinator(store)
    assert late.sessions.try_publish(lambda slot: announcement("late")) is None
    assert [s["session_id"] for s in late.poll()[0]] == ["s1", "s2"]


def test_a_settled_session_is_seen_by_every_rank_with_one_read_per_epoch():
    """The gatherer settles a slot once the session's work is over; each waiting rank reads the
    settled key only when the epoch moved (every rank of the job polls every tick)."""
    reads = []

    class Counting(trigger.MemoryStore):
        def add(self, key, amount):
            reads.append(key)
            return super().add(key, amount)

    store = Counting()
    gatherer, waiter = trigger.Coordinator(store), trigger.Coordinator(store)
    gatherer.sessions.try_publish(lambda slot: announcement("s1"))
    waiter.poll()
    assert not waiter.is_settled(1)
    del reads[:]
    for _ in range(3):  # nothing moved: the epoch alone is read
        waiter.poll()
        assert not waiter.is_settled(1)
    assert reads == [trigger.EPOCH_KEY] * 3
    gatherer.sessions.settle(1)
    waiter.poll()
    assert waiter.is_settled(1)
    assert not waiter.is_settled(2)  # another slot is read once, and is not settled
    # A rank that begins waiting after the settle (its epoch already seen) still sees it.
    late = trigger.Coordinator(store)
    late.poll()
    assert late.is_settled(1)


@pytest.mark.parametrize("bad", [
    announcement("/tmp/x"), announcement("../up"), announcement(".hidden"),
    announcement("a/b"), announcement(7), announcement("s", target_iteration="100"),
    announcement("s", capture_iters=0), announcement("s", capture_max_s=True),
    announcement("h", reason="hang"), announcement("s", reason=None), ["not", "a", "dict"],
], ids=["absolute", "dotdot", "hidden", "slash", "int-id", "str-target", "zero-iters",
        "bool-seconds", "hang-without-iteration", "no-reason", "list"])
def test_a_bad_announcement_from_the_store_is_ignored_with_one_line(bad, capsys):
    """The store is unauthenticated: its session id becomes a folder name (an absolute id
    used to escape EROICA_DIR), its numbers reach the training thread."""
    store = trigger.MemoryStore()
    writer, reader = trigger.Coordinator(store), trigger.Coordinator(store)
    writer.sessions.try_publish(lambda slot: bad)
    writer.sessions.try_publish(lambda slot: announcement("good"))
    sessions, _ = reader.poll()
    assert [s["session_id"] for s in sessions] == ["good"]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ignored session announcement 1" in err, err
    assert reader.poll() == ([], [])  # skipped for good, not retried


def test_dead_store_raises_store_unavailable():
    class Dead:
        def add(self, key, amount):
            raise RuntimeError("Connection reset by peer")

    with pytest.raises(trigger.StoreUnavailable):
        trigger.Coordinator(Dead()).poll()


def test_margin_covers_polling_latency():
    assert trigger.margin_iters(5, poll_s=1.0, mean_iteration_s=1.0) == 5
    assert trigger.margin_iters(5, poll_s=1.0, mean_iteration_s=0.01) == 202
    assert trigger.margin_iters(5, poll_s=1.0, mean_iteration_s=0.0) == 5


def test_window_is_k_iterations_or_t_seconds():
    assert trigger.window_iters(5, 20.0, 0.1) == 5
    assert trigger.window_iters(5, 20.0, 8.0) == 2
    assert trigger.window_iters(5, 20.0, 60.0) == 1


def test_job_id_is_file_name_safe(monkeypatch):
    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
    assert trigger.job_id("") == "job"
    assert trigger.job_id("my job/1") == "my_job_1"
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "abc123")
    assert trigger.job_id("") == "abc123"


def test_store_calls_close_waits_for_those_in_flight_and_refuses_new_ones():
    """At the process's exit no thread of ours may be inside a store call (trigger._StoreCalls):
    close() waits for the call in flight, bounded, and later calls fail as StoreUnavailable."""
    calls = trigger._StoreCalls()
    entered, release = threading.Event(), threading.Event()

    def slow_add(key, amount):
        entered.set()
        release.wait(5)
        return amount

    worker = threading.Thread(target=calls.call, args=(slow_add, "k", 1), daemon=True)
    worker.start()
    assert entered.wait(5)
    start = time.monotonic()
    assert calls.close(0.2) is False  # still in flight at the bound
    assert 0.15 < time.monotonic() - start < 2.0
    release.set()
    worker.join(5)
    assert calls.close(0.2) is True
    with pytest.raises(trigger.StoreUnavailable):
        calls.call(slow_add, "k", 1)
