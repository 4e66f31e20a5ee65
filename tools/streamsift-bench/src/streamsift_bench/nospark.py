"""`nospark`: streamsift's own stages in a plain loop, without Spark.

The same pipeline document as the streamsift runs (run_setup.pipeline_doc), the same
consumer as raw_vec (the source's fetch settings), and per poll what a micro-batch does on the
pass-through path: per partition, streamsift's processor (engine/query.py
pass_through_processor: parse, event-time checks, the RocksDB first-wins decision, the output
frame's shaping), then its BatchWriter (engine/batch_writer.py: sort, chunks, insert tokens)
on the loop's thread (the consume loop of consume_loop.py, which the other hand-written runs
share). No offsets are checkpointed. streamsift's distance to this run is what
Spark (planning, tasks, Arrow to the JVM and back, its checkpoints) costs.
"""

from __future__ import annotations

import itertools
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa

from streamsift_bench.common import ProgressLog, create_table_sql, dir_bytes, verify
from streamsift_bench.consume_loop import Batching, drain
from streamsift_bench.raw_vec import TABLE, fetch_consumer


class PartitionRanges:
    """Messages gathered per partition until a batch is cut; each cut range starts where the
    partition's previous one ended, as the source's offset ranges do (the dedup state of a
    partition follows its ranges)."""

    def __init__(self) -> None:
        self._msgs: dict[int, list[Any]] = defaultdict(list)
        self._next: dict[int, int] = {}
        self._count = 0

    def add(self, msgs: list[Any]) -> None:
        for msg in msgs:
            self._msgs[msg.partition()].append(msg)
        self._count += len(msgs)

    def count(self) -> int:
        """Messages gathered since the last cut."""
        return self._count

    def cut(self) -> list[Any] | None:
        """The gathered messages as one KafkaRecords per partition (then forgotten); None when
        there are none."""
        from streamsift.sources.kafka_range import KafkaRecords

        if not self._count:
            return None
        self._count = 0
        out = []
        for partition in sorted(self._msgs):
            got = self._msgs[partition]
            end = got[-1].offset() + 1
            out.append(
                KafkaRecords(
                    topic=got[0].topic(),
                    partition=partition,
                    start=self._next.get(partition, 0),
                    end=end,
                    offsets=[m.offset() for m in got],
                    timestamps_ms=[m.timestamp()[1] for m in got],
                    keys=[m.key() for m in got],
                    values=[m.value() for m in got],
                )
            )
            self._next[partition] = end
        self._msgs.clear()
        return out


def run_nospark(spec: dict[str, Any], progress: ProgressLog) -> dict[str, Any]:
    """Drain the topic through streamsift's processor and batch writer, no Spark."""
    from streamsift.config import parse_pipeline
    from streamsift.engine.arrow_passthrough import unpack_batches
    from streamsift.engine.batch_writer import BatchWriter
    from streamsift.engine.query import pass_through_processor
    from streamsift.engine.sink_tables import prepare_tables
    from streamsift.sinks.clickhouse import ClickHouseWriter
    from streamsift_bench.run_setup import pipeline_doc

    work = Path(spec["work_dir"])
    pipeline = parse_pipeline(pipeline_doc(spec))
    checkpoint = work / "checkpoint"
    processor = pass_through_processor(pipeline, checkpoint, None)
    schema = processor.output_schema
    writer = ClickHouseWriter(pipeline.sink.clickhouse)
    writer.command(create_table_sql(TABLE))
    prepare_tables(pipeline, writer)
    batch_writer = BatchWriter(pipeline, writer)
    query_id = uuid.uuid4().hex
    truth = spec["truth"]
    ranges = PartitionRanges()
    batch_ids = itertools.count()
    dlq = 0

    def write(cut: list[Any]) -> int:
        nonlocal dlq
        chunks = [c for records in cut for c in processor.process(records)]
        data = pa.Table.from_batches(list(unpack_batches(chunks)), schema=schema)
        counts = batch_writer.write(data, query_id, next(batch_ids), "driver")
        dlq += counts.dlq
        return counts.written

    consumer = fetch_consumer(spec, spec["topic"])
    batching = Batching(ranges.add, ranges.count, ranges.cut, write)
    done = drain(consumer, truth["produced"], progress, batching)

    def query(sql: str) -> tuple:
        return writer.query_rows(sql)[0]

    check = verify(query, TABLE, truth, dedup=bool(spec["dedup"]), rows=writer.query_rows)
    return {
        **done.result(spec["process_started"]),
        "dlq": dlq,
        "state_bytes": dir_bytes(checkpoint),
        "sink_bytes": dir_bytes(work / "clickhouse"),
        **check,
        "exact": check["exact"] and dlq == 0,
    }
