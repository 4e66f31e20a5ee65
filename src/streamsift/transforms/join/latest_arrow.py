"""`join.mode: latest` with its state kept by streamsift, on Arrow batches, in `foreachBatch`.

The streaming query only brings both sides together: each side's records (its output fields
as they are, no JSON), shuffled by a bucket of the key's canonical text, and its dead
letters, in one frame (plan.py `build_arrow_latest`). The join runs per micro-batch
(`ArrowLatestJoin.joined`): a `mapInArrow` over that frame, one task per shuffle
partition, each with the partition's state (latest_state.py: an Arrow snapshot per
micro-batch) and the rule on columns (latest_columnar.py). A re-run micro-batch reads the
snapshot its first run read and gets the same watermark from Spark's offset log, so it makes
the same rows.

Time, as in the `transformWithState` join (latest.py): Spark keeps the watermark (both sides'
`withWatermark`, the smaller); a record at or behind the previous micro-batch's watermark is
dropped and counted (`late` in the snapshot's metadata); the rule runs with this batch's.
Spark runs a micro-batch without data when the watermark moves only for a query with a
stateful operator, and a waiting left record must expire then: so the query holds one that
never receives a row (`dropDuplicatesWithinWatermark` over an empty branch of the left side).
Every partition's task runs in every micro-batch, with or without rows, so every key's
expiry comes due. Why this join exists beside latest.py: docs/benchmarks.md, "What a join
kept by streamsift could reach".
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streamsift.config.rows import NO_RECORD, OUTPUT_COLUMNS, RIGHT_RECORD_COLUMNS
from streamsift.transforms.join.latest_buckets import KEY_TEXT
from streamsift.transforms.join.latest_columnar import Columns, join_columns
from streamsift.transforms.join.latest_rule import Windows
from streamsift.transforms.join.latest_state import PartState, clear, partitions

STATE_DIR = "latest-join"  # under the checkpoint, or the shared state location
KIND = "_kind"  # L: a left record, R: a right one, D: a dead letter passed through
EVENT_US = "_et"  # the record's event time in µs
LATE_KEY = b"late"  # snapshot metadata: records the batch dropped behind the watermark
LEFT_META = ("_topic", "_partition", "_offset", "_kafka_ts", "_late")


@dataclass(frozen=True)
class ArrowLatestJoin:
    """Picklable: built on the driver (plan.py `build_arrow_latest`), run per micro-batch
    (`joined`).

    `fields`: (input column, output column, side) per output field, in the join's order."""

    location: str
    windows: Windows
    left_outer: bool
    left_source: str
    fields: tuple[tuple[str, str, str], ...]
    output_ddl: str

    def joined(self, df: Any, batch_id: int, watermarks: tuple[int, int]) -> Any:
        """The micro-batch's joined rows and dead letters. `watermarks`: the previous and this
        micro-batch's watermark (ms), from Spark's offset log."""
        before_ms, now_ms = watermarks
        task = functools.partial(
            self._task, batch_id, max(before_ms, 0) * 1000, max(now_ms, 0) * 1000
        )
        return df.mapInArrow(task, self.output_ddl)

    def late(self, batch_id: int) -> int:
        """Records micro-batch `batch_id` dropped behind the watermark, over its partitions."""
        return sum(
            int((PartState(self.location, part).metadata(batch_id) or {}).get(LATE_KEY, 0))
            for part in partitions(self.location, STATE_DIR)
        )

    def _task(
        self, batch_id: int, late_us: int, watermark_us: int, batches: Iterator[pa.RecordBatch]
    ) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        state = PartState(self.location, f"{STATE_DIR}/p{TaskContext.get().partitionId()}")
        read_from, stored = state.read_before(batch_id)
        given = list(batches)
        if not given and stored is None:
            return
        new = pa.Table.from_batches(given) if given else None
        schema = new.schema if new is not None else stored.schema  # type: ignore[union-attr]
        parts = [t for t in (stored, new) if t is not None]
        table = pa.concat_tables([_aligned(t, schema) for t in parts])
        stored_rows = stored.num_rows if stored is not None else 0
        kind = table.column(KIND)
        is_new = np.arange(table.num_rows) >= stored_rows
        dead = pc.equal(kind, "D").to_numpy(zero_copy_only=False)
        behind = pc.fill_null(pc.less_equal(table.column(EVENT_US), late_us), False)
        behind = behind.to_numpy(zero_copy_only=False)
        late = int(np.count_nonzero(is_new & ~dead & behind))
        records = table.filter(pa.array(~dead & ~(is_new & behind)))
        side = records.column(KIND)
        rights = records.filter(pc.equal(side, "R"))
        lefts = records.filter(pc.equal(side, "L"))
        step = join_columns(_columns(rights), _columns(lefts), watermark_us, self.windows)
        kept = pa.concat_tables(
            [rights.take(step.kept_rights), lefts.take(step.waiting)]
        ).replace_schema_metadata({LATE_KEY: str(late).encode()})
        state.write(batch_id, kept, read_from)
        out = [self._rows(lefts.take(step.matched_left), rights.take(step.matched_right))]
        if self.left_outer and len(step.expired):
            out.append(self._rows(lefts.take(step.expired), None))
        if new is not None:
            letters = new.filter(pa.array(dead[stored_rows:]))
            if letters.num_rows:
                out.append(self._dead(letters))
        for rows in out:
            yield from rows.to_batches()

    def _rows(self, lefts: pa.Table, rights: pa.Table | None) -> pa.Table:
        """Joined rows: each left record with its right version (None: NULL right fields)."""
        n = lefts.num_rows
        columns, names = [], []
        for column, name, side in self.fields:
            if side == "left":
                columns.append(lefts.column(column))
            elif rights is None:
                columns.append(pa.nulls(n, lefts.schema.field(column).type))
            else:
                columns.append(rights.column(column))
            names.append(name)
        for meta in OUTPUT_COLUMNS:
            if meta.name == "_source":
                value: Any = pa.array([self.left_source] * n, pa.string())
            elif meta in RIGHT_RECORD_COLUMNS:
                position = "_partition" if meta.name == "_rpartition" else "_offset"
                if rights is None:
                    value = pa.array([NO_RECORD] * n, lefts.schema.field(position).type)
                else:
                    value = rights.column(position)
            elif meta.name in LEFT_META:
                value = lefts.column(meta.name)
            else:
                value = pa.nulls(n, lefts.schema.field(meta.name).type)
            columns.append(value)
            names.append(meta.name)
        return pa.table(columns, names=names)

    def _dead(self, letters: pa.Table) -> pa.Table:
        """Dead letters as the sink takes them: NULL output fields, their own metadata."""
        n = letters.num_rows
        columns = [pa.nulls(n, letters.schema.field(c).type) for c, _, _ in self.fields]
        columns += [letters.column(meta.name) for meta in OUTPUT_COLUMNS]
        names = [name for _, name, _ in self.fields] + [m.name for m in OUTPUT_COLUMNS]
        return pa.table(columns, names=names)


def _columns(table: pa.Table) -> Columns:
    return Columns(
        keys=table.column(KEY_TEXT).to_numpy(zero_copy_only=False),
        et=table.column(EVENT_US).to_numpy(),
        partition=table.column("_partition").to_numpy(),
        offset=table.column("_offset").to_numpy(),
    )


def _aligned(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` in `schema` (a snapshot written before the pipeline's fields changed): columns
    by name, missing ones NULL, types cast."""
    if table.schema.equals(schema, check_metadata=False):
        return table.replace_schema_metadata(None)
    columns = []
    for field in schema:
        if field.name in table.column_names:
            columns.append(table.column(field.name).cast(field.type))
        else:
            columns.append(pa.nulls(table.num_rows, field.type))
    return pa.table(columns, schema=schema.remove_metadata())


def clear_latest_state(location: str) -> None:
    """Forget the join's state under `location`: its query starts afresh."""
    clear(location, STATE_DIR)
