"""Writing one micro-batch's rows and dead letters into ClickHouse, exactly once.

Runs on the driver for embedded ClickHouse (chdb allows one process per data directory) and
on the executors, once per Spark partition, for a ClickHouse server. Either way the rows of a
part are sorted by (topic, partition, offset), cut into chunks of `max_batch_size`, and each
chunk is inserted with the token `<query id>:<batch id>:<part>:rows:<chunk>`; a re-run batch
re-creates the same parts, chunks and tokens, and ClickHouse skips what it already holds.
Rows ClickHouse refuses for their values go to the DLQ with its error code and message, and
with their original message (payload and key), read back from Kafka by the row's position
(sources/fetch.py): rows carry no raw message up to here, which keeps it off the hot path.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streamsift.config.models import Pipeline
from streamsift.config.rows import SORT_KEY as OUTPUT_SORT_KEY
from streamsift.config.secrets import secret_values
from streamsift.engine.new_columns import complete_added_columns, drift_enabled
from streamsift.engine.progress import LATENCY_SECONDS, Buckets, SinkCounts
from streamsift.engine.query import read_spec
from streamsift.sinks.clickhouse import ClickHouseWriter
from streamsift.sinks.clickhouse.error_text import code_of, row_error
from streamsift.sinks.dlq import DLQ_ARROW_SCHEMA
from streamsift.sources.fetch import Message, Position, fetch_messages
from streamsift.transforms.column_values import shape_columns
from streamsift.transforms.event_time import AHEAD_OF_KAFKA_TIMESTAMP, FUTURE_EVENT_TIME
from streamsift.transforms.parse import is_required_field_error
from streamsift.transforms.registry_decode import decode_error_class
from streamsift.transforms.schema_drift import NEW_FIELDS

log = logging.getLogger("streamsift.engine")

SORT_KEY = [(c, "ascending") for c in OUTPUT_SORT_KEY]  # unique per row, never null


# What an executor answers for its part of a batch: the counts, and the rest as JSON
# (dead letters by class, the latency histogram, retries: SinkCounts.as_json).
COUNTS_SCHEMA = pa.schema(
    [("written", pa.int64()), ("dlq", pa.int64()), ("late", pa.int64()), ("extra", pa.string())]
)


MessageReader = Callable[[Pipeline, Sequence[Position]], Mapping[Position, Message | None]]


def read_back(pipeline: Pipeline, positions: Sequence[Position]) -> dict[Position, Message | None]:
    """The original messages at `positions` of a single-source pipeline, from its Kafka."""
    (source,) = pipeline.inputs
    return fetch_messages(read_spec(pipeline, source), positions)


@dataclass
class BatchWriter:
    """Everything needed to write a part of a batch; picklable for executors.

    `read_originals` reads refused rows' messages back from Kafka (a module-level function, so
    that it pickles; the pipeline it gets holds the source's settings, secrets included).
    `after_insert`, for crash tests, is called after each insert (engine/faults.py).
    """

    pipeline: Pipeline
    writer: ClickHouseWriter
    read_originals: MessageReader = read_back
    after_insert: Callable[[], None] | None = None

    def write(self, data: pa.Table, query_id: str, batch_id: int, part: str) -> SinkCounts:
        if data.num_rows == 0:
            return SinkCounts()
        if drift_enabled(self.pipeline):
            data = complete_added_columns(data, self.pipeline)
        # Rows in SORT_KEY order, by index: only the columns each use needs are copied (the
        # mapped ones for the table; the metadata and raw message for dead letters).
        order = pc.sort_indices(data.select(OUTPUT_SORT_KEY), sort_keys=SORT_KEY)
        bad_mask = pc.is_valid(data.column("_error")).take(order)
        good = order.filter(pc.invert(bad_mask))
        sink = self.pipeline.sink
        shaped = shape_columns(
            data.select([m.column for m in sink.mapping]).take(good),
            [(m.column, m.ch_type) for m in sink.mapping],
        )
        # Rows with a value their column cannot take (shape_columns) are left out, in a
        # deterministic way, so a re-run cuts the same chunks; `kept` maps back to `good`.
        if shaped.errors:
            fits = np.ones(len(good), dtype=bool)
            fits[list(shaped.errors)] = False
            kept = pa.array(np.flatnonzero(fits), pa.int64())
            out = shaped.table.take(kept)
        else:
            kept = None  # every row of `good`
            out = shaped.table
        prefix = f"{query_id}:{batch_id}:{part}"
        refused: list[int] = sorted(shaped.errors)
        reasons: dict[int, str] = dict(shaped.errors)
        classes: dict[int, str] = dict.fromkeys(shaped.errors, "type_mismatch")
        secrets = secret_values(self.pipeline)
        size = sink.max_batch_size
        for i, start in enumerate(range(0, out.num_rows, size)):
            failures = self.writer.insert_isolating(
                sink.table, out.slice(start, size), f"{prefix}:rows:{i}"
            )
            for f in failures:
                at = start + f.index if kept is None else kept[start + f.index].as_py()
                refused.append(at)
                reasons[at] = row_error(f.code, f.message, secrets)
            self._fault_point()
        dead = self._dead_letters(data.take(order.filter(bad_mask)), None, None)
        if refused:
            refused.sort()
            refused_rows = data.take(good.take(pa.array(refused, pa.int64())))
            dead = pa.concat_tables(
                [
                    dead,
                    self._dead_letters(
                        refused_rows,
                        "sink",
                        [reasons[i] for i in refused],
                        [classes.get(i) for i in refused],
                    ),
                ]
            )
            log.warning("%d rows refused by ClickHouse went to the DLQ", len(refused))
        for i, start in enumerate(range(0, dead.num_rows, size)):
            self.writer.insert(
                self.pipeline.dlq_table, dead.slice(start, size), f"{prefix}:dlq:{i}"
            )
        late = pc.sum(data.column("_late").take(good).cast(pa.int64())).as_py() or 0
        written = data.column("_kafka_ts").take(good)
        if refused:
            kept_mask = np.ones(len(written), dtype=bool)
            kept_mask[refused] = False
            written = written.filter(pa.array(kept_mask))
        return SinkCounts(
            len(good) - len(refused),
            dead.num_rows,
            late,
            dead_letters_by_class(dead),
            latency_since(written, time.time()),
            rows=data.num_rows,
        )

    def _dead_letters(
        self,
        bad: pa.Table,
        stage: str | None,
        errors: list[str] | None,
        given_classes: list[str | None] | None = None,
    ) -> pa.Table:
        """`stage` None: each row's own `_stage` (parse, transform or filter), whose raw
        message came with it; `sink`: rows ClickHouse refused (or whose value does not fit
        the column: `given_classes`), whose message is read back."""
        n = bad.num_rows
        messages = errors if errors is not None else bad.column("_error").to_pylist()
        stages = [stage] * n if stage else bad.column("_stage").to_pylist()
        given = given_classes or [None] * n
        classes = [
            c or (sink_error_class(m) if s == "sink" else error_class(m, s))
            for m, s, c in zip(messages, stages, given, strict=True)
        ]
        if stage == "sink":
            keys, payloads = self._originals(bad)
        else:
            keys, payloads = bad.column("_key"), pc.fill_null(bad.column("_raw"), b"")
        now = datetime.now(timezone.utc)
        return pa.Table.from_arrays(
            [
                pa.array([self.pipeline.name] * n, pa.string()),
                bad.column("_source"),
                bad.column("_topic"),
                bad.column("_partition"),
                bad.column("_offset"),
                bad.column("_kafka_ts").cast(pa.timestamp("ms", tz="UTC")),
                keys,
                payloads,
                pa.array(stages, pa.string()),
                pa.array(classes, pa.string()),
                pa.array(messages, pa.string()),
                pa.array([now] * n, pa.timestamp("ms", tz="UTC")),
            ],
            schema=DLQ_ARROW_SCHEMA,
        ).combine_chunks()

    def _originals(self, rows: pa.Table) -> tuple[pa.Array, pa.Array]:
        """Key and payload of rows refused at insert: their original message, read back from
        Kafka. A joined row comes from two messages: no key, and the mapped values as JSON;
        so does a row whose message Kafka no longer holds (compacted away)."""
        found: list[Message | None] = [None] * rows.num_rows
        if self.pipeline.join is None:
            positions: list[Position] = list(
                zip(
                    rows.column("_topic").to_pylist(),
                    rows.column("_partition").to_pylist(),
                    rows.column("_offset").to_pylist(),
                    strict=True,
                )
            )
            messages = self.read_originals(self.pipeline, positions)
            found = [messages.get(p) for p in positions]
            if gone := sum(m is None for m in found):
                log.warning(
                    "%d refused rows' messages are no longer in Kafka: their dead letters hold "
                    "the mapped values as JSON",
                    gone,
                )
        mapped = self._mapped_json(rows.filter(pa.array([m is None for m in found])))
        payloads = [m.value or b"" if m is not None else next(mapped) for m in found]
        keys = [m.key if m is not None else None for m in found]
        return pa.array(keys, pa.binary()), pa.array(payloads, pa.binary())

    def _mapped_json(self, rows: pa.Table) -> Iterator[bytes]:
        """The rows' mapped values, one JSON object each."""
        import json

        cols = [m.column for m in self.pipeline.sink.mapping]
        maps = [m.column for m in self.pipeline.sink.mapping if m.ch_type.inner.name == "Map"]
        for record in rows.select(cols).to_pylist():
            for col in maps:  # Arrow maps come back as pairs; JSON wants objects
                if record[col] is not None:
                    record[col] = dict(record[col])
            yield json.dumps(record, default=str).encode()

    def _fault_point(self) -> None:
        if self.after_insert is not None:
            self.after_insert()


def dead_letters_by_class(dead: pa.Table) -> dict[tuple[str, str], int]:
    """How many of these DLQ rows have each (stage, error class)."""
    if dead.num_rows == 0:
        return {}
    groups = dead.group_by(["stage", "error_class"]).aggregate([("stage", "count")])
    return {
        (stage, error_class): n
        for stage, error_class, n in zip(
            groups.column("stage").to_pylist(),
            groups.column("error_class").to_pylist(),
            groups.column("stage_count").to_pylist(),
            strict=True,
        )
    }


def latency_since(kafka_timestamps: pa.ChunkedArray, now_s: float) -> Buckets:
    """Rows' end-to-end latency: from their Kafka timestamp (produce or log-append time) to
    `now_s`, when their insert was acknowledged; rows without one are left out."""
    buckets = Buckets(LATENCY_SECONDS)
    stamps = pc.drop_null(kafka_timestamps)
    if len(stamps) == 0:
        return buckets
    tz = getattr(stamps.type, "tz", None)
    micros = stamps.cast(pa.timestamp("us", tz)).cast(pa.int64()).to_numpy()
    seconds = np.maximum(0.0, now_s - micros / 1e6)
    bins = np.searchsorted(np.asarray(buckets.bounds), seconds, side="left")
    buckets.counts = np.bincount(bins, minlength=len(buckets.counts)).tolist()
    buckets.total = float(seconds.sum())
    return buckets


def error_class(message: str | None, stage: str | None = "parse") -> str:
    """The DLQ's `error_class` for a record that failed before the sink."""
    if stage in ("filter", "transform"):
        return f"{stage}_failed"
    if not message:
        return "unknown"
    if AHEAD_OF_KAFKA_TIMESTAMP in message:
        return FUTURE_EVENT_TIME
    decoding = decode_error_class(message)
    if decoding is not None:
        return decoding
    if message.startswith(("malformed JSON", "payload is not UTF-8")):
        return "malformed_json"
    if message.startswith(("payload must be", "empty message")):
        return "not_an_object"
    if is_required_field_error(message):
        return "missing_field"
    if message.startswith(NEW_FIELDS):
        return "new_fields"
    return "type_mismatch"


def sink_error_class(message: str) -> str:
    """`clickhouse_<code>` for a row ClickHouse refused."""
    return f"clickhouse_{code_of(message)}"
