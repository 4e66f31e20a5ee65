"""The dedup state on shared storage: whichever process decides a range, from whatever cache,
it decides exactly as one process with the state on its own disk does."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from streamsift.config.types import FieldType
from streamsift.transforms.dedup import shared_state
from streamsift.transforms.dedup.carry_over import carry_local_state
from streamsift.transforms.dedup.layout import mode_directory
from streamsift.transforms.dedup.partition import PartitionDedup
from streamsift.transforms.dedup.rule import DedupRule, OffsetRange
from streamsift.transforms.dedup.shared_state import SharedPartitionState
from streamsift.transforms.parse import FieldSpec

H = 3_600_000_000


def ranges(seed: int, count: int) -> list[tuple[int, list[tuple[bytes, int]]]]:
    """Consecutive offset ranges of (key, event time) records: repeats, late ones, gaps."""
    rng = random.Random(seed)
    out, offset, clock = [], 0, 10 * H
    for _ in range(count):
        rows = []
        for _ in range(rng.randint(1, 12)):
            clock += rng.randint(0, H // 3)
            t = clock - (3 * H if rng.random() < 0.05 else rng.randint(0, H // 2))
            rows.append((f"k{rng.randint(0, 15)}".encode(), t))
        out.append((offset, rows))
        offset += len(rows)
    return out


def run(dedup: PartitionDedup, start: int, rows: list[tuple[bytes, int]]):
    offsets = list(range(start, start + len(rows)))
    return dedup.decide(
        [k for k, _ in rows], [t for _, t in rows], offsets, start, end=start + len(rows)
    )


def shared(tmp_path, cache: str, window: int = H, cleanup_every: int = 1_000_000):
    state = SharedPartitionState(str(tmp_path / "shared"), "dedup/events/p0")
    return PartitionDedup(
        tmp_path / "caches" / cache, window, cleanup_every=cleanup_every, shared=state
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_executors_taking_turns_with_replays_decide_as_one_local_process(
    tmp_path, monkeypatch, seed
):
    """Two executors take turns at random (each with its own cache, one of them sometimes
    losing its cache), some ranges are run twice (a replay, on either executor): every
    decision equals the local, single-process one; snapshots and pruning happen on the way."""
    monkeypatch.setattr(shared_state, "SNAPSHOT_EVERY", 4)
    rng = random.Random(seed)
    local = PartitionDedup(tmp_path / "local", H, cleanup_every=40)
    executors = [shared(tmp_path, "a", cleanup_every=40), shared(tmp_path, "b", cleanup_every=40)]
    for start, rows in ranges(seed, 60):
        expected = run(local, start, rows)
        attempts = 2 if rng.random() < 0.2 else 1
        for _ in range(attempts):
            ex = rng.choice(executors)
            if rng.random() < 0.1:
                import shutil

                shutil.rmtree(ex.path, ignore_errors=True)  # the executor was replaced
            got = run(ex, start, rows)
            assert (got.keep, got.late) == (expected.keep, expected.late), start
    logs, snaps = SharedPartitionState(str(tmp_path / "shared"), "dedup/events/p0").listing()
    assert 1 <= len(snaps) <= 2  # pruned behind the previous snapshot
    assert all(s >= snaps[0] for s, _ in logs)


def test_a_new_executor_restores_the_state_as_of_the_ranges_start(tmp_path):
    first = shared(tmp_path, "a")
    assert run(first, 0, [(b"a", 0), (b"b", 0)]).keep == [True, True]
    second = shared(tmp_path, "b")  # empty cache: restored from the changelog
    assert run(second, 2, [(b"a", 10), (b"c", 10)]).keep == [False, True]
    # back on the first executor: its cache ends at 2, the state has moved on to 4
    assert run(first, 4, [(b"c", 20), (b"d", 20)]).keep == [False, True]


def test_a_replay_elsewhere_of_a_range_already_uploaded_decides_as_the_first_run(tmp_path):
    a, b = shared(tmp_path, "a"), shared(tmp_path, "b")
    run(a, 0, [(b"x", 0)])
    first = run(a, 1, [(b"x", H + 1), (b"y", 5), (b"x", H + 2)])
    replay = run(b, 1, [(b"x", H + 1), (b"y", 5), (b"x", H + 2)])  # a died before commit
    assert first.keep == replay.keep == [True, True, False]


def test_a_stale_cache_is_rebuilt_not_trusted(tmp_path):
    a, b = shared(tmp_path, "a"), shared(tmp_path, "b")
    run(a, 0, [(b"x", 0)])
    run(b, 1, [(b"y", 0)])  # b moves the state on; a's cache still ends at 1
    run(b, 2, [(b"z", 0)])
    assert run(a, 3, [(b"x", 1), (b"y", 1), (b"z", 1)]).keep == [False, False, False]


def test_the_range_end_is_required_with_a_shared_store(tmp_path):
    with pytest.raises(ValueError, match="end"):
        shared(tmp_path, "a").decide([b"x"], [0], [0], 0)


def test_a_local_runs_state_carried_over_decides_as_the_local_state_would(tmp_path):
    """The local RocksDB of each mode's partitions is uploaded once, as a snapshot at the
    committed end; a shared decision of the next range then equals the local one."""
    checkpoint = tmp_path / "checkpoint"
    local = PartitionDedup(checkpoint / "dedup" / "events" / "p0", H)
    run(local, 0, [(b"a", 0), (b"b", 0)])
    (checkpoint / "dedup-exact" / "events" / "p1").mkdir(parents=True)  # no RocksDB in it
    url = str(tmp_path / "shared")
    ends = {"events/0": 2, "events/1": 0}
    assert carry_local_state(checkpoint, url, ends) == 1  # p1 holds no RocksDB yet
    assert carry_local_state(checkpoint, url, ends) == 0  # never twice
    next_range = [(b"a", 10), (b"c", 10)]
    expected = run(local, 2, next_range)
    got = run(shared(tmp_path, "a"), 2, next_range)
    assert (got.keep, got.late) == (expected.keep, expected.late) == ([False, True], [False] * 2)


def test_the_rule_keeps_dead_letters_and_keys_by_its_mode(tmp_path):
    """DedupRule: per mode, its own state directory; records with an error pass untouched."""
    table = pa.table({"id": ["a", "a", "a", "b"]})
    payloads = [b'{"id":"a","v":1}', b'{"v":1,"id":"a"}', b'{"id":"a","v":2}', b"{"]
    errors = [None, None, None, "malformed"]
    times = pa.array([0, 1, 2, 3], pa.int64())
    part = OffsetRange("events", 0, 0, 4)
    spec = FieldSpec("id", "id", FieldType.STRING)
    expected = {"first": [True, False, False, True], "last": [True, False, True, True]}
    expected["exact"] = expected["last"]  # the first two payloads are one canonical payload
    for mode, keep in expected.items():
        rule = DedupRule((spec,), mode, H, str(mode_directory(tmp_path / "dedup", mode)))
        assert rule.active
        got = rule.decide(part, [0, 1, 2, 3], payloads, table, times, errors)
        assert (got[0].tolist(), got[1].tolist()) == (keep, [False] * 4), mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dedup", "dedup-exact", "dedup-last"]
