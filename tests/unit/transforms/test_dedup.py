"""The per-partition dedup: window edges, late records, replays, restarts."""

from __future__ import annotations

from streamsift.transforms.dedup.keys import encode_key
from streamsift.transforms.dedup.partition import PartitionDedup

H = 3_600_000_000  # one hour in microseconds


def decide(dedup, start, rows):
    keys = [k.encode() for k, _ in rows]
    times = [t for _, t in rows]
    return dedup.decide(keys, times, list(range(start, start + len(rows))), start)


def test_window_edges_within_one_range(tmp_path):
    d = PartitionDedup(tmp_path / "p", H)
    got = decide(
        d, 0, [("a", 0), ("a", H - 1), ("b", 0), ("b", H), ("c", 0), ("c", H + 1), ("c", H + 2)]
    )
    assert got.keep == [True, False, True, True, True, True, False]


def test_decisions_survive_reopening_and_ranges(tmp_path):
    d = PartitionDedup(tmp_path / "p", H)
    assert decide(d, 0, [("a", 0)]).keep == [True]
    d2 = PartitionDedup(tmp_path / "p", H)  # a new process: state is on disk
    assert decide(d2, 1, [("a", 10), ("b", 20)]).keep == [False, True]


def test_a_replayed_range_decides_exactly_as_the_first_attempt(tmp_path):
    d = PartitionDedup(tmp_path / "p", H)
    decide(d, 0, [("a", 0), ("b", 0)])
    first = decide(d, 2, [("a", H + 5), ("c", 1), ("a", H + 6), ("b", 7)])
    replay = decide(d, 2, [("a", H + 5), ("c", 1), ("a", H + 6), ("b", 7)])
    assert first.keep == replay.keep == [True, True, False, False]
    assert decide(d, 6, [("a", H + 10)]).keep == [False]  # the reference moved to H+5


def test_late_records_are_kept_and_flagged(tmp_path):
    d = PartitionDedup(tmp_path / "p", H)
    decide(d, 0, [("a", 0), ("b", 5 * H)])
    got = decide(d, 2, [("a", 0), ("d", 4 * H + 1)])
    assert got.keep == [True, True]
    assert got.late == [True, False]


def test_encode_key_is_stable_and_unambiguous():
    assert encode_key(["x"]) == b"x"
    assert encode_key(["a", 1]) != encode_key(["a1"])
    assert encode_key([None, "x"]) != encode_key(["None", "x"])
