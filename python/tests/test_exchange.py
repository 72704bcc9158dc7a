"""Patterns through the job store: the record format's checks, and gathering by node through a
real TCPStore with ranks that never publish."""

import datetime
import threading
import time

import pytest

from eroica import exchange

torch_dist = pytest.importorskip("torch.distributed")


def test_records_round_trip():
    records = [({"rank": 3, "host": "n1"}, b"EROICAP\x02abc"), ({"rank": 4, "error": "x"}, b"")]
    assert exchange.decode(exchange.encode(records)) == records


@pytest.mark.parametrize("damage", ["magic", "truncated", "trailing", "huge_length",
                                    "no_rank", "count"])
def test_damaged_records_are_refused_with_a_reason(damage):
    good = exchange.encode([({"rank": 1}, b"p" * 10)])
    bad = {"magic": b"X" + good[1:], "truncated": good[:-3], "trailing": good + b"\0",
           "huge_length": good[:12] + b"\xff\xff\xff\x7f" + good[16:],
           "no_rank": exchange.encode([({"rank": "1"}, b"")]),
           "count": good[:8] + b"\xff\xff\x00\x00" + good[12:]}[damage]
    with pytest.raises(ValueError):
        exchange.decode(bad)


def test_topology_from_torchrun_variables():
    topo = exchange.Topology.from_env(5, 8, {"LOCAL_WORLD_SIZE": "4"})
    assert (topo.node, topo.nodes, list(topo.ranks_of(1)), topo.is_leader) == (1, 2, [4, 5, 6, 7],
                                                                              False)
    assert exchange.Topology.from_env(4, 8, {"LOCAL_WORLD_SIZE": "4"}).is_leader
    alone = exchange.Topology.from_env(3, 8, {})
    assert (alone.nodes, alone.is_leader) == (8, True)


def run_ranks(world, per_node, silent, deadline_s, port, late=None):
    """Each rank a thread with its own TCPStore client; returns rank 0's (records, missing),
    its bytes read and how long it gathered."""
    server = torch_dist.TCPStore("127.0.0.1", port, None, True, datetime.timedelta(seconds=30))
    result = {}

    def rank_main(rank):
        store = torch_dist.TCPStore("127.0.0.1", port, None, False, datetime.timedelta(seconds=30))
        topo = exchange.Topology(rank, world, per_node)
        ex = exchange.Exchange(store, "job-s1", topo, poll_s=0.02)
        time.sleep((late or {}).get(rank, 0.0))
        start = time.monotonic()
        own = ({"rank": rank, "host": "node%d" % topo.node}, b"EROICAP\x02" + bytes([rank]) * 50)
        node_records = ex.publish(own, start + deadline_s * 0.6)
        if rank == 0:
            result["gathered"] = ex.gather(node_records, start + deadline_s)
            result["bytes"] = ex.bytes_read
            result["seconds"] = time.monotonic() - start

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(world)
               if r not in silent]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    del server
    return result


def test_rank_0_reads_one_key_per_node_and_names_the_silent_rank():
    from conftest import free_port

    result = run_ranks(8, 4, silent={6}, deadline_s=2.0, port=free_port())
    records, missing = result["gathered"]
    assert missing == [6]
    assert [h["rank"] for h, _ in records] == [0, 1, 2, 3, 4, 5, 7]
    assert all(p == b"EROICAP\x02" + bytes([h["rank"]]) * 50 for h, p in records)
    assert result["seconds"] >= 1.95, result  # it waited for rank 6 until its deadline
    # Rank 0 read its own node's 3 records and one bundle of node 1's 3: not one key per rank.
    three = exchange.encode([({"rank": 1, "host": "node0"}, b"x" * 58)] * 3)
    assert result["bytes"] < 2 * len(three) + 64


def test_a_node_whose_leader_is_silent_is_read_rank_by_rank():
    from conftest import free_port

    result = run_ranks(8, 4, silent={4}, deadline_s=1.0, port=free_port())
    records, missing = result["gathered"]
    assert missing == [4] and [h["rank"] for h, _ in records] == [0, 1, 2, 3, 5, 6, 7]
    assert result["seconds"] >= 0.95  # it waited for node 1's bundle until its deadline


def test_a_rank_later_than_its_leader_still_arrives_before_the_deadline():
    from conftest import free_port

    # Rank 5 publishes 1.4 s in: after its leader sent node 1 (at 0.6 x 2 s), before rank 0's
    # deadline (2 s). Rank 0 takes it from its own key and stops waiting then.
    result = run_ranks(8, 4, silent=set(), deadline_s=2.0, port=free_port(), late={5: 1.4})
    records, missing = result["gathered"]
    assert missing == [] and len(records) == 8
    assert 1.3 <= result["seconds"] < 1.95, result


def test_hurry_ends_a_leaders_wait_at_once_and_rank_0s_after_its_grace():
    store = __import__("eroica.trigger", fromlist=["MemoryStore"]).MemoryStore()
    hurry = threading.Event()
    hurry.set()
    ex = exchange.Exchange(store, "s", exchange.Topology(0, 8, 4), poll_s=0.05, hurry=hurry,
                           hurry_grace_s=0.4)
    start = time.monotonic()
    own = ex.publish(({"rank": 0}, b"p"), start + 30)  # as a leader: at once
    assert time.monotonic() - start < 0.3
    records, missing = ex.gather(own, start + 30)  # as rank 0: the grace, for the leaders
    assert 0.35 <= time.monotonic() - start < 1.2
    assert [h["rank"] for h, _ in records] == [0] and missing == list(range(1, 8))
