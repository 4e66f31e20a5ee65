"""What happens to a partition's raw messages on the executor: parse, check, dedup.

The checks: required fields are present, and the event time does not run too far ahead of
the Kafka timestamp (transforms/event_time.py). The runtime hands this object to the Kafka
source. Its output rows carry the typed fields plus metadata columns; rows whose `_error` is
set are dead letters and pass dedup untouched, so the sink can route them to the DLQ in the
same micro-batch (one query, one checkpoint). Dedup itself (modes, keys, state) belongs to
transforms/dedup/; this object applies its rule to each partition's range.
The raw payload and key travel only with dead letters, unless `keep_raw` asks for them on
every row (a later filter or computed field may still send a row to the DLQ). A row the
ClickHouse insert refuses has its message read back from Kafka by its position instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
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

from streamsift.config.rows import SOURCE_COLUMNS
from streamsift.config.types import SPARK_SQL_TYPES, FieldType
from streamsift.sources.kafka_range import KafkaRecords
from streamsift.transforms.dedup.rule import DedupRule, OffsetRange
from streamsift.transforms.event_time import future_event_time_errors
from streamsift.transforms.parse import FieldSpec, require_present, required_fields
from streamsift.transforms.registry_decode import SchemaLookup, make_parser
from streamsift.transforms.schema_drift import flag_new_fields

if TYPE_CHECKING:  # executors unpickle this module: keep pydantic out of them
    from streamsift.config.models import Dedup, Schema

OUTPUT_BATCH_ROWS = 100_000

# pyspark's type object for each Spark SQL type name the pipeline uses (config/types.py
# SPARK_SQL_TYPES for payload fields, config/rows.py for the metadata columns).
SPARK_DATA_TYPES: dict[str, DataType] = {
    "STRING": StringType(),
    "INT": IntegerType(),
    "BIGINT": LongType(),
    "DOUBLE": DoubleType(),
    "BOOLEAN": BooleanType(),
    "TIMESTAMP": TimestampType(),
    "BINARY": BinaryType(),
    "ARRAY<STRING>": ArrayType(StringType()),
    "MAP<STRING, STRING>": MapType(StringType(), StringType()),
}


@dataclass(frozen=True)
class SourceProcessor:
    """Parse + validate + dedup for one source; picklable, stateless between calls."""

    fields: tuple[FieldSpec, ...]
    event_time: FieldSpec | None = None
    dedup: DedupRule | None = None  # transforms/dedup/: modes, keys and state live there
    keep_raw: bool = False
    max_future_skew_us: int | None = None  # None: event time may run ahead without limit
    literal_dots: bool = False  # keys with dots in the payload's maps (OTLP attributes)
    format: str = "json"  # avro / protobuf: decoded with the writer schemas `schemas` finds
    schemas: SchemaLookup | None = None
    flag_new_fields: bool = False  # sink.on_new_fields add_columns/dlq (transforms/schema_drift)
    # The table side of `join.mode: table`: a keyed message with a null value is a tombstone,
    # a good row with null fields, its Kafka key kept and no raw value (not a dead letter).
    tombstones: bool = False

    @classmethod
    def build(
        cls,
        schema: Schema,
        dedup: Dedup | None,
        state_dir: Path | None,
        keep_raw: bool = False,
        source_format: str = "json",
        schemas: SchemaLookup | None = None,
        state_url: str | None = None,
        flag_new_fields: bool = False,
        tombstones: bool = False,
    ) -> SourceProcessor:
        """`state_dir` is the checkpoint's `dedup` directory; `state_url` the dedup state's
        shared location, if it is shared (transforms/dedup/layout.py)."""
        specs = tuple(FieldSpec(f.name, f.column, f.type) for f in schema.fields)
        by_name = {s.path: s for s in specs}
        skew = schema.max_future_skew
        return cls(
            fields=specs,
            event_time=by_name[schema.event_time] if schema.event_time else None,
            dedup=DedupRule.of(dedup, by_name, state_dir, state_url) if dedup else None,
            keep_raw=keep_raw,
            max_future_skew_us=None if skew is None else int(skew.total_seconds() * 1_000_000),
            literal_dots=schema.literal_dots,
            format=source_format,
            schemas=schemas,
            flag_new_fields=flag_new_fields,
            tombstones=tombstones,
        )

    def spark_struct(self) -> StructType:
        """The payload's fields (nullable), then the metadata columns (config/rows.py)."""
        data = [
            StructField(f.column, SPARK_DATA_TYPES[SPARK_SQL_TYPES[f.type]], True)
            for f in self.fields
        ]
        meta = [
            StructField(c.name, SPARK_DATA_TYPES[c.sql_type], c.nullable) for c in SOURCE_COLUMNS
        ]
        return StructType(data + meta)

    def spark_schema(self) -> StructType:  # what DataSource.schema() returns
        return self.spark_struct()

    @property
    def schema(self) -> pa.Schema:
        return to_arrow_schema(self.spark_struct(), timezone="UTC")

    def process(self, records: KafkaRecords) -> Iterator[pa.RecordBatch]:
        n = len(records.offsets)
        if n == 0:
            return
        result = make_parser(self.fields, self.format, self.schemas, self.literal_dots).parse(
            records.values
        )
        required = required_fields(self.dedup.keys if self.dedup else (), self.event_time)
        if required:
            require_present(result, records.values, required)
        table = result.table
        kafka_ts = pa.array(records.timestamps_ms, pa.int64()).cast(pa.timestamp("ms", tz="UTC"))
        kafka_ts = kafka_ts.cast(pa.timestamp("us", tz="UTC"))
        event_time = self._event_time(table, kafka_ts)
        errors = result.errors
        self._check_future_skew(event_time, records.timestamps_ms, errors)

        keep = np.ones(n, dtype=bool)
        late = np.zeros(n, dtype=bool)
        if self.dedup is not None and self.dedup.active:
            part = OffsetRange(records.topic, records.partition, records.start, records.end)
            keep, late = self.dedup.decide(
                part, records.offsets, records.values, table, event_time, errors
            )
        if self.flag_new_fields:  # after dedup: a re-sent record is still a duplicate
            flag_new_fields(records.values, errors, keep, frozenset(f.path for f in self.fields))
        tombstone = np.zeros(n, dtype=bool)
        if self.tombstones:  # their event time is the Kafka timestamp (they have no fields)
            tombstone = np.array(
                [
                    v is None and k is not None
                    for v, k in zip(records.values, records.keys, strict=True)
                ],
                dtype=bool,
            )
            for i in np.flatnonzero(tombstone).tolist():
                errors[i] = None
            event_time = pc.if_else(pa.array(tombstone), kafka_ts, event_time)
        bad = pa.array(errors, pa.string()).is_valid().to_numpy(zero_copy_only=False)
        # Dead letters carry no event time, so they never move the join's watermark.
        if bad.any():
            event_time = pc.if_else(
                pa.array(bad), pa.scalar(None, pa.timestamp("us", tz="UTC")), event_time
            )
        # The raw message travels with dead letters and tombstones (or every row: keep_raw).
        with_raw = np.ones(n, dtype=bool) if self.keep_raw else bad | tombstone
        # The metadata columns' values; their types come from the schema (config/rows.py).
        meta = {
            "_topic": [records.topic] * n,
            "_partition": [records.partition] * n,
            "_offset": records.offsets,
            "_kafka_ts": kafka_ts,
            "_event_time": event_time,
            "_late": late,
            "_key": _only_where(records.keys, with_raw),
            "_raw": _only_where(records.values, with_raw),
            "_error": errors,
        }
        schema = self.schema
        columns = [
            _arrow_column(meta[f.name], f.type) if f.name in meta else table.column(f.name)
            for f in schema
        ]
        out = pa.Table.from_arrays(columns, schema=schema)
        if not keep.all():
            out = out.filter(pa.array(keep))
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


def _only_where(values: list[bytes | None], where: np.ndarray) -> list[bytes | None] | pa.Array:
    """`values` where `where` is set, null elsewhere (all null without copying any value)."""
    if where.all():
        return values
    if not where.any():
        return pa.nulls(len(values), pa.binary())
    out: list[bytes | None] = [None] * len(values)
    for i in np.flatnonzero(where).tolist():
        out[i] = values[i]
    return out


def _arrow_column(values: Any, arrow_type: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """`values` (a list or an Arrow array) as an Arrow column of `arrow_type`."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values if values.type == arrow_type else values.cast(arrow_type)
    return pa.array(values, arrow_type)
