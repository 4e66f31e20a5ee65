"""A latest join's state by part of its keys and micro-batch (transforms/join/latest_state.py): a re-run
micro-batch reads what its first run read, and pruning keeps what a replay needs."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from streamsift.transforms.join.latest_state import PartState, clear, partitions


def table(*offsets: int) -> pa.Table:
    return pa.table({"o": pa.array(offsets, pa.int64()), "side": ["R"] * len(offsets)})


def test_a_batch_reads_the_newest_snapshot_before_it_and_a_replay_reads_the_same(
    tmp_path: Path,
) -> None:
    state = PartState(str(tmp_path), "latest-join/0/b07")
    assert state.read_before(0) == (None, None)
    state.write(0, table(1), read_from=None)
    state.write(1, table(1, 2), read_from=0)
    # batch 2 runs, writes, and is re-run after a crash: both runs start from batch 1's
    first = state.read_before(2)
    state.write(2, table(1, 2, 3), read_from=first[0])
    again = state.read_before(2)
    assert first[0] == again[0] == 1
    assert first[1] is not None and again[1] is not None
    assert again[1].equals(first[1])
    assert again[1].column("o").to_pylist() == [1, 2]
    state.write(2, table(1, 2, 3), read_from=again[0])  # the replay writes the same
    assert state.read_before(3)[1].column("o").to_pylist() == [1, 2, 3]  # type: ignore[union-attr]


def test_writing_prunes_only_the_snapshots_before_the_one_read(tmp_path: Path) -> None:
    state = PartState(str(tmp_path), "b00")
    for batch in range(4):
        read_from, _ = state.read_before(batch)
        state.write(batch, table(batch), read_from)
    assert state.batches() == [2, 3]  # 3 read 2; a replay of 3 reads 2 again
    # a part untouched for a while: its last snapshot stays until a later one is written
    read_from, _ = state.read_before(9)
    assert read_from == 3
    state.write(9, table(9), read_from)
    assert state.batches() == [3, 9]


def test_no_partial_snapshot_is_left_behind(tmp_path: Path) -> None:
    state = PartState(str(tmp_path), "b01")
    state.write(0, table(1), read_from=None)
    names = sorted(p.name for p in (tmp_path / "b01").iterdir())
    assert names == ["s-00000000000000000000.arrow"]  # written aside, renamed into place


def test_a_fresh_query_starts_from_no_state_whatever_the_location_holds(tmp_path: Path) -> None:
    """A shared location can outlive a checkpoint: its snapshots' batch ids would be taken for
    the new query's, so a query without micro-batches clears them first."""
    old = PartState(str(tmp_path), "latest-join/p0")
    old.write(57, table(1).replace_schema_metadata({b"late": b"3"}), read_from=None)
    assert partitions(str(tmp_path), "latest-join") == ["latest-join/p0"]
    assert old.metadata(57) == {b"late": b"3"}
    assert old.metadata(58) is None
    clear(str(tmp_path), "latest-join")
    assert partitions(str(tmp_path), "latest-join") == []
    assert old.read_before(60) == (None, None)
    clear(str(tmp_path), "latest-join")  # nothing there: nothing to do
