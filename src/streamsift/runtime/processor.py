"""What happens to a partition's raw messages on the executor: parse, check, dedup.

The checks: required fields are present, and the event time does not run too far ahead of
the Kafka timestamp (transforms/event_time.py). The runtime hands this object to the Kafka
source. Its output rows carry the typed fields plus metadata columns; rows whose `_error` is
set are dead letters and pass dedup untouched, so the sink can route them to the DLQ in the
same micro-batch (one query, one checkpoint).
The raw payload and key travel only with dead letters, unless `keep_raw` asks for them on
every row (a later filter or computed field may still send a row to the DLQ). A row the
ClickHouse insert refuses has its message read back from Kafka by its position instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from streamsift.config.types import FieldType
from streamsift.sources.kafka import KafkaRecords
from streamsift.transforms.dedup import PartitionDedup, encode_key, payload_hash
from streamsift.transforms.event_time import future_event_time_errors
from streamsift.transforms.parse import FieldSpec, JsonParser, require_present, required_fields

if TYPE_CHECKING:  # executors unpickle this module: keep pydantic out of them
    from streamsift.config.models import Dedup, Schema

OUTPUT_BATCH_ROWS = 100_000

_SPARK_TYPES: dict[FieldType, DataType] = {
    FieldType.STRING: StringType(),
    FieldType.INT: LongType(),
    FieldType.FLOAT: DoubleType(),
    FieldType.BOOL: BooleanType(),
    FieldType.TIMESTAMP: TimestampType(),
    FieldType.ARRAY: ArrayType(StringType()),
    FieldType.MAP: MapType(StringType(), StringType()),
    FieldType.JSON: StringType(),
}

# Metadata columns every source row carries besides the payload's fields.
META_COLUMNS = (
    StructField("_topic", StringType(), False),
    StructField("_partition", IntegerType(), False),
    StructField("_offset", LongType(), False),
    StructField("_kafka_ts", TimestampType(), True),
    StructField("_event_time", TimestampType(), True),
    StructField("_late", BooleanType(), False),
    StructField("_key", BinaryType(), True),
    StructField("_raw", BinaryType(), True),
    StructField("_error", StringType(), True),
)


@dataclass(frozen=True)
class SourceProcessor:
    """Parse + validate + dedup for one source; picklable, stateless between calls."""

    fields: tuple[FieldSpec, ...]
    event_time: FieldSpec | None = None
    dedup_keys: tuple[FieldSpec, ...] = ()
    window_us: int = 0
    state_dir: str | None = None
    mode: str = "first"
    keep_raw: bool = False
    max_future_skew_us: int | None = None  # None: event time may run ahead without limit

    @classmethod
    def build(
        cls,
        schema: Schema,
        dedup: Dedup | None,
        state_dir: Path | None,
        keep_raw: bool = False,
    ) -> SourceProcessor:
        """`state_dir` is the checkpoint's `dedup` directory; other modes keep theirs beside it
        (`dedup-last`, `dedup-exact`), so changing the mode starts from an empty state."""
        specs = tuple(FieldSpec(f.name, f.column, f.type) for f in schema.fields)
        by_name = {s.path: s for s in specs}
        mode = dedup.mode.value if dedup else "first"
        skew = schema.max_future_skew
        if dedup and state_dir and mode != "first":
            state_dir = state_dir.parent / f"{state_dir.name}-{mode}"
        return cls(
            fields=specs,
            event_time=by_name[schema.event_time] if schema.event_time else None,
            dedup_keys=tuple(by_name[k] for k in dedup.key) if dedup else (),
            window_us=int(dedup.time_window.total_seconds() * 1_000_000) if dedup else 0,
            state_dir=str(state_dir) if dedup and state_dir else None,
            mode=mode,
            keep_raw=keep_raw,
            max_future_skew_us=None if skew is None else int(skew.total_seconds() * 1_000_000),
        )

    @property
    def dedups(self) -> bool:
        return self.state_dir is not None and (bool(self.dedup_keys) or self.mode == "exact")

    def spark_struct(self) -> StructType:
        data = [StructField(f.column, _SPARK_TYPES[f.type], True) for f in self.fields]
        return StructType(data + list(META_COLUMNS))

    def spark_schema(self) -> StructType:  # what DataSource.schema() returns
        return self.spark_struct()

    @property
    def schema(self) -> pa.Schema:
        return to_arrow_schema(self.spark_struct(), timezone="UTC")

    def process(self, records: KafkaRecords) -> Iterator[pa.RecordBatch]:
        n = len(records.offsets)
        if n == 0:
            return
        result = JsonParser(self.fields).parse(records.values)
        required = required_fields(self.dedup_keys, self.event_time)
        if required:
            require_present(result, records.values, required)
        table = result.table
        kafka_ts = pa.array(records.timestamps_ms, pa.int64()).cast(pa.timestamp("ms", tz="UTC"))
        kafka_ts = kafka_ts.cast(pa.timestamp("us", tz="UTC"))
        event_time = self._event_time(table, kafka_ts)
        errors = result.errors
        self._check_future_skew(event_time, records.timestamps_ms, errors)

        keep = [True] * n
        late = [False] * n
        if self.dedups:
            keep, late = self._dedup(records, table, event_time, errors)
        # Dead letters carry no event time, so they never move the join's watermark.
        event_time = pc.if_else(
            pa.array([e is None for e in errors], pa.bool_()),
            event_time,
            pa.scalar(None, pa.timestamp("us", tz="UTC")),
        )

        drop_raw = [e is None and not self.keep_raw for e in errors]
        columns = {name: table.column(name) for name in table.column_names}
        columns.update(
            _topic=pa.array([records.topic] * n, pa.string()),
            _partition=pa.array([records.partition] * n, pa.int32()),
            _offset=pa.array(records.offsets, pa.int64()),
            _kafka_ts=kafka_ts,
            _event_time=event_time,
            _late=pa.array(late, pa.bool_()),
            _key=pa.array(
                [None if ok else k for ok, k in zip(drop_raw, records.keys, strict=True)],
                pa.binary(),
            ),
            _raw=pa.array(
                [None if ok else v for ok, v in zip(drop_raw, records.values, strict=True)],
                pa.binary(),
            ),
            _error=pa.array(errors, pa.string()),
        )
        schema = self.schema
        out = pa.Table.from_arrays([columns[f.name] for f in schema], schema=schema)
        if not all(keep):
            out = out.filter(pa.array(keep, pa.bool_()))
        yield from out.to_batches(max_chunksize=OUTPUT_BATCH_ROWS)

    def _event_time(self, table: pa.Table, kafka_ts: pa.Array) -> pa.ChunkedArray | pa.Array:
        if self.event_time is None:
            return kafka_ts
        col = table.column(self.event_time.column)
        if self.event_time.type is FieldType.TIMESTAMP:
            return col
        micros = pc.cast(
            pc.multiply(pc.cast(col, pa.float64()), 1_000_000.0), pa.int64(), safe=False
        )
        return micros.cast(pa.timestamp("us", tz="UTC"))

    def _check_future_skew(
        self, event_time: pa.Array, kafka_ms: list[int], errors: list[str | None]
    ) -> None:
        """Flag records whose event time runs too far ahead of their Kafka timestamp."""
        if self.event_time is None or self.max_future_skew_us is None:
            return  # the Kafka timestamp is the event time: it cannot run ahead of itself
        flagged = future_event_time_errors(
            self.event_time.path, event_time, kafka_ms, self.max_future_skew_us
        )
        for i, reason in flagged.items():
            if errors[i] is None:
                errors[i] = reason

    def _dedup(
        self, records: KafkaRecords, table: pa.Table, event_time: pa.Array, errors: list[str | None]
    ) -> tuple[list[bool], list[bool]]:
        assert self.state_dir is not None
        idx = [i for i, e in enumerate(errors) if e is None]
        times = pc.cast(event_time, pa.int64()).to_pylist()
        hashes = None
        if self.mode == "first":
            key_cols = [table.column(f.column).to_pylist() for f in self.dedup_keys]
            keys = [encode_key([col[i] for col in key_cols]) for i in idx]
        elif self.mode == "exact":
            keys = [payload_hash(records.values[i]) for i in idx]  # type: ignore[arg-type]
        else:  # last: by key, dropping only repeats of the key's latest payload
            key_cols = [table.column(f.column).to_pylist() for f in self.dedup_keys]
            keys = [encode_key([col[i] for col in key_cols]) for i in idx]
            hashes = [payload_hash(records.values[i]) for i in idx]  # type: ignore[arg-type]
        decision = PartitionDedup(
            Path(self.state_dir) / records.topic / f"p{records.partition}",
            self.window_us,
            compare_payload=self.mode == "last",
        ).decide(
            keys,
            [times[i] for i in idx],
            [records.offsets[i] for i in idx],
            records.start,
            hashes,
        )
        keep = [True] * len(errors)
        late = [False] * len(errors)
        for j, i in enumerate(idx):
            keep[i] = decision.keep[j]
            late[i] = decision.late[j]
        return keep, late
