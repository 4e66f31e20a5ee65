"""The columnar dedup decision (transforms/dedup/columnar.py) against the record-by-record
loop: same keep/late flags and the same RocksDB state, range after range, replays and late
records included; and the cases it leaves to the loop."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamsift.transforms.dedup import columnar
from streamsift.transforms.dedup.partition import PartitionDedup
from streamsift.transforms.dedup.shared_state import open_db

WINDOW = 30


def _run(path, ranges, monkeypatch, loop: bool):
    """Every range's decision and the state's entries after the last one."""
    with monkeypatch.context() as m:
        if loop:
            m.setattr(columnar, "MAX_ROUNDS", -1)  # every range goes to the loop
        dedup = PartitionDedup(path, WINDOW, cleanup_every=7)
        got = [(d.keep, d.late) for d in (dedup.decide(*r) for r in ranges)]
    db = open_db(path)
    try:
        state = dict(db.items())
    finally:
        db.close()
    return got, state


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.tuples(st.sampled_from("abcde"), st.integers(-40, 60)), min_size=1, max_size=50),
    st.lists(st.integers(1, 12), min_size=1, max_size=6),
    st.integers(0, 6),
)
def test_columns_decide_and_write_as_the_loop(tmp_path_factory, monkeypatch, steps, cuts, replay):
    # Times wander back and forth, so some records fall a window behind the high-water mark.
    records, t = [], 1_000
    for key, delta in steps:
        t += delta
        records.append((key.encode(), t))
    ranges, lo = [], 0
    for c in [*cuts, len(records)]:
        hi = min(len(records), lo + c)
        if lo < hi:
            part = records[lo:hi]
            one = ([k for k, _ in part], [t for _, t in part], list(range(lo, hi)), lo)
            ranges += [one, one] if len(ranges) == replay else [one]
        lo = hi
    base = tmp_path_factory.mktemp("dd")
    columns = _run(base / "columns", ranges, monkeypatch, loop=False)
    loop = _run(base / "loop", ranges, monkeypatch, loop=True)
    assert columns == loop


def test_keys_may_come_as_an_arrow_array(tmp_path):
    d = PartitionDedup(tmp_path / "p", WINDOW)
    got = d.decide(pa.array([b"a", b"b", b"a"]), [0, 1, 2], [0, 1, 2], 0)
    assert got.keep == [True, True, False]


@pytest.mark.parametrize(
    ("keys", "times"),
    [
        ([b"a"] * (columnar.MAX_ROUNDS + 5), list(range(0, 40 * (columnar.MAX_ROUNDS + 5), 40))),
        ([b"a", b"a", b"b"], [-(2**62), 0, 2**62]),  # differences that would overflow int64
    ],
)
def test_the_loop_decides_what_columns_should_not(tmp_path, keys, times):
    offsets = list(range(len(keys)))
    assert (
        columnar.decide_columns(
            pa.array(keys).dictionary_encode().indices.to_numpy().astype("int64"),
            pa.array(times, pa.int64()).to_numpy(),
            pa.array(offsets, pa.int64()).to_numpy(),
            *columnar.stored_entries([None] * len(set(keys))),
            0,
            None,
            WINDOW,
        )
        is None
    )
    got = PartitionDedup(tmp_path / "p", WINDOW).decide(keys, times, offsets, 0)
    expected = [True] * len(keys) if len(set(keys)) == 1 else [True, True, True]
    assert got.keep == expected  # each repeat of `a` is 40 after the last: all kept


def test_an_extreme_reference_in_the_state_goes_to_the_loop(tmp_path):
    """A reference the loop stored for a time near int64's end: differences with it are not
    taken in numpy, the loop decides (and keeps the record: it is far from that time)."""
    entry = columnar.pack_entries(np.array([[-(2**63) + 1, 0, -1, -1]], dtype=np.int64))
    one = np.zeros(1, dtype=np.int64)
    args = (one, one + 5, one + 2, *columnar.stored_entries(entry), 2, 0, WINDOW)
    assert columnar.decide_columns(*args) is None
    d = PartitionDedup(tmp_path / "p", WINDOW)
    assert d.decide([b"a", b"b"], [-(2**63) + 1, 0], [0, 1], 0).keep == [True, True]
    got = d.decide([b"a", b"a"], [5, 6], [2, 3], 2)
    assert (got.keep, got.late) == ([True, False], [False, False])
