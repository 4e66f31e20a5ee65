"""The two ways a micro-batch's rows and dead letters reach ClickHouse.

Driver inserts: the driver collects the batch as Arrow and the batch writer inserts it from
this process; always so for embedded ClickHouse (it lives inside one process), on request for
a server. Executor inserts: each Spark partition inserts its own rows on its executor (tokens
carry the partition index) and hands back only its counts, while the driver watches ClickHouse
(clickhouse_watch.py), since the executors retry out of its sight.

Under sink.on_new_fields add_columns, a batch's new fields extend the table and the mapping
before any of its rows is written (`BatchToWrite.extend`, engine/new_columns.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from streamsift.engine.arrow_passthrough import flagged_of_chunks, unpack, unpack_batches
from streamsift.engine.batch_writer import COUNTS_SCHEMA, BatchWriter
from streamsift.engine.clickhouse_watch import watching_clickhouse
from streamsift.engine.new_columns import flagged_in, flagged_rows, in_kafka_order
from streamsift.engine.progress import SinkCounts
from streamsift.sinks.clickhouse import ClickHouseWriter
from streamsift.sinks.retry import RetryStatus


@dataclass(frozen=True)
class BatchToWrite:
    """One micro-batch as foreachBatch hands it over, with what writing it takes.

    `arrow_schema`: the pass-through's output schema (its rows are chunks of it), None on
    the row path. `extend`: under add_columns, extends the table by the new fields of the
    rows it is given (a thunk: only computed when needed) and returns the batch writer to
    write with; None otherwise.
    """

    frame: Any
    query_id: str
    batch_id: int
    arrow_schema: pa.Schema | None
    writer: BatchWriter
    extend: Callable[[Callable[[], pa.Table]], BatchWriter] | None = None


class WriteStrategy(Protocol):
    def write(self, batch: BatchToWrite) -> SinkCounts: ...


class DriverInserts:
    """The driver collects the batch and inserts it."""

    def write(self, batch: BatchToWrite) -> SinkCounts:
        collected = batch.frame.toArrow()
        arrow = batch.arrow_schema
        data = collected if arrow is None else unpack(collected, arrow)
        writer = batch.writer
        if batch.extend is not None:
            writer = batch.extend(lambda: flagged_in(data))
        return writer.write(data, batch.query_id, batch.batch_id, "driver")


@dataclass
class ExecutorInserts:
    """Each Spark partition inserts its own rows; the driver sums their counts.

    `clickhouse` (the driver's writer) is pinged while they insert; `where` names the server
    in the outage status that `set_status` shows.
    """

    clickhouse: ClickHouseWriter
    where: str
    set_status: Callable[[str | None], None]

    def write(self, batch: BatchToWrite) -> SinkCounts:
        df, arrow, writer = batch.frame, batch.arrow_schema, batch.writer
        if batch.extend is not None:  # read the batch once for both passes
            df = df.persist()
            writer = batch.extend(lambda: flagged_rows(df) if arrow is None else flagged_chunks(df))
        with watching_clickhouse(self.clickhouse, self.where, self.set_status):
            counts = sum(
                (
                    SinkCounts.of(r.written, r.dlq, r.late, r.extra)
                    for r in write_on_executors(df, writer, batch.query_id, batch.batch_id, arrow)
                ),
                SinkCounts(),
            )
        if batch.extend is not None:
            df.unpersist()
        return counts


def write_on_executors(
    df: Any, writer: BatchWriter, qid: str, batch_id: int, arrow: pa.Schema | None = None
) -> list[Any]:
    """Each Spark partition inserts its own rows (tokens carry the partition index); with
    `arrow`, the pass-through's chunks, unpacked to that schema."""

    def write_partition(batches: Any) -> Any:
        from pyspark import TaskContext

        part = f"p{TaskContext.get().partitionId()}"
        batches = list(batches)
        counts = SinkCounts()
        retries: list[RetryStatus] = []  # this executor's copy of the writer reports them here
        writer.writer.on_status = lambda status: status is not None and retries.append(status)
        if arrow is not None:
            batches = list(unpack_batches(batches))
        if batches:
            table = pa.Table.from_batches(batches, schema=arrow)
            counts = writer.write(table, qid, batch_id, part)
        counts.retries = len(retries)
        row = {"written": counts.written, "dlq": counts.dlq, "late": counts.late}
        yield pa.RecordBatch.from_pylist([{**row, "extra": counts.as_json()}], schema=COUNTS_SCHEMA)

    return df.mapInArrow(
        write_partition, "written long, dlq long, late long, extra string"
    ).collect()


def flagged_chunks(df: Any) -> pa.Table:
    """`flagged_rows` of a pass-through frame: filtered on the executors, in Kafka order."""
    flagged = df.mapInArrow(
        flagged_of_chunks, "_topic string, _partition int, _offset bigint, _raw binary"
    ).toArrow()
    return in_kafka_order(flagged)
