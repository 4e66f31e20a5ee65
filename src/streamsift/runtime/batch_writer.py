"""Writing one micro-batch's rows and dead letters into ClickHouse, exactly once.

Runs on the driver for embedded ClickHouse (chdb allows one process per data directory) and
on the executors, once per Spark partition, for a ClickHouse server. Either way the rows of a
part are sorted by (topic, partition, offset), cut into chunks of `max_batch_size`, and each
chunk is inserted with the token `<query id>:<batch id>:<part>:rows:<chunk>`; a re-run batch
re-creates the same parts, chunks and tokens, and ClickHouse skips what it already holds.
Rows ClickHouse refuses for their values go to the DLQ with its error code and message, and
with their original message (payload and key), which travels with every row for that (not
into the table: only the mapped columns are inserted).
"""

from __future__ import annotations

import logging
import os
import signal
from dataclasses import dataclass
from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.compute as pc

from streamsift.config.models import KafkaSource, Pipeline
from streamsift.runtime.query import SORT_KEY as OUTPUT_SORT_KEY
from streamsift.sinks.clickhouse import ClickHouseWriter
from streamsift.sinks.clickhouse.error_text import code_of, row_error
from streamsift.sinks.dlq import DLQ_ARROW_SCHEMA
from streamsift.transforms.event_time import AHEAD_OF_KAFKA_TIMESTAMP, FUTURE_EVENT_TIME
from streamsift.transforms.parse import is_required_field_error

log = logging.getLogger("streamsift.runtime")

FAULT_ENV = "STREAMSIFT_FAULT"  # "kill_after_insert:K": SIGKILL the pipeline after K inserts
SORT_KEY = [(c, "ascending") for c in OUTPUT_SORT_KEY]  # unique per row, never null
_inserts_in_process = 0


@dataclass(frozen=True)
class BatchCounts:
    written: int = 0
    dlq: int = 0
    late: int = 0

    def __add__(self, other: BatchCounts) -> BatchCounts:
        return BatchCounts(
            self.written + other.written, self.dlq + other.dlq, self.late + other.late
        )


COUNTS_SCHEMA = pa.schema([("written", pa.int64()), ("dlq", pa.int64()), ("late", pa.int64())])


@dataclass
class BatchWriter:
    """Everything needed to write a part of a batch; picklable for executors."""

    pipeline: Pipeline
    writer: ClickHouseWriter
    driver_pid: int

    def write(self, data: pa.Table, query_id: str, batch_id: int, part: str) -> BatchCounts:
        if data.num_rows == 0:
            return BatchCounts()
        # Rows in SORT_KEY order, by index: the raw messages (the bulk of `data`) are only
        # copied for dead letters, never for the rows that go into the table.
        order = pc.sort_indices(data.select(OUTPUT_SORT_KEY), sort_keys=SORT_KEY)
        bad_mask = pc.is_valid(data.column("_error")).take(order)
        good = order.filter(pc.invert(bad_mask))
        sink = self.pipeline.sink
        out = data.select([m.column for m in sink.mapping]).take(good)
        prefix = f"{query_id}:{batch_id}:{part}"
        refused: list[int] = []
        reasons: dict[int, str] = {}
        secrets = pipeline_secrets(self.pipeline)
        size = sink.max_batch_size
        for i, start in enumerate(range(0, out.num_rows, size)):
            failures = self.writer.insert_isolating(
                sink.table, out.slice(start, size), f"{prefix}:rows:{i}"
            )
            for f in failures:
                refused.append(start + f.index)
                reasons[start + f.index] = row_error(f.code, f.message, secrets)
            self._fault_point()
        dead = self._dead_letters(data.take(order.filter(bad_mask)), None, None)
        if refused:
            refused_rows = data.take(good.take(pa.array(refused, pa.int64())))
            dead = pa.concat_tables(
                [dead, self._dead_letters(refused_rows, "sink", [reasons[i] for i in refused])]
            )
            log.warning("%d rows refused by ClickHouse went to the DLQ", len(refused))
        for i, start in enumerate(range(0, dead.num_rows, size)):
            self.writer.insert(
                self.pipeline.dlq_table, dead.slice(start, size), f"{prefix}:dlq:{i}"
            )
        late = pc.sum(data.column("_late").take(good).cast(pa.int64())).as_py() or 0
        return BatchCounts(out.num_rows - len(refused), dead.num_rows, late)

    def _dead_letters(self, bad: pa.Table, stage: str | None, errors: list[str] | None) -> pa.Table:
        """`stage` None: each row's own `_stage` (parse, transform or filter)."""
        n = bad.num_rows
        messages = errors if errors is not None else bad.column("_error").to_pylist()
        stages = [stage] * n if stage else bad.column("_stage").to_pylist()
        classes = [
            sink_error_class(m) if s == "sink" else error_class(m, s)
            for m, s in zip(messages, stages, strict=True)
        ]
        now = datetime.now(timezone.utc)
        return pa.Table.from_arrays(
            [
                pa.array([self.pipeline.name] * n, pa.string()),
                bad.column("_source"),
                bad.column("_topic"),
                bad.column("_partition"),
                bad.column("_offset"),
                bad.column("_kafka_ts").cast(pa.timestamp("ms", tz="UTC")),
                bad.column("_key"),
                self._payloads(bad) if stage == "sink" else pc.fill_null(bad.column("_raw"), b""),
                pa.array(stages, pa.string()),
                pa.array(classes, pa.string()),
                pa.array(messages, pa.string()),
                pa.array([now] * n, pa.timestamp("ms", tz="UTC")),
            ],
            schema=DLQ_ARROW_SCHEMA,
        ).combine_chunks()

    def _payloads(self, rows: pa.Table) -> pa.Array:
        """For rows refused at insert: the original message, or, for a joined row (which has
        none: it comes from two), the mapped values as JSON."""
        raw = rows.column("_raw")
        if raw.null_count == 0:
            return raw
        import json

        cols = [m.column for m in self.pipeline.sink.mapping]
        maps = [m.column for m in self.pipeline.sink.mapping if m.ch_type.inner.name == "Map"]
        records = rows.select(cols).to_pylist()
        for record in records:  # Arrow maps come back as pairs; JSON wants objects
            for col in maps:
                if record[col] is not None:
                    record[col] = dict(record[col])
        joined = pa.array([json.dumps(r, default=str).encode() for r in records], pa.binary())
        return pc.if_else(pc.is_null(raw), joined, raw)

    def _fault_point(self) -> None:
        """Die like kill -9 after the K-th insert when the fault-injection variable says so."""
        global _inserts_in_process
        spec = os.environ.get(FAULT_ENV, "")
        if not spec.startswith("kill_after_insert:"):
            return
        _inserts_in_process += 1
        if _inserts_in_process >= int(spec.split(":", 1)[1]):
            log.error("fault injection: killing the pipeline after %d inserts", _inserts_in_process)
            os.kill(self.driver_pid, signal.SIGKILL)
            os._exit(137)


def error_class(message: str | None, stage: str | None = "parse") -> str:
    """The DLQ's `error_class` for a record that failed before the sink."""
    if stage in ("filter", "transform"):
        return f"{stage}_failed"
    if not message:
        return "unknown"
    if AHEAD_OF_KAFKA_TIMESTAMP in message:
        return FUTURE_EVENT_TIME
    if message.startswith(("malformed JSON", "payload is not UTF-8")):
        return "malformed_json"
    if message.startswith(("payload must be", "empty message")):
        return "not_an_object"
    if is_required_field_error(message):
        return "missing_field"
    return "type_mismatch"


def sink_error_class(message: str) -> str:
    """`clickhouse_<code>` for a row ClickHouse refused."""
    return f"clickhouse_{code_of(message)}"


def pipeline_secrets(pipeline: Pipeline) -> list[str]:
    """The ClickHouse and Kafka passwords (also those given as properties): masked in DLQ rows
    whatever an error says."""
    sources: list[KafkaSource] = list(pipeline.sources or ()) or [pipeline.source]
    found = [pipeline.sink.clickhouse.password.get_secret_value()]
    for src in sources:
        if src.security.password is not None:
            found.append(src.security.password.get_secret_value())
        found += [v for k, v in src.properties.items() if "password" in k or "secret" in k]
    return [s for s in found if s]
